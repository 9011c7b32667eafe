/* SPDX-License-Identifier: GPL-2.0 */
/*
 * EEVDF's virtual deadlines and eligibility, and the wake-up preemption
 * decision built on them: plain math, no sched_ext, so that the host tests
 * run it through BPF_PROG_TEST_RUN (bpf/deadline_test.bpf.c) against a Rust
 * reference of kernel/sched/fair.c (src/latency/reference.rs).
 *
 * A task's virtual deadline is its vtime plus its slice in virtual time,
 * vd_i = v_i + slice * 1024 / w_i, computed as fair.c's update_deadline()
 * does: calc_delta_fair(), the multiply-and-shift by the weight's inverse
 * (sched_prio_to_wmult[] in kernel/sched/core.c) in __calc_delta().
 *
 * A task is eligible when its lag is not negative: V >= v_i, V the
 * weight-averaged vtime of its queue (fair.c's vruntime_eligible()). Here the
 * queue's frontier stands for V: it drifts by delta * 1024 / W as V does
 * (fair.bpf.h). With a frontier at floor(V), as fair.c's avg_vruntime()
 * rounds, v_i <= frontier is exactly vruntime_eligible()'s
 * sum((v_j - v0) w_j) >= (v_i - v0) sum(w_j), integers both sides.
 */
#ifndef __CADENCE_DEADLINE_BPF_H
#define __CADENCE_DEADLINE_BPF_H

/* WMULT_SHIFT in kernel/sched/fair.c: inverse weights are 2^32 / weight. */
#define CADENCE_WMULT_SHIFT 32

/* Index of the highest set bit, 1-based (the kernel's fls()); 0 for 0. */
static __always_inline u32 fls32(u32 x)
{
	u32 n = 0;

	if (x >> 16) {
		n += 16;
		x >>= 16;
	}
	if (x >> 8) {
		n += 8;
		x >>= 8;
	}
	if (x >> 4) {
		n += 4;
		x >>= 4;
	}
	if (x >> 2) {
		n += 2;
		x >>= 2;
	}
	if (x >> 1) {
		n += 1;
		x >>= 1;
	}
	return n + x;
}

/*
 * (a * mul) >> shift without 128-bit arithmetic, exactly: the kernel's
 * generic mul_u64_u32_shr() splits @a into 32-bit halves; the high half's
 * product is shifted left by 32 - shift, so no fraction of it is lost
 * (shift <= 32 here).
 */
static __always_inline u64 mul_u64_u32_shr(u64 a, u32 mul, u32 shift)
{
	u64 ret = ((a & 0xffffffffULL) * mul) >> shift;
	u64 ah = a >> 32;

	if (ah)
		ret += (ah * mul) << (32 - shift);
	return ret;
}

/*
 * @delta ns of CPU time in virtual time for a task of @weight whose
 * inverse weight is @wmult: fair.c's calc_delta_fair(), that is
 * __calc_delta(delta, NICE_0_LOAD, &se->load), nice 0 passed through.
 */
static __always_inline u64 calc_delta_fair(u64 delta, u32 weight, u32 wmult)
{
	u64 fact;
	u32 fact_hi, shift = CADENCE_WMULT_SHIFT, fs;

	if (weight == CADENCE_NICE_0_WEIGHT)
		return delta;
	/* NICE_0_LOAD scaled down is 1024: it fits 32 bits, so no first shift. */
	fact = (u64)CADENCE_NICE_0_WEIGHT * wmult;
	fact_hi = fact >> 32;
	if (fact_hi) {
		fs = fls32(fact_hi);
		shift -= fs;
		fact >>= fs;
	}
	return mul_u64_u32_shr(delta, (u32)fact, shift);
}

/* EEVDF's vd_i = v_i + calc_delta_fair(slice): update_deadline(). */
static __always_inline u64 virtual_deadline(u64 vtime, u64 slice_ns, u32 weight, u32 wmult)
{
	return vtime + calc_delta_fair(slice_ns, weight, wmult);
}

/*
 * Eligible: lag >= 0, @vtime not past @frontier, the queue's V (see the top
 * of this file). Signed difference: right across wrap-around.
 */
static __always_inline bool vtime_eligible(u64 vtime, u64 frontier)
{
	return (s64)(frontier - vtime) >= 0;
}

/*
 * Whether a waking task should preempt a CPU's running task, after
 * kernel/sched/fair.c: check_preempt_wakeup_fair() preempts when
 * __pick_eevdf() would pick the waking entity. @wake must be eligible.
 * A running task that is no longer eligible (it ran past its queue's V)
 * is not a candidate there, so its deadline does not count: it yields to
 * any eligible waking task. One that is still eligible yields only if the
 * waking task's deadline is earlier, each relative to its own queue's
 * frontier (so tasks of two queues compare by how far each is from its
 * queue's V), unless it has used up its slice: check_preempt_wakeup_fair()
 * first runs update_curr(), whose update_deadline() ends a request whose
 * deadline the running task's vruntime has reached and reschedules, as
 * another task (the waking one) is queued; the pick then sees the running
 * task's next deadline, a whole slice later. (Here slices are enforced
 * only at the tick, so such a task would run on until the next one.)
 * Run-to-parity, as fair.c's protect_slice(), which __pick_eevdf() asks
 * only of an eligible curr within its request: such a task first runs
 * @min_run_ns of its request, whichever deadline is earlier. One that is
 * ineligible or done is not protected (under CPU hogs, protecting those
 * too held cyclictest's wake-ups to the parity timer: p99 1.32x and 1.41x
 * EEVDF's in two boots, 1.13x and 1.25x without; docs/benchmarks.md).
 * enum cadence_preempt_verdict.
 */
static __always_inline u32 wakeup_preempt_verdict(const struct cadence_preempt_in *in)
{
	if (!in->curr_active)
		return CADENCE_PREEMPT_NO_CURR;
	if (!in->wake_eligible)
		return CADENCE_PREEMPT_INELIGIBLE;
	/* Past its share or done with its slice: nothing protects it. */
	if (!in->curr_eligible || in->curr_done)
		return CADENCE_PREEMPT_YES;
	if (in->wake_rel_deadline >= in->curr_rel_deadline)
		return CADENCE_PREEMPT_LATER;
	if (in->curr_ran_ns < in->min_run_ns)
		return CADENCE_PREEMPT_PARITY;
	return CADENCE_PREEMPT_YES;
}

/*
 * How many times the policy's wake-up lag (slice_lag_ns) a task pinned to
 * one CPU may wake behind its frontier: 2. With 1, what every sleeper had
 * before, a pinned cyclictest thread woke level with the LLC's sleepers
 * and came in wake-up order among them (docs/benchmarks.md); with 2 it
 * is ahead of every one that woke up to one lag before it. For scale,
 * fair.c bounds a nice-0 task's kept lag at two slices
 * (update_entity_lag(): max(2 * slice, TICK_NSEC)). See wake_lag().
 */
#define CADENCE_PINNED_WAKE_LAGS 2

/*
 * The lag a task goes to sleep with: how far behind its queue's frontier
 * @frontier its @vtime is, 0 if level with it or ahead (fair.c keeps a
 * negative lag too; here a task ahead simply keeps its vtime, and
 * clamp_leading_vtime() bounds it). Signed: right across wrap-around.
 */
static __always_inline u64 lag_at_sleep(u64 vtime, u64 frontier)
{
	s64 lag = (s64)(frontier - vtime);

	return lag > 0 ? lag : 0;
}

/*
 * How far behind its queue's frontier a waking task may start
 * (lift_behind() lifts it to there if it is further behind). A task that
 * may run on several CPUs keeps the lag it went to sleep with,
 * @sleep_lag, at most the policy's @policy_lag, as fair.c's
 * place_entity() puts a sleeper back at V - vlag (PLACE_LAG): no credit
 * for the sleep itself. A task @pinned to one CPU gets CFS's sleeper
 * credit instead (before EEVDF: max(vruntime, min_vruntime - thresh)):
 * the whole sleep, up to CADENCE_PINNED_WAKE_LAGS times @policy_lag. Its
 * frontier is its CPU's own queue's, which moves only while tasks queued
 * there run (pinned ones, sync wake-ups, held tasks), not with the LLC
 * tasks the CPU runs between them: its lag at sleep says little of how it
 * stood against what it competes with. Measured beside steady hackbench:
 * with every sleeper given @policy_lag of credit, a pinned thread's
 * deadline came in wake-up order among hackbench's 80 tasks, and its mean
 * wait was 3.6-3.8x EEVDF's; with this, 2.2-2.8x (two A/Bs,
 * docs/benchmarks.md). The cost: a pinned task that sleeps up to
 * 2 * @policy_lag beside a pinned CPU hog is credited its whole sleep, as
 * under CFS, and takes more than half that CPU.
 */
static __always_inline u64 wake_lag(u64 sleep_lag, u64 policy_lag, bool pinned)
{
	if (pinned)
		return CADENCE_PINNED_WAKE_LAGS * policy_lag;
	return sleep_lag < policy_lag ? sleep_lag : policy_lag;
}

/*
 * Lift *@vtime to at most @lag behind its queue's @frontier (a waking
 * task's with wake_lag()); true if it was further behind. In place: a
 * returned copy cost enqueue()'s call chain 16 bytes of BPF stack, past
 * the verifier's 512. Signed differences: right across wrap-around and
 * near 0.
 */
static __always_inline bool lift_behind(u64 *vtime, u64 frontier, u64 lag)
{
	u64 floor = frontier - lag;

	if ((s64)(*vtime - floor) >= 0)
		return false;
	*vtime = floor;
	return true;
}

/*
 * What a task has run of its current request when it next runs: the
 * count run-to-parity's minimum slice is measured by. A request begins at
 * a wake-up and ends once its runs add up to a slice, as fair.c's
 * update_deadline() sets the next deadline once the vruntime reaches the
 * last. So after a run of @ran_ns, with @credit_ns run in the request
 * before it and @granted_ns the slice the run got: a run that a
 * preemption cut short (@runnable) adds to the count while the sum stays
 * below the slice; a sleep, or a sum that reaches the slice, begins a new
 * request (0).
 * fair.c's protection (set_protect_slice(), at each pick) between tasks
 * of equal slices, the default, lasts up to the request's deadline, which
 * a preemption does not move: a resumed task is protected only up to the
 * point it was before. (With a shorter slice queued, it protects that
 * slice afresh at each pick, up to the same deadline.) Counted from each
 * switch in, the minimum protected a CPU hog anew each time a periodic
 * sleeper's preemption ended, and the sleeper's next wake-up inside it
 * waited for the parity timer (docs/benchmarks.md, "Run-to-parity
 * counted from the request").
 */
static __always_inline u64 parity_credit(u64 credit_ns, u64 ran_ns, u64 granted_ns, bool runnable)
{
	if (runnable && credit_ns + ran_ns < granted_ns)
		return credit_ns + ran_ns;
	return 0;
}

/*
 * Longest the head of one of a CPU's two queues is held back by earlier
 * deadlines in the other before the one queued first runs first: 50 ms.
 * Well above the median wait of hackbench's wake-ups in the test VM under
 * steady hackbench (about 6 ms), so deadlines decide nearly always under
 * load; far below the kernel's limits (RCU stall warnings at 21 s).
 * Earliest deadline alone could starve a head: a CPU whose pinned task
 * keeps the earlier deadline while no CPU moves the LLC queue's frontier.
 */
#define CADENCE_CROSS_WAIT_NS (50 * 1000 * 1000ULL)

/*
 * Whether head @a was queued before head @b (ns), else, queued at the same
 * time, has the earlier deadline relative to its own queue's frontier: the
 * waiting order, which no frontier's movement can turn against a head.
 */
static __always_inline bool head_queued_first(const struct cadence_queue_head_order *a,
					      const struct cadence_queue_head_order *b)
{
	if (a->queued_at != b->queued_at)
		return (s64)(a->queued_at - b->queued_at) < 0;
	return a->rel_deadline < b->rel_deadline;
}

/*
 * Whether the head of a CPU's own queue @own runs before the head of its
 * LLC's queue @llc at @now: the earlier deadline, both in the LLC queue's
 * frame as each was queued, as EEVDF picks the earliest deadline of one
 * runqueue; once either has waited CADENCE_CROSS_WAIT_NS, the one queued
 * first (head_queued_first()). Not each deadline relative to its own
 * queue's frontier: an own queue's frontier moves only while its own tasks
 * run, so its head's relative deadline stands still while it waits, as a
 * head of the LLC queue's falls with the LLC's frontier; the pinned head
 * lost to every LLC head that waited a little. Not the waiting order alone
 * either: a pinned cyclictest thread whose wake-up preempted nobody waited
 * behind every LLC task queued before it, beside steady hackbench (a median
 * of 7-9 ms; 3.8% of wake-ups past 20 ms against EEVDF's 0.1%, traced with
 * ftrace). Signed differences: right across wrap-around, and a head queued
 * a little ahead of @now by another CPU's clock has not waited.
 *
 * An own head in the LLC queue's frame (@own->llc_frame: a task holding its
 * CPU) goes by deadline alone, as in one runqueue: no frontier's movement
 * can keep it or the LLC queue's head waiting, and the waiting order let a
 * light task held there run whenever it had waited 50 ms, which a task of
 * a cgroup of cpu.weight 100 beside one of 1000 does between its turns.
 */
static __always_inline bool own_head_first(const struct cadence_queue_head_order *own,
					   const struct cadence_queue_head_order *llc, u64 now)
{
	if (!own->llc_frame && ((s64)(now - own->queued_at) >= (s64)CADENCE_CROSS_WAIT_NS ||
				(s64)(now - llc->queued_at) >= (s64)CADENCE_CROSS_WAIT_NS))
		return head_queued_first(own, llc);
	return (s64)(own->llc_deadline - llc->llc_deadline) < 0;
}

#endif /* __CADENCE_DEADLINE_BPF_H */
