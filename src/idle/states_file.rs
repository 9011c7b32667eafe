//! The `--idle-states FILE` format: one state a line, shallowest first,
//! the same table for every online CPU. `#` starts a comment.
//!
//! ```text
//! # name  exit_latency_us  target_residency_us  [disabled]
//! POLL    0     0
//! C1      2     2
//! C1E     10    20
//! C6      133   600   disabled
//! ```
//!
//! The columns are sysfs cpuidle's `name`, `latency` and `residency`
//! (Documentation/admin-guide/pm/cpuidle.rst), in microseconds; the word
//! `disabled` marks a state the CPU must not enter (sysfs `disable` = 1).
//! The line number is the state's index plus the comment and blank lines
//! before it; the index is the count of states above it, from 0.
//!
//! Refused, each with the line: a missing or non-numeric column, a word
//! after the residency other than `disabled`, a name given twice, a target
//! residency not above the previous state's, more than MAX_STATES states;
//! and a file without any state.
//!
//! An exit latency above the target residency is accepted: the kernel does
//! not require latency <= residency (cpuidle core never checks it) and
//! ships tables where it is not so, e.g. intel_idle's byt_cstates C6N
//! (exit latency 300 us, target residency 275 us).

use anyhow::{Result, bail};

use super::states::{IdleState, MAX_STATES};

/// What a line must look like, for the errors.
const FORMAT: &str = "name exit_latency_us target_residency_us [disabled]";

/// A column as a number of microseconds.
fn micros(word: Option<&str>, what: &str, line: usize, raw: &str) -> Result<u32> {
    let Some(word) = word else {
        bail!("line {line}: `{raw}`: no {what} (expected `{FORMAT}`)");
    };
    match word.parse::<u32>() {
        Ok(n) if word.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => bail!("line {line}: `{raw}`: {what} `{word}` is not a whole number of microseconds"),
    }
}

/// Parses @text into the table of states, shallowest first.
pub fn parse(text: &str) -> Result<Vec<IdleState>> {
    // (state, line it is on)
    let mut states: Vec<(IdleState, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let mut words = content.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        let exit_latency_us = micros(words.next(), "exit latency", line, raw)?;
        let target_residency_us = micros(words.next(), "target residency", line, raw)?;
        let disabled = match words.next() {
            None => false,
            Some("disabled") => true,
            Some(w) => bail!(
                "line {line}: `{raw}`: unknown word `{w}` (expected `{FORMAT}`; \
                 only `disabled` may follow the residency)"
            ),
        };
        if let Some(w) = words.next() {
            bail!("line {line}: `{raw}`: unknown word `{w}` after `disabled`");
        }
        if states.len() == MAX_STATES {
            bail!(
                "line {line}: `{raw}`: more than {MAX_STATES} states (the kernel's \
                 CPUIDLE_STATE_MAX, and the size of the BPF tables)"
            );
        }
        if let Some((_, at)) = states.iter().find(|(s, _)| s.name == name) {
            bail!("line {line}: `{raw}`: state `{name}` is already on line {at}");
        }
        if let Some((prev, at)) = states.last()
            && target_residency_us <= prev.target_residency_us
        {
            bail!(
                "line {line}: `{raw}`: target residency {target_residency_us} us is not above \
                 {} us of `{}` on line {at} (states go shallowest first, each deeper one \
                 with a longer residency)",
                prev.target_residency_us,
                prev.name
            );
        }
        states.push((
            IdleState {
                name: name.to_string(),
                exit_latency_us,
                target_residency_us,
                disabled,
            },
            line,
        ));
    }
    if states.is_empty() {
        bail!("no idle states in it: at least one line `{FORMAT}` is needed");
    }
    Ok(states.into_iter().map(|(s, _)| s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
    }

    #[test]
    fn states_comments_and_disabled() {
        let text = "# Skylake-SP\n\nPOLL 0 0\n  C1\t2 2   # MWAIT 0x00\nC1E 10 20 disabled\n";
        assert_eq!(
            parse(text).unwrap(),
            vec![
                IdleState::new("POLL", 0, 0, false),
                IdleState::new("C1", 2, 2, false),
                IdleState::new("C1E", 10, 20, true),
            ]
        );
    }

    #[test]
    fn latency_above_residency_is_accepted_as_the_kernel_ships_it() {
        // intel_idle.c byt_cstates: C1 1/1, C6N 300/275.
        let states = parse("C1 1 1\nC6N 300 275\n").unwrap();
        assert_eq!(states[1], IdleState::new("C6N", 300, 275, false));
    }

    #[test]
    fn missing_column_names_the_line() {
        assert_eq!(
            refusal("C1 2 2\nC6 133\n"),
            "line 2: `C6 133`: no target residency \
             (expected `name exit_latency_us target_residency_us [disabled]`)"
        );
        assert!(refusal("# x\nC1\n").starts_with("line 2: `C1`: no exit latency"));
    }

    #[test]
    fn non_numeric_column_names_the_line() {
        assert_eq!(
            refusal("C1 2 2\nC6 133 6e2\n"),
            "line 2: `C6 133 6e2`: target residency `6e2` is not a whole number of microseconds"
        );
        assert!(refusal("C1 -1 2\n").starts_with("line 1: `C1 -1 2`: exit latency `-1`"));
        assert!(refusal("C1 +1 2\n").starts_with("line 1: `C1 +1 2`: exit latency `+1`"));
        assert!(refusal("C1 1 99999999999\n").contains("`99999999999` is not a whole number"));
    }

    #[test]
    fn unknown_extra_word_names_the_line() {
        assert!(refusal("C1 2 2\nC6 133 600 off\n").starts_with(
            "line 2: `C6 133 600 off`: unknown word `off` (expected `name exit_latency_us"
        ));
        assert_eq!(
            refusal("C1 2 2 disabled now\n"),
            "line 1: `C1 2 2 disabled now`: unknown word `now` after `disabled`"
        );
    }

    #[test]
    fn non_increasing_residency_names_both_lines() {
        assert_eq!(
            refusal("C1 2 2\n# deeper\nC1E 10 20\nC6 133 20\n"),
            "line 4: `C6 133 20`: target residency 20 us is not above 20 us of `C1E` on \
             line 3 (states go shallowest first, each deeper one with a longer residency)"
        );
        assert!(refusal("C1E 10 20\nC1 2 2\n").starts_with("line 2: `C1 2 2`: target residency 2"));
    }

    #[test]
    fn duplicate_name_names_both_lines() {
        assert_eq!(
            refusal("C1 2 2\nC6 133 600\nC6 200 800\n"),
            "line 3: `C6 200 800`: state `C6` is already on line 2"
        );
    }

    #[test]
    fn more_than_max_states_names_the_line() {
        let ok: String = (0..MAX_STATES).map(|i| format!("S{i} {i} {i}\n")).collect();
        assert_eq!(parse(&ok).unwrap().len(), MAX_STATES);
        let text = format!("{ok}S10 10 10\n");
        assert_eq!(
            refusal(&text),
            "line 11: `S10 10 10`: more than 10 states (the kernel's CPUIDLE_STATE_MAX, \
             and the size of the BPF tables)"
        );
    }

    #[test]
    fn no_states_is_refused() {
        for text in ["", "# only a comment\n\n   \n"] {
            assert_eq!(
                refusal(text),
                "no idle states in it: at least one line \
                 `name exit_latency_us target_residency_us [disabled]` is needed"
            );
        }
    }
}
