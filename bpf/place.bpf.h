/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Idle-CPU selection. With the policy's placement.order = "small_core"
 * (the default), place_search.bpf.c's small-core search, on the topology table the
 * loader writes. With "core", the plain order below, on the kernel's
 * idle-SMT mask (which is the small core only where the kernel's SMT
 * siblings are, e.g. x86 SMT, not POWER9's interleaved halves as sysfs
 * shows them). The "core" order, best first:
 *   1. the previous CPU, if its whole SMT core is idle (warm caches, no
 *      sibling contention);
 *   2. a fully idle core in the previous CPU's LLC;
 *   3. a fully idle core anywhere the task may run;
 *   4. the previous CPU, if it is idle even though its sibling is busy;
 *   5. any idle CPU in the previous CPU's LLC;
 *   6. any idle CPU the task may run on.
 * With the policy's idle_core_first off, steps 1-3 are skipped: tasks pack
 * onto idle sibling threads and whole cores stay asleep longer.
 * Every candidate is claimed with the kernel's idle tracking (test-and-clear),
 * so two wakers never pick the same idle CPU. Without SMT the idle-SMT mask
 * equals the idle mask and steps 1-3 already find every idle CPU.
 */
#ifndef __CADENCE_PLACE_BPF_H
#define __CADENCE_PLACE_BPF_H

#include "place_search.bpf.h"

/* The machine for the small-core order, written by the loader before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_topo);
	__uint(max_entries, 1);
} place_topo SEC(".maps");

/*
 * Each CPU's search inputs: too large for the BPF stack. Only the owning
 * CPU uses its copy, in select_cpu() or enqueue(), which do not nest.
 */
CADENCE_PER_CPU(struct cadence_place_in, place_in);

/*
 * The idle tracepoint's note of @cpu's idle state for idle.place: its exit
 * latency, 0 when it wakes. Written only when it changes, so that CPUs
 * that share the cache line are not disturbed for nothing.
 */
__hidden void place_note_idle_exit(u32 cpu, u64 exit_ns)
{
	struct cadence_topo *t;
	u32 zero = 0, v = exit_ns > 0xffffffffULL ? 0xffffffff : (u32)exit_ns;

	t = bpf_map_lookup_elem(&place_topo, &zero);
	if (t && READ_ONCE(t->idle_exit_ns[cpu_index(cpu)]) != v)
		WRITE_ONCE(t->idle_exit_ns[cpu_index(cpu)], v);
}

/* What pick_small_core() does besides searching (BPF calls take 5 arguments). */
#define PLACE_RECORD 1
#define PLACE_CLAIM  2

/* Claims a found CPU at most this often before giving up on the search. */
#define CADENCE_PLACE_TRIES 3

/* A task that can run on one CPU only, for now or for good. */
static __always_inline bool task_pinned(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1 || is_migration_disabled(p);
}

/* Count the step at which select_cpu() found (or did not find) a CPU. */
static __always_inline void count_select(enum cadence_select_step step)
{
	switch (step) {
	case CADENCE_SELECT_PREV_CORE:
		stat_inc(select_prev_core);
		break;
	case CADENCE_SELECT_LLC_CORE:
		stat_inc(select_llc_core);
		break;
	case CADENCE_SELECT_ANY_CORE:
		stat_inc(select_any_core);
		break;
	case CADENCE_SELECT_PREV_CPU:
		stat_inc(select_prev_cpu);
		break;
	case CADENCE_SELECT_LLC_CPU:
		stat_inc(select_llc_cpu);
		break;
	case CADENCE_SELECT_ANY_CPU:
		stat_inc(select_any_cpu);
		break;
	default:
		stat_inc(select_busy);
		break;
	}
}

/* Count the level at which the small-core search ended. */
static __always_inline void count_place(u32 level)
{
	switch (level) {
	case CADENCE_PLACE_PREV_SMALL:
		stat_inc(place_prev_small);
		break;
	case CADENCE_PLACE_IDLE_BIG:
		stat_inc(place_idle_big);
		break;
	case CADENCE_PLACE_IDLE_SMALL:
		stat_inc(place_idle_small);
		break;
	case CADENCE_PLACE_NEAR_SMALL:
		stat_inc(place_near_small);
		break;
	case CADENCE_PLACE_NEAR_BIG:
		stat_inc(place_near_big);
		break;
	case CADENCE_PLACE_NEAR_LLC:
		stat_inc(place_near_llc);
		break;
	case CADENCE_PLACE_ANY:
		stat_inc(place_any);
		break;
	default:
		stat_inc(place_busy);
		break;
	}
}

/*
 * Copy the first words of a kernel cpumask covering the machine's CPUs,
 * zeroing the rest; false if it cannot be read.
 */
static __always_inline bool mask_words(u64 *words, const struct cpumask *mask, u32 nr_words)
{
	u32 size = nr_words * sizeof(u64);

	__builtin_memset(words, 0, CADENCE_CPU_WORDS * sizeof(u64));
	if (size > CADENCE_CPU_WORDS * sizeof(u64))
		size = CADENCE_CPU_WORDS * sizeof(u64);
	return !bpf_probe_read_kernel(words, size, mask);
}

/*
 * in->light: of @t's CPUs, those whose running task is short now: it has
 * not been runnable for CADENCE_LASTING_NS without a sleep, or is light
 * beside @tctx's task (lighter_per_weight(); cpu_runs[], latency.bpf.h). A CPU
 * between tasks (its record inactive, and not idle yet: the task stopped,
 * or a waker claimed it) is judged by the task it ran last: busy if that
 * one was lasting load, light if not. Judged busy whatever it ran, the
 * CPUs that short commands had just left hid an imbalance of CPU-bound
 * tasks at a third of the hold's checks (traced in VM case
 * place_split_undone_under_churn, 8 vCPUs on 2 host cores). Not inlined,
 * nor hold_off(): their frames would add to pick_small_core()'s, on a call
 * chain from enqueue() that is at the verifier's 512-byte stack limit
 * (they run beside place_search(), not under it).
 */
static __noinline void mark_light(struct cadence_place_in *in, const struct cadence_topo *t,
				  const struct task_ctx *tctx)
{
	u64 util, now = scx_bpf_now();
	const struct cpu_run *r;
	u32 cpu;

	if (!in || !t || !tctx)
		return;
	util = hold_util(tctx);
	__builtin_memset(in->light, 0, sizeof(in->light));
	bpf_for (cpu, 0, t->nr_cpus) {
		r = &cpu_runs[cpu_index(cpu)];
		if (!runs_lasting(r->awake_since, now) ||
		    lighter_per_weight(r->util, r->weight, util, tctx->weight))
			in->light[(cpu >> 6) & (CADENCE_CPU_WORDS - 1)] |= 1ULL << (cpu & 63);
	}
}

/*
 * Whether a running task (@tctx) that a search would take from in->prev to
 * @cpu (-1: nowhere, it stays) should stay instead (see pick_small_core()):
 * one check of the hold (hold_step()), which keeps the run of checks that
 * saw a freer core in @tctx->moves; in->light is marked. A pick in another
 * small or big core is weighed (pl_move_gain()); else the check ends the
 * run.
 */
static __always_inline bool hold_judge(const struct cadence_policy *pol,
				       const struct cadence_topo *t, struct cadence_place_in *in,
				       s32 cpu, struct task_ctx *tctx)
{
	bool weighed = cpu >= 0 && move_span(t, in->prev, cpu) >= CADENCE_SPAN_SMALL;
	s32 gain = weighed ? pl_move_gain(t, in, cpu) : 0;

	/* A move resets the count when the task runs elsewhere (migrate.bpf.h). */
	return hold_step(weighed, gain, pol->place_move_margin, &tctx->moves.imbalance_seen) !=
	       CADENCE_HOLD_MOVE;
}

/*
 * hold_judge() for @cpu, the search's own pick, marking in->light first
 * when a move to another small or big core is weighed.
 */
static __noinline bool hold_off(const struct cadence_policy *pol, const struct cadence_topo *t,
				struct cadence_place_in *in, s32 cpu, struct task_ctx *tctx)
{
	if (cpu >= 0 && move_span(t, in->prev, cpu) >= CADENCE_SPAN_SMALL)
		mark_light(in, t, tctx);
	return hold_judge(pol, t, in, cpu, tctx);
}

/*
 * hold_judge() for @cpu, the pick of hold_light_pick() (-1: none), in->light
 * marked: where the task moves if the verdict is to move
 * (pl_idle_beside(), -1 if no thread there is idle now), else -1: it stays.
 */
static __noinline s32 hold_light_move(const struct cadence_policy *pol,
				      const struct cadence_topo *t, struct cadence_place_in *in,
				      s32 cpu, struct task_ctx *tctx)
{
	/* First: a check that weighs nothing still ends the run. */
	if (hold_judge(pol, t, in, cpu, tctx) || cpu < 0 ||
	    move_span(t, in->prev, cpu) < CADENCE_SPAN_SMALL)
		return -1;
	return pl_idle_beside(t, in, cpu);
}

/*
 * Step 1 of the small-core order (place_search.bpf.c) without copying the
 * masks: whether @prev_cpu (@t), which @p may use, has its whole small core
 * idle in the kernel's idle mask. Every wake-up of a task whose CPU nobody
 * took while it slept ends here (each wake-up of a pipe or socket
 * ping-pong), and the mask copies and the search were most of
 * select_cpu()'s cost.
 */
static __always_inline bool prev_core_idle(const struct cadence_topo *t,
					   const struct task_struct *p, s32 prev_cpu)
{
	const struct cpumask *idle;
	bool whole = true;
	u32 s, n, i;

	if (prev_cpu < 0 || (u32)prev_cpu >= t->nr_cpus ||
	    !bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr))
		return false;
	s = t->cpu_small[cpu_index(prev_cpu)];
	if (s == CADENCE_NO_GROUP)
		return false;
	n = t->small_nr_cpus[cpu_index(s)];
	if (n > CADENCE_MAX_SMT)
		n = CADENCE_MAX_SMT;
	idle = scx_bpf_get_idle_cpumask();
	bpf_for (i, 0, n) {
		if (!bpf_cpumask_test_cpu(t->small_cpus[cpu_index(s)][i & (CADENCE_MAX_SMT - 1)],
					  idle)) {
			whole = false;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	return whole;
}

/*
 * The small-core order (place_search.bpf.c) on the kernel's own idle mask, which
 * knows of every CPU claimed with scx_bpf_test_and_clear_cpu_idle() at
 * once: a found CPU is claimed, and if another waker got it first, the
 * search runs again without it.
 *
 * A task re-enqueued while it still runs (its slice ended) frees its CPU
 * if it moves, so that CPU counts as idle in the search; if the search
 * still picks it, the task stays (-EBUSY: queued, and its CPU dispatches
 * it next). Without this a transient task on its small core makes the
 * other one look freer, and a CPU-bound task hops between small cores.
 *
 * With the policy's placement.hold, a search that takes such a task to
 * another small or big core must also find that core freer by
 * placement.move_margin free threads (pl_move_gain()), CADENCE_MOVE_CONFIRM
 * checks in a row (@tctx->moves.imbalance_seen; a check at which the search
 * keeps it on its CPU, even with those threads counted idle, or takes it
 * to another thread of its small core, ends the run: hold_light_pick()),
 * threads running tasks that are short (mark_light()) counted free;
 * otherwise it returns -EAGAIN: the task waits for its own CPU
 * (enqueue()). A short task appearing next to it changes the count by
 * one, which never moves it.
 * @how: PLACE_RECORD counts the level in the stats; without PLACE_CLAIM
 * the CPU found is returned unclaimed (a check, not a move).
 */
static s32 pick_small_core(const struct cadence_policy *pol, struct task_struct *p, s32 prev_cpu,
			   struct task_ctx *tctx, u32 how)
{
	const struct cadence_topo *t;
	struct cadence_place_in *in;
	const struct cpumask *idle;
	u32 zero = 0, level = CADENCE_PLACE_BUSY, nr_words, i;
	s32 cpu = -EBUSY, cpu_light;
	bool ok, leaving, hold, weighed = false;

	t = bpf_map_lookup_elem(&place_topo, &zero);
	in = place_in_here();
	if (!t || !in)
		return -ENOENT;
	leaving = prev_cpu >= 0 && scx_bpf_task_running(p);
	/* A check of the hold: every re-enqueue of a running task. */
	hold = leaving && tctx && pol->place_hold;
	/* Step 1 at once; a claim lost to another waker runs the search. */
	if (!leaving && pol->idle_core_first && prev_core_idle(t, p, prev_cpu) &&
	    (!(how & PLACE_CLAIM) || scx_bpf_test_and_clear_cpu_idle(prev_cpu))) {
		cpu = prev_cpu;
		level = CADENCE_PLACE_PREV_SMALL;
		goto out;
	}
	nr_words = (t->nr_cpus + 63) / 64;
	idle = scx_bpf_get_idle_cpumask();
	/*
	 * No idle CPU it may use: the search can only find none, or the CPU
	 * a leaving task frees, where it stays (-EBUSY either way). Said at
	 * once: every wake-up on a busy machine, and every preempted task's
	 * re-enqueue, would copy the masks and run the search for nothing.
	 * A check of the hold amid a run of checks that saw a freer core
	 * still searches, to weigh the threads running light work
	 * (hold_light_pick()); no other, or the run would end here.
	 */
	ok = (bpf_cpumask_intersects(idle, p->cpus_ptr) || (hold && tctx->moves.imbalance_seen)) &&
	     mask_words(in->idle, idle, nr_words);
	scx_bpf_put_idle_cpumask(idle);
	if (!ok || !mask_words(in->allowed, p->cpus_ptr, nr_words)) {
		/* Nothing to weigh: the check ends the run. */
		if (hold)
			tctx->moves.imbalance_seen = 0;
		hold = false;
		goto out;
	}
	in->prev = prev_cpu;
	in->spread = pol->idle_core_first;
	in->shallow = pol->idle_place == CADENCE_IDLE_PLACE_SHALLOW;
	in->leaving = leaving;
	if (leaving)
		in->idle[(prev_cpu >> 6) & (CADENCE_CPU_WORDS - 1)] |= 1ULL << (prev_cpu & 63);
	for (i = 0; i < CADENCE_PLACE_TRIES; i++) {
		cpu = place_search(t, in, &level);
		if (cpu < 0)
			break;
		if (leaving && cpu == prev_cpu) {
			cpu = -EBUSY;
			goto out;
		}
		if (hold) {
			weighed = true;
			if (hold_off(pol, t, in, cpu, tctx)) {
				cpu = -EAGAIN;
				goto out;
			}
		}
		if (!(how & PLACE_CLAIM) || scx_bpf_test_and_clear_cpu_idle(cpu))
			goto out;
		/* Taken meanwhile: search again without it. */
		in->idle[(cpu >> 6) & (CADENCE_CPU_WORDS - 1)] &= ~(1ULL << (cpu & 63));
		cpu = -EBUSY;
		level = CADENCE_PLACE_BUSY;
	}
out:
	if (how & PLACE_RECORD)
		count_place(level);
	/*
	 * The search keeps it where it runs: it searches again with light
	 * work counted idle (hold_light_pick(); its step goes to
	 * in->light_level, off this frame, which is at the verifier's stack
	 * limit), and a verdict to move takes it to a thread idle now in the
	 * core found. Made only when the search ran: with no idle CPU, amid
	 * a run of checks that saw a freer core (above).
	 */
	if (hold && !weighed) {
		mark_light(in, t, tctx);
		cpu_light =
			hold_light_move(pol, t, in, hold_light_pick(t, in, &in->light_level), tctx);
		if (cpu_light >= 0 &&
		    (!(how & PLACE_CLAIM) || scx_bpf_test_and_clear_cpu_idle(cpu_light)))
			cpu = cpu_light;
	}
	return cpu;
}

/*
 * The plain "core" order and pinned tasks (see the top of this file):
 * claim an idle CPU for @p near @prev_cpu, or return -EBUSY. With @record,
 * the step that succeeded (or SELECT_BUSY) is counted in the stats.
 */
static s32 pick_core_order(const struct cadence_policy *pol, struct task_struct *p, s32 prev_cpu,
			   bool record)
{
	const struct cpumask *idle_smt, *llc;
	struct bpf_cpumask *llc_allowed;
	s32 cpu = -EBUSY;
	enum cadence_select_step outcome = CADENCE_SELECT_BUSY;

	if (task_pinned(p)) {
		if (scx_bpf_test_and_clear_cpu_idle(prev_cpu))
			cpu = prev_cpu;
		outcome = cpu >= 0 ? CADENCE_SELECT_PREV_CPU : CADENCE_SELECT_BUSY;
		goto out;
	}

	llc_allowed = this_scratch_mask();
	llc = llc_cpumask(cpu_llc_id(prev_cpu));
	if (!llc_allowed || !llc) {
		scx_bpf_error("cpumasks not initialised");
		return -ENOENT;
	}
	bpf_cpumask_and(llc_allowed, p->cpus_ptr, llc);

	idle_smt = scx_bpf_get_idle_smtmask();
	if (!pol->idle_core_first)
		goto any_thread;
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	    bpf_cpumask_test_cpu(prev_cpu, idle_smt) && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		cpu = prev_cpu;
		outcome = CADENCE_SELECT_PREV_CORE;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(cast_mask(llc_allowed), SCX_PICK_IDLE_CORE);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_LLC_CORE;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, SCX_PICK_IDLE_CORE);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_ANY_CORE;
		goto out_put;
	}
any_thread:
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	    scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		cpu = prev_cpu;
		outcome = CADENCE_SELECT_PREV_CPU;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(cast_mask(llc_allowed), 0);
	if (cpu >= 0) {
		outcome = CADENCE_SELECT_LLC_CPU;
		goto out_put;
	}
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	outcome = cpu >= 0 ? CADENCE_SELECT_ANY_CPU : CADENCE_SELECT_BUSY;
out_put:
	scx_bpf_put_idle_cpumask(idle_smt);
out:
	if (record)
		count_select(outcome);
	return cpu;
}

/*
 * Claim an idle CPU for @p near @prev_cpu, or return -EBUSY; -EAGAIN: a
 * running @p holds its CPU (pick_small_core(); @tctx its context, NULL on
 * wake-up). With @record, the step that succeeded (or SELECT_BUSY) is
 * counted in the stats. Inlined, so that enqueue()'s call chain down the
 * small-core search holds one frame fewer (the verifier's 512-byte stack
 * limit); each order is its own function.
 */
static __always_inline s32 pick_idle_cpu(const struct cadence_policy *pol, struct task_struct *p,
					 s32 prev_cpu, bool record, struct task_ctx *tctx)
{
	if (!task_pinned(p) && pol->place_order == CADENCE_ORDER_SMALL_CORE)
		return pick_small_core(pol, p, prev_cpu, tctx,
				       PLACE_CLAIM | (record ? PLACE_RECORD : 0));
	return pick_core_order(pol, p, prev_cpu, record);
}

/*
 * CPU-bound tasks queued in each CPU's own DSQ to hold it (task_ctx.held),
 * by CPU (hold_has_room()). Counted up by enqueue(), down when such a task
 * leaves that DSQ (hold_release()): it runs (running()), is queued again
 * (enqueue(), a migration included), or is dequeued otherwise
 * (quiescent(): the kernel calls it at every dequeue but a migration's, an
 * exit or a switch to another class included). Only its own CPU takes it
 * from that DSQ. A reset whenever the DSQ was seen empty raced with a held
 * task just taken from it and not yet running, and let two CPU-bound tasks
 * hold one CPU (review of 68da421).
 */
static s32 held_queued[CADENCE_MAX_CPUS];

/*
 * Util (of 1024) from which a lasting task counts as CPU-bound for
 * hold_has_room(): it has kept a CPU busy at least half the time. CPU-bound
 * tasks beside churn reach about 1000; hackbench's 80 tasks on 4 CPUs,
 * lasting too under that overload, stay near 1024 * 4 / 80.
 */
#define CADENCE_HOLD_BUSY_UTIL 512

/*
 * Whether @tctx's task is CPU-bound for the hold: lasting (runs_lasting())
 * with util at least CADENCE_HOLD_BUSY_UTIL. Only such a task holds its
 * CPU as task_ctx.held says.
 */
static __always_inline bool hold_busy(const struct task_ctx *tctx)
{
	return hold_util(tctx) >= CADENCE_HOLD_BUSY_UTIL &&
	       runs_lasting(tctx->awake_since, scx_bpf_now());
}

/*
 * Whether @tctx's task may hold @cpu (wait in its own DSQ for it,
 * enqueue()): only while no other task waits there, or, for a CPU-bound
 * task (hold_busy()), while no other CPU-bound task holds it there. A
 * CPU-bound task that holds it (task_ctx.held) goes behind the tasks
 * already waiting there (queues.bpf.h, note_queued()); another task waits
 * there by deadline. Either then runs when its turn comes by deadline
 * against the LLC queue's head (deadline.bpf.h, own_head_first()).
 *
 * Without a bound, short tasks displaced by shorter ones piled up on one
 * CPU (76 in one own DSQ under stress-ng's sleep stressor), where only
 * that CPU serves them, between turns it gives its LLC's queue, and they
 * waited over 10 s: one was the task an RCU grace period waited for, and
 * the kernel saw an RCU stall at 21 s.
 *
 * Tasks waiting there, but for a CPU-bound one that holds it, do not take a
 * CPU-bound task's room. When they did, one put back while a kworker, a
 * pinned task or a sync wake-up waited went to the LLC queue and to
 * whichever CPU freed first: with a periodic task pinned to each CPU beside
 * 4 CPU-bound tasks and churn, 11-29 moves in 10 s, 5-11 of them across big
 * cores, in 4 runs (case_place_spread_holds_beside_pinned_sleepers); in the
 * churn case alone, 7 in 8 runs, traced to tasks put back with a task in
 * their CPU's own DSQ. Other tasks keep the stricter bound: held beside
 * pinned waiters too (in a build that also ran a held head before later LLC
 * tasks), hackbench's tasks (lasting as well under that overload, but near
 * util 50) made a pinned cyclictest thread wait behind them, its mean
 * wake-up latency beside steady hackbench 1.2-2.7x that with the stricter
 * bound, per round (docs/benchmarks.md).
 */
static __always_inline bool hold_has_room(s32 cpu, const struct task_ctx *tctx)
{
	return scx_bpf_dsq_nr_queued(cpu_dsq(cpu)) <= 0 ||
	       (held_queued[cpu_index(cpu)] <= 0 && hold_busy(tctx));
}

/* @tctx's task, queued to hold @cpu (task_ctx.held), was queued there. */
static __always_inline void hold_taken(struct task_ctx *tctx, s32 cpu)
{
	tctx->held_cpu = cpu;
	__sync_fetch_and_add(&held_queued[cpu_index(cpu)], 1);
}

/* @tctx's task no longer waits to hold its CPU: it runs, is queued anew or dequeued. */
static __always_inline void hold_release(struct task_ctx *tctx)
{
	if (!tctx->held)
		return;
	tctx->held = false;
	__sync_fetch_and_sub(&held_queued[cpu_index(tctx->held_cpu)], 1);
}

/* Whether the kernel's idle mask holds a CPU @p may run on. */
static __always_inline bool idle_cpu_for(const struct task_struct *p)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool any = bpf_cpumask_intersects(idle, p->cpus_ptr);

	scx_bpf_put_idle_cpumask(idle);
	return any;
}

/*
 * Whether the head of @cpu's own queue is a task that may run on @cpu
 * alone and has not slept for CADENCE_LASTING_NS: a pinned CPU-bound task,
 * which only @cpu can serve. A task that may run elsewhere then does not
 * hold @cpu: at its slice end it leaves for an idle CPU in its mask
 * (make_room_for_pinned()), as the fair class's load balancer moves the
 * movable one of two tasks off a CPU while another idles. Held beside it,
 * a nice-0 hog kept a pinned nice-19 hog to its weight's 1.4% of CPU 0
 * with 7 CPUs idle (case_place_pinned_hog_keeps_its_cpu). A pinned task
 * that sleeps often (a periodic thread) is not lasting and changes nothing:
 * the hold still keeps CPU-bound tasks in place beside it
 * (case_place_spread_holds_beside_pinned_sleepers). Not inlined:
 * enqueue()'s stack, as mark_sync_wake().
 */
static __noinline bool pinned_lasting_waits(s32 cpu)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(cpu_dsq(cpu));
	struct task_ctx *hctx;

	if (!head || !task_pinned(head))
		return false;
	hctx = lookup_task_ctx(head);
	return hctx && runs_lasting(hctx->awake_since, scx_bpf_now());
}

/*
 * Whether @p, which runs on or was queued for @cpu, should leave it for an
 * idle CPU: it may run elsewhere, an idle CPU in its mask exists, and a
 * pinned CPU-bound task waits for @cpu (pinned_lasting_waits()).
 */
static __always_inline bool make_room_for_pinned(const struct task_struct *p, s32 cpu)
{
	return !task_pinned(p) && pinned_lasting_waits(cpu) && idle_cpu_for(p);
}

/*
 * Whether running @p (@tctx) on @cpu, whose slice ended with nothing
 * queued before it, should move now: with placement.hold and the
 * small-core order, when an idle CPU it may use exists and the hold finds
 * a lasting imbalance worth a move (pick_small_core() as a check). Its
 * dispatch then does not refill its slice, the kernel enqueues it with
 * SCX_ENQ_LAST (SCX_OPS_ENQ_LAST), and enqueue() moves it. Without this,
 * sched_ext keeps a CPU-bound task that nothing displaces where it is,
 * and an uneven split made at fork time lasts for as long as the tasks.
 */
static __always_inline bool hold_rebalance(const struct cadence_policy *pol, struct task_struct *p,
					   struct task_ctx *tctx, s32 cpu)
{
	if (!pol->place_hold || pol->place_order != CADENCE_ORDER_SMALL_CORE || task_pinned(p) ||
	    !idle_cpu_for(p))
		return false;
	return pick_small_core(pol, p, cpu, tctx, 0) >= 0;
}

#endif /* __CADENCE_PLACE_BPF_H */
