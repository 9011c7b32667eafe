/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the units of scx_cadence's BPF side share. Each concern is its own
 * .bpf.c, compiled apart and linked into one object (build.rs):
 *   main.bpf.c     the struct_ops callback table and the scheduling core
 *                  (queues, fairness, deadlines, latency, placement)
 *   policy.bpf.c   the policy in force and each callback's snapshot of it
 *   util.bpf.c     frequency-invariant PELT of every CPU and task
 *   cpufreq.bpf.c  each CPU's cpufreq target and its deadband
 *   idle.bpf.c     the idle learner and its tracepoint programs
 *   cgroup.bpf.c   cgroup cpu.weight: each task's weight from its cgroups
 *   cgroup_bw.bpf.c  cgroup cpu.max: runtime per period, throttling
 *   task_view.bpf.c  the task iterator behind <pin-dir>/tasks
 *   place_search.bpf.c  the small-core search (global functions), which
 *                  the host tests' place_test.bpf.c links too
 *   idle_learn.bpf.c  the idle learner's predictors (global functions),
 *                  which `idle replay`'s idle_replay.bpf.c links too
 * The pure math that is inlined where it is used (pelt.bpf.h,
 * cpufreq_target.bpf.h, deadline.bpf.h, group_share.bpf.h) stays in
 * headers, included by its unit and by its test program: as calls, each
 * would add a frame where the stack is spent (dispatch() keeps 64 bytes),
 * sit under a spin lock (group_activity_delta()) or need more than 5
 * arguments (cpufreq_evaluate()).
 *
 * A map that several units use is defined here __weak: each unit's object
 * carries the same definition and the linker keeps one. A function one
 * unit offers the others is declared here and defined __hidden: global to
 * the linker, static to the verifier (libbpf marks hidden functions
 * static), so it is verified in its caller's context like any static
 * subprogram; a BPF call takes at most 5 arguments.
 */
#ifndef __CADENCE_BPF_H
#define __CADENCE_BPF_H

#include <scx/common.bpf.h>

#include "intf.h"

/*
 * A per-CPU variable of type @vtype: @name, a one-entry per-CPU array (a
 * map, so that the loader and bpftool read every CPU's copy), and
 * @name##_here(), this CPU's copy, NULL only if the map is missing.
 */
#define CADENCE_PER_CPU_MAP(vtype, name, ...)                                                      \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__type(key, u32);                                                                  \
		__type(value, vtype);                                                              \
		__uint(max_entries, 1);                                                            \
	} name SEC(".maps") __VA_ARGS__;                                                           \
	static __always_inline vtype *name##_here(void)                                            \
	{                                                                                          \
		u32 zero = 0;                                                                      \
                                                                                                   \
		return bpf_map_lookup_elem(&name, &zero);                                          \
	}
/* One unit's per-CPU variable. */
#define CADENCE_PER_CPU(vtype, name) CADENCE_PER_CPU_MAP(vtype, name)
/* A per-CPU variable every unit that includes its header shares. */
#define CADENCE_PER_CPU_WEAK(vtype, name) CADENCE_PER_CPU_MAP(vtype, name, __weak)

#include "stats.bpf.h"

/* Every task's scheduler state, in task storage. */
struct task_ctx {
	/* The task's virtual time, the source of truth for DSQ ordering. */
	u64 vtime;
	/* The DSQ whose frontier @vtime is relative to (CADENCE_NO_QUEUE). */
	u64 queue;
	/*
	 * The queue whose clock's weight holds this task's weight, and the
	 * weight it added: the task is runnable and counts in @queue, or
	 * CADENCE_NO_QUEUE.
	 */
	u64 counted_in;
	u32 counted_weight;
	/* When the running task was last charged, ns (scx_bpf_now()). */
	u64 charged_at;
	/* When the current run (or slice refill) started, ns. */
	u64 run_start;
	/*
	 * The slice it got at @run_start, ns: shortened when the tick times
	 * its end (the slice timer), 0 once the tick ends it.
	 */
	u64 granted;
	/*
	 * What it ran of its current request before @run_start, in runs a
	 * preemption cut short (parity_credit()): run-to-parity's count.
	 */
	u64 parity_ran;
	/*
	 * The virtual deadline (deadline.bpf.h) of the slice it is queued
	 * with or runs, in @queue's frame: its key in a DSQ of that frame
	 * (but one holding its CPU: queues.bpf.h, note_queued()).
	 */
	u64 deadline;
	/* Utilization (util.bpf.c). */
	struct cadence_task_util util;
	/* Where it last ran and how often it moved (migrate.bpf.h). */
	struct cadence_task_moves moves;
	/*
	 * Woke from iowait and not yet run (cpufreq.bpf.c); recorded only
	 * while the policy's legacy iowait boost is on.
	 */
	bool iowait_wake;
	/*
	 * Queued in a DSQ and not yet run: when it runs, the queue's frontier
	 * follows its vtime (the frontier moves when work is taken).
	 */
	bool queued;
	/*
	 * Put back while it runs, it waits for its CPU (placement.hold): set
	 * when it starts running, cleared by dispatch() when a lasting task
	 * of like util displaces it (queues.bpf.h, note_displaced()). Unless
	 * its enqueue finds a move worth it (the hold's verdict), it queues
	 * on that CPU to wait for it.
	 */
	bool stay_home;
	/*
	 * A CPU-bound task (place.bpf.h, hold_busy()) queued in @held_cpu's
	 * own queue to hold that CPU (enqueue()'s hold path, hold_taken();
	 * cleared when it leaves that queue, hold_release()): it went behind
	 * the tasks waiting there (queues.bpf.h, note_queued()).
	 */
	bool held;
	s32 held_cpu;
	/*
	 * Queued by enqueue()'s hold path in its CPU's own queue, its vtime
	 * still in the frame of its LLC queue (@queue), where it weighs and
	 * whose frontier it drifts when it runs: it was not taken from that
	 * queue, so the frontier does not follow it (running()). Reset at
	 * every enqueue.
	 */
	bool hold_queued;
	/*
	 * When it was last queued in a DSQ, ns (scx_bpf_now()), and its
	 * deadline then in the frame of its CPU's LLC queue: @deadline moved
	 * by the difference of the two frontiers, as rebase_vtime() moves a
	 * vtime (the same for a task queued in the LLC queue). dispatch()
	 * compares the heads of a CPU's two queues by it (deadline.bpf.h,
	 * own_head_first()). Both restart at every queueing, a requeue for
	 * an affinity or nice change too, unlike p->scx.runnable_at.
	 */
	u64 queued_at;
	u64 llc_deadline;
	/*
	 * When it last woke, or was forked or met by the scheduler, ns
	 * (scx_bpf_now()): it has been runnable, without a sleep, since
	 * (runs_lasting()).
	 */
	u64 awake_since;
	/*
	 * select_cpu() sent this sync wake-up to the waker's CPU, where a
	 * task already waits: enqueue() queues it in that CPU's own queue.
	 */
	bool sync_wake;
	/*
	 * select_cpu() found no CPU for this sync wake-up (latency.bpf.h):
	 * its waker is about to free one, so enqueue() preempts nobody for
	 * it. Cleared when the task runs.
	 */
	bool sync_no_preempt;
	/*
	 * It called sched_yield() while others waited for its CPU: dispatch()
	 * does not keep it running ahead of them, as __pick_eevdf() picks no
	 * ineligible curr (cadence_yield()). Cleared when it runs again.
	 */
	bool yielded;
	/*
	 * The lag it went to sleep with (deadline.bpf.h, lag_at_sleep()):
	 * how far behind its queue's frontier its next wake-up may start it.
	 */
	u64 sleep_lag;
	/*
	 * Its weight among all tasks, for its virtual time and deadlines:
	 * its nice weight, or with cgroup weights what its cgroups leave it
	 * (cgroup.bpf.c, group_refresh_weight()); and 2^32 / @weight.
	 */
	u32 weight;
	u32 wmult;
	/* Its cgroup's id (0: the root cgroup or not known; its nice weight). */
	u64 cgroup_id;
	/*
	 * The cgroup whose active weight holds its nice weight, and that
	 * weight: it is runnable and counts there, or 0 (group_count()).
	 */
	u64 group_counted_in;
	u32 group_counted_weight;
	/* CPU time charged to its cgroups' cpu.max up to here (cgroup_bw.bpf.c). */
	u64 bw_charged_at;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps") __weak;

static __always_inline struct task_ctx *lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

/* policy.bpf.c: the policy in force. */

bool policy_copy_locked(struct cadence_policy *out, u64 *gen);
void policy_snapshot(struct cadence_policy *out);
const struct cadence_policy *policy_refreshed(void);

/*
 * The generation in force (policy.bpf.c), and each CPU's copy of the
 * policy: shared here so that policy_in_force() is inlined where it is
 * used, one check against the generation in force.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_policy_state);
	__uint(max_entries, 1);
} policy_state SEC(".maps") __weak;

CADENCE_PER_CPU_WEAK(struct cadence_policy_cpu, policy_cpu);

/*
 * The policy in force, read in place in this CPU's copy: only for a caller
 * with a runqueue locked, interrupts off (policy.bpf.c lists them and says
 * why; the others use policy_snapshot()). The copy is refreshed only after
 * the loader wrote a new generation (policy_refreshed()). NULL, and the
 * scheduler ended, if the loader never wrote one (it does so before
 * attaching).
 */
static __always_inline const struct cadence_policy *policy_in_force(void)
{
	u32 zero = 0;
	struct cadence_policy_state *state = bpf_map_lookup_elem(&policy_state, &zero);
	struct cadence_policy_cpu *c = policy_cpu_here();

	/* Generation 0 is "never written": the slow path says so. */
	if (state && c && c->generation && READ_ONCE(state->generation) == c->generation)
		return &c->policy;
	return policy_refreshed();
}

/* util.bpf.c: utilization, called from the callbacks of the same names. */
void util_runnable(struct task_ctx *tctx, u64 now, u64 enq_flags);
struct cadence_cpu_util *util_running(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
				      u64 now);
void util_stopping(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 now);
void util_quiescent(struct task_struct *p, struct task_ctx *tctx, u64 deq_flags);
struct cadence_cpu_util *util_tick(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
				   const struct cadence_policy *pol, u64 now);
void util_update_idle(s32 cpu, bool idle);
void util_init_task(struct task_ctx *tctx);
void util_dump_cpu(s32 cpu);

/* cpufreq.bpf.c: cpufreq targets. */
void cpufreq_runnable(struct task_struct *task, struct task_ctx *tctx,
		      const struct cadence_policy *pol, u64 enq_flags);
void cpufreq_update_here(struct task_ctx *tctx, const struct cadence_cpu_util *cu,
			 const struct cadence_policy *pol, bool iowait, u64 now);
void cpufreq_going_idle(s32 cpu, const struct cadence_policy *pol);
void cpufreq_dump_cpu(s32 cpu);

/*
 * Re-evaluate this CPU's target after its util was brought to @now (@cu);
 * @p runs here. @iowait: @p just woke from iowait (running()). Only for
 * @p's own CPU: running() on behalf of another CPU is skipped
 * (cpufreq.bpf.c).
 */
static __always_inline void cpufreq_update(struct task_struct *p, struct task_ctx *tctx,
					   const struct cadence_cpu_util *cu,
					   const struct cadence_policy *pol, bool iowait, u64 now)
{
	if (scx_bpf_task_cpu(p) == bpf_get_smp_processor_id())
		cpufreq_update_here(tctx, cu, pol, iowait, now);
}

/*
 * Every cgroup, by id (cgroup.bpf.c adds and removes them, cgroup_bw.bpf.c
 * keeps their cpu.max): what bpftool shows of `cgroups` in the pin
 * directory.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);
	__type(value, struct cadence_cgroup);
	__uint(max_entries, CADENCE_CGROUP_MAX);
} cgroups SEC(".maps") __weak;

static __always_inline struct cadence_cgroup *group_of(u64 id)
{
	return bpf_map_lookup_elem(&cgroups, &id);
}

/* cgroup.bpf.c: cgroup weights, from the callbacks of the same names. */
s32 group_init(struct cgroup *cgrp, u32 cpu_weight);
void group_exit(struct cgroup *cgrp);
void group_set_weight(struct cgroup *cgrp, u32 cpu_weight);
u64 group_id_of(struct cgroup *cgrp);
void group_move(struct task_ctx *tctx, struct cgroup *to);
void __group_count(struct task_ctx *tctx, u32 weight);
void __group_uncount(struct task_ctx *tctx);
void __group_refresh_weight(const struct task_struct *p, struct task_ctx *tctx);

/*
 * Runnable, of nice weight @weight, the task counts in its cgroup's active
 * weight (cgroup.bpf.c). A task of the root cgroup counts nowhere: for it,
 * as for one counted already as it is, this is a test, not a call.
 */
static __always_inline void group_count(struct task_ctx *tctx, u32 weight)
{
	if (tctx->group_counted_in == tctx->cgroup_id &&
	    (!tctx->cgroup_id || tctx->group_counted_weight == weight))
		return;
	__group_count(tctx, weight);
}

/* It counts no more (quiescent, or leaving sched_ext). */
static __always_inline void group_uncount(struct task_ctx *tctx)
{
	if (tctx->group_counted_in)
		__group_uncount(tctx);
}

/* cgroup_bw.bpf.c: cgroup cpu.max. */
void group_bw_init(struct cgroup *cgrp, struct scx_cgroup_init_args *args);
void group_bw_set(struct cgroup *cgrp, u64 period_us, u64 quota_us, u64 burst_us);
void group_bw_forget(struct cgroup *cgrp);
bool __group_bw_charge(struct task_ctx *tctx, u64 now);
bool __group_bw_throttled(u64 cgroup_id);
bool __group_bw_task_throttled(struct task_struct *p);
void group_bw_timer_setup(void);
void group_bw_tick(void);
/*
 * Cgroups with a cpu.max limit (cgroup_bw.bpf.c). Without one, as on most
 * machines, cpu.max costs the callbacks a test, not a call.
 */
extern u32 nr_bw_limited;

/*
 * Charge the time @tctx's task ran since its last charge, up to @now, to
 * its limited cgroups: true if one is throttled (cgroup_bw.bpf.c). Without
 * limits only the start of the next charge moves.
 */
static __always_inline bool group_bw_charge(struct task_ctx *tctx, u64 now)
{
	if (nr_bw_limited)
		return __group_bw_charge(tctx, now);
	tctx->bw_charged_at = now;
	return false;
}

/* Cgroup @cgroup_id (0: the root) or an ancestor is past its cpu.max. */
static __always_inline bool group_bw_throttled(u64 cgroup_id)
{
	return nr_bw_limited && __group_bw_throttled(cgroup_id);
}

/* @p's cgroups hold it: enqueue() will put it to wait (select_cpu()). */
static __always_inline bool group_bw_task_throttled(struct task_struct *p)
{
	return nr_bw_limited && __group_bw_task_throttled(p);
}

/* main.bpf.c: queue a task released from its cgroup's cpu.max wait. */
bool queue_released(const struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 *dsq,
		    u64 *key);

/* idle.bpf.c: @cpu starts idling (ops.update_idle()); its tick runs. */
void idle_visit_starts(s32 cpu);

/* main.bpf.c (place.bpf.h): the exit latency of @cpu's idle state. */
void place_note_idle_exit(u32 cpu, u64 exit_ns);

#endif /* __CADENCE_BPF_H */
