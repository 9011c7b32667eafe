/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The APERF/MPERF arithmetic of freq_ratio.bpf.h, without kfuncs, so that the
 * host tests (pelt_test.bpf.c) run this very code.
 *
 * Hybrid parts (Intel P- and E-cores). With hybrid capacity scaling on
 * (intel_pstate calls arch_enable_hybrid_capacity_scale() and then
 * arch_set_cpu_capacity() for each CPU, arch/x86/kernel/cpu/aperfmperf.c),
 * the kernel keeps two values per CPU: its capacity (arch_scale_cpu_capacity(),
 * what scx_bpf_cpuperf_cap() returns), relative to the biggest CPU, and
 * its freq_ratio = that CPU's own highest frequency / base, by which
 * scale_freq_tick() divides APERF/MPERF. An E-core at its own maximum thus
 * has freq_scale 1024 and is scaled down once, by its capacity.
 * freq_max_ratio is one value, taken from the P-core's maximum; dividing an
 * E-core's counts by it too scales that E-core a second time. So, when the
 * kernel reports a capacity below 1024 (its hybrid scaling is on), the
 * ratio of CPU @cpu is freq_max_ratio x cpu_freq_max_scale[@cpu] / 1024,
 * where the loader sets cpu_freq_max_scale[] to that CPU's
 * cpuinfo_max_freq / the highest cpuinfo_max_freq, x1024. With a capacity
 * of 1024 (older kernels, hybrid scaling off) the kernel itself uses the
 * one arch_max_freq_ratio for every CPU, and so does this code.
 *
 * The cpuperf source needs no such factor: scx_bpf_cpuperf_cur() is
 * arch_scale_freq_capacity(), per_cpu(arch_freq_scale), which the kernel's
 * scale_freq_tick() already computes against the per-CPU freq_ratio above.
 */
#ifndef __CADENCE_FREQ_RATIO_MATH_BPF_H
#define __CADENCE_FREQ_RATIO_MATH_BPF_H

#include "masked_index.bpf.h"

/*
 * Per CPU: its cpuinfo_max_freq over the highest of all CPUs, x1024, set by
 * the loader on hybrid parts only (src/freq/hybrid.rs). 0 or 1024: no change.
 */
const volatile u16 cpu_freq_max_scale[CADENCE_MAX_CPUS];

/* The APERF/MPERF divisor of @cpu, whose capacity is @cpu_cap (see above). */
static __always_inline u32 freq_cpu_max_ratio(u32 max_ratio, u32 cpu_cap, s32 cpu)
{
	u32 idx = (u32)cpu, scale;

	if (cpu_cap >= CADENCE_CAP_SCALE || idx >= CADENCE_MAX_CPUS)
		return max_ratio;
	scale = cpu_freq_max_scale[cpu_index(idx)];
	if (!scale || scale >= CADENCE_CAP_SCALE)
		return max_ratio;
	/* A ratio of 0 would give no frequency at all: keep at least 1. */
	max_ratio = (u64)max_ratio * scale >> CADENCE_CAP_SHIFT;
	return max_ratio ? max_ratio : 1;
}

/*
 * scale_freq_tick(): freq_scale = (dAPERF << 20) / (dMPERF * max_ratio),
 * where max_ratio = freq_max / base x1024 and MPERF counts at the base
 * frequency. An overflow or a zero gives no ratio (false); above 1024 the
 * CPU ran faster than freq_max and the ratio is clamped (counted).
 */
static __always_inline bool freq_ratio_from_counts(struct cadence_cpu_util *cu, u64 acnt, u64 mcnt,
						   u32 max_ratio)
{
	u64 scale, limit;

	/* check_shl_overflow(acnt, 2 * SCHED_CAPACITY_SHIFT) */
	if (acnt >> (64 - 2 * CADENCE_CAP_SHIFT))
		return false;
	acnt <<= 2 * CADENCE_CAP_SHIFT;
	/* check_mul_overflow(mcnt, max_ratio) || !mcnt */
	if (!mcnt || !max_ratio)
		return false;
	limit = ~0ULL / max_ratio;
	/* Else clang folds the test into a 128-bit multiply BPF lacks. */
	barrier_var(limit);
	if (mcnt > limit)
		return false;
	mcnt *= max_ratio;
	scale = acnt / mcnt;
	if (!scale)
		return false;
	cu->freq_ticks++;
	if (scale > CADENCE_CAP_SCALE) {
		scale = CADENCE_CAP_SCALE;
		cu->freq_clamped++;
	}
	cu->freq_scale = scale;
	return true;
}

#endif /* __CADENCE_FREQ_RATIO_MATH_BPF_H */
