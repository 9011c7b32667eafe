/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether the task on this CPU is inside an RCU read-side critical
 * section, for the slice rules that leave such a task running: the tick
 * (cadence_tick()) and the slice timer (slice_timer.bpf.h).
 */
#ifndef __CADENCE_RCU_READER_BPF_H
#define __CADENCE_RCU_READER_BPF_H

/*
 * RCU read locks a struct_ops callback runs inside: the BPF trampoline's
 * own rcu_read_lock() (__bpf_prog_enter() in kernel/bpf/trampoline.c).
 */
#define CADENCE_RCU_LOCKS_STRUCT_OPS 1
/*
 * RCU read locks a bpf_timer callback runs inside: none (bpf_timer_cb() in
 * kernel/bpf/helpers.c calls it from the hrtimer softirq without taking
 * rcu_read_lock()).
 */
#define CADENCE_RCU_LOCKS_TIMER 0

/*
 * Whether @p, the task running on this CPU, holds more RCU read locks than
 * the @own_locks its caller's context takes itself: CONFIG_PREEMPT_RCU
 * keeps a per-task nesting count (never true without it, or for a task
 * that is not the current one).
 */
static __always_inline bool in_rcu_read_section(const struct task_struct *p, int own_locks)
{
	if (!bpf_core_field_exists(p->rcu_read_lock_nesting) ||
	    p != (const struct task_struct *)bpf_get_current_task_btf())
		return false;
	return p->rcu_read_lock_nesting > own_locks;
}

#endif /* __CADENCE_RCU_READER_BPF_H */
