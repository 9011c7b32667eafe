/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where tasks move, and which decision moved them (issue 15). Each task
 * remembers the CPU it last started running on and the path of the
 * placement its next run comes from (enum cadence_move_path):
 *   - runnable() marks every wake-up CADENCE_MOVE_WAKE: select_cpu()
 *     either put the task on a CPU's local DSQ (an idle CPU, the waker's)
 *     or left it to enqueue(), which then marks it as below;
 *   - enqueue() marks a task it sends straight to an idle CPU
 *     CADENCE_MOVE_REQUEUE (no wake-up: a slice that ended, a preemption),
 *     and one it queues in a DSQ CADENCE_MOVE_QUEUE (whichever CPU takes
 *     it: the LLC's, a balancing one, an idle one stealing).
 * When the task starts running on another CPU, running() counts the move
 * by how far it went (move_span() in place_search.bpf.h): another thread
 * of its small core (caches stay warm), another small core of its big
 * core, another big core. Moves across small or big cores are also
 * counted by path, per CPU (cpu_stats) and per task (the `tasks`
 * iterator), so a bench can tell which path moves CPU-bound tasks.
 */
#ifndef __CADENCE_MIGRATE_BPF_H
#define __CADENCE_MIGRATE_BPF_H

/* A new task: it has run nowhere yet. */
static __always_inline void moves_init(struct cadence_task_moves *m)
{
	m->last_cpu = -1;
	m->path = CADENCE_MOVE_WAKE;
}

/* The placement @m's task's next run comes from (enum cadence_move_path). */
static __always_inline void moves_placed(struct cadence_task_moves *m, u32 path)
{
	m->path = path;
}

/* Count a move across small or big cores by the path that made it. */
static __always_inline void count_move_path(struct cadence_task_moves *m)
{
	switch (m->path) {
	case CADENCE_MOVE_WAKE:
		m->by_path[CADENCE_MOVE_WAKE]++;
		stat_inc(move_wake);
		break;
	case CADENCE_MOVE_REQUEUE:
		m->by_path[CADENCE_MOVE_REQUEUE]++;
		stat_inc(move_requeue);
		break;
	default:
		m->by_path[CADENCE_MOVE_QUEUE]++;
		stat_inc(move_queue);
		break;
	}
}

/* @m's task starts running on @cpu: count the move if it came from elsewhere. */
static __always_inline void moves_running(struct cadence_task_moves *m, s32 cpu)
{
	const struct cadence_topo *t;
	s32 from = m->last_cpu;
	u32 zero = 0;

	m->last_cpu = cpu;
	if (from < 0 || from == cpu)
		return;
	/* Wherever it went, the hold counts sightings afresh (place.bpf.h). */
	m->imbalance_seen = 0;
	t = bpf_map_lookup_elem(&place_topo, &zero);
	if (!t)
		return;
	switch (move_span(t, from, cpu)) {
	case CADENCE_SPAN_THREAD:
		stat_inc(move_thread);
		return;
	case CADENCE_SPAN_SMALL:
		m->small++;
		stat_inc(move_small);
		break;
	case CADENCE_SPAN_BIG:
		m->big++;
		stat_inc(move_big);
		break;
	default:
		return;
	}
	count_move_path(m);
}

#endif /* __CADENCE_MIGRATE_BPF_H */
