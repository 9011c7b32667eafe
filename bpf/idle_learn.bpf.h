/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle-state learner as its callers run it, once per idle period: the
 * scheduler (idle.bpf.c) and the replay program (idle_replay.bpf.c) both
 * link idle_learn.bpf.c, which says what it predicts and learns, and
 * inline the steps below around its global functions.
 */
#ifndef __CADENCE_IDLE_LEARN_BPF_H
#define __CADENCE_IDLE_LEARN_BPF_H

/* teo's KTIME_MAX: the sleep length is not known. */
#define CADENCE_IDLE_ENDLESS 0x7fffffffffffffffULL

/*
 * A loop over states, not unrolled: in the global functions below the
 * verifier walks each of its (at most 10) rounds, pruning equal states.
 * (bpf_for() does not converge here: its loops over weights exceed the
 * verifier's jump history.)
 */
#define idle_for(i, start, end)                                                                    \
	_Pragma("clang loop unroll(disable)") for ((i) = (start); (i) < (end); (i)++)

/*
 * @i as an index into the per-state arrays, for the verifier: clang may keep
 * a checked copy apart from the one it indexes with (see
 * masked_index.bpf.h).
 */
static __always_inline u32 st(u32 i)
{
	barrier_var(i);
	if (i > CADENCE_IDLE_MAX_STATES - 1)
		i = CADENCE_IDLE_MAX_STATES - 1;
	return i;
}

/* The states a period justified, by enum cadence_idle_ideal. */
struct cadence_idle_ideals {
	u32 of[CADENCE_IDLE_IDEALS];
};

/* idle_learn.bpf.c's global functions these steps call. */
int idle_table_init(struct cadence_idle_learned *t, u32 nr);
int teo_choose(const struct cadence_idle_learned *t, const struct cadence_idle_states *s,
	       struct cadence_idle_entry *e);
int idle_ideals(const struct cadence_idle_states *s, u64 duration_ns,
		struct cadence_idle_ideals *ideals);
int teo_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s,
	      const struct cadence_idle_entry *e, u64 duration_ns);
int per_choice_pick(const struct cadence_idle_learned *t, const struct cadence_idle_states *s,
		    u32 row, u32 rand, u32 pick);
int seed_pick(const struct cadence_idle_learned *t, const struct cadence_idle_states *s, u32 teo,
	      u64 sleep_length, u32 rand);
int per_choice_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s, u32 row,
		     u32 target, const struct cadence_policy *pol);
int seed_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s, u32 row,
	       u32 target, const struct cadence_policy *pol);
int seed_target(const struct cadence_idle_states *s, const struct cadence_idle_entry *e,
		u64 duration_ns);

/*
 * Whether the matrix predictor @which (enum cadence_idle_predictor: SEED or
 * PER_CHOICE) runs under @pol: when it acts, or when idle.compare asks for
 * both. teo always runs: both matrices build on its choice, and the PM QoS
 * rule reads its bins. A matrix that does not run keeps its weights.
 */
static __always_inline bool idle_matrix_runs(const struct cadence_policy *pol, u32 which)
{
	return pol->idle_compare || pol->idle_predictor == which;
}

/*
 * At idle entry: teo's choice, and the per-choice pick and the seed's where
 * they run (else CADENCE_IDLE_NOT_RUN), into @e; @kernel_known:
 * @kernel_state is an index into @s. @tick: the tick at selection (its
 * end-of-period fields are filled when the period ends); @latency_req:
 * the CPU's PM QoS limit, ns.
 */
static __always_inline void idle_predict(struct cadence_idle_learned *t,
					 const struct cadence_idle_states *s,
					 const struct cadence_policy *pol, u64 sleep_length,
					 const struct cadence_idle_tick *tick, u64 latency_req,
					 u32 rand, s32 kernel_state, bool kernel_known,
					 struct cadence_idle_entry *e)
{
	if (t->nr_states != s->nr)
		idle_table_init(t, s->nr);
	e->sleep_length_ns = sleep_length;
	e->tick = *tick;
	e->latency_req_ns = latency_req;
	e->teo = teo_choose(t, s, e);
	e->per_choice = CADENCE_IDLE_NOT_RUN;
	if (idle_matrix_runs(pol, CADENCE_IDLE_PREDICTOR_PER_CHOICE))
		e->per_choice = per_choice_pick(t, s, e->teo, rand, pol->idle_pick);
	e->seed = CADENCE_IDLE_NOT_RUN;
	if (idle_matrix_runs(pol, CADENCE_IDLE_PREDICTOR_SEED))
		e->seed = seed_pick(t, s, e->teo, sleep_length, rand);
	e->kernel = kernel_state;
	e->rand = rand;
	e->entered = kernel_known ? (u32)kernel_state : e->teo;
	/* The kernel's verdict comes after the exit (cadence_cpu_idle_miss). */
	e->kernel_miss = CADENCE_IDLE_MISS_NONE;
}

/*
 * After a period (idle.bpf.c learns at the next entry): teo, and each
 * matrix that predicted at its entry, learn from the period @e started,
 * which lasted @duration_ns; the states it justified go to @ideals
 * (idle_ideals()).
 */
static __always_inline void idle_learn(struct cadence_idle_learned *t,
				       const struct cadence_idle_states *s,
				       const struct cadence_policy *pol,
				       const struct cadence_idle_entry *e, u64 duration_ns,
				       struct cadence_idle_ideals *ideals)
{
	s32 seed_toward;

	/* Fresh (or for other states): it starts as the prediction did. */
	if (t->nr_states != s->nr)
		idle_table_init(t, s->nr);
	idle_ideals(s, duration_ns, ideals);
	teo_learn(t, s, e, duration_ns);
	if (e->per_choice != CADENCE_IDLE_NOT_RUN)
		per_choice_learn(t, s, e->teo, ideals->of[CADENCE_IDLE_IDEAL_RESIDENCY], pol);
	if (e->seed != CADENCE_IDLE_NOT_RUN) {
		seed_toward = seed_target(s, e, duration_ns);
		if (seed_toward >= 0)
			seed_learn(t, s, e->seed, seed_toward, pol);
	}
	t->periods++;
}

/* Count @chosen against @ideal in @sc[@src][@kind]. */
static __always_inline void idle_count(struct cadence_idle_scores *sc, u32 src, u32 kind,
				       u32 chosen, u32 ideal)
{
	u32 b = chosen + CADENCE_IDLE_CORRECT - ideal;

	barrier_var(b);
	if (src < CADENCE_IDLE_SOURCES && kind < CADENCE_IDLE_IDEALS && b < CADENCE_IDLE_DIFFS)
		sc->n[src][kind][b]++;
}

/* Count the kernel's @chosen against @ideal in @sc->miss[@verdict][@kind]. */
static __always_inline void idle_count_miss(struct cadence_idle_scores *sc, u32 verdict, u32 kind,
					    u32 chosen, u32 ideal)
{
	u32 b = chosen + CADENCE_IDLE_CORRECT - ideal;

	barrier_var(b);
	if (verdict < CADENCE_IDLE_MISSES - 1 && kind < CADENCE_IDLE_IDEALS &&
	    b < CADENCE_IDLE_DIFFS)
		sc->miss[verdict][kind][b]++;
}

/*
 * Score a period: each source's choice against both @ideals, a matrix's
 * only where it ran. The kernel's state counts only where @kernel_indices
 * says its indices are ours, and again under the kernel's verdict on it
 * when it judged the period a miss.
 */
static __always_inline void idle_score(struct cadence_idle_scores *sc,
				       const struct cadence_idle_states *s,
				       const struct cadence_idle_entry *e,
				       const struct cadence_idle_ideals *ideals,
				       bool kernel_indices)
{
	u32 kind, ideal;

	idle_for(kind, 0, CADENCE_IDLE_IDEALS)
	{
		ideal = ideals->of[kind];
		idle_count(sc, CADENCE_IDLE_SRC_TEO, kind, e->teo, ideal);
		if (e->per_choice != CADENCE_IDLE_NOT_RUN)
			idle_count(sc, CADENCE_IDLE_SRC_PER_CHOICE, kind, e->per_choice, ideal);
		if (e->seed != CADENCE_IDLE_NOT_RUN)
			idle_count(sc, CADENCE_IDLE_SRC_SEED, kind, e->seed, ideal);
		if (!kernel_indices || e->kernel < 0 || (u32)e->kernel >= s->nr)
			continue;
		idle_count(sc, CADENCE_IDLE_SRC_KERNEL, kind, e->kernel, ideal);
		if (e->kernel_miss == CADENCE_IDLE_MISS_ABOVE)
			idle_count_miss(sc, 0, kind, e->kernel, ideal);
		else if (e->kernel_miss == CADENCE_IDLE_MISS_BELOW)
			idle_count_miss(sc, 1, kind, e->kernel, ideal);
	}
}

#endif /* __CADENCE_IDLE_LEARN_BPF_H */
