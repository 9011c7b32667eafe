/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wake-up latency: what each CPU runs (its task's deadline and since when),
 * wake-up preemption and sync wake-ups. The math is in deadline.bpf.h.
 *
 * Wake-up preemption, if the policy allows it (latency.wakeup_preempt),
 * follows fair.c: check_preempt_wakeup_fair() preempts the running task of
 * the wake-up's runqueue when __pick_eevdf() would now pick the waking one:
 * it is eligible, and the running task is not (it ran past its queue's V),
 * has used up its slice (update_deadline()) or has the later deadline;
 * a running task that is eligible and within its slice also keeps the
 * CPU until it has run the policy's slice.min_us (run-to-parity, as
 * fair.c's protect_slice(); deadline.bpf.h's verdict), counted within its
 * request, across runs a preemption cut short (parity_credit()). A
 * waking task that found no idle CPU:
 *   - runs at once on the CPU it was placed on (its previous one), ahead
 *     of the running task, if it is due before the head of the queue it
 *     would join and the verdict says so: SCX_ENQ_PREEMPT on that CPU's
 *     local DSQ (preempt_on_prev()). No kick, no dispatch() and no other
 *     CPU come between; measured with cyclictest's pinned threads beside
 *     CPU hogs, going through the queue and a kick instead let the LLC
 *     queue's older heads run first and doubled the mean wait;
 *   - else it is queued, and the CPUs that could run it are searched for
 *     a task the verdict says to preempt: the previous CPU if its task
 *     qualifies, else the one with the latest deadline, kicked with
 *     SCX_KICK_PREEMPT; its dispatch() then takes the queue's head;
 *   - a wake-up refused because the running task had not run its minimum
 *     slice or had the earlier deadline is decided again at every tick
 *     (waiting_preempts()), as the fair class re-decides at the tick,
 *     instead of waiting for the whole slice to end; one refused for the
 *     minimum slice alone also when that minimum is over, by a timer
 *     (parity_timer.bpf.h).
 * The running task's record (cpu_runs) holds its deadline and its vtime
 * when it got its slice; the verdict ages the vtime by the time run since,
 * as charge_vtime() will charge it, to tell whether it is still eligible.
 *
 * Sync wake-ups. SCX_WAKE_SYNC says the waker is about to sleep (pipe and
 * socket ping-pong). If the policy allows it (latency.sync_wakeup) and no
 * idle CPU was found, the wakee goes to the waker's CPU when it may run
 * there, that CPU shares the LLC of the wakee's previous CPU, and nothing
 * waits in its local queue: it runs as soon as the waker sleeps, instead
 * of queueing for a slice to end. If a task waits in that CPU's own queue
 * (at most CADENCE_SYNC_MAX_WAITING; most often a task the waker preempted,
 * held there by placement.hold), the wakee joins that queue, ordered by
 * deadline with it (enqueue()), rather than going ahead of it in the local
 * queue, where a ping-pong pair would keep it waiting for as long as the
 * pair ran. An idle CPU comes first, as in the fair class
 * (select_idle_sibling() prefers an idle prev or sibling to the waker's
 * busy CPU): the hint is only a hint, and a
 * waker that stays busy after it (measured: a pipe writer that spins 5 ms
 * on, tests/vm/guest/idle_place_wakes.py) kept every wake-up waiting
 * behind it while CPUs idled. A sync wake-up that finds no CPU at all (no
 * idle one, and the waker's is taken) is queued and preempts nobody
 * (select_cpu() marks it, task_ctx.sync_no_preempt): its waker is about
 * to free a CPU, and preempting another task for it cost hackbench, whose
 * wake-ups are nearly all sync, 11% of its time (docs/design.md).
 */
#ifndef __CADENCE_LATENCY_BPF_H
#define __CADENCE_LATENCY_BPF_H

/*
 * Most CPU ids one wake-up looks at for a task to preempt, starting at the
 * task's previous CPU: 64 covers a whole LLC of today's client parts and
 * keeps the search short on servers, where it covers part of the LLC.
 */
#define CADENCE_PREEMPT_SCAN_CPUS 64

/* What one CPU runs, as its own callbacks last wrote it. */
struct cpu_run {
	/* The running task's deadline and the queue whose frame it is in. */
	u64 deadline;
	u64 queue;
	/* When it got its current slice, ns, and its vtime then. */
	u64 run_start;
	u64 vtime;
	/* What it ran of its request before @run_start (task_ctx). */
	u64 parity_ran;
	/* Its weight, to age @vtime by the time run since. */
	u32 weight;
	/*
	 * Its hold_util() when it started running, and since when it has
	 * been runnable without a sleep (place.bpf.h's hold).
	 */
	u64 util;
	u64 awake_since;
	/* 1 while one of our tasks runs there. */
	u32 active;
};

/*
 * By CPU. Other CPUs read it without a lock: a torn or stale record costs at
 * most one preemption too many or too few.
 */
static struct cpu_run cpu_runs[CADENCE_MAX_CPUS];

/* @p's virtual deadline for a slice of @slice_ns from its current vtime. */
static __always_inline u64 task_deadline(const struct task_struct *p, const struct task_ctx *tctx,
					 u64 slice_ns)
{
	return virtual_deadline(tctx->vtime, slice_ns, tctx->weight, tctx->wmult);
}

/* @cpu started running @p (@tctx), with its deadline, at @now. */
static __always_inline void run_record(s32 cpu, const struct task_struct *p,
				       const struct task_ctx *tctx, u64 now)
{
	struct cpu_run *r = &cpu_runs[cpu_index(cpu)];

	r->deadline = tctx->deadline;
	r->queue = tctx->queue;
	r->run_start = now;
	r->parity_ran = tctx->parity_ran;
	r->vtime = tctx->vtime;
	r->weight = tctx->weight;
	r->util = hold_util(tctx);
	r->awake_since = tctx->awake_since;
	r->active = 1;
}

/* @cpu's task stopped. */
static __always_inline void run_clear(s32 cpu)
{
	cpu_runs[cpu_index(cpu)].active = 0;
}

/*
 * Time run from @start to @now, ns. scx_bpf_now() is monotonic per CPU
 * only: a start taken on another CPU a little ahead of this CPU's now is
 * no time run, not 2^64 ns.
 */
static __always_inline u64 ran_since(u64 start, u64 now)
{
	return (s64)(now - start) > 0 ? now - start : 0;
}

/*
 * @tctx's task stops at @now, still @runnable or not: what it ran since
 * run_start counts toward the minimum slice of its next run while its
 * request goes on (parity_credit()).
 */
static __always_inline void parity_note_stop(struct task_ctx *tctx, bool runnable, u64 now)
{
	/* Stopped from another CPU (an affinity or weight change): ran_since(). */
	tctx->parity_ran = parity_credit(tctx->parity_ran, ran_since(tctx->run_start, now),
					 tctx->granted, runnable);
}

/*
 * The decision's inputs for waking @tctx's task against what @cpu runs at
 * @now (deadlines relative to each one's queue frontier).
 */
static __always_inline void preempt_inputs(struct cadence_preempt_in *in, u64 min_run_ns,
					   const struct task_ctx *tctx, s32 cpu, u64 now)
{
	const struct cpu_run *r = &cpu_runs[cpu_index(cpu)];
	u64 wake_front = frontier(tctx->queue), curr_front = frontier(r->queue), ran, vtime;

	in->wake_rel_deadline = (s64)(tctx->deadline - wake_front);
	in->wake_eligible = vtime_eligible(tctx->vtime, wake_front);
	in->curr_active = r->active;
	in->curr_rel_deadline = (s64)(r->deadline - curr_front);
	/* Another CPU's start may be a little ahead of this CPU's now. */
	ran = ran_since(r->run_start, now);
	/* Toward run-to-parity's minimum, what it ran before this run counts. */
	in->curr_ran_ns = ran + r->parity_ran;
	in->min_run_ns = min_run_ns;
	/*
	 * The running task's vtime now, and its queue's frontier with the
	 * drift that time will add, as charge_vtime() will charge both when
	 * the task stops or its slice ends: until then both records are
	 * stale by the time it has run since.
	 */
	vtime = r->vtime + scale_by_weight_inverse(ran, r->weight);
	if (queue_served_by(r->queue, cpu))
		curr_front += ran * CADENCE_NICE_0_WEIGHT / queue_weight(r->queue, r->weight);
	in->curr_eligible = vtime_eligible(vtime, curr_front);
	in->curr_done = !vtime_before(vtime, r->deadline);
}

/*
 * The rest of the running task's minimum slice in @in: how long
 * run-to-parity (CADENCE_PREEMPT_PARITY) still holds a wake-up back; 0
 * once it has run that minimum.
 */
static __always_inline u64 parity_rest_ns(const struct cadence_preempt_in *in)
{
	return in->curr_ran_ns < in->min_run_ns ? in->min_run_ns - in->curr_ran_ns : 0;
}

/*
 * Whether a preemption decided on @in (CADENCE_PREEMPT_YES) took the CPU
 * from a task with the earlier deadline: one past its share or done with
 * its slice (deadline.bpf.h), which only the running task's vtime in its
 * record (run_record()) tells.
 */
static __always_inline bool preempts_spent(const struct cadence_preempt_in *in)
{
	return in->wake_rel_deadline >= in->curr_rel_deadline;
}

/* Count a preemption, and apart one of a task with the earlier deadline. */
static __always_inline void count_preempt(bool spent)
{
	stat_inc(wake_preempt);
	if (spent)
		stat_inc(wake_preempt_spent);
}

/*
 * The verdict (deadline.bpf.h) for waking @tctx's task against what @cpu
 * runs at @now, with its inputs left in @in. Global, not static: the
 * verifier checks a global function once, on its own, instead of once
 * per CPU a wake-up's scan visits; inlined there, the scan's 64 turns made
 * enqueue() take 25 s instead of 8 s to load under TCG.
 */
__noinline u32 cadence_preempt_check(struct cadence_preempt_in *in, const struct task_ctx *tctx,
				     s32 cpu, u64 min_run_ns, u64 now)
{
	if (!in || !tctx)
		return CADENCE_PREEMPT_NO_CURR;
	preempt_inputs(in, min_run_ns, tctx, cpu, now);
	return wakeup_preempt_verdict(in);
}

/*
 * @p (@tctx) woke and was queued: kick the CPU, among those near @prev it
 * may run on, whose task it should preempt: @prev if its task qualifies,
 * else the one with the latest deadline (see the top of this file).
 * @pinned: only @prev. Not inlined:
 * its frame would add to enqueue()'s and pass the verifier's 512-byte
 * stack limit on the placement search's call chain.
 */
static __noinline void wakeup_preempt(const struct cadence_policy *pol, const struct task_struct *p,
				      const struct task_ctx *tctx, s32 prev, bool pinned)
{
	u32 nr = scx_bpf_nr_cpu_ids(), llc = cpu_llc_id(prev), i, verdict;
	u32 scan = pinned ? 1 : (nr < CADENCE_PREEMPT_SCAN_CPUS ? nr : CADENCE_PREEMPT_SCAN_CPUS);
	struct cadence_preempt_in in = {};
	s64 latest = 0;
	s32 victim = -1, held = -1, cpu;
	bool spent = false;
	u64 now = scx_bpf_now(), held_left = 0;

	if (!pol->wakeup_preempt)
		return;
	bpf_for (i, 0, scan) {
		cpu = (prev + i) % nr;
		if (cpu_llc_id(cpu) != llc || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		verdict = cadence_preempt_check(&in, tctx, cpu, pol->slice_min_ns, now);
		if (verdict == CADENCE_PREEMPT_INELIGIBLE)
			return;
		/* Of the CPUs whose task holds it back, the one free first. */
		if (verdict == CADENCE_PREEMPT_PARITY &&
		    (held < 0 || parity_rest_ns(&in) < held_left)) {
			held = cpu;
			held_left = parity_rest_ns(&in);
		}
		if (verdict != CADENCE_PREEMPT_YES)
			continue;
		/*
		 * @prev first, as the fair class preempts on the wake-up's
		 * target runqueue only: it is most often the CPU the wake-up
		 * runs on (a timer or the waker there), so no IPI is needed.
		 */
		if (cpu == prev) {
			victim = cpu;
			spent = preempts_spent(&in);
			break;
		}
		if (victim < 0 || in.curr_rel_deadline > latest) {
			victim = cpu;
			latest = in.curr_rel_deadline;
			spent = preempts_spent(&in);
		}
	}
	if (victim >= 0) {
		scx_bpf_kick_cpu(victim, SCX_KICK_PREEMPT);
		count_preempt(spent);
	} else if (held >= 0) {
		stat_inc(wake_parity);
		parity_timer_arm(held, held_left);
	}
}

/*
 * Waking @p (@tctx) onto @prev, its CPU, where it would join the queue
 * its vtime is already in the frame of (tctx->queue: @prev's own queue if
 * @p is pinned, else @prev's LLC's) with the slice @slice_ns (the caller's,
 * which queues it so otherwise): if it is due before that queue's head and
 * before @prev's running task (the verdict), run it on @prev at once, ahead
 * of that task, as the fair class preempts on the wake-up's runqueue:
 * SCX_ENQ_PREEMPT on @prev's local DSQ zeroes the running task's slice and
 * reschedules @prev directly, with no kick, no dispatch() and no other CPU
 * taking it first. The preempted task, put back while it runs, waits for
 * @prev in its own queue (with placement.hold, task_ctx.stay_home). True if
 * @p was inserted. Not inlined: enqueue()'s stack.
 */
static __noinline bool preempt_on_prev(const struct cadence_policy *pol, struct task_struct *p,
				       struct task_ctx *tctx, u64 slice_ns, u64 enq_flags)
{
	s32 prev = scx_bpf_task_cpu(p);
	u64 dsq = tctx->queue;
	struct cadence_preempt_in in = {};
	struct task_struct *head;

	if (!pol->wakeup_preempt || !(enq_flags & SCX_ENQ_WAKEUP))
		return false;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | prev) > 0)
		return false;
	tctx->deadline = task_deadline(p, tctx, slice_ns);
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (head && !vtime_before(tctx->deadline, head->scx.dsq_vtime))
		return false;
	if (cadence_preempt_check(&in, tctx, prev, pol->slice_min_ns, scx_bpf_now()) !=
	    CADENCE_PREEMPT_YES)
		return false;
	tctx->queued = false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags | SCX_ENQ_PREEMPT);
	count_preempt(preempts_spent(&in));
	return true;
}

/*
 * Whether the head of @dsq should preempt the task @cpu runs, by the
 * wake-up rule at @now, or because run-to-parity alone holds it back and it
 * has waited longer than slice.max. If run-to-parity holds it back,
 * *@held_ns is set to the rest of the running task's minimum slice.
 */
static __always_inline bool head_preempts(u64 dsq, s32 cpu, const struct cadence_policy *pol,
					  u64 now, u64 *held_ns)
{
	struct cadence_preempt_in in = {};
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(dsq);
	struct task_ctx *hctx;
	u32 verdict;

	if (!head)
		return false;
	hctx = lookup_task_ctx(head);
	if (!hctx)
		return false;
	verdict = cadence_preempt_check(&in, hctx, cpu, pol->slice_min_ns, now);
	/*
	 * Run-to-parity holds back no head that has waited a whole longest
	 * slice: tasks that wake each other on this CPU begin a request at
	 * every switch, and would hold it back for as long as they bounce.
	 */
	if (verdict == CADENCE_PREEMPT_PARITY &&
	    (s64)(now - hctx->queued_at) > (s64)pol->slice_max_ns)
		return true;
	if (verdict == CADENCE_PREEMPT_PARITY)
		*held_ns = parity_rest_ns(&in);
	return verdict == CADENCE_PREEMPT_YES;
}

/*
 * At the tick, or when a hold ends (parity_timer.bpf.h): whether a task
 * waiting for @cpu (the head of its own queue or of its LLC's) should now
 * preempt the task it runs, as the fair class re-decides at every tick
 * (update_curr() reschedules once the running task's protection or its
 * deadline has passed): a wake-up refused because the running task had
 * not run its minimum slice yet, or had the earlier deadline, is decided
 * again instead of waiting out the whole slice. If not, and a head is
 * held back by run-to-parity alone (the CPU switched to a task whose
 * request has just begun), *@held_ns is the rest of that task's minimum,
 * else 0.
 */
static __noinline bool waiting_preempts(const struct cadence_policy *pol, s32 cpu, u64 now,
					u64 *held_ns)
{
	*held_ns = 0;
	if (!pol->wakeup_preempt)
		return false;
	return head_preempts(cpu_dsq(cpu), cpu, pol, now, held_ns) ||
	       head_preempts(llc_dsq(cpu_llc_id(cpu)), cpu, pol, now, held_ns);
}

/*
 * Most tasks that may wait in the waker's CPU's own queue for a sync
 * wake-up to join them there, ordered by deadline: one, most often a
 * CPU-bound task the waker preempted, which waits there for its CPU
 * (placement.hold). Refused then, the wake-ups of a pipe pair beside 4
 * hogs went to the LLC queue and waited for a slice to end: 10-14 s for
 * 2000 round trips instead of 1-3 s. More than one, and sync wake-ups
 * could pile tasks up on one CPU, which alone serves its own queue.
 */
#define CADENCE_SYNC_MAX_WAITING 1

/*
 * Whether @p may run on the CPU this runs on, its waker's, and that CPU
 * shares @prev's LLC: the CPU a sync wake-up would go to.
 */
static __always_inline bool waker_cpu_usable(const struct task_struct *p, s32 prev)
{
	s32 cpu = bpf_get_smp_processor_id();

	return bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && cpu_llc_id(cpu) == cpu_llc_id(prev);
}

/*
 * A sync wake-up's CPU, for a task that found no idle CPU: the waker's, if
 * the policy allows it, @p may run there, it shares @prev's LLC, nothing
 * waits in its local queue and at most CADENCE_SYNC_MAX_WAITING tasks in
 * its own (*@own: how many); else -1.
 */
static __always_inline s32 sync_wakeup_cpu(const struct cadence_policy *pol,
					   const struct task_struct *p, s32 prev, u64 wake_flags,
					   u64 *own)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct task_struct *waker;

	if (!pol->sync_wakeup || !(wake_flags & SCX_WAKE_SYNC))
		return -1;
	waker = (struct task_struct *)bpf_get_current_task_btf();
	if (waker->flags & PF_EXITING)
		return -1;
	if (!waker_cpu_usable(p, prev))
		return -1;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL))
		return -1;
	*own = dsq_queued(cpu_dsq(cpu));
	if (*own > CADENCE_SYNC_MAX_WAITING)
		return -1;
	return cpu;
}

#endif /* __CADENCE_LATENCY_BPF_H */
