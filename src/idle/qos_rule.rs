//! `idle.qos = "learned"`: which PM QoS resume-latency limit one CPU gets
//! from its learned table (issue 13, item 4). Pure; the loader writes the
//! result through qos::QosLimits.
//!
//! What the rule reads: teo's bins, not seed 003's matrix. teo_update()
//! (drivers/cpuidle/governors/teo.c, and reference::teo_learn) decays every
//! bin by 7/8 at each period and adds PULSE to one: hits[i] when the period
//! lasted into state i's bin and so did the timer, intercepts[i] when it
//! lasted into bin i and the timer was later. Either way bin i gains when
//! state i was the deepest the period justified, so hits[i] + intercepts[i]
//! is the decayed count of recent periods that justified state i and no
//! deeper one: the CPU's recent idle durations, whatever any governor chose.
//! The matrix's rows are conditioned on teo's choice at each entry, which a
//! limit that holds for every entry until the next write cannot know.
//!
//! The rule: the deepest enabled state in which at most half of the recent
//! periods (by that weight) would have been cut short, i.e. ended before
//! its target residency; the governor is kept out of the deeper ones, in
//! which a majority would have been. A majority is teo's own test of "the
//! intercepts dominate" (`2 * sum > total` in teo_select()). When that
//! state is the deepest enabled one, or the table has learned nothing,
//! there is no limit.

use super::states::IdleState;
use super::table::Table;

/// The deepest enabled state of @states that the recent periods in @t
/// justify (see the module comment), or None when @t was not learned for
/// @states or has learned nothing.
pub fn justified_state(t: &Table, states: &[IdleState]) -> Option<usize> {
    let n = states.len();
    if n == 0 || t.nr_states as usize != n || n > t.hits.len() {
        return None;
    }
    let bin = |i: usize| u64::from(t.hits[i]) + u64::from(t.intercepts[i]);
    let all: u64 = (0..n).map(bin).sum();
    if all == 0 {
        return None;
    }
    let enabled: Vec<usize> = (0..n).filter(|&i| !states[i].disabled).collect();
    let &first = enabled.first()?;
    // cut(d): the weight of the periods that justified a state shallower
    // than d, i.e. lasted less than d's target residency. It grows with d,
    // so the deepest d with 2 * cut(d) <= all is the answer; the shallowest
    // enabled state is taken even if shallower disabled ones hold a
    // majority, as nothing shallower can be entered.
    let cut = |d: usize| (0..d).map(bin).sum::<u64>();
    Some(
        enabled
            .iter()
            .rev()
            .copied()
            .find(|&d| 2 * cut(d) <= all)
            .unwrap_or(first),
    )
}

/// The resume-latency limit (us) for one CPU, or None for no limit.
///
/// The limit admits the justified state d and keeps the deeper ones out.
/// The governors skip a state when `exit_latency_ns > latency_req`, with
/// latency_req = the limit in us * NSEC_PER_USEC (menu_select() and
/// teo_select() in drivers/cpuidle/governors/, cpuidle_governor_latency_req()
/// in drivers/cpuidle/governor.c): a limit equal to d's exit latency keeps
/// d. But sysfs `latency` (which @states hold) is exit_latency_ns rounded
/// down to us (ktime_to_us() in drivers/cpuidle/sysfs.c, and drivers may
/// give ns, drivers/cpuidle/driver.c), so d's own exit latency may be up to
/// 999 ns above what we read. The limit is therefore d's latency + 1 us when
/// every deeper enabled state's latency is at least 2 us above d's (then
/// each is still above the limit), else d's latency as read.
pub fn limit_us(t: &Table, states: &[IdleState]) -> Option<u32> {
    let d = justified_state(t, states)?;
    let deeper_min = states[d + 1..]
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| s.exit_latency_us)
        .min()?;
    let lat = states[d].exit_latency_us;
    Some(if deeper_min >= lat.saturating_add(2) {
        lat + 1
    } else {
        lat
    })
}

/// What to ask the kernel for on a CPU whose value before us was
/// @original (None: no constraint, Some(0): 0 us), given the rule's
/// @limit: never a looser constraint than the one already there, and the
/// original itself where the rule sets no limit.
pub fn effective(limit: Option<u32>, original: Option<u32>) -> Option<u32> {
    match (limit, original) {
        (Some(l), Some(o)) => Some(l.min(o)),
        (l, None) => l,
        (None, o) => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/idle-states/intel-skylake-sp.txt: POLL 0/0, C1 2/2, C1E 10/20,
    /// C6 133/600 (exit latency / target residency, us).
    fn skx(disabled: &[usize]) -> Vec<IdleState> {
        [
            ("POLL", 0, 0),
            ("C1", 2, 2),
            ("C1E", 10, 20),
            ("C6", 133, 600),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(n, l, r))| IdleState::new(n, l, r, disabled.contains(&i)))
        .collect()
    }

    /// A table learned for @nr states with the given (state, hits,
    /// intercepts).
    fn table(nr: u32, bins: &[(usize, u32, u32)]) -> Table {
        let mut t = Table {
            nr_states: nr,
            periods: 100,
            ..Table::default()
        };
        for &(i, h, x) in bins {
            t.hits[i] = h;
            t.intercepts[i] = x;
        }
        t
    }

    #[test]
    fn nothing_learned_gives_no_limit() {
        // Fresh: nr_states 0 (BPF fills it in at the first period).
        assert_eq!(limit_us(&Table::default(), &skx(&[])), None);
        // Learned for these states but every bin empty.
        assert_eq!(limit_us(&table(4, &[]), &skx(&[])), None);
        // Learned for another number of states.
        assert_eq!(limit_us(&table(3, &[(1, 8000, 0)]), &skx(&[])), None);
        assert_eq!(limit_us(&table(0, &[]), &[]), None);
    }

    #[test]
    fn short_periods_keep_the_governor_in_the_state_they_justify() {
        // Every recent period justified C1 only: C1E (cut(2) = 8000 of
        // 8000) and C6 are out. C1's latency 2, C1E's 10 >= 2 + 2: 3 us.
        assert_eq!(
            justified_state(&table(4, &[(1, 8000, 0)]), &skx(&[])),
            Some(1)
        );
        assert_eq!(limit_us(&table(4, &[(1, 8000, 0)]), &skx(&[])), Some(3));
        // Hits and intercepts count alike: C1E 3000 + 2000, POLL 1000,
        // C6 4000 of 10000. cut(C6) = 6000 > 5000, cut(C1E) = 1000: C1E,
        // 10 us, C6's 133 >= 12: 11 us.
        let t = table(4, &[(0, 0, 1000), (2, 3000, 2000), (3, 4000, 0)]);
        assert_eq!(justified_state(&t, &skx(&[])), Some(2));
        assert_eq!(limit_us(&t, &skx(&[])), Some(11));
        // One more than half in POLL's bin: POLL (latency 0; C1's 2 >= 2):
        // 1 us, which admits POLL (0 ns) and not C1 (2000 ns).
        let t = table(4, &[(0, 4097, 0), (3, 4095, 0)]);
        assert_eq!(limit_us(&t, &skx(&[])), Some(1));
    }

    #[test]
    fn half_cut_short_is_not_a_majority() {
        // cut(C6) = 4096 of 8192: exactly half, C6 stays: no limit.
        let t = table(4, &[(0, 4096, 0), (3, 0, 4096)]);
        assert_eq!(justified_state(&t, &skx(&[])), Some(3));
        assert_eq!(limit_us(&t, &skx(&[])), None);
    }

    #[test]
    fn long_periods_give_no_limit() {
        let t = table(4, &[(3, 8000, 0)]);
        assert_eq!(limit_us(&t, &skx(&[])), None);
    }

    #[test]
    fn disabled_states_are_skipped_both_ways() {
        // As above but C1E disabled: cut(C6) = 6000 > 5000 still, and the
        // next enabled state down is C1 (2 us; C6's 133 >= 4): 3 us.
        let t = table(4, &[(0, 0, 1000), (2, 3000, 2000), (3, 4000, 0)]);
        assert_eq!(justified_state(&t, &skx(&[2])), Some(1));
        assert_eq!(limit_us(&t, &skx(&[2])), Some(3));
        // C6 disabled, every period justified C6: C1E is the deepest
        // enabled state and is justified: no limit.
        assert_eq!(limit_us(&table(4, &[(3, 8000, 0)]), &skx(&[3])), None);
        // POLL disabled, every period in POLL's bin: C1 is the shallowest
        // that can be entered: 3 us.
        assert_eq!(limit_us(&table(4, &[(0, 8000, 0)]), &skx(&[0])), Some(3));
    }

    #[test]
    fn no_extra_microsecond_when_it_would_admit_a_deeper_state() {
        // B 5 us, C 6 us: 6 us would admit C (if its 6 us are exact), so
        // the limit stays at B's 5.
        let st = vec![
            IdleState::new("A", 0, 0, false),
            IdleState::new("B", 5, 10, false),
            IdleState::new("C", 6, 20, false),
        ];
        assert_eq!(limit_us(&table(3, &[(1, 8000, 0)]), &st), Some(5));
        // A deeper state with a smaller latency than B's (allowed in the
        // files, as in the kernel's tables): B's own latency.
        let st = vec![
            IdleState::new("A", 0, 0, false),
            IdleState::new("B", 5, 10, false),
            IdleState::new("C", 3, 20, false),
        ];
        assert_eq!(limit_us(&table(3, &[(1, 8000, 0)]), &st), Some(5));
    }

    #[test]
    fn the_original_constraint_is_never_loosened() {
        assert_eq!(effective(None, None), None);
        assert_eq!(effective(Some(3), None), Some(3));
        assert_eq!(effective(None, Some(777)), Some(777));
        assert_eq!(effective(Some(3), Some(777)), Some(3));
        assert_eq!(effective(Some(1000), Some(777)), Some(777));
        // "n/a" (0 us) before us stays 0 us.
        assert_eq!(effective(Some(3), Some(0)), Some(0));
    }
}
