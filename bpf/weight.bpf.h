/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Nice levels to weights and inverse weights, exactly as CFS/EEVDF weighs
 * them: shares (fair.bpf.h) and deadlines (deadline.bpf.h) read the same
 * tables, so they cannot drift apart.
 *
 * p->scx.weight is not used: sched_ext rescales the kernel weight to the
 * cgroup range 1..10000 (nice 0 = 100) with rounding, which turns nice 5's
 * 1024/335 = 3.057 into 100/33 = 3.030. scx_cadence wants the kernel's own
 * ratios, so it reads the nice level and looks the weight up itself.
 */
#ifndef __CADENCE_WEIGHT_BPF_H
#define __CADENCE_WEIGHT_BPF_H

/* MAX_RT_PRIO in include/linux/sched/prio.h: static_prio = 120 + nice. */
#define CADENCE_MAX_RT_PRIO 100
/* Nice levels -20..19. */
#define CADENCE_NR_NICE 40
/* WEIGHT_IDLEPRIO in kernel/sched/sched.h: the weight of SCHED_IDLE tasks. */
#define CADENCE_WEIGHT_IDLEPRIO 3
/* SCHED_IDLE in include/uapi/linux/sched.h. */
#define CADENCE_SCHED_IDLE 5

/*
 * sched_prio_to_weight[] from kernel/sched/core.c, indexed by nice + 20.
 * Each step is ~1.25x, so one nice level moves ~10% of CPU time between
 * two competing tasks; nice 0 is 1024.
 */
static const u32 cadence_prio_to_weight[CADENCE_NR_NICE] = {
	/* -20 */ 88761, 71755, 56483, 46273, 36291,
	/* -15 */ 29154, 23254, 18705, 14949, 11916,
	/* -10 */ 9548,	 7620,	6100,  4904,  3906,
	/*  -5 */ 3121,	 2501,	1991,  1586,  1277,
	/*   0 */ 1024,	 820,	655,   526,   423,
	/*   5 */ 335,	 272,	215,   172,   137,
	/*  10 */ 110,	 87,	70,    56,    45,
	/*  15 */ 36,	 29,	23,    18,    15,
};

/* Nice 0's index into the nice tables. */
#define CADENCE_NICE_0_INDEX 20

/*
 * @p's index into the nice tables (nice + 20), nice 0's for a static_prio
 * outside them: both tables below are read through it, so a weight and its
 * inverse always belong to the same nice level.
 */
static __always_inline u32 nice_index(const struct task_struct *p)
{
	u32 idx = (u32)(p->static_prio - CADENCE_MAX_RT_PRIO);

	return idx < CADENCE_NR_NICE ? idx : CADENCE_NICE_0_INDEX;
}

/* The kernel weight of @p: 15 (nice 19) .. 88761 (nice -20), 3 for SCHED_IDLE. */
static __always_inline u32 task_weight(const struct task_struct *p)
{
	if (p->policy == CADENCE_SCHED_IDLE)
		return CADENCE_WEIGHT_IDLEPRIO;
	return cadence_prio_to_weight[nice_index(p)];
}

/*
 * sched_prio_to_wmult[] from kernel/sched/core.c, indexed by nice + 20:
 * 2^32 / sched_prio_to_weight[] (above), as the kernel rounds it;
 * deadline.bpf.h divides by a weight with it, as fair.c does.
 */
static const u32 cadence_prio_to_wmult[CADENCE_NR_NICE] = {
	/* -20 */ 48388,     59856,	76040,	   92818,     118348,
	/* -15 */ 147320,    184698,	229616,	   287308,    360437,
	/* -10 */ 449829,    563644,	704093,	   875809,    1099582,
	/*  -5 */ 1376151,   1717300,	2157191,   2708050,   3363326,
	/*   0 */ 4194304,   5237765,	6557202,   8165337,   10153587,
	/*   5 */ 12820798,  15790321,	19976592,  24970740,  31350126,
	/*  10 */ 39045157,  49367440,	61356676,  76695844,  95443717,
	/*  15 */ 119304647, 148102320, 186737708, 238609294, 286331153,
};
/* WMULT_IDLEPRIO in kernel/sched/sched.h: 2^32 / WEIGHT_IDLEPRIO (3). */
#define CADENCE_WMULT_IDLEPRIO 1431655765U

/* The kernel's inverse weight of @p, for calc_delta_fair(). */
static __always_inline u32 task_wmult(const struct task_struct *p)
{
	if (p->policy == CADENCE_SCHED_IDLE)
		return CADENCE_WMULT_IDLEPRIO;
	return cadence_prio_to_wmult[nice_index(p)];
}

/*
 * The task's weight among all tasks, and its inverse, into @tctx: its nice
 * weight in the root cgroup or with @on false (fairness.cgroups off), which
 * costs no call; its share of its cgroups' weight otherwise (cgroup.bpf.c).
 */
static __always_inline void group_refresh_weight(const struct task_struct *p, struct task_ctx *tctx,
						 bool on)
{
	if (on && tctx->cgroup_id) {
		__group_refresh_weight(p, tctx);
		return;
	}
	tctx->weight = task_weight(p);
	tctx->wmult = task_wmult(p);
}

/* Virtual time for @delta_ns of CPU time at @weight: nice 0 advances 1:1. */
static __always_inline u64 scale_by_weight_inverse(u64 delta_ns, u32 weight)
{
	return delta_ns * CADENCE_NICE_0_WEIGHT / (weight ? weight : 1);
}

#endif /* __CADENCE_WEIGHT_BPF_H */
