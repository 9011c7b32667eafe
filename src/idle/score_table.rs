//! Idle-prediction scores as seed 003 tabulates them: per source, the
//! share of periods predicted correctly, too deep by k states ("US k",
//! undershoot: the period ended before that state's residency) and too
//! shallow by k ("OS k", overshoot). `idle stats`, `idle replay` and
//! bench/idle.sh print this. Where the kernel judged its own choices
//! (power:cpu_idle_miss), two more rows hold the periods it called "above"
//! and "below", scored as its row: the cross-check of the ideal.

use std::fmt::Write;

use super::period::{DIFFS, MISSES, SOURCES, Scores};
use super::table::MAX;
use crate::bpf_intf;

/// Row names, by enum cadence_idle_source.
pub const SOURCE_NAMES: [&str; SOURCES] = ["teo", "per_choice", "seed", "kernel"];
/// The sources, by enum cadence_idle_source.
pub const TEO: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SRC_TEO as usize;
pub const PER_CHOICE: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SRC_PER_CHOICE as usize;
pub const SEED: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SRC_SEED as usize;
pub const KERNEL: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SRC_KERNEL as usize;
/// The kernel's verdicts, as cpuidle's sysfs counters name them, in the
/// order of Scores::miss, and the names of their rows in the table.
pub const VERDICT_NAMES: [&str; MISSES] = ["above", "below"];
pub const MISS_NAMES: [&str; MISSES] = ["k.above", "k.below"];
/// Column groups, by enum cadence_idle_ideal.
pub const IDEAL_NAMES: [&str; 2] = [
    "ideal = deepest state whose target residency the period lasted",
    "ideal = deepest state whose target residency + exit latency the period lasted",
];

/// One source's counts for one ideal, as the seed's columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub periods: u64,
    pub correct: u64,
    /// undershoot[k - 1]: chosen = ideal + k.
    pub undershoot: Vec<u64>,
    /// overshoot[k - 1]: chosen = ideal - k.
    pub overshoot: Vec<u64>,
}

impl Row {
    pub fn from_buckets(b: &[u64; DIFFS]) -> Row {
        let c = MAX - 1;
        Row {
            periods: b.iter().sum(),
            correct: b[c],
            undershoot: (1..MAX).map(|k| b[c + k]).collect(),
            overshoot: (1..MAX).map(|k| b[c - k]).collect(),
        }
    }

    /// Percent of the periods, to two decimals as the seed prints.
    pub fn pct(&self, n: u64) -> f64 {
        if self.periods == 0 {
            0.0
        } else {
            100.0 * n as f64 / self.periods as f64
        }
    }

    pub fn correct_pct(&self) -> f64 {
        self.pct(self.correct)
    }

    /// Periods whose choice was deeper than the ideal.
    pub fn too_deep(&self) -> u64 {
        self.undershoot.iter().sum()
    }

    /// Periods whose choice was shallower than the ideal.
    pub fn too_shallow(&self) -> u64 {
        self.overshoot.iter().sum()
    }
}

/// The rows of @scores: [ideal][source].
pub fn rows(scores: &Scores) -> Vec<Vec<Row>> {
    (0..IDEAL_NAMES.len())
        .map(|ideal| {
            (0..SOURCE_NAMES.len())
                .map(|src| Row::from_buckets(&scores.n[src][ideal]))
                .collect()
        })
        .collect()
}

/// The rows of the kernel's verdicts: [ideal][verdict].
pub fn miss_rows(scores: &Scores) -> Vec<Vec<Row>> {
    (0..IDEAL_NAMES.len())
        .map(|ideal| {
            (0..MISSES)
                .map(|v| Row::from_buckets(&scores.miss[v][ideal]))
                .collect()
        })
        .collect()
}

/// How the kernel's verdicts on its choices (@kernel: its row, @misses:
/// its verdict rows) stand against an ideal; None without a verdict.
pub fn verdict_check(kernel: &Row, misses: &[Row]) -> Option<String> {
    let (above, below) = (&misses[0], &misses[1]);
    if above.periods + below.periods == 0 {
        return None;
    }
    let missed = |r: &Row| r.too_deep() + r.too_shallow();
    // Saturating: a map read can catch a subset's count ahead of its whole.
    let rest = kernel.periods.saturating_sub(above.periods + below.periods);
    let rest_missed = missed(kernel).saturating_sub(missed(above) + missed(below));
    let rest_pct = if rest == 0 {
        0.0
    } else {
        100.0 * rest_missed as f64 / rest as f64
    };
    Some(format!(
        "  the kernel's cpu_idle_miss: \"above\" on {} periods, {:.2}% too deep here; \"below\" on {}, {:.2}% too shallow here; {} without a verdict, {:.2}% a miss here",
        above.periods,
        above.pct(above.too_deep()),
        below.periods,
        below.pct(below.too_shallow()),
        rest,
        rest_pct
    ))
}

/// The seed's table for @scores over states up to @nr_states (the widest
/// miss is nr_states - 1), with @extra rows (e.g. an oracle) under the
/// sources; sources without periods are left out.
pub fn render(scores: &Scores, nr_states: usize, extra: &[(&str, Vec<Row>)]) -> String {
    let k = nr_states.clamp(1, MAX) - 1;
    let mut out = String::new();
    let misses = miss_rows(scores);
    for (ideal, rows) in rows(scores).into_iter().enumerate() {
        let _ = writeln!(out, "{}:", IDEAL_NAMES[ideal]);
        let mut head = format!("  {:<10} {:>9} {:>8}", "", "periods", "Correct");
        for i in 1..=k {
            let _ = write!(head, " {:>6}", format!("US{i}"));
        }
        for i in 1..=k {
            let _ = write!(head, " {:>6}", format!("OS{i}"));
        }
        let _ = writeln!(out, "{head}");
        let named = SOURCE_NAMES.iter().map(|n| (*n, rows.clone()));
        let all: Vec<(&str, Row)> = named
            .enumerate()
            .map(|(src, (n, r))| (n, r[src].clone()))
            .chain(
                MISS_NAMES
                    .iter()
                    .zip(&misses[ideal])
                    .map(|(n, r)| (*n, r.clone())),
            )
            .chain(extra.iter().map(|(n, r)| (*n, r[ideal].clone())))
            .filter(|(_, r)| r.periods > 0)
            .collect();
        for (name, r) in all {
            let mut line = format!("  {:<10} {:>9} {:>8.2}", name, r.periods, r.correct_pct());
            for n in r.undershoot.iter().take(k) {
                let _ = write!(line, " {:>6.2}", r.pct(*n));
            }
            for n in r.overshoot.iter().take(k) {
                let _ = write!(line, " {:>6.2}", r.pct(*n));
            }
            let _ = writeln!(out, "{line}");
        }
        if let Some(check) = verdict_check(&rows[KERNEL], &misses[ideal]) {
            let _ = writeln!(out, "{check}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idle::reference::{BY_EXIT, BY_RESIDENCY, SEED, TEO};

    #[test]
    fn buckets_become_the_seeds_columns() {
        let mut sc = Scores::default();
        // teo: 2 correct, 1 one state too deep, 1 two too shallow.
        sc.n[TEO][BY_RESIDENCY][MAX - 1] = 2;
        sc.n[TEO][BY_RESIDENCY][MAX] = 1;
        sc.n[TEO][BY_RESIDENCY][MAX - 3] = 1;
        let r = &rows(&sc)[BY_RESIDENCY][TEO];
        assert_eq!((r.periods, r.correct), (4, 2));
        assert_eq!(r.undershoot[0], 1);
        assert_eq!(r.overshoot[1], 1);
        assert_eq!(r.correct_pct(), 50.0);
        let text = render(&sc, 3, &[]);
        assert!(text.contains("US1    US2    OS1    OS2"), "{text}");
        assert!(
            text.contains("teo                4    50.00  25.00   0.00   0.00  25.00"),
            "{text}"
        );
        // Sources without periods are left out.
        assert!(!text.contains("seed"), "{text}");
        sc.n[SEED][BY_EXIT][MAX - 1] = 1;
        assert!(render(&sc, 3, &[]).contains("seed"));
    }

    #[test]
    fn the_kernels_verdicts_are_rows_of_its_periods() {
        let mut sc = Scores::default();
        let k = &mut sc.n[KERNEL][BY_RESIDENCY];
        // 10 periods: 5 right, 3 one state too deep, 2 one too shallow.
        (k[MAX - 1], k[MAX], k[MAX - 2]) = (5, 3, 2);
        // "above" on 3 (2 too deep here, 1 right), "below" on 2 (too shallow).
        (
            sc.miss[0][BY_RESIDENCY][MAX],
            sc.miss[0][BY_RESIDENCY][MAX - 1],
        ) = (2, 1);
        sc.miss[1][BY_RESIDENCY][MAX - 2] = 2;
        let text = render(&sc, 3, &[]);
        assert!(
            text.contains("k.above            3    33.33  66.67   0.00   0.00   0.00"),
            "{text}"
        );
        assert!(
            text.contains("k.below            2     0.00   0.00   0.00 100.00   0.00"),
            "{text}"
        );
        // The 5 without a verdict hold 1 of the kernel's 5 misses here.
        assert!(
            text.contains(
                "\"above\" on 3 periods, 66.67% too deep here; \"below\" on 2, 100.00% too shallow here; 5 without a verdict, 20.00% a miss here"
            ),
            "{text}"
        );
        // No verdict, no check line: the other ideal has none.
        assert_eq!(text.matches("cpu_idle_miss").count(), 1, "{text}");
    }
}
