/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The small-core placement search (place_search.bpf.c says what it does),
 * as the scheduler (place.bpf.h) and its host test (place_test.bpf.c) call
 * it: the unit's global functions, and the hold's steps, which are small
 * enough to be inlined where they are taken.
 */
#ifndef __CADENCE_PLACE_SEARCH_BPF_H
#define __CADENCE_PLACE_SEARCH_BPF_H

#include "masked_index.bpf.h"

/*
 * The search: an idle CPU for a waking task, -1 if none, and in *@level
 * the step that found it (enum cadence_place_level).
 */
s32 place_search(const struct cadence_topo *t, const struct cadence_place_in *in, u32 *level);
/* How many idle threads freer @cpu's core is than in->prev's. */
s32 pl_move_gain(const struct cadence_topo *t, const struct cadence_place_in *in, s32 cpu);
/* An idle thread beside @cpu for a task the hold lets go, -1 if none. */
s32 pl_idle_beside(const struct cadence_topo *t, const struct cadence_place_in *in, s32 cpu);

/*
 * How far a task moved from CPU @from to CPU @to (enum cadence_move_span).
 * A CPU the table does not know (out of range, offline when the table was
 * written) gives CADENCE_SPAN_NONE: such a move is not counted.
 */
static __always_inline u32 move_span(const struct cadence_topo *t, s32 from, s32 to)
{
	u32 small_from, small_to;

	if (from == to || from < 0 || to < 0 || (u32)from >= t->nr_cpus || (u32)to >= t->nr_cpus)
		return CADENCE_SPAN_NONE;
	small_from = t->cpu_small[cpu_index(from)];
	small_to = t->cpu_small[cpu_index(to)];
	if (small_from == CADENCE_NO_GROUP || small_to == CADENCE_NO_GROUP)
		return CADENCE_SPAN_NONE;
	if (small_from == small_to)
		return CADENCE_SPAN_THREAD;
	if (t->small_big[cpu_index(small_from)] == t->small_big[cpu_index(small_to)])
		return CADENCE_SPAN_SMALL;
	return CADENCE_SPAN_BIG;
}

/*
 * Whether a running task moves to a core @gain idle threads freer
 * (pl_move_gain()), with the policy's @margin, having seen such a core
 * @seen times in a row before (enum cadence_hold_verdict).
 */
static __always_inline u32 hold_verdict(s32 gain, u32 margin, u32 seen)
{
	if (gain < (s32)margin)
		return CADENCE_HOLD_STAY;
	if (seen + 1 < CADENCE_MOVE_CONFIRM)
		return CADENCE_HOLD_WAIT;
	return CADENCE_HOLD_MOVE;
}

/*
 * One check of the hold, at a running task's re-enqueue: @weighed if its
 * search took it to another small or big core, with @gain; @seen the
 * checks in a row before it that found a core freer by @margin, updated
 * here. A check that weighs no move (the search kept the task on its CPU
 * or small core, or found no idle CPU) ends the run, and returns MOVE:
 * nothing is held, the search's own pick stands. So a core that is freer
 * only now and then, while short tasks come and go on this one, never
 * draws the task away: the count is of checks in a row, not of sightings.
 * Counting sightings, 8 of them over 0.3 s, between slice ends that found
 * the cores even, moved CPU-bound tasks back and forth between big cores
 * (traced in the bench's churn runs).
 */
static __always_inline u32 hold_step(bool weighed, s32 gain, u32 margin, u32 *seen)
{
	u32 verdict;

	if (!weighed) {
		*seen = 0;
		return CADENCE_HOLD_MOVE;
	}
	verdict = hold_verdict(gain, margin, *seen);
	if (verdict == CADENCE_HOLD_STAY)
		*seen = 0;
	else if (verdict == CADENCE_HOLD_WAIT)
		(*seen)++;
	return verdict;
}

/*
 * The threads running light work (in->light) added to in->idle, and in->light
 * left with the busy ones alone (so in->idle without in->light is what is
 * idle now): whether any was busy, so that a search would see more.
 */
static __always_inline bool hold_light_idle(struct cadence_place_in *in)
{
	bool busy = false;
	u32 w;

	/* A plain loop: bpf_for's iterator takes stack, and pick_small_core()'s is full. */
	for (w = 0; w < CADENCE_CPU_WORDS; w++) {
		in->light[w] &= ~in->idle[w];
		if (in->light[w])
			busy = true;
		in->idle[w] |= in->light[w];
	}
	return busy;
}

/*
 * For a running task on in->prev (in->leaving) whose search kept it where
 * it runs: the search again with the threads running light work counted
 * idle (hold_light_idle()), as pl_move_gain() counts them. Its pick, or -1
 * if it too keeps the task (or nothing light is busy: it would), with
 * *@level its step. Without this second search, one short task on the
 * freer core's idle threads ended the hold's run of checks (hold_step()):
 * placed there by the search itself, the commands forked beside four
 * CPU-bound tasks split 3 and 1 kept that split for a whole 10 s run (VM
 * case place_split_undone_under_churn; 95% of CI's samples at 2d3c33c).
 */
static __always_inline s32 hold_light_pick(const struct cadence_topo *t,
					   struct cadence_place_in *in, u32 *level)
{
	s32 cpu;

	if (!hold_light_idle(in))
		return -1;
	cpu = place_search(t, in, level);
	return cpu == in->prev ? -1 : cpu;
}

#endif /* __CADENCE_PLACE_SEARCH_BPF_H */
