/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only BPF object: SEC("syscall") programs that run pelt.bpf.h, the
 * same code the scheduler runs, on inputs from user space through
 * BPF_PROG_TEST_RUN. It needs no sched_ext, so the Rust tests run it on any
 * host kernel with BPF and compare every number with the Rust reference of
 * the kernel's PELT (src/pelt/).
 *
 * The model is one CPU and one task (enum cadence_pelt_state). Each step
 * lets time pass in the current state, updates the clock and both signals
 * the way the scheduler does at a callback (util.bpf.c), then applies the
 * step's transition.
 *
 * glue_run replays callbacks on two CPUs through util_glue.bpf.h, the
 * bookkeeping the scheduler's callbacks do (util.bpf.c), remote ones
 * included.
 */
/*
 * Not scx/common.bpf.h: it brings a probe program that needs sched_ext in
 * the kernel, and these tests must load on hosts without it.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "pelt.bpf.h"
#include "util_glue.bpf.h"
#include "freq_ratio_math.bpf.h"

char _license[] SEC("license") = "GPL";

static __always_inline bool state_busy(u32 state)
{
	return state != CADENCE_TASK_ASLEEP;
}

/* The task's state after @op in @state. */
static __always_inline u32 next_state(u32 state, u32 op)
{
	switch (op) {
	case CADENCE_STEP_SLEEP:
		return CADENCE_TASK_ASLEEP;
	case CADENCE_STEP_WAKE:
	case CADENCE_STEP_PREEMPT:
		return CADENCE_TASK_WAITING;
	case CADENCE_STEP_RUN:
		return CADENCE_TASK_RUNNING;
	default:
		return state;
	}
}

/*
 * The verifier allows only constant offsets into a syscall program's
 * context, so the run works on this copy and copies the results back.
 */
struct cadence_pelt_test work;

/* Where the replay stands between steps. */
struct replay {
	u64 now;
	u32 state;
};

/* One step; a bpf_loop() callback, so the verifier checks it once. */
static long replay_step(u64 i, struct replay *r)
{
	struct cadence_pelt_test *t = &work;
	struct cadence_pelt_step *s;
	u64 pelt_now;
	u32 next;

	if (i >= CADENCE_PELT_TEST_STEPS)
		return 1;
	s = &t->steps[i];
	r->now += s->delta_ns;
	if (state_busy(r->state))
		pelt_clock_busy(&t->clock, r->now, s->cpu_cap, s->freq_scale);
	else
		pelt_clock_idle(&t->clock, r->now);
	pelt_now = pelt_clock_now(&t->clock);
	pelt_update(pelt_now, &t->task, CADENCE_NICE_0_WEIGHT, r->state != CADENCE_TASK_ASLEEP,
		    r->state == CADENCE_TASK_RUNNING);
	pelt_update(pelt_now, &t->cpu, 1, state_busy(r->state), state_busy(r->state));

	next = next_state(r->state, s->op);
	if (s->op == CADENCE_STEP_SLEEP)
		pelt_util_est_update(&t->task, s->cpu_cap);
	if (state_busy(r->state) && !state_busy(next))
		pelt_clock_go_idle(&t->clock, r->now, t->cpu.util_sum);
	r->state = next;
	t->task_util[i] = t->task.util_avg;
	return 0;
}

SEC("syscall")
int pelt_run(struct cadence_pelt_test *ctx)
{
	struct cadence_pelt_test *t = &work;
	struct replay r;
	u32 i;

	if (bpf_probe_read_kernel(t, sizeof(*t), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (t->nr_steps > CADENCE_PELT_TEST_STEPS || t->start_state > CADENCE_TASK_RUNNING) {
		ctx->error = -22;
		return 0;
	}
	r.now = t->start_ns;
	r.state = t->start_state;
	t->clock.clock_pelt = r.now;
	t->clock.clock_task = r.now;
	t->clock.lost_idle_time = 0;
	__builtin_memset(&t->cpu, 0, sizeof(t->cpu));
	__builtin_memset(&t->task, 0, sizeof(t->task));
	t->cpu.last_update_time = r.now;
	t->task.last_update_time = r.now;

	bpf_loop(t->nr_steps, replay_step, &r, 0);

	ctx->clock = t->clock;
	ctx->cpu = t->cpu;
	ctx->task = t->task;
#pragma unroll
	for (i = 0; i < CADENCE_PELT_TEST_STEPS; i++)
		ctx->task_util[i] = t->task_util[i];
	ctx->error = 0;
	return 0;
}

/* The glue test's working copy (constant offsets only, as above). */
struct cadence_glue_test glue;

/* One callback of a glue run; a bpf_loop() callback. */
static long glue_event(u64 i, void *unused)
{
	struct cadence_glue_test *g = &glue;
	struct cadence_glue_event *e;
	struct cadence_cpu_util *cu;
	struct cadence_task_util *tu = &g->task;

	if (i >= CADENCE_GLUE_TEST_EVENTS)
		return 1;
	e = &g->events[i];
	/* The executing CPU's state, as this_cpu_util() finds it. */
	cu = &g->cpus[e->here & (CADENCE_GLUE_TEST_CPUS - 1)];
	switch (e->op) {
	case CADENCE_GLUE_RUNNABLE:
		util_glue_runnable(tu, e->now, e->arg);
		break;
	case CADENCE_GLUE_RUNNING:
		util_glue_running(cu, tu, g->weight, e->here, e->cpu, e->now);
		break;
	case CADENCE_GLUE_STOPPING:
		util_glue_stopping(cu, tu, g->weight, e->here, e->cpu, e->now);
		break;
	case CADENCE_GLUE_QUIESCENT:
		/* The task's CPU's capacity, as scx_bpf_cpuperf_cap() gives it. */
		util_glue_quiescent(tu, g->cpus[e->cpu & (CADENCE_GLUE_TEST_CPUS - 1)].cpu_cap,
				    e->arg);
		break;
	case CADENCE_GLUE_TICK:
		util_glue_ran(cu, tu, g->weight, e->cpu, e->now);
		break;
	case CADENCE_GLUE_IDLE:
		util_glue_update_idle(cu, e->now, e->arg);
		break;
	}
	g->util[i] = tu->avg.util_avg;
	g->util_est[i] = tu->avg.util_est;
	return 0;
}

SEC("syscall")
int glue_run(struct cadence_glue_test *ctx)
{
	struct cadence_glue_test *g = &glue;
	u32 i;

	if (bpf_probe_read_kernel(g, sizeof(*g), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (g->nr_events > CADENCE_GLUE_TEST_EVENTS) {
		ctx->error = -22;
		return 0;
	}
	bpf_loop(g->nr_events, glue_event, NULL, 0);
	ctx->cpus[0] = g->cpus[0];
	ctx->cpus[1] = g->cpus[1];
	ctx->task = g->task;
#pragma unroll
	for (i = 0; i < CADENCE_GLUE_TEST_EVENTS; i++) {
		ctx->util[i] = g->util[i];
		ctx->util_est[i] = g->util_est[i];
	}
	ctx->error = 0;
	return 0;
}

/* decay_load() alone, for the table's entries (kernel_vectors.rs). */
struct cadence_decay_test decay_work;

SEC("syscall")
int decay_run(struct cadence_decay_test *ctx)
{
	struct cadence_decay_test *d = &decay_work;
	u32 i;

	if (bpf_probe_read_kernel(d, sizeof(*d), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (d->nr > CADENCE_DECAY_TEST_CALLS) {
		ctx->error = -22;
		return 0;
	}
	for (i = 0; i < CADENCE_DECAY_TEST_CALLS && i < d->nr; i++)
		d->out[i] = pelt_decay_load(d->val[i], d->n[i]);
#pragma unroll
	for (i = 0; i < CADENCE_DECAY_TEST_CALLS; i++)
		ctx->out[i] = d->out[i];
	ctx->error = 0;
	return 0;
}

/*
 * One tick's ratio, as freq_ratio_tick() computes it for the APERF/MPERF and
 * inject sources, for CPU @cpu with capacity @cpu_cap; cpu_freq_max_scale[]
 * is set in .rodata by the test before the load.
 */
SEC("syscall")
int freq_run(struct cadence_freq_test *ctx)
{
	struct cadence_cpu_util cu = {};
	u32 ratio;

	if (ctx->cpu < 0 || ctx->cpu >= CADENCE_MAX_CPUS) {
		ctx->error = -22;
		return 0;
	}
	ratio = freq_cpu_max_ratio(ctx->freq_max_ratio, ctx->cpu_cap, ctx->cpu);
	ctx->no_ratio = !freq_ratio_from_counts(&cu, ctx->acnt, ctx->mcnt, ratio);
	ctx->freq_scale = cu.freq_scale;
	ctx->freq_ticks = cu.freq_ticks;
	ctx->freq_clamped = cu.freq_clamped;
	ctx->error = 0;
	return 0;
}
