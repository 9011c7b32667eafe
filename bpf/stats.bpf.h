/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU event counters. Each CPU bumps only its own copy, so no atomics
 * are needed; the loader sums the copies for the global view.
 */
#ifndef __CADENCE_STATS_BPF_H
#define __CADENCE_STATS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_cpu_stats);
	__uint(max_entries, 1);
} cpu_stats SEC(".maps");

static __always_inline struct cadence_cpu_stats *this_cpu_stats(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_stats, &zero);
}

static __always_inline void stat_inc(enum cadence_stat idx)
{
	struct cadence_cpu_stats *s = this_cpu_stats();

	if (s && idx < CADENCE_NR_STATS)
		s->cnt[idx]++;
}

#endif /* __CADENCE_STATS_BPF_H */
