/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup cpu.weight as the fair class gives it, flattened into one weight
 * per task: the arithmetic, pure, so that the host tests run it too
 * (bpf/cgroup_test.bpf.c; the walk over the `cgroups` map is cgroup.bpf.c).
 *
 * kernel/sched/fair.c schedules a cgroup as one entity among its parent's
 * entities (tasks and child cgroups), weighing its cpu.weight; inside, its
 * own entities share what it gets by their weights. A cgroup with nothing
 * runnable is dequeued from its parent and holds no share. So a task of nice
 * weight w in cgroup g gets, of what g's parent hands g,
 *	w / A(g),	A(g) = the weights of g's runnable tasks and active children
 * and g gets W(g) / A(parent) of its parent, up to the root. scx_cadence has
 * one virtual time per task and no group entities: it gives each task the
 * weight that makes its share the same among all tasks,
 *	w * W(g) / A(g) * W(p) / A(p) * ... * W(top) / A(top)
 * with top the cgroup just below the root, where tasks of the root cgroup
 * and the top-level cgroups meet by their own weights. A group with every
 * member runnable weighs W(g) in total, as its entity does in fair.c.
 * (fair.c splits a group's weight over CPUs by load, calc_group_shares();
 * with the group's tasks spread over the CPUs it comes to the same.)
 */
#ifndef __CADENCE_GROUP_SHARE_BPF_H
#define __CADENCE_GROUP_SHARE_BPF_H

/*
 * Fraction bits a task's weight carries while it is walked up the levels,
 * so that each level's division does not round it: 10 bits leave it below
 * 2^27 (a nice -20 task's 88761 at most) times at most 102400 (cpu.weight
 * 10000), far inside 64 bits.
 */
#define CADENCE_GROUP_FRAC_SHIFT 10

/*
 * cpu.weight to the fair class's weight: sched_weight_from_cgroup() in
 * kernel/sched/sched.h, DIV_ROUND_CLOSEST(w * 1024, 100): 100 -> 1024
 * (nice 0), 1 -> 10, 10000 -> 102400.
 */
static __always_inline u64 group_weight_from_cgroup(u64 cpu_weight)
{
	u64 dfl = CADENCE_CGROUP_WEIGHT_DFL;

	return (cpu_weight * CADENCE_NICE_0_WEIGHT + dfl / 2) / dfl;
}

/*
 * One level up: @val, the weight of a member of a cgroup that weighs
 * @weight and whose active members weigh @active, becomes its weight among
 * the cgroup's siblings. The member itself weighs @member: a racing update
 * can show @active below it for a moment (cadence_cgroup.active), never
 * the truth, so @active counts at least that.
 */
static __always_inline u64 group_share_step(u64 val, u64 member, s64 active, u64 weight)
{
	u64 total = active > (s64)member ? (u64)active : member;

	return total ? val * weight / total : val;
}

/*
 * The weight @val (CADENCE_GROUP_FRAC_SHIFT fraction bits) comes to, rounded
 * to nearest, at least MIN_SHARES: the nice ratio of two tasks of one cgroup
 * is kept to within half a unit of the smaller weight (nice 0 and nice 5
 * alone in a cgroup of weight 1024: 772 and 252, 3.063 for 1024/335 = 3.057).
 */
static __always_inline u32 group_share_weight(u64 val)
{
	val = (val + (1ULL << (CADENCE_GROUP_FRAC_SHIFT - 1))) >> CADENCE_GROUP_FRAC_SHIFT;
	if (val < CADENCE_GROUP_MIN_WEIGHT)
		return CADENCE_GROUP_MIN_WEIGHT;
	return val > 0xffffffffULL ? 0xffffffffU : (u32)val;
}

/*
 * The inverse of a weight computed here, for deadlines: fair.c's
 * __update_inv_weight(), WMULT_CONST (~0U) / w. (Nice weights keep the
 * kernel's rounded table, weight.bpf.h.)
 */
static __always_inline u32 group_share_wmult(u32 weight)
{
	return 0xffffffffU / (weight ? weight : 1);
}

/*
 * A cgroup of @weight, that now adds @contributed to its parent's active
 * weight, saw its own go from @old to @new: what its parent's changes by.
 * A crossing up makes it active, weighing @weight; a crossing down takes
 * back what it added, whatever its weight became since.
 */
static __always_inline s64 group_activity_delta(s64 old, s64 new, u64 weight, u64 *contributed)
{
	s64 delta;

	if (old <= 0 && new > 0) {
		*contributed = weight;
		return (s64)weight;
	}
	if (old > 0 && new <= 0) {
		delta = -(s64)*contributed;
		*contributed = 0;
		return delta;
	}
	return 0;
}

#endif /* __CADENCE_GROUP_SHARE_BPF_H */
