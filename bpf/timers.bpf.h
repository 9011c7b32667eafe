/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scheduler's BPF timers share (parity_timer.bpf.h,
 * slice_timer.bpf.h): whether they may run at all, and whether the
 * scheduler is leaving.
 */
#ifndef __CADENCE_TIMERS_BPF_H
#define __CADENCE_TIMERS_BPF_H

/* include/uapi/linux/time.h; a define there, so not in vmlinux.h. */
#define CADENCE_CLOCK_MONOTONIC 1

/* Set by the loader: false on PREEMPT_RT, whose verifier refuses bpf_timer. */
const volatile bool bpf_timers_on = true;

/* Set by exit(): a timer that fires after it leaves the CPUs alone. */
static bool bpf_timers_stopped;

#endif /* __CADENCE_TIMERS_BPF_H */
