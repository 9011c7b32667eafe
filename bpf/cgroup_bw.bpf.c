/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup cpu.max: a cgroup's tasks, and its descendants', run at most
 * cpu.max's quota of CPU time in each period, as the fair class's bandwidth
 * control gives (Documentation/scheduler/sched-bwc.rst). The kernel tells
 * sched_ext of cpu.max through ops.cgroup_set_bandwidth() and
 * scx_cgroup_init_args since Linux 6.17 (CONFIG_GROUP_SCHED_BANDWIDTH);
 * before that the loader leaves the callback out and says cpu.max is not
 * enforced.
 *
 * Charged: the CPU time a task of a limited cgroup runs, at each tick and
 * when it stops, comes off the runtime left to its cgroup and to each
 * limited ancestor (group_bw_charge()). At 0 the cgroup is throttled: the
 * tick ends its running tasks' slices, dispatch() keeps none of them, and
 * enqueue() puts them in CADENCE_THROTTLE_DSQ instead of a queue. A task
 * charged past 0 before the tick saw it leaves a debt that the next
 * period's quota pays first, so over many periods the group gets its quota
 * whatever the tick's granularity (up to a bound, bw_refill_one()).
 *
 * Refilled: one BPF timer, armed while any cgroup has a limit or a task
 * waits, fires at the earliest end of a period, adds each ended period's
 * quota up to quota + burst (bw_refill_one()), lifts the throttle of each
 * cgroup whose runtime is back above 0, and queues the tasks that no
 * throttled cgroup holds any more in their LLC's queue (bw_release()).
 * While they wait they weigh in no cgroup (enqueue(), main.bpf.c), as the
 * fair class takes a throttled group out of its parent's load.
 *
 * Not done: the fair class's per-CPU slices of quota
 * (sched_cfs_bandwidth_slice_us) have no counterpart, as the runtime is
 * one atomic counter. An exiting or
 * migration-disabled task that the kernel queues without ops.enqueue()
 * (neither SCX_OPS_ENQ_EXITING nor SCX_OPS_ENQ_MIGRATION_DISABLED is set)
 * runs unthrottled, and is charged.
 */
#include "cadence.bpf.h"
#include "timers.bpf.h"

/*
 * RUNTIME_INF in kernel/sched/sched.h: cpu.max's quota when it is "max",
 * as cgroup_set_bandwidth() and scx_cgroup_init_args pass it.
 */
#define CADENCE_BW_QUOTA_INF ((u64)~0ULL)
/* cpu.max is in microseconds; the runtime is counted in ns. */
#define CADENCE_NSEC_PER_USEC 1000ULL
/*
 * The least delay the period timer is armed with: a period that ends in the
 * past (the timer ran late) is refilled at once, and the next one is at
 * least this far off, so that the timer cannot spin.
 */
#define CADENCE_BW_TIMER_MIN_NS (100 * CADENCE_NSEC_PER_USEC)

/*
 * Cgroups with a limit (a quota other than "max"): 0, and nothing here runs.
 * The callbacks test it before calling in (cadence.bpf.h).
 */
u32 nr_bw_limited;
/* The period timer has its callback (group_bw_timer_setup()). */
static bool bw_timer_ready;
/* The period timer is armed (or being armed). */
static bool bw_timer_armed;
/* A task was held once: the tick watches that the timer runs (group_bw_tick()). */
static bool bw_held_once;

struct bw_timer_slot {
	struct bpf_timer timer;
};

/* The period timer (one for all cgroups). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bw_timer_slot);
} bw_timer SEC(".maps");

/* One pass of the period timer over the cgroups. */
struct bw_refill {
	u64 now;
	/* The earliest end of a period still to come. */
	u64 next;
};

/*
 * Add @g's quota for each period that ended by @r->now, up to quota +
 * burst (fair.c's refill adds one quota per timer run, whatever the
 * overrun: the same but while in debt); lift its throttle if its runtime
 * is back above 0. A debt past CADENCE_BW_MAX_DEBT_QUOTAS quotas is
 * forgiven: tasks that ran on before a tick saw the throttle must not keep
 * the cgroup off the CPUs for so many periods that sched_ext's watchdog
 * (30 s) ends the scheduler; tg_set_bandwidth() in kernel/sched/core.c
 * keeps the quota at least 1 ms for the same reason.
 * The chargers subtract meanwhile, without a lock: the quota goes in as an
 * atomic add, and the clamp to the cap only if nothing came between.
 */
static long bw_refill_one(struct bpf_map *map, u64 *id, struct cadence_cgroup *g,
			  struct bw_refill *r)
{
	u64 quota = g->bw_quota_ns, period = g->bw_period_ns, periods;
	s64 add, sum, cap;

	if (!quota || !period)
		return 0;
	if (r->now >= g->bw_period_end) {
		periods = (r->now - g->bw_period_end) / period + 1;
		g->bw_period_end += periods * period;
		if (periods > CADENCE_BW_MAX_REFILL_PERIODS)
			periods = CADENCE_BW_MAX_REFILL_PERIODS;
		add = (s64)(periods * quota);
		sum = g->bw_runtime_ns;
		if (sum < -(s64)(CADENCE_BW_MAX_DEBT_QUOTAS * quota))
			add += -(s64)(CADENCE_BW_MAX_DEBT_QUOTAS * quota) - sum;
		sum = __sync_fetch_and_add(&g->bw_runtime_ns, add) + add;
		cap = (s64)(quota + g->bw_burst_ns);
		if (sum > cap && __sync_val_compare_and_swap(&g->bw_runtime_ns, sum, cap) == sum)
			sum = cap;
		if (sum > 0 && g->bw_throttled)
			g->bw_throttled = 0;
	}
	if (g->bw_period_end < r->next)
		r->next = g->bw_period_end;
	return 0;
}

/*
 * True if cgroup @id or an ancestor is throttled. A root-cgroup task (@id
 * 0) never is: the root has no cpu.max.
 */
static bool bw_chain_throttled(u64 id)
{
	struct cadence_cgroup *g;
	u32 i;

	if (!id)
		return false;
	g = group_of(id);
	for (i = 0; i < CADENCE_CGROUP_MAX_DEPTH && g && g->level; i++) {
		if (g->bw_throttled)
			return true;
		g = group_of(g->parent_id);
	}
	return false;
}

/*
 * Send each task that waits in CADENCE_THROTTLE_DSQ, and that no throttled
 * cgroup holds any more, to the queue of its LLC by deadline, a pinned
 * task to its CPU's own (queue_released(), main.bpf.c): of an idle CPU it
 * may run on, else of the CPU it last ran on (or of one it may run on);
 * and wake that CPU if it is idle.
 */
static void bw_release(void)
{
	struct task_struct *p;
	struct task_ctx *tctx;
	u64 dsq, key;
	s32 cpu;

	bpf_for_each (scx_dsq, p, CADENCE_THROTTLE_DSQ, 0) {
		tctx = lookup_task_ctx(p);
		if (!tctx || bw_chain_throttled(tctx->cgroup_id))
			continue;
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu < 0)
			cpu = scx_bpf_task_cpu(p);
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			cpu = scx_bpf_pick_any_cpu(p->cpus_ptr, 0);
		if (cpu < 0)
			continue;
		if (queue_released(p, tctx, cpu, &dsq, &key)) {
			scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, key);
			scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, dsq, 0);
		}
		/*
		 * Even if the move failed (the task left meanwhile): a CPU
		 * claimed idle and not woken would stay off the idle mask.
		 */
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

static int bw_period_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	struct bw_refill r = {.now = scx_bpf_now(), .next = ~0ULL};
	u64 delay;

	if (bpf_timers_stopped)
		return 0;
	bpf_for_each_map_elem(&cgroups, bw_refill_one, &r, 0);
	/*
	 * Every pass that finds tasks waiting looks at each: one enqueue()
	 * held while this pass lifted its throttle is in the DSQ only after
	 * enqueue() returns, too late for the walk that followed the lift.
	 */
	if (scx_bpf_dsq_nr_queued(CADENCE_THROTTLE_DSQ) > 0)
		bw_release();
	/* Nothing limited and nobody held: the timer stops. */
	if ((!nr_bw_limited || r.next == ~0ULL) &&
	    scx_bpf_dsq_nr_queued(CADENCE_THROTTLE_DSQ) <= 0) {
		bw_timer_armed = false;
		return 0;
	}
	if (r.next == ~0ULL)
		r.next = r.now + CADENCE_BW_TIMER_MIN_NS;
	delay = r.next > r.now ? r.next - r.now : 0;
	if (delay < CADENCE_BW_TIMER_MIN_NS)
		delay = CADENCE_BW_TIMER_MIN_NS;
	bpf_timer_start(timer, delay, 0);
	return 0;
}

/*
 * Give the period timer its callback, once. Only from ops.init_task(): the
 * verifier checks a timer callback's kfuncs as part of the callback that
 * sets it, and with d1d3c1c6ae36 ("sched_ext: Add verifier-time kfunc
 * context filter", in the 7.2 test kernel) it refuses bw_release()'s
 * scx_bpf_dsq_move() in callbacks that hold a runqueue lock (enqueue(),
 * tick(), ...); init_task() holds none, and runs before any task of the
 * scheduler does.
 */
__hidden void group_bw_timer_setup(void)
{
	struct bw_timer_slot *t;
	u32 key = 0;

	if (bw_timer_ready || !bpf_timers_on)
		return;
	t = bpf_map_lookup_elem(&bw_timer, &key);
	if (t && CADENCE_TIMER_SETUP(t, bw_timer, bw_period_timer_fn))
		bw_timer_ready = true;
}

/* Arm the period timer: its first pass sees which periods have ended. */
static void bw_timer_arm(void)
{
	struct bw_timer_slot *t;
	u32 key = 0;

	if (!bw_timer_ready || bpf_timers_stopped)
		return;
	t = bpf_map_lookup_elem(&bw_timer, &key);
	if (t && !bpf_timer_start(&t->timer, CADENCE_BW_TIMER_MIN_NS, 0))
		bw_timer_armed = true;
}

/*
 * @g counts in nr_bw_limited while @limited. Two writes of cpu.max and
 * cpu.max.burst may come at once (tg_set_bandwidth() takes no lock the
 * callback sees): the flag changes by compare-and-swap, so only one counts.
 */
static void bw_count_limit(struct cadence_cgroup *g, bool limited)
{
	if (limited) {
		if (__sync_val_compare_and_swap(&g->bw_limited, 0, 1) == 0)
			__sync_fetch_and_add(&nr_bw_limited, 1);
	} else if (__sync_val_compare_and_swap(&g->bw_limited, 1, 0) == 1) {
		__sync_fetch_and_sub(&nr_bw_limited, 1);
	}
}

/*
 * cpu.max of cgroup @g: @quota_us of CPU time each @period_us, @burst_us
 * more kept when unused; @quota_us CADENCE_BW_QUOTA_INF: no limit. A new
 * setting starts a new period with a full quota (tg_set_cfs_bandwidth()
 * adds a quota up to quota + burst and forgives the per-CPU debts) and
 * lifts the throttle: true if it lifted one, whose tasks wait.
 */
static bool bw_apply(struct cadence_cgroup *g, u64 period_us, u64 quota_us, u64 burst_us)
{
	bool limited = quota_us != CADENCE_BW_QUOTA_INF && period_us && quota_us;
	bool lifted = g->bw_throttled;

	g->bw_period_ns = period_us * CADENCE_NSEC_PER_USEC;
	g->bw_burst_ns = burst_us * CADENCE_NSEC_PER_USEC;
	g->bw_runtime_ns = limited ? (s64)(quota_us * CADENCE_NSEC_PER_USEC) : 0;
	g->bw_period_end = scx_bpf_now() + g->bw_period_ns;
	g->bw_quota_ns = limited ? quota_us * CADENCE_NSEC_PER_USEC : 0;
	g->bw_throttled = 0;
	bw_count_limit(g, limited);
	return lifted;
}

/* ops.cgroup_set_bandwidth(): the timer frees whoever the old limit held. */
__hidden void group_bw_set(struct cgroup *cgrp, u64 period_us, u64 quota_us, u64 burst_us)
{
	struct cadence_cgroup *g = group_of(cgrp->kn->id);

	if (g && bw_apply(g, period_us, quota_us, burst_us))
		bw_timer_arm();
}

/*
 * A cgroup met at attach, or created: the cpu.max it already has, where
 * the kernel passes it (since Linux 6.17). It holds nobody yet.
 */
__hidden void group_bw_init(struct cgroup *cgrp, struct scx_cgroup_init_args *args)
{
	struct cadence_cgroup *g;

	if (!bpf_core_field_exists(args->bw_quota_us) || args->bw_quota_us == CADENCE_BW_QUOTA_INF)
		return;
	g = group_of(cgrp->kn->id);
	if (g)
		bw_apply(g, args->bw_period_us, args->bw_quota_us, args->bw_burst_us);
}

/* A cgroup removed (it holds no task): its limit no longer counts. */
__hidden void group_bw_forget(struct cgroup *cgrp)
{
	struct cadence_cgroup *g = group_of(cgrp->kn->id);

	if (g) {
		g->bw_quota_ns = 0;
		bw_count_limit(g, false);
	}
}

/*
 * Each tick: a task held while the timer stopped (an enqueue() that saw
 * the throttle just before a new cpu.max lifted it and the timer's last
 * pass) would wait for a timer that no one arms; the tick arms it.
 */
__hidden void group_bw_tick(void)
{
	if (bw_held_once && !bw_timer_armed && scx_bpf_dsq_nr_queued(CADENCE_THROTTLE_DSQ) > 0)
		bw_timer_arm();
}

/*
 * Charge the CPU time @tctx's task ran since its last charge, up to @now,
 * to its cgroup and each ancestor with a limit: true if one of them is
 * throttled (its task should stop). Called at each tick and when it stops,
 * while a limit exists (group_bw_charge(), cadence.bpf.h); running() starts
 * the count.
 */
__hidden bool __group_bw_charge(struct task_ctx *tctx, u64 now)
{
	u64 delta = now - tctx->bw_charged_at;
	struct cadence_cgroup *g;
	bool throttled = false;
	s64 left;
	u32 i;

	tctx->bw_charged_at = now;
	/* No timer to refill (PREEMPT_RT): no limit, rather than a stall. */
	if (!nr_bw_limited || !bw_timer_ready || !tctx->cgroup_id || (s64)delta <= 0)
		return false;
	if (!bw_timer_armed)
		bw_timer_arm();
	g = group_of(tctx->cgroup_id);
	for (i = 0; i < CADENCE_CGROUP_MAX_DEPTH && g && g->level; i++) {
		if (g->bw_quota_ns) {
			left = __sync_fetch_and_add(&g->bw_runtime_ns, -(s64)delta) - (s64)delta;
			if (left <= 0 && !g->bw_throttled) {
				g->bw_throttled = 1;
				__sync_fetch_and_add(&g->bw_nr_throttled, 1);
			}
			throttled |= g->bw_throttled;
		}
		g = group_of(g->parent_id);
	}
	return throttled;
}

/* group_bw_throttled() (cadence.bpf.h), while a limit exists. */
__hidden bool __group_bw_throttled(u64 cgroup_id)
{
	if (!nr_bw_limited || !bw_chain_throttled(cgroup_id))
		return false;
	/* Whoever it holds waits for the timer: it must run (bw_timer_arm()). */
	bw_held_once = true;
	if (!bw_timer_armed)
		bw_timer_arm();
	return true;
}

/* group_bw_task_throttled() (cadence.bpf.h), while a limit exists. */
__hidden bool __group_bw_task_throttled(struct task_struct *p)
{
	struct task_ctx *tctx;

	if (!nr_bw_limited)
		return false;
	tctx = lookup_task_ctx(p);
	return tctx && bw_chain_throttled(tctx->cgroup_id);
}
