/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and constants shared by the BPF scheduler and the Rust loader.
 * The loader sees this file through bindgen (build.rs), so keep it plain C:
 * no BPF helpers, no kernel types.
 */
#ifndef __CADENCE_INTF_H
#define __CADENCE_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum cadence_consts {
	/*
	 * Upper bound on nr_cpu_ids that the BPF arrays are sized for. The
	 * loader refuses to start on a larger machine instead of truncating.
	 */
	CADENCE_MAX_CPUS = 1024,
	/* Upper bound on the number of last-level caches (one DSQ each). */
	CADENCE_MAX_LLCS = 256,

	/*
	 * DSQ ids. Each CPU owns the DSQ whose id is its CPU number (tasks that
	 * may run only there); each LLC owns CADENCE_LLC_DSQ_BASE + its index.
	 * User DSQ ids only need bit 63 clear, so both ranges are free to use.
	 */
	CADENCE_LLC_DSQ_BASE = 1 << 16,

	/*
	 * Weight of a nice-0 task: sched_prio_to_weight[20] in
	 * kernel/sched/core.c (NICE_0_LOAD without the fixed-point shift).
	 * Virtual time advances by delta_ns * NICE_0_WEIGHT / weight.
	 */
	CADENCE_NICE_0_WEIGHT = 1024,
};

/*
 * Per-CPU event counters, one slot each, read by the loader for the stats.
 * Keep stat_names in src/stats.rs in the same order.
 */
enum cadence_stat {
	/* select_cpu(): where a waking task was placed. */
	CADENCE_STAT_SELECT_PREV_CORE, /* prev CPU, its whole SMT core idle */
	CADENCE_STAT_SELECT_LLC_CORE,  /* a fully idle core in prev's LLC */
	CADENCE_STAT_SELECT_ANY_CORE,  /* a fully idle core elsewhere */
	CADENCE_STAT_SELECT_PREV_CPU,  /* prev CPU idle, sibling busy */
	CADENCE_STAT_SELECT_LLC_CPU,   /* an idle CPU in prev's LLC */
	CADENCE_STAT_SELECT_ANY_CPU,   /* an idle CPU elsewhere */
	CADENCE_STAT_SELECT_BUSY,      /* no idle CPU: left to enqueue() */
	/* enqueue(): where a runnable task was queued. */
	CADENCE_STAT_ENQ_PINNED, /* per-CPU DSQ: one allowed CPU */
	CADENCE_STAT_ENQ_IDLE,	 /* straight to an idle CPU */
	CADENCE_STAT_ENQ_LLC,	 /* the LLC's shared vtime DSQ */
	/* dispatch(): where the next task came from. */
	CADENCE_STAT_DISPATCH_CPU,   /* this CPU's own DSQ */
	CADENCE_STAT_DISPATCH_LLC,   /* this CPU's LLC DSQ */
	CADENCE_STAT_DISPATCH_STEAL, /* another LLC's DSQ */
	CADENCE_STAT_DISPATCH_KEEP,  /* prev kept running: it was first */
	/* tick(): slices cut short because others were waiting. */
	CADENCE_STAT_TICK_PREEMPT,
	CADENCE_NR_STATS,
};

/* The value of the per-CPU stats map (one element, BPF_MAP_TYPE_PERCPU_ARRAY). */
struct cadence_cpu_stats {
	u64 cnt[CADENCE_NR_STATS];
};

#endif /* __CADENCE_INTF_H */
