/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cpufreq hints: each CPU's cpufreq target, chosen by cpufreq_target.bpf.h from
 * its frequency-invariant util and passed to scx_bpf_cpuperf_set().
 *
 * Where and on which CPU. Only from ops.running(), ops.tick() and, for the
 * floor, ops.update_idle() as the CPU goes idle (cpufreq_going_idle()), and only
 * for the CPU the code runs on, when that is also the CPU whose rq the
 * kernel locked for the callback (the task's CPU). The kernel ends the
 * scheduler when scx_bpf_cpuperf_set() targets another CPU than the one
 * whose rq lock is held, and schedutil ignores updates that come from a
 * CPU outside the policy; running() on behalf of a remote CPU (a task's
 * attributes changed from elsewhere while it runs there) is skipped. The
 * target is at most CADENCE_CPUFREQ_MAX by construction, and clamped again at
 * the call, since above 1024 also ends the scheduler.
 *
 * iowait. Nothing here reads p->in_iowait unless the policy's
 * legacy_iowait_boost switch is on; it exists for comparisons only.
 */
#include "cadence.bpf.h"
#include "pelt.bpf.h"

#include "cpufreq_target.bpf.h"

/* HZ of the running kernel, for the legacy boost's one-tick reset. */
extern int CONFIG_HZ __kconfig __weak;

/* The kernel's most common HZ (Debian's), if its config does not say. */
#define CADENCE_DEFAULT_HZ 250

/* Test only: read util from util_inject instead of PELT (--test-util-inject). */
const volatile bool cpufreq_util_inject;

CADENCE_PER_CPU(struct cadence_cpu_cpufreq, cpu_cpufreq);

/* Test only: per-CPU util values, read when cpufreq_util_inject is set. */
CADENCE_PER_CPU(struct cadence_util_inject, util_inject);

/* TICK_NSEC of the running kernel. */
static __always_inline u64 tick_ns(void)
{
	int hz = CONFIG_HZ > 0 ? CONFIG_HZ : CADENCE_DEFAULT_HZ;

	return 1000000000ULL / hz;
}

/*
 * The util this CPU's target follows: its invariant util_avg, or the
 * running task's util_est if that is higher (a task that ran big before
 * its sleep gets its frequency back at once, as cpu_util() with util_est
 * gives it in the kernel); the injected value in tests.
 */
static __always_inline u32 cpufreq_util(const struct cadence_cpu_util *cu, struct task_ctx *tctx)
{
	struct cadence_util_inject *inj;
	u32 est;
	u64 util;

	if (cpufreq_util_inject) {
		inj = util_inject_here();
		util = inj ? inj->util : 0;
	} else {
		util = cu->avg.util_avg;
		est = pelt_util_est(&tctx->util.avg);
		if (est > util)
			util = est;
	}
	return util > CADENCE_CAP_SCALE ? CADENCE_CAP_SCALE : (u32)util;
}

/* ops.runnable(): remember an iowait wake-up, for the legacy boost only. */
__hidden void cpufreq_runnable(struct task_struct *task, struct task_ctx *tctx,
			       const struct cadence_policy *pol, u64 enq_flags)
{
	/* (Not named p: BPF_CORE_READ_BITFIELD() declares a local p.) */
	if (pol->cpufreq_iowait_boost && (enq_flags & SCX_ENQ_WAKEUP))
		tctx->iowait_wake = BPF_CORE_READ_BITFIELD(task, in_iowait);
}

/*
 * cpufreq_update() (cadence.bpf.h) on @p's own CPU: re-evaluate this CPU's
 * target after its util was brought to @now (@cu). @iowait: the running
 * task just woke from iowait (running()).
 */
__hidden void cpufreq_update_here(struct task_ctx *tctx, const struct cadence_cpu_util *cu,
				  const struct cadence_policy *pol, bool iowait, u64 now)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct cadence_cpu_cpufreq *pc;
	u32 target;

	pc = cpu_cpufreq_here();
	if (!pc)
		return;
	/* TICK_NSEC is a division: only the legacy boost needs it. */
	if (cpufreq_evaluate(pc, pol, cpufreq_util(cu, tctx), iowait, now,
			     pol->cpufreq_iowait_boost ? tick_ns() : 0) != CADENCE_CPUFREQ_ISSUED)
		return;
	target = pc->target;
	if (target > CADENCE_CPUFREQ_MAX)
		target = CADENCE_CPUFREQ_MAX;
	scx_bpf_cpuperf_set(cpu, target);
}

/*
 * ops.update_idle(idle = true): this CPU goes idle and asks for its floor
 * (cpufreq_idle()). update_idle() runs on the CPU with its rq locked.
 */
__hidden void cpufreq_going_idle(s32 cpu, const struct cadence_policy *pol)
{
	struct cadence_cpu_cpufreq *pc;

	if (cpu != bpf_get_smp_processor_id())
		return;
	pc = cpu_cpufreq_here();
	if (!pc || cpufreq_idle(pc, pol) != CADENCE_CPUFREQ_ISSUED)
		return;
	scx_bpf_cpuperf_set(cpu,
			    pc->target > CADENCE_CPUFREQ_MAX ? CADENCE_CPUFREQ_MAX : pc->target);
}

/* ops.dump_cpu(): @cpu's cpufreq state. */
__hidden void cpufreq_dump_cpu(s32 cpu)
{
	struct cadence_cpu_cpufreq *pc;
	u32 zero = 0;

	pc = bpf_map_lookup_percpu_elem(&cpu_cpufreq, &zero, cpu);
	if (pc)
		scx_bpf_dump("  cpufreq target=%u util=%u issued=%llu boost=%u\n", pc->target,
			     pc->util, pc->issued, pc->boost);
}
