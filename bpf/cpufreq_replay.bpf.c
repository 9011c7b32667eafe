/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only BPF object: a SEC("syscall") program that runs
 * cpufreq_target.bpf.h, the code the scheduler runs in ops.running(),
 * ops.tick() and ops.update_idle(), on one CPU's evaluations given by user space through
 * BPF_PROG_TEST_RUN. It needs no sched_ext; the Rust tests (src/cpufreq/)
 * compare every verdict, target and counter with their reference.
 */
/* Not scx/common.bpf.h: these tests must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "cpufreq_target.bpf.h"

char _license[] SEC("license") = "GPL";

/*
 * The verifier allows only constant offsets into a syscall program's
 * context, so the run works on this copy and copies the results back.
 */
struct cadence_cpufreq_test cpufreq_work;

/* One evaluation; a bpf_loop() callback, so the verifier checks it once. */
static long cpufreq_step(u64 i, u64 *now)
{
	struct cadence_cpufreq_test *t = &cpufreq_work;
	struct cadence_cpufreq_step *s;

	if (i >= CADENCE_CPUFREQ_TEST_STEPS)
		return 1;
	s = &t->steps[i];
	*now += s->delta_ns;
	if (s->idle)
		t->verdict[i] = cpufreq_idle(&t->state, &t->policy);
	else
		t->verdict[i] = cpufreq_evaluate(&t->state, &t->policy, s->util, s->iowait, *now,
						 t->tick_ns);
	t->target[i] = t->state.target;
	return 0;
}

SEC("syscall")
int cpufreq_run(struct cadence_cpufreq_test *ctx)
{
	struct cadence_cpufreq_test *t = &cpufreq_work;
	u64 now;
	u32 i;

	if (bpf_probe_read_kernel(t, sizeof(*t), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (t->nr_steps > CADENCE_CPUFREQ_TEST_STEPS) {
		ctx->error = -22;
		return 0;
	}
	now = t->start_ns;
	bpf_loop(t->nr_steps, cpufreq_step, &now, 0);

	ctx->state = t->state;
#pragma unroll
	for (i = 0; i < CADENCE_CPUFREQ_TEST_STEPS; i++) {
		ctx->verdict[i] = t->verdict[i];
		ctx->target[i] = t->target[i];
	}
	ctx->error = 0;
	return 0;
}
