/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_cadence: a weighted-fair sched_ext scheduler for machines where
 * frequency, power and placement matter.
 *
 * Design
 * ------
 * Queues. Each LLC has one shared DSQ ordered by virtual time; each CPU has
 * its own vtime DSQ for tasks that can run only there (pinned, or migration
 * disabled). Each queue has its own vtime frontier. A CPU whose slice ended
 * first takes the head of a busier LLC's queue if that one was queued
 * before both local heads; else its task runs on while first in its own
 * queue and nobody waits in the CPU's other queue; else it takes the head
 * of its two queues with the earlier deadline in the LLC's frame, or, past
 * a bound, the one queued first; idle, it steals from other LLCs.
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

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * Mark @p's sync wake-up for enqueue() to queue in the waker's CPU's own
 * queue, beside the task waiting there; false if @p has no context. Not
 * inlined: its frame would add to select_cpu()'s, whose call chain down
 * the small-core search is at the verifier's 512-byte stack limit.
 */
static __noinline bool mark_sync_wake(struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return false;
	tctx->sync_wake = true;
	return true;
}

/*
 * Mark @p's sync wake-up, which found no CPU, to preempt nobody (enqueue(),
 * latency.bpf.h). Not inlined, as mark_sync_wake().
 */
static __noinline void mark_sync_no_preempt(struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		tctx->sync_no_preempt = true;
}

/*
 * Whether the head of @cpu's LLC queue has waited longer than @wait_ns. A
 * sync wake-up then joins @cpu's own queue, where dispatch() weighs it
 * against that head (own_head_first()), not the local queue, which the
 * kernel runs without asking dispatch(): a pair waking each other there
 * keeps the CPU from dispatch() for as long as it bounces, and only a
 * preemption that lands between a wake-up and the waker's sleep breaks the
 * chain. Not inlined: select_cpu()'s stack, as mark_sync_wake().
 */
static __noinline bool llc_head_waited(s32 cpu, u64 wait_ns)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(llc_dsq(cpu_llc_id(cpu)));
	struct task_ctx *hctx = head ? lookup_task_ctx(head) : NULL;

	return hctx && (s64)(scx_bpf_now() - hctx->queued_at) > (s64)wait_ns;
}

s32 BPF_STRUCT_OPS(cadence_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	const struct cadence_policy *pol;
	s32 cpu;

	pol = policy_snapshot_slot(CADENCE_POL_SELECT_CPU);
	if (!pol)
		return prev_cpu;
	cpu = pick_idle_cpu(pol, p, prev_cpu, true, NULL);
	if (cpu < 0) {
		cpu = sync_wakeup_cpu(pol, p, prev_cpu, wake_flags);
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
		if (dsq_queued(cpu_dsq(cpu)) || llc_head_waited(cpu, pol->slice_max_ns))
			return mark_sync_wake(p) ? cpu : prev_cpu;
		/* Behind the waker, which is about to sleep (latency.bpf.h). */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(pol, p, cpu), 0);
		stat_inc(wake_sync);
		return cpu;
	}
	/* The CPU is idle and claimed: run there without queueing. */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, task_slice(pol, p, cpu), 0);
	return cpu;
}

/*
 * A CPU may have gone idle since the search for @p (or a claim was lost)
 * while @p waits in an LLC queue: wake one @p may use, without claiming it,
 * or @p waits for a busy CPU's slice to end while that one sleeps. The woken
 * CPU takes from its LLC's queue or steals, nearest LLC first, as any CPU
 * about to idle does: not always @p, but one waiting task runs.
 */
static __always_inline bool kick_idle_for(const struct task_struct *p)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	u32 cpu = bpf_cpumask_any_and_distribute(idle, p->cpus_ptr);

	scx_bpf_put_idle_cpumask(idle);
	if (cpu >= scx_bpf_nr_cpu_ids())
		return false;
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(enq_kick_idle);
	return true;
}

/*
 * A key just behind that of the last task waiting in @dsq, or @key if
 * that is later or @dsq is empty.
 */
static __always_inline u64 key_behind_tail(u64 dsq, u64 key)
{
	struct task_struct *p;

	bpf_for_each (scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		if (!vtime_before(p->scx.dsq_vtime, key))
			key = p->scx.dsq_vtime + 1;
		break;
	}
	return key;
}

/*
 * @tctx's task, with its deadline set, goes into @dsq now: note when, and
 * its deadline in the frame of its CPU's LLC queue (task_ctx.llc_deadline).
 * A CPU-bound task holding its CPU (task_ctx.held) goes behind the tasks
 * already waiting there, as they waited for that CPU before it was put back:
 * ordered by deadline among them, a CPU-bound task put back ran before the
 * pinned periodic thread it had kept waiting (cyclictest under CPU hogs).
 * Not inlined: enqueue()'s stack, as mark_sync_wake().
 */
static __noinline void note_queued(struct task_ctx *tctx, u64 dsq)
{
	if (!tctx)
		return;
	if (tctx->held)
		tctx->deadline = key_behind_tail(dsq, tctx->deadline);
	tctx->queued_at = scx_bpf_now();
	tctx->llc_deadline = tctx->deadline;
	if (dsq < CADENCE_MAX_CPUS)
		tctx->llc_deadline += frontier(llc_dsq(cpu_llc_id(dsq))) - frontier(dsq);
}

/*
 * Queue @p in @dsq, keyed by its virtual deadline for a slice of @slice_ns;
 * a waking task that goes ahead of the queue's head counts as an overtake.
 */
static __always_inline void queue_task(struct task_struct *p, struct task_ctx *tctx, u64 dsq,
				       u64 slice_ns, u64 enq_flags)
{
	struct task_struct *head;

	tctx->deadline = task_deadline(p, tctx, slice_ns);
	note_queued(tctx, dsq);
	if (enq_flags & SCX_ENQ_WAKEUP) {
		head = __COMPAT_scx_bpf_dsq_peek(dsq);
		if (head && vtime_before(tctx->deadline, head->scx.dsq_vtime))
			stat_inc(wake_overtake);
	}
	tctx->queued = true;
	moves_placed(&tctx->moves, CADENCE_MOVE_QUEUE);
	scx_bpf_dsq_insert_vtime(p, dsq, slice_ns, tctx->deadline, enq_flags);
}

/*
 * Queue @p in @cpu's own DSQ, to wait for that CPU alone (a pinned task, or
 * one holding its CPU), and kick @cpu if it is idle. The kick matters for a
 * task enqueued with SCX_ENQ_LAST: it was its CPU's last one and that CPU
 * is going idle, and only a kick makes an idle CPU look at its own queue
 * again (without one, held tasks waited there 22 s, until the kernel saw
 * an RCU stall). A waking @p that should run at once preempts @cpu's
 * task instead (preempt_on_prev()): true then, and @p is not queued.
 */
static __always_inline bool queue_on_cpu(const struct cadence_policy *pol, struct task_struct *p,
					 struct task_ctx *tctx, s32 cpu, u64 enq_flags)
{
	u64 dsq = cpu_dsq(cpu);

	if (vtime_for_queue(pol, p, tctx, dsq))
		stat_inc(enq_lag_floor);
	if (preempt_on_prev(pol, p, tctx, cpu, enq_flags))
		return true;
	queue_task(p, tctx, dsq, task_slice(pol, p, cpu), enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return false;
}

void BPF_STRUCT_OPS(cadence_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	s32 prev = scx_bpf_task_cpu(p), cpu;
	const struct cadence_policy *pol;
	bool make_room;
	u64 dsq;

	if (!tctx) {
		scx_bpf_error("%s[%d] has no task context", p->comm, p->pid);
		return;
	}

	pol = policy_snapshot_slot(CADENCE_POL_ENQUEUE);
	if (!pol)
		return;
	/* Only the hold path below queues it as holding its CPU. */
	hold_release(tctx);
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
		if (!queue_on_cpu(pol, p, tctx, prev, enq_flags) && !tctx->sync_wake &&
		    (enq_flags & SCX_ENQ_WAKEUP))
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
		 * queues in its LLC like any task.
		 */
		if (!make_room &&
		    (cpu == -EAGAIN ||
		     (cpu < 0 && tctx->stay_home && pol->place_hold && scx_bpf_task_running(p))) &&
		    hold_has_room(prev, tctx) && bpf_cpumask_test_cpu(prev, p->cpus_ptr)) {
			tctx->held = hold_busy(tctx);
			if (queue_on_cpu(pol, p, tctx, prev, enq_flags))
				tctx->held = false;
			else if (tctx->held)
				hold_taken(tctx, prev);
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
	/* A sync wake-up's waker will free a CPU: it preempts nobody. */
	if (!tctx->sync_no_preempt && preempt_on_prev(pol, p, tctx, prev, enq_flags))
		return;
	queue_task(p, tctx, dsq, task_slice(pol, p, prev), enq_flags);
	stat_inc(enq_llc);
	/* No idle CPU will take it: maybe a running task should yield. */
	if (kick_idle_for(p) || !(enq_flags & SCX_ENQ_WAKEUP))
		return;
	if (tctx->sync_no_preempt)
		stat_inc(wake_sync_yield);
	else
		wakeup_preempt(pol, p, tctx, prev, false);
}

/* A queue a CPU may take its next task from, and its head. */
struct queue_head {
	u64 dsq_id;
	/* The head's deadline, in this queue's frame. */
	u64 deadline;
	/* Its place in the order of the two queues (its times 0 if unknown). */
	struct cadence_queue_head_order order;
	/* When it became runnable, jiffies (the kernel's watchdog clock). */
	unsigned long runnable_at;
	/* The head itself (RCU-protected for this callback), NULL if none. */
	struct task_struct *task;
	bool present;
};

/*
 * What dispatch_queues() leaves to the end of dispatch(): when it began,
 * and, with prev first in its own queue, prev's next slice and that queue.
 */
struct dispatch_end {
	u64 now;
	u64 pslice;
	u64 home_dsq;
};

static __always_inline void peek_head(struct queue_head *q, u64 dsq_id)
{
	struct task_struct *p = __COMPAT_scx_bpf_dsq_peek(dsq_id);
	struct task_ctx *tctx = p ? lookup_task_ctx(p) : NULL;

	q->dsq_id = dsq_id;
	q->task = p;
	q->present = p != NULL;
	q->deadline = p ? p->scx.dsq_vtime : 0;
	q->order.queued_at = tctx ? tctx->queued_at : 0;
	q->order.llc_deadline = tctx ? tctx->llc_deadline : 0;
	q->order.rel_deadline = (s64)(q->deadline - frontier(dsq_id));
	q->runnable_at = p ? p->scx.runnable_at : 0;
}

/*
 * Move the first task of @dsq this CPU may run here; true if a task was
 * moved. Its queue's frontier follows it when it starts running
 * (cadence_running()).
 */
static __always_inline bool take_from(u64 dsq)
{
	return scx_bpf_dsq_move_to_local(dsq, 0);
}

/* take_from() one of the two queues @cpu serves, counted by which. */
static __always_inline bool take_queue(u64 dsq, s32 cpu)
{
	if (!take_from(dsq))
		return false;
	if (dsq == cpu_dsq(cpu))
		stat_inc(dispatch_cpu);
	else
		stat_inc(dispatch_llc);
	return true;
}

static __always_inline bool take_head(const struct queue_head *q, s32 cpu)
{
	return q->present && take_queue(q->dsq_id, cpu);
}

/*
 * Of the two queues this CPU serves, the one @pctx's task was last queued
 * in, with the other in @other. A task last queued elsewhere (it ran on an
 * idle CPU since, or moved here) is moved into the frame of this CPU's LLC
 * queue, where it would be queued, and counts as in that queue.
 */
static __always_inline struct queue_head *home_queue(const struct task_struct *prev,
						     struct task_ctx *pctx, struct queue_head *own,
						     struct queue_head *llc,
						     struct queue_head **other)
{
	if (pctx->queue == own->dsq_id) {
		*other = llc;
		return own;
	}
	rebase_vtime(prev, pctx, llc->dsq_id);
	*other = own;
	return llc;
}

/*
 * Longest the head of an LLC's queue is left to an idle CPU while a busy
 * one runs on: 2 jiffies (8 ms at HZ=250). A kicked idle CPU takes it
 * within microseconds; a head still there two ticks later found none that
 * could (claimed meanwhile, or not in its affinity), and the busy CPUs take
 * it again at their next slice end, so deferring holds no task back longer.
 */
#define CADENCE_DEFER_JIFFIES 2

/*
 * Whether a busy CPU whose task would yield to the head of its LLC's queue
 * @q should let it run on instead, because an idle CPU that may run the
 * head was kicked to take it. Without this, a short task queued for a
 * moment (no idle CPU could be claimed when it woke) is taken by the first
 * busy CPU whose slice ends, and that CPU's long-running task is queued and
 * moves to the idle CPU: short tasks coming and going moved CPU-bound tasks
 * between big cores (issue 15: moves by the "requeue" and "queue" paths).
 */
static __always_inline bool defer_head_to_idle(const struct queue_head *q)
{
	if (!q->task || (long)(bpf_jiffies64() - q->runnable_at) >= CADENCE_DEFER_JIFFIES)
		return false;
	return kick_idle_for(q->task);
}

/*
 * Longest a task waits in a CPU's own queue before it runs ahead of that
 * queue's order: 250 jiffies, 1 s at Debian's HZ=250 (0.25 s at HZ=1000,
 * 2.5 s at HZ=100), jiffies as the kernel's watchdog counts. The lead bound
 * (fair.bpf.h, max_wait_reach()) keeps waits near 1 s only for a queue its
 * CPUs serve full time; a CPU serves its own queue only between turns of
 * its LLC's, and under stress-ng's affinity churn beside 700 runnable
 * tasks, pinned tasks ahead of their queue's frontier waited over 8 s (the
 * fair class's longest wait in the same load: 1.5 s).
 */
#define CADENCE_STARVE_JIFFIES 250
/*
 * Tasks of a CPU's own queue looked at for one that waited too long, from
 * the back, where the tasks furthest ahead of the queue's frontier wait for
 * it to drift to them: own queues hold pinned tasks, sync wake-ups and
 * tasks holding their CPU (at most one CPU-bound), rarely more than a few.
 */
#define CADENCE_STARVE_SCAN 32

/*
 * Take a task that has waited CADENCE_STARVE_JIFFIES or longer in @cpu's
 * own queue; true if one was taken. It runs out of the queue's order, so
 * the queue's frontier does not follow it (cadence_running()): the tasks
 * before it keep their lag.
 */
static __noinline bool take_starved(s32 cpu)
{
	u64 dsq = cpu_dsq(cpu), now = bpf_jiffies64();
	struct task_ctx *tctx;
	struct task_struct *p;
	u32 seen = 0;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return false;
	bpf_for_each (scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		if (++seen > CADENCE_STARVE_SCAN)
			break;
		if ((long)(now - p->scx.runnable_at) < CADENCE_STARVE_JIFFIES)
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			tctx = lookup_task_ctx(p);
			if (tctx)
				tctx->queued = false;
			return true;
		}
	}
	return false;
}

/*
 * @prev (@pctx) gives up its CPU to the head of @q at @now: with
 * placement.hold, if that head is short (it woke less than
 * CADENCE_LASTING_NS ago, or has less than half prev's util), prev waits
 * for this CPU rather than move to whichever frees first (enqueue()), as a
 * preempted task waits on its runqueue in the fair class. Between lasting
 * tasks of like util prev is queued as before, so CPU-bound tasks still
 * take turns on every CPU of the LLC.
 */
static __always_inline void note_displaced(const struct cadence_policy *pol, struct task_ctx *pctx,
					   const struct queue_head *q, u64 now)
{
	struct task_ctx *hctx;

	if (!pctx || !pol->place_hold || !q->task)
		return;
	hctx = lookup_task_ctx(q->task);
	pctx->stay_home = hctx && displaces_lightly(hctx, pctx, now);
}

/*
 * Let @prev run another slice of @slice_ns on @cpu, with the deadline of
 * that slice (EEVDF's update_deadline() when a slice is used up).
 */
static __always_inline void keep_running(const struct cadence_policy *pol, struct task_struct *prev,
					 struct task_ctx *pctx, s32 cpu, u64 slice_ns, u64 now)
{
	scx_bpf_task_set_slice(prev, slice_ns);
	pctx->run_start = now;
	/* A new slice in full: a new request, whose minimum counts afresh. */
	pctx->granted = slice_ns;
	pctx->parity_ran = 0;
	/* Kept since it yielded (nothing else could run here): that yield is spent. */
	pctx->yielded = false;
	pctx->deadline = task_deadline(prev, pctx, slice_ns);
	run_record(cpu, prev, pctx, now);
	slice_timer_start(pol, cpu, now, slice_ns, now);
	stat_inc(dispatch_keep);
}

/*
 * dispatch() on @cpu at end->now, all but its end: true if it took a task
 * or kept prev (@pctx, if prev is queued); false if prev is first in its
 * own queue and nothing may run here before it, with end->pslice and
 * end->home_dsq set for the caller, which decides whether prev moves
 * (hold_rebalance()) or runs on. Not inlined: the caller's frame, not
 * this one's, is on the call chain down the placement search, which the
 * verifier counts against 512 bytes.
 */
static __noinline bool dispatch_queues(s32 cpu, struct task_struct *prev, struct task_ctx *pctx,
				       const struct cadence_policy *pol, struct dispatch_end *end)
{
	u64 now = end->now;
	u32 llc = cpu_llc_id(cpu), i;
	struct queue_head own_head, llc_head, far_head;
	struct queue_head *own_q = &own_head, *llc_q = &llc_head, *far_q = &far_head;
	struct queue_head *first, *second, *home = NULL, *other = NULL;
	u64 pslice = 0, pdeadline = 0;
	bool prev_first = false;
	s32 busier;

	/* No task waits in this CPU's own queue past the bound. */
	if (take_starved(cpu)) {
		stat_inc(dispatch_starved);
		return true;
	}

	peek_head(own_q, cpu_dsq(cpu));
	peek_head(llc_q, llc_dsq(llc));

	/*
	 * Another LLC has more waiting per CPU: take its head if it was
	 * queued before both local heads (prev then queues here).
	 */
	if (nr_llcs > 1) {
		busier = llc_to_balance(llc);
		if (busier >= 0) {
			peek_head(far_q, llc_dsq(busier));
			if (far_q->present &&
			    (!own_q->present || head_queued_first(&far_q->order, &own_q->order)) &&
			    (!llc_q->present || head_queued_first(&far_q->order, &llc_q->order)) &&
			    take_from(far_q->dsq_id)) {
				stat_inc(dispatch_balance);
				return true;
			}
		}
	}

	if (pctx) {
		home = home_queue(prev, pctx, own_q, llc_q, &other);
		/* Woken onto an idle CPU, it was never queued: bound it now. */
		bound_lag(pol, prev, pctx, false);
		/* The deadline of prev's next slice, were it queued now. */
		pslice = task_slice(pol, prev, cpu);
		pdeadline = task_deadline(prev, pctx, pslice);
	}
	if (pctx && home && other) {
		/* One that yielded goes behind whatever waits (cadence_yield()). */
		prev_first = !home->present ||
			     (!pctx->yielded && !vtime_before(home->deadline, pdeadline));
		/*
		 * prev would yield to the LLC queue's head alone (it is behind
		 * that head in its own queue, or first there with the head in
		 * the other queue): if an idle CPU can take the head, prev runs
		 * on.
		 */
		if (pol->place_hold && llc_q->present &&
		    (home == llc_q ? !prev_first && !own_q->present : prev_first) &&
		    defer_head_to_idle(llc_q)) {
			keep_running(pol, prev, pctx, cpu, pslice, now);
			if (prev_first)
				advance_frontier(pctx->queue, pctx->vtime);
			stat_inc(dispatch_defer);
			return true;
		}
	}
	if (pctx && home && other && prev_first) {
		/*
		 * prev is still first in its own queue: it runs on unless a
		 * task waits in the other queue, which then goes first (prev
		 * has not waited at all), not the head prev is ahead of. That
		 * head displaces prev like any other: most often a per-CPU
		 * kworker woken in this CPU's own queue, and without the hold
		 * the CPU-bound task it displaced went to the LLC queue and
		 * to whichever CPU freed first (traced in the bench's churn
		 * runs: most of the moves by the queue path).
		 */
		if (take_head(other, cpu)) {
			note_displaced(pol, pctx, other, now);
			return true;
		}
		/*
		 * A pinned CPU-bound task waits behind prev, which may run on
		 * an idle CPU: the pinned one runs, and prev, enqueued, leaves.
		 */
		if (home == own_q && make_room_for_pinned(prev, cpu) && take_head(own_q, cpu)) {
			stat_inc(dispatch_make_room);
			return true;
		}
		/* The rest is the caller's (cadence_dispatch()). */
		end->home_dsq = home->dsq_id;
		end->pslice = pslice;
		return false;
	}

	if (own_q->present &&
	    (!llc_q->present || own_head_first(&own_q->order, &llc_q->order, now))) {
		first = own_q;
		second = llc_q;
	} else {
		first = llc_q;
		second = own_q;
	}
	if (take_head(first, cpu)) {
		note_displaced(pol, pctx, first, now);
		return true;
	}
	if (take_head(second, cpu)) {
		note_displaced(pol, pctx, second, now);
		return true;
	}

	/* Idle otherwise: pull from the other LLCs, nearest index first. */
	bpf_for (i, 1, nr_llcs) {
		if (take_from(llc_dsq((llc + i) % nr_llcs))) {
			stat_inc(dispatch_steal);
			return true;
		}
	}

	/* The queued heads cannot run here: prev goes on. */
	if (pctx)
		keep_running(pol, prev, pctx, cpu, pslice, now);
	return true;
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

	pol = policy_snapshot_slot(CADENCE_POL_DISPATCH);
	if (!pol)
		return;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		pctx = lookup_task_ctx(prev);
		if (pctx)
			charge_vtime(prev, pctx, cpu, end.now);
	}
	if (dispatch_queues(cpu, prev, pctx, pol, &end) || !prev || !pctx)
		return;
	/*
	 * prev is first in its own queue and nothing may run here before it.
	 * A lasting imbalance: not refilled, it is enqueued and moves. What
	 * waits behind it here runs now: once prev left, nothing would wake
	 * this CPU for it, and the CPU would idle with it queued.
	 */
	if (hold_rebalance(pol, prev, pctx, cpu)) {
		take_queue(end.home_dsq, cpu);
		stat_inc(dispatch_rebalance);
		return;
	}
	keep_running(pol, prev, pctx, cpu, end.pslice, end.now);
	advance_frontier(pctx->queue, pctx->vtime);
}

void BPF_STRUCT_OPS(cadence_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	struct cadence_policy pol;
	u64 now = scx_bpf_now();

	if (!tctx)
		return;
	util_runnable(tctx, now, enq_flags);
	/* A wake-up starts a new stretch of running without a sleep. */
	if (enq_flags & SCX_ENQ_WAKEUP)
		tctx->awake_since = now;
	/* Placed by select_cpu(), unless enqueue() says otherwise. */
	moves_placed(&tctx->moves, CADENCE_MOVE_WAKE);
	/* It weighs in its queue's clock while runnable (fair.bpf.h). */
	count_weight(tctx, task_weight(p));
	policy_snapshot(&pol);
	/*
	 * select_cpu() may run it without enqueue(): bound its lag here too,
	 * by the wake-up lag only if it slept (not for a nice or affinity
	 * change, which dequeues and requeues it).
	 */
	if (bound_lag(&pol, p, tctx, enq_flags & SCX_ENQ_WAKEUP))
		stat_inc(enq_lag_floor);
	cpufreq_runnable(p, tctx, &pol, enq_flags);
}

void BPF_STRUCT_OPS(cadence_running, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	struct cadence_cpu_util *cu;
	struct cadence_policy pol;
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = scx_bpf_now();
	bool iowait;

	if (!tctx)
		return;
	tctx->charged_at = now;
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
	/* Taken from a queue: the queue's frontier follows it (fair.bpf.h). */
	if (tctx->queued) {
		advance_frontier(tctx->queue, tctx->vtime);
		tctx->queued = false;
	}
	/* The deadline of the slice it got, queued or not. */
	tctx->deadline = task_deadline(p, tctx, p->scx.slice);
	run_record(cpu, p, tctx, now);
	moves_running(&tctx->moves, cpu);
	policy_snapshot(&pol);
	/*
	 * Others wait for this CPU: its slice ends on time, not at a tick.
	 * Not from another CPU (an attribute change of a running task): the
	 * timer would fire there, timed by that CPU's clock.
	 */
	if (cpu == bpf_get_smp_processor_id())
		slice_timer_start(&pol, cpu, now, p->scx.slice, now);
	cu = util_running(p, tctx, cpu, now);
	if (!cu)
		return;
	iowait = tctx->iowait_wake;
	tctx->iowait_wake = false;
	cpufreq_update(p, tctx, cu, &pol, iowait, now);
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
	util_stopping(p, tctx, cpu, now);
}

void BPF_STRUCT_OPS(cadence_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return;
	uncount_weight(tctx);
	/* Dequeued while it held its CPU: it holds it no more. */
	hold_release(tctx);
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
	struct cadence_policy pol;
	u64 now = scx_bpf_now(), held_ns, slice;

	/* Every busy CPU picks up a policy change within one tick. */
	policy_snapshot(&pol);
	if (!tctx)
		return;
	cu = util_tick(p, tctx, cpu, &pol, now);
	if (cu)
		cpufreq_update(p, tctx, cu, &pol, false, now);
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
		if (p->scx.slice < pol.slice_min_ns)
			scx_bpf_task_set_slice(p, pol.slice_min_ns);
		stat_inc(tick_rcu_reader);
		return;
	}
	if (!nr_waiting(cpu))
		return;
	/*
	 * Others wait: end the slice once this task has had its share, or
	 * once one of them should preempt it (latency.bpf.h).
	 */
	if (ran_since(tctx->run_start, now) >= task_slice(&pol, p, cpu)) {
		scx_bpf_task_set_slice(p, 0);
		/* Used up, however long a slice it got: its next run begins a request. */
		tctx->granted = 0;
		stat_inc(tick_preempt);
	} else if (waiting_preempts(&pol, cpu, now, &held_ns)) {
		scx_bpf_task_set_slice(p, 0);
		stat_inc(tick_wake_preempt);
	} else if (held_ns) {
		/* Held back by a task whose request has just begun: not a tick more. */
		parity_timer_arm(cpu, held_ns);
	} else {
		/* Others came to wait since it began: end its slice on time. */
		slice = task_slice(&pol, p, cpu);
		slice_timer_start(&pol, cpu, tctx->run_start, slice, now);
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
	if (tctx)
		uncount_weight(tctx);
}

void BPF_STRUCT_OPS(cadence_set_weight, struct task_struct *p, u32 weight)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	/* Reniced while runnable: its queue's clock weighs the new weight. */
	if (tctx && tctx->counted_in != CADENCE_NO_QUEUE)
		count_weight(tctx, task_weight(p));
}

void BPF_STRUCT_OPS(cadence_update_idle, s32 cpu, bool idle)
{
	struct cadence_policy pol;

	util_update_idle(cpu, idle);
	if (!idle)
		return;
	/* An idle CPU holds no frequency up: it asks for its floor. */
	policy_snapshot(&pol);
	cpufreq_going_idle(cpu, &pol);
}

s32 BPF_STRUCT_OPS(cadence_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->queue = CADENCE_NO_QUEUE;
	tctx->counted_in = CADENCE_NO_QUEUE;
	moves_init(&tctx->moves);
	util_init_task(tctx);
	/* Forked now, or runnable since before the scheduler attached. */
	tctx->awake_since = scx_bpf_now();
	return 0;
}

void BPF_STRUCT_OPS(cadence_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	bpf_task_storage_delete(&task_ctxs, p);
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
	scx_bpf_dump(
		"scx_cadence: vtime=%llu queue=%llx lag=%lld weight=%u pinned=%d run_start=%llu\n",
		tctx->vtime, tctx->queue, (s64)(frontier(tctx->queue) - tctx->vtime),
		task_weight(p), task_pinned(p), tctx->run_start);
	scx_bpf_dump("  deadline=%llu rel_deadline=%lld eligible=%d queued=%d\n", tctx->deadline,
		     (s64)(tctx->deadline - frontier(tctx->queue)),
		     vtime_eligible(tctx->vtime, frontier(tctx->queue)), tctx->queued);
	scx_bpf_dump("  util_avg=%llu util_est=%u runnable_avg=%llu\n", tctx->util.avg.util_avg,
		     pelt_util_est(&tctx->util.avg), tctx->util.avg.runnable_avg);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(cadence_init)
{
	return topo_init();
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
