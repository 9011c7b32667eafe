/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only BPF object: a SEC("syscall") program that runs deadline.bpf.h,
 * the scheduler's virtual deadline, eligibility, wake-up preemption
 * decision, the lag a sleeper keeps and the run counted toward the minimum
 * slice, on inputs from user space
 * through BPF_PROG_TEST_RUN. It needs no sched_ext;
 * src/latency/bpf_tests.rs compares every result with the Rust reference
 * of kernel/sched/fair.c (src/latency/reference.rs).
 */
/* Not scx/common.bpf.h: these tests must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "deadline.bpf.h"

char _license[] SEC("license") = "GPL";

/* The run's inputs, copied out of the context (constant offsets only). */
struct cadence_deadline_test deadline_work;

SEC("syscall")
int deadline_run(struct cadence_deadline_test *ctx)
{
	struct cadence_deadline_test *w = &deadline_work;
	u64 vtime;

	if (bpf_probe_read_kernel(w, sizeof(*w), ctx)) {
		ctx->verdict = ~0U;
		return 0;
	}
	ctx->deadline = virtual_deadline(w->vtime, w->slice_ns, w->weight, w->wmult);
	ctx->eligible = vtime_eligible(w->vtime, w->frontier);
	ctx->verdict = wakeup_preempt_verdict(&w->preempt);
	ctx->own_first = own_head_first(&w->own, &w->llc, w->now);
	ctx->sleep_lag = lag_at_sleep(w->vtime, w->frontier);
	ctx->wake_lag = wake_lag(ctx->sleep_lag, w->policy_lag, w->pinned);
	vtime = w->vtime;
	lift_behind(&vtime, w->wake_frontier, ctx->wake_lag);
	ctx->woken_vtime = vtime;
	ctx->parity_credit_after = parity_credit(w->parity_credit, w->parity_ran, w->parity_granted,
						 w->parity_runnable);
	return 0;
}
