/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only BPF object: a SEC("syscall") program that runs group_share.bpf.h,
 * the cgroup share arithmetic, on inputs from user space through
 * BPF_PROG_TEST_RUN: a task's weight from the chain of its cgroups (the walk
 * cgroup.bpf.c's group_refresh_weight() makes over the `cgroups` map, here
 * over an array), and one cgroup's activity crossing. It needs no
 * sched_ext; src/cgroups/bpf_tests.rs checks it against shares worked out
 * by hand from kernel/sched/fair.c's rules.
 */
/* Not scx/common.bpf.h: these tests must load on hosts without sched_ext. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "group_share.bpf.h"

char _license[] SEC("license") = "GPL";

/* The run's inputs, copied out of the context (constant offsets only). */
struct cadence_share_test share_work;

SEC("syscall")
int share_run(struct cadence_share_test *ctx)
{
	struct cadence_share_test *w = &share_work;
	u64 member, val, contributed;
	u32 i;

	if (bpf_probe_read_kernel(w, sizeof(*w), ctx)) {
		ctx->share_weight = 0;
		return 0;
	}
	member = w->task_weight;
	val = member << CADENCE_GROUP_FRAC_SHIFT;
	for (i = 0; i < CADENCE_CGROUP_MAX_DEPTH && i < w->nr_levels; i++) {
		val = group_share_step(val, member, w->active[i], w->weight[i]);
		member = w->weight[i];
	}
	ctx->share_weight = w->nr_levels ? group_share_weight(val) : w->task_weight;
	ctx->share_wmult = group_share_wmult(ctx->share_weight);
	contributed = w->act_contributed;
	ctx->act_parent_delta =
		group_activity_delta(w->act_old, w->act_new, w->act_weight, &contributed);
	ctx->act_contributed_after = contributed;
	return 0;
}
