/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each callback does to the PELT clocks and signals (util.bpf.h), as
 * pure functions of the CPU's and the task's util state: no maps, no
 * kfuncs. util.bpf.h looks the state up and reads the clocks; the syscall
 * test program pelt_test.bpf.c runs this very code on the host, with two
 * CPUs and remote callbacks (src/pelt/bpf_tests.rs).
 *
 * @here is the CPU the callback runs on (its cu is the one passed), @cpu
 * the task's CPU, @now scx_bpf_now() on @here.
 */
#ifndef __CADENCE_UTIL_GLUE_BPF_H
#define __CADENCE_UTIL_GLUE_BPF_H

/* Bring this CPU's PELT clock and busy signal to @now. */
static __always_inline void cpu_util_advance(struct cadence_cpu_util *cu, u64 now)
{
	if (cu->busy)
		pelt_clock_busy(&cu->clock, now, cu->cpu_cap, cu->freq_scale);
	else
		pelt_clock_idle(&cu->clock, now);
	pelt_update(pelt_clock_now(&cu->clock), &cu->avg, 1, cu->busy, cu->busy);
}

/*
 * Bring the task's signal @tu to the PELT time @at on @cpu's clock, the
 * task having been @runnable (queued or running) and @running meanwhile.
 */
static __always_inline void task_util_advance(struct cadence_task_util *tu, u64 weight, s32 cpu,
					      u64 now, u64 at, bool runnable, bool running)
{
	u64 elapsed;

	if (tu->cpu != cpu) {
		/* First update here: carry the time since the last one over. */
		elapsed = tu->cpu < 0 ? 0 : now - tu->updated_at;
		tu->avg.last_update_time = at > elapsed ? at - elapsed : 0;
		tu->cpu = cpu;
	}
	pelt_update(at, &tu->avg, weight, runnable, running);
	tu->updated_at = now;
}

/* ops.runnable(): the task was enqueued; note when, for ops.running(). */
static __always_inline void util_glue_runnable(struct cadence_task_util *tu, u64 now, bool wakeup)
{
	tu->woke_at = now;
}

/*
 * ops.running(): the CPU was idle or ran another task; the task waited or
 * slept. True if @cu was brought to @now (cpufreq may use it).
 */
static __always_inline bool util_glue_running(struct cadence_cpu_util *cu,
					      struct cadence_task_util *tu, u64 weight, s32 here,
					      s32 cpu, u64 now)
{
	u64 pelt_now, waited;

	cpu_util_advance(cu, now);
	cu->busy = 1;
	pelt_now = pelt_clock_now(&cu->clock);
	/* Woke since the last update: asleep until then, queued after. */
	if (tu->cpu >= 0 && tu->woke_at > tu->updated_at) {
		waited = now - tu->woke_at;
		if (pelt_now > waited)
			task_util_advance(tu, weight, here, tu->woke_at, pelt_now - waited, false,
					  false);
	}
	task_util_advance(tu, weight, here, now, pelt_now, true, false);
	return true;
}

/* The task ran on this CPU (@cu) until @now: ops.tick(), ops.stopping(). */
static __always_inline void util_glue_ran(struct cadence_cpu_util *cu, struct cadence_task_util *tu,
					  u64 weight, s32 cpu, u64 now)
{
	cpu_util_advance(cu, now);
	task_util_advance(tu, weight, cpu, now, pelt_clock_now(&cu->clock), true, true);
}

/* ops.stopping(): the task ran until @now; if it sleeps, a util_est sample. */
static __always_inline void util_glue_stopping(struct cadence_cpu_util *cu,
					       struct cadence_task_util *tu, u64 weight, s32 here,
					       s32 cpu, u64 now, bool runnable)
{
	util_glue_ran(cu, tu, weight, here, now);
	if (!runnable)
		pelt_util_est_update(&tu->avg, cu->cpu_cap);
}

/* ops.update_idle(): the CPU goes idle (busy until @now) or wakes. */
static __always_inline void util_glue_update_idle(struct cadence_cpu_util *cu, u64 now, bool idle)
{
	cpu_util_advance(cu, now);
	if (idle && cu->busy) {
		pelt_clock_go_idle(&cu->clock, now, cu->avg.util_sum);
		cu->busy = 0;
	}
}

#endif /* __CADENCE_UTIL_GLUE_BPF_H */
