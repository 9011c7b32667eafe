/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each callback does to the PELT clocks and signals (util.bpf.c), as
 * pure functions of the CPU's and the task's util state: no maps, no
 * kfuncs. util.bpf.c looks the state up and reads the clocks; the syscall
 * test program pelt_test.bpf.c runs this very code on the host, with two
 * CPUs and remote callbacks (src/pelt/glue_tests.rs).
 *
 * @here is the CPU the callback runs on (@cu is its state), @cpu the
 * task's CPU, @now scx_bpf_now() read on @here.
 *
 * Remote callbacks. running() and stopping() also run on another CPU than
 * the task's, with the task's rq locked, when an attribute of a running
 * task changes (sched_setaffinity(), setpriority(), a cgroup move): the
 * kernel dequeues it with DEQUEUE_SAVE, puts it back and sets it running
 * again, all from the caller's CPU. They are skipped here. Writing the
 * task's CPU's state instead (bpf_map_lookup_percpu_elem()) would be
 * serialized by that rq's lock, but scx_bpf_now() reads the caller's
 * clock, so the CPU's PELT clock would take a time from a clock that is
 * monotonic only on another CPU, and a CPU signal written only by its own
 * CPU needs no such care. Nothing is lost: the task ran on its CPU all
 * along, and that CPU's next local update (tick, stopping, update_idle)
 * counts the whole span, as if the change had not happened.
 *
 * Clocks across CPUs. A task's times (updated_at, woke_at) may come from
 * another CPU's scx_bpf_now(), which can read behind this one's: every
 * difference between them is signed and taken as 0 when negative.
 */
#ifndef __CADENCE_UTIL_GLUE_BPF_H
#define __CADENCE_UTIL_GLUE_BPF_H

/* @a - @b of two scx_bpf_now() readings, 0 if @a is not after @b. */
static __always_inline u64 clock_since(u64 a, u64 b)
{
	s64 d = (s64)(a - b);

	return d > 0 ? (u64)d : 0;
}

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
 * The PELT time, on a CPU's clock that read @before at its last update and
 * ran at @busy's pace since, that the CPU's task clock time @t maps to:
 * cap x freq scaled while busy, 1:1 while idle. Before the last update the
 * pace is not known; the current one stands in for it.
 */
static __always_inline u64 pelt_time_at(const struct cadence_pelt_clock *before, bool busy,
					u32 cpu_cap, u32 freq_scale, u64 t)
{
	u64 p0 = pelt_clock_now(before), d;
	bool later = (s64)(t - before->clock_task) >= 0;

	d = later ? t - before->clock_task : before->clock_task - t;
	if (busy)
		d = pelt_cap_scale(pelt_cap_scale(d, cpu_cap), freq_scale);
	if (later)
		return p0 + d;
	return p0 > d ? p0 - d : 0;
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
		elapsed = tu->cpu < 0 ? 0 : clock_since(now, tu->updated_at);
		tu->avg.last_update_time = at > elapsed ? at - elapsed : 0;
		tu->cpu = cpu;
	}
	pelt_update(at, &tu->avg, weight, runnable, running);
	tu->updated_at = now;
}

/*
 * ops.runnable(): note a wake-up, for ops.running(). Other enqueues (an
 * attribute change putting the task back, ENQUEUE_RESTORE) are no wake-up:
 * the task did not sleep.
 */
static __always_inline void util_glue_runnable(struct cadence_task_util *tu, u64 now, bool wakeup)
{
	if (wakeup)
		tu->woke_at = now;
}

/*
 * ops.running(): the CPU was idle or ran another task; the task waited or
 * slept. True if @cu was brought to @now (cpufreq may use it); false for a
 * remote call, which changes nothing.
 */
static __always_inline bool util_glue_running(struct cadence_cpu_util *cu,
					      struct cadence_task_util *tu, u64 weight, s32 here,
					      s32 cpu, u64 now)
{
	struct cadence_pelt_clock before = cu->clock;
	bool was_busy = cu->busy;
	u64 pelt_now, woke;

	if (here != cpu)
		return false;
	cpu_util_advance(cu, now);
	cu->busy = 1;
	pelt_now = pelt_clock_now(&cu->clock);
	/*
	 * Woke since the last update: asleep until then, queued after. The
	 * wake-up is placed on this CPU's PELT clock, where the wait ran (at
	 * cap x freq while another task kept the CPU busy), never before the
	 * signal's last update on this clock nor after now.
	 */
	if (tu->cpu >= 0 && (s64)(tu->woke_at - tu->updated_at) > 0) {
		woke = pelt_time_at(&before, was_busy, cu->cpu_cap, cu->freq_scale, tu->woke_at);
		if (woke > pelt_now)
			woke = pelt_now;
		if (tu->cpu == cpu && woke < tu->avg.last_update_time)
			woke = tu->avg.last_update_time;
		task_util_advance(tu, weight, cpu, tu->woke_at, woke, false, false);
	}
	task_util_advance(tu, weight, cpu, now, pelt_now, true, false);
	return true;
}

/* The task ran on this CPU (@cu) until @now: ops.tick(), ops.stopping(). */
static __always_inline void util_glue_ran(struct cadence_cpu_util *cu, struct cadence_task_util *tu,
					  u64 weight, s32 cpu, u64 now)
{
	cpu_util_advance(cu, now);
	task_util_advance(tu, weight, cpu, now, pelt_clock_now(&cu->clock), true, true);
}

/*
 * ops.stopping(): the task ran until @now (skipped when remote). util_est
 * waits for quiescent(), which tells a sleep from an attribute change.
 */
static __always_inline void util_glue_stopping(struct cadence_cpu_util *cu,
					       struct cadence_task_util *tu, u64 weight, s32 here,
					       s32 cpu, u64 now)
{
	if (here == cpu)
		util_glue_ran(cu, tu, weight, cpu, now);
}

/*
 * ops.quiescent(): on a sleep (SCX_DEQ_SLEEP), one util_est sample, as
 * util_est_update() takes one only when dequeue_task_fair() is passed
 * DEQUEUE_SLEEP. stopping() just brought util_avg to now. @cpu_cap: the
 * task's CPU's capacity.
 */
static __always_inline void util_glue_quiescent(struct cadence_task_util *tu, u32 cpu_cap,
						bool sleep)
{
	if (sleep)
		pelt_util_est_update(&tu->avg, cpu_cap);
}

/*
 * ops.update_idle(): the CPU goes idle (busy until @now) or wakes. A wake
 * changes nothing: the CPU is idle in its signal until running() brings
 * its clock and signal to that time, which counts the idle span as an
 * update here would (pelt_clock_idle(), then neither runnable nor
 * running), only in one step instead of two. Updating here too only cost
 * the wake-up's path, the one latency pays for, an update it repeats.
 */
static __always_inline void util_glue_update_idle(struct cadence_cpu_util *cu, u64 now, bool idle)
{
	if (!idle)
		return;
	cpu_util_advance(cu, now);
	if (cu->busy) {
		pelt_clock_go_idle(&cu->clock, now, cu->avg.util_sum);
		cu->busy = 0;
	}
}

#endif /* __CADENCE_UTIL_GLUE_BPF_H */
