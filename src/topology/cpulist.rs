//! The kernel's CPU list syntax (Documentation/admin-guide/cputopology.rst,
//! "cpulist" files): comma-separated CPU ids and ranges, e.g. `0-3,8,10-11`.

use std::collections::BTreeSet;

/// Largest CPU id accepted: the BPF tables' size (CADENCE_MAX_CPUS) is far
/// below; anything larger is a typo, not a machine.
const MAX_CPU_ID: u32 = 1 << 16;

/// Parses a cpulist; an empty text (a file with a newline only) is empty.
pub fn parse(text: &str) -> Result<BTreeSet<u32>, String> {
    let mut out = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= MAX_CPU_ID)
                .ok_or_else(|| format!("`{part}` is not a CPU or a range of CPUs"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(format!("`{part}` is a range that runs backwards"));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// Formats CPUs as a cpulist, ranges folded: `0-3,8`.
pub fn format(cpus: &BTreeSet<u32>) -> String {
    let mut parts = Vec::new();
    let mut it = cpus.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end = it.next().unwrap();
        }
        parts.push(if start == end {
            start.to_string()
        } else if end == start + 1 {
            format!("{start},{end}")
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_singles_round_trip() {
        let set = parse("0-3,8,10-11\n").unwrap();
        assert_eq!(
            set.iter().copied().collect::<Vec<_>>(),
            [0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(format(&set), "0-3,8,10,11");
        assert_eq!(format(&parse("0,2,4,6").unwrap()), "0,2,4,6");
        assert!(parse("\n").unwrap().is_empty());
    }

    #[test]
    fn garbage_is_refused_with_the_part() {
        assert!(parse("0-x").unwrap_err().contains("`0-x`"));
        assert!(parse("5-2").unwrap_err().contains("backwards"));
        assert!(parse("99999999").is_err());
    }
}
