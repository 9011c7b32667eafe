/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wake-up latency (bpf/deadline.bpf.h, bpf/latency.bpf.h): the preemption
 * decision's inputs and verdicts, shared with the loader's host tests.
 * Included by intf.h; plain C for bindgen.
 */
#ifndef __CADENCE_INTF_LATENCY_H
#define __CADENCE_INTF_LATENCY_H

/* What wakeup_preempt_verdict() decided about one running task. */
enum cadence_preempt_verdict {
	CADENCE_PREEMPT_YES,	    /* preempt it */
	CADENCE_PREEMPT_NO_CURR,    /* the CPU runs no task of ours */
	CADENCE_PREEMPT_INELIGIBLE, /* the waking task's lag is negative */
	CADENCE_PREEMPT_LATER,	    /* its deadline is not earlier */
	CADENCE_PREEMPT_PARITY,	    /* earlier, but the running task has not run its minimum */
};

/*
 * The inputs of the decision. Deadlines are relative to each task's own
 * queue's frontier (deadline - frontier, signed ns of virtual time).
 */
struct cadence_preempt_in {
	s64 wake_rel_deadline;
	s64 curr_rel_deadline;
	/*
	 * How long the running task has run of its current request (ns): since
	 * it got its slice, plus the request's runs before, which a preemption
	 * cut short (parity_credit()).
	 */
	u64 curr_ran_ns;
	/* The policy's minimum slice (ns). */
	u64 min_run_ns;
	u32 wake_eligible;
	/* 1 if the CPU runs one of our tasks (its record is live). */
	u32 curr_active;
	/* 1 if the running task is eligible now: its vtime not past its frontier. */
	u32 curr_eligible;
	/*
	 * 1 if the running task has used up its slice: its vtime now is at or
	 * past the deadline it got with it.
	 */
	u32 curr_done;
};

/*
 * The head of one of the two queues a CPU serves (its own, its LLC's), as
 * dispatch() orders them (deadline.bpf.h, own_head_first()).
 */
struct cadence_queue_head_order {
	/* Its deadline in the LLC queue's frame when it was queued. */
	u64 llc_deadline;
	/* When it was queued, ns (scx_bpf_now()). */
	u64 queued_at;
	/* Its deadline relative to its own queue's frontier now. */
	s64 rel_deadline;
	/*
	 * A head of a CPU's own queue whose vtime is in the LLC queue's frame
	 * (a task holding its CPU, task_ctx.hold_queued): 1, else 0.
	 */
	u32 llc_frame;
};

/*
 * The context of bpf/deadline_test.bpf.c's program: a deadline and an
 * eligibility query, a preemption decision and the order of two queue heads
 * in, their results out.
 */
struct cadence_deadline_test {
	/* update_deadline(): vd = vtime + calc_delta_fair(slice). */
	u64 vtime;
	u64 slice_ns;
	u32 weight;
	u32 wmult;
	/* vruntime_eligible(): is vtime eligible against this frontier? */
	u64 frontier;
	struct cadence_preempt_in preempt;
	/* own_head_first() of these two heads at @now. */
	struct cadence_queue_head_order own;
	struct cadence_queue_head_order llc;
	u64 now;
	/*
	 * lag_at_sleep() of @vtime against @frontier, wake_lag() of that with
	 * this policy lag for a task pinned or not, and @vtime lifted by it
	 * behind the frontier at wake-up (lift_behind()).
	 */
	u64 policy_lag;
	u64 wake_frontier;
	u32 pinned;
	/* parity_credit() of these. */
	u64 parity_credit;
	u64 parity_ran;
	u64 parity_granted;
	u32 parity_runnable;
	/* Out. */
	u64 deadline;
	u32 eligible;
	u32 verdict;
	u32 own_first;
	u64 sleep_lag;
	u64 wake_lag;
	u64 woken_vtime;
	u64 parity_credit_after;
};

#endif /* __CADENCE_INTF_LATENCY_H */
