/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cpufreq performance targets: the types and constants shared by BPF
 * (cpufreq_target.bpf.h, cpufreq.bpf.c), the syscall test program
 * (cpufreq_test.bpf.c) and the Rust loader, which sees them through bindgen
 * via intf.h. Plain C only.
 */
#ifndef __CADENCE_INTF_CPUFREQ_H
#define __CADENCE_INTF_CPUFREQ_H

enum cadence_cpufreq_consts {
	/*
	 * SCX_CPUPERF_ONE (kernel/sched/ext.c): the highest target
	 * scx_bpf_cpuperf_set() accepts; anything above ends the scheduler.
	 */
	CADENCE_CPUFREQ_MAX = 1024,
	/* The lowest target: schedutil then picks the policy's minimum frequency. */
	CADENCE_CPUFREQ_MIN = 0,
	/*
	 * schedutil's own margin: map_util_perf() returns util + util / 4, so
	 * a total headroom of 125% means passing util through unchanged.
	 */
	CADENCE_SCHEDUTIL_MARGIN_PCT = 125,
	/*
	 * IOWAIT_BOOST_MIN (kernel/sched/cpufreq_schedutil.c):
	 * SCHED_CAPACITY_SCALE / 8, where schedutil's iowait boost starts.
	 */
	CADENCE_IOWAIT_BOOST_MIN = 1024 / 8,
	/* Target histogram: 16 buckets of 64 cpuperf units (SCX_CPUPERF_ONE = 1024); 1024 is in the
	   last. */
	CADENCE_CPUFREQ_HIST_SHIFT = 6,
	CADENCE_CPUFREQ_HIST_BUCKETS = 16,
	/* Steps one syscall test run replays (cpufreq_test.bpf.c). */
	CADENCE_CPUFREQ_TEST_STEPS = 64,
};

/* How a CPU's cpufreq target is chosen (the policy's cpufreq.mode). */
enum cadence_cpufreq_mode {
	/* From frequency-invariant util, with headroom and the deadband. */
	CADENCE_CPUFREQ_MODE_UTIL = 0,
	/* Always CADENCE_CPUFREQ_MAX. */
	CADENCE_CPUFREQ_MODE_PERFORMANCE = 1,
	/* Always CADENCE_CPUFREQ_MIN. */
	CADENCE_CPUFREQ_MODE_POWERSAVE = 2,
};

/*
 * What one evaluation of a CPU's target decided. The first stage that
 * stops a request is the one counted.
 */
enum cadence_cpufreq_verdict {
	/* A request was issued: scx_bpf_cpuperf_set(). */
	CADENCE_CPUFREQ_ISSUED = 0,
	/* The target is the one in force: nothing to ask. */
	CADENCE_CPUFREQ_SAME = 1,
	/* The floor turned a new target into the minimum already in force. */
	CADENCE_CPUFREQ_DEADBAND = 2,
	/* The target moved by less than the band. */
	CADENCE_CPUFREQ_HYSTERESIS = 3,
	/* A lower target has not yet held for the hold time. */
	CADENCE_CPUFREQ_HOLD = 4,
	/* The last request was less than the interval ago. */
	CADENCE_CPUFREQ_RATE = 5,
};

/*
 * The value of the per-CPU `cpu_cpufreq` map: where this CPU's target stands
 * and what the deadband did. Written only by its own CPU.
 */
struct cadence_cpu_cpufreq {
	/* scx_bpf_now() of the last request issued; 0: none yet. */
	u64 last_at;
	/* Since when a lower target has been asked for; 0: none pending. */
	u64 down_since;
	/* When the iowait boost was last updated (legacy mode only). */
	u64 boost_at;
	/* The target in force: the last request, else the kernel's 1024. */
	u32 target;
	/* The util (0..1024, boost included) the last evaluation saw. */
	u32 util;
	/* schedutil-style iowait boost (legacy mode only), 0..1024. */
	u32 boost;
	/* An iowait wake-up raised the boost since it was last applied. */
	u32 boost_pending;
	/* 1 once target holds the kernel's starting value or a request. */
	u32 init;
	u32 __pad;
	/* Requests issued. */
	u64 issued;
	/* Evaluations whose request was stopped, by stage. */
	u64 supp_deadband;
	u64 supp_hysteresis;
	u64 supp_hold;
	u64 supp_rate;
	/* Evaluations where the legacy iowait boost raised util. */
	u64 iowait_boosts;
	/* Requests for the floor issued as the CPU went idle (cpufreq_idle()). */
	u64 idle_floor;
	/* Issued targets: hist[t >> CADENCE_CPUFREQ_HIST_SHIFT], 1024 in the last. */
	u64 hist[CADENCE_CPUFREQ_HIST_BUCKETS];
};

/* Test only: a util the cpufreq path reads instead of PELT (per CPU). */
struct cadence_util_inject {
	u64 util;
};

/*
 * One step of a syscall test run: @delta_ns pass, then an evaluation, or
 * the CPU goes idle.
 */
struct cadence_cpufreq_step {
	u64 delta_ns;
	/* The util the evaluation sees (before any boost). */
	u32 util;
	/* 1: an iowait wake-up came since the last evaluation. */
	u32 iowait;
	/* 1: not an evaluation; the CPU goes idle (cpufreq_idle()). */
	u32 idle;
	u32 __pad;
};

/* The context of one cpufreq test run: the policy and steps in, verdicts out. */
struct cadence_cpufreq_test {
	struct cadence_policy policy;
	u64 start_ns;
	/* TICK_NSEC of the modelled kernel (legacy iowait boost reset). */
	u64 tick_ns;
	u32 nr_steps;
	u32 __pad;
	struct cadence_cpufreq_step steps[CADENCE_CPUFREQ_TEST_STEPS];
	/* The CPU's state: in as the run starts, out as it ends. */
	struct cadence_cpu_cpufreq state;
	/* After each step: the verdict and the target in force. */
	u32 verdict[CADENCE_CPUFREQ_TEST_STEPS];
	u32 target[CADENCE_CPUFREQ_TEST_STEPS];
	s32 error;
	u32 __pad2;
};

#endif /* __CADENCE_INTF_CPUFREQ_H */
