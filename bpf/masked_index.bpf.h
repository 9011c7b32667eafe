/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Array indices masked to the array's size, for the verifier. Both sizes
 * are powers of two, and the mask sits behind barrier_var() so that clang
 * cannot drop it as redundant after a range check: the check alone is lost
 * to the verifier when clang keeps the index in two registers and bounds
 * only one. Callers still range-check where an out-of-range index means
 * something (the mask only keeps the access inside the array).
 */
#ifndef __CADENCE_MASKED_INDEX_BPF_H
#define __CADENCE_MASKED_INDEX_BPF_H

_Static_assert((CADENCE_MAX_CPUS & (CADENCE_MAX_CPUS - 1)) == 0, "power of two");
_Static_assert((CADENCE_MAX_LLCS & (CADENCE_MAX_LLCS - 1)) == 0, "power of two");

/* @i as an index into an array of CADENCE_MAX_CPUS entries. */
static __always_inline u32 cpu_index(u32 i)
{
	barrier_var(i);
	return i & (CADENCE_MAX_CPUS - 1);
}

/* @i as an index into an array of CADENCE_MAX_LLCS entries. */
static __always_inline u32 llc_index(u32 i)
{
	barrier_var(i);
	return i & (CADENCE_MAX_LLCS - 1);
}

#endif /* __CADENCE_MASKED_INDEX_BPF_H */
