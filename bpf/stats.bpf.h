/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU event counters. Each CPU bumps only its own copy, so no atomics
 * are needed; the loader sums the copies for the global view.
 */
#ifndef __CADENCE_STATS_BPF_H
#define __CADENCE_STATS_BPF_H

CADENCE_PER_CPU_WEAK(struct cadence_cpu_stats, cpu_stats);

/* Count one event in this CPU's copy of the named cadence_cpu_stats field. */
#define stat_inc(field)                                                                            \
	do {                                                                                       \
		struct cadence_cpu_stats *__s = cpu_stats_here();                                  \
                                                                                                   \
		if (__s)                                                                           \
			__s->field++;                                                              \
	} while (0)

#endif /* __CADENCE_STATS_BPF_H */
