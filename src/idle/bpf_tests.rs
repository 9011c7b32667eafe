//! bpf/idle_learn.bpf.c, run in the host kernel through BPF_PROG_TEST_RUN of
//! bpf/idle_replay.bpf.c: hand-traced sequences from teo.c and seed 003's
//! RFC v2, and
//! random traces against the Rust reference, choice for choice and table
//! for table. Needs CAP_BPF and CAP_PERFMON (skipped without,
//! src/bpf_test_progs.rs); it does not need sched_ext.

use super::learner_bpf::{BpfLearner, Period, Run};
use super::reference::{self, ENDLESS, Entry, Knobs, Miss, Pick, Scores, Tick};
use super::score_table;
use super::table::{StatesNs, Table};
use crate::bpf_intf;
use crate::bpf_test_progs;

const US: u64 = 1000;

/// None: skipped, this process may not load BPF.
fn learner() -> Option<BpfLearner> {
    bpf_test_progs::skip_without_bpf()?;
    Some(BpfLearner::load().expect("loading the idle learner"))
}

fn policy(k: &Knobs) -> bpf_intf::cadence_policy {
    // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
    let mut pol: bpf_intf::cadence_policy = unsafe { std::mem::zeroed() };
    pol.idle_predictor = bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_SEED;
    pol.idle_pick = match k.pick {
        Pick::Random => bpf_intf::cadence_idle_pick_CADENCE_IDLE_PICK_RANDOM,
        Pick::Heaviest => bpf_intf::cadence_idle_pick_CADENCE_IDLE_PICK_HEAVIEST,
    };
    pol.idle_learning_rate = k.learning_rate;
    // Both matrices run, as the reference's.
    pol.idle_compare = 1;
    pol
}

/// Seed 003's RFC v2: LEARNING_RATE 10, the weighted random pick.
const SEED: Knobs = Knobs {
    pick: Pick::Random,
    learning_rate: 10,
};

/// An Intel-like table: POLL, C1 (2 us), C6 (600 us; exit 133 us).
fn three_states() -> StatesNs {
    StatesNs {
        residency_ns: vec![0, 2 * US, 600 * US],
        exit_latency_ns: vec![0, 2 * US, 133 * US],
        disabled: vec![false; 3],
        polling: vec![true, false, false],
    }
}

/// Skylake-SP's C1 and C6 alone: no state with a zero residency.
fn c1_and_c6() -> StatesNs {
    StatesNs {
        residency_ns: vec![2 * US, 600 * US],
        exit_latency_ns: vec![2 * US, 133 * US],
        disabled: vec![false; 2],
        polling: vec![],
    }
}

fn period(duration_ns: u64) -> Period {
    Period {
        duration_ns,
        sleep_length_ns: ENDLESS,
        kernel_state: -1,
        rand: 0,
        tick: Tick::default(),
        latency_req_ns: ENDLESS,
        kernel_miss: Miss::None,
    }
}

/// The same periods through the reference.
fn reference_run(k: &Knobs, s: &StatesNs, table: &Table, kernel: bool, periods: &[Period]) -> Run {
    let mut t = table.clone();
    let mut scores = Scores::default();
    let mut entries = Vec::new();
    for p in periods {
        let e = reference::predict(&mut t, s, k, p, kernel);
        reference::learn(&mut t, s, k, &e, p.duration_ns);
        reference::score(&mut scores, s, &e, p.duration_ns, kernel);
        entries.push(e);
    }
    Run {
        table: t,
        scores,
        entries,
    }
}

fn bpf_run(l: &BpfLearner, k: &Knobs, s: &StatesNs, table: &Table, periods: &[Period]) -> Run {
    l.run(&policy(k), s, table, &Scores::default(), true, periods)
        .expect("idle_replay")
}

/// teo.c by hand: 30 us periods with no timer information. The first
/// period starts from empty bins, so teo takes the deepest state (C6).
/// Lasting less than C6's exit latency (133 us), the period counts as
/// half its length (15 us) in teo_update(): an intercept in C1's bin
/// (2 us <= 15 us < 600 us) and a short idle. From then on the intercepts
/// below C6 (1024) outweigh total - hits below C6 (1024 - 0): teo walks
/// to C1, and in the second period, with short idles at least half the
/// total, it does not read the sleep length. (Entered in C1, whose exit
/// latency is 2 us, the later periods measure 29 us, not short, and from
/// the third on teo reads it.) Each period justified C1 (the deepest
/// residency <= 30 us).
#[test]
fn teo_learns_short_periods_after_one_miss() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let periods = vec![period(30 * US); 5];
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &periods);
    let teo: Vec<u32> = run.entries.iter().map(|e| e.teo).collect();
    assert_eq!(teo, [2, 1, 1, 1, 1]);
    assert!(run.entries[0].sleep_length_used);
    assert!(!run.entries[1].sleep_length_used);
    // One undershoot by one state (C6 for a C1 period), four correct.
    let by_res = &run.scores.n[reference::TEO][reference::BY_RESIDENCY];
    assert_eq!(by_res[table_bucket(1)], 1);
    assert_eq!(by_res[table_bucket(0)], 4);
    // First period: intercepts[1] = 1024, total = 1024, short_idles = 1024.
    let after_one = bpf_run(&l, &SEED, &s, &Table::default(), &periods[..1]).table;
    assert_eq!(after_one.intercepts, [0, 1024, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!((after_one.total, after_one.short_idles), (1024, 1024));
}

/// The bucket of chosen - ideal = @diff.
fn table_bucket(diff: i32) -> usize {
    (diff + reference::DIFFS as i32 / 2) as usize
}

/// teo.c: a known sleep length caps the choice: with empty bins teo takes
/// C6, reads the sleep length (C6's 600 us is not below the 15 us
/// threshold), and a timer 100 us away leaves C1, the deepest state whose
/// residency fits. Linux 7.0's classification (f36de72673ad) counts a hit
/// only if the timer was due before the raw period ended, within half
/// C1's 2 us exit latency: sleep length - (raw - 1 us) < 1 us. A period
/// of exactly 100 us is an intercept in C1's bin; one of 101 us a hit.
#[test]
fn teo_caps_by_sleep_length_and_counts_a_hit_only_after_the_timer() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let timer_at = |raw_us| Period {
        sleep_length_ns: 100 * US,
        ..period(raw_us * US)
    };
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[timer_at(100)]);
    assert_eq!(run.entries[0].teo, 1);
    assert_eq!(run.table.intercepts[1], 1024);
    assert_eq!(run.table.hits, [0; 10]);
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[timer_at(101)]);
    assert_eq!(run.table.hits[1], 1024);
    assert_eq!(run.table.intercepts, [0; 10]);
}

/// The table of bench/journal/idle.md's "Mainline teo" hand traces:
/// POLL, S1 (2 us, exit 2 us), S2 (20 us, exit 10 us), S3 (1.2 ms, exit
/// 300 us).
fn table_t() -> StatesNs {
    StatesNs {
        residency_ns: vec![0, 2 * US, 20 * US, 1200 * US],
        exit_latency_ns: vec![0, 2 * US, 10 * US, 300 * US],
        disabled: vec![false; 4],
        polling: vec![true, false, false, false],
    }
}

/// Bins with @intercepts and @hits (each padded with zeroes) and @total.
fn bins(intercepts: &[u32], hits: &[u32], total: u32) -> Table {
    let mut t = reference::fresh(4);
    t.intercepts[..intercepts.len()].copy_from_slice(intercepts);
    t.hits[..hits.len()].copy_from_slice(hits);
    t.total = total;
    t
}

/// The choices for one period @p on table T's states from bins @t.
fn entry_on_t(l: &BpfLearner, t: &Table, p: Period) -> Entry {
    bpf_run(l, &SEED, &table_t(), t, &[p]).entries[0]
}

/// Linux 7.0's a971f984b845, its changelog's example: intercepts 400, 250,
/// 251 below the deepest state and a total of 1000. The walk's trigger
/// (2 * 901 > 1000 - 0) fires; the bin with the most intercepts is 0. At
/// S2 (sum 251) and S1 (sum 501, 1002 > 901 but S1 is above bin 0) the
/// walk goes on; at POLL (sum 901) it stops: POLL. Before the refinement
/// teo stopped at S1.
#[test]
fn teo_walks_down_to_the_bin_with_the_most_intercepts() {
    let Some(l) = learner() else { return };
    let t = bins(&[400, 250, 251, 0], &[0, 0, 0, 99], 1000);
    let run = bpf_run(&l, &SEED, &table_t(), &t, &[period(1000 * US)]);
    assert_eq!(run.entries[0].teo, 0);
}

/// Linux 6.19+: the walk steps over a disabled state and goes on to the
/// next enabled one. S1 disabled; intercepts 10, 600, 50; total 1000: the
/// most intercepts are in bin 1, so the walk may stop at 1 or shallower.
/// At S2 (sum 50) no; bin 1 (sum 650, 1300 > 660) is disabled, passed; at
/// POLL (sum 660) it stops: POLL. Before, teo stopped at S2, the enabled
/// state above the crossing.
#[test]
fn teo_walks_past_a_disabled_state_to_a_shallower_one() {
    let Some(l) = learner() else { return };
    let mut s = table_t();
    s.disabled[1] = true;
    let t = bins(&[10, 600, 50, 0], &[0, 0, 0, 340], 1000);
    let run = bpf_run(&l, &SEED, &s, &t, &[period(1000 * US)]);
    assert_eq!(run.entries[0].teo, 0);
}

/// Linux 7.0's f36de72673ad: the kernel entered S2 (exit 10 us), a timer
/// 500 us away. Woken after 100 us, measured 95 us: the same bin as the
/// timer (S2), but the timer was not due: an intercept in bin 2, not the
/// hit that the bins alone would give. Woken after 502 us (measured
/// 497 us, 3 us before the timer, under half the exit latency): a hit.
#[test]
fn teo_counts_an_early_wake_up_in_the_timers_bin_as_an_intercept() {
    let Some(l) = learner() else { return };
    let entered_s2 = |raw_us| Period {
        sleep_length_ns: 500 * US,
        kernel_state: 2,
        ..period(raw_us * US)
    };
    let early = bpf_run(&l, &SEED, &table_t(), &Table::default(), &[entered_s2(100)]);
    assert_eq!((early.entries[0].teo, early.entries[0].entered), (2, 2));
    assert_eq!(early.table.intercepts, [0, 0, 1024, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(early.table.hits, [0; 10]);
    let due = bpf_run(&l, &SEED, &table_t(), &Table::default(), &[entered_s2(502)]);
    assert_eq!(due.table.hits, [0, 0, 1024, 0, 0, 0, 0, 0, 0, 0]);
}

/// teo_update() takes the exit latency of the state entered. Fresh bins
/// and a timer 10 ms away: teo predicts S3 (exit 300 us); the kernel
/// entered S1 (exit 2 us) and woke after 30 us. With S1's latency the
/// period measures 29 us: not short, an intercept in S2's bin. Were S3's
/// latency taken (as when the kernel's indices are not ours, and teo's
/// own choice stands in), 30 us < 300 us would halve it to 15 us: a short
/// idle and an intercept in S1's bin.
#[test]
fn teo_takes_the_exit_latency_of_the_state_entered() {
    let Some(l) = learner() else { return };
    let p = Period {
        sleep_length_ns: 10_000 * US,
        kernel_state: 1,
        ..period(30 * US)
    };
    let pol = policy(&SEED);
    let (s, fresh, none) = (table_t(), Table::default(), Scores::default());
    let known = l.run(&pol, &s, &fresh, &none, true, &[p]).unwrap();
    assert_eq!((known.entries[0].teo, known.entries[0].entered), (3, 1));
    assert_eq!(known.table.intercepts[..4], [0, 0, 1024, 0]);
    assert_eq!(known.table.short_idles, 0);
    let unknown = l.run(&pol, &s, &fresh, &none, false, &[p]).unwrap();
    assert_eq!(unknown.entries[0].entered, 3);
    assert_eq!(unknown.table.intercepts[..4], [0, 1024, 0, 0]);
    assert_eq!(unknown.table.short_idles, 1024);
}

/// HZ=1000's tick (TICK_NSEC 1 ms), the next clock event @next_us away.
fn tick_1ms(next_us: u64) -> Tick {
    Tick {
        tick_ns: 1000 * US,
        next_event_ns: next_us * US,
        ..Tick::default()
    }
}

/// Linux 7.1's 106a2662e655, with the tick already stopped at selection.
/// Intercepts 0, 700, 100 and hits[3] 200 (total 1000): the walk stops at
/// S1 (the most intercepts; 2 * 800 > 800). With the tick running, and a
/// timer 50 ms away, S1 stands. With it stopped, no timer within 2 ticks
/// (2 ms) and S1 below a tick, teo takes the deepest state whose residency
/// fits the sleep length: S3. A timer 1.5 ms away leaves S1 (the timer
/// will end a shallow sleep soon anyway). Mostly short idles: with the
/// tick running, teo keeps S1 without the sleep length; stopped, it reads
/// it and deepens.
#[test]
fn teo_deepens_a_shallow_choice_when_the_tick_is_stopped_and_no_timer_is_near() {
    let Some(l) = learner() else { return };
    let t = bins(&[0, 700, 100, 0], &[0, 0, 0, 200], 1000);
    let at = |sleep_us, stopped| Period {
        sleep_length_ns: sleep_us * US,
        tick: Tick {
            stopped,
            ..tick_1ms(4000)
        },
        ..period(1000 * US)
    };
    let choice = |t: &Table, p| entry_on_t(&l, t, p);
    assert_eq!(choice(&t, at(50_000, false)).teo, 1);
    assert_eq!(choice(&t, at(50_000, true)).teo, 3);
    assert_eq!(choice(&t, at(1500, true)).teo, 1);
    // With the tick's length not known, a stopped tick is no rule's input.
    let unknown = Period {
        tick: Tick {
            stopped: true,
            ..Tick::default()
        },
        ..at(50_000, true)
    };
    assert_eq!(choice(&t, unknown).teo, 1);
    let mut short = t.clone();
    short.short_idles = 1000;
    let running = choice(&short, at(50_000, false));
    assert_eq!((running.teo, running.sleep_length_used), (1, false));
    let stopped = choice(&short, at(50_000, true));
    assert_eq!((stopped.teo, stopped.sleep_length_used), (3, true));
}

/// teo_select()'s end, the tick kept: a choice is cut to fit before the
/// next clock event (delta_next). Hits only (total 1000) and a timer
/// 800 us away: the sleep length cuts S3 to S2; 800 us is under a tick, so
/// the tick stays, and with it due in 15 us S2 (20 us) is cut to S1. Due
/// in 25 us, S2 stands. Intercepts 600 in S2's bin (total 1000) and a
/// timer 5 ms away: the walk ends at S2; with tick_intercepts at 2/3 of
/// the total or more (700: 2100 >= 2000, 475ca3470b37) teo expects half a
/// tick and keeps the tick: S1 again. At 650 (1950 < 2000) the 5 ms sleep
/// length stops the tick and S2 stands.
#[test]
fn teo_fits_its_choice_before_a_tick_it_keeps() {
    let Some(l) = learner() else { return };
    let at = |sleep_us, next_us| Period {
        sleep_length_ns: sleep_us * US,
        tick: tick_1ms(next_us),
        ..period(1000 * US)
    };
    let choice = |t: &Table, p| entry_on_t(&l, t, p).teo;
    let hits = bins(&[], &[0, 0, 0, 1000], 1000);
    assert_eq!(choice(&hits, at(800, 15)), 1);
    assert_eq!(choice(&hits, at(800, 25)), 2);
    let mut t = bins(&[0, 0, 600, 0], &[0, 0, 0, 400], 1000);
    t.tick_intercepts = 700;
    assert_eq!(choice(&t, at(5000, 15)), 1);
    t.tick_intercepts = 650;
    assert_eq!(choice(&t, at(5000, 15)), 2);
    // With the tick's length not known, no tick rule cuts.
    let unknown = Period {
        tick: Tick::default(),
        ..at(800, 15)
    };
    assert_eq!(choice(&hits, unknown), 2);
}

/// teo_select() under a PM QoS limit (cpuidle_governor_latency_req()):
/// hits only, so teo keeps S3 (exit 300 us) without one. A 20 us limit
/// allows S2 (exit 10 us) at most: S2, and 20 us of residency is not
/// shallow, so teo reads the 10 ms sleep length. 5 us allows S1: shallow,
/// and a limit under LATENCY_THRESHOLD_NS (7.5 us) forces shallow states
/// whatever the wake-ups, so teo does not read the sleep length. "n/a"
/// (0 us) leaves POLL. With the tick stopped, the deepening of a shallow
/// choice (the walk ends at S1 on these bins) stops at the limit: S2.
#[test]
fn teo_keeps_within_the_pm_qos_limit() {
    let Some(l) = learner() else { return };
    let hits = bins(&[], &[0, 0, 0, 1000], 1000);
    let under = |limit_us: u64, tick| Period {
        sleep_length_ns: 10_000 * US,
        latency_req_ns: limit_us * US,
        tick,
        ..period(1000 * US)
    };
    let choice = |t: &Table, p| entry_on_t(&l, t, p);
    let none = choice(&hits, period(1000 * US));
    assert_eq!(none.teo, 3);
    let e = choice(&hits, under(20, Tick::default()));
    assert_eq!((e.teo, e.sleep_length_used), (2, true));
    let e = choice(&hits, under(5, Tick::default()));
    assert_eq!((e.teo, e.sleep_length_used), (1, false));
    assert_eq!(choice(&hits, under(0, Tick::default())).teo, 0);
    let walked = bins(&[0, 700, 100, 0], &[0, 0, 0, 200], 1000);
    let stopped = Tick {
        stopped: true,
        ..tick_1ms(4000)
    };
    assert_eq!(choice(&walked, under(20_000, stopped)).teo, 3);
    assert_eq!(choice(&walked, under(20, stopped)).teo, 2);
}

/// teo_update() after a poll that gave up (dev->poll_time_limit): the
/// kernel entered POLL, woke after 21 us, a timer 10 ms away. Measured as
/// S64_MAX, the period lands in the timer's bin and counts as a hit in
/// S3's (10 ms - S64_MAX < 0), not as a short idle. Without the limit it
/// is 21 us: an intercept in S2's bin, within a tick.
#[test]
fn teo_counts_a_poll_that_gave_up_as_a_long_sleep() {
    let Some(l) = learner() else { return };
    let poll = |gave_up| Period {
        sleep_length_ns: 10_000 * US,
        kernel_state: 0,
        tick: Tick {
            tick_ns: 1000 * US,
            poll_limit: gave_up,
            ..Tick::default()
        },
        ..period(21 * US)
    };
    let run = bpf_run(&l, &SEED, &table_t(), &Table::default(), &[poll(true)]);
    assert_eq!(run.entries[0].entered, 0);
    assert_eq!(run.table.hits[..4], [0, 0, 0, 1024]);
    assert_eq!(run.table.intercepts[..4], [0; 4]);
    assert_eq!((run.table.short_idles, run.table.tick_intercepts), (0, 0));
    let run = bpf_run(&l, &SEED, &table_t(), &Table::default(), &[poll(false)]);
    assert_eq!(run.table.intercepts[..4], [0, 0, 1024, 0]);
    assert_eq!(run.table.tick_intercepts, 1024);
}

/// teo_update() after a wake-up by the tick (083654ded547, 60836533b4c7).
/// HZ=250 (4 ms). Intercepts 5000 in S1's bin (total 5000), a timer 1 ms
/// away: teo reads it and keeps S1; the kernel entered S1 (exit 2 us) and
/// the tick woke it after 700 us (measured 699 us, S2's bin; the timer's
/// is S2's too). Decayed, the bins sum to 4375, the total is 5399.
/// - total_tick 6000 (5250 + 1024 after decay; 3 * 6274 > 2 * 5399): tick
///   wake-ups dominate, a hit in the deepest bin, S3;
/// - total_tick 0 and no tick intercepts (3 * 0 < 2 * 4375): the tick
///   stood in for an intercept that did not come, a hit in the timer's
///   bin, S2;
/// - tick_intercepts 4000 (3500 after decay; 10500 >= 8750): counted as
///   usual, an intercept in S2's bin (the timer was not due), and one more
///   tick intercept (699 us <= 4 ms).
#[test]
fn teo_counts_wake_ups_by_the_tick_by_their_share() {
    let Some(l) = learner() else { return };
    let woken = Period {
        sleep_length_ns: 1000 * US,
        kernel_state: 1,
        tick: Tick {
            tick_ns: 4000 * US,
            woke: true,
            ..Tick::default()
        },
        ..period(700 * US)
    };
    let t = bins(&[0, 5000], &[], 5000);
    let after = |t: &Table| {
        let run = bpf_run(&l, &SEED, &table_t(), t, &[woken]);
        assert_eq!((run.entries[0].teo, run.entries[0].entered), (1, 1));
        assert_eq!(run.table.total, 5399);
        run.table
    };
    let mut dominant = t.clone();
    dominant.total_tick = 6000;
    let run = after(&dominant);
    assert_eq!(run.hits[..4], [0, 0, 0, 1024]);
    assert_eq!(run.total_tick, 6274);
    let run = after(&t);
    assert_eq!(run.hits[..4], [0, 0, 1024, 0]);
    assert_eq!(run.intercepts[..4], [0, 4375, 0, 0]);
    let mut intercepted = t.clone();
    intercepted.tick_intercepts = 4000;
    let run = after(&intercepted);
    assert_eq!(run.hits[..4], [0; 4]);
    assert_eq!(run.intercepts[..4], [0, 4375, 1024, 0]);
    assert_eq!(run.tick_intercepts, 4524);
    // With the tick's length not known, a wake-up by the tick is as any.
    let unknown = Period {
        tick: Tick {
            woke: true,
            ..Tick::default()
        },
        ..woken
    };
    let run = bpf_run(&l, &SEED, &table_t(), &t, &[unknown]);
    assert_eq!(run.table.hits[..4], [0; 4]);
    assert_eq!(run.table.total_tick, 0);
    assert_eq!(run.table.intercepts[..4], [0, 4375, 1024, 0]);
}

/// teo_decay() since 6.19 (b54df61c7428) sets a metric with no eighth
/// left (below 8) to 0, and teo_update() sets the total to the decayed
/// bins' sum plus one pulse. Bins: hits[3] 15, intercepts 15, 7; total 37.
/// teo walks to POLL (the most intercepts are in bin 0) and, with no short
/// idles, reads the sleep length: none known. A 5 ms period then ends in
/// the deepest bin, an intercept (no timer was due). After: hits[3] 14,
/// intercepts 14, 0, 0, 1024; total 14 + 14 + 1024 = 1052. (Decaying the
/// total on its own, as teo did before, gives 37 - 4 + 1024 = 1057.)
#[test]
fn teo_decays_small_bins_to_zero_and_sums_the_total() {
    let Some(l) = learner() else { return };
    let t = bins(&[15, 7], &[0, 0, 0, 15], 37);
    let run = bpf_run(&l, &SEED, &table_t(), &t, &[period(5000 * US)]);
    assert_eq!(run.entries[0].teo, 0);
    assert!(run.entries[0].sleep_length_used);
    assert_eq!(run.table.intercepts[..4], [14, 0, 0, 1024]);
    assert_eq!(run.table.hits[..4], [0, 0, 0, 14]);
    assert_eq!(run.table.total, 1052);
}

/// Seed 003's update rule by hand, n = 3, learning rate 10, in the
/// per-choice matrix: the fresh row of C6 is [2000, 2000, 6000]. A 30 us
/// period justifies C1: C1 gains 10% of 2000 (2200); the others lose 10% /
/// (n - 1) = 5% of theirs (1900, 5700), all inside the 1000..9000 bounds.
#[test]
fn per_choice_update_moves_the_row_toward_the_justified_state() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[period(30 * US)]);
    assert_eq!(run.table.weight[2][..3], [1900, 2200, 5700]);
    // The other rows are still fresh.
    assert_eq!(run.table.weight[1][..3], [2000, 6000, 2000]);
    assert_eq!(run.table.periods, 1);
}

/// Seed 003's bounds, in the per-choice matrix: a weight stops growing
/// once it would reach (100 - rate)% = 9000, and others stop shrinking at
/// rate% = 1000.
#[test]
fn per_choice_update_stays_inside_its_bounds() {
    let Some(l) = learner() else { return };
    let s = three_states();
    // 30 us periods: teo's row is C1 (row 1) from the second on, always
    // toward C1.
    let run = bpf_run(
        &l,
        &SEED,
        &s,
        &Table::default(),
        &vec![period(30 * US); 200],
    );
    let row = run.table.weight[1];
    // 6000 grows by 10% a step while the result stays below 9000:
    // 6000, 6600, 7260, 7986, 8784; 8784 + 878 = 9662 is refused.
    assert_eq!(row[1], 8784);
    // 2000 shrinks by 5% (integer division) a step while the result stays
    // above 1000: 2000, 1900, 1805, 1715, 1630, 1549, 1472, 1399, 1330,
    // 1264, 1201, 1141, 1084, 1030; 1030 - 51 = 979 is refused.
    assert_eq!(row[0], 1030);
    assert_eq!(row[2], 1030);
}

/// Seed 003: "state_mat[2][1] - 3000 means ... the probability ... is 30%":
/// a row holding 3000 of 10000 for a state is picked for 30% of evenly
/// spread random numbers, exactly. rand = ceil(k 2^32 / 1000) lands at
/// exactly 10 k of the row's 10000.
#[test]
fn a_weight_of_30_percent_is_a_30_percent_chance() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let mut table = reference::fresh(3);
    // teo takes C6 from empty bins: row 2.
    table.weight[2] = [3000, 5000, 2000, 0, 0, 0, 0, 0, 0, 0];
    let mut picks = [0u32; 3];
    for k in 0..1000u64 {
        let rand = ((k << 32).div_ceil(1000)) as u32;
        let p = Period {
            rand,
            ..period(1000 * US)
        };
        let run = bpf_run(&l, &SEED, &s, &table, &[p]);
        assert_eq!(run.entries[0].teo, 2);
        picks[run.entries[0].per_choice as usize] += 1;
    }
    assert_eq!(picks, [300, 500, 200]);
    // Heaviest: always the 5000.
    let heaviest = Knobs {
        pick: Pick::Heaviest,
        ..SEED
    };
    let run = bpf_run(&l, &heaviest, &s, &table, &[period(1000 * US)]);
    assert_eq!(run.entries[0].per_choice, 1);
}

/// Bins in which teo walks from C6 to C1 (three_states()): every recent
/// period an intercept in C1's bin and none short, so with a known sleep
/// length teo reads it. The seed's timer-based choice stays C6 for a
/// sleep length of 600 us or more.
fn walked_to_c1() -> Table {
    let mut t = reference::fresh(3);
    t.intercepts[1] = 8192;
    t.total = 8192;
    t
}

/// Seed 003's pick by hand (RFC v2 teo_select()). Fresh bins: teo takes C6,
/// the timer-based choice, and the seed leaves it. After the intercepts
/// walk to C1 the seed draws from row 1 ([2000, 6000, 2000]) among C1 and
/// shallower, never C6: the sum is 8000, the draw (rand % 100) * 8000 /
/// 100; below 2000 (rand % 100 < 25) it is POLL, else C1.
#[test]
fn seed_draws_only_when_teo_walked_shallower() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let fresh = bpf_run(&l, &SEED, &s, &Table::default(), &[period(1000 * US)]);
    assert_eq!((fresh.entries[0].teo, fresh.entries[0].seed), (2, 2));
    let mut picks = [0u32; 3];
    for rand in 0..200u32 {
        let p = Period {
            rand,
            sleep_length_ns: 2000 * US,
            ..period(1000 * US)
        };
        let run = bpf_run(&l, &SEED, &s, &walked_to_c1(), &[p]);
        assert_eq!(run.entries[0].teo, 1);
        let want = if rand % 100 < 25 { 0 } else { 1 };
        assert_eq!(run.entries[0].seed, want, "rand {rand}");
        picks[run.entries[0].seed as usize] += 1;
    }
    assert_eq!(picks, [50, 150, 0]);
    // A timer 100 us away cuts the timer-based choice to C1 as well: teo
    // did not end shallower than it, and the seed does not draw.
    let p = Period {
        sleep_length_ns: 100 * US,
        ..period(100 * US)
    };
    let run = bpf_run(&l, &SEED, &s, &walked_to_c1(), &[p]);
    assert_eq!((run.entries[0].teo, run.entries[0].seed), (1, 1));
}

/// Seed 003's update target by hand (RFC v2 teo_update() on v5.7 teo), in
/// the row of the state the seed entered. A hit (the period reached its
/// 1000 us sleep length, so it counts as endless and falls in the timer's
/// bin, C6) moves the row toward the state entered, POLL here, though C6
/// would have fitted: row 0 [6000, 2000, 2000] -> [6600, 1900, 1900].
/// The per-choice matrix learns in teo's row, C1, toward C6.
#[test]
fn seed_learns_a_hit_toward_the_state_entered() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let p = Period {
        rand: 0,
        sleep_length_ns: 1000 * US,
        ..period(1000 * US)
    };
    let run = bpf_run(&l, &SEED, &s, &walked_to_c1(), &[p]);
    assert_eq!((run.entries[0].teo, run.entries[0].seed), (1, 0));
    assert_eq!(run.table.seed_weight[0][..3], [6600, 1900, 1900]);
    assert_eq!(run.table.seed_weight[1][..3], [2000, 6000, 2000]);
    assert_eq!(run.table.weight[1][..3], [1900, 5700, 2200]);
    // POLL for a period that justified C6: two states too shallow.
    assert_eq!(
        run.scores.n[reference::SEED][reference::BY_RESIDENCY][table_bucket(-2)],
        1
    );
}

/// Seed 003's miss targets, by hand, with C1 (2 us) and C6 (600 us, exit
/// 133 us) and no timer: the first period enters C6 (fresh bins). Lasting
/// 1 us, less than C6's exit latency, it counts as 500 ns, which no
/// state's residency fits: v5.7 finds no hit state, and the RFC then
/// learns toward the timer's state, C6: row 1 [4000, 6000] -> [3600, 6600].
/// The per-choice matrix learns toward the shallowest state instead:
/// [4400, 5400]. A 30 us period, also shorter than C6's exit latency,
/// counts as 15 us, which C1 fits: a miss toward C1.
#[test]
fn seed_learns_a_miss_toward_the_hit_state_or_the_timers() {
    let Some(l) = learner() else { return };
    let s = c1_and_c6();
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[period(US)]);
    assert_eq!(run.entries[0].seed, 1);
    assert_eq!(run.table.seed_weight[1][..2], [3600, 6600]);
    assert_eq!(run.table.weight[1][..2], [4400, 5400]);
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[period(30 * US)]);
    assert_eq!(run.entries[0].seed, 1);
    assert_eq!(run.table.seed_weight[1][..2], [4400, 5400]);
}

/// v5.7 teo_reflect()'s safety nets, which the RFC's update inherits: a
/// wake-up by the tick with the sleep length past a tick, or a poll that
/// gave up, counts as reaching the sleep length. C1 and C6, fresh bins, a
/// timer 5 ms away, HZ=250: the seed enters C6 and wakes after 30 us
/// (15 us measured: C1 fits it, a miss toward C1, row 1 -> [4400, 5400]).
/// Woken by the tick, the period counts as endless: a hit, toward the
/// state entered, C6: [3600, 6600]. So does a poll that gave up. A timer
/// 3 ms away is within a tick: the tick's wake-up is then no safety net.
#[test]
fn seed_counts_a_safety_net_wake_up_as_reaching_the_sleep_length() {
    let Some(l) = learner() else { return };
    let s = c1_and_c6();
    let woken = |sleep_us, woke, poll_limit| Period {
        sleep_length_ns: sleep_us * US,
        tick: Tick {
            tick_ns: 4000 * US,
            woke,
            poll_limit,
            ..Tick::default()
        },
        ..period(30 * US)
    };
    let row = |p| {
        let run = bpf_run(&l, &SEED, &s, &Table::default(), &[p]);
        assert_eq!(run.entries[0].seed, 1);
        run.table.seed_weight[1][..2].to_vec()
    };
    assert_eq!(row(woken(5000, false, false)), [4400, 5400]);
    assert_eq!(row(woken(5000, true, false)), [3600, 6600]);
    assert_eq!(row(woken(5000, false, true)), [3600, 6600]);
    assert_eq!(row(woken(3000, true, false)), [4400, 5400]);
}

/// Seed 003's bounds in its own matrix: 200 hits in C6 (a 1000 us timer,
/// reached every time) from fresh bins: teo and the seed keep C6, and the
/// row of the state entered, C6's, moves toward it as
/// per_choice_update_stays_inside_its_bounds works out: 6000 stops at 8784,
/// 2000 at 1030.
#[test]
fn seed_update_stays_inside_its_bounds() {
    let Some(l) = learner() else { return };
    let s = three_states();
    let hit = Period {
        sleep_length_ns: 1000 * US,
        ..period(1000 * US)
    };
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &vec![hit; 200]);
    assert!(run.entries.iter().all(|e| (e.teo, e.seed) == (2, 2)));
    assert_eq!(run.table.seed_weight[2][..3], [1030, 1030, 8784]);
    assert_eq!(run.table.seed_weight[1][..3], [2000, 6000, 2000]);
}

/// RFC v2's teo_update() learns nothing when no state fits the sleep
/// length (no idx_timer): a 1 us timer with C1 (2 us) the shallowest
/// state. teo and the seed take C1; the seed's row stays fresh
/// ([6000, 4000]), while the per-choice row learns toward C1, the
/// shallowest: [6600, 3600].
#[test]
fn seed_learns_nothing_when_no_state_fits_the_sleep_length() {
    let Some(l) = learner() else { return };
    let s = c1_and_c6();
    let p = Period {
        sleep_length_ns: US,
        ..period(US)
    };
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[p]);
    assert_eq!((run.entries[0].teo, run.entries[0].seed), (0, 0));
    assert_eq!(run.table.seed_weight[0][..2], [6000, 4000]);
    assert_eq!(run.table.weight[0][..2], [6600, 3600]);
    assert_eq!(run.table.periods, 1);
}

/// The score of hand-made periods: a 700 us period justifies C6 by
/// residency (600 us) but only C1 once C6's 133 us exit latency is added
/// (733 > 700): the same choice is correct by one ideal and one state too
/// deep by the other. The kernel's state counts only with its indices.
#[test]
fn scores_count_against_both_ideals() {
    let s = three_states();
    let e = Entry {
        teo: 2,
        per_choice: 1,
        seed: 0,
        kernel: 0,
        ..Entry::default()
    };
    let mut sc = Scores::default();
    reference::score(&mut sc, &s, &e, 700 * US, true);
    assert_eq!(
        sc.n[reference::TEO][reference::BY_RESIDENCY][table_bucket(0)],
        1
    );
    assert_eq!(sc.n[reference::TEO][reference::BY_EXIT][table_bucket(1)], 1);
    assert_eq!(
        sc.n[reference::PER_CHOICE][reference::BY_RESIDENCY][table_bucket(-1)],
        1
    );
    assert_eq!(
        sc.n[reference::SEED][reference::BY_RESIDENCY][table_bucket(-2)],
        1
    );
    assert_eq!(
        sc.n[reference::KERNEL][reference::BY_RESIDENCY][table_bucket(-2)],
        1
    );
    let mut no_kernel = Scores::default();
    reference::score(&mut no_kernel, &s, &e, 700 * US, false);
    assert!(
        no_kernel.n[reference::KERNEL]
            .iter()
            .flatten()
            .all(|&n| n == 0)
    );
    // The same through BPF: one period, the kernel in state 0.
    let Some(l) = learner() else { return };
    let p = Period {
        kernel_state: 0,
        ..period(700 * US)
    };
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &[p]);
    assert_eq!(
        run.scores.n[reference::KERNEL][reference::BY_EXIT][table_bucket(-1)],
        1
    );
}

/// The kernel's own verdicts against the ideals, on table T, each worked
/// from cpuidle_enter_state() (drivers/cpuidle/cpuidle.c): "above" when the
/// period is shorter than the entered state's target residency and a
/// shallower state is enabled; else "below" when the period, less the
/// entered state's exit latency, lasts the next enabled deeper state's
/// residency.
/// - S3 for 300 us: 300 < 1200, above. Ideal S2 by either: 1 too deep.
/// - S1 for 21 us: 21 - 2 = 19 < S2's 20, no verdict. By residency S2
///   (1 too shallow), by residency + exit S1 (S2 needs 30): right.
/// - S1 for 25 us: 23 >= 20, below. S2 by residency, S1 by exit.
/// - S2 for 50 us: 40 < S3's 1200, no verdict; right by either.
/// - POLL for 1500 us: 1500 >= S1's 2, below. S3 by either (1200, 1500).
/// - a period whose state the tracepoint did not give counts nowhere.
///
/// The residency ideal calls every verdict a miss and misses one period
/// the kernel does not (the exit latency it takes off for "below"); the
/// exit ideal clears half of the "below" verdicts.
#[test]
fn the_kernels_verdicts_land_on_its_periods() {
    let Some(l) = learner() else { return };
    let s = table_t();
    let judged = |kernel_state, us, kernel_miss| Period {
        kernel_state,
        kernel_miss,
        ..period(us * US)
    };
    let periods = [
        judged(3, 300, Miss::Above),
        judged(1, 21, Miss::None),
        judged(1, 25, Miss::Below),
        judged(2, 50, Miss::None),
        judged(0, 1500, Miss::Below),
        judged(-1, 300, Miss::Above),
    ];
    let run = bpf_run(&l, &SEED, &s, &Table::default(), &periods);
    let (res, exit) = (reference::BY_RESIDENCY, reference::BY_EXIT);
    let counts = |b: &[u64; reference::DIFFS]| {
        (-3..=3)
            .filter(|&d| b[table_bucket(d)] > 0)
            .map(|d| (d, b[table_bucket(d)]))
            .collect::<Vec<_>>()
    };
    let sc = &run.scores;
    assert_eq!(
        counts(&sc.n[reference::KERNEL][res]),
        [(-3, 1), (-1, 2), (0, 1), (1, 1)]
    );
    assert_eq!(counts(&sc.miss[0][res]), [(1, 1)]);
    assert_eq!(counts(&sc.miss[0][exit]), [(1, 1)]);
    assert_eq!(counts(&sc.miss[1][res]), [(-3, 1), (-1, 1)]);
    assert_eq!(counts(&sc.miss[1][exit]), [(-3, 1), (0, 1)]);
    let text = score_table::render(sc, 4, &[]);
    assert!(
        text.contains(
            "\"above\" on 1 periods, 100.00% too deep here; \"below\" on 2, 100.00% too shallow here; 2 without a verdict, 50.00% a miss here"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\"above\" on 1 periods, 100.00% too deep here; \"below\" on 2, 50.00% too shallow here; 2 without a verdict, 0.00% a miss here"
        ),
        "{text}"
    );
    // States that are not the kernel's indices: no kernel row, no verdicts.
    let other = l
        .run(
            &policy(&SEED),
            &s,
            &Table::default(),
            &Scores::default(),
            false,
            &periods,
        )
        .unwrap();
    assert_eq!(other.scores.miss, Scores::default().miss);
    assert!(
        other.scores.n[reference::KERNEL]
            .as_flattened()
            .iter()
            .all(|&n| n == 0)
    );
}

/// xorshift64: reproducible random traces without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random states: 1..=10 of them, residencies increasing from 0..5 us,
/// exit latencies below them, about one in six disabled.
fn random_states(r: &mut Rng) -> StatesNs {
    let n = 1 + r.below(10) as usize;
    let mut s = StatesNs::default();
    let mut res = r.below(5 * US);
    for _ in 0..n {
        s.residency_ns.push(res);
        s.exit_latency_ns.push(r.below(res + 1));
        s.disabled.push(r.below(6) == 0);
        // A polling state 0 about half the time, as POLL on x86.
        s.polling.push(s.polling.is_empty() && r.below(2) == 0);
        res += 1 + r.below(400 * US);
    }
    s
}

/// A random tick: its length unknown or one of HZ 1000, 300 and 250's;
/// the next clock event unknown or within 8 ms; each flag one in four.
fn random_tick(r: &mut Rng) -> Tick {
    Tick {
        tick_ns: [0, 1_000_000, 3_333_333, 4_000_000][r.below(4) as usize],
        next_event_ns: if r.below(4) == 0 {
            ENDLESS
        } else {
            r.below(8000 * US)
        },
        stopped: r.below(4) == 0,
        woke: r.below(4) == 0,
        poll_limit: r.below(4) == 0,
    }
}

/// A random period: log-uniform 100 ns .. 100 ms, sometimes a sleep
/// length, sometimes a kernel state (even an out-of-range one).
fn random_period(r: &mut Rng) -> Period {
    let duration_ns = 100u64 << r.below(20) | r.below(100);
    let sleep_length_ns = match r.below(3) {
        0 => ENDLESS,
        1 => duration_ns + r.below(1000 * US),
        _ => r.below(2 * duration_ns + 1),
    };
    Period {
        duration_ns,
        sleep_length_ns,
        kernel_state: r.below(13) as i32 - 1,
        rand: r.next() as u32,
        tick: random_tick(r),
        // None, or 0..200 us: between the random states' exit latencies.
        latency_req_ns: if r.below(2) == 0 {
            ENDLESS
        } else {
            r.below(200 * US)
        },
        kernel_miss: [Miss::None, Miss::Above, Miss::Below][r.below(3) as usize],
    }
}

/// Either pick, a learning rate in 1..=49.
fn random_knobs(r: &mut Rng) -> Knobs {
    Knobs {
        pick: if r.below(2) == 0 {
            Pick::Random
        } else {
            Pick::Heaviest
        },
        learning_rate: 1 + r.below(49) as u32,
    }
}

/// 1..=300 random periods.
fn random_periods(r: &mut Rng) -> Vec<Period> {
    (0..1 + r.below(300)).map(|_| random_period(r)).collect()
}

#[test]
fn random_traces_match_the_reference_bit_for_bit() {
    let Some(l) = learner() else { return };
    let mut r = Rng(0x5eed_0003);
    for trace in 0..150 {
        let s = random_states(&mut r);
        let k = random_knobs(&mut r);
        let periods = random_periods(&mut r);
        let start = if r.below(3) == 0 {
            reference::fresh(s.nr())
        } else {
            Table::default()
        };
        let got = l
            .run(&policy(&k), &s, &start, &Scores::default(), true, &periods)
            .unwrap();
        let want = reference_run(&k, &s, &start, true, &periods);
        for (i, (g, w)) in got.entries.iter().zip(&want.entries).enumerate() {
            assert_eq!(
                g, w,
                "trace {trace} period {i}: {s:?} {k:?} {:?}",
                periods[i]
            );
        }
        assert_eq!(got.table, want.table, "trace {trace}: {s:?} {k:?}");
        assert_eq!(got.scores, want.scores, "trace {trace}");
    }
}

/// idle.compare off: the matrix that does not act neither predicts
/// (CADENCE_IDLE_NOT_RUN), learns (its rows stay the fresh ones) nor is
/// scored, and nothing else changes: teo and the acting matrix choose,
/// learn and score as when both run, for the two matrices share nothing
/// but teo's choice.
#[test]
fn a_matrix_that_does_not_act_runs_only_with_compare() {
    let Some(l) = learner() else { return };
    let not_run = bpf_intf::cadence_idle_consts_CADENCE_IDLE_NOT_RUN;
    let mut r = Rng(0xc0_3a4e);
    for trace in 0..40 {
        let seed_acts = trace % 2 == 0;
        let s = random_states(&mut r);
        let k = random_knobs(&mut r);
        let periods = random_periods(&mut r);
        let mut pol = policy(&k);
        pol.idle_compare = 0;
        pol.idle_predictor = if seed_acts {
            bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_SEED
        } else {
            bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_PER_CHOICE
        };
        let got = l
            .run(
                &pol,
                &s,
                &Table::default(),
                &Scores::default(),
                true,
                &periods,
            )
            .unwrap();
        let mut want = reference_run(&k, &s, &Table::default(), true, &periods);
        let fresh = reference::fresh(s.nr());
        let idle = if seed_acts {
            want.table.weight = fresh.weight;
            reference::PER_CHOICE
        } else {
            want.table.seed_weight = fresh.seed_weight;
            reference::SEED
        };
        for e in &mut want.entries {
            if seed_acts {
                e.per_choice = not_run;
            } else {
                e.seed = not_run;
            }
        }
        want.scores.n[idle] = Default::default();
        for (i, (g, w)) in got.entries.iter().zip(&want.entries).enumerate() {
            assert_eq!(g, w, "trace {trace} period {i}: {s:?} {k:?}");
        }
        assert_eq!(got.table, want.table, "trace {trace}: {s:?} {k:?}");
        assert_eq!(got.scores, want.scores, "trace {trace}");
    }
}
