/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frequency ratio of each CPU, 1024 = running at freq_max, for the
 * frequency-invariant PELT clock (util.bpf.c). Computed on every tick of
 * the CPU, from the first source the loader found (enum
 * cadence_freq_source):
 *
 * APERF/MPERF: the loader opens the msr PMU's aperf and mperf events on
 * every CPU and puts them in aperf_events/mperf_events; ops.tick() reads
 * them on the local CPU with bpf_perf_event_read_value(). The helper is
 * called from the struct_ops program itself, not from a separate tick
 * program: since a 2025 change made for sched_ext schedulers,
 * bpf_base_func_proto(), which sched_ext programs get, returns
 * bpf_get_perf_event_read_value_proto() for it, and the 7.2 test kernel's
 * verifier accepts the call in ops.tick() (the scheduler loads there). A
 * kernel whose verifier refused it would refuse the whole scheduler: the
 * loader asks first (aperf_probe.bpf.c) and takes cpuperf on such a one.
 * The formula is the kernel's per-tick one (arch/x86/kernel/cpu/
 * aperfmperf.c, scale_freq_tick()).
 *
 * cpuperf: scx_bpf_cpuperf_cur() is the kernel's own ratio against its own
 * reference frequency; it is rescaled to freq_max.
 *
 * inject (tests only): the same formula as APERF/MPERF, on counter values
 * that a test writes into freq_inject. VMs have no APERF/MPERF, so this is
 * how the VM tests drive this code in the real kernel.
 */
#ifndef __CADENCE_FREQ_RATIO_BPF_H
#define __CADENCE_FREQ_RATIO_BPF_H

#include "freq_ratio_math.bpf.h"

/* enum cadence_freq_source: chosen by the loader before the load. */
const volatile u32 freq_source = CADENCE_FREQ_NONE;

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
	__uint(max_entries, CADENCE_MAX_CPUS);
} aperf_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
	__uint(max_entries, CADENCE_MAX_CPUS);
} mperf_events SEC(".maps");

/* Test only: per-CPU APERF/MPERF values, read when freq_source is inject. */
CADENCE_PER_CPU(struct cadence_freq_inject, freq_inject);

/* This CPU's APERF and MPERF, from the events or the test's values. */
static __always_inline bool freq_ratio_read_counters(u64 *aperf, u64 *mperf)
{
	struct bpf_perf_event_value a, m;
	struct cadence_freq_inject *inj;

	if (freq_source == CADENCE_FREQ_INJECT) {
		inj = freq_inject_here();
		if (!inj)
			return false;
		*aperf = inj->aperf;
		*mperf = inj->mperf;
		return true;
	}
	if (bpf_perf_event_read_value(&aperf_events, BPF_F_CURRENT_CPU, &a, sizeof(a)) ||
	    bpf_perf_event_read_value(&mperf_events, BPF_F_CURRENT_CPU, &m, sizeof(m)))
		return false;
	*aperf = a.counter;
	*mperf = m.counter;
	return true;
}

/* arch_scale_freq_tick(): refresh this CPU's ratio from its source. */
static __always_inline void freq_ratio_tick(struct cadence_cpu_util *cu, s32 cpu,
					    const struct cadence_policy *pol)
{
	u64 aperf, mperf, acnt, mcnt, cur;
	bool first;

	switch (freq_source) {
	case CADENCE_FREQ_APERF:
	case CADENCE_FREQ_INJECT:
		if (!freq_ratio_read_counters(&aperf, &mperf)) {
			cu->freq_errors++;
			return;
		}
		first = !cu->aperf && !cu->mperf;
		acnt = aperf - cu->aperf;
		mcnt = mperf - cu->mperf;
		cu->aperf = aperf;
		cu->mperf = mperf;
		/* The first reading only sets the baseline. */
		if (!first && !freq_ratio_from_counts(
				      cu, acnt, mcnt,
				      freq_cpu_max_ratio(pol->freq_max_ratio, cu->cpu_cap, cpu)))
			cu->freq_errors++;
		return;
	case CADENCE_FREQ_CPUPERF:
		cur = (u64)scx_bpf_cpuperf_cur(cpu) * pol->cpuperf_scale >> CADENCE_CAP_SHIFT;
		cu->freq_ticks++;
		if (cur > CADENCE_CAP_SCALE) {
			cur = CADENCE_CAP_SCALE;
			cu->freq_clamped++;
		}
		/* A ratio of 0 would stop the PELT clock: count it, keep 1/1024. */
		cu->freq_scale = cur ? cur : 1;
		return;
	default:
		cu->freq_scale = CADENCE_CAP_SCALE;
		return;
	}
}

#endif /* __CADENCE_FREQ_RATIO_BPF_H */
