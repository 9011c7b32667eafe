/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Big-core-aware placement: the topology table and the search's inputs,
 * shared by BPF (place_search.bpf.c, place.bpf.h), the syscall test program
 * (place_test.bpf.c) and the Rust loader (bindgen via intf.h). Plain C.
 */
#ifndef __CADENCE_INTF_PLACE_H
#define __CADENCE_INTF_PLACE_H

enum cadence_place_consts {
	/*
	 * Most threads in one small core: POWER9/10 small cores have 4, x86
	 * SMT cores 2; 8 covers an SMT8 core that shares one L1. The loader
	 * refuses larger ones instead of truncating them.
	 */
	CADENCE_MAX_SMT = 8,
	/* u64 words of a CPU bitmap: CADENCE_MAX_CPUS / 64. */
	CADENCE_CPU_WORDS = CADENCE_MAX_CPUS / 64,
	/* "no CPU" in the topology table (an offline or absent CPU). */
	CADENCE_NO_GROUP = 0xffffffff,
};

/*
 * Where a placement search found its CPU, best first; counted per level.
 * Levels 1-3 look for idle CPUs whose whole small (or big) core is idle;
 * 4 takes an idle thread next to the previous CPU.
 */
enum cadence_place_level {
	/* 1. The previous CPU: its whole small core is idle. */
	CADENCE_PLACE_PREV_SMALL = 0,
	/* 2. A CPU of a fully idle big core in the previous CPU's LLC. */
	CADENCE_PLACE_IDLE_BIG = 1,
	/* 3. A CPU of a fully idle small core in a busy big core (LLC). */
	CADENCE_PLACE_IDLE_SMALL = 2,
	/* 4a. An idle thread of the previous CPU's small core. */
	CADENCE_PLACE_NEAR_SMALL = 3,
	/* 4b. An idle thread of another small core of the previous big core. */
	CADENCE_PLACE_NEAR_BIG = 4,
	/* 4c. An idle thread elsewhere in the previous CPU's LLC. */
	CADENCE_PLACE_NEAR_LLC = 5,
	/* 5. Any idle CPU the task may use. */
	CADENCE_PLACE_ANY = 6,
	/* No idle CPU the task may use. */
	CADENCE_PLACE_BUSY = 7,
	CADENCE_PLACE_LEVELS = 8,
};

/* How waking tasks are placed (the policy's placement.order). */
enum cadence_place_order {
	/* Small cores first (place_search.bpf.c): the order above. */
	CADENCE_ORDER_SMALL_CORE = 0,
	/* The plain prev / idle-core order with the kernel's SMT mask. */
	CADENCE_ORDER_CORE = 1,
};

/*
 * The machine as the placement search sees it (the one-entry `topo` map,
 * filled by the loader before attach). Big cores are numbered so that the
 * big cores of an LLC are consecutive, and small cores so that the small
 * cores of a big core are.
 */
struct cadence_topo {
	/* One past the highest CPU id; 0..nr_cpus-1 index the CPU tables. */
	u32 nr_cpus;
	u32 nr_small;
	u32 nr_big;
	u32 nr_llc;
	/* Small core of each CPU, CADENCE_NO_GROUP if it is not online. */
	u32 cpu_small[CADENCE_MAX_CPUS];
	/* Each small core: its CPUs and how many, and its big core. */
	u32 small_cpus[CADENCE_MAX_CPUS][CADENCE_MAX_SMT];
	u32 small_nr_cpus[CADENCE_MAX_CPUS];
	u32 small_big[CADENCE_MAX_CPUS];
	/* Each big core: its first small core and how many, and its LLC. */
	u32 big_first_small[CADENCE_MAX_CPUS];
	u32 big_nr_small[CADENCE_MAX_CPUS];
	u32 big_llc[CADENCE_MAX_CPUS];
	/* Each LLC: its first big core and how many. */
	u32 llc_first_big[CADENCE_MAX_LLCS];
	u32 llc_nr_big[CADENCE_MAX_LLCS];
	/*
	 * Live, not the loader's: each CPU's idle state's exit latency (ns),
	 * written by the idle tracepoint (bpf/idle.bpf.c) at entry while
	 * idle.place is on, 0 at exit. The kernel's state where its indices
	 * are ours, else the learner's acting prediction. The loader writes
	 * zeroes before attach.
	 */
	u32 idle_exit_ns[CADENCE_MAX_CPUS];
};

/*
 * One search's inputs: the CPUs that are idle and the CPUs the task may
 * use, a bit each, and the previous CPU; plus whether to spread (look for
 * whole idle cores first) or pack (the policy's idle_core_first off), and
 * whether idle states break ties.
 */
struct cadence_place_in {
	u64 idle[CADENCE_CPU_WORDS];
	u64 allowed[CADENCE_CPU_WORDS];
	s32 prev;
	u32 spread;
	/*
	 * 1: the task still runs on prev (re-enqueued at the end of a slice),
	 * so prev is counted idle, and step 1 is skipped: the task may leave
	 * a crowded big core even though its own small core would be free.
	 */
	u32 leaving;
	/*
	 * Busy CPUs whose task is short (placement.hold: runnable without a
	 * sleep for less than 256 ms, or lighter than half the leaving task's
	 * util; mark_light()): free, like idle ones, when the hold weighs a move
	 * (pl_move_gain()); the search itself does not read it.
	 */
	u64 light[CADENCE_CPU_WORDS];
	/*
	 * 1: idle.place = shallow: among idle CPUs the order holds equal,
	 * take the one with the smallest topo->idle_exit_ns (the first on a
	 * tie); 0: the first.
	 */
	u32 shallow;
	/* The step of the hold's second search (hold_light_pick()): not counted. */
	u32 light_level;
};

/*
 * How far a task moved between two CPUs it started running on, as the
 * topology table groups them (move_span() in place_search.bpf.h).
 */
enum cadence_move_span {
	/* The same CPU, or a CPU unknown to the table. */
	CADENCE_SPAN_NONE = 0,
	/* Another thread of the same small core: its caches stay warm. */
	CADENCE_SPAN_THREAD = 1,
	/* Another small core of the same big core: a cold L1, new siblings. */
	CADENCE_SPAN_SMALL = 2,
	/* Another big core (of the LLC or not). */
	CADENCE_SPAN_BIG = 3,
};

/*
 * The path that put a task on the CPU it runs on next, so that each move
 * is charged to the decision that made it (issue 15: which path moves
 * CPU-bound tasks while short ones come and go).
 */
enum cadence_move_path {
	/* select_cpu() placed a waking or forked task (an idle CPU, the waker's). */
	CADENCE_MOVE_WAKE = 0,
	/* enqueue() without select_cpu() (slice end, preemption) sent it to an idle CPU. */
	CADENCE_MOVE_REQUEUE = 1,
	/* Queued in a DSQ, then taken by a CPU: its LLC's, a balancing or a stealing one. */
	CADENCE_MOVE_QUEUE = 2,
	CADENCE_MOVE_PATHS = 3,
};

/* One task's moves across small and big cores (the `tasks` iterator shows them). */
struct cadence_task_moves {
	/* The CPU it last started running on; -1 before its first run. */
	s32 last_cpu;
	/* enum cadence_move_path of the placement its next run comes from. */
	u32 path;
	/* Moves to another small core of the same big core, and to another big core. */
	u32 small;
	u32 big;
	/* Those moves (small and big) by the path that made them. */
	u32 by_path[CADENCE_MOVE_PATHS];
	/* Consecutive re-enqueues that saw a core freer by the margin (hold_verdict()). */
	u32 imbalance_seen;
};

enum cadence_hold_consts {
	/*
	 * Checks in a row (slice ends, re-enqueues) at which a running task
	 * must find a core freer by the margin before it moves there. Two,
	 * the example, moved CPU-bound tasks 7 times a second after
	 * long-lived shells that sleep and wake beside them (bench churn
	 * runs, 8-vCPU VM); eight spans tens of ms of slices under load,
	 * longer than such a shell stays, much shorter than a CPU-bound run.
	 */
	CADENCE_MOVE_CONFIRM = 8,
};

/*
 * What a running task re-enqueued at a slice end does when the search
 * found it an idle CPU in another small or big core (hold_verdict()).
 */
enum cadence_hold_verdict {
	/* The imbalance is real and lasting: it moves. */
	CADENCE_HOLD_MOVE = 0,
	/* The other core is not freer by the margin: it stays. */
	CADENCE_HOLD_STAY = 1,
	/* Freer by the margin, but not yet seen CADENCE_MOVE_CONFIRM times in a row: it stays. */
	CADENCE_HOLD_WAIT = 2,
};

/*
 * One test run: a search per input, over the `topo` map's machine; for a
 * leaving task (in.leaving), one check of the hold (hold_step()): if its
 * search found another small or big core (or, if it kept the task, the
 * search with in.light counted idle did: hold_light_pick()), the gain of
 * the move (pl_move_gain()) and the verdict with @margin after @seen
 * checks in a row that saw a freer core, else gain 0 and verdict MOVE;
 * @seen comes back as the check leaves it. @to: where a verdict to move
 * reached by the second search takes the task (pl_idle_beside()), else -1.
 */
struct cadence_place_test {
	struct cadence_place_in in;
	s32 cpu;
	u32 level;
	u32 margin;
	u32 seen;
	s32 gain;
	u32 verdict;
	s32 to;
};

/* One test run of move_span(): the span of the move from @from to @to. */
struct cadence_move_span_test {
	s32 from;
	s32 to;
	u32 span;
};

#endif /* __CADENCE_INTF_PLACE_H */
