/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Frequency-invariant utilization of every CPU and every task: the glue
 * between the callbacks and the PELT math of pelt.bpf.h.
 *
 * Each CPU keeps its own PELT clock and busy signal in cpu_util, written
 * only by that CPU: running/stopping/tick run on it with its rq locked, and
 * update_idle() runs on it when it enters idle (its wake changes nothing:
 * util_glue.bpf.h). running() and stopping() called from another CPU (a
 * running task's attributes changed from there) are skipped:
 * util_glue.bpf.h says why that loses nothing. Before a signal
 * is updated, the clock is brought to now: scaled by capacity x frequency
 * for the time the CPU was busy, caught up with the task clock for the time
 * it was idle (and, when it goes idle saturated, lost idle time recorded),
 * as update_rq_clock_pelt() does.
 *
 * Where this differs from the kernel, and why:
 * - The CPU signal is PELT of "a sched_ext task runs here" (like the
 *   kernel's rq->avg_rt), not the sum of its tasks' signals: the kernel
 *   moves a migrating task's util between cfs_rq sums under both rq locks,
 *   which BPF cannot take. After a migration the CPU signals follow within
 *   about one half-life instead of at once.
 * - clock_task is scx_bpf_now() (rq clock), which includes IRQ time.
 * - A task's signal is in the clock of the CPU it was last updated on.
 *   When it next runs elsewhere, the time in between is counted at full
 *   speed on the new CPU's clock (as on an idle CPU), where the kernel
 *   estimates the old CPU's clock lag (migrate_se_pelt_lag()). That time
 *   is a difference of two CPUs' clocks, taken as 0 when negative.
 * - A wake-up is placed on the PELT clock of the CPU the task then runs
 *   on, from the time that CPU's clock was last updated (the kernel
 *   updates the task at enqueue instead, which needs the target rq's
 *   clock, which scx_bpf_now() cannot read from another CPU).
 * - util_est takes its sample in ops.quiescent() on SCX_DEQ_SLEEP, as
 *   fair.c does on DEQUEUE_SLEEP: ops.stopping(p, false) also comes for
 *   the DEQUEUE_SAVE of an attribute change.
 * - A new task starts at 0, where the kernel gives it half the CPU's spare
 *   capacity (post_init_entity_util_avg()).
 */
#include "cadence.bpf.h"
#include "weight.bpf.h"
#include "pelt.bpf.h"
#include "freq_ratio.bpf.h"

#include "util_glue.bpf.h"

CADENCE_PER_CPU(struct cadence_cpu_util, cpu_util);

/*
 * The util state of @cpu, the CPU this runs on; its capacity and ratio set
 * on first use.
 */
static __always_inline struct cadence_cpu_util *this_cpu_util(s32 cpu)
{
	struct cadence_cpu_util *cu;

	cu = cpu_util_here();
	if (cu && !cu->cpu_cap) {
		cu->cpu_cap = scx_bpf_cpuperf_cap(cpu);
		cu->freq_scale = CADENCE_CAP_SCALE;
		cu->freq_source = freq_source;
	}
	return cu;
}

/* ops.runnable(): the task was enqueued; note a wake-up, for ops.running(). */
__hidden void util_runnable(struct task_ctx *tctx, u64 now, u64 enq_flags)
{
	util_glue_runnable(&tctx->util, now, enq_flags & SCX_ENQ_WAKEUP);
}

/*
 * ops.running(): the CPU was idle or ran another task; @p waited or slept.
 * Returns this CPU's util state, brought to @now (NULL if missing).
 */
__hidden struct cadence_cpu_util *util_running(struct task_struct *p, struct task_ctx *tctx,
					       s32 cpu, u64 now)
{
	s32 here = bpf_get_smp_processor_id();
	struct cadence_cpu_util *cu = this_cpu_util(here);

	if (!cu || !util_glue_running(cu, &tctx->util, task_weight(p), here, cpu, now))
		return NULL;
	return cu;
}

/* ops.stopping(): @p ran on @cpu until @now. */
__hidden void util_stopping(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 now)
{
	s32 here = bpf_get_smp_processor_id();
	struct cadence_cpu_util *cu = this_cpu_util(here);

	if (cu)
		util_glue_stopping(cu, &tctx->util, task_weight(p), here, cpu, now);
}

/* ops.quiescent(): a util_est sample if @p went to sleep. */
__hidden void util_quiescent(struct task_struct *p, struct task_ctx *tctx, u64 deq_flags)
{
	util_glue_quiescent(&tctx->util, scx_bpf_cpuperf_cap(scx_bpf_task_cpu(p)),
			    deq_flags & SCX_DEQ_SLEEP);
}

/*
 * ops.tick(): a new frequency ratio and capacity, then the signals, to
 * @now. Returns this CPU's util state (NULL if missing).
 */
__hidden struct cadence_cpu_util *util_tick(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					    const struct cadence_policy *pol, u64 now)
{
	struct cadence_cpu_util *cu = this_cpu_util(cpu);

	if (!cu)
		return NULL;
	freq_ratio_tick(cu, cpu, pol);
	cu->cpu_cap = scx_bpf_cpuperf_cap(cpu);
	util_glue_ran(cu, &tctx->util, task_weight(p), cpu, now);
	return cu;
}

/* ops.update_idle(): the CPU goes idle (busy until now) or wakes. */
__hidden void util_update_idle(s32 cpu, bool idle)
{
	struct cadence_cpu_util *cu;

	/* A wake changes nothing (util_glue_update_idle()): no lookup, no clock. */
	if (!idle)
		return;
	cu = this_cpu_util(cpu);
	if (cu)
		util_glue_update_idle(cu, scx_bpf_now(), idle);
}

/* A new task: no signal yet, on no CPU's clock. */
__hidden void util_init_task(struct task_ctx *tctx)
{
	__builtin_memset(&tctx->util, 0, sizeof(tctx->util));
	tctx->util.cpu = -1;
}

/* ops.dump_cpu(): @cpu's util state. */
__hidden void util_dump_cpu(s32 cpu)
{
	struct cadence_cpu_util *cu;
	u32 zero = 0;

	cu = bpf_map_lookup_percpu_elem(&cpu_util, &zero, cpu);
	if (cu)
		scx_bpf_dump("  util_avg=%llu freq_scale=%u source=%u cap=%u\n", cu->avg.util_avg,
			     cu->freq_scale, cu->freq_source, cu->cpu_cap);
}
