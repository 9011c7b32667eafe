/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Idle-CPU selection. Order, best first:
 *   1. the previous CPU, if its whole SMT core is idle (warm caches, no
 *      sibling contention);
 *   2. a fully idle core in the previous CPU's LLC;
 *   3. a fully idle core anywhere the task may run;
 *   4. the previous CPU, if it is idle even though its sibling is busy;
 *   5. any idle CPU in the previous CPU's LLC;
 *   6. any idle CPU the task may run on.
 * With the policy's idle_core_first off, steps 1-3 are skipped: tasks pack
 * onto idle sibling threads and whole cores stay asleep longer.
 * Every candidate is claimed with the kernel's idle tracking (test-and-clear),
 * so two wakers never pick the same idle CPU. Without SMT the idle-SMT mask
 * equals the idle mask and steps 1-3 already find every idle CPU.
 */
#ifndef __CADENCE_PLACEMENT_BPF_H
#define __CADENCE_PLACEMENT_BPF_H

/* A task that can run on one CPU only, for now or for good. */
static __always_inline bool task_pinned(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1 || is_migration_disabled(p);
}

/* Count the step at which select_cpu() found (or did not find) a CPU. */
static __always_inline void count_select(enum cadence_select_step step)
{
	switch (step) {
	case CADENCE_SELECT_PREV_CORE:
		stat_inc(select_prev_core);
		break;
	case CADENCE_SELECT_LLC_CORE:
		stat_inc(select_llc_core);
		break;
	case CADENCE_SELECT_ANY_CORE:
		stat_inc(select_any_core);
		break;
	case CADENCE_SELECT_PREV_CPU:
		stat_inc(select_prev_cpu);
		break;
	case CADENCE_SELECT_LLC_CPU:
		stat_inc(select_llc_cpu);
		break;
	case CADENCE_SELECT_ANY_CPU:
		stat_inc(select_any_cpu);
		break;
	default:
		stat_inc(select_busy);
		break;
	}
}

/*
 * Claim an idle CPU for @p near @prev_cpu, or return -EBUSY. With @record,
 * the step that succeeded (or SELECT_BUSY) is counted in the stats.
 */
static s32 pick_idle_cpu(const struct cadence_policy *pol, struct task_struct *p, s32 prev_cpu,
			 bool record)
{
	const struct cpumask *idle_smt, *llc;
	struct bpf_cpumask *llc_allowed;
	s32 cpu = -EBUSY;
	enum cadence_select_step outcome = CADENCE_SELECT_BUSY;

	if (task_pinned(p)) {
		if (scx_bpf_test_and_clear_cpu_idle(prev_cpu))
			cpu = prev_cpu;
		outcome = cpu >= 0 ? CADENCE_SELECT_PREV_CPU : CADENCE_SELECT_BUSY;
		goto out;
	}

	llc_allowed = this_scratch_mask();
	llc = llc_cpumask(cpu_llc_id(prev_cpu));
	if (!llc_allowed || !llc) {
		scx_bpf_error("cpumasks not initialised");
		return -ENOENT;
	}
	bpf_cpumask_and(llc_allowed, p->cpus_ptr, llc);

	idle_smt = scx_bpf_get_idle_smtmask();
	if (!pol->idle_core_first)
		goto any_thread;
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	    bpf_cpumask_test_cpu(prev_cpu, idle_smt) && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		cpu = prev_cpu;
		outcome = CADENCE_SELECT_PREV_CORE;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(cast_mask(llc_allowed), SCX_PICK_IDLE_CORE);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_LLC_CORE;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, SCX_PICK_IDLE_CORE);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_ANY_CORE;
		goto out_put;
	}
any_thread:
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	    scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		cpu = prev_cpu;
		outcome = CADENCE_SELECT_PREV_CPU;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(cast_mask(llc_allowed), 0);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_LLC_CPU;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	outcome = cpu >= 0 ? CADENCE_SELECT_ANY_CPU : CADENCE_SELECT_BUSY;
out_put:
	scx_bpf_put_idle_cpumask(idle_smt);
out:
	if (record)
		count_select(outcome);
	return cpu;
}

#endif /* __CADENCE_PLACEMENT_BPF_H */
