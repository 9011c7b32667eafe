/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle-state learner's types (bpf/idle_learn.bpf.c, bpf/idle.bpf.c),
 * shared with the loader through bindgen: included from intf.h.
 */
#ifndef __CADENCE_INTF_IDLE_H
#define __CADENCE_INTF_IDLE_H

enum cadence_idle_consts {
	/*
	 * States per CPU the tables hold: the kernel's CPUIDLE_STATE_MAX
	 * (include/linux/cpuidle.h), and seed 003's state_mat[10][10].
	 */
	CADENCE_IDLE_MAX_STATES = 10,
	/* Score buckets: chosen - ideal runs from -(MAX - 1) to MAX - 1. */
	CADENCE_IDLE_DIFFS = 2 * CADENCE_IDLE_MAX_STATES - 1,
	/* The bucket of a correct prediction (diff 0). */
	CADENCE_IDLE_CORRECT = CADENCE_IDLE_MAX_STATES - 1,
	/* teo.c's PULSE: what one event adds to a bin. */
	CADENCE_TEO_PULSE = 1024,
	/* teo.c's DECAY_SHIFT: every bin keeps 7/8 at each wake-up. */
	CADENCE_TEO_DECAY_SHIFT = 3,
	/* Seed 003: a row's weights are in 0..10000 (percent x 100). */
	CADENCE_IDLE_WEIGHT_SCALE = 10000,
	/* Seed 003: a fresh row has 6000 on the diagonal, 4000 spread. */
	CADENCE_IDLE_WEIGHT_DIAG = 6000,
	/* Periods one replay run (BPF_PROG_TEST_RUN) takes. */
	CADENCE_IDLE_REPLAY_PERIODS = 64,
	/*
	 * An entry's pick of a matrix predictor that did not run (idle.compare
	 * off, another one acting): no state, and outside every score bucket.
	 */
	CADENCE_IDLE_NOT_RUN = 255,
};

/* idle.predictor: which prediction acts (placement, PM QoS). */
enum cadence_idle_predictor {
	CADENCE_IDLE_PREDICTOR_OFF, /* no learning at all */
	CADENCE_IDLE_PREDICTOR_TEO,
	/* A matrix row per teo choice, learning toward the ideal state. */
	CADENCE_IDLE_PREDICTOR_PER_CHOICE,
	/* Seed 003's matrix as its authors posted it (docs/idle.md). */
	CADENCE_IDLE_PREDICTOR_SEED,
};

/* idle.pick: how the per-choice predictor reads its row. */
enum cadence_idle_pick {
	CADENCE_IDLE_PICK_RANDOM,   /* weighted random, as seed 003 */
	CADENCE_IDLE_PICK_HEAVIEST, /* the heaviest weight (deterministic) */
};

/* idle.place: how idle states break ties between equally good idle CPUs. */
enum cadence_idle_place {
	CADENCE_IDLE_PLACE_OFF,
	/*
	 * Wake the CPU whose state has the smallest exit latency, which
	 * leaves those in deep states asleep.
	 */
	CADENCE_IDLE_PLACE_SHALLOW,
};

/* Whose choices a score counts. */
enum cadence_idle_source {
	CADENCE_IDLE_SRC_TEO,
	CADENCE_IDLE_SRC_PER_CHOICE,
	CADENCE_IDLE_SRC_SEED,
	CADENCE_IDLE_SRC_KERNEL, /* the state the kernel's governor entered */
	CADENCE_IDLE_SOURCES,
};

/*
 * The kernel's verdict on the state it entered (power:cpu_idle_miss, from
 * cpuidle_enter_state() after the exit), for the cross-check of the ideal.
 */
enum cadence_idle_miss {
	/* No tracepoint: neither of the two below (or no cpuidle driver). */
	CADENCE_IDLE_MISS_NONE,
	/*
	 * "above", below = false: the period ended before the entered
	 * state's target residency and a shallower state was enabled.
	 */
	CADENCE_IDLE_MISS_ABOVE,
	/*
	 * "below", below = true: the period, less the entered state's exit
	 * latency, lasted the target residency of the next enabled deeper state.
	 */
	CADENCE_IDLE_MISS_BELOW,
	CADENCE_IDLE_MISSES,
};

/*
 * What "the ideal state" of a period means. Seed 003 does not say whether
 * exit latency was subtracted from the idle duration, so both are counted.
 */
enum cadence_idle_ideal {
	/* The deepest enabled state whose target residency <= duration. */
	CADENCE_IDLE_IDEAL_RESIDENCY,
	/* The same, with residency + exit latency <= duration. */
	CADENCE_IDLE_IDEAL_EXIT,
	CADENCE_IDLE_IDEALS,
};

/* One CPU's idle states, from sysfs cpuidle or --idle-states: `idle_states`. */
struct cadence_idle_states {
	/* States in use, 0 for a CPU the learner leaves alone. */
	u32 nr;
	/* Bit i: state i is disabled (sysfs `disable`). */
	u32 disabled;
	/*
	 * Bit i: state i polls (CPUIDLE_FLAG_POLLING: the states named "POLL"
	 * and POWER's "snooze"); teo keeps the tick for it.
	 */
	u32 polling;
	u32 __pad;
	/*
	 * The CPU's PM QoS limit, ns (cpuidle_governor_latency_req()), kept
	 * current by the loader (src/idle/latency_req.rs); the scheduler's teo
	 * reads it at each entry, a replay each period's own.
	 */
	u64 latency_req_ns;
	u64 residency_ns[CADENCE_IDLE_MAX_STATES];
	u64 exit_latency_ns[CADENCE_IDLE_MAX_STATES];
};

/* What one CPU has learned. */
struct cadence_idle_learned {
	/* The number of states it was learned for; 0: fresh. */
	u32 nr_states;
	/* teo.c's struct teo_cpu bins: per state, decayed by 7/8 each period. */
	u32 hits[CADENCE_IDLE_MAX_STATES];
	u32 intercepts[CADENCE_IDLE_MAX_STATES];
	/* teo.c's total and short_idles, decayed the same way. */
	u32 total;
	u32 short_idles;
	/*
	 * teo.c's tick_intercepts (intercepts within a tick's length) and
	 * total_tick (wake-ups by the tick), decayed the same way.
	 */
	u32 tick_intercepts;
	u32 total_tick;
	/*
	 * The per-choice predictor's matrix: row = teo's choice, column =
	 * the state, weights as seed 003's.
	 */
	u16 weight[CADENCE_IDLE_MAX_STATES][CADENCE_IDLE_MAX_STATES];
	/* Seed 003's state_mat: row = the state the seed entered. */
	u16 seed_weight[CADENCE_IDLE_MAX_STATES][CADENCE_IDLE_MAX_STATES];
	/* Periods learned since the table was fresh. */
	u64 periods;
};

/*
 * The value of the `idle_table` map, one element per CPU. Written by that
 * CPU's idle entries under the lock (idle_learn_ended()), and whole by the
 * loader (`ctl idle load/reset`) with BPF_F_LOCK.
 */
struct cadence_idle_table {
	struct bpf_spin_lock lock;
	u32 __pad;
	/*
	 * +1 at each write by the loader: a CPU that learned from a copy
	 * taken before it does not write that copy back.
	 */
	u64 generation;
	struct cadence_idle_learned learned;
};

/*
 * What teo reads from the tick and the polling state (docs/idle.md, "teo:
 * which rules"). All zero but @next_event_ns, which is endless, when not
 * known: then no tick rule fires.
 */
struct cadence_idle_tick {
	/* TICK_NSEC, 1e9 / CONFIG_HZ rounded; 0: not known. */
	u64 tick_ns;
	/*
	 * At selection, the time to the CPU's next clock event, the tick
	 * included while it runs: tick_nohz_get_sleep_length()'s delta_next.
	 * CADENCE_IDLE_ENDLESS if not known.
	 */
	u64 next_event_ns;
	/* 1: the tick was already stopped at selection (tick_nohz_tick_stopped()). */
	u32 stopped;
	/* At the period's end: 1 if the tick's timer woke the CPU (got_idle_tick). */
	u32 woke;
	/* At the period's end: 1 if a polling state gave up (poll_time_limit). */
	u32 poll_limit;
	u32 __pad;
};

/* Choices made when an idle period starts, scored when it ends. */
struct cadence_idle_entry {
	/*
	 * teo's state (the per-choice row), the per-choice pick, the kernel's;
	 * a matrix's pick is CADENCE_IDLE_NOT_RUN when it did not run.
	 */
	u32 teo;
	u32 per_choice;
	s32 kernel;
	/* The random number the random picks used. */
	u32 rand;
	/* Time to the next timer if known, else teo's KTIME_MAX (CADENCE_IDLE_ENDLESS). */
	u64 sleep_length_ns;
	/* Whether teo looked at the sleep length (else it counts as endless). */
	u32 sleep_length_used;
	/* Seed 003's pick. */
	u32 seed;
	/*
	 * The state whose exit latency the period pays, for teo's update:
	 * the kernel's (as the cpu_idle tracepoint gave it) where its
	 * indices are ours, else teo's choice.
	 */
	u32 entered;
	/*
	 * At the period's end: the kernel's verdict on it (enum
	 * cadence_idle_miss), counted only where its indices are ours.
	 */
	u32 kernel_miss;
	/* The tick as teo saw it at selection, and how the period ended. */
	struct cadence_idle_tick tick;
	/*
	 * The CPU's PM QoS resume-latency limit at selection, ns, as
	 * cpuidle_governor_latency_req() gives it; CADENCE_IDLE_ENDLESS: none.
	 */
	u64 latency_req_ns;
};

/* Counts per source, per ideal, per (chosen - ideal + MAX - 1). */
struct cadence_idle_scores {
	u64 n[CADENCE_IDLE_SOURCES][CADENCE_IDLE_IDEALS][CADENCE_IDLE_DIFFS];
	/*
	 * The kernel's periods it judged a miss, counted as in
	 * n[CADENCE_IDLE_SRC_KERNEL]: [0] "above", [1] "below".
	 */
	u64 miss[CADENCE_IDLE_MISSES - 1][CADENCE_IDLE_IDEALS][CADENCE_IDLE_DIFFS];
};

/* Idle trace records (`idle record`): the ring buffer's two kinds. */
enum cadence_idle_event_kind {
	/* A CPU's table at the start of the recording. */
	CADENCE_IDLE_EVENT_TABLE = 1,
	/* One idle period. */
	CADENCE_IDLE_EVENT_PERIOD = 2,
};

struct cadence_idle_period {
	u32 kind;
	u32 cpu;
	/* bpf_ktime_get_ns() at idle entry, and the time idle. */
	u64 start_ns;
	u64 duration_ns;
	u64 sleep_length_ns;
	/* The state the kernel entered (tracepoint), -1 if not known. */
	s32 kernel_state;
	u32 rand;
	struct cadence_idle_tick tick;
	/* The PM QoS limit at selection (struct cadence_idle_entry's). */
	u64 latency_req_ns;
	/* The kernel's verdict on the period (enum cadence_idle_miss). */
	u32 kernel_miss;
	u32 __pad;
};

struct cadence_idle_table_event {
	u32 kind;
	u32 cpu;
	struct cadence_idle_learned table;
};

/*
 * Per CPU (`idle_cpu`): the period in progress, where the CPU is for
 * placement, its scores since start and since the recording began.
 */
struct cadence_idle_cpu {
	/* bpf_ktime_get_ns() at entry; 0 while not idle. */
	u64 entry_ns;
	/*
	 * The period that ended last, while it waits for the next entry to
	 * learn from it (idle.bpf.c): its entry and exit times; @ended_ns 0
	 * when none waits.
	 */
	u64 ended_start_ns;
	u64 ended_ns;
	/* The predictions made at the last entry. */
	struct cadence_idle_entry entry;
	/*
	 * When the tick is due in the period in progress (the CPU's next
	 * clock event is its tick timer), CADENCE_IDLE_ENDLESS if not.
	 */
	u64 tick_due_ns;
	/*
	 * 1: the tick was stopped when the last period ended, and the CPU has
	 * not left idle since (which restarts it): stopped at the next
	 * selection.
	 */
	u32 tick_stopped;
	/* 1: the kernel entered a polling state (its indices are ours). */
	u32 entered_polls;
	/*
	 * The state this CPU sits in while idle, the kernel's where its
	 * indices are ours, else the acting prediction; -1 while busy.
	 */
	s32 state;
	/* 1: @work is this CPU's table as of the loader's @work_generation. */
	u32 work_synced;
	/*
	 * Write-backs a loader write overtook: the learning since the last
	 * one is dropped, the loader's table wins.
	 */
	u64 overtaken;
	/*
	 * The learner works on this copy, out of the table's lock. Only this
	 * CPU and the loader write its table, so the copy stays current from
	 * one period to the next: it is taken again only after a loader
	 * write, and written back whole at most every
	 * CADENCE_IDLE_PUBLISH_NS.
	 */
	struct cadence_idle_learned work;
	u64 work_generation;
	/* bpf_ktime_get_ns() when @work was last written back to the table. */
	u64 published_ns;
	/* The recording generation this CPU follows (0: none). */
	u64 record_gen;
	/* Periods scored; entries that found one open (a lost exit). */
	u64 periods;
	u64 lost_exits;
	/* Recording: periods and tables the ring buffer had no room for. */
	u64 record_drops;
	/*
	 * cpu_idle_miss verdicts that found no ended period of this CPU's
	 * waiting, of the state it entered (the driver entered another).
	 */
	u64 stray_misses;
	struct cadence_idle_scores scores;
	/* The same, only for periods recorded in this generation. */
	struct cadence_idle_scores record_scores;
};

/* The loader's controls (`idle_ctl`, one element). */
struct cadence_idle_ctl {
	/*
	 * Odd while recording: each CPU, at its next idle entry, writes its
	 * table to the ring buffer and zeroes its record_scores.
	 */
	u64 record_gen;
	/* 1: the state indices are the kernel's (sysfs cpuidle). */
	u32 kernel_indices;
	/* TICK_NSEC from the kernel's CONFIG_HZ; 0: not known (no tick rule fires). */
	u32 tick_ns;
};

/* One replay run (bpf/idle_replay.bpf.c): periods of one CPU, in order. */
struct cadence_idle_replay {
	struct cadence_policy policy;
	struct cadence_idle_states states;
	/* In: the table to start from; out: after the periods. */
	struct cadence_idle_learned table;
	/* In and out: scores are added. */
	struct cadence_idle_scores scores;
	u32 kernel_indices;
	u32 nr;
	struct cadence_idle_period periods[CADENCE_IDLE_REPLAY_PERIODS];
	/* Out: each period's choices. */
	struct cadence_idle_entry entries[CADENCE_IDLE_REPLAY_PERIODS];
	s32 error;
	u32 __pad;
};

#endif /* __CADENCE_INTF_IDLE_H */
