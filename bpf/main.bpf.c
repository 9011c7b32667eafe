/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_cadence: a weighted-fair sched_ext scheduler for machines where
 * frequency, power and placement matter.
 *
 * Design
 * ------
 * Queues (queues.bpf.h). Each LLC has one shared DSQ ordered by virtual time; each CPU has
 * its own vtime DSQ for tasks that can run only there (pinned, or migration
 * disabled). Each queue has its own vtime frontier. A CPU whose slice ended
 * first takes the head of a busier LLC's queue if that one was queued
 * before both local heads; else its task runs on while first in its own
 * queue and nobody waits in the CPU's other queue; else it takes the head
 * of its two queues with the earlier deadline in the LLC's frame, or, past
 * a bound, the one queued first; idle, it steals from other LLCs. A task
 * holding its CPU (placement.hold) waits in the CPU's own DSQ with its
 * vtime in the LLC queue's frame, and goes by deadline alone.
 *
 * Fairness (fair.bpf.h, weight.bpf.h). Virtual time advances by
 * delta * 1024 / weight with the kernel's own nice-to-weight table, so two
 * tasks competing for one CPU get CPU time in the ratio of their weights.
 * Lag is bounded both ways around the task's queue's frontier at wake-up,
 * at enqueue and before a task runs on.
 *
 * Slices (fair.bpf.h) shrink as more tasks wait for a CPU and scale with the
 * task's weight; ops.tick() cuts a running slice short once it has used its
 * share, and while others wait a timer ends it on time (slice_timer.bpf.h).
 *
 * Placement (place.bpf.h). On wake-up: the previous CPU if its core is
 * idle, then an idle core (own LLC first), then any idle CPU. Enqueues that
 * did not pass through select_cpu() try the same before queueing. Every
 * move across small or big cores is counted by the path that made it
 * (migrate.bpf.h).
 *
 * Hotplug. The topology tables are built once at load, so a CPU going
 * online or offline ends the scheduler with SCX_ECODE_ACT_RESTART; the
 * loader then re-reads the topology and attaches again.
 *
 * Utilization (util.bpf.c, pelt.bpf.h, freq_ratio.bpf.h). Every CPU and task
 * carries the kernel's PELT util_avg, made frequency-invariant with a
 * per-CPU ratio that ops.tick() reads from APERF/MPERF (or the kernel's
 * cpuperf); update_idle() tells each CPU's PELT clock when it idles.
 *
 * cpufreq hints (cpufreq.bpf.c, cpufreq_target.bpf.h). ops.running() and
 * ops.tick() turn the local CPU's invariant util into a cpufreq target with
 * the policy's headroom, pass it through the deadband (floor, hysteresis,
 * down hold, rate limit) and hand what survives to scx_bpf_cpuperf_set().
 * A CPU going idle asks for its floor at once (update_idle()).
 * iowait is no input, unless the policy's legacy switch emulates
 * schedutil's boost for comparison.
 *
 * Policy (policy.bpf.c). Every tunable lives in one policy map that the
 * loader can replace while the scheduler runs; each callback works with one
 * snapshot of it, never a mix of two.
 *
 * This unit holds the struct_ops callbacks and the scheduling core, one
 * concern per header included below; policy, utilization, cpufreq, the
 * idle learner and the task view are units of their own, linked with this
 * one (cadence.bpf.h).
 */
#include "cadence.bpf.h"
#include "weight.bpf.h"
#include "topo.bpf.h"
#include "deadline.bpf.h"
#include "fair.bpf.h"
#include "timers.bpf.h"
#include "rcu_reader.bpf.h"
#include "parity_timer.bpf.h"
#include "latency.bpf.h"
#include "slice_timer.bpf.h"
#include "place.bpf.h"
#include "migrate.bpf.h"
#include "pelt.bpf.h"
#include "queues.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* timers.bpf.h says what these are; the loader sets bpf_timers_on. */
const volatile bool bpf_timers_on = true;
bool bpf_timers_stopped;

s32 BPF_STRUCT_OPS(cadence_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	const struct cadence_policy *pol;
	u64 own = 0, waiting;
	s32 cpu;

	pol = policy_in_force();
	if (!pol)
		return prev_cpu;
	/* Its cgroup used up its cpu.max: enqueue() puts it to wait. */
	if (group_bw_task_throttled(p))
		return prev_cpu;
	cpu = pick_idle_cpu(pol, p, prev_cpu, true, NULL);
	if (cpu < 0) {
		cpu = sync_wakeup_cpu(pol, p, prev_cpu, wake_flags, &own);
		if (cpu < 0) {
			/* Its waker will free a CPU it may use: it preempts nobody. */
			if (pol->sync_wakeup && (wake_flags & SCX_WAKE_SYNC) &&
			    waker_cpu_usable(p, prev_cpu))
				mark_sync_no_preempt(p);
			return prev_cpu;
		}
		/*
		 * A task waits for that CPU, or the LLC queue's head has waited
		 * a whole slice: join that CPU's own queue, ordered by deadline
		 * (enqueue()), not ahead of them in the local queue, where they
		 * would wait as long as the pair kept the CPU.
		 */
		if (own || llc_head_waited(cpu, pol->slice_max_ns))
			return mark_sync_wake(p) ? cpu : prev_cpu;
		/*
		 * Behind the waker, which is about to sleep (latency.bpf.h);
		 * nothing waits in that CPU's own queue.
		 */
		waiting = nr_waiting_of(cpu, 0, dsq_queued(llc_dsq(cpu_llc_id(cpu))));
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice_waiting(pol, p, waiting), 0);
		stat_inc(wake_sync);
		return cpu;
	}
	/* The CPU is idle and claimed: run there without queueing. */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(pol, p, cpu), 0);
	return cpu;
}

/*
 * cgroup_bw.bpf.c's period timer releases @p (@tctx), which waited for its
 * cgroup's cpu.max: it goes into the queue of @cpu's LLC by deadline (of
 * @cpu itself if @p may run there alone, task_pinned(): the LLC queue's
 * other CPUs would pass it over), as enqueue() queues a task, with the lag
 * it had when it was held (a sleep's bound, note_sleep_lag()). Sent to a
 * CPU's local DSQ instead, released tasks ran before everything queued
 * and spent their quota first thing in the period: a throttled cgroup's
 * sibling got 48.3% of its and a cgroup beside their parent's CPU time,
 * EEVDF 43.3%; queued, 44.7% against 43.7%
 * (case_cgroup_cpu_max_frees_its_share). Returns the queue and the key for
 * scx_bpf_dsq_move_vtime() in @dsq and @key; false without @tctx.
 *
 * The timer holds no lock of @p's. Its weight moves into that queue's
 * clock at its next enqueue (rebase_vtime()), not here, as @p may leave
 * meanwhile (quiescent() takes the weight out of the clock it counts in).
 * Not covered: a dequeue and enqueue of @p (a renice, an affinity change
 * or a cgroup move) at the moment the timer walks writes the same fields
 * as this; the move then fails, and the fields may hold this call's values
 * in place of enqueue()'s until @p's next enqueue.
 */
__hidden bool queue_released(const struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 *dsq,
			     u64 *key)
{
	struct cadence_policy pol;
	u64 queue;

	if (!p || !tctx || !dsq || !key)
		return false;
	policy_snapshot(&pol);
	queue = task_pinned(p) ? cpu_dsq(cpu) : llc_dsq(cpu_llc_id(cpu));
	move_vtime_frame(tctx, queue);
	bound_lag(&pol, p, tctx, true);
	tctx->deadline = task_deadline(p, tctx, task_slice(&pol, p, cpu));
	*key = note_queued(tctx, queue);
	tctx->queued = true;
	moves_placed(&tctx->moves, CADENCE_MOVE_QUEUE);
	*dsq = queue;
	return true;
}

void BPF_STRUCT_OPS(cadence_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	s32 prev = scx_bpf_task_cpu(p), cpu;
	const struct cadence_policy *pol;
	bool make_room;
	u64 dsq, slice;

	if (!tctx) {
		scx_bpf_error("%s[%d] has no task context", p->comm, p->pid);
		return;
	}

	pol = policy_in_force();
	if (!pol)
		return;
	/* Only the hold path below queues it as holding its CPU. */
	hold_release(tctx);
	tctx->hold_queued = false;
	/*
	 * Its cgroup used up its cpu.max: it waits for the next period, and
	 * weighs in no cgroup meanwhile (running() counts it again), as the
	 * fair class takes a throttled group off its parent's runqueue
	 * (throttle_cfs_rq() in kernel/sched/fair.c): its siblings share the
	 * parent's part while it waits. Nor in its queue's clock, whose
	 * frontier would drift slower for a weight that does not run (its
	 * next enqueue counts it again, rebase_vtime()).
	 */
	if (group_bw_throttled(tctx->cgroup_id)) {
		group_uncount(tctx);
		uncount_weight(tctx);
		/* The wait banks no priority: it keeps its lag as at a sleep. */
		note_sleep_lag(tctx);
		scx_bpf_dsq_insert(p, CADENCE_THROTTLE_DSQ, task_slice(pol, p, prev), enq_flags);
		tctx->queued = false;
		tctx->sync_wake = false;
		return;
	}
	/*
	 * Sent to the waker's CPU by select_cpu(), where a task waits: it
	 * joins that CPU's own queue by deadline (queue_on_cpu()); no other
	 * CPU is searched for a task to preempt, as the waker will sleep.
	 */
	if (tctx->sync_wake &&
	    !((enq_flags & SCX_ENQ_WAKEUP) && bpf_cpumask_test_cpu(prev, p->cpus_ptr)))
		tctx->sync_wake = false;
	if (tctx->sync_wake || task_pinned(p)) {
		if (tctx->sync_wake)
			stat_inc(wake_sync);
		else
			stat_inc(enq_pinned);
		if (!queue_on_cpu(pol, p, tctx, prev, cpu_dsq(prev), enq_flags) &&
		    !tctx->sync_wake && (enq_flags & SCX_ENQ_WAKEUP))
			wakeup_preempt(pol, p, tctx, prev, true);
		tctx->sync_wake = false;
		return;
	}

	/* Not woken through select_cpu() (e.g. slice expiry): look for idle. */
	if (!__COMPAT_is_enq_cpu_selected(enq_flags)) {
		/*
		 * A pinned CPU-bound task waits for prev, where @p may not
		 * hold on (make_room_for_pinned()): no hold, an idle CPU.
		 */
		make_room = make_room_for_pinned(p, prev);
		cpu = pick_idle_cpu(pol, p, prev, false, make_room ? NULL : tctx);
		/*
		 * It holds its CPU (a move not worth it; or put back while it
		 * runs, by a higher class or a short task, with no move worth
		 * it; task_ctx.stay_home): it waits for that CPU, and no other
		 * CPU is kicked to take it. Only while nothing else waits
		 * there, or no other CPU-bound task holds it for a CPU-bound
		 * one (hold_has_room()), and it may still run there; else it
		 * queues in its LLC like any task. Its vtime stays in its LLC
		 * queue's frame (task_ctx.hold_queued, move_vtime_frame()).
		 */
		if (!make_room &&
		    (cpu == -EAGAIN ||
		     (cpu < 0 && tctx->stay_home && pol->place_hold && scx_bpf_task_running(p))) &&
		    hold_has_room(prev, tctx) && bpf_cpumask_test_cpu(prev, p->cpus_ptr)) {
			tctx->held = hold_busy(tctx);
			if (queue_on_cpu(pol, p, tctx, prev, llc_dsq(cpu_llc_id(prev)),
					 enq_flags)) {
				tctx->held = false;
			} else {
				if (tctx->held)
					hold_taken(tctx, prev);
				tctx->hold_queued = true;
			}
			stat_inc(enq_stay);
			return;
		}
		if (cpu >= 0) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, task_slice(pol, p, cpu),
					   enq_flags);
			tctx->queued = false;
			moves_placed(&tctx->moves, CADENCE_MOVE_REQUEUE);
			stat_inc(enq_idle);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return;
		}
	}

	dsq = llc_dsq(cpu_llc_id(prev));
	if (vtime_for_queue(pol, p, tctx, dsq))
		stat_inc(enq_lag_floor);
	slice = task_slice(pol, p, prev);
	/* A sync wake-up's waker will free a CPU: it preempts nobody. */
	if (!tctx->sync_no_preempt && preempt_on_prev(pol, p, tctx, slice, enq_flags))
		return;
	queue_task(p, tctx, dsq, slice, enq_flags);
	stat_inc(enq_llc);
	/* No idle CPU will take it: maybe a running task should yield. */
	if (kick_idle_for(p) || !(enq_flags & SCX_ENQ_WAKEUP))
		return;
	if (tctx->sync_no_preempt)
		stat_inc(wake_sync_yield);
	else
		wakeup_preempt(pol, p, tctx, prev, false);
}

void BPF_STRUCT_OPS(cadence_dispatch, s32 cpu, struct task_struct *prev)
{
	struct dispatch_end end = {.now = scx_bpf_now()};
	struct task_ctx *pctx = NULL;
	const struct cadence_policy *pol;

	/*
	 * Going idle with nothing waiting for this CPU, the only LLC: nothing
	 * below would take a task or keep one. Said before the policy
	 * snapshot and the queue peeks, which were most of this callback's
	 * cost when every switch of a ping-pong pair ends in idle.
	 */
	if (nr_llcs == 1 && !(prev && (prev->scx.flags & SCX_TASK_QUEUED)) &&
	    !dsq_queued(cpu_dsq(cpu)) && !dsq_queued(llc_dsq(cpu_llc_id(cpu))))
		return;

	pol = policy_in_force();
	if (!pol)
		return;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		pctx = lookup_task_ctx(prev);
		if (pctx)
			charge_vtime(prev, pctx, cpu, end.now);
		/* Its cgroup used up its cpu.max: not kept, enqueue() holds it. */
		if (pctx && group_bw_throttled(pctx->cgroup_id))
			pctx = NULL;
	}
	/*
	 * No task waits in this CPU's queues much past the bound. Here, not in
	 * dispatch_queues(): its frame and take_starved()'s would leave less
	 * than the stack margin.
	 */
	if (take_any_starved(cpu))
		return;
	if (dispatch_queues(cpu, prev, pctx, pol, &end) || !prev || !pctx)
		return;
	/*
	 * prev is first in its own queue and nothing may run here before it.
	 * A lasting imbalance: not refilled, it is enqueued and moves. What
	 * waits here runs now (the earlier of the two heads): once prev left,
	 * nothing would wake this CPU for it, and the CPU would idle with it
	 * queued.
	 */
	if (hold_rebalance(pol, prev, pctx, cpu)) {
		/* The earlier head may not run here: then the other's. */
		if (!take_queue(end.next_dsq, cpu))
			take_queue(end.next_dsq == cpu_dsq(cpu) ? llc_dsq(cpu_llc_id(cpu))
								: cpu_dsq(cpu),
				   cpu);
		stat_inc(dispatch_rebalance);
		return;
	}
	keep_running(pol, prev, pctx, cpu, end.pslice, end.now);
	advance_frontier(pctx->queue, pctx->vtime);
}

void BPF_STRUCT_OPS(cadence_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	const struct cadence_policy *pol;
	u64 now = scx_bpf_now();

	if (!tctx)
		return;
	util_runnable(tctx, now, enq_flags);
	/* A wake-up starts a new stretch of running without a sleep. */
	if (enq_flags & SCX_ENQ_WAKEUP)
		tctx->awake_since = now;
	/* Placed by select_cpu(), unless enqueue() says otherwise. */
	moves_placed(&tctx->moves, CADENCE_MOVE_WAKE);
	pol = policy_in_force();
	if (!pol)
		return;
	/*
	 * It weighs in its cgroup while runnable (cgroup.bpf.c), and with the
	 * weight that leaves it in its queue's clock (fair.bpf.h).
	 */
	group_count(tctx, task_weight(p));
	group_refresh_weight(p, tctx, pol->fair_cgroups);
	count_weight(tctx, tctx->weight);
	/*
	 * select_cpu() may run it without enqueue(): bound its lag here too,
	 * by the wake-up lag only if it slept (not for a nice or affinity
	 * change, which dequeues and requeues it).
	 */
	if (bound_lag(pol, p, tctx, enq_flags & SCX_ENQ_WAKEUP))
		stat_inc(enq_lag_floor);
	cpufreq_runnable(p, tctx, pol, enq_flags);
}

void BPF_STRUCT_OPS(cadence_running, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	struct cadence_cpu_util *cu;
	const struct cadence_policy *pol;
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = scx_bpf_now();
	bool iowait;

	if (!tctx)
		return;
	tctx->charged_at = now;
	tctx->bw_charged_at = now;
	tctx->run_start = now;
	tctx->granted = p->scx.slice;
	/* Its wake-up is over: a later one is marked afresh (select_cpu()). */
	tctx->sync_no_preempt = false;
	tctx->yielded = false;
	/*
	 * Put back while it runs, it waits for this CPU (enqueue()), unless
	 * dispatch() finds it displaced by a lasting task of like util
	 * (note_displaced()). dispatch() does not run when a higher class
	 * takes the CPU: the stopper, every 4 s per CPU for the soft-lockup
	 * watchdog, or an RT task. The fair class leaves a task so preempted
	 * on its runqueue; queued in the LLC instead, CPU-bound tasks moved
	 * to whichever CPU freed first (traced in the bench's churn runs).
	 */
	tctx->stay_home = true;
	hold_release(tctx);
	/* Released from its cgroup's cpu.max wait (enqueue()): it weighs again. */
	if (tctx->group_counted_in != tctx->cgroup_id)
		group_count(tctx, task_weight(p));
	/*
	 * Taken from a queue: the queue's frontier follows it (fair.bpf.h);
	 * but not one its vtime was not queued in (task_ctx.hold_queued).
	 */
	if (tctx->queued && !tctx->hold_queued)
		advance_frontier(tctx->queue, tctx->vtime);
	tctx->queued = false;
	tctx->hold_queued = false;
	/* The deadline of the slice it got, queued or not. */
	tctx->deadline = task_deadline(p, tctx, p->scx.slice);
	run_record(cpu, p, tctx, now);
	moves_running(&tctx->moves, cpu);
	pol = policy_in_force();
	if (!pol)
		return;
	/*
	 * Others wait for this CPU: its slice ends on time, not at a tick.
	 * Not from another CPU (an attribute change of a running task): the
	 * timer would fire there, timed by that CPU's clock.
	 */
	if (cpu == bpf_get_smp_processor_id())
		slice_timer_start(pol, cpu, now, p->scx.slice, now);
	cu = util_running(p, tctx, cpu, now);
	if (!cu)
		return;
	iowait = tctx->iowait_wake;
	tctx->iowait_wake = false;
	cpufreq_update(p, tctx, cu, pol, iowait, now);
}

void BPF_STRUCT_OPS(cadence_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = scx_bpf_now();

	run_clear(cpu);
	if (!tctx)
		return;
	parity_note_stop(tctx, runnable, now);
	charge_vtime(p, tctx, cpu, now);
	group_bw_charge(tctx, now);
	util_stopping(p, tctx, cpu, now);
}

void BPF_STRUCT_OPS(cadence_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return;
	uncount_weight(tctx);
	group_uncount(tctx);
	/* Dequeued while it held its CPU: it holds it no more. */
	hold_release(tctx);
	tctx->hold_queued = false;
	/* Its lag now is what its next wake-up keeps (bound_lag()). */
	if (deq_flags & SCX_DEQ_SLEEP)
		note_sleep_lag(tctx);
	/* util_est learns from sleeps only (SCX_DEQ_SLEEP). */
	util_quiescent(p, tctx, deq_flags);
}

void BPF_STRUCT_OPS(cadence_tick, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	struct cadence_cpu_util *cu;
	const struct cadence_policy *pol;
	u64 now = scx_bpf_now(), held_ns, slice, waiting;
	bool throttled;

	/* Every busy CPU picks up a policy change within one tick. */
	pol = policy_in_force();
	if (!pol)
		return;
	group_bw_tick();
	if (!tctx)
		return;
	/* Its cgroups' active weights moved since: so did its share. */
	group_refresh_weight(p, tctx, pol->fair_cgroups);
	throttled = group_bw_charge(tctx, now);
	cu = util_tick(p, tctx, cpu, pol, now);
	if (cu)
		cpufreq_update(p, tctx, cu, pol, false, now);
	/*
	 * Inside an RCU read-side critical section: its slice is not cut, and
	 * one used up is refilled to the shortest, so that the tick does not
	 * preempt it mid-section (a wake-up preemption still may), as in
	 * kernels that cannot preempt readers. Every RCU grace period waits
	 * for a preempted reader; the fair class leans on RCU priority
	 * boosting (CONFIG_RCU_BOOST) there, which Debian's kernels are built
	 * without. Preempted at the tick, khugepaged (nice 19, a turn a second
	 * under load) copying a huge page held a grace period 21 s, and the
	 * kernel ended the scheduler for an RCU stall.
	 */
	if (in_rcu_read_section(p, CADENCE_RCU_LOCKS_STRUCT_OPS)) {
		if (p->scx.slice < pol->slice_min_ns)
			scx_bpf_task_set_slice(p, pol->slice_min_ns);
		stat_inc(tick_rcu_reader);
		return;
	}
	/* Its cgroup used up its cpu.max: it stops (enqueue() holds it). */
	if (throttled) {
		scx_bpf_task_set_slice(p, 0);
		return;
	}
	waiting = nr_waiting(cpu);
	if (!waiting)
		return;
	/*
	 * Others wait: end the slice once this task has had its share, or
	 * once one of them should preempt it (latency.bpf.h).
	 */
	slice = task_slice_waiting(pol, p, waiting);
	if (ran_since(tctx->run_start, now) >= slice) {
		scx_bpf_task_set_slice(p, 0);
		/* Used up, however long a slice it got: its next run begins a request. */
		tctx->granted = 0;
		stat_inc(tick_preempt);
	} else if (waiting_preempts(pol, cpu, now, &held_ns)) {
		scx_bpf_task_set_slice(p, 0);
		stat_inc(tick_wake_preempt);
	} else if (held_ns) {
		/* Held back by a task whose request has just begun: not a tick more. */
		parity_timer_arm(cpu, held_ns);
	} else {
		/* Others came to wait since it began: end its slice on time. */
		slice_timer_start(pol, cpu, tctx->run_start, slice, now);
		/* An end so timed uses the slice up (parity_credit()). */
		if (slice < tctx->granted)
			tctx->granted = slice;
	}
}

/*
 * sched_yield() (@to NULL) and yield_to() (KVM's directed yield, which this
 * scheduler does not steer: false). As fair.c's yield_task_fair() since
 * v6.17 (79104becf42b): alone on its CPU, the yielder runs on; else, if
 * eligible, it forfeits the rest of its request (its vtime moves to the
 * request's deadline, so its next deadline is a whole request later), and
 * its slice ends. Only if eligible, or a task yielding in a loop would
 * run its vtime away. Either way it is not kept running ahead of the
 * tasks that wait (task_ctx.yielded), as __pick_eevdf() then picks one of
 * them: an ineligible curr is no candidate there, and an eligible one has
 * just moved its deadline past theirs. Without ops.yield the kernel only
 * ends the slice: a yielder charged for the microseconds it ran stayed
 * first by deadline and ran on, and a hog beside it on one CPU got 58% of
 * it where EEVDF left it 91% (case_fair_yield_gives_the_cpu_away).
 */
bool BPF_STRUCT_OPS(cadence_yield, struct task_struct *from, struct task_struct *to)
{
	struct task_ctx *tctx = lookup_task_ctx(from);
	s32 cpu = scx_bpf_task_cpu(from);

	if (to || !tctx || !nr_waiting(cpu))
		return false;
	charge_vtime(from, tctx, cpu, scx_bpf_now());
	if (tctx->queue != CADENCE_NO_QUEUE && vtime_eligible(tctx->vtime, frontier(tctx->queue)) &&
	    vtime_before(tctx->vtime, tctx->deadline))
		tctx->vtime = tctx->deadline;
	tctx->yielded = true;
	scx_bpf_task_set_slice(from, 0);
	stat_inc(yield_forfeit);
	return false;
}

void BPF_STRUCT_OPS(cadence_enable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	/* A task entering sched_ext starts level with the first queue it enters. */
	if (tctx) {
		tctx->queue = CADENCE_NO_QUEUE;
		tctx->queued = false;
	}
}

void BPF_STRUCT_OPS(cadence_disable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	/* Leaving sched_ext runnable (a class change) takes its weight out. */
	if (tctx) {
		uncount_weight(tctx);
		group_uncount(tctx);
	}
}

void BPF_STRUCT_OPS(cadence_set_weight, struct task_struct *p, u32 weight)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	const struct cadence_policy *pol;

	if (!tctx)
		return;
	pol = policy_in_force();
	if (!pol)
		return;
	/* Reniced while runnable: its cgroup and its queue's clock weigh the new weight. */
	if (tctx->group_counted_in)
		group_count(tctx, task_weight(p));
	group_refresh_weight(p, tctx, pol->fair_cgroups);
	if (tctx->counted_in != CADENCE_NO_QUEUE)
		count_weight(tctx, tctx->weight);
}

void BPF_STRUCT_OPS(cadence_update_idle, s32 cpu, bool idle)
{
	const struct cadence_policy *pol;

	util_update_idle(cpu, idle);
	if (!idle)
		return;
	idle_visit_starts(cpu);
	/* An idle CPU holds no frequency up: it asks for its floor. */
	pol = policy_in_force();
	if (!pol)
		return;
	cpufreq_going_idle(cpu, pol);
}

s32 BPF_STRUCT_OPS(cadence_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->queue = CADENCE_NO_QUEUE;
	tctx->counted_in = CADENCE_NO_QUEUE;
	/* Weighed as in the root cgroup until it is first runnable. */
	tctx->weight = task_weight(p);
	tctx->wmult = task_wmult(p);
	if (args->cgroup)
		tctx->cgroup_id = group_id_of(args->cgroup);
	moves_init(&tctx->moves);
	util_init_task(tctx);
	/* Here, where the verifier lets its callback move tasks. */
	group_bw_timer_setup();
	/* Forked now, or runnable since before the scheduler attached. */
	tctx->awake_since = scx_bpf_now();
	return 0;
}

void BPF_STRUCT_OPS(cadence_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	bpf_task_storage_delete(&task_ctxs, p);
}

/*
 * cgroup cpu.weight (cgroup.bpf.c). Every cgroup is met before any task
 * (scx_cgroup_init() runs ahead of the tasks' init_task()), and a task moved
 * between cgroups is requeued around cgroup_move().
 */
s32 BPF_STRUCT_OPS_SLEEPABLE(cadence_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	s32 err = group_init(cgrp, args->weight);

	group_bw_init(cgrp, args);
	return err;
}

void BPF_STRUCT_OPS(cadence_cgroup_exit, struct cgroup *cgrp)
{
	group_bw_forget(cgrp);
	group_exit(cgrp);
}

void BPF_STRUCT_OPS(cadence_cgroup_move, struct task_struct *p, struct cgroup *from,
		    struct cgroup *to)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		group_move(tctx, to);
}

void BPF_STRUCT_OPS(cadence_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	group_set_weight(cgrp, weight);
}

/* cpu.max (since Linux 6.17; the loader leaves it out before). */
void BPF_STRUCT_OPS(cadence_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us, u64 quota_us,
		    u64 burst_us)
{
	group_bw_set(cgrp, period_us, quota_us, burst_us);
}

/* The topology tables are static: a hotplug event restarts the scheduler. */
static void restart_for_hotplug(s32 cpu, bool online)
{
	scx_bpf_exit(SCX_ECODE_ACT_RESTART | SCX_ECODE_RSN_HOTPLUG,
		     "CPU %d went %s, restarting to rebuild the topology", cpu,
		     online ? "online" : "offline");
}

void BPF_STRUCT_OPS(cadence_cpu_online, s32 cpu)
{
	restart_for_hotplug(cpu, true);
}

void BPF_STRUCT_OPS(cadence_cpu_offline, s32 cpu)
{
	restart_for_hotplug(cpu, false);
}

void BPF_STRUCT_OPS(cadence_dump, struct scx_dump_ctx *dctx)
{
	struct cadence_policy pol;
	u64 gen = 0;
	u32 llc;

	if (!policy_copy_locked(&pol, &gen))
		__builtin_memset(&pol, 0, sizeof(pol));
	scx_bpf_dump("scx_cadence: nr_llcs=%u policy gen %llu: slice=[%llu..%llu]ns "
		     "lag=%lluns idle_core_first=%u freq_max=%uMHz wakeup_preempt=%u "
		     "sync_wakeup=%u\n",
		     nr_llcs, gen, pol.slice_min_ns, pol.slice_max_ns, pol.slice_lag_ns,
		     pol.idle_core_first, pol.freq_max_mhz, pol.wakeup_preempt, pol.sync_wakeup);
	scx_bpf_dump("  cpufreq: mode=%u headroom=%u%% scale=%u floor_util=%u band=%u "
		     "interval=%lluns down_hold=%lluns legacy_iowait_boost=%u\n",
		     pol.cpufreq_mode, pol.cpufreq_headroom_pct, pol.cpufreq_scale,
		     pol.cpufreq_floor_util, pol.cpufreq_band, pol.cpufreq_interval_ns,
		     pol.cpufreq_down_hold_ns, pol.cpufreq_iowait_boost);
	bpf_for (llc, 0, nr_llcs) {
		scx_bpf_dump("  llc %u: cpus=%u queued=%d frontier=%llu weight=%llu\n", llc,
			     llc_cpus(llc), scx_bpf_dsq_nr_queued(llc_dsq(llc)),
			     frontier(llc_dsq(llc)), queue_weight(llc_dsq(llc), 0));
	}
}

void BPF_STRUCT_OPS(cadence_dump_cpu, struct scx_dump_ctx *dctx, s32 cpu, bool idle)
{
	s32 queued = scx_bpf_dsq_nr_queued(cpu_dsq(cpu));
	struct cadence_policy pol;
	u64 gen;

	if (idle && queued <= 0)
		return;
	if (!policy_copy_locked(&pol, &gen))
		return;
	scx_bpf_dump(
		"scx_cadence: cpu %d llc=%u own_queued=%d own_frontier=%llu slice_now=%lluns\n",
		cpu, cpu_llc_id(cpu), queued, frontier(cpu_dsq(cpu)), cpu_slice(&pol, cpu));
	util_dump_cpu(cpu);
	cpufreq_dump_cpu(cpu);
}

void BPF_STRUCT_OPS(cadence_dump_task, struct scx_dump_ctx *dctx, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx) {
		scx_bpf_dump("scx_cadence: no task context\n");
		return;
	}
	scx_bpf_dump("scx_cadence: vtime=%llu queue=%llx lag=%lld weight=%u nice_weight=%u "
		     "cgroup=%llu pinned=%d run_start=%llu\n",
		     tctx->vtime, tctx->queue, (s64)(frontier(tctx->queue) - tctx->vtime),
		     tctx->weight, task_weight(p), tctx->cgroup_id, task_pinned(p),
		     tctx->run_start);
	scx_bpf_dump("  deadline=%llu rel_deadline=%lld eligible=%d queued=%d\n", tctx->deadline,
		     (s64)(tctx->deadline - frontier(tctx->queue)),
		     vtime_eligible(tctx->vtime, frontier(tctx->queue)), tctx->queued);
	scx_bpf_dump("  util_avg=%llu util_est=%u runnable_avg=%llu\n", tctx->util.avg.util_avg,
		     pelt_util_est(&tctx->util.avg), tctx->util.avg.runnable_avg);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(cadence_init)
{
	s32 err = topo_init();

	if (err)
		return err;
	/* Where the tasks of a cgroup past its cpu.max wait (cgroup_bw.bpf.c). */
	err = scx_bpf_create_dsq(CADENCE_THROTTLE_DSQ, -1);
	if (err)
		scx_bpf_error("failed to create the throttle DSQ: %d", err);
	return err;
}

void BPF_STRUCT_OPS(cadence_exit, struct scx_exit_info *ei)
{
	bpf_timers_stopped = true;
	UEI_RECORD(uei, ei);
}

/* One callback a line, as the kernel lists sched_ext_ops. */
/* clang-format off */
SCX_OPS_DEFINE(cadence_ops,
	       .select_cpu = (void *)cadence_select_cpu,
	       .enqueue = (void *)cadence_enqueue,
	       .dispatch = (void *)cadence_dispatch,
	       .runnable = (void *)cadence_runnable,
	       .running = (void *)cadence_running,
	       .stopping = (void *)cadence_stopping,
	       .quiescent = (void *)cadence_quiescent,
	       .tick = (void *)cadence_tick,
	       .yield = (void *)cadence_yield,
	       .update_idle = (void *)cadence_update_idle,
	       .enable = (void *)cadence_enable,
	       .disable = (void *)cadence_disable,
	       .set_weight = (void *)cadence_set_weight,
	       .init_task = (void *)cadence_init_task,
	       .exit_task = (void *)cadence_exit_task,
	       .cpu_online = (void *)cadence_cpu_online,
	       .cpu_offline = (void *)cadence_cpu_offline,
	       .cgroup_init = (void *)cadence_cgroup_init,
	       .cgroup_exit = (void *)cadence_cgroup_exit,
	       .cgroup_move = (void *)cadence_cgroup_move,
	       .cgroup_set_weight = (void *)cadence_cgroup_set_weight,
	       .cgroup_set_bandwidth = (void *)cadence_cgroup_set_bandwidth,
	       .dump = (void *)cadence_dump,
	       .dump_cpu = (void *)cadence_dump_cpu,
	       .dump_task = (void *)cadence_dump_task,
	       .init = (void *)cadence_init,
	       .exit = (void *)cadence_exit,
	       /*
		* update_idle() feeds PELT; the built-in idle tracking stays.
		* ENQ_LAST: a task whose slice ended with nothing else to run
		* is enqueued rather than kept, which dispatch() asks for only
		* to move it (place.bpf.h, hold_rebalance()): it refills every
		* other such task's slice itself.
		*/
	       .flags = SCX_OPS_KEEP_BUILTIN_IDLE | SCX_OPS_ENQ_LAST,
	       .name = "scx_cadence");
/* clang-format on */
