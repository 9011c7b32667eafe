/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle learner (idle_learn.bpf.c, linked in by build.rs) outside the
 * scheduler: a SEC("syscall") program that runs one CPU's idle periods, in
 * order, through the same predict / learn / score code the scheduler's
 * cpu_idle tracepoint runs, given by user space through BPF_PROG_TEST_RUN.
 * `scx_cadence idle replay` runs traces through it, and the host tests
 * (src/idle/) compare it with their reference. It needs no sched_ext.
 */
/* Not scx/common.bpf.h: this must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "idle_learn.bpf.h"

char _license[] SEC("license") = "GPL";

/*
 * The verifier allows only constant offsets into a syscall program's
 * context, so the run works on this copy and copies it back. A map, not a
 * global: the table's bpf_spin_lock cannot live in the mmap()ed .bss.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_idle_replay);
	__uint(max_entries, 1);
} idle_work SEC(".maps");

/* One period: what the tracepoint does at its entry and at its exit. */
static long replay_step(u64 i, void *unused)
{
	struct cadence_idle_replay *r;
	struct cadence_idle_period *p;
	struct cadence_idle_ideals ideals;
	struct cadence_idle_entry *e;
	bool kernel_known;
	u32 zero = 0;

	r = bpf_map_lookup_elem(&idle_work, &zero);
	if (!r || i >= CADENCE_IDLE_REPLAY_PERIODS)
		return 1;
	p = &r->periods[i];
	e = &r->entries[i];
	kernel_known =
		r->kernel_indices && p->kernel_state >= 0 && (u32)p->kernel_state < r->states.nr;
	idle_predict(&r->table, &r->states, &r->policy, p->sleep_length_ns, &p->tick,
		     p->latency_req_ns, p->rand, p->kernel_state, kernel_known, e);
	e->kernel_miss = p->kernel_miss;
	idle_learn(&r->table, &r->states, &r->policy, e, p->duration_ns, &ideals);
	idle_score(&r->scores, &r->states, e, &ideals, r->kernel_indices);
	return 0;
}

SEC("syscall")
int idle_replay(struct cadence_idle_replay *ctx)
{
	struct cadence_idle_replay *r;
	u32 i, zero = 0;

	r = bpf_map_lookup_elem(&idle_work, &zero);
	if (!r) {
		ctx->error = -2;
		return 0;
	}
	if (bpf_probe_read_kernel(r, sizeof(*r), ctx)) {
		ctx->error = -14;
		return 0;
	}
	if (r->nr > CADENCE_IDLE_REPLAY_PERIODS || r->states.nr > CADENCE_IDLE_MAX_STATES) {
		ctx->error = -22;
		return 0;
	}
	bpf_loop(r->nr, replay_step, NULL, 0);

	ctx->table = r->table;
	/*
	 * By source: the BPF backend inlines no copy over 1 KiB, and the
	 * barrier keeps clang from merging the copies into one.
	 */
#pragma unroll
	for (i = 0; i < CADENCE_IDLE_SOURCES; i++) {
		__builtin_memcpy(ctx->scores.n[i], r->scores.n[i], sizeof(r->scores.n[i]));
		barrier();
	}
	__builtin_memcpy(ctx->scores.miss, r->scores.miss, sizeof(r->scores.miss));
#pragma unroll
	for (i = 0; i < CADENCE_IDLE_REPLAY_PERIODS; i++)
		ctx->entries[i] = r->entries[i];
	ctx->error = 0;
	return 0;
}
