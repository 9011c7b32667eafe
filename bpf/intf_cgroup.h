/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup cpu.weight (bpf/cgroup.bpf.c, bpf/group_share.bpf.h): each cgroup's
 * entry in the pinned `cgroups` map, shared with the loader's stats and host
 * tests. Included by intf.h; plain C for bindgen.
 */
#ifndef __CADENCE_INTF_CGROUP_H
#define __CADENCE_INTF_CGROUP_H

enum cadence_cgroup_consts {
	/*
	 * Entries of the `cgroups` map. A machine with more cgroups than this
	 * weighs the tasks of the ones past it as if in the root group: the
	 * loader counts them (cgroup_untracked) and says so.
	 */
	CADENCE_CGROUP_MAX = 16384,
	/*
	 * Levels walked from a task's cgroup toward the root to find its share.
	 * systemd nests services 3-5 deep (user.slice/user-1000.slice/
	 * user@1000.service/app.slice/...); a deeper cgroup is weighed as its
	 * 16 nearest levels say, the ancestors above them counting as the root.
	 */
	CADENCE_CGROUP_MAX_DEPTH = 16,
	/* CGROUP_WEIGHT_DFL in include/linux/cgroup.h: cpu.weight's default. */
	CADENCE_CGROUP_WEIGHT_DFL = 100,
	/*
	 * The least weight a task in a cgroup is given: MIN_SHARES in
	 * kernel/sched/sched.h, the fair class's floor for a group entity, so
	 * that 2^32 / weight (deadlines, deadline.bpf.h) fits in 32 bits.
	 */
	CADENCE_GROUP_MIN_WEIGHT = 2,
	/*
	 * Periods of quota one refill adds at most after the period timer
	 * was late: more only fill up to quota + burst anyway, and the bound
	 * keeps periods x quota far from overflow (cpu.max's quota is below
	 * 2^44 us, max_bw_runtime_us in kernel/sched/core.c).
	 */
	CADENCE_BW_MAX_REFILL_PERIODS = 4,
	/*
	 * The most debt a cgroup keeps, in quotas: at most this many periods
	 * throttled to pay it, 8 s at cpu.max's longest period (1 s), inside
	 * sched_ext's 30 s watchdog. Under TCG, whose ticks reach a busy vCPU
	 * late, a cgroup of 4 hogs at 0.5 CPU ran up more than one quota of
	 * debt: forgiven at one quota, it got 0.56 CPU (EEVDF 0.52).
	 */
	CADENCE_BW_MAX_DEBT_QUOTAS = 8,
};

/*
 * One cgroup, keyed by its id (the cgroup directory's inode number). The
 * fair class's hierarchy, flattened: a cgroup weighs @weight among its
 * parent's active members only while @active > 0, and a task's weight is
 * its nice weight times its cgroup's weight over @active, times the same
 * ratio at every level up to the root (group_share.bpf.h).
 */
struct cadence_cgroup {
	/* Guards @active and @contributed (they change together). */
	struct bpf_spin_lock lock;
	/* cpu.weight (1..10000, default 100), as the cgroup has it. */
	u32 cpu_weight;
	/* The same in the fair class's units: cpu.weight x 1024 / 100, rounded. */
	u64 weight;
	/*
	 * Sum of the nice weights of its runnable tasks and the @weight of its
	 * active child cgroups. Signed: a child's two updates may arrive in
	 * either order, and only the sign's crossings of zero count.
	 */
	s64 active;
	/* What this cgroup adds to its parent's @active now: @weight or 0. */
	u64 contributed;
	/* The parent cgroup's id; 0 for the root. */
	u64 parent_id;
	/* Depth: 0 for the root. */
	u32 level;
	/*
	 * Its tasks wait for the next period: the runtime its cpu.max allows
	 * is used up, here (cgroup_bw.bpf.c).
	 */
	u32 bw_throttled;
	/* It has a limit and counts among the limited cgroups (cgroup_bw.bpf.c). */
	u32 bw_limited;
	u32 __pad;
	/*
	 * cpu.max and cpu.max.burst, in ns: @bw_quota_ns of CPU time each
	 * @bw_period_ns, unused time kept up to @bw_burst_ns more. A quota
	 * of 0: no limit ("max").
	 */
	u64 bw_quota_ns;
	u64 bw_period_ns;
	u64 bw_burst_ns;
	/*
	 * CPU time its tasks (and its descendants') may still use in this
	 * period; below 0, an overrun the next period's quota pays back.
	 */
	s64 bw_runtime_ns;
	/* When this period ends and the quota is added (scx_bpf_now() clock). */
	u64 bw_period_end;
	/* Times its runtime ran out (its tasks were throttled), since attach. */
	u64 bw_nr_throttled;
};

/*
 * The share test (bpf/cgroup_test.bpf.c): a task of nice weight @task_weight
 * in a cgroup @nr_levels deep; level 0 is its own cgroup, each next one the
 * parent of the last, the root not included.
 */
struct cadence_share_test {
	u32 task_weight;
	u32 nr_levels;
	u64 weight[CADENCE_CGROUP_MAX_DEPTH];
	s64 active[CADENCE_CGROUP_MAX_DEPTH];
	/* Out: the task's weight among all tasks, and its inverse. */
	u32 share_weight;
	u32 share_wmult;
	/*
	 * The activity test: a cgroup of @act_weight that contributed
	 * @act_contributed, whose active weight goes @act_old -> @act_new.
	 */
	s64 act_old;
	s64 act_new;
	u64 act_weight;
	u64 act_contributed;
	/* Out: what its parent's active weight changes by, and the new contribution. */
	s64 act_parent_delta;
	u64 act_contributed_after;
};

#endif /* __CADENCE_INTF_CGROUP_H */
