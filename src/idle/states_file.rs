//! The `--idle-states FILE` format: one state a line, shallowest first,
//! the same table for every online CPU. `#` starts a comment.
//!
//! ```text
//! # name  exit_latency_us  target_residency_us  [power=N]  [disabled]
//! POLL    0     0
//! C1      2     2
//! C1E     10    20
//! C6      133   600   disabled
//! ```
//!
//! The columns are sysfs cpuidle's `name`, `latency` and `residency`
//! (Documentation/admin-guide/pm/cpuidle.rst), in microseconds; the word
//! `disabled` marks a state the CPU must not enter (sysfs `disable` = 1).
//! `power=N` is the power the state draws, in any unit that is the same on
//! every line; only `idle replay`'s energy proxy reads it (see `energy`).
//! The line number is the state's index plus the comment and blank lines
//! before it; the index is the count of states above it, from 0.
//!
//! Refused, each with the line: a missing or non-numeric column, a word
//! after the residency other than `power=N` and `disabled` (each once), a
//! name given twice, a target residency not above the previous state's, a
//! power above the previous state's, power on some states but not all,
//! more than MAX_STATES states; a file without any state, and one whose
//! every power is 0 (the energy proxy would compare nothing).
//!
//! An exit latency above the target residency is accepted: the kernel
//! ships tables where it is so, e.g. intel_idle's byt_cstates C6N (exit
//! latency 300 us, target residency 275 us), and registers them. Its
//! cpuidle core refused such a driver for a while in the 6.19 cycle
//! (commit 76934e495cdc), then only warned, after device trees in the
//! field (an entry + exit latency above min-residency-us) tripped it.

use anyhow::{Result, bail};

use super::states::{IdleState, MAX_STATES};

/// What a line must look like, for the errors.
const FORMAT: &str = "name exit_latency_us target_residency_us [power=N] [disabled]";

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
        let (mut disabled, mut power) = (false, None);
        for w in words {
            match w.strip_prefix("power=") {
                _ if w == "disabled" && !disabled => disabled = true,
                Some(n) if power.is_none() => match n.parse::<u32>() {
                    Ok(p) if n.bytes().all(|b| b.is_ascii_digit()) => power = Some(p),
                    _ => bail!(
                        "line {line}: `{raw}`: power `{n}` is not a whole number up to {}",
                        u32::MAX
                    ),
                },
                _ => bail!(
                    "line {line}: `{raw}`: unknown or repeated word `{w}` (expected \
                     `{FORMAT}`; only `power=N` and `disabled` may follow the residency, \
                     each once)"
                ),
            }
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
        if let Some((prev, at)) = states.last() {
            match (prev.power, power) {
                (Some(p), Some(q)) if q > p => bail!(
                    "line {line}: `{raw}`: power {q} is above {p} of `{}` on line {at} (a \
                     deeper state draws no more power than a shallower one)",
                    prev.name
                ),
                (Some(_), None) | (None, Some(_)) => bail!(
                    "line {line}: `{raw}`: power= is given on line {} but not on line {} \
                     (give it on every state or on none)",
                    if power.is_some() { line } else { *at },
                    if power.is_some() { *at } else { line },
                ),
                _ => {}
            }
        }
        states.push((
            IdleState {
                name: name.to_string(),
                exit_latency_us,
                target_residency_us,
                disabled,
                power,
            },
            line,
        ));
    }
    if states.is_empty() {
        bail!("no idle states in it: at least one line `{FORMAT}` is needed");
    }
    if states.iter().all(|(s, _)| s.power == Some(0)) {
        bail!("power=0 on every state: the energy proxy would have nothing to compare");
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
             (expected `name exit_latency_us target_residency_us [power=N] [disabled]`)"
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
            "line 2: `C6 133 600 off`: unknown or repeated word `off` (expected `name \
             exit_latency_us"
        ));
        assert!(
            refusal("C1 2 2 disabled now\n")
                .starts_with("line 1: `C1 2 2 disabled now`: unknown or repeated word `now`")
        );
        assert!(
            refusal("C1 2 2 disabled disabled\n")
                .starts_with("line 1: `C1 2 2 disabled disabled`: unknown or repeated word")
        );
        assert!(
            refusal("C1 2 2 power=3 power=2\n").starts_with(
                "line 1: `C1 2 2 power=3 power=2`: unknown or repeated word `power=2`"
            )
        );
    }

    #[test]
    fn power_in_either_order_with_disabled() {
        let states = parse("WFI 1 1 power=80\nsleep 1500 2000 disabled power=65\n").unwrap();
        let want = |name: &str, l, r, d, p| IdleState {
            power: Some(p),
            ..IdleState::new(name, l, r, d)
        };
        assert_eq!(
            states,
            vec![
                want("WFI", 1, 1, false, 80),
                want("sleep", 1500, 2000, true, 65)
            ]
        );
    }

    #[test]
    fn bad_power_names_the_lines() {
        assert_eq!(
            refusal("C1 2 2 power=1.5\n"),
            "line 1: `C1 2 2 power=1.5`: power `1.5` is not a whole number up to 4294967295"
        );
        assert!(refusal("C1 2 2 power=\n").contains("power `` is not a whole number"));
        assert!(refusal("C1 2 2 power=4294967296\n").contains("not a whole number up to"));
        assert!(refusal("C1 2 2 power=+1\n").contains("power `+1` is not"));
        assert_eq!(
            refusal("C1 2 2 power=0\nC6 133 600 power=0\n"),
            "power=0 on every state: the energy proxy would have nothing to compare"
        );
        assert_eq!(
            refusal("C1 2 2 power=10\n\nC6 133 600 power=11\n"),
            "line 3: `C6 133 600 power=11`: power 11 is above 10 of `C1` on line 1 (a deeper \
             state draws no more power than a shallower one)"
        );
        assert_eq!(
            refusal("C1 2 2 power=10\nC6 133 600\n"),
            "line 2: `C6 133 600`: power= is given on line 1 but not on line 2 (give it on \
             every state or on none)"
        );
        assert_eq!(
            refusal("C1 2 2\nC6 133 600 power=1\n"),
            "line 2: `C6 133 600 power=1`: power= is given on line 2 but not on line 1 (give \
             it on every state or on none)"
        );
        // Equal power is allowed (the deeper state then never pays off).
        assert_eq!(
            parse("C1 2 2 power=5\nC6 133 600 power=5\n").unwrap().len(),
            2
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
                 `name exit_latency_us target_residency_us [power=N] [disabled]` is needed"
            );
        }
    }
}
