/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Weighted fairness: every task carries a virtual time that advances by
 * delta_ns * 1024 / weight while it runs (weight.bpf.h; with cgroup weights,
 * the weight its cgroups leave it, cgroup.bpf.c), and DSQs are ordered
 * by its virtual deadline, vtime plus its slice in virtual time
 * (deadline.bpf.h), so over time CPU shares converge to the weight ratios, as
 * in CFS/EEVDF. Slices are scaled by weight (task_slice()), so a slice is the
 * same virtual time for every task queued on one CPU at one time, and the
 * deadline order is the vtime order but where the slice floor or ceiling
 * clamps it (low weights under load, high weights when few tasks wait) or
 * the queue was longer when a task was queued (a shorter slice, an earlier
 * deadline), as EEVDF's is.
 *
 * Each queue (a CPU's own DSQ of pinned tasks, an LLC's shared DSQ) has its
 * own frontier, which moves two ways:
 *   - it follows the work taken from it: a task taken from the queue moves
 *     it up to the task's vtime when it starts running (as does a CPU that
 *     keeps running a task no queued one is due before);
 *   - it drifts as EEVDF's average vruntime V does: each time a task of the
 *     queue is charged delta ns on a CPU serving the queue, the frontier
 *     moves by delta * 1024 / W, W the sum of the weights of the queue's
 *     runnable tasks (kernel/sched/fair.c: V is the weight-averaged
 *     vruntime, and a task of weight w running delta moves it by
 *     (delta * 1024 / w) * w / W).
 * Following alone is not enough: tasks that start at the frontier or are
 * lifted to just behind it (new tasks, sleepers) are taken before anything
 * ahead of it and do not move it; under a steady stream of forks they held
 * it still, and a nice-19 kthread 121 ms of vtime ahead waited 32 s, until
 * the kernel ended the scheduler. The drift only counts CPU time the queue's
 * own tasks used on CPUs serving it, at the weight-averaged rate, so tasks
 * that start on an idle CPU without queueing cannot push the frontier far
 * ahead of the queued ones (a waking task placed near it would then wait
 * behind all of them; a queued task that waits 21 s can be the RCU
 * grace-period kthread, and the kernel then ends the scheduler for an RCU
 * stall). One frontier for all queues is not enough either: a queue served
 * slower than the one moving it (pinned tasks sharing their CPU with the LLC
 * queue, a busier LLC) falls behind it, and a task waking into that queue
 * near the frontier waits for the whole drift; the kernel's watchdog ends
 * the scheduler once a kworker has waited 30 s. And bounding every queue's
 * lag to one shared frontier would hold the slower queue's tasks at the
 * bound, where they take turns and their weights no longer count.
 *
 * A task's vtime is in the frame of the queue it was last queued in
 * (task_ctx.queue). Queued into another one, it keeps its lag: its vtime is
 * moved by the difference of the two frontiers, as CFS moves vruntime by
 * the min_vruntime of the old and the new runqueue on migration. Lag is
 * bounded both ways around that queue's frontier at every wake-up, at every
 * enqueue (relative to the queue it goes into), and whenever a CPU weighs
 * letting its task run on (a task woken onto an idle CPU was never queued):
 *   - a task wakes no further behind the frontier than it went to sleep,
 *     as EEVDF keeps a sleeper's lag, nor than slice_lag_ns: sleeping
 *     banks no priority, and a task that ran its share before it slept
 *     does not wake ahead of one that did not. A task pinned to one CPU,
 *     whose own queue's frontier does not move with the LLC tasks it
 *     competes with, gets CFS's sleeper credit instead: up to twice
 *     slice_lag_ns behind (deadline.bpf.h, wake_lag());
 *   - no task that stays runnable falls further behind it than it may lead
 *     it (the next bound), as EEVDF bounds lag symmetrically. Waiting in a
 *     queue puts a task behind a frontier that drifts with the weighted
 *     average, by up to what the others ran meanwhile (a nice-0 task
 *     waiting while a nice-5 one runs a 4 ms tick: 4 ms * 1024/335 *
 *     335/1359 = 3 ms); the wake-up bound would take that credit back and
 *     bend the weights;
 *   - no task is queued further ahead of it than two full slices plus one
 *     tick of overrun (sched_ext enforces slices at the tick), scaled by the
 *     task's weight, as EEVDF's update_entity_lag() bounds lag. That bound
 *     is never reached by tasks that only run their slices, so weights stay
 *     exact; it caps what a task can carry over from anything else;
 *   - nor further ahead than the frontier drifts in CADENCE_MAX_WAIT_NS
 *     with the queue's CPUs busy: CPUs * 1024 / W per ns. A nice-19 task
 *     (weight 15) that overran its slice by one 4 ms tick is 273 ms of
 *     vtime ahead; among 200 nice-0 tasks on 4 CPUs the frontier covers
 *     that in 13.7 s, which fairness asks it to wait and which brings the
 *     kernel's 30 s watchdog close. This bound only cuts waits longer than
 *     CADENCE_MAX_WAIT_NS, so weights stay exact below it. It is reckoned
 *     with the weight queued when the task is: weight that arrives later
 *     slows the frontier, and a task that has waited CADENCE_STARVE_JIFFIES
 *     runs ahead of its queue's order (queues.bpf.h, take_any_starved()).
 * A task that keeps up with its queue never meets either bound, so weights
 * are exact among the tasks of each queue. (Not quite while the head of an
 * LLC queue may not run on the CPUs serving it: move_to_local() skips it,
 * the frontier follows the task taken instead, and the head falls behind
 * it until a CPU it may use takes it.)
 *
 * Between the heads of two queues (a CPU's own and its LLC's), deadlines are
 * in different frames. Each task notes, when it is queued, its deadline
 * moved into the LLC queue's frame (task_ctx.llc_deadline, as rebase_vtime()
 * moves a vtime), and the CPU takes the head with the earlier one, as EEVDF
 * picks the earliest deadline of one runqueue; once either head has waited
 * CADENCE_CROSS_WAIT_NS, the one queued first (deadline.bpf.h,
 * own_head_first()). A running task whose slice ended yields to any task
 * waiting in the other queue. So no head waits on the other queue past that
 * bound for tasks queued after it, however the frontiers move; but where
 * the LLC queue's head may not run on this CPU: move_to_local() then takes
 * a later task (above), and a task of either queue has take_any_starved()'s
 * bound (queues.bpf.h). The exception is a task holding its CPU
 * (placement.hold): it waits in that CPU's own queue with its vtime in the
 * LLC queue's frame (task_ctx.hold_queued), and goes before the LLC
 * queue's head and before the running task by deadline alone, as in one
 * runqueue, within take_any_starved()'s bound.
 *
 * Busy LLCs balance (llc_to_balance()): stealing when idle never moves a
 * task between busy LLCs, and without it N tasks on one LLC and one on
 * another would stay N:1. A busier LLC's head is taken only when it was
 * queued before both local heads (head_queued_first()), so balancing never
 * keeps a CPU from its own queues.
 *
 * Slices shrink as load grows: slice_max_ns divided among the tasks waiting
 * for this CPU, never below slice_min_ns, like EEVDF's latency period; and
 * each task's slice is scaled by its weight, so one run charges every task
 * about the same virtual time.
 */
#ifndef __CADENCE_FAIR_BPF_H
#define __CADENCE_FAIR_BPF_H

/*
 * The slice lengths and the lag bound come from the policy
 * (struct cadence_policy): slice_max_ns, slice_min_ns and slice_lag_ns. The
 * presets and their reasoning are in src/policy/presets/.
 */
/*
 * Longest a task can overrun its slice: sched_ext checks slices at the
 * scheduler tick, and 10 ms is one tick at HZ=100, the slowest tick rate.
 */
#define CADENCE_TICK_OVERRUN_NS 10000000ULL
/*
 * Shortest slice a low-weight task is given: 50 us is about ten context
 * switches' worth of time, so even nice 19 does useful work per run.
 */
#define CADENCE_SLICE_FLOOR_NS 50000ULL

static __always_inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/*
 * Longest a queued task should wait for its turn while its queue's CPUs are
 * busy: 1 s. Fairness asks for longer waits only of low-weight tasks under
 * heavy load (see the lag bounds above); past 1 s they run anyway, far
 * inside the kernel's limits (RCU stall warnings at 21 s, the sched_ext
 * watchdog at 30 s, hung tasks at 120 s).
 */
#define CADENCE_MAX_WAIT_NS 1000000000ULL
/*
 * Compare-and-swap attempts to move a frontier up before giving up: CPUs
 * racing on one LLC's frontier each retry only if another moved it, and a
 * lost move is made good by the next take.
 */
#define CADENCE_FRONTIER_TRIES 4

/* A queue's clock: its frontier and the weight of the tasks in its frame. */
struct queue_clock {
	u64 frontier;
	/*
	 * Sum of task_ctx.weight of the runnable tasks whose vtime is in this
	 * queue's frame (task_ctx.counted_in), atomically updated.
	 */
	u64 weight;
};

/* The clock of each CPU's own DSQ, by CPU, and of each LLC's DSQ. */
static struct queue_clock cpu_clocks[CADENCE_MAX_CPUS];
static struct queue_clock llc_clocks[CADENCE_MAX_LLCS];

/*
 * The clock of DSQ @dsq (cpu_dsq() or llc_dsq()), NULL for any other id.
 * The indices are masked for the verifier (masked_index.bpf.h).
 */
static __always_inline struct queue_clock *clock_of(u64 dsq)
{
	u32 idx;

	if (dsq >= CADENCE_LLC_DSQ_BASE && dsq < CADENCE_LLC_DSQ_BASE + CADENCE_MAX_LLCS) {
		idx = dsq - CADENCE_LLC_DSQ_BASE;
		return &llc_clocks[llc_index(idx)];
	}
	if (dsq < CADENCE_MAX_CPUS) {
		idx = dsq;
		return &cpu_clocks[cpu_index(idx)];
	}
	return NULL;
}

/* The frontier of @dsq, 0 for an id without one. */
static __always_inline u64 frontier(u64 dsq)
{
	struct queue_clock *q = clock_of(dsq);

	return q ? q->frontier : 0;
}

/* The CPUs that take from @dsq: all of an LLC's for its queue, else one. */
static __always_inline u64 queue_cpus(u64 dsq)
{
	if (dsq >= CADENCE_LLC_DSQ_BASE && dsq < CADENCE_LLC_DSQ_BASE + CADENCE_MAX_LLCS)
		return llc_cpus(dsq - CADENCE_LLC_DSQ_BASE);
	return 1;
}

/* Whether @cpu takes from @dsq. */
static __always_inline bool queue_served_by(u64 dsq, s32 cpu)
{
	if (dsq >= CADENCE_LLC_DSQ_BASE && dsq < CADENCE_LLC_DSQ_BASE + CADENCE_MAX_LLCS)
		return cpu_llc_id(cpu) == dsq - CADENCE_LLC_DSQ_BASE;
	return dsq == (u64)cpu;
}

/*
 * A CPU took work with @vtime from the head of @dsq: move its frontier up.
 * CPUs racing on one frontier, or with a drift (drift_frontier()), retry a
 * few times; a move still lost is made good by the next take.
 */
static __always_inline void advance_frontier(u64 dsq, u64 vtime)
{
	struct queue_clock *q = clock_of(dsq);
	u64 seen, old;
	int i;

	if (!q)
		return;
	old = q->frontier;
	for (i = 0; i < CADENCE_FRONTIER_TRIES && vtime_before(old, vtime); i++) {
		seen = __sync_val_compare_and_swap(&q->frontier, old, vtime);
		if (seen == old)
			return;
		old = seen;
	}
}

/* No queue yet: a new task, whose vtime starts level with its first queue. */
#define CADENCE_NO_QUEUE (~0ULL)

/*
 * A task's weight for placement.hold (place.bpf.h, main.bpf.c): its PELT
 * util_avg (util.bpf.c), near 1024 for a CPU-bound task at freq_max, low
 * for a short or sleepy one. The hold compares tasks by it, never with a
 * fixed number, so a CPU-bound task at a low frequency still weighs as one.
 */
static __always_inline u64 hold_util(const struct task_ctx *tctx)
{
	return tctx->util.avg.util_avg;
}

/*
 * How long a task must have been runnable without a sleep for
 * placement.hold to count it as lasting load: 8 PELT half-lives (32 ms,
 * LOAD_AVG_PERIOD in kernel/sched/pelt.h), by when an always-running
 * task's util_avg is within 1/256 of where it settles. A task that sleeps
 * sooner is placed again at its next wake-up (select_cpu()), so a running
 * task need neither move for it nor give it its place. Under TCG, short
 * commands forked beside CPU-bound tasks (cat, awk) ran 30-85 ms and
 * reached util 500-830 before exiting: by util alone they weighed as
 * CPU-bound tasks, and CPU-bound tasks moved for them (bench churn runs).
 */
#define CADENCE_LASTING_NS (8 * 32 * 1000 * 1000ULL)

/* Whether a task runnable since @awake_since is lasting load at @now. */
static __always_inline bool runs_lasting(u64 awake_since, u64 now)
{
	return (s64)(now - awake_since) >= (s64)CADENCE_LASTING_NS;
}

/*
 * Whether a task of util @util_l and weight @weight_l (task_ctx.weight) is
 * light beside one of @util_h and @weight_h for placement.hold: less than
 * half its util per unit of weight.
 *
 * Per unit of weight, because CPU-bound tasks that share CPUs fairly have
 * util in proportion to their weights: by util alone, a hog of a cgroup of
 * cpu.weight 100 beside one of 300 (util near 256 and 768, two hogs a CPU)
 * was light, and the heavy hog waited for its own CPU each time the light
 * one took it. With held tasks brought back to the LLC queue's frame by
 * the frontiers' difference when they were held (a build before held
 * tasks kept that frame, move_vtime_frame()), the 300 group got 71.6% of
 * the CPU time by util alone (EEVDF 74.2%), and 72.8-73.7% by util per
 * weight (EEVDF 73.5-74.4%), in
 * case_fair_cgroup_flat_weights, case_cgroup_moves_under_load and
 * diagnostic boots. A task that sleeps or waits keeps less util per weight
 * than a hog beside it, as it kept less util. Both products stay far below
 * 2^64: util is at most 1024, and a weight at most 102400 (a cgroup of
 * cpu.weight 10000 below the root, whose share its tasks split;
 * group_share.bpf.h), 88761 (nice -20) in the root.
 */
static __always_inline bool lighter_per_weight(u64 util_l, u32 weight_l, u64 util_h, u32 weight_h)
{
	return 2 * util_l * weight_h < util_h * weight_l;
}

/*
 * Whether a task running @light's task in place of @heavy's at @now should
 * leave @heavy waiting for its CPU (placement.hold): a short task beside a
 * CPU-bound one, one that has not been runnable long (runs_lasting()) or
 * is light beside it (lighter_per_weight()).
 */
static __always_inline bool displaces_lightly(const struct task_ctx *light,
					      const struct task_ctx *heavy, u64 now)
{
	return !runs_lasting(light->awake_since, now) ||
	       lighter_per_weight(hold_util(light), light->weight, hold_util(heavy), heavy->weight);
}

/* Take @tctx's weight out of the clock it counts in, if any. */
static __always_inline void uncount_weight(struct task_ctx *tctx)
{
	struct queue_clock *q;

	if (tctx->counted_in == CADENCE_NO_QUEUE)
		return;
	q = clock_of(tctx->counted_in);
	if (q)
		__sync_fetch_and_add(&q->weight, -(u64)tctx->counted_weight);
	tctx->counted_in = CADENCE_NO_QUEUE;
}

/*
 * Count runnable @p, of weight @weight, in the clock of the queue its vtime
 * is relative to (moving it from the one it counted in), or in none before
 * its first queue.
 */
static __always_inline void count_weight(struct task_ctx *tctx, u32 weight)
{
	struct queue_clock *q;

	if (tctx->counted_in == tctx->queue && tctx->counted_weight == weight)
		return;
	uncount_weight(tctx);
	q = clock_of(tctx->queue);
	if (!q)
		return;
	__sync_fetch_and_add(&q->weight, weight);
	tctx->counted_in = tctx->queue;
	tctx->counted_weight = weight;
}

/*
 * The weight of @dsq's runnable tasks, at least @weight (the caller's own,
 * counted or not yet).
 */
static __always_inline u64 queue_weight(u64 dsq, u32 weight)
{
	struct queue_clock *q = clock_of(dsq);
	u64 total = q ? q->weight : 0;

	return total > weight ? total : weight;
}

/*
 * A task of @tctx's queue, of weight @weight, ran @delta ns on @cpu: drift
 * the queue's frontier by delta * 1024 / W, as EEVDF's V moves (see the top
 * of this file). Time run on a CPU that does not serve the queue (a task
 * woken onto an idle CPU elsewhere) does not count.
 */
static __always_inline void drift_frontier(const struct task_ctx *tctx, u64 delta, u32 weight,
					   s32 cpu)
{
	struct queue_clock *q;

	if (tctx->counted_in != tctx->queue || !queue_served_by(tctx->queue, cpu))
		return;
	q = clock_of(tctx->queue);
	if (q)
		__sync_fetch_and_add(&q->frontier, delta * CADENCE_NICE_0_WEIGHT /
							   queue_weight(tctx->queue, weight));
}

/*
 * Advance @p's vtime for the CPU time it used on @cpu since it was last
 * charged, and drift its queue's frontier.
 */
static __always_inline void charge_vtime(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					 u64 now)
{
	u64 delta = now - tctx->charged_at;
	u32 weight = tctx->weight;

	if ((s64)delta > 0) {
		tctx->vtime += scale_by_weight_inverse(delta, weight);
		drift_frontier(tctx, delta, weight, cpu);
	}
	tctx->charged_at = now;
}

/*
 * The most vtime a runnable task of @weight may be ahead of its queue's
 * frontier, or behind it without having slept: two slices and a tick.
 */
static __always_inline u64 runnable_lag(const struct cadence_policy *pol, u32 weight)
{
	return scale_by_weight_inverse(2 * pol->slice_max_ns + CADENCE_TICK_OVERRUN_NS, weight);
}

/*
 * The vtime @dsq's frontier drifts in CADENCE_MAX_WAIT_NS while all its
 * CPUs run its tasks, of total weight at least @weight: a task this far
 * ahead of it waits about that long.
 */
static __always_inline u64 max_wait_reach(u64 dsq, u32 weight)
{
	return CADENCE_MAX_WAIT_NS * queue_cpus(dsq) * CADENCE_NICE_0_WEIGHT /
	       queue_weight(dsq, weight);
}

/*
 * Queue no task further ahead of @front than two slices and a tick, nor
 * than it can wait for (max_wait_reach()).
 */
static __always_inline void clamp_leading_vtime(const struct cadence_policy *pol,
						const struct task_struct *p, struct task_ctx *tctx,
						u64 front)
{
	u32 weight = tctx->weight;
	u64 lead = runnable_lag(pol, weight);
	u64 reach = max_wait_reach(tctx->queue, weight);
	u64 ceiling = front + (reach < lead ? reach : lead);

	if (vtime_before(ceiling, tctx->vtime)) {
		tctx->vtime = ceiling;
		if (reach < lead)
			stat_inc(enq_wait_cap);
	}
}

/*
 * Make @tctx's vtime relative to @dsq's frontier, keeping its lag.
 *
 * A task held on its CPU (placement.hold) keeps its vtime in its LLC
 * queue's frame while it waits in its CPU's own queue (enqueue()'s hold
 * path, task_ctx.hold_queued), so it never comes here for that queue.
 * Moved into the own queue's frame instead, it weighed in that queue's
 * clock, and the LLC queue's frontier drifted by 1024 / W with only the
 * tasks not held in W, and a held task came back to the LLC queue by the
 * frontiers' difference, which had not followed its wait. With a hog per
 * CPU in cgroups of cpu.weight 100 and 1000, the 1000 got 68-74% of the
 * CPU time where EEVDF gives 91% (diagnostic boots, 4 CPUs); 82-84% in
 * this frame, with held heads ordered by deadline, 86-87% when a held
 * task goes back to the LLC queue behind a lasting head (queues.bpf.h),
 * and 89.7-90.8% with held tasks in deadline order among themselves
 * (key_behind_tail()).
 */
static __always_inline void move_vtime_frame(struct task_ctx *tctx, u64 dsq)
{
	if (tctx->queue == CADENCE_NO_QUEUE)
		tctx->vtime = frontier(dsq);
	else if (tctx->queue != dsq)
		tctx->vtime = tctx->vtime - frontier(tctx->queue) + frontier(dsq);
	tctx->queue = dsq;
}

/*
 * Make runnable @p's vtime relative to @dsq's frontier, keeping its lag
 * (move_vtime_frame()), and count its weight there.
 */
static __always_inline void rebase_vtime(const struct task_struct *p, struct task_ctx *tctx,
					 u64 dsq)
{
	move_vtime_frame(tctx, dsq);
	count_weight(tctx, tctx->weight);
}

/*
 * Bound @tctx's lag both ways around the frontier of the queue its vtime is
 * relative to, below by the policy's lag if @waking, else by
 * runnable_lag(); true if the lower bound lifted it. A task with no queue
 * yet starts level with its first one (rebase_vtime()).
 */
static __always_inline bool bound_lag(const struct cadence_policy *pol, const struct task_struct *p,
				      struct task_ctx *tctx, bool waking)
{
	u64 front, lag;
	bool lifted;

	if (tctx->queue == CADENCE_NO_QUEUE)
		return false;
	front = frontier(tctx->queue);
	if (waking)
		lag = wake_lag(tctx->sleep_lag, pol->slice_lag_ns, p->nr_cpus_allowed == 1);
	else
		lag = runnable_lag(pol, tctx->weight);
	lifted = lift_behind(&tctx->vtime, front, lag);
	clamp_leading_vtime(pol, p, tctx, front);
	return lifted;
}

/* @tctx's task goes to sleep: note the lag its next wake-up may keep. */
static __always_inline void note_sleep_lag(struct task_ctx *tctx)
{
	if (tctx->queue != CADENCE_NO_QUEUE)
		tctx->sleep_lag = lag_at_sleep(tctx->vtime, frontier(tctx->queue));
}

/*
 * Make @tctx's vtime relative to @dsq, the queue @p is about to go into,
 * and bound its lag both ways; true if the lower bound lifted it.
 */
static __always_inline bool vtime_for_queue(const struct cadence_policy *pol,
					    const struct task_struct *p, struct task_ctx *tctx,
					    u64 dsq)
{
	rebase_vtime(p, tctx, dsq);
	return bound_lag(pol, p, tctx, false);
}

/* Tasks queued in @dsq, 0 if it does not exist. */
static __always_inline u64 dsq_queued(u64 dsq)
{
	s32 n = scx_bpf_dsq_nr_queued(dsq);

	return n > 0 ? n : 0;
}

/*
 * The LLC a busy CPU of @llc should take its next task from, to even out
 * busy LLCs, or -1. Another LLC qualifies when it has at least one more task
 * waiting per CPU than @llc:
 *	queued_there / cpus_there >= queued_here / cpus_here + 1
 * compared multiplied out. One waiting task per CPU is the smallest
 * imbalance that moving a task reduces without reversing it: after the
 * move (this CPU's task queued here, one fewer there) the difference is
 * smaller by 1/cpus_here + 1/cpus_there, so LLCs of two or more CPUs settle
 * where it is below one per CPU, and tasks do not bounce between them.
 * (Between LLCs of one CPU each it does reverse, and three tasks on two
 * such CPUs move at slice ends; the waiting-time rule in dispatch still
 * serves each CPU's own queues in turn.) Nearest index first, as idle
 * stealing goes.
 */
static __always_inline s32 llc_to_balance(u32 llc)
{
	u64 here = dsq_queued(llc_dsq(llc)), cpus_here = llc_cpus(llc);
	u32 i, other;

	bpf_for (i, 1, nr_llcs) {
		u64 there, cpus_there;

		other = (llc + i) % nr_llcs;
		there = dsq_queued(llc_dsq(other));
		cpus_there = llc_cpus(other);
		if (there * cpus_here >= (here + cpus_here) * cpus_there)
			return other;
	}
	return -1;
}

/*
 * Tasks waiting for @cpu, with @own in its own DSQ and @shared in its LLC's:
 * @own plus its share of @shared. Callers that test the queues for another
 * decision too read them once and pass them here: each dsq_queued() costs a
 * lookup of the DSQ by id in the kernel (find_user_dsq()), about 130
 * instructions with the kfunc's own (bench/bpf_lines.py).
 */
static __always_inline u64 nr_waiting_of(s32 cpu, u64 own, u64 shared)
{
	u32 llc = cpu_llc_id(cpu);

	return own + (shared + llc_cpus(llc) - 1) / llc_cpus(llc);
}

/* Tasks waiting for @cpu: its own DSQ plus its share of the LLC's DSQ. */
static __always_inline u64 nr_waiting(s32 cpu)
{
	return nr_waiting_of(cpu, dsq_queued(cpu_dsq(cpu)), dsq_queued(llc_dsq(cpu_llc_id(cpu))));
}

/* The slice of a nice-0 task about to run on a CPU @waiting tasks wait for. */
static __always_inline u64 slice_for_waiting(const struct cadence_policy *pol, u64 waiting)
{
	u64 slice = pol->slice_max_ns / (waiting + 1);

	return slice < pol->slice_min_ns ? pol->slice_min_ns : slice;
}

/* The slice of a nice-0 task about to run on @cpu. */
static __always_inline u64 cpu_slice(const struct cadence_policy *pol, s32 cpu)
{
	return slice_for_waiting(pol, nr_waiting(cpu));
}

/*
 * The slice of @p on a CPU @waiting tasks wait for (nr_waiting()):
 * slice_for_waiting() scaled by @p's nice weight. Not by its weight among
 * all tasks (task_ctx.weight): a cgroup's share comes from its tasks'
 * virtual time, and scaling their slices by it too would only cut them
 * short (four tasks of one cgroup a quarter each), as fair.c does not.
 */
static __always_inline u64 task_slice_waiting(const struct cadence_policy *pol,
					      const struct task_struct *p, u64 waiting)
{
	u64 slice = slice_for_waiting(pol, waiting) * task_weight(p) / CADENCE_NICE_0_WEIGHT;

	if (slice < CADENCE_SLICE_FLOOR_NS)
		return CADENCE_SLICE_FLOOR_NS;
	return slice > pol->slice_max_ns ? pol->slice_max_ns : slice;
}

/* The slice of @p on @cpu (task_slice_waiting()). */
static __always_inline u64 task_slice(const struct cadence_policy *pol, const struct task_struct *p,
				      s32 cpu)
{
	return task_slice_waiting(pol, p, nr_waiting(cpu));
}

#endif /* __CADENCE_FAIR_BPF_H */
