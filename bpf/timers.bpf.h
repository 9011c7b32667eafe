/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scheduler's BPF timers share (parity_timer.bpf.h,
 * slice_timer.bpf.h, cgroup_bw.bpf.c): whether they may run at all, and
 * whether the scheduler is leaving.
 *
 * What a start costs: every struct_ops callback runs with interrupts
 * off, and there the test kernel's (7.2) bpf_timer_start() does not
 * start the hrtimer itself. It allocates a command (kmalloc_nolock())
 * and queues an irq_work; the hrtimer starts in that self-interrupt,
 * with the delay asked for counted from then. Traced beside hackbench,
 * 526 of 527 starts ran there, and the clock event device was
 * programmed for the timer in time in 523; its interrupts still reached
 * the busy vCPU late under TCG, for a reason not found
 * (docs/benchmarks.md, "What cyclictest beside steady hackbench
 * measured").
 */
#ifndef __CADENCE_TIMERS_BPF_H
#define __CADENCE_TIMERS_BPF_H

/* include/uapi/linux/time.h; a define there, so not in vmlinux.h. */
#define CADENCE_CLOCK_MONOTONIC 1

/*
 * Set by the loader: false on PREEMPT_RT, whose verifier refuses bpf_timer.
 * Defined in main.bpf.c; cgroup_bw.bpf.c's period timer reads it too.
 */
extern const volatile bool bpf_timers_on;

/* Set by exit(): a timer that fires after it leaves the CPUs alone. */
extern bool bpf_timers_stopped;

/*
 * Set up the bpf_timer in @t (a map value of @map) to call @cb: true if it
 * is ready to start. Another CPU setting it up at the same moment makes
 * bpf_timer_init() return -EBUSY, which is no failure. On any other
 * failure (-ENOMEM) the caller leaves it not ready, to try again at its
 * next arming, instead of starting a timer that has no callback.
 */
#define CADENCE_TIMER_SETUP(t, map, cb)                                                            \
	({                                                                                         \
		long __err = bpf_timer_init(&(t)->timer, &(map), CADENCE_CLOCK_MONOTONIC);         \
		(!__err || __err == -EBUSY) && !bpf_timer_set_callback(&(t)->timer, cb);           \
	})

#endif /* __CADENCE_TIMERS_BPF_H */
