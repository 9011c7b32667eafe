/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Utilization tracking (PELT) and CPU frequency: the types and constants
 * shared by BPF (pelt.bpf.h, freq_ratio.bpf.h, util.bpf.c), the syscall test
 * programs (pelt_test.bpf.c) and the Rust loader, which sees them through
 * bindgen via intf.h. Plain C only.
 */
#ifndef __CADENCE_INTF_UTIL_H
#define __CADENCE_INTF_UTIL_H

enum cadence_pelt_consts {
	/* SCHED_CAPACITY_SHIFT/SCALE (include/linux/sched.h): 1024 = 100%. */
	CADENCE_CAP_SHIFT = 10,
	CADENCE_CAP_SCALE = 1 << 10,
	/*
	 * LOAD_AVG_PERIOD (kernel/sched/sched-pelt.h): y^32 = 1/2, so a signal
	 * halves every 32 periods of 1024 * 1024 ns (about 33.5 ms).
	 */
	CADENCE_LOAD_AVG_PERIOD = 32,
	/*
	 * LOAD_AVG_MAX (sched-pelt.h): the fixed point of
	 * max = (max * y_inv >> 32) + 1024 in integer math, i.e. the largest
	 * sum 1024-per-period contributions reach. src/pelt/ recomputes it.
	 */
	CADENCE_LOAD_AVG_MAX = 47742,
	/* decay_load() returns 0 past LOAD_AVG_PERIOD * 63 periods (pelt.c). */
	CADENCE_PELT_DECAY_CUTOFF = 32 * 63,
	/* util_est (kernel/sched/fair.c): new samples weigh 1/4 ... */
	CADENCE_UTIL_EST_WEIGHT_SHIFT = 2,
	/* ... and changes under 1% of capacity are ignored (UTIL_EST_MARGIN). */
	CADENCE_UTIL_EST_MARGIN = 1024 / 100,
	/* Steps one syscall test run replays (pelt_test.bpf.c). */
	CADENCE_PELT_TEST_STEPS = 64,
	/* CPUs and callbacks of one glue test run (pelt_test.bpf.c). */
	CADENCE_GLUE_TEST_CPUS = 2,
	CADENCE_GLUE_TEST_EVENTS = 16,
	/* decay_load() calls one decay test run makes (pelt_test.bpf.c). */
	CADENCE_DECAY_TEST_CALLS = 64,
};

/* UTIL_AVG_UNCHANGED (kernel/sched/pelt.h): util_avg not updated since enqueue. */
#define CADENCE_UTIL_AVG_UNCHANGED 0x80000000u

/*
 * struct sched_avg (include/linux/sched.h), field for field. Times are in
 * the PELT clock of the CPU the signal belongs to (ns).
 */
struct cadence_pelt_avg {
	u64 last_update_time;
	u64 load_sum;
	u64 runnable_sum;
	u32 util_sum;
	u32 period_contrib;
	u64 load_avg;
	u64 runnable_avg;
	u64 util_avg;
	/* util_est with CADENCE_UTIL_AVG_UNCHANGED as its top bit. */
	u32 util_est;
	u32 __pad;
};

/*
 * A CPU's PELT clock (rq->clock_pelt, rq->lost_idle_time in the kernel):
 * it runs at capacity x frequency while the CPU is busy and catches up with
 * the task clock when the CPU goes idle, minus the idle time that a
 * saturated CPU never had ("lost"). Signals use clock - lost_idle_time.
 */
struct cadence_pelt_clock {
	u64 clock_pelt;
	u64 lost_idle_time;
	/* The clock_task (here: scx_bpf_now()) at the last update. */
	u64 clock_task;
};

/* Where a CPU's frequency ratio comes from; reported per CPU. */
enum cadence_freq_source {
	/* No source: the ratio stays 1024 and the stats say so. */
	CADENCE_FREQ_NONE = 0,
	/* APERF/MPERF through the msr PMU's perf events. */
	CADENCE_FREQ_APERF = 1,
	/* scx_bpf_cpuperf_cur(), rescaled to freq_max. */
	CADENCE_FREQ_CPUPERF = 2,
	/* Test only: APERF/MPERF values written into the freq_inject map. */
	CADENCE_FREQ_INJECT = 3,
};

/* One test-only APERF/MPERF reading (the per-CPU freq_inject map). */
struct cadence_freq_inject {
	u64 aperf;
	u64 mperf;
};

/*
 * The value of the per-CPU `cpu_util` map: this CPU's PELT clock, its busy
 * signal, and its frequency ratio. Written only by its own CPU.
 */
struct cadence_cpu_util {
	struct cadence_pelt_clock clock;
	/* PELT of "a sched_ext task runs here" (like rq->avg_rt). */
	struct cadence_pelt_avg avg;
	/* Last APERF/MPERF readings, for the per-tick deltas. */
	u64 aperf;
	u64 mperf;
	/* Ticks that computed a ratio, and those clamped at 1024 because the
	 * CPU ran above freq_max (the seed's "known limitation"). */
	u64 freq_ticks;
	u64 freq_clamped;
	/* Ticks whose reading failed (overflow, zero, helper error). */
	u64 freq_errors;
	/* Current frequency ratio: 1024 = freq_max. */
	u32 freq_scale;
	/* Capacity of this CPU: scx_bpf_cpuperf_cap(), 1024 = biggest. */
	u32 cpu_cap;
	/* enum cadence_freq_source of the last ratio. */
	u32 freq_source;
	/* 1 while a task runs here (between running and going idle). */
	u32 busy;
};

/* A task's PELT signal and where it stands (part of its task context). */
struct cadence_task_util {
	struct cadence_pelt_avg avg;
	/* scx_bpf_now() at the last update, to carry the time across CPUs. */
	u64 updated_at;
	/* scx_bpf_now() when the task last woke up. */
	u64 woke_at;
	/* The CPU whose PELT clock avg.last_update_time is in; -1: none yet. */
	s32 cpu;
	u32 __pad;
};

/*
 * What one step of a syscall test run does, after its time has passed. The
 * run models one CPU and one task: asleep (CPU idle), waiting (another task
 * keeps the CPU busy) or running.
 */
enum cadence_pelt_step_op {
	/* The task keeps its state. */
	CADENCE_STEP_STAY = 0,
	/* The task sleeps (util_est update); the CPU goes idle. */
	CADENCE_STEP_SLEEP = 1,
	/* The task wakes and waits for the CPU. */
	CADENCE_STEP_WAKE = 2,
	/* The task starts running. */
	CADENCE_STEP_RUN = 3,
	/* The task stops running but stays runnable: another task runs. */
	CADENCE_STEP_PREEMPT = 4,
};

enum cadence_pelt_state {
	CADENCE_TASK_ASLEEP = 0,
	CADENCE_TASK_WAITING = 1,
	CADENCE_TASK_RUNNING = 2,
};

/* One step: @delta_ns pass at @freq_scale and @cpu_cap, then @op happens. */
struct cadence_pelt_step {
	u64 delta_ns;
	u32 freq_scale;
	u32 cpu_cap;
	u32 op;
	u32 __pad;
};

/*
 * The context of one syscall test run: the steps in, and the resulting
 * clock and signals (plus util after each step) out.
 */
struct cadence_pelt_test {
	u64 start_ns;
	u32 nr_steps;
	/* The task's state before the first step (enum cadence_pelt_state). */
	u32 start_state;
	struct cadence_pelt_step steps[CADENCE_PELT_TEST_STEPS];
	struct cadence_pelt_clock clock;
	struct cadence_pelt_avg cpu;
	struct cadence_pelt_avg task;
	u32 task_util[CADENCE_PELT_TEST_STEPS];
	s32 error;
	u32 __pad;
};

/* Test only: decay_load(val[i], n[i]) into out[i], for i < nr. */
struct cadence_decay_test {
	u64 val[CADENCE_DECAY_TEST_CALLS];
	u64 n[CADENCE_DECAY_TEST_CALLS];
	u64 out[CADENCE_DECAY_TEST_CALLS];
	u32 nr;
	s32 error;
};

/* Test only: the callback one event of a glue test run stands for. */
enum cadence_glue_op {
	/* ops.runnable(); arg 1: a wake-up (SCX_ENQ_WAKEUP). */
	CADENCE_GLUE_RUNNABLE = 0,
	/* ops.running(). */
	CADENCE_GLUE_RUNNING = 1,
	/* ops.stopping(); arg: its runnable argument. */
	CADENCE_GLUE_STOPPING = 2,
	/* ops.tick() (always on the task's CPU). */
	CADENCE_GLUE_TICK = 3,
	/* ops.update_idle() of CPU @here; arg: its idle argument. */
	CADENCE_GLUE_IDLE = 4,
	/* ops.quiescent(); arg 1: a sleep (SCX_DEQ_SLEEP). */
	CADENCE_GLUE_QUIESCENT = 5,
};

/* One callback: on CPU @here at its clock @now, for a task on CPU @cpu. */
struct cadence_glue_event {
	u64 now;
	u32 op;
	s32 here;
	s32 cpu;
	u32 arg;
};

/*
 * The context of one glue test run: two CPUs' util state and one task's,
 * in as the run starts and out as it ends, and the callbacks in between.
 */
struct cadence_glue_test {
	struct cadence_cpu_util cpus[CADENCE_GLUE_TEST_CPUS];
	struct cadence_task_util task;
	/* The task's weight (load_avg only). */
	u64 weight;
	u32 nr_events;
	s32 error;
	struct cadence_glue_event events[CADENCE_GLUE_TEST_EVENTS];
	/* After each event: the task's util_avg, and util_est with its flag. */
	u64 util[CADENCE_GLUE_TEST_EVENTS];
	u32 util_est[CADENCE_GLUE_TEST_EVENTS];
};

/*
 * One APERF/MPERF tick of freq_ratio_math.bpf.h on the host (pelt_test.bpf.c,
 * freq_run): counter deltas in, the CPU's ratio and counters out.
 */
struct cadence_freq_test {
	u64 acnt;
	u64 mcnt;
	u32 freq_max_ratio;
	u32 cpu_cap;
	s32 cpu;
	u32 freq_scale;
	u64 freq_ticks;
	u64 freq_clamped;
	/* 1: freq_ratio_from_counts() gave no ratio. */
	u32 no_ratio;
	s32 error;
};

#endif /* __CADENCE_INTF_UTIL_H */
