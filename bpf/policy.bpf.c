/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The policy in force, and how a callback reads it without ever seeing a mix
 * of two policies.
 *
 * The loader writes the whole `policy` slot with BPF_F_LOCK, which takes the
 * slot's spin lock, then bumps `policy_state.generation`. Each CPU keeps its
 * own copy in `policy_cpu`. A callback compares the copy's generation with
 * the one in force (one shared load) and, only after a change, refreshes the
 * copy under the slot's lock. bpf_spin_lock() disables interrupts, so
 * nothing else on this CPU runs during a refresh.
 *
 * A callback the kernel runs with a runqueue locked and so interrupts off
 * (select_cpu, enqueue, dispatch, runnable, running, stopping, quiescent,
 * tick, yield, set_weight, update_idle, cgroup_move, and the idle tracepoint)
 * may read the copy in place (policy_in_force()). The others (init_task and
 * the sleepable ones, cgroup_exit, cgroup_set_weight, cgroup_set_bandwidth,
 * cpu_online, cpu_offline, exit: kernel/sched/ext.c calls them with no
 * runqueue locked) and BPF timers run with interrupts on and take a snapshot
 * (policy_snapshot()). Only a callback on this CPU refreshes the copy, and
 * none runs nested in one that has interrupts off (the nesting
 * kernel/sched/ext.c allows, ops.dequeue() in ops.dispatch() and
 * ops.enqueue() in ops.cpu_release(), is of callbacks scx_cadence does not
 * implement), so the copy holds one generation until it returns. A BPF timer
 * runs with interrupts on, where a tick may refresh the copy under it: hence
 * its snapshot on its stack (policy_snapshot()). The copy's seq changes
 * around every refresh, so a snapshot that a nested refresh overtook is taken
 * again. After CADENCE_POLICY_RETRIES overtaken reads the snapshot is taken
 * under the slot's lock, which is always whole. Every callback therefore
 * works with one generation from start to end.
 */
#include "cadence.bpf.h"

/*
 * Overtaken snapshots before falling back to the lock. A refresh needs a
 * policy change to land inside the few loads of a snapshot, so one retry
 * already practically never happens; two are for nested callbacks.
 */
#define CADENCE_POLICY_RETRIES 2

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_policy_slot);
	__uint(max_entries, 1);
} policy SEC(".maps");

/* policy_state and policy_cpu are in cadence.bpf.h, beside policy_in_force(). */

/* Copy the slot into @out under its lock; false if the maps are missing. */
__hidden bool policy_copy_locked(struct cadence_policy *out, u64 *gen)
{
	u32 zero = 0;
	struct cadence_policy_slot *slot = bpf_map_lookup_elem(&policy, &zero);

	if (!slot)
		return false;
	bpf_spin_lock(&slot->lock);
	*out = slot->policy;
	*gen = slot->generation;
	bpf_spin_unlock(&slot->lock);
	return true;
}

/* This CPU's copy, refreshed if a newer generation is in force. */
static __always_inline struct cadence_policy_cpu *policy_refresh(void)
{
	u32 zero = 0;
	struct cadence_policy_state *state = bpf_map_lookup_elem(&policy_state, &zero);
	struct cadence_policy_cpu *c = policy_cpu_here();
	struct cadence_policy_slot *slot;

	if (!state || !c)
		return NULL;
	if (READ_ONCE(state->generation) == c->generation)
		return c;

	/* Only after a change: the slot itself. */
	slot = bpf_map_lookup_elem(&policy, &zero);
	if (!slot)
		return NULL;

	bpf_spin_lock(&slot->lock);
	WRITE_ONCE(c->seq, c->seq + 1);
	barrier();
	c->policy = slot->policy;
	c->generation = slot->generation;
	barrier();
	WRITE_ONCE(c->seq, c->seq + 1);
	bpf_spin_unlock(&slot->lock);
	stat_inc(policy_refresh);
	return c;
}

/*
 * Fill @out with the policy in force: one whole generation. Ends the
 * scheduler if the loader never wrote one (it does so before attaching).
 */
__hidden void policy_snapshot(struct cadence_policy *out)
{
	struct cadence_policy_cpu *c = policy_refresh();
	u64 seq, gen = 0;
	u32 i;

	if (c) {
		for (i = 0; i < CADENCE_POLICY_RETRIES; i++) {
			seq = READ_ONCE(c->seq);
			barrier();
			*out = c->policy;
			gen = c->generation;
			barrier();
			if (!(seq & 1) && READ_ONCE(c->seq) == seq)
				goto check;
		}
	}
	if (!policy_copy_locked(out, &gen))
		gen = 0;
check:
	if (!gen) {
		__builtin_memset(out, 0, sizeof(*out));
		scx_bpf_error("no policy loaded");
	}
}

/*
 * policy_in_force()'s slow path (cadence.bpf.h): this CPU's copy, refreshed
 * if a newer generation is in force. NULL, and the scheduler ended, if the
 * loader never wrote one (it does so before attaching).
 */
__hidden const struct cadence_policy *policy_refreshed(void)
{
	struct cadence_policy_cpu *c = policy_refresh();

	if (!c || !c->generation) {
		scx_bpf_error("no policy loaded");
		return NULL;
	}
	return &c->policy;
}
