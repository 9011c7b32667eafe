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
} cpu_stats SEC(".maps") __weak;

static __always_inline struct cadence_cpu_stats *this_cpu_stats(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_stats, &zero);
}

/* Count one event in this CPU's copy of the named cadence_cpu_stats field. */
#define stat_inc(field)                                                                            \
	do {                                                                                       \
		struct cadence_cpu_stats *__s = this_cpu_stats();                                  \
                                                                                                   \
		if (__s)                                                                           \
			__s->field++;                                                              \
	} while (0)

#endif /* __CADENCE_STATS_BPF_H */
