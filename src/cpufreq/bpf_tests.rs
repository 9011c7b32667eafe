//! bpf/cpufreq_target.bpf.h, run in the host kernel through BPF_PROG_TEST_RUN
//! of bpf/cpufreq_replay.bpf.c: the seed's numbers and the deadband's cases, and
//! random sequences against the Rust reference, verdict for verdict.
//! Needs CAP_BPF and CAP_PERFMON (skipped without, src/bpf_test_progs.rs); it does not need sched_ext.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::reference::{self, CPUFREQ_MAX, CpufreqState, Verdict};
use super::replay_bpf::{BpfCpufreq, Step};
use crate::bpf_intf;
use crate::bpf_test_progs;
use crate::freq::FreqTable;
use crate::policy::Policy;

fn step(delta_ns: u64, util: u32) -> Step {
    Step {
        delta_ns,
        util,
        ..Step::default()
    }
}

/// @delta_ns pass, then the CPU goes idle.
fn idle(delta_ns: u64) -> Step {
    Step {
        idle: true,
        ..step(delta_ns, 0)
    }
}

/// HZ=250, Debian's.
const TICK_NS: u64 = 4_000_000;
const MS: u64 = 1_000_000;

#[derive(Debug, PartialEq)]
struct Verdicts {
    verdicts: Vec<Verdict>,
    targets: Vec<u32>,
    /// The target each step's util asks for before the deadband.
    wants: Vec<u32>,
    state: CpufreqState,
}

fn verdict(v: u32) -> Verdict {
    match v {
        0 => Verdict::Issued,
        1 => Verdict::Same,
        2 => Verdict::Deadband,
        3 => Verdict::Hysteresis,
        4 => Verdict::Hold,
        5 => Verdict::Rate,
        _ => panic!("unknown verdict {v}"),
    }
}

/// The replay program, as the tests drive it: always from a fresh CPU
/// state (as at attach).
struct Bpf(BpfCpufreq);

impl Bpf {
    /// None: skipped, this process may not load BPF (bpf_test_progs).
    fn load() -> Option<Bpf> {
        bpf_test_progs::skip_without_bpf()?;
        Some(Bpf(
            BpfCpufreq::load().expect("loading the cpufreq replay program")
        ))
    }

    /// Runs @steps from a fresh CPU state (as at attach) at @start_ns.
    fn run(
        &self,
        pol: &bpf_intf::cadence_policy,
        start_ns: u64,
        tick_ns: u64,
        steps: &[Step],
    ) -> Verdicts {
        // SAFETY: plain-data struct from bindgen; all zeroes is valid.
        let mut state: bpf_intf::cadence_cpu_cpufreq = unsafe { std::mem::zeroed() };
        let out = self
            .0
            .run(pol, tick_ns, &mut state, start_ns, steps)
            .expect("cpufreq_replay");
        Verdicts {
            verdicts: out.iter().map(|o| verdict(o.verdict)).collect(),
            targets: out.iter().map(|o| o.target).collect(),
            wants: out.iter().map(|o| o.want).collect(),
            state: CpufreqState::from_bpf(&state),
        }
    }
}

/// The same run through the Rust reference.
fn reference_run(
    pol: &bpf_intf::cadence_policy,
    start_ns: u64,
    tick_ns: u64,
    steps: &[Step],
) -> Verdicts {
    let mut c = CpufreqState::default();
    let mut now = start_ns;
    let (mut verdicts, mut targets, mut wants) = (Vec::new(), Vec::new(), Vec::new());
    for s in steps {
        now += s.delta_ns;
        verdicts.push(if s.idle {
            reference::idle(&mut c, pol)
        } else {
            reference::evaluate(&mut c, pol, s.util, s.iowait, now, tick_ns)
        });
        targets.push(c.target);
        wants.push(reference::target(pol, c.util));
    }
    Verdicts {
        verdicts,
        targets,
        wants,
        state: c,
    }
}

/// A policy as the loader makes it: @toml over balanced, on a machine with
/// cpufreq limits @fmin..@fmax MHz (fmax also the MPERF rate).
fn policy(toml: &str, fmin: u32, fmax: u32) -> bpf_intf::cadence_policy {
    let freq = FreqTable {
        base_mhz: Some(fmax),
        min_mhz: Some(fmin),
        ..FreqTable::default()
    };
    let text = format!("[freq]\nmax = {fmax}\n{toml}");
    Policy::parse(&text).unwrap().to_bpf(&freq).unwrap()
}

/// The deadband off: every change of target is asked for.
const NO_DEADBAND: &str = "[cpufreq]\nfloor = false\nband = 0\ninterval_us = 0\ndown_hold_us = 0\n";

#[test]
fn seed_004_floor_is_fmin_over_fmax() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    // pcc-cpufreq on the seed's DL580: 1200 MHz min, 2800 MHz max.
    let pol = policy(
        "[cpufreq]\nfloor = true\nband = 0\ninterval_us = 0\ndown_hold_us = 0\n",
        1200,
        2800,
    );
    // 1200 / 2800 = 42.857%: util 438 (42.77%) is below, 439 (42.87%) is not.
    assert_eq!(pol.cpufreq_floor_util, 439);
    let out = bpf.run(
        &pol,
        MS,
        TICK_NS,
        &[step(MS, 438), step(MS, 439), step(MS, 100), step(MS, 300)],
    );
    assert_eq!(out.targets, vec![0, 439, 0, 0]);
    // Wandering under the floor asks nothing: counted as the deadband's.
    assert_eq!(
        out.verdicts,
        vec![
            Verdict::Issued,
            Verdict::Issued,
            Verdict::Issued,
            Verdict::Deadband
        ]
    );
    assert_eq!(out.state.supp_deadband, 1);
    // Without the floor the same loads give four different requests.
    let off = bpf.run(
        &policy(NO_DEADBAND, 1200, 2800),
        MS,
        TICK_NS,
        &[step(MS, 438), step(MS, 439), step(MS, 100), step(MS, 300)],
    );
    assert_eq!(off.targets, vec![438, 439, 100, 300]);
    assert_eq!(off.state.issued, 4);
}

#[test]
fn hysteresis_hold_and_rate_limit() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    let pol = policy(
        "[cpufreq]\nfloor = false\nband = 32\ninterval_us = 2000\ndown_hold_us = 8000\n",
        400,
        2000,
    );
    let steps = [
        // From the kernel's 1024, 500 is lower: held for 8 ms first.
        step(MS, 500),
        step(4 * MS, 500),
        step(4 * MS, 500),
        // Within the band of 500: nothing.
        step(MS, 520),
        step(MS, 469),
        // A raise past the band goes at once... unless within the interval.
        step(MS, 600),
        step(MS, 600),
        // 1024 always passes the band (from 1000 it is 24 away).
        step(3 * MS, 1000),
        step(3 * MS, 1024),
        // A drop back under the band: held, and an up in between resets it.
        step(3 * MS, 700),
        step(3 * MS, 1024),
        step(3 * MS, 700),
        step(9 * MS, 700),
        // Exactly the band away passes; one less does not.
        step(3 * MS, 732),
        step(3 * MS, 763),
    ];
    let out = bpf.run(&pol, MS, TICK_NS, &steps);
    use Verdict::*;
    assert_eq!(
        out.verdicts,
        vec![
            Hold, Hold, Issued, Hysteresis, Hysteresis, Issued, Same, Issued, Issued, Hold, Same,
            Hold, Issued, Issued, Hysteresis
        ]
    );
    assert_eq!(
        out.targets,
        vec![
            1024, 1024, 500, 500, 500, 600, 600, 1000, 1024, 1024, 1024, 1024, 700, 732, 732
        ]
    );
    assert_eq!(
        (
            out.state.supp_hold,
            out.state.supp_hysteresis,
            out.state.issued
        ),
        (4, 3, 6)
    );
    // The rate limit: a raise 1 ms after a request waits for the 2 ms.
    let pol = policy(
        "[cpufreq]\nfloor = false\nband = 0\ninterval_us = 2000\ndown_hold_us = 0\n",
        400,
        2000,
    );
    let rate = bpf.run(
        &pol,
        MS,
        TICK_NS,
        &[step(MS, 300), step(MS, 900), step(MS, 900)],
    );
    assert_eq!(rate.verdicts, vec![Issued, Rate, Issued]);
    assert_eq!(rate.state.supp_rate, 1);
    assert_eq!(rate.state.hist[300 >> 6] + rate.state.hist[900 >> 6], 2);
}

#[test]
fn headroom_is_not_applied_twice_and_targets_never_exceed_1024() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    // Default headroom 125 = schedutil's own margin: util passes through.
    let pol = policy(NO_DEADBAND, 400, 2000);
    assert_eq!(pol.cpufreq_headroom_pct, 125);
    let out = bpf.run(&pol, MS, TICK_NS, &[step(MS, 512), step(MS, 2000)]);
    assert_eq!(out.targets, vec![512, 1024]);
    // The largest headroom and scale the policy allows still stop at 1024.
    let mut pol = policy(
        "[cpufreq]\nheadroom_pct = 400\nfloor = false\nband = 0\ninterval_us = 0\ndown_hold_us = 0\n",
        400,
        2000,
    );
    pol.cpufreq_scale = 4096;
    let steps: Vec<Step> = (0..64).map(|i| step(MS, i * 17)).collect();
    let out = bpf.run(&pol, MS, TICK_NS, &steps);
    assert!(out.targets.iter().all(|&t| t <= CPUFREQ_MAX), "{out:?}");
    assert_eq!(out.targets[63], 1024);
    // Fixed modes.
    for (mode, want) in [("performance", 1024), ("powersave", 0)] {
        let pol = policy(&format!("{NO_DEADBAND}mode = \"{mode}\"\n"), 400, 2000);
        let out = bpf.run(&pol, MS, TICK_NS, &[step(MS, 300), step(MS, 700)]);
        assert_eq!(out.targets, vec![want, want], "{mode}");
    }
}

#[test]
fn legacy_iowait_boost_doubles_then_halves() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    let io = |iowait| Step {
        delta_ns: MS,
        util: 0,
        iowait,
        idle: false,
    };
    let mut steps: Vec<Step> = (0..5).map(|_| io(true)).collect();
    steps.extend((0..4).map(|_| io(false)));
    let on = policy(
        &format!("{NO_DEADBAND}legacy_iowait_boost = true\n"),
        400,
        2000,
    );
    let out = bpf.run(&on, MS, TICK_NS, &steps);
    assert_eq!(
        out.targets,
        vec![128, 256, 512, 1024, 1024, 512, 256, 128, 0]
    );
    assert_eq!(out.state.iowait_boosts, 8);
    // More than a tick between updates: the boost starts over at 128.
    let gap = [
        io(true),
        io(true),
        Step {
            delta_ns: TICK_NS + 1,
            util: 0,
            iowait: true,
            idle: false,
        },
    ];
    assert_eq!(bpf.run(&on, MS, TICK_NS, &gap).targets, vec![128, 256, 128]);
    // Off (the default): iowait wake-ups change nothing.
    let off = bpf.run(&policy(NO_DEADBAND, 400, 2000), MS, TICK_NS, &steps);
    assert_eq!(off.targets, vec![0; 9]);
    assert_eq!(off.state.iowait_boosts, 0);
}

/// A CPU that goes idle asks for its floor at once (issue 11, item 3):
/// past a long down hold and the rate limit, with the pending hold
/// dropped, once per idle period, and without delaying the next raise.
/// The floor is what util 0 asks for: 0 in util mode (whatever the
/// deadband's floor_util) and in powersave, 1024 in performance.
#[test]
fn idle_asks_for_the_floor_at_once() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    let toml = "[cpufreq]\nfloor = true\nband = 32\ninterval_us = 2000\ndown_hold_us = 1000000\n";
    let pol = policy(toml, 400, 2000);
    let out = bpf.run(
        &pol,
        MS,
        TICK_NS,
        &[
            // From the kernel's 1024: idle asks for the floor at once.
            idle(MS),
            step(MS, 800),
            // A lower target waits for the 1 s hold ...
            step(MS, 600),
            // ... idle does not: 0 at once, 10 us after the last request.
            idle(10_000),
            idle(MS),
            // Back to work 100 us later, 2.11 ms after the last busy request:
            // the idle request did not restart the 2 ms rate limit.
            step(100_000, 800),
        ],
    );
    let hi = out.targets[1];
    assert!(hi > 600, "util 800 asked for {hi}");
    assert_eq!(out.targets, vec![0, hi, hi, 0, 0, hi]);
    assert_eq!(
        out.verdicts,
        vec![
            Verdict::Issued,
            Verdict::Issued,
            Verdict::Hold,
            Verdict::Issued,
            Verdict::Same,
            Verdict::Issued
        ]
    );
    assert_eq!((out.state.issued, out.state.idle_floor), (4, 2));
    assert_eq!(out.state.down_since, 0);
    assert_eq!(out.state.hist[0], 2, "the floor's requests are in bucket 0");
    // performance: the floor is 1024, in force from the start: no request.
    // powersave: 0 is a lower target than the kernel's 1024, held by the
    // 1 s hold while busy; going idle asks for it at once, once.
    for (mode, targets, idles) in [
        ("performance", [CPUFREQ_MAX; 3], 0),
        ("powersave", [CPUFREQ_MAX, 0, 0], 1),
    ] {
        let pol = policy(&format!("{toml}mode = \"{mode}\"\n"), 400, 2000);
        let out = bpf.run(&pol, MS, TICK_NS, &[step(MS, 800), idle(MS), idle(MS)]);
        assert_eq!(out.targets, targets.to_vec(), "{mode}");
        assert_eq!(out.state.idle_floor, idles, "{mode}");
    }
    // A CPU that idles before its first evaluation leaves the kernel's 1024.
    let out = bpf.run(&pol, MS, TICK_NS, &[idle(MS)]);
    assert_eq!((out.targets[0], out.state.idle_floor), (0, 1));
}

fn any_policy() -> impl Strategy<Value = bpf_intf::cadence_policy> {
    (
        0u32..3,
        100u32..=400,
        1u32..=4096,
        prop_oneof![Just(0u32), 0u32..=1100],
        prop_oneof![Just(0u32), 0u32..=256],
        prop_oneof![Just(0u64), 0u64..10 * MS],
        prop_oneof![Just(0u64), 0u64..20 * MS],
        any::<bool>(),
    )
        .prop_map(
            |(mode, headroom, scale, floor, band, interval, hold, boost)| {
                let mut pol = policy("", 400, 2000);
                pol.cpufreq_mode = mode;
                pol.cpufreq_headroom_pct = headroom;
                pol.cpufreq_scale = scale;
                pol.cpufreq_floor_util = floor;
                pol.cpufreq_band = band;
                pol.cpufreq_interval_ns = interval;
                pol.cpufreq_down_hold_ns = hold;
                pol.cpufreq_iowait_boost = boost as u32;
                pol
            },
        )
}

fn any_step() -> impl Strategy<Value = Step> {
    (
        prop_oneof![0u64..MS, MS..30 * MS],
        prop_oneof![0u32..=1024, 1025u32..=5000],
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(delta_ns, util, iowait, idle)| Step {
            delta_ns,
            util,
            iowait,
            idle,
        })
}

#[test]
fn bpf_cpufreq_matches_reference() {
    let Some(bpf) = Bpf::load() else {
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases: 20_000,
        failure_persistence: None,
        ..Config::default()
    });
    let seq = (
        any_policy(),
        1u64..(1 << 50),
        prop_oneof![Just(TICK_NS), MS..=10 * MS],
        prop::collection::vec(
            any_step(),
            // Past one run of the program: the state carries over.
            1..=3 * bpf_intf::cadence_cpufreq_consts_CADENCE_CPUFREQ_REPLAY_STEPS as usize,
        ),
    );
    runner
        .run(&seq, |(pol, start_ns, tick_ns, steps)| {
            let got = bpf.run(&pol, start_ns, tick_ns, &steps);
            prop_assert!(got.targets.iter().all(|&t| t <= CPUFREQ_MAX));
            prop_assert_eq!(got, reference_run(&pol, start_ns, tick_ns, &steps));
            Ok(())
        })
        .unwrap();
}
