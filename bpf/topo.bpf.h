/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU topology as the scheduler needs it: which LLC each CPU belongs to,
 * a cpumask per LLC, and the DSQ ids derived from both. The loader fills the
 * rodata tables before load; init() builds the cpumasks and the DSQs.
 */
#ifndef __CADENCE_TOPO_BPF_H
#define __CADENCE_TOPO_BPF_H

#include "masked_index.bpf.h"

/* Number of LLCs the loader found (1..CADENCE_MAX_LLCS). */
const volatile u32 nr_llcs = 1;
/* LLC index of each CPU, 0..nr_llcs-1. */
const volatile u32 cpu_llc[CADENCE_MAX_CPUS];
/* Online CPUs in each LLC: divides the LLC queue length into per-CPU load. */
const volatile u32 llc_nr_cpus[CADENCE_MAX_LLCS];

struct llc_mask {
	struct bpf_cpumask __kptr *cpus;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct llc_mask);
	__uint(max_entries, CADENCE_MAX_LLCS);
} llc_masks SEC(".maps");

/*
 * Scratch cpumask of each CPU, indexed by CPU id, for "allowed CPUs within
 * this LLC". Only the owning CPU touches its slot, with preemption disabled.
 */
struct scratch_mask {
	struct bpf_cpumask __kptr *cpus;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct scratch_mask);
	__uint(max_entries, CADENCE_MAX_CPUS);
} scratch_masks SEC(".maps");

/*
 * No range checks here, only masks: the kernel passes valid CPUs, the
 * loader refuses more than CADENCE_MAX_CPUS and numbers the LLCs below
 * CADENCE_MAX_LLCS, so for every CPU that exists the masks change nothing.
 * A check would make the verifier walk the rest of each callback twice:
 * once for CPUs in range and once beyond, as the CPU is an array index and
 * so must be tracked exactly. Without the checks, loading in the TCG test
 * VM verified in 8-10 s instead of 15-18 (dispatch 2.4-3.0 s instead of
 * 5.6-6.8, enqueue 1.9-2.0 instead of 4.4-5.2).
 */
static __always_inline u32 cpu_llc_id(s32 cpu)
{
	return llc_index(cpu_llc[cpu_index((u32)cpu)]);
}

static __always_inline u64 cpu_dsq(s32 cpu)
{
	return (u64)cpu;
}

static __always_inline u64 llc_dsq(u32 llc)
{
	return CADENCE_LLC_DSQ_BASE + llc;
}

static __always_inline u32 llc_cpus(u32 llc)
{
	u32 n = llc_nr_cpus[llc_index(llc)];

	return n ? n : 1;
}

/* The cpumask of @llc, or NULL if init() has not built it. RCU-protected. */
static __always_inline const struct cpumask *llc_cpumask(u32 llc)
{
	struct llc_mask *m = bpf_map_lookup_elem(&llc_masks, &llc);

	if (!m || !m->cpus)
		return NULL;
	return cast_mask(m->cpus);
}

static __always_inline struct bpf_cpumask *this_scratch_mask(void)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct scratch_mask *m = bpf_map_lookup_elem(&scratch_masks, &cpu);

	return m ? m->cpus : NULL;
}

/* Store a new cpumask into a kptr slot; frees whatever was there. */
static __always_inline int install_mask(struct bpf_cpumask __kptr **slot)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(slot, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

/*
 * Build one cpumask per LLC from cpu_llc[], a scratch mask per CPU, and the
 * DSQs: one per CPU and one per LLC. Called once from ops.init().
 */
static int topo_init(void)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids();
	struct scratch_mask *sm;
	struct llc_mask *lm;
	s32 cpu, err;
	u32 llc;

	if (nr_cpus > CADENCE_MAX_CPUS || nr_llcs == 0 || nr_llcs > CADENCE_MAX_LLCS) {
		scx_bpf_error("topology out of range: %u CPUs, %u LLCs", nr_cpus, nr_llcs);
		return -EINVAL;
	}

	bpf_for (llc, 0, nr_llcs) {
		lm = bpf_map_lookup_elem(&llc_masks, &llc);
		if (!lm || install_mask(&lm->cpus))
			return -ENOMEM;
		err = scx_bpf_create_dsq(llc_dsq(llc), -1);
		if (err) {
			scx_bpf_error("failed to create LLC DSQ %u: %d", llc, err);
			return err;
		}
	}

	bpf_for (cpu, 0, nr_cpus) {
		struct bpf_cpumask *mask;

		llc = cpu_llc_id(cpu);
		lm = bpf_map_lookup_elem(&llc_masks, &llc);
		if (!lm)
			return -ENOENT;
		bpf_rcu_read_lock();
		mask = lm->cpus;
		if (mask)
			bpf_cpumask_set_cpu(cpu, mask);
		bpf_rcu_read_unlock();

		sm = bpf_map_lookup_elem(&scratch_masks, &cpu);
		if (!sm || install_mask(&sm->cpus))
			return -ENOMEM;

		err = scx_bpf_create_dsq(cpu_dsq(cpu), -1);
		if (err) {
			scx_bpf_error("failed to create CPU DSQ %d: %d", cpu, err);
			return err;
		}
	}
	return 0;
}

#endif /* __CADENCE_TOPO_BPF_H */
