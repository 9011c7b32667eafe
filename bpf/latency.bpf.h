/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wake-up latency: what each CPU runs (its task's deadline and since when),
 * wake-up preemption and sync wake-ups. The math is in deadline.bpf.h.
 *
 * Wake-up preemption. A waking task that found no idle CPU is queued (its
 * LLC's queue, or its CPU's if pinned). If the policy allows it
 * (latency.wakeup_preempt), the CPUs that could run it are searched for a
 * task with a later deadline that has run at least the minimum slice
 * (deadline.bpf.h's verdict); the task's previous CPU is kicked with
 * SCX_KICK_PREEMPT if its task qualifies (no IPI when the wake-up runs
 * there, as a timer's does), else the one with the latest deadline. The
 * kernel then sets that task's slice to 0 and reschedules, its CPU's
 * dispatch() finds the queue's head due before it (the same deadline
 * order), takes the head and queues the preempted task. EEVDF does the
 * same per runqueue in check_preempt_wakeup_fair(); with RUN_TO_PARITY the
 * running task keeps the CPU until it has run its slice protection, here
 * the policy's slice.min_us.
 *
 * Sync wake-ups. SCX_WAKE_SYNC says the waker is about to sleep (pipe and
 * socket ping-pong). If the policy allows it (latency.sync_wakeup) and no
 * idle CPU was found, the wakee goes to the waker's CPU when it may run
 * there, that CPU shares the LLC of the wakee's previous CPU, and nothing
 * else waits there (its local and own queues are empty): it runs as soon
 * as the waker sleeps, instead of queueing for a slice to end. An idle CPU
 * comes first, as in the fair class (select_idle_sibling() prefers an idle
 * prev or sibling to the waker's busy CPU): the hint is only a hint, and a
 * waker that stays busy after it (measured: a pipe writer that spins 5 ms
 * on, tests/vm/guest/idle_place_wakes.py) kept every wake-up waiting
 * behind it while CPUs idled.
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
	/* When it got its current slice, ns. */
	u64 run_start;
	/* Its hold_util() when it started running (place.bpf.h's hold). */
	u64 util;
	/* 1 while one of our tasks runs there. */
	u32 active;
};

/*
 * By CPU. Other CPUs read it without a lock: a torn or stale record costs at
 * most one preemption too many or too few.
 */
static struct cpu_run cpu_runs[CADENCE_MAX_CPUS];

/* The kernel's inverse weight of @p, for calc_delta_fair(). */
static __always_inline u32 task_wmult(const struct task_struct *p)
{
	u32 idx;

	if (p->policy == CADENCE_SCHED_IDLE)
		return CADENCE_WMULT_IDLEPRIO;
	idx = (u32)(p->static_prio - CADENCE_MAX_RT_PRIO);
	if (idx >= CADENCE_NR_NICE)
		return cadence_prio_to_wmult[20];
	return cadence_prio_to_wmult[idx];
}

/* @p's virtual deadline for a slice of @slice_ns from its current vtime. */
static __always_inline u64 task_deadline(const struct task_struct *p, const struct task_ctx *tctx,
					 u64 slice_ns)
{
	return virtual_deadline(tctx->vtime, slice_ns, task_weight(p), task_wmult(p));
}

/* @cpu started running @tctx's task, with its deadline, at @now. */
static __always_inline void run_record(s32 cpu, const struct task_ctx *tctx, u64 now)
{
	struct cpu_run *r = &cpu_runs[cpu_index(cpu)];

	r->deadline = tctx->deadline;
	r->queue = tctx->queue;
	r->run_start = now;
	r->util = hold_util(tctx);
	r->active = 1;
}

/* @cpu's task stopped. */
static __always_inline void run_clear(s32 cpu)
{
	cpu_runs[cpu_index(cpu)].active = 0;
}

/*
 * The decision's inputs for waking @tctx's task against what @cpu runs at
 * @now (deadlines relative to each one's queue frontier).
 */
static __always_inline void preempt_inputs(struct cadence_preempt_in *in,
					   const struct cadence_policy *pol,
					   const struct task_ctx *tctx, s32 cpu, u64 now)
{
	const struct cpu_run *r = &cpu_runs[cpu_index(cpu)];
	u64 wake_front = frontier(tctx->queue);

	in->wake_rel_deadline = (s64)(tctx->deadline - wake_front);
	in->wake_eligible = vtime_eligible(tctx->vtime, wake_front);
	in->curr_active = r->active;
	in->curr_rel_deadline = (s64)(r->deadline - frontier(r->queue));
	/*
	 * scx_bpf_now() is monotonic per CPU only: another CPU's start can be
	 * a little ahead of this CPU's now, which is no time run, not 2^64 ns.
	 */
	in->curr_ran_ns = (s64)(now - r->run_start) > 0 ? now - r->run_start : 0;
	in->min_run_ns = pol->slice_min_ns;
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
	s32 victim = -1, cpu;
	bool parity = false;
	u64 now = scx_bpf_now();

	if (!pol->wakeup_preempt)
		return;
	bpf_for (i, 0, scan) {
		cpu = (prev + i) % nr;
		if (cpu_llc_id(cpu) != llc || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		preempt_inputs(&in, pol, tctx, cpu, now);
		verdict = wakeup_preempt_verdict(&in);
		if (verdict == CADENCE_PREEMPT_INELIGIBLE)
			return;
		if (verdict == CADENCE_PREEMPT_PARITY)
			parity = true;
		if (verdict != CADENCE_PREEMPT_YES)
			continue;
		/*
		 * @prev first, as the fair class preempts on the wake-up's
		 * target runqueue only: it is most often the CPU the wake-up
		 * runs on (a timer or the waker there), so no IPI is needed.
		 */
		if (cpu == prev) {
			victim = cpu;
			break;
		}
		if (victim < 0 || in.curr_rel_deadline > latest) {
			victim = cpu;
			latest = in.curr_rel_deadline;
		}
	}
	if (victim >= 0) {
		scx_bpf_kick_cpu(victim, SCX_KICK_PREEMPT);
		stat_inc(wake_preempt);
	} else if (parity) {
		stat_inc(wake_parity);
	}
}

/*
 * A sync wake-up's CPU, for a task that found no idle CPU: the waker's, if
 * the policy allows it, @p may run there, it shares @prev's LLC and nothing
 * waits there; else -1.
 */
static __always_inline s32 sync_wakeup_cpu(const struct cadence_policy *pol,
					   const struct task_struct *p, s32 prev, u64 wake_flags)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct task_struct *waker;

	if (!pol->sync_wakeup || !(wake_flags & SCX_WAKE_SYNC))
		return -1;
	waker = (struct task_struct *)bpf_get_current_task_btf();
	if (waker->flags & PF_EXITING)
		return -1;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr) || cpu_llc_id(cpu) != cpu_llc_id(prev))
		return -1;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) || dsq_queued(cpu_dsq(cpu)))
		return -1;
	return cpu;
}

#endif /* __CADENCE_LATENCY_BPF_H */
