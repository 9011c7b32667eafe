/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Weighted fairness: every task carries a virtual time that advances by
 * delta_ns * 1024 / weight while it runs (weight.bpf.h), and DSQs are ordered
 * by it, so over time CPU shares converge to the weight ratios, as in
 * CFS/EEVDF. vtime_now, the frontier, is the largest vtime a CPU took from
 * the head of a queue (or kept running because no queued task was ahead of
 * it): it follows the earliest queued work. Tasks that start on an idle CPU
 * without queueing do not move it: if they did, a few of them could push it
 * far ahead of the queued tasks, and a waking task placed near the frontier
 * would wait behind all of them. (A queued task that waits 21 s can be the
 * RCU grace-period kthread, and then the kernel ends the scheduler for an
 * RCU stall.) Lag is bounded both ways:
 *   - a task that slept comes back at most slice_lag_ns behind the frontier,
 *     so sleeping banks no more than one lag's worth of priority;
 *   - no task is queued further ahead of it than two full slices plus one
 *     tick of overrun (sched_ext enforces slices at the tick), scaled by the
 *     task's weight, as EEVDF's update_entity_lag() bounds lag. That bound
 *     is never reached by tasks that only run their slices, so weights stay
 *     exact; it caps what a task can carry over from anything else.
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

/* The frontier: the largest vtime taken from the head of a queue. */
static u64 vtime_now;

/* A CPU took work with @vtime from a queue head: move the frontier up. */
static __always_inline void advance_frontier(u64 vtime)
{
	if (vtime_before(vtime_now, vtime))
		vtime_now = vtime;
}

struct task_ctx {
	/* The task's virtual time, the source of truth for DSQ ordering. */
	u64 vtime;
	/* When the running task was last charged, ns (scx_bpf_now()). */
	u64 charged_at;
	/* When the current run (or slice refill) started, ns. */
	u64 run_start;
	/* Utilization (util.bpf.h). */
	struct cadence_task_util util;
	/*
	 * Woke from iowait and not yet run (cpufreq.bpf.h); recorded only
	 * while the policy's legacy iowait boost is on.
	 */
	bool iowait_wake;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static __always_inline struct task_ctx *lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

/* Advance @p's vtime for the CPU time it used since it was last charged. */
static __always_inline void charge_vtime(struct task_struct *p, struct task_ctx *tctx, u64 now)
{
	u64 delta = now - tctx->charged_at;

	if ((s64)delta > 0)
		tctx->vtime += scale_by_weight_inverse(delta, task_weight(p));
	tctx->charged_at = now;
}

/* Limit the credit a task can bring back from sleep to the policy's lag. */
static __always_inline void clamp_sleeper_vtime(const struct cadence_policy *pol,
						struct task_ctx *tctx)
{
	u64 floor = vtime_now - pol->slice_lag_ns;

	if (vtime_now > pol->slice_lag_ns && vtime_before(tctx->vtime, floor))
		tctx->vtime = floor;
}

/* Queue no task further ahead of the frontier than two slices and a tick. */
static __always_inline void clamp_leading_vtime(const struct cadence_policy *pol,
						const struct task_struct *p, struct task_ctx *tctx)
{
	u64 lead = scale_by_weight_inverse(2 * pol->slice_max_ns + CADENCE_TICK_OVERRUN_NS,
					   task_weight(p));
	u64 ceiling = vtime_now + lead;

	if (vtime_before(ceiling, tctx->vtime))
		tctx->vtime = ceiling;
}

/* Tasks waiting for @cpu: its own DSQ plus its share of the LLC's DSQ. */
static __always_inline u64 nr_waiting(s32 cpu)
{
	u32 llc = cpu_llc_id(cpu);
	s32 own = scx_bpf_dsq_nr_queued(cpu_dsq(cpu));
	s32 shared = scx_bpf_dsq_nr_queued(llc_dsq(llc));

	if (own < 0)
		own = 0;
	if (shared < 0)
		shared = 0;
	return (u64)own + ((u64)shared + llc_cpus(llc) - 1) / llc_cpus(llc);
}

/* The slice of a nice-0 task about to run on @cpu. */
static __always_inline u64 cpu_slice(const struct cadence_policy *pol, s32 cpu)
{
	u64 slice = pol->slice_max_ns / (nr_waiting(cpu) + 1);

	return slice < pol->slice_min_ns ? pol->slice_min_ns : slice;
}

/* The slice of @p on @cpu: cpu_slice() scaled by @p's weight. */
static __always_inline u64 task_slice(const struct cadence_policy *pol, const struct task_struct *p,
				      s32 cpu)
{
	u64 slice = cpu_slice(pol, cpu) * task_weight(p) / CADENCE_NICE_0_WEIGHT;

	if (slice < CADENCE_SLICE_FLOOR_NS)
		return CADENCE_SLICE_FLOOR_NS;
	return slice > pol->slice_max_ns ? pol->slice_max_ns : slice;
}

#endif /* __CADENCE_FAIR_BPF_H */
