//! The reference checked against what the kernel's PELT is defined to do.

use super::model::{self, Op, State, Step};
use super::reference::{self, LOAD_AVG_MAX, Pelt, UTIL_AVG_UNCHANGED};

/// One PELT period: 1024 units of 1024 ns.
const PERIOD_NS: u64 = 1 << 20;

#[test]
fn constants_are_the_kernels() {
    let table = reference::yn_inv_table();
    // y^0 = 1 and y^16 = 1/sqrt(2), both scaled by 2^32 - 1.
    assert_eq!(table[0], 0xffff_ffff);
    assert_eq!(table[16], 0xb504_f333);
    // calc_converged_max() of Documentation/scheduler/sched-pelt.c.
    let y_inv = table[1] as u64;
    let (mut max, mut last) = (1024u64, 0u64);
    while max != last {
        last = max;
        max = ((max * y_inv) >> 32) + 1024;
    }
    assert_eq!(max, LOAD_AVG_MAX as u64);
}

#[test]
fn decay_load_halves_every_32_periods_and_stops_at_2016() {
    let pelt = Pelt::new();
    // y^0 is stored as (2^32 - 1) / 2^32, so exact halves lose one unit.
    assert_eq!(pelt.decay_load(1 << 20, 32), (1 << 19) - 1);
    assert_eq!(pelt.decay_load(1 << 20, 64), (1 << 18) - 1);
    // The cut-off keeps the shift below 64 (undefined in C) and is 0 after.
    assert_eq!(pelt.decay_load(u64::MAX, 2015), 1);
    assert_eq!(pelt.decay_load(u64::MAX, 2017), 0);
}

fn steady(op: Op, delta_ns: u64, freq_scale: u32) -> Step {
    Step {
        delta_ns,
        freq_scale,
        cpu_cap: 1024,
        op,
    }
}

/// Mean util over the last `cycles` run/sleep cycles of a periodic task.
fn mean_util(run_ns: u64, sleep_ns: u64, freq_scale: u32, cycles: usize) -> f64 {
    let steps = model::periodic(run_ns, sleep_ns, freq_scale, 200);
    let out = model::run(&Pelt::new(), 0, State::Running, &steps);
    let tail = &out.task_util[out.task_util.len() - 2 * cycles..];
    tail.iter().map(|&u| u as f64).sum::<f64>() / tail.len() as f64
}

/// The seed's example: a task that needs 1/3 of a CPU at 1000 MHz (2 ms of
/// every 6 ms) takes 4 ms of every 6 at 500 MHz. With invariance (ratio
/// 512 = 500/1000) its util is the same as at 1000 MHz within 2%; without
/// (ratio left at 1024) it looks twice as big, about 2/3.
#[test]
fn seed_example_one_third_at_half_frequency() {
    let at_1000 = mean_util(2_000_000, 4_000_000, 1024, 20);
    let at_500 = mean_util(4_000_000, 2_000_000, 512, 20);
    let at_500_not_invariant = mean_util(4_000_000, 2_000_000, 1024, 20);
    let third = 1024.0 / 3.0;
    assert!(
        (at_1000 - third).abs() / third < 0.02,
        "1000 MHz: {at_1000}"
    );
    assert!(
        (at_500 - at_1000).abs() / at_1000 < 0.02,
        "500 MHz: {at_500} vs {at_1000}"
    );
    let two_thirds = 2048.0 / 3.0;
    assert!(
        (at_500_not_invariant - two_thirds).abs() / two_thirds < 0.02,
        "without invariance: {at_500_not_invariant}"
    );
}

/// util_avg of a task that runs (or sleeps) from `start` for `ms` ms.
fn util_after(start: State, op: Op, ms: u64) -> u32 {
    let mut steps = vec![steady(op, 1, 1024)];
    steps.extend((0..ms).map(|_| steady(Op::Stay, 1_000_000, 1024)));
    *model::run(&Pelt::new(), 0, start, &steps)
        .task_util
        .last()
        .unwrap()
}

/// Half-life: 32 periods (33.55 ms). From nothing, a task that runs all the
/// time reaches half of 1024 after ~32 ms; once settled, sleeping halves it
/// in the same time.
#[test]
fn settling_follows_the_32_period_half_life() {
    let half_life_ms = (32 * PERIOD_NS) as f64 / 1e6;
    let rise = (1..200)
        .find(|&ms| util_after(State::Running, Op::Stay, ms) >= 512)
        .unwrap();
    assert!(
        (rise as f64 - half_life_ms).abs() <= 1.5,
        "rise to 512 took {rise} ms"
    );

    let mut steps: Vec<Step> = (0..400)
        .map(|_| steady(Op::Stay, 1_000_000, 1024))
        .collect();
    steps.push(steady(Op::Sleep, 1, 1024));
    let settled = model::run(&Pelt::new(), 0, State::Running, &steps)
        .task
        .util_avg;
    assert!(
        settled >= 1000,
        "a task that always runs settles near 1024, got {settled}"
    );
    let fall = (1..200)
        .find(|&ms| {
            let mut s = steps.clone();
            s.extend((0..ms).map(|_| steady(Op::Stay, 1_000_000, 1024)));
            *model::run(&Pelt::new(), 0, State::Running, &s)
                .task_util
                .last()
                .unwrap() as u64
                <= settled / 2
        })
        .unwrap();
    assert!(
        (fall as f64 - half_life_ms).abs() <= 1.5,
        "fall to half took {fall} ms"
    );
}

/// Today's model, not the seed's: at half frequency a task that always runs
/// still reaches ~1024 (the seed's form converges to 512), and the CPU's
/// PELT clock records the idle time it never had once it goes idle.
#[test]
fn saturated_cpu_reaches_full_util_at_any_frequency() {
    let mut steps: Vec<Step> = (0..800).map(|_| steady(Op::Stay, 1_000_000, 512)).collect();
    steps.push(steady(Op::Sleep, 1, 512));
    let out = model::run(&Pelt::new(), 0, State::Running, &steps);
    assert!(out.task.util_avg >= 1000, "util {}", out.task.util_avg);
    assert!(out.cpu.util_avg >= 1000, "cpu util {}", out.cpu.util_avg);
    // 800 ms at half speed: the clock fell ~400 ms behind, all of it lost.
    let lost_ms = out.clock.lost_idle_time / 1_000_000;
    assert!(
        (395..=401).contains(&lost_ms),
        "lost idle time {lost_ms} ms"
    );
}

/// util_est jumps up with util_avg at once, and comes down a quarter of the
/// gap per activation.
#[test]
fn util_est_rises_at_once_and_falls_by_quarters() {
    let pelt = Pelt::new();
    let mut steps: Vec<Step> = (0..200)
        .map(|_| steady(Op::Stay, 1_000_000, 1024))
        .collect();
    steps.push(steady(Op::Sleep, 1, 1024));
    let big = model::run(&pelt, 0, State::Running, &steps).task;
    assert_eq!(big.util_est & !UTIL_AVG_UNCHANGED, big.util_avg as u32);

    // Then short activations: 100 us of work every 20 ms.
    let mut est = big.util_est & !UTIL_AVG_UNCHANGED;
    steps.push(steady(Op::Run, 20_000_000, 1024));
    for n in 1..=6 {
        steps.push(steady(Op::Sleep, 100_000, 1024));
        let task = model::run(&pelt, 0, State::Running, &steps).task;
        let (now, util) = (task.util_est & !UTIL_AVG_UNCHANGED, task.util_avg as u32);
        assert!(util + 100 < est, "activation {n}: util {util} did not drop");
        assert_eq!(now, ((est << 2) - (est - util)) >> 2, "activation {n}");
        est = now;
        steps.push(steady(Op::Run, 20_000_000, 1024));
    }
}
