//! bpf/util_glue.bpf.h, the PELT bookkeeping of the scheduler's callbacks,
//! run in the host kernel through BPF_PROG_TEST_RUN of `glue_run`
//! (bpf/pelt_test.bpf.c) on two CPUs, with remote callbacks and clocks that
//! disagree across CPUs. Expected values come from the definitions (what
//! the kernel does on each callback, kernel/sched/ext.c and fair.c), never
//! from the BPF code: exact sums where the time stays in one PELT period,
//! and "a callback that carries no information changes nothing" checks.
//! Needs CAP_BPF and CAP_PERFMON (skipped without), not sched_ext.

use crate::bpf_intf;
use crate::bpf_test_progs::{self, pelt as skel};
use bpf_intf::cadence_cpu_util as CpuUtil;
use bpf_intf::cadence_glue_event as Event;
use bpf_intf::cadence_glue_test as GlueTest;
use bpf_intf::cadence_task_util as TaskUtil;

const RUNNABLE: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_RUNNABLE;
const RUNNING: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_RUNNING;
const STOPPING: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_STOPPING;
const TICK: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_TICK;
const IDLE: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_IDLE;
const QUIESCENT: u32 = bpf_intf::cadence_glue_op_CADENCE_GLUE_QUIESCENT;
const UNCHANGED: u32 = 0x8000_0000;
/// NICE_0_LOAD's weight as the scheduler passes it (task_weight()).
const WEIGHT: u64 = 1024;
/// A PELT period boundary (a multiple of 1024 * 1024 ns), far from 0.
const L: u64 = 1 << 40;

fn ev(now: u64, op: u32, here: i32, cpu: i32, arg: u32) -> Event {
    Event {
        now,
        op,
        here,
        cpu,
        arg,
    }
}

/// A CPU at full capacity whose clocks (task and PELT) read @now; @busy:
/// a sched_ext task runs there; @freq: its frequency ratio.
fn cpu(now: u64, busy: bool, freq: u32) -> CpuUtil {
    // SAFETY: plain integers; all zeroes is valid.
    let mut c: CpuUtil = unsafe { std::mem::zeroed() };
    c.clock.clock_pelt = now;
    c.clock.clock_task = now;
    c.avg.last_update_time = now;
    c.cpu_cap = 1024;
    c.freq_scale = freq;
    c.busy = busy as u32;
    c
}

/// A task with no signal yet, on no CPU's clock (util_init_task()).
fn new_task() -> TaskUtil {
    // SAFETY: plain integers; all zeroes is valid.
    let mut t: TaskUtil = unsafe { std::mem::zeroed() };
    t.cpu = -1;
    t
}

struct Glue {
    skel: skel::PeltTestSkel<'static>,
}

impl Glue {
    /// None: skipped, this process may not load BPF (bpf_test_progs).
    fn load() -> Option<Glue> {
        let skel = bpf_test_progs::load(skel::PeltTestSkelBuilder::default())?;
        Some(Glue { skel })
    }

    fn run(&self, cpus: [CpuUtil; 2], task: TaskUtil, events: &[Event]) -> GlueTest {
        // SAFETY: plain integers; all zeroes is valid.
        let mut g: GlueTest = unsafe { std::mem::zeroed() };
        g.cpus = cpus;
        g.task = task;
        g.weight = WEIGHT;
        g.nr_events = events.len() as u32;
        g.events[..events.len()].copy_from_slice(events);
        bpf_intf::test_run_in_place(&self.skel.progs.glue_run, &mut g);
        assert_eq!(g.error, 0, "glue_run refused its input");
        g
    }
}

fn bytes<T>(v: &T) -> &[u8] {
    // SAFETY: bindgen structs of integers; reading their bytes is sound.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// A task attribute change while the task runs on CPU 0, made from CPU 1
/// (sched_setaffinity(), setpriority(), a cgroup move): the kernel calls
/// stopping(p, false), quiescent(SAVE), runnable(RESTORE), running(p) on
/// CPU 1 with CPU 0's rq locked. They carry no information: CPU 1's state
/// must not change, the task's signal must stay on CPU 0's clock and end
/// up exactly as if the change had not happened.
#[test]
fn remote_callbacks_leave_both_cpus_and_the_task_alone() {
    let Some(glue) = Glue::load() else { return };
    // CPU 1's clock reads 3 s ahead of CPU 0's, and it is idle.
    let cpus = [cpu(L, false, 1024), cpu(L + 3_000_000_000, false, 1024)];
    let local = [
        ev(L, RUNNING, 0, 0, 0),
        ev(L + 4_000_000, TICK, 0, 0, 0),
        ev(L + 8_000_000, TICK, 0, 0, 0),
    ];
    let remote_at = L + 3_000_000_000 + 5_000_000;
    let with_change = [
        local[0],
        local[1],
        ev(remote_at, STOPPING, 1, 0, 0),
        ev(remote_at, QUIESCENT, 1, 0, 0),
        ev(remote_at + 500, RUNNABLE, 1, 0, 0),
        ev(remote_at + 1000, RUNNING, 1, 0, 0),
        local[2],
    ];
    let want = glue.run(cpus, new_task(), &local);
    let got = glue.run(cpus, new_task(), &with_change);
    assert_eq!(got.task.cpu, 0, "the task's signal left CPU 0's clock");
    assert_eq!(
        bytes(&got.cpus[1]),
        bytes(&cpus[1]),
        "a remote callback wrote the executing CPU's util state"
    );
    assert_eq!(
        bytes(&got.cpus[0]),
        bytes(&want.cpus[0]),
        "CPU 0's state differs"
    );
    assert_eq!(
        bytes(&got.task),
        bytes(&want.task),
        "the task's signal differs"
    );
    // 8 ms of running from a period boundary on a full-speed clock.
    assert_eq!(got.task.avg.last_update_time, L + (8_000_000 >> 10 << 10));
}

/// A task migrates to a CPU whose clock reads behind the one it left
/// (scx_bpf_now() is monotonic per CPU only): the time in between is 0,
/// not 2^64 - 500 us, so the signal carries over as it was.
#[test]
fn migration_to_a_cpu_whose_clock_is_behind_keeps_the_signal() {
    let Some(glue) = Glue::load() else { return };
    let t0 = L;
    // CPU 1 reads 1 ms behind CPU 0.
    let cpus = [cpu(t0, false, 1024), cpu(t0 - 1_000_000, false, 1024)];
    let left = t0 + 100_000_000;
    let events = [
        ev(t0, RUNNING, 0, 0, 0),
        ev(left, STOPPING, 0, 0, 1),
        // Runs on CPU 1 at CPU 1's "left - 500 us" (= CPU 0's left + 500 us).
        ev(left - 500_000, RUNNING, 1, 1, 0),
    ];
    let g = glue.run(cpus, new_task(), &events);
    let before = g.util[1];
    // 100 ms of running from 0: util about 1024 * (1 - y^97) = 895.
    assert!(before > 850, "util after 100 ms of running: {before}");
    assert_eq!(g.task.cpu, 1);
    assert_eq!(
        g.util[2], before,
        "util changed over 0 ns between CPUs: {before} -> {}",
        g.util[2]
    );
}

/// A task wakes on a CPU that another task keeps busy at 1/4 of freq_max:
/// the CPU's PELT clock runs at 1/4 speed. 800 units (of 1024 ns) of wall
/// time asleep then 1200 units waiting are 200 PELT units asleep and 300
/// waiting. From a period boundary with empty sums, nothing decays, and
/// the sums are the definition's: load_sum = 300 (units runnable),
/// runnable_sum = 300 << 10, util_sum = 0 (it never ran).
#[test]
fn wait_is_measured_on_the_pelt_clock() {
    let Some(glue) = Glue::load() else { return };
    let wall0 = 5_000_000_000u64;
    let mut c0 = cpu(wall0, true, 256);
    c0.clock.clock_pelt = L;
    c0.avg.last_update_time = L;
    let mut task = new_task();
    task.cpu = 0;
    task.updated_at = wall0;
    task.avg.last_update_time = L;
    let cpus = [c0, cpu(0, false, 1024)];
    let events = [
        ev(wall0 + 800 * 1024, RUNNABLE, 0, 0, 1),
        ev(wall0 + 2000 * 1024, RUNNING, 0, 0, 0),
    ];
    let g = glue.run(cpus, task, &events);
    let a = g.task.avg;
    assert_eq!(
        (
            a.last_update_time,
            a.period_contrib,
            a.load_sum,
            a.runnable_sum,
            a.util_sum
        ),
        (L + 500 * 1024, 500, 300, 300 << 10, 0)
    );
}

/// util_est takes a sample when the task sleeps (util_est_update() with
/// task_sleep, on a DEQUEUE_SLEEP dequeue), not when it is dequeued to
/// change an attribute and put back (DEQUEUE_SAVE): sched_ext calls
/// stopping(p, false) for both and tells them apart in quiescent().
#[test]
fn util_est_is_sampled_on_sleep_only() {
    let Some(glue) = Glue::load() else { return };
    let t0 = L;
    let cpus = [cpu(t0, false, 1024), cpu(t0, false, 1024)];
    let t1 = t0 + 50_000_000;
    let events = [
        ev(t0, RUNNING, 0, 0, 0),
        // setpriority() on itself: a save/restore dequeue, local.
        ev(t1, STOPPING, 0, 0, 0),
        ev(t1, QUIESCENT, 0, 0, 0),
        ev(t1, RUNNABLE, 0, 0, 0),
        ev(t1, RUNNING, 0, 0, 0),
        // Sleeps.
        ev(t1 + 10_000_000, STOPPING, 0, 0, 0),
        ev(t1 + 10_000_000, QUIESCENT, 0, 0, 1),
    ];
    let g = glue.run(cpus, new_task(), &events);
    assert!(g.util[4] > 0);
    assert_eq!(
        g.util_est[4] & !UNCHANGED,
        0,
        "util_est sampled on a save/restore dequeue"
    );
    // The first sample jumps to util_avg (util_est_update(): ewma <= dequeued).
    assert_eq!(g.util_est[6], g.util[6] as u32 | UNCHANGED);
}

/// A CPU goes idle, stays idle 20 ms and wakes, and a task runs: going
/// idle brings the CPU's PELT clock onto the task clock, as the kernel's
/// idle rq does (update_idle_rq_clock_pelt()); the wake changes nothing,
/// since running() counts the idle span (it is the wake-up's path); then
/// the clock reads the task clock again. Only the executing CPU's state
/// changes (here == the CPU).
#[test]
fn idle_cpu_clock_follows_the_task_clock() {
    let Some(glue) = Glue::load() else { return };
    let cpus = [cpu(L, true, 1024), cpu(L, false, 1024)];
    let idle = ev(L + 10_000_000, IDLE, 0, 0, 1);
    let wake = ev(L + 30_000_000, IDLE, 0, 0, 0);
    let gone = glue.run(cpus, new_task(), &[idle]);
    assert_eq!(gone.cpus[0].clock.clock_pelt, L + 10_000_000);
    assert_eq!(gone.cpus[0].clock.clock_task, L + 10_000_000);
    assert_eq!(gone.cpus[0].busy, 0);
    assert_eq!(bytes(&gone.cpus[1]), bytes(&cpus[1]));
    let woke = glue.run(cpus, new_task(), &[idle, wake]);
    assert_eq!(
        bytes(&woke.cpus),
        bytes(&gone.cpus),
        "the wake changed a CPU"
    );
    let ran = glue.run(
        cpus,
        new_task(),
        &[idle, wake, ev(L + 30_000_000, RUNNING, 0, 0, 0)],
    );
    assert_eq!(ran.cpus[0].clock.clock_pelt, L + 30_000_000);
    assert_eq!(ran.cpus[0].clock.clock_task, L + 30_000_000);
    assert_eq!(ran.cpus[0].busy, 1);
    assert_eq!(bytes(&ran.cpus[1]), bytes(&cpus[1]));
}

/// One PELT period: 1024 units of 1024 ns (kernel/sched/pelt.c).
const PERIOD_NS: u64 = 1024 * 1024;

/// PELT's steady peak, from its definition alone: a signal that is 1 for
/// @busy periods and 0 for @idle periods, each period's contribution
/// decayed by y per period since (y^32 = 1/2), over the geometric sum of
/// all periods: 1024 (1 - y^busy) / (1 - y^(busy + idle)).
fn pelt_closed_form_peak(busy: i32, idle: i32) -> f64 {
    let y = 0.5f64.powf(1.0 / 32.0);
    1024.0 * (1.0 - y.powi(busy)) / (1.0 - y.powi(busy + idle))
}

/// The callbacks of one busy stretch of a task on CPU 0 from @t: a timer
/// wakes it, it runs 8 periods with a tick every 2, and sleeps; the CPU
/// goes idle. With @remote, the task's nice is changed from CPU 1 halfway
/// (stopping, quiescent SAVE, runnable RESTORE, running, all on CPU 1).
fn duty_stretch(t: u64, remote: bool) -> Vec<Event> {
    let p = PERIOD_NS;
    let mut evs = vec![
        ev(t, RUNNABLE, 0, 0, 1),
        ev(t, IDLE, 0, 0, 0),
        ev(t, RUNNING, 0, 0, 0),
        ev(t + 2 * p, TICK, 0, 0, 0),
        ev(t + 4 * p, TICK, 0, 0, 0),
    ];
    if remote {
        let r = t + 5 * p;
        evs.extend([
            ev(r, STOPPING, 1, 0, 1),
            ev(r, QUIESCENT, 1, 0, 0),
            ev(r, RUNNABLE, 1, 0, 0),
            ev(r, RUNNING, 1, 0, 0),
        ]);
    }
    evs.extend([
        ev(t + 6 * p, TICK, 0, 0, 0),
        ev(t + 8 * p, STOPPING, 0, 0, 0),
        ev(t + 8 * p, QUIESCENT, 0, 0, 1),
        ev(t + 8 * p, IDLE, 0, 0, 1),
    ]);
    evs
}

/// A CPU whose task runs 8 PELT periods and sleeps 8, over and over (issue
/// 47: a CPU busy half the time read util 1015 in the VM): once steady,
/// the CPU's util as it goes idle, and the task's as it sleeps (what
/// util_est samples), are PELT's closed-form peak for that duty cycle,
/// 1024 / (1 + y^8) = 556, within the integer truncation of the kernel's
/// tables, not saturated. The same with a remote attribute change in every
/// stretch: it carries no information and changes nothing.
#[test]
fn half_busy_cpu_reads_the_closed_form_peak() {
    let Some(glue) = Glue::load() else { return };
    let peak = pelt_closed_form_peak(8, 8);
    assert!((peak - 556.2).abs() < 0.1, "{peak}");
    let mut last = [0u64; 2];
    for remote in [false, true] {
        let mut cpus = [cpu(L, false, 1024), cpu(L, false, 1024)];
        let mut task = new_task();
        // 40 stretches of 16 periods: 20 half-lives, well past steady.
        for k in 0..40 {
            let evs = duty_stretch(L + k * 16 * PERIOD_NS, remote);
            let g = glue.run(cpus, task, &evs);
            (cpus, task) = (g.cpus, g.task);
            if k < 30 {
                continue;
            }
            let cpu_util = cpus[0].avg.util_avg as f64;
            // After the sleep's quiescent(): the sample util_est took.
            let slept = g.util[evs.len() - 2] as f64;
            let est = (g.util_est[evs.len() - 2] & !UNCHANGED) as f64;
            for (what, v) in [
                ("CPU util", cpu_util),
                ("task util", slept),
                ("util_est", est),
            ] {
                assert!(
                    (v - peak).abs() <= 4.0,
                    "remote {remote}, stretch {k}: {what} {v}, closed form {peak:.1}"
                );
            }
            assert_eq!(cpus[0].busy, 0, "the CPU is idle after the stretch");
            last[remote as usize] = cpus[0].avg.util_avg;
        }
    }
    assert_eq!(
        last[0], last[1],
        "the remote changes moved the CPU's signal"
    );
}

/// util_est_update() keeps a task's estimate when it "did not get all the
/// CPU time it wanted" (fair.c: dequeued + UTIL_EST_MARGIN < task_runnable,
/// UTIL_EST_MARGIN = 1024 / 100): a task that ran 150 ms CPU-bound at
/// start (an interpreter starting up) and then runs 8 PELT periods of 16
/// sheds that start from its estimate when each wake-up runs at once, down
/// to the closed-form peak (within the margin, where the EWMA stops); when each wake-up waits 1/3 of a period before
/// it runs (2% of the cycle, 21 units of runnable_avg over util_avg), the
/// samples are skipped once that gap has built up, and the estimate stays
/// near the start's size (945 of 975). So the
/// half-busy CPU's cpufreq util, which takes the running task's util_est,
/// can read near saturation through no error of the CPU's signal: the VM's
/// single host thread gives its wake-ups such waits.
#[test]
fn util_est_keeps_a_tasks_start_while_its_wake_ups_wait() {
    let Some(glue) = Glue::load() else { return };
    let p = PERIOD_NS;
    let peak = pelt_closed_form_peak(8, 8);
    let mut ests = Vec::new();
    for wait in [0, p / 3] {
        let cpus = [cpu(L, false, 1024), cpu(L, false, 1024)];
        let start = L + 150_000_000;
        let g = glue.run(
            cpus,
            new_task(),
            &[
                ev(L, RUNNABLE, 0, 0, 1),
                ev(L, RUNNING, 0, 0, 0),
                ev(start, STOPPING, 0, 0, 0),
                ev(start, QUIESCENT, 0, 0, 1),
                ev(start, IDLE, 0, 0, 1),
            ],
        );
        let (mut cpus, mut task) = (g.cpus, g.task);
        let first = g.util_est[3] & !UNCHANGED;
        assert!(first > 950, "util_est after 150 ms of running: {first}");
        for k in 0..40 {
            let t = start + 8 * p + k * 16 * p;
            let evs = [
                ev(t, RUNNABLE, 0, 0, 1),
                ev(t + wait, RUNNING, 0, 0, 0),
                ev(t + 4 * p, TICK, 0, 0, 0),
                ev(t + wait + 8 * p, STOPPING, 0, 0, 0),
                ev(t + wait + 8 * p, QUIESCENT, 0, 0, 1),
                ev(t + wait + 8 * p, IDLE, 0, 0, 1),
            ];
            let g = glue.run(cpus, task, &evs);
            (cpus, task) = (g.cpus, g.task);
        }
        let est = task.avg.util_est & !UNCHANGED;
        let gap = task.avg.runnable_avg as i64 - task.avg.util_avg as i64;
        ests.push((est, gap, cpus[0].avg.util_avg));
    }
    let [(shed, gap0, cpu0), (kept, gap1, cpu1)] = ests[..] else {
        unreachable!()
    };
    // The EWMA stops once within UTIL_EST_MARGIN of the sample.
    assert!(
        shed as f64 >= peak - 4.0 && (shed as f64) < peak + 10.0 + 4.0 && gap0 <= 1,
        "waits of 0: util_est {shed}, runnable - util {gap0}, want {peak:.0} + <10"
    );
    assert!(
        kept > 900 && gap1 > 10,
        "waits of 1/3 period: util_est {kept}, runnable - util {gap1}"
    );
    // The CPU's own signal reads the duty cycle either way.
    for c in [cpu0, cpu1] {
        assert!(
            (c as f64 - peak).abs() <= 20.0,
            "CPU util {c}, closed form {peak:.0}"
        );
    }
}
