/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and constants shared by the BPF scheduler and the Rust loader.
 * The loader sees this file through bindgen (build.rs), so keep it plain C:
 * no BPF helpers, no kernel types.
 */
#ifndef __CADENCE_INTF_H
#define __CADENCE_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
/* As in include/uapi/linux/bpf.h: user space sees a 4-byte word. */
struct bpf_spin_lock {
	u32 val;
};
#endif

enum cadence_consts {
	/*
	 * Upper bound on nr_cpu_ids that the BPF arrays are sized for. The
	 * loader refuses to start on a larger machine instead of truncating.
	 */
	CADENCE_MAX_CPUS = 1024,
	/* Upper bound on the number of last-level caches (one DSQ each). */
	CADENCE_MAX_LLCS = 256,

	/*
	 * DSQ ids. Each CPU owns the DSQ whose id is its CPU number (tasks that
	 * may run only there); each LLC owns CADENCE_LLC_DSQ_BASE + its index.
	 * User DSQ ids only need bit 63 clear, so both ranges are free to use.
	 */
	CADENCE_LLC_DSQ_BASE = 1 << 16,
	/*
	 * Where the tasks of cgroups past their cpu.max wait for the next
	 * period (cgroup_bw.bpf.c): one DSQ past the LLCs' range.
	 */
	CADENCE_THROTTLE_DSQ = CADENCE_LLC_DSQ_BASE + CADENCE_MAX_LLCS,

	/*
	 * Weight of a nice-0 task: sched_prio_to_weight[20] in
	 * kernel/sched/core.c (NICE_0_LOAD without the fixed-point shift).
	 * Virtual time advances by delta_ns * NICE_0_WEIGHT / weight.
	 */
	CADENCE_NICE_0_WEIGHT = 1024,
};

/*
 * The policy: every tunable the BPF side reads, as one value. The loader
 * validates it (src/policy/) before it ever reaches BPF; see
 * bpf/policy.bpf.c for how a callback gets a consistent copy.
 */
struct cadence_policy {
	/* Longest slice, for a CPU nobody else waits for (ns). */
	u64 slice_max_ns;
	/* Shortest slice however many tasks wait (ns). */
	u64 slice_min_ns;
	/* How far behind the vtime frontier a waking task may start (ns). */
	u64 slice_lag_ns;
	/* 1: look for a fully idle SMT core before an idle sibling thread. */
	u32 idle_core_first;
	/*
	 * freq_max over the base frequency, x1024: the kernel's
	 * arch_max_freq_ratio. APERF/MPERF ratios are divided by it.
	 */
	u32 freq_max_ratio;
	/*
	 * The kernel's own reference frequency over freq_max, x1024:
	 * scx_bpf_cpuperf_cur() is multiplied by it.
	 */
	u32 cpuperf_scale;
	/* freq_max in MHz (0: unknown), for the dumps and the stats. */
	u32 freq_max_mhz;
	/* enum cadence_cpufreq_mode: how each CPU's cpufreq target is chosen. */
	u32 cpufreq_mode;
	/*
	 * Total headroom over util in percent, schedutil's own 25% included:
	 * the target passed on is util x cpufreq_headroom_pct / 125.
	 */
	u32 cpufreq_headroom_pct;
	/*
	 * freq_max over the frequency a target of 1024 stands for (schedutil
	 * maps 1024 to cpuinfo_max_freq), x1024: util is relative to freq_max.
	 */
	u32 cpufreq_scale;
	/*
	 * The pcc-style floor: util below this asks for the minimum target.
	 * ceil(fmin x 1024 / freq_max), so util < floor <=> util/1024 <
	 * fmin/freq_max exactly; 0: no floor.
	 */
	u32 cpufreq_floor_util;
	/* Hysteresis: the least change of target worth a request (cpuperf units of 1024). */
	u32 cpufreq_band;
	/* 1: emulate schedutil's iowait boost (for comparisons only). */
	u32 cpufreq_iowait_boost;
	/* Least time between two requests on one CPU (ns). */
	u64 cpufreq_interval_ns;
	/* How long a lower target must be asked for before it is requested (ns). */
	u64 cpufreq_down_hold_ns;
	/* enum cadence_place_order: how waking tasks find an idle CPU. */
	u32 place_order;
	/* enum cadence_idle_predictor: the idle prediction that acts; 0: off. */
	u32 idle_predictor;
	/* enum cadence_idle_pick: how the per-choice predictor reads its row. */
	u32 idle_pick;
	/* Seed 003's LEARNING_RATE, in percent of a weight (both matrices). */
	u32 idle_learning_rate;
	/* enum cadence_idle_place: how idle states break placement ties. */
	u32 idle_place;
	/*
	 * 1: both matrices (seed, per_choice) predict, learn and are scored on
	 * every idle period; 0: only the acting one (teo always runs).
	 */
	u32 idle_compare;
	/* 1: a waking task with an earlier deadline preempts a running one. */
	u32 wakeup_preempt;
	/* 1: a sync wake-up may go to the waker's CPU. */
	u32 sync_wakeup;
	/*
	 * While others wait, a timer ends a slice when it is used up but no
	 * sooner than this after the task began (us); 0: the tick does.
	 */
	u32 slice_timer_us;
	/*
	 * 1: running tasks hold their CPU (place.bpf.h): a task displaced by
	 * a lighter one waits for its own CPU, an idle CPU takes a queue's
	 * head before a busy one gives up its task, and a running task moves
	 * only for an imbalance of place_move_margin free threads.
	 */
	u32 place_hold;
	/* Idle threads more a core must have for a running task to move there. */
	u32 place_move_margin;
	/* 1: cgroup cpu.weight shares who runs (cgroup.bpf.c); 0: nice weights only. */
	u32 fair_cgroups;
};

/*
 * The value of the `policy` map (one element). The loader replaces it whole
 * with BPF_F_LOCK, and BPF copies it out under the same lock, so nobody sees
 * half of one policy and half of another.
 */
struct cadence_policy_slot {
	struct bpf_spin_lock lock;
	u32 __pad;
	/* Generation of the policy below: 1 for the first, +1 per change. */
	u64 generation;
	struct cadence_policy policy;
};

/*
 * The value of the `policy_state` map (one element): the generation now in
 * force. Written by the loader after the slot, read by every callback to see
 * whether its CPU's copy is stale.
 */
struct cadence_policy_state {
	u64 generation;
};

/*
 * The value of the per-CPU `policy_cpu` map: the copy of the policy this CPU
 * uses. seq is odd while the copy is being refreshed.
 */
struct cadence_policy_cpu {
	u64 seq;
	/* Generation of the copy: shows, per CPU, that a change was applied. */
	u64 generation;
	struct cadence_policy policy;
};

/* Where select_cpu()'s idle search found a CPU; counted in the stats. */
enum cadence_select_step {
	CADENCE_SELECT_PREV_CORE, /* prev CPU, its whole SMT core idle */
	CADENCE_SELECT_LLC_CORE,  /* a fully idle core in prev's LLC */
	CADENCE_SELECT_ANY_CORE,  /* a fully idle core elsewhere */
	CADENCE_SELECT_PREV_CPU,  /* prev CPU idle, sibling busy */
	CADENCE_SELECT_LLC_CPU,	  /* an idle CPU in prev's LLC */
	CADENCE_SELECT_ANY_CPU,	  /* an idle CPU elsewhere */
	CADENCE_SELECT_BUSY,	  /* no idle CPU: left to enqueue() */
};

/*
 * The value of the per-CPU `cpu_stats` map (one element): event counters
 * that only grow. Field names are what bpftool prints; src/stats.rs lists
 * the same names.
 */
struct cadence_cpu_stats {
	/* select_cpu(): where a waking task was placed (enum above). */
	u64 select_prev_core;
	u64 select_llc_core;
	u64 select_any_core;
	u64 select_prev_cpu;
	u64 select_llc_cpu;
	u64 select_any_cpu;
	u64 select_busy;
	/* enqueue(): where a runnable task was queued. */
	u64 enq_pinned; /* per-CPU DSQ: one allowed CPU */
	u64 enq_idle;	/* straight to an idle CPU */
	u64 enq_llc;	/* the LLC's shared vtime DSQ */
	/* dispatch(): where the next task came from. */
	u64 dispatch_cpu;   /* this CPU's own DSQ */
	u64 dispatch_llc;   /* this CPU's LLC DSQ */
	u64 dispatch_steal; /* another LLC's DSQ */
	u64 dispatch_keep;  /* prev kept running: it was first */
	/* tick(): slices cut short because others were waiting. */
	u64 tick_preempt;
	/* Policy copies this CPU refreshed after a change. */
	u64 policy_refresh;
	/*
	 * The small-core order (enum cadence_place_level): where a waking or
	 * enqueued task found its idle CPU, or place_busy if none.
	 */
	u64 place_prev_small;
	u64 place_idle_big;
	u64 place_idle_small;
	u64 place_near_small;
	u64 place_near_big;
	u64 place_near_llc;
	u64 place_any;
	u64 place_busy;
	/*
	 * Fairness across queues (fair.bpf.h): enqueues that lifted a task
	 * (mostly one that slept) to a lag behind its queue's frontier; tasks
	 * taken from a busier LLC by a busy CPU; idle CPUs woken for a task
	 * queued in an LLC.
	 */
	u64 enq_lag_floor;
	u64 dispatch_balance;
	u64 enq_kick_idle;
	/*
	 * Leads cut so that a task waits at most CADENCE_MAX_WAIT_NS for its
	 * turn (fair.bpf.h), mostly low-weight tasks under heavy load.
	 */
	u64 enq_wait_cap;
	/*
	 * Wake-up latency (latency.bpf.h): CPUs kicked to preempt their task
	 * for a waking one with an earlier deadline; wake-ups with an earlier
	 * deadline that left the task running because it had not run its
	 * minimum slice (run-to-parity); sync wake-ups placed on the waker's
	 * CPU; wake-ups queued ahead of their queue's head by an earlier
	 * deadline (deadline overtakes).
	 */
	u64 wake_preempt;
	u64 wake_parity;
	u64 wake_sync;
	u64 wake_overtake;
	/*
	 * Tasks that started running on another CPU than their last one
	 * (migrate.bpf.h), by how far (enum cadence_move_span): another thread
	 * of the same small core, another small core of the same big core,
	 * another big core; and the small and big moves by the path that
	 * made them (enum cadence_move_path).
	 */
	u64 move_thread;
	u64 move_small;
	u64 move_big;
	u64 move_wake;
	u64 move_requeue;
	u64 move_queue;
	/*
	 * Slice refills for a running task that would have yielded to its
	 * LLC queue's head, because an idle CPU was kicked to take the head
	 * (queues.bpf.h, defer_head_to_idle()).
	 */
	u64 dispatch_defer;
	/*
	 * Running tasks that gave up their CPU and were queued on it to wait
	 * for it, not moved (place.bpf.h: displaced by a lighter task, or no
	 * core freer by placement.move_margin free threads).
	 */
	u64 enq_stay;
	/*
	 * Slice ends at which a running task was not refilled so that it
	 * moves: the hold saw a lasting imbalance (place.bpf.h,
	 * hold_rebalance()).
	 */
	u64 dispatch_rebalance;
	/*
	 * Slice ends at which a running task that may run elsewhere gave its
	 * CPU to a CPU-bound task pinned there, and left for an idle CPU
	 * (place.bpf.h, make_room_for_pinned()).
	 */
	u64 dispatch_make_room;
	/*
	 * Tasks taken from a CPU's own queue ahead of its order after waiting
	 * 250 jiffies (queues.bpf.h, take_any_starved()).
	 */
	u64 dispatch_starved;
	/* The same from an LLC's queue. */
	u64 dispatch_starved_llc;
	/*
	 * Tasks holding their CPU sent back to their LLC queue because a
	 * lasting task of like util per weight went first there
	 * (queues.bpf.h, unhold_behind()).
	 */
	u64 dispatch_unhold;
	/*
	 * Ticks that left a task's slice alone because it was inside an RCU
	 * read-side critical section (main.bpf.c, tick()).
	 */
	u64 tick_rcu_reader;
	/*
	 * Slices the tick cut because a waiting task should preempt the
	 * running one (latency.bpf.h, waiting_preempts()): a wake-up the
	 * running task's minimum slice or earlier deadline held back.
	 */
	u64 tick_wake_preempt;
	/*
	 * Of wake_preempt, running tasks preempted although their deadline
	 * was the earlier one: they had run past their share (ineligible) or
	 * used up their slice (latency.bpf.h, count_preempt()).
	 */
	u64 wake_preempt_spent;
	/*
	 * Sync wake-ups that found no CPU and preempted nobody, as their
	 * waker is about to free one (latency.bpf.h, main.bpf.c).
	 */
	u64 wake_sync_yield;
	/*
	 * CPUs kicked when the minimum slice that held a wake-up back ended,
	 * because a waiting task then preempts (parity_timer.bpf.h).
	 */
	u64 wake_parity_kick;
	/*
	 * Parity timers that fired (parity_timer.bpf.h): each asked again
	 * whether a held-back wake-up now preempts, whether or not it then
	 * kicked; under TCG the tick often answered first.
	 */
	u64 wake_parity_fired;
	/*
	 * Slices ended on time by the slice timer: others waited when it
	 * fired (slice_timer.bpf.h, latency.slice_timer_us).
	 */
	u64 slice_timer_kick;
	/* Of those due, left to the tick: the task was inside an RCU reader. */
	u64 slice_timer_rcu;
	/*
	 * sched_yield() calls that ended the yielder's slice, others waiting
	 * for its CPU (main.bpf.c, cadence_yield()).
	 */
	u64 yield_forfeit;
	/*
	 * cgroups created past CADENCE_CGROUP_MAX: their tasks weigh as in the
	 * root cgroup (cgroup.bpf.c).
	 */
	u64 cgroup_untracked;
};

#include "intf_util.h"
#include "intf_cpufreq.h"
#include "intf_place.h"
#include "intf_idle.h"
#include "intf_latency.h"
#include "intf_cgroup.h"

#endif /* __CADENCE_INTF_H */
