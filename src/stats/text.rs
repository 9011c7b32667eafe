//! The default text line of `--stats` and `scx_cadence stats`: one line of
//! about 160 columns that a person reads in a terminal. It holds the policy
//! and its generation, util and frequency, the cpufreq target and requests,
//! where wake-ups went under the placement order in force, where tasks were
//! queued, and the few rare counters while they are not zero. Everything
//! else (the other order's steps, the deadband's stages, per-CPU values) is
//! in `-v`, `--per-cpu`, JSON and OpenMetrics.

use super::{CpuMetrics, Metrics};
use crate::policy::{Choice, PlaceOrder};

/// @n in at most 5 characters: exact below 10000, else 3 significant digits
/// (rounded down) and k, M, G, T, P or E: 12.3k, 123k, 1.23M.
pub fn compact(n: u64) -> String {
    if n < 10_000 {
        return n.to_string();
    }
    let mut unit = 1_000u64;
    for suffix in ["k", "M", "G", "T", "P", "E"] {
        // The value in units, times 100, as an integer: no float rounding
        // can turn 999_999 into "1000k".
        let hundredths = n as u128 * 100 / unit as u128;
        if hundredths < 1_000 {
            return format!("{}.{:02}{suffix}", hundredths / 100, hundredths % 100);
        } else if hundredths < 10_000 {
            return format!("{}.{}{suffix}", hundredths / 100, hundredths / 10 % 10);
        } else if hundredths < 100_000 {
            return format!("{}{suffix}", hundredths / 100);
        }
        unit = unit.saturating_mul(1_000);
    }
    unreachable!("u64::MAX is 18.4E")
}

/// @part of @whole in whole percent; "<1%" for a share that is not zero but
/// rounds to it.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 || part == 0 {
        return "0%".into();
    }
    let pct = (part as u128 * 100 + whole as u128 / 2) / whole as u128;
    if pct == 0 {
        "<1%".into()
    } else {
        format!("{pct}%")
    }
}

/// Where wake-ups went: the number counted, then each step of the
/// placement order in force as a share of it.
///
/// To fit the line, a few steps are one share here and split in `-v`: the
/// small-core order's three "idle thread near the previous CPU" levels (its
/// small core, its big core, its LLC) are `near`, and the core order's two
/// "another LLC" steps (an idle core, an idle CPU) are `any`.
///
/// select_cpu() counts a task that may run on one CPU only in the core
/// order's steps `prev` or `busy` whatever the order (bpf/place.bpf.h,
/// pick_idle_cpu), so under the small-core order those two are shown as
/// `pinned` while they are not zero. With an order this build does not know
/// (a reader newer than the server), both orders are shown.
fn wake(m: &CpuMetrics, order: &str) -> String {
    let core = [
        ("prev-core", m.select_prev_core),
        ("llc-core", m.select_llc_core),
        ("prev", m.select_prev_cpu),
        ("llc", m.select_llc_cpu),
        ("any", m.select_any_core.wrapping_add(m.select_any_cpu)),
        ("busy", m.select_busy),
    ];
    let near = m
        .place_near_small
        .wrapping_add(m.place_near_big)
        .wrapping_add(m.place_near_llc);
    let small = [
        ("prev", m.place_prev_small),
        ("big", m.place_idle_big),
        ("small", m.place_idle_small),
        ("near", near),
        ("any", m.place_any),
        ("busy", m.place_busy),
    ];
    let pinned = m.select_prev_cpu.wrapping_add(m.select_busy);
    let shown: Vec<(&str, u64)> = match PlaceOrder::from_word(order) {
        Some(PlaceOrder::Core) => core.to_vec(),
        Some(PlaceOrder::SmallCore) if pinned == 0 => small.to_vec(),
        Some(PlaceOrder::SmallCore) => small.into_iter().chain([("pinned", pinned)]).collect(),
        None => core.into_iter().chain(small).collect(),
    };
    let total = shown.iter().fold(0u64, |t, (_, v)| t.wrapping_add(*v));
    let mut s = format!("wake {}", compact(total));
    for (label, v) in shown {
        s += &format!(" {label} {}", percent(v, total));
    }
    s
}

/// The default line (no newline). Rare counters (re-attachments after
/// hotplug, failed frequency readings) are added while they are not zero.
pub fn brief(m: &Metrics) -> String {
    let t = &m.total;
    let mut s = format!(
        "{} gen {} | util {} freq {}%",
        m.policy,
        m.policy_generation,
        percent(m.util.util_avg, m.nr_cpus.saturating_mul(1024)),
        m.util.freq_pct()
    );
    if m.util.freq_errors > 0 {
        s += &format!(" errors {}", compact(m.util.freq_errors));
    }
    s += &format!(
        " | cpufreq {} req {} | {} | enq llc {} cpu {}",
        m.cpufreq.cpufreq_target,
        compact(m.cpufreq.cpufreq_issued),
        wake(t, &m.placement_order),
        compact(t.enq_llc),
        compact(t.enq_pinned),
    );
    if m.idle.idle_periods > 0 {
        s += &format!(" | {}", idle_brief(m));
    }
    if m.nr_restarts > 0 {
        s += &format!(" | restarts {}", m.nr_restarts);
    }
    s
}

/// The idle learner, while it learns: periods, and each source's share of
/// correct predictions (ideal by target residency, as seed 003 counts).
fn idle_brief(m: &Metrics) -> String {
    use crate::idle::score_table::{SOURCE_NAMES, rows};
    let rows = rows(&m.idle.scores());
    let mut s = format!("idle {} correct", compact(m.idle.idle_periods));
    for (name, r) in SOURCE_NAMES.iter().zip(&rows[0]) {
        if r.periods > 0 {
            s += &format!(" {name} {:.0}%", r.correct_pct());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::stats::{CpuUtil, CpufreqCounters};

    /// Widest line `brief` is meant to print (issue 12: "about 160
    /// columns", a terminal of half a wide screen).
    const BRIEF_COLUMNS: usize = 160;

    /// One busy CPU's counters over one second of `--stats 1`: every
    /// counter of both orders non-zero, each a few hundred per second (so
    /// the machine's sums run to 5-6 digits, the widest they print).
    fn busy_cpu(i: u64) -> CpuMetrics {
        let mut c = CpuMetrics {
            policy_generation: 3,
            ..Default::default()
        };
        let json = serde_json::to_value(&c).unwrap();
        let mut json = json.as_object().unwrap().clone();
        for (n, (name, _)) in CpuMetrics::COUNTERS.iter().enumerate() {
            json[*name] = (97 + 31 * n as u64 + i).into();
        }
        c = serde_json::from_value(json.into()).unwrap();
        c
    }

    fn busy_machine(order: &str) -> Metrics {
        let cpus = (0..64).map(|i| (i as u32, busy_cpu(i))).collect();
        let util = (0..64)
            .map(|i| {
                let u = CpuUtil {
                    util_avg: 700 + i,
                    freq_scale: 900,
                    freq_source: "aperf".into(),
                    freq_ticks: 250,
                    freq_clamped: 3,
                    freq_errors: 0,
                };
                (i as u32, u)
            })
            .collect::<BTreeMap<_, _>>();
        let cpufreq = (0..64)
            .map(|i| {
                let c = CpufreqCounters {
                    cpufreq_target: 600 + i,
                    cpufreq_util: 700,
                    cpufreq_issued: 180 + i,
                    cpufreq_supp_deadband: 11,
                    cpufreq_supp_hysteresis: 40,
                    cpufreq_supp_hold: 9,
                    cpufreq_supp_rate: 120,
                    cpufreq_iowait_boosts: 7,
                    cpufreq_idle_floor: 30,
                    cpufreq_hist: vec![1; 16],
                };
                (i as u32, c)
            })
            .collect();
        let mut m = Metrics::new(cpus, 4, 0)
            .with_util(util)
            .with_cpufreq(cpufreq);
        m.policy = "balanced".into();
        m.policy_generation = 3;
        m.placement_order = order.into();
        m.freq_max_mhz = 4_700;
        m.cpufreq_driver = "cpufreq: intel_cpufreq/schedutil on 32 of 64 CPUs".into();
        m.cpufreq_hint_cpus = 32;
        m
    }

    fn verbose(m: &Metrics) -> String {
        let mut out = Vec::new();
        m.format(&mut out, false, true).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn default_line_of_a_busy_64_cpu_machine_fits() {
        for order in ["small_core", "core"] {
            let m = busy_machine(order);
            let mut out = Vec::new();
            m.format(&mut out, false, false).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text, brief(&m) + "\n");
            assert!(
                text.trim_end().len() <= BRIEF_COLUMNS,
                "{} columns: {text}",
                text.trim_end().len()
            );
            // What the line is for: policy and generation, util and
            // frequency, the cpufreq target and requests, wake-ups, queues.
            for part in [
                "balanced gen 3 |",
                "util 71% freq 87% |",
                "cpufreq 631 req 13.5k |",
                "| wake ",
                "| enq llc 26.0k cpu 22.1k",
            ] {
                assert!(text.contains(part), "{part} missing in {text}");
            }
        }
    }

    #[test]
    fn counters_of_the_other_order_are_only_in_verbose() {
        type Counter = fn(&mut CpuMetrics) -> &mut u64;
        let cases: [(&str, &str, &str, Counter); 4] = [
            ("small_core", "llc-core", "llc-core", |c| {
                &mut c.select_llc_core
            }),
            ("small_core", "prev-core", "prev-core", |c| {
                &mut c.select_prev_core
            }),
            ("core", " big ", "idle-big", |c| &mut c.place_idle_big),
            ("core", " near ", "near-small", |c| &mut c.place_near_small),
        ];
        for (order, absent, label, counter) in cases {
            let m = busy_machine(order);
            let line = brief(&m);
            assert!(!line.contains(absent), "{order}: {absent} in {line}");
            let mut bumped = m.clone();
            *counter(&mut bumped.total) += 1_000_000;
            assert_eq!(
                brief(&bumped),
                line,
                "{order}: the other order moved the line"
            );
            let want = format!(" {label} {} ", *counter(&mut bumped.total));
            let full = verbose(&bumped);
            assert!(
                full.contains(&want),
                "{order}: {want} missing in -v: {full}"
            );
        }
    }

    #[test]
    fn wake_shares_follow_the_order_in_force() {
        let c = CpuMetrics {
            place_prev_small: 50,
            place_idle_big: 25,
            place_near_small: 10,
            place_near_big: 5,
            place_near_llc: 10,
            select_llc_core: 7,
            ..Default::default()
        };
        assert_eq!(
            wake(&c, "small_core"),
            "wake 100 prev 50% big 25% small 0% near 25% any 0% busy 0%"
        );
        // A pinned task's wake-up is counted in the core order's prev or
        // busy step whatever the order.
        let pinned = CpuMetrics {
            select_prev_cpu: 60,
            select_busy: 40,
            ..c.clone()
        };
        assert_eq!(
            wake(&pinned, "small_core"),
            "wake 200 prev 25% big 13% small 0% near 13% any 0% busy 0% pinned 50%"
        );
        let core = CpuMetrics {
            select_prev_core: 1,
            select_any_core: 2,
            select_any_cpu: 997,
            ..Default::default()
        };
        assert_eq!(
            wake(&core, "core"),
            "wake 1000 prev-core <1% llc-core 0% prev 0% llc 0% any 100% busy 0%"
        );
        // An order this build does not know: both, nothing hidden.
        // 100 placed + 7 + 60 + 40 = 207: 7/207 = 3.4%, 60/207 = 29.0%,
        // 40/207 = 19.3%, 50/207 = 24.2%, 25/207 = 12.1%.
        assert_eq!(
            wake(&pinned, ""),
            "wake 207 prev-core 0% llc-core 3% prev 29% llc 0% any 0% busy 19% \
             prev 24% big 12% small 0% near 12% any 0% busy 0%"
        );
    }

    #[test]
    fn rare_counters_show_only_when_not_zero() {
        let quiet = busy_machine("small_core");
        let line = brief(&quiet);
        assert!(
            !line.contains("restarts") && !line.contains("errors"),
            "{line}"
        );
        let mut m = quiet.clone();
        m.nr_restarts = 2;
        m.util.freq_errors = 12_345;
        let line = brief(&m);
        assert!(line.ends_with(" | restarts 2"), "{line}");
        assert!(line.contains(" freq 87% errors 12.3k |"), "{line}");
    }

    #[test]
    fn compact_numbers_stay_within_five_characters() {
        for (n, want) in [
            (0, "0"),
            (9_999, "9999"),
            (10_000, "10.0k"),
            (12_345, "12.3k"),
            (99_999, "99.9k"),
            (100_000, "100k"),
            (999_999, "999k"),
            (1_000_000, "1.00M"),
            (1_239_000_000, "1.23G"),
            (u64::MAX, "18.4E"),
        ] {
            assert_eq!(compact(n), want, "{n}");
        }
    }

    #[test]
    fn percent_rounds_and_never_hides_a_nonzero_share() {
        assert_eq!(percent(0, 0), "0%");
        assert_eq!(percent(0, 10), "0%");
        assert_eq!(percent(1, 1000), "<1%");
        assert_eq!(percent(2, 3), "67%");
        assert_eq!(percent(10, 10), "100%");
    }
}
