/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cpufreq target and deadband (cpufreq_target.bpf.h) outside the
 * scheduler: a SEC("syscall") program that runs one CPU's steps, in order,
 * through the same code the scheduler runs in ops.running(), ops.tick()
 * and ops.update_idle(), given by user space through BPF_PROG_TEST_RUN.
 * `scx_cadence cpufreq replay` runs recorded traces through it, and the
 * host tests (src/cpufreq/) compare it with their reference. It needs no
 * sched_ext.
 */
/* Not scx/common.bpf.h: this must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "cpufreq_target.bpf.h"

char _license[] SEC("license") = "GPL";

/*
 * The verifier allows only constant offsets into a syscall program's
 * context, so the run works on this copy and copies the results back.
 */
struct cadence_cpufreq_replay cpufreq_work;

/* One step; a bpf_loop() callback, so the verifier checks it once. */
static long cpufreq_step(u64 i, u64 *now)
{
	struct cadence_cpufreq_replay *r = &cpufreq_work;
	struct cadence_cpufreq_step *s;

	if (i >= CADENCE_CPUFREQ_REPLAY_STEPS)
		return 1;
	s = &r->steps[i];
	*now += s->delta_ns;
	if (s->idle)
		r->verdict[i] = cpufreq_idle(&r->state, &r->policy);
	else
		r->verdict[i] = cpufreq_evaluate(&r->state, &r->policy, s->util, s->iowait, *now,
						 r->tick_ns);
	r->target[i] = r->state.target;
	/* cpufreq_idle() leaves util 0: the floor is what it asks for. */
	r->want[i] = cpufreq_target(&r->policy, r->state.util);
	return 0;
}

SEC("syscall")
int cpufreq_replay(struct cadence_cpufreq_replay *ctx)
{
	struct cadence_cpufreq_replay *r = &cpufreq_work;
	u64 now;
	u32 i;

	if (bpf_probe_read_kernel(r, sizeof(*r), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (r->nr_steps > CADENCE_CPUFREQ_REPLAY_STEPS) {
		ctx->error = -22;
		return 0;
	}
	now = r->start_ns;
	bpf_loop(r->nr_steps, cpufreq_step, &now, 0);

	ctx->state = r->state;
#pragma unroll
	for (i = 0; i < CADENCE_CPUFREQ_REPLAY_STEPS; i++) {
		ctx->verdict[i] = r->verdict[i];
		ctx->target[i] = r->target[i];
		ctx->want[i] = r->want[i];
	}
	ctx->error = 0;
	return 0;
}
