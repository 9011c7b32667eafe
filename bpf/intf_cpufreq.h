/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cpufreq performance targets: the types and constants shared by BPF
 * (cpufreq_target.bpf.h, cpufreq.bpf.c), the syscall test program
 * (cpufreq_replay.bpf.c) and the Rust loader, which sees them through bindgen
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
	/*
	 * Steps one run of cpufreq_replay.bpf.c takes: its copy-back of each
	 * per-step array stays an unrolled loop of constant offsets.
	 */
	CADENCE_CPUFREQ_REPLAY_STEPS = 64,
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
	/* How many verdicts there are. */
	CADENCE_CPUFREQ_NR_VERDICTS = 6,
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

/*
 * `cpufreq record`: the ring buffer's two kinds of record, and the step
 * kinds its counts are kept by.
 */
enum cadence_cpufreq_record_consts {
	/* A CPU joins the recording: its state and the policy's knobs. */
	CADENCE_CPUFREQ_EVENT_JOIN = 1,
	/* One evaluation, or the CPU going idle, and its verdict. */
	CADENCE_CPUFREQ_EVENT_STEP = 2,
	/* Step kinds: cpufreq_evaluate() (busy) and cpufreq_idle(). */
	CADENCE_CPUFREQ_STEP_BUSY = 0,
	CADENCE_CPUFREQ_STEP_IDLE = 1,
	CADENCE_CPUFREQ_STEP_KINDS = 2,
};

/*
 * The policy's fields cpufreq_target.bpf.h reads (struct cadence_policy's
 * cpufreq_*), as a recording saw them.
 */
struct cadence_cpufreq_knobs {
	u32 mode;
	u32 headroom_pct;
	u32 scale;
	u32 floor_util;
	u32 band;
	u32 iowait_boost;
	u64 interval_ns;
	u64 down_hold_ns;
};

/*
 * A CPU joins a recording, at its first step in it or at the first after a
 * policy change: its state before that step, and the knobs it runs under.
 */
struct cadence_cpufreq_join {
	u32 kind;
	u32 cpu;
	/* TICK_NSEC of the running kernel (the legacy boost's reset). */
	u64 tick_ns;
	struct cadence_cpufreq_knobs knobs;
	struct cadence_cpu_cpufreq state;
};

/* One recorded step: its inputs, and what the scheduler decided. */
struct cadence_cpufreq_step_event {
	u32 kind;
	u32 cpu;
	/* scx_bpf_now() of the step. */
	u64 now;
	/* The CPU's util the evaluation saw (before any boost); 0 idle. */
	u32 util;
	/*
	 * 1: an iowait wake-up came; seen only while the legacy boost is on
	 * (cpufreq_runnable()), so a trace recorded without it has none.
	 */
	u32 iowait;
	/* 1: the CPU went idle (cpufreq_idle()); else an evaluation. */
	u32 idle;
	/* enum cadence_cpufreq_verdict. */
	u32 verdict;
	/* The target in force after the step. */
	u32 target;
	/* The CPU's frequency ratio then, 1024 = freq_max (0 idle: not read). */
	u32 freq_scale;
};

/* The value of the per-CPU `cpufreq_record` map: this CPU in a recording. */
struct cadence_cpufreq_record {
	/* The recording generation this CPU joined (odd while recording). */
	u64 record_gen;
	/* The knobs of its last join: a change makes it join again. */
	struct cadence_cpufreq_knobs knobs;
	/* Records the full ring buffer refused. */
	u64 drops;
	/* Steps recorded in this generation, by kind and verdict. */
	u64 n[CADENCE_CPUFREQ_STEP_KINDS][CADENCE_CPUFREQ_NR_VERDICTS];
};

/*
 * The value of the `cpufreq_ctl` map (one element), written by `cpufreq
 * record`: each CPU joins at its next step while record_gen is odd.
 */
struct cadence_cpufreq_ctl {
	u64 record_gen;
};

/* Test only: a util the cpufreq path reads instead of PELT (per CPU). */
struct cadence_util_inject {
	u64 util;
};

/*
 * One step of a replay (cpufreq_replay.bpf.c): @delta_ns pass, then an
 * evaluation, or the CPU goes idle.
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

/* The context of one replay run: the policy and steps in, verdicts out. */
struct cadence_cpufreq_replay {
	struct cadence_policy policy;
	u64 start_ns;
	/* TICK_NSEC of the modelled kernel (legacy iowait boost reset). */
	u64 tick_ns;
	u32 nr_steps;
	u32 __pad;
	struct cadence_cpufreq_step steps[CADENCE_CPUFREQ_REPLAY_STEPS];
	/* The CPU's state: in as the run starts, out as it ends. */
	struct cadence_cpu_cpufreq state;
	/*
	 * After each step: the verdict, the target in force, and the target
	 * its util asks for before the deadband (cpufreq_target()).
	 */
	u32 verdict[CADENCE_CPUFREQ_REPLAY_STEPS];
	u32 target[CADENCE_CPUFREQ_REPLAY_STEPS];
	u32 want[CADENCE_CPUFREQ_REPLAY_STEPS];
	s32 error;
	u32 __pad2;
};

#endif /* __CADENCE_INTF_CPUFREQ_H */
