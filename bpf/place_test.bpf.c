/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only BPF object: a SEC("syscall") program that runs the scheduler's
 * placement search, the unit place_search.bpf.c it is linked with (build.rs),
 * on a machine written into its
 * place_topo map and on idle/allowed masks given through
 * BPF_PROG_TEST_RUN. It needs no sched_ext; src/topology/place_tests.rs
 * says what each case expects.
 */
/* Not scx/common.bpf.h: these tests must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "place_search.bpf.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_topo);
	__uint(max_entries, 1);
} place_topo SEC(".maps");

/* The search's inputs, copied out of the context (constant offsets only). */
struct cadence_place_in place_work;

SEC("syscall")
int place_run(struct cadence_place_test *ctx)
{
	const struct cadence_topo *t;
	u32 zero = 0, level;
	bool weighed, light;
	s32 cpu;

	t = bpf_map_lookup_elem(&place_topo, &zero);
	if (!t || bpf_probe_read_kernel(&place_work, sizeof(place_work), &ctx->in)) {
		ctx->cpu = -22;
		return 0;
	}
	cpu = place_search(t, &place_work, &level);
	ctx->cpu = cpu;
	ctx->level = level;
	ctx->gain = 0;
	ctx->verdict = CADENCE_HOLD_MOVE;
	if (!place_work.leaving)
		return 0;
	/*
	 * One check of the hold, as pick_small_core() makes it: a search
	 * that keeps the task where it runs is made again with the light
	 * threads (given, not marked) counted idle.
	 */
	ctx->to = -1;
	light = cpu < 0 || cpu == place_work.prev;
	if (light)
		cpu = hold_light_pick(t, &place_work, &level);
	weighed = cpu >= 0 && move_span(t, place_work.prev, cpu) >= CADENCE_SPAN_SMALL;
	if (weighed)
		ctx->gain = pl_move_gain(t, &place_work, cpu);
	ctx->verdict = hold_step(weighed, ctx->gain, ctx->margin, &ctx->seen);
	/* hold_light_move(). */
	if (light && weighed && ctx->verdict == CADENCE_HOLD_MOVE)
		ctx->to = pl_idle_beside(t, &place_work, cpu);
	return 0;
}

SEC("syscall")
int move_span_run(struct cadence_move_span_test *ctx)
{
	const struct cadence_topo *t;
	u32 zero = 0;

	t = bpf_map_lookup_elem(&place_topo, &zero);
	ctx->span = t ? move_span(t, ctx->from, ctx->to) : ~0U;
	return 0;
}
