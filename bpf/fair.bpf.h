/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Weighted fairness: every task carries a virtual time that advances by
 * delta_ns * 1024 / weight while it runs (weight.bpf.h), and DSQs are ordered
 * by it, so over time CPU shares converge to the weight ratios, as in
 * CFS/EEVDF. A task that slept may come back at most slice_lag_ns of virtual
 * time behind the most advanced running task, so sleeping banks no more than
 * one lag's worth of priority.
 *
 * Slices shrink as load grows: slice_max_ns divided among the tasks waiting
 * for this CPU, never below slice_min_ns, like EEVDF's latency period.
 */
#ifndef __CADENCE_FAIR_BPF_H
#define __CADENCE_FAIR_BPF_H

/*
 * Longest slice, for a CPU nobody else waits for. 3 ms is EEVDF's base slice
 * on machines with 8 or more CPUs (sysctl_sched_base_slice 0.75 ms times
 * 1 + ilog2(min(nr_cpus, 8)) = 4, kernel/sched/fair.c).
 */
const volatile u64 slice_max_ns = 3000000;
/*
 * Shortest slice however many tasks wait: 0.25 ms bounds the context-switch
 * overhead at a few percent even under heavy overload.
 */
const volatile u64 slice_min_ns = 250000;
/* How far behind the vtime frontier a waking task may start (one slice). */
const volatile u64 slice_lag_ns = 3000000;

/* The largest virtual time any task has started running with. */
static u64 vtime_now;

struct task_ctx {
	/* The task's virtual time, the source of truth for DSQ ordering. */
	u64 vtime;
	/* When the running task was last charged, ns (scx_bpf_now()). */
	u64 charged_at;
	/* When the current run (or slice refill) started, ns. */
	u64 run_start;
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

static __always_inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/* Advance @p's vtime for the CPU time it used since it was last charged. */
static __always_inline void charge_vtime(struct task_struct *p, struct task_ctx *tctx, u64 now)
{
	u64 delta = now - tctx->charged_at;

	if ((s64)delta > 0)
		tctx->vtime += scale_by_weight_inverse(delta, task_weight(p));
	tctx->charged_at = now;
}

/* Limit the credit a task can bring back from sleep to slice_lag_ns. */
static __always_inline void clamp_sleeper_vtime(struct task_ctx *tctx)
{
	u64 floor = vtime_now - slice_lag_ns;

	if (vtime_now > slice_lag_ns && vtime_before(tctx->vtime, floor))
		tctx->vtime = floor;
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

/* The slice for a task about to run on @cpu. */
static __always_inline u64 cpu_slice(s32 cpu)
{
	u64 slice = slice_max_ns / (nr_waiting(cpu) + 1);

	return slice < slice_min_ns ? slice_min_ns : slice;
}

#endif /* __CADENCE_FAIR_BPF_H */
