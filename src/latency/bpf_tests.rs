//! bpf/deadline.bpf.h, run in the host kernel through BPF_PROG_TEST_RUN of
//! bpf/deadline_test.bpf.c: hand-traced deadlines, then random inputs
//! against reference.rs (kernel/sched/fair.c), result for result.
//! Needs CAP_BPF and CAP_PERFMON (skipped without, src/bpf_test_progs.rs);
//! it does not need sched_ext.

use super::reference::{
    self, CfsRq, IDLE_WEIGHT, IDLE_WMULT, PreemptAt, Stop, Verdict, WEIGHTS, WMULTS,
};
use crate::bpf_intf;
use crate::bpf_test_progs::{self, deadline as skel};

/// The loaded program, or None after the skip line.
fn program() -> Option<skel::DeadlineTestSkel<'static>> {
    bpf_test_progs::load(skel::DeadlineTestSkelBuilder::default())
}

/// One run: the deadline and eligibility of @vtime, and the verdict for @pre.
struct Out {
    deadline: u64,
    eligible: bool,
    verdict: Verdict,
}

/// Run deadline_run on @ctx in place.
fn run_ctx(s: &skel::DeadlineTestSkel<'static>, ctx: &mut bpf_intf::cadence_deadline_test) {
    bpf_intf::test_run_in_place(&s.progs.deadline_run, ctx);
    assert_ne!(
        ctx.verdict,
        u32::MAX,
        "deadline_run could not read its input"
    );
}

fn run(
    s: &skel::DeadlineTestSkel<'static>,
    vtime: u64,
    slice_ns: u64,
    (weight, wmult): (u32, u32),
    frontier: u64,
    pre: bpf_intf::cadence_preempt_in,
) -> Out {
    let mut ctx = bpf_intf::cadence_deadline_test {
        vtime,
        slice_ns,
        weight,
        wmult,
        frontier,
        preempt: pre,
        // SAFETY: plain-data struct from bindgen; all zeroes is valid.
        ..unsafe { std::mem::zeroed() }
    };
    run_ctx(s, &mut ctx);
    let verdict = match ctx.verdict {
        bpf_intf::cadence_preempt_verdict_CADENCE_PREEMPT_YES => Verdict::Yes,
        bpf_intf::cadence_preempt_verdict_CADENCE_PREEMPT_NO_CURR => Verdict::NoCurr,
        bpf_intf::cadence_preempt_verdict_CADENCE_PREEMPT_INELIGIBLE => Verdict::Ineligible,
        bpf_intf::cadence_preempt_verdict_CADENCE_PREEMPT_LATER => Verdict::Later,
        bpf_intf::cadence_preempt_verdict_CADENCE_PREEMPT_PARITY => Verdict::Parity,
        v => panic!("unknown verdict {v}"),
    };
    Out {
        deadline: ctx.deadline,
        eligible: ctx.eligible != 0,
        verdict,
    }
}

/// own_head_first() of @own and @llc at @now: true if the own queue's head
/// runs first.
fn own_first(
    s: &skel::DeadlineTestSkel<'static>,
    own: bpf_intf::cadence_queue_head_order,
    llc: bpf_intf::cadence_queue_head_order,
    now: u64,
) -> bool {
    // SAFETY: plain-data struct from bindgen; all zeroes is valid.
    let mut ctx: bpf_intf::cadence_deadline_test = unsafe { std::mem::zeroed() };
    ctx.own = own;
    ctx.llc = llc;
    ctx.now = now;
    ctx.own_first = u32::MAX;
    run_ctx(s, &mut ctx);
    assert!(ctx.own_first <= 1, "own_first {}", ctx.own_first);
    ctx.own_first == 1
}

/// A queue head: its deadline in the LLC queue's frame, when it was
/// queued, and its deadline relative to its own queue's frontier.
fn head(
    llc_deadline: u64,
    queued_at: u64,
    rel_deadline: i64,
) -> bpf_intf::cadence_queue_head_order {
    bpf_intf::cadence_queue_head_order {
        llc_deadline,
        queued_at,
        rel_deadline,
        llc_frame: 0,
    }
}

fn no_preempt() -> bpf_intf::cadence_preempt_in {
    // SAFETY: as above.
    unsafe { std::mem::zeroed() }
}

/// The weight and inverse weight of nice @nice.
fn nice(nice: i32) -> (u32, u32) {
    let i = (nice + 20) as usize;
    (WEIGHTS[i], WMULTS[i])
}

/// xorshift64*: reproducible inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A weight of the kernel's tables, SCHED_IDLE's included.
    fn weight(&mut self) -> (u32, u32) {
        let i = self.below(41) as usize;
        if i == 40 {
            (IDLE_WEIGHT, IDLE_WMULT)
        } else {
            (WEIGHTS[i], WMULTS[i])
        }
    }
}

const MS: u64 = 1_000_000;

#[test]
fn deadlines_match_hand_traces() {
    let Some(s) = program() else { return };
    let v = 5_000 * MS;
    let d = |w| run(&s, v, 3 * MS, w, 0, no_preempt()).deadline - v;
    // Nice 0: calc_delta_fair() passes the slice through.
    assert_eq!(d(nice(0)), 3 * MS);
    // Nice 5: fact = 1024 * 12820798 = 13128497152, above 2^32 with
    // fact_hi = 3, fls 2: shift 30, fact 3282124288; 3e6 * fact >> 30 =
    // 9170149, the exact 3e6 * 1024 / 335 = 9170149.25 rounded down.
    assert_eq!(d(nice(5)), 9_170_149);
    // Nice 19: fact_hi = 68, fls 7: shift 25; 204799999 against the exact
    // 3e6 * 1024 / 15 = 204800000 (2^32 / 15 rounds down).
    assert_eq!(d(nice(19)), 204_799_999);
    // Nice -20: fact = 1024 * 48388 fits 32 bits, shift 32: 34609 against
    // the exact 34609.79.
    assert_eq!(d(nice(-20)), 34_609);
    // SCHED_IDLE: 3e6 * 1024 / 3 = 1.024e9 but for the inverse's rounding.
    let idle = d((IDLE_WEIGHT, IDLE_WMULT));
    assert!((1_023_999_000..=1_024_000_000).contains(&idle), "{idle}");
}

#[test]
fn deadlines_match_update_deadline_on_random_inputs() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0x5eed_dead_1e55);
    for _ in 0..20_000 {
        // Any vtime, wrap-around included; slices up to 1 s.
        let vtime = rng.next();
        let slice = rng.below(1_000 * MS + 1);
        let (w, m) = rng.weight();
        let got = run(&s, vtime, slice, (w, m), 0, no_preempt()).deadline;
        let want = reference::update_deadline(vtime, slice, w, m);
        assert_eq!(got, want, "vtime {vtime} slice {slice} weight {w}");
        // And within the inverse weight's rounding (the kernel rounds
        // 2^32 / w to nearest, and shifts away up to 7 more bits) of the
        // exact quotient.
        let exact = u128::from(slice) * 1024 / u128::from(w);
        let delta = u128::from(got.wrapping_sub(vtime));
        assert!(
            delta.abs_diff(exact) <= exact / (1 << 20) + 1,
            "{delta} vs {exact}"
        );
    }
}

#[test]
fn lag_against_a_frontier_at_v_is_vruntime_eligible() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0xe119_1b1e);
    for _ in 0..2_000 {
        // A runqueue of 1..16 entities within a few slices of each other,
        // anywhere in the u64 range.
        let zero = rng.next();
        let n = 1 + rng.below(16) as usize;
        let entities = (0..n)
            .map(|_| {
                let key = rng.below(60 * MS) as i64 - 30 * MS as i64;
                (zero.wrapping_add(key as u64), rng.weight().0)
            })
            .collect();
        let rq = CfsRq {
            zero_vruntime: zero,
            entities,
        };
        let frontier = rq.avg_vruntime();
        for _ in 0..8 {
            // Around V, the boundary itself included.
            let off = rng.below(2_000) as i64 - 1_000;
            let v = frontier.wrapping_add(off as u64);
            let got = run(&s, v, 0, nice(0), frontier, no_preempt()).eligible;
            assert_eq!(got, rq.vruntime_eligible(v), "v - V = {off}");
        }
    }
}

#[test]
fn preemption_verdicts_match_the_rule() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0x9ee3_9715);
    for _ in 0..5_000 {
        let mut pre = no_preempt();
        pre.curr_active = (rng.below(8) != 0) as u32;
        pre.wake_eligible = (rng.below(4) != 0) as u32;
        pre.curr_eligible = (rng.below(4) != 0) as u32;
        pre.curr_done = (rng.below(4) == 0) as u32;
        pre.wake_rel_deadline = rng.below(20 * MS) as i64 - 10 * MS as i64;
        pre.curr_rel_deadline = rng.below(20 * MS) as i64 - 10 * MS as i64;
        pre.curr_ran_ns = rng.below(2 * MS);
        pre.min_run_ns = rng.below(2 * MS);
        let got = run(&s, 0, 0, nice(0), 0, pre).verdict;
        let want = reference::preempt_verdict(&PreemptAt {
            curr_active: pre.curr_active != 0,
            wake_eligible: pre.wake_eligible != 0,
            curr_eligible: pre.curr_eligible != 0,
            curr_done: pre.curr_done != 0,
            wake_rel_deadline: pre.wake_rel_deadline,
            curr_rel_deadline: pre.curr_rel_deadline,
            curr_ran_ns: pre.curr_ran_ns,
            min_run_ns: pre.min_run_ns,
        });
        assert_eq!(got, want, "{pre:?}");
    }
}

#[test]
fn a_sleeper_preempts_a_hog_only_after_its_minimum_slice() {
    let Some(s) = program() else { return };
    // Hand trace: a hog at V with a 3 ms slice (deadline V + 3 ms); a
    // sleeper woken 3 ms behind V (the balanced lag) with its 3 ms slice
    // has its deadline at V: earlier, and it is eligible.
    let mut pre = no_preempt();
    pre.curr_active = 1;
    pre.wake_eligible = 1;
    pre.curr_eligible = 1;
    pre.wake_rel_deadline = 0;
    pre.curr_rel_deadline = 3 * MS as i64;
    pre.min_run_ns = MS / 4;
    pre.curr_ran_ns = MS / 4 - 1;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Parity);
    pre.curr_ran_ns = MS / 4;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Yes);
    // Equal deadlines: the running task keeps the CPU.
    pre.wake_rel_deadline = pre.curr_rel_deadline;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Later);
}

#[test]
fn a_hog_past_its_share_is_preempted_whatever_its_deadline() {
    let Some(s) = program() else { return };
    // Hand trace: a hog got a 3 ms slice 10 ms behind V (deadline
    // V - 7 ms) and has run 4 ms beside three others, so its vruntime is
    // now past V: __pick_eevdf() drops it before looking at deadlines. The
    // sleeper woken 3 ms behind V has a later deadline (V) and still takes
    // the CPU.
    let mut pre = no_preempt();
    pre.curr_active = 1;
    pre.wake_eligible = 1;
    pre.curr_eligible = 0;
    pre.wake_rel_deadline = 0;
    pre.curr_rel_deadline = -7 * MS as i64;
    pre.min_run_ns = MS / 4;
    pre.curr_ran_ns = 4 * MS;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Yes);
    // Its minimum slice does not protect it: __pick_eevdf() drops an
    // ineligible curr before it asks protect_slice(), even right after it
    // got its slice.
    pre.curr_ran_ns = MS / 4 - 1;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Yes);
    // Still eligible: its earlier deadline keeps the CPU.
    pre.curr_ran_ns = 4 * MS;
    pre.curr_eligible = 1;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Later);
    // An ineligible sleeper preempts nobody, even a hog past its share.
    pre.curr_eligible = 0;
    pre.wake_eligible = 0;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Ineligible);
}

#[test]
fn a_hog_done_with_its_slice_is_preempted_whatever_its_deadline() {
    let Some(s) = program() else { return };
    // Hand trace: a hog got a 1.5 ms slice 6 ms behind V (deadline
    // V - 4.5 ms) and has run 2 ms since: still eligible, but its vruntime
    // is 0.5 ms past its deadline, so update_deadline() would have ended
    // its request (the tick that enforces it here has not come yet). A
    // sleeper woken 3 ms behind V with a 1.5 ms slice (deadline
    // V - 1.5 ms) takes the CPU although its deadline is the later one.
    let mut pre = no_preempt();
    pre.curr_active = 1;
    pre.wake_eligible = 1;
    pre.curr_eligible = 1;
    pre.curr_done = 1;
    pre.wake_rel_deadline = -(3 * MS as i64) / 2;
    pre.curr_rel_deadline = -(9 * MS as i64) / 2;
    pre.min_run_ns = MS / 4;
    pre.curr_ran_ns = 2 * MS;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Yes);
    // Not done yet, its earlier deadline keeps the CPU.
    pre.curr_done = 0;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Later);
    // Done within its minimum slice (a slice shorter than it: a low
    // weight's), it is not protected either: update_deadline() has ended
    // the request that protect_slice() guarded.
    pre.curr_done = 1;
    pre.curr_ran_ns = MS / 4 - 1;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Yes);
    // Not done and within its minimum slice, even a later deadline keeps
    // the CPU: run-to-parity.
    pre.curr_done = 0;
    pre.curr_rel_deadline = 0;
    assert_eq!(run(&s, 0, 0, nice(0), 0, pre).verdict, Verdict::Parity);
}

/// CADENCE_CROSS_WAIT_NS (bpf/deadline.bpf.h).
const CROSS_WAIT: u64 = 50 * MS;

#[test]
fn a_pinned_sleeper_runs_before_older_llc_heads_with_later_deadlines() {
    let Some(s) = program() else { return };
    // The traced case: beside steady hackbench, a pinned cyclictest thread
    // queued at 10 ms in its CPU's own queue, 2.7 ms behind that queue's
    // frontier with a 0.3 ms slice (deadline 2.4 ms behind it), which is
    // 5000 ms in the LLC queue's frame. The LLC queue's head was queued
    // earlier, at 2 ms, and its deadline is 0.3 ms later in that frame. At
    // 12 ms the own head runs first: by waiting order it would not.
    let d = 5_000 * MS;
    let own = head(d, 10 * MS, -24 * MS as i64 / 10);
    let llc = head(d + 3 * MS / 10, 2 * MS, -27 * MS as i64 / 10);
    assert!(own_first(&s, own, llc, 12 * MS));
    // With the later deadline, the pinned head waits: as in one runqueue.
    let llc = head(d - 1, 2 * MS, 0);
    assert!(!own_first(&s, own, llc, 12 * MS));
    // Equal deadlines: the LLC queue's head (the rule is strict).
    let llc = head(d, 11 * MS, 0);
    assert!(!own_first(&s, own, llc, 12 * MS));
}

#[test]
fn past_the_wait_bound_the_head_queued_first_runs_first() {
    let Some(s) = program() else { return };
    // A pinned hog keeps the earlier deadline (5000 ms) against an LLC
    // head queued at 0 with a deadline 10 ms later, that no CPU's work
    // moves: deadlines alone would leave that head waiting for ever.
    let own = head(5_000 * MS, 30 * MS, 0);
    let llc = head(5_010 * MS, 0, 0);
    assert!(own_first(&s, own, llc, CROSS_WAIT - 1));
    assert!(!own_first(&s, own, llc, CROSS_WAIT));
    // The bound holds for the own queue's head too, whichever waited.
    let own = head(5_010 * MS, 0, 0);
    let llc = head(5_000 * MS, 30 * MS, 0);
    assert!(!own_first(&s, own, llc, CROSS_WAIT - 1));
    assert!(own_first(&s, own, llc, CROSS_WAIT));
    // Queued at the same ns: the earlier deadline relative to its own
    // queue's frontier, then the LLC queue's head.
    let own = head(0, 0, -(MS as i64));
    let llc = head(0, 0, 0);
    assert!(own_first(&s, own, llc, CROSS_WAIT));
    assert!(!own_first(&s, head(0, 0, 0), llc, CROSS_WAIT));
}

#[test]
fn a_head_holding_its_cpu_in_the_llc_frame_goes_by_deadline_alone() {
    let Some(s) = program() else { return };
    // A light task held in its CPU's own queue, its vtime in the LLC
    // queue's frame, queued 60 ms ago with a deadline 1 ms later than the
    // LLC queue's head, queued just now: both deadlines are in one frame,
    // so the later one waits, however long (as in one runqueue); the
    // waiting order would run it first.
    let mut own = head(5_001 * MS, 0, 0);
    own.llc_frame = 1;
    let llc = head(5_000 * MS, 60 * MS, 0);
    assert!(!own_first(&s, own, llc, 60 * MS));
    assert!(!own_first(&s, own, llc, 10 * CROSS_WAIT));
    // Its deadline earlier, it runs first, whoever waited longer.
    own.llc_deadline = 4_999 * MS;
    own.queued_at = 60 * MS;
    let llc = head(5_000 * MS, 0, 0);
    assert!(own_first(&s, own, llc, 10 * CROSS_WAIT));
    // The same heads, the own one in its own queue's frame: past the
    // bound, the waiting order.
    own.llc_frame = 0;
    assert!(!own_first(&s, own, llc, 10 * CROSS_WAIT));
}

#[test]
fn cross_queue_order_is_right_across_wrap_around_and_clock_skew() {
    let Some(s) = program() else { return };
    // Deadlines either side of 2^64: 100 ns before it is earlier than 50
    // ns after it.
    let now = 40 * MS;
    let own = head(u64::MAX - 99, 39 * MS, 0);
    let llc = head(50, 38 * MS, 0);
    assert!(own_first(&s, own, llc, now));
    assert!(!own_first(&s, llc, own, now));
    // A head queued by another CPU whose clock is 1 us ahead of this one's
    // has not waited at all, not 2^64 ns: deadlines still decide.
    let own = head(5_000 * MS, now + 1_000, 0);
    let llc = head(5_001 * MS, now - MS, 0);
    assert!(own_first(&s, own, llc, now));
    // Queued times either side of 2^64: the bound counts from the real
    // wait, 50 ms from 2^64 - 10 ms.
    let t0 = u64::MAX - 10 * MS + 1;
    let own = head(5_000 * MS, t0, 0);
    let llc = head(5_001 * MS, t0 + MS, 0);
    assert!(own_first(&s, own, llc, t0.wrapping_add(CROSS_WAIT - 1)));
    let llc = head(5_001 * MS, t0.wrapping_sub(1), 0);
    assert!(!own_first(&s, own, llc, t0.wrapping_add(CROSS_WAIT - 1)));
}

#[test]
fn cross_queue_order_matches_the_rule_on_random_inputs() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0xc205_5e0d);
    for _ in 0..5_000 {
        // Times and deadlines as offsets (i128, no wrap-around) from bases
        // anywhere in the u64 range; the rule is stated on the offsets.
        let (tbase, dbase) = (rng.next(), rng.next());
        let span = |rng: &mut Rng, n: u64| rng.below(2 * n + 1) as i128 - n as i128;
        let (own_q, llc_q) = (span(&mut rng, 60 * MS), span(&mut rng, 60 * MS));
        let now = span(&mut rng, 60 * MS);
        let (own_d, llc_d) = (span(&mut rng, 20 * MS), span(&mut rng, 20 * MS));
        let (own_r, llc_r) = (span(&mut rng, 5 * MS) as i64, span(&mut rng, 5 * MS) as i64);
        // One case in four queued at the same ns, for the tie-break.
        let llc_q = if rng.below(4) == 0 { own_q } else { llc_q };
        let at = |base: u64, off: i128| base.wrapping_add(off as i64 as u64);
        // One own head in four holds its CPU in the LLC queue's frame.
        let llc_frame = rng.below(4) == 0;
        let waited = |q: i128| now - q >= CROSS_WAIT as i128;
        let want = if !llc_frame && (waited(own_q) || waited(llc_q)) {
            own_q < llc_q || (own_q == llc_q && own_r < llc_r)
        } else {
            own_d < llc_d
        };
        let mut own = head(at(dbase, own_d), at(tbase, own_q), own_r);
        own.llc_frame = llc_frame.into();
        let got = own_first(
            &s,
            own,
            head(at(dbase, llc_d), at(tbase, llc_q), llc_r),
            at(tbase, now),
        );
        assert_eq!(
            got, want,
            "queued {own_q}/{llc_q} now {now} deadlines {own_d}/{llc_d} rel {own_r}/{llc_r}"
        );
    }
}

/// A task that went to sleep at @vtime with its queue's frontier at
/// @frontier wakes with the frontier at @wake_frontier: lag_at_sleep(),
/// wake_lag() and the vtime lift_behind() gives it.
fn wake(
    s: &skel::DeadlineTestSkel<'static>,
    vtime: u64,
    frontier: u64,
    wake_frontier: u64,
    policy_lag: u64,
    pinned: bool,
) -> (u64, u64, u64) {
    // SAFETY: plain-data struct from bindgen; all zeroes is valid.
    let mut ctx: bpf_intf::cadence_deadline_test = unsafe { std::mem::zeroed() };
    ctx.vtime = vtime;
    ctx.frontier = frontier;
    ctx.wake_frontier = wake_frontier;
    ctx.policy_lag = policy_lag;
    ctx.pinned = u32::from(pinned);
    ctx.wake_lag = u64::MAX;
    run_ctx(s, &mut ctx);
    (ctx.sleep_lag, ctx.wake_lag, ctx.woken_vtime)
}

#[test]
fn a_sleeper_keeps_its_lag_and_a_pinned_one_gets_sleeper_credit() {
    let Some(s) = program() else { return };
    let (f, lag) = (5_000 * MS, 3 * MS);
    // A hackbench task went to sleep 0.4 ms behind its frontier; the
    // frontier moved 5 ms while it slept. It wakes 0.4 ms behind the new
    // frontier, as EEVDF puts it back at V - vlag: nothing for the sleep.
    let v = f - 4 * MS / 10;
    assert_eq!(
        wake(&s, v, f, f + 5 * MS, lag, false),
        (4 * MS / 10, 4 * MS / 10, f + 46 * MS / 10)
    );
    // One that waited long keeps no more than slice.lag_us.
    assert_eq!(
        wake(&s, f - 5 * MS, f, f + 5 * MS, lag, false),
        (5 * MS, lag, f + 2 * MS)
    );
    // Level with it or ahead, it wakes level with the new frontier; one
    // still ahead of the new frontier keeps its vtime.
    assert_eq!(wake(&s, f, f, f + 5 * MS, lag, false).2, f + 5 * MS);
    assert_eq!(
        wake(&s, f + 8 * MS, f, f + 5 * MS, lag, false).2,
        f + 8 * MS
    );
    // A pinned thread that went to sleep level is credited its sleep, as
    // under CFS, up to twice slice.lag_us: 5 ms, then the 6 ms cap.
    assert_eq!(wake(&s, f, f, f + 5 * MS, lag, true).2, f);
    assert_eq!(wake(&s, f, f, f + 9 * MS, lag, true).2, f + 3 * MS);
    // slice.lag_us = 0 gives no sleeper anything, pinned or not.
    assert_eq!(wake(&s, f - MS, f, f + 9 * MS, 0, true).2, f + 9 * MS);
    assert_eq!(wake(&s, f - MS, f, f + 9 * MS, 0, false).2, f + 9 * MS);
}

#[test]
fn woken_vtimes_match_both_kernels_placements_on_random_inputs() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0x51ee_91a6);
    for _ in 0..5_000 {
        // Frontiers anywhere in the u64 range, so that wrap-around is
        // crossed; vtimes within 40 ms of them either way; the frontier
        // moves up to 20 ms while the task sleeps.
        let f = rng.next();
        let v = f.wrapping_add(rng.below(80 * MS)).wrapping_sub(40 * MS);
        let f_wake = f.wrapping_add(rng.below(20 * MS));
        let lag = rng.below(10 * MS);
        let pinned = rng.below(4) == 0;
        let (_, _, got) = wake(&s, v, f, f_wake, lag, pinned);
        assert_eq!(
            got,
            reference::woken_vruntime(v, f, f_wake, lag, pinned),
            "vtime {v} frontier {f} then {f_wake} lag {lag} pinned {pinned}"
        );
    }
}

/// parity_credit() after @stops, one run of the program per stop, each
/// fed the credit the last one returned.
fn credit_after(s: &skel::DeadlineTestSkel<'static>, stops: &[Stop]) -> u64 {
    stops.iter().fold(0, |credit, stop| {
        // SAFETY: plain-data struct from bindgen; all zeroes is valid.
        let mut ctx: bpf_intf::cadence_deadline_test = unsafe { std::mem::zeroed() };
        ctx.parity_credit = credit;
        ctx.parity_ran = stop.ran_ns;
        ctx.parity_granted = stop.granted_ns;
        ctx.parity_runnable = u32::from(stop.runnable);
        ctx.parity_credit_after = u64::MAX;
        run_ctx(s, &mut ctx);
        ctx.parity_credit_after
    })
}

/// A preempted run of @ran_ns of a @granted_ns slice.
fn cut(ran_ns: u64, granted_ns: u64) -> Stop {
    Stop {
        ran_ns,
        granted_ns,
        runnable: true,
    }
}

#[test]
fn the_minimum_slice_counts_runs_a_preemption_cut_short() {
    let Some(s) = program() else { return };
    let us = MS / 1000;
    // A hog preempted 300 us into a 3 ms slice, resumed with another 3 ms
    // slice and woken against 100 us later: it has run 400 us of its
    // request, past a 250 us minimum.
    assert_eq!(credit_after(&s, &[cut(300 * us, 3 * MS)]), 300 * us);
    // Cut short twice, the runs add up.
    assert_eq!(
        credit_after(&s, &[cut(100 * us, 3 * MS), cut(120 * us, 2 * MS)]),
        220 * us
    );
    // A request ends once its runs add up to the slice: 1 ms cut short
    // three times in 3 ms slices, as cyclictest every 1 ms cuts a hog's,
    // begins a new request at the third; so does a run that ends exactly
    // at the slice's end, one past it, and one the tick ended (granted 0).
    let thirds = [cut(MS, 3 * MS), cut(MS, 3 * MS), cut(MS, 3 * MS)];
    assert_eq!(credit_after(&s, &thirds[..2]), 2 * MS);
    assert_eq!(credit_after(&s, &thirds), 0);
    assert_eq!(
        credit_after(&s, &[cut(100 * us, 3 * MS), cut(3 * MS, 3 * MS)]),
        0
    );
    assert_eq!(credit_after(&s, &[cut(3500 * us, 3 * MS)]), 0);
    assert_eq!(
        credit_after(&s, &[cut(100 * us, 3 * MS), cut(10 * us, 0)]),
        0
    );
    // So does a wake-up: a run that ends in a sleep leaves nothing.
    let slept = Stop {
        ran_ns: 100 * us,
        granted_ns: 3 * MS,
        runnable: false,
    };
    assert_eq!(credit_after(&s, &[cut(100 * us, 3 * MS), slept]), 0);
    // And what comes after a new request counts from it.
    assert_eq!(credit_after(&s, &[slept, cut(70 * us, 3 * MS)]), 70 * us);
    assert_eq!(
        credit_after(&s, &[thirds[0], thirds[1], thirds[2], cut(70 * us, 3 * MS)]),
        70 * us
    );
}

#[test]
fn the_minimum_slice_counts_the_run_since_the_request_on_random_stops() {
    let Some(s) = program() else { return };
    let mut rng = Rng(0x9a71_7e5d);
    for _ in 0..2_000 {
        let stops: Vec<Stop> = (0..1 + rng.below(8))
            .map(|_| {
                let granted_ns = rng.below(4) * MS / 2;
                // Up to a little past the slice, so that some use it up,
                // and some exactly.
                let ran_ns = if rng.below(8) == 0 {
                    granted_ns
                } else {
                    rng.below(granted_ns + MS / 2 + 1)
                };
                Stop {
                    ran_ns,
                    granted_ns,
                    runnable: rng.below(5) != 0,
                }
            })
            .collect();
        assert_eq!(
            credit_after(&s, &stops),
            reference::run_since_request(&stops),
            "{stops:?}"
        );
    }
}
