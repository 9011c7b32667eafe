/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup cpu.weight, hierarchical (fairness.cgroups): which cgroups are
 * active and how much each weighs, and each task's weight among all tasks
 * from them (group_share.bpf.h says how and why). Only who runs next and for
 * how long changes: placement, cpufreq and the idle learner stay per CPU.
 *
 * A task's nice weight counts in its cgroup's active weight from
 * ops.runnable() to ops.quiescent() (group_count(), group_uncount()); a
 * cgroup's first runnable task makes it active in its parent, and so on up
 * (group_add()). A task of the root cgroup counts nowhere and looks nothing
 * up: no share is taken from the root, so its tasks keep their nice weight
 * and the root's active weight is its active children's alone. Most tasks of
 * a machine without a service manager live there, and their wake-ups and
 * sleeps take no lock. Each update takes one cgroup's lock at a time: a parent's
 * update follows its child's, and two of them can reach it in either order,
 * which the signed active weight absorbs (cadence_cgroup.active).
 *
 * A task moved to another cgroup is dequeued and requeued around
 * ops.cgroup_move() (sched_move_task() in kernel/sched/core.c), so its
 * weight leaves the old cgroup at ops.quiescent() and enters the new one at
 * ops.runnable(). Each task notes where it counted, so the counts stay
 * right whatever the order.
 */
#include "cadence.bpf.h"
#include "weight.bpf.h"
#include "group_share.bpf.h"

/*
 * Cgroup @id's active weight changes by @delta; so does each ancestor's
 * whose child crossed zero, with the child's weight.
 */
static void group_add(u64 id, s64 delta)
{
	struct cadence_cgroup *g;
	u64 parent;
	s64 old;
	u32 i;

	for (i = 0; i < CADENCE_CGROUP_MAX_DEPTH; i++) {
		g = group_of(id);
		if (!g)
			return;
		bpf_spin_lock(&g->lock);
		old = g->active;
		g->active = old + delta;
		/* The root has no parent to be active in. */
		if (g->level)
			delta = group_activity_delta(old, g->active, g->weight, &g->contributed);
		bpf_spin_unlock(&g->lock);
		parent = g->parent_id;
		if (!delta || !g->level)
			return;
		id = parent;
	}
}

/* The cgroup of @cgrp's parent, 0 for the root. */
static __always_inline u64 parent_id_of(struct cgroup *cgrp)
{
	if (!cgrp->level)
		return 0;
	return BPF_CORE_READ(cgrp, self.parent, cgroup, kn, id);
}

/* @cgrp's id in task_ctx.cgroup_id: 0 for the root, whose tasks count nowhere. */
__hidden u64 group_id_of(struct cgroup *cgrp)
{
	return cgrp->level ? cgrp->kn->id : 0;
}

__hidden s32 group_init(struct cgroup *cgrp, u32 cpu_weight)
{
	struct cadence_cgroup g = {
		.cpu_weight = cpu_weight,
		.weight = group_weight_from_cgroup(cpu_weight),
		.parent_id = parent_id_of(cgrp),
		.level = cgrp->level,
	};
	u64 id = cgrp->kn->id;

	/* Past CADENCE_CGROUP_MAX: its tasks weigh as in the root cgroup. */
	if (bpf_map_update_elem(&cgroups, &id, &g, BPF_NOEXIST))
		stat_inc(cgroup_untracked);
	return 0;
}

__hidden void group_exit(struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	bpf_map_delete_elem(&cgroups, &id);
}

/*
 * cpu.weight (or cpu.weight.nice) changed: an active cgroup's parent
 * weighs the new weight at once.
 */
__hidden void group_set_weight(struct cgroup *cgrp, u32 cpu_weight)
{
	struct cadence_cgroup *g = group_of(cgrp->kn->id);
	s64 delta = 0;

	if (!g)
		return;
	bpf_spin_lock(&g->lock);
	g->cpu_weight = cpu_weight;
	g->weight = group_weight_from_cgroup(cpu_weight);
	if (g->active > 0) {
		delta = (s64)g->weight - (s64)g->contributed;
		g->contributed = g->weight;
	}
	bpf_spin_unlock(&g->lock);
	if (delta && g->level)
		group_add(g->parent_id, delta);
}

/* group_count() (cadence.bpf.h) for a task to count anew. */
__hidden void __group_count(struct task_ctx *tctx, u32 weight)
{
	group_uncount(tctx);
	if (!tctx->cgroup_id)
		return;
	tctx->group_counted_in = tctx->cgroup_id;
	tctx->group_counted_weight = weight;
	group_add(tctx->cgroup_id, weight);
}

/* group_uncount() (cadence.bpf.h) for a task that counts. */
__hidden void __group_uncount(struct task_ctx *tctx)
{
	group_add(tctx->group_counted_in, -(s64)tctx->group_counted_weight);
	tctx->group_counted_in = 0;
}

/*
 * group_refresh_weight() (weight.bpf.h) for a task of a cgroup below the
 * root with fairness.cgroups on: its weight among all tasks
 * (group_share.bpf.h), and its inverse, into @tctx; its nice weight in a
 * cgroup the map does not hold.
 */
__hidden void __group_refresh_weight(const struct task_struct *p, struct task_ctx *tctx)
{
	struct cadence_cgroup *g = group_of(tctx->cgroup_id);
	u32 weight = task_weight(p), i;
	u64 member, val;

	tctx->weight = weight;
	tctx->wmult = task_wmult(p);
	if (!g || !g->level)
		return;
	member = weight;
	val = (u64)weight << CADENCE_GROUP_FRAC_SHIFT;
	for (i = 0; i < CADENCE_CGROUP_MAX_DEPTH && g && g->level; i++) {
		val = group_share_step(val, member, g->active, g->weight);
		member = g->weight;
		g = group_of(g->parent_id);
	}
	tctx->weight = group_share_weight(val);
	tctx->wmult = group_share_wmult(tctx->weight);
}

/*
 * ops.cgroup_move(): the task now belongs to @to. Counted still (it was not
 * dequeued around the move), its weight goes with it.
 */
__hidden void group_move(struct task_ctx *tctx, struct cgroup *to)
{
	tctx->cgroup_id = group_id_of(to);
	if (tctx->group_counted_in)
		group_count(tctx, tctx->group_counted_weight);
}
