/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle-state learner, pure: no maps, no helpers, so that the scheduler
 * (idle.bpf.c, on each CPU's working copy of its table) and the replay
 * program (idle_replay.bpf.c) link this same unit.
 *
 * Three predictions are made as each idle period starts:
 *
 * - teo: the selection of Linux 7.1's teo (drivers/cpuidle/governors/teo.c,
 *   teo_select()) on its own bins: per state the decayed "hits" (the period
 *   ended in the sleep length's bin, after the timer was due) and
 *   "intercepts" (it did not). Starting from the deepest enabled state, it
 *   walks shallower while the intercepts of shallower states dominate,
 *   then caps the choice by the sleep length where that is known, and
 *   follows teo's tick rules (a tick stopped before selection, the next
 *   clock event while the tick stays, wake-ups by the tick, a poll that
 *   gave up) from the inputs in struct cadence_idle_tick, and the CPU's
 *   PM QoS resume-latency limit (docs/idle.md, "teo: which rules").
 * - seed: seed 003 (RFC v2, "Weighted approach to gather and use history
 *   in TEO governor", on teo of v5.7) on top of teo: only when teo's
 *   history rule moved the choice shallower than the timer alone would (in
 *   v5.7 the 8-interval rule, here the intercepts walk), a state no deeper
 *   than teo's choice is drawn from the matrix row of that choice, each
 *   enabled state by its weight. Its rows are kept by the state the seed
 *   entered and learn toward the state v5.7 teo's update counted the
 *   period for (seed_target()).
 * - per-choice: this project's variant of the matrix. Row = teo's choice,
 *   learning toward the deepest state the period justified; the row alone
 *   says how deep, so it may pick deeper than teo. Weighted random, as the
 *   seed, or the heaviest weight.
 *
 * At the end of the period teo's bins learn as teo_update() does, and each
 * matrix that predicted at its start by the seed's update rule
 * (matrix_learn()): both with idle.compare, else only the acting one.
 *
 * The functions with loops are global (__noinline, not static), so that
 * the verifier checks each once on its own: inlined, their nested bpf_for()
 * loops exceed its jump history ("8193 jumps is too complex"). Global
 * functions must check their pointer arguments for NULL.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "idle_learn.bpf.h"

/*
 * teo's RESIDENCY_THRESHOLD_NS (drivers/cpuidle/governors/gov.h): an
 * idle period shorter than 15 us counts as a "short idle".
 */
#define CADENCE_TEO_RESIDENCY_THRESHOLD_NS 15000ULL

/*
 * gov.h's SAFE_TIMER_RANGE_NS (Linux 7.1, e57c2bf2e89d) in ticks: with the
 * tick stopped, a timer due within 2 ticks bounds a shallow choice.
 */
#define CADENCE_TEO_SAFE_TIMER_TICKS 2

/*
 * teo.c's LATENCY_THRESHOLD_NS, RESIDENCY_THRESHOLD_NS / 2: a PM QoS limit
 * this low forces shallow states whatever the wake-up, so teo does not
 * read the sleep length.
 */
#define CADENCE_TEO_LATENCY_THRESHOLD_NS (CADENCE_TEO_RESIDENCY_THRESHOLD_NS / 2)

/*
 * Seed 003 draws its pick from rnd_num % 100: the random number as a
 * percent of the row's weights.
 */
#define CADENCE_SEED_RAND_STEPS 100

/* States a table's loops run over: @s's, at most the arrays'. */
static __always_inline u32 idle_nr(const struct cadence_idle_states *s)
{
	return s->nr < CADENCE_IDLE_MAX_STATES ? s->nr : CADENCE_IDLE_MAX_STATES;
}

static __always_inline bool idle_enabled(const struct cadence_idle_states *s, u32 i)
{
	return i < s->nr && i < CADENCE_IDLE_MAX_STATES && !(s->disabled & (1U << (i & 31)));
}

/*
 * idle_enabled() for @i below idle_nr(), which implies its bounds, with
 * the table's disabled states @disabled read once for a loop.
 */
static __always_inline bool idle_on(u32 disabled, u32 i)
{
	return !(disabled & (1U << (i & 31)));
}

/* State @i's target residency; endless for an index past the table. */
static __always_inline u64 idle_residency(const struct cadence_idle_states *s, u32 i)
{
	return i < CADENCE_IDLE_MAX_STATES ? s->residency_ns[st(i)] : CADENCE_IDLE_ENDLESS;
}

/* A fresh table for @nr states: empty bins, seed 003's initial rows in both matrices. */
__noinline int idle_table_init(struct cadence_idle_learned *t, u32 nr)
{
	/* Seed 003: 6000 on the diagonal, 4000 / (n - 1) elsewhere. */
	u16 off = nr > 1 ? (CADENCE_IDLE_WEIGHT_SCALE - CADENCE_IDLE_WEIGHT_DIAG) / (nr - 1) : 0;
	u32 r, i;

	if (!t)
		return 0;
	t->nr_states = nr;
	t->total = 0;
	t->short_idles = 0;
	t->tick_intercepts = 0;
	t->total_tick = 0;
	t->periods = 0;
	__builtin_memset(t->hits, 0, sizeof(t->hits));
	__builtin_memset(t->intercepts, 0, sizeof(t->intercepts));
	__builtin_memset(t->weight, 0, sizeof(t->weight));
	__builtin_memset(t->seed_weight, 0, sizeof(t->seed_weight));
	idle_for(r, 0, nr < CADENCE_IDLE_MAX_STATES ? nr : CADENCE_IDLE_MAX_STATES)
	{
		idle_for(i, 0, nr < CADENCE_IDLE_MAX_STATES ? nr : CADENCE_IDLE_MAX_STATES)
		{
			t->weight[st(r)][st(i)] = r == i ? CADENCE_IDLE_WEIGHT_DIAG : off;
			t->seed_weight[st(r)][st(i)] = r == i ? CADENCE_IDLE_WEIGHT_DIAG : off;
		}
	}
	return 0;
}

/*
 * teo_find_shallower_state(): from @idx down, the first enabled state whose
 * target residency fits @duration, else the shallowest enabled one seen.
 */
__noinline int teo_shallower(const struct cadence_idle_states *s, u32 idx, u64 duration)
{
	u32 k, i, found = idx;

	if (!s)
		return 0;
	idle_for(k, 1, CADENCE_IDLE_MAX_STATES)
	{
		if (k > idx)
			break;
		i = idx - k;
		if (!idle_enabled(s, i))
			continue;
		found = i;
		if (s->residency_ns[st(i)] <= duration)
			break;
	}
	return found;
}

/*
 * The bin with the most intercepts below the last state, disabled or not;
 * a tie goes to the deeper (a971f984b845, Linux 7.0). A function of its
 * own, so that the verifier does not carry each possible index through
 * teo_choose()'s loops.
 */
__noinline int teo_most_intercepts(const struct cadence_idle_learned *t,
				   const struct cadence_idle_states *s)
{
	u32 i, n, max = 0, most = 0, intercepts;

	if (!t || !s)
		return 0;
	n = idle_nr(s);
	idle_for(i, 1, n)
	{
		intercepts = t->intercepts[st(i - 1)];
		if (intercepts >= max) {
			max = intercepts;
			most = i - 1;
		}
	}
	return most;
}

/* Whether state @i polls (CPUIDLE_FLAG_POLLING). */
static __always_inline bool idle_polling(const struct cadence_idle_states *s, u32 i)
{
	return i < CADENCE_IDLE_MAX_STATES && (s->polling & (1U << (i & 31)));
}

/*
 * teo_select()'s constraint_idx: the deepest enabled state past 0 whose exit
 * latency is within @latency_req, else 0 (state 0 is never tested: it is
 * the floor). A function of its own, as teo_most_intercepts().
 */
__noinline int teo_constraint(const struct cadence_idle_states *s, u64 latency_req)
{
	u32 i, n, disabled, found = 0;

	if (!s)
		return 0;
	n = idle_nr(s);
	disabled = s->disabled;
	idle_for(i, 1, n)
	{
		if (idle_on(disabled, i) && s->exit_latency_ns[st(i)] <= latency_req)
			found = i;
	}
	return found;
}

/*
 * 7.1's deepening with the tick stopped (106a2662e655): from @deepest
 * (constraint_idx, the deepest enabled state within the PM QoS limit) down
 * to just above @idx, the first enabled state whose target residency fits
 * @duration, else @idx.
 */
__noinline int teo_deeper(const struct cadence_idle_states *s, u32 deepest, u32 idx, u64 duration)
{
	u32 k, i;

	if (!s)
		return idx;
	idle_for(k, 0, CADENCE_IDLE_MAX_STATES)
	{
		if (k > deepest)
			break;
		i = deepest - k;
		if (i <= idx)
			break;
		if (idle_enabled(s, i) && s->residency_ns[st(i)] <= duration)
			return i;
	}
	return idx;
}

/*
 * teo_select() of Linux 7.1 on @t's bins, for a CPU with the PM QoS limit
 * @e->latency_req_ns, the tick as @e->tick says and the sleep length
 * @e->sleep_length_ns (CADENCE_IDLE_ENDLESS when not known). Sets
 * @e->sleep_length_used when teo would have asked for the sleep length
 * (its update then compares the period with it; else the sleep length
 * counts as endless). The u32 sums
 * wrap as teo's unsigned ints do. With the tick's length not known
 * (tick_ns 0) no tick rule fires: the choice is that of a CPU whose tick
 * runs but is never due before the chosen state's target residency.
 */
__noinline int teo_choose(const struct cadence_idle_learned *t, const struct cadence_idle_states *s,
			  struct cadence_idle_entry *e)
{
	u32 intercept_sum = 0, hit_sum = 0, idx_intercept_sum = 0, idx_hit_sum = 0;
	u32 i, k, n, below, disabled, idx0 = 0, most, top, constraint_idx;
	u64 duration, tick, latency_req;
	bool stopped;
	s32 idx = -1;

	if (!t || !s || !e)
		return 0;
	e->sleep_length_used = 0;
	tick = e->tick.tick_ns;
	/* With the tick's length not known, no tick rule fires. */
	stopped = tick && e->tick.stopped;
	latency_req = e->latency_req_ns;
	if (s->nr < 2)
		return 0;
	if (idle_enabled(s, 0))
		idx = 0;

	n = idle_nr(s);
	disabled = s->disabled;
	idle_for(i, 1, n)
	{
		below = st(i - 1);
		intercept_sum += t->intercepts[below];
		hit_sum += t->hits[below];
		if (!idle_on(disabled, i))
			continue;
		if (idx < 0)
			idx0 = i;
		idx = i;
		idx_intercept_sum = intercept_sum;
		idx_hit_sum = hit_sum;
	}
	if (idx < 0)
		return 0;
	/* One enabled state: teo's "end" keeps it, tick or limit or not. */
	if ((u32)idx == idx0)
		return idx;

	/*
	 * Intercepts of shallower states outweigh the rest: walk shallower,
	 * through every enabled state down to idx0, until the intercepts
	 * walked past outweigh half of them at or below the bin with the most
	 * (7.1's walk: no tick-stopped floor, 106a2662e655).
	 */
	if (2 * idx_intercept_sum > t->total - idx_hit_sum) {
		most = teo_most_intercepts(t, s);
		top = idx;
		intercept_sum = 0;
		idle_for(k, 1, CADENCE_IDLE_MAX_STATES)
		{
			if (k > top || top - k < idx0)
				break;
			i = top - k;
			intercept_sum += t->intercepts[st(i)];
			if (!idle_enabled(s, i))
				continue;
			idx = i;
			if (2 * intercept_sum > idx_intercept_sum && i <= most)
				break;
		}
	}

	/* The PM QoS limit caps the choice. */
	constraint_idx = teo_constraint(s, latency_req);
	if ((u32)idx > constraint_idx)
		idx = constraint_idx;
	/*
	 * The tick running and a shallow choice, with mostly short idles or a
	 * limit that keeps every wake-up shallow: teo does not look at the
	 * sleep length.
	 */
	if (!stopped && (!idx || idle_residency(s, idx) < CADENCE_TEO_RESIDENCY_THRESHOLD_NS) &&
	    (2 * t->short_idles >= t->total || latency_req < CADENCE_TEO_LATENCY_THRESHOLD_NS))
		return idx;
	e->sleep_length_used = 1;
	duration = e->sleep_length_ns;
	/*
	 * The tick stopped and no timer within CADENCE_TEO_SAFE_TIMER_TICKS
	 * ticks: a choice below a tick's length could hold the CPU shallow
	 * for long, so the deepest state that fits the sleep length is taken.
	 */
	if (stopped && duration > CADENCE_TEO_SAFE_TIMER_TICKS * tick &&
	    idle_residency(s, idx) < tick)
		return teo_deeper(s, constraint_idx, idx, duration);
	if (!idx)
		return 0;
	if (idle_residency(s, idx) > duration)
		idx = teo_shallower(s, idx, duration);
	/*
	 * Intercepts within a tick's length at 2/3 of all wake-ups or more
	 * (475ca3470b37): teo expects the period to end within half a tick.
	 */
	if (idle_residency(s, idx) < tick && 3 * t->tick_intercepts >= 2 * t->total)
		duration = tick / 2;
	/* teo stops the tick (or finds it stopped): the choice stands. */
	if ((!idle_polling(s, idx) && duration >= tick) || stopped)
		return idx;
	/* The tick stays: the choice must fit before the next clock event. */
	if ((u32)idx > idx0 && idle_residency(s, idx) > e->tick.next_event_ns)
		idx = teo_shallower(s, idx, e->tick.next_event_ns);
	return idx;
}

/* teo_decay() (Linux 6.19+): less an eighth; below 8 (no eighth left), 0. */
static __always_inline u32 teo_decay(u32 m)
{
	u32 d = m >> CADENCE_TEO_DECAY_SHIFT;

	return d ? m - d : 0;
}

/*
 * teo_update()'s decay of every bin, disabled states' too; returns the sum
 * of the decayed bins (u32, wrapping as teo's unsigned int).
 */
__noinline int teo_decay_bins(struct cadence_idle_learned *t, const struct cadence_idle_states *s)
{
	u32 i, k, n, total = 0;

	if (!t || !s)
		return 0;
	n = idle_nr(s);
	idle_for(i, 0, n)
	{
		k = st(i);
		t->hits[k] = teo_decay(t->hits[k]);
		total += t->hits[k];
		t->intercepts[k] = teo_decay(t->intercepts[k]);
		total += t->intercepts[k];
	}
	return total;
}

/*
 * The states a period of @duration_ns justified, into @ideals: the deepest
 * enabled state whose target residency (CADENCE_IDLE_IDEAL_RESIDENCY), or
 * residency plus exit latency (CADENCE_IDLE_IDEAL_EXIT), it lasted; the
 * shallowest enabled state if none.
 */
__noinline int idle_ideals(const struct cadence_idle_states *s, u64 duration_ns,
			   struct cadence_idle_ideals *ideals)
{
	u32 i, k, n, disabled, ideal_residency = 0, ideal_exit = 0;
	bool found = false;
	u64 need;

	if (!s || !ideals)
		return 0;
	n = idle_nr(s);
	disabled = s->disabled;
	idle_for(i, 0, n)
	{
		if (!idle_on(disabled, i))
			continue;
		k = st(i);
		need = s->residency_ns[k];
		if (!found || need <= duration_ns)
			ideal_residency = i;
		need += s->exit_latency_ns[k];
		if (!found || need <= duration_ns)
			ideal_exit = i;
		found = true;
	}
	ideals->of[CADENCE_IDLE_IDEAL_RESIDENCY] = ideal_residency;
	ideals->of[CADENCE_IDLE_IDEAL_EXIT] = ideal_exit;
	return 0;
}

/*
 * teo_update() of Linux 7.1 after a period of @duration_ns that began as
 * @e says and ended as @e->tick says.
 */
__noinline int teo_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s,
			 const struct cadence_idle_entry *e, u64 duration_ns)
{
	u32 i, n, idx_timer = 0, idx_duration = 0, decayed;
	u64 measured = duration_ns, sleep, lat, tick, residency;
	bool on_time;

	if (!t || !s || !e)
		return 0;
	sleep = e->sleep_length_used ? e->sleep_length_ns : CADENCE_IDLE_ENDLESS;
	tick = e->tick.tick_ns;
	/* The exit latency of the state entered (f36de72673ad, Linux 7.0). */
	lat = e->entered < CADENCE_IDLE_MAX_STATES ? s->exit_latency_ns[st(e->entered)] : 0;

	t->short_idles = teo_decay(t->short_idles);
	if (e->tick.poll_limit) {
		/* A poll that gave up may have been a long sleep: endless. */
		measured = CADENCE_IDLE_ENDLESS;
	} else if (measured >= lat) {
		/* teo takes half the exit latency as the average wake-up delay. */
		measured -= lat / 2;
		if (measured < CADENCE_TEO_RESIDENCY_THRESHOLD_NS)
			t->short_idles += CADENCE_TEO_PULSE;
	} else {
		measured /= 2;
		t->short_idles += CADENCE_TEO_PULSE;
	}
	/*
	 * A hit needs the period to end in the sleep length's bin and after
	 * the timer was due, within half the exit latency (s64, as teo's
	 * sleep_length_ns - measured_ns < lat_ns / 2; f36de72673ad).
	 */
	on_time = (s64)(sleep - measured) < (s64)(lat / 2);
	n = idle_nr(s);
	idle_for(i, 0, n)
	{
		residency = s->residency_ns[st(i)];
		if (residency <= sleep) {
			idx_timer = i;
			if (residency <= measured)
				idx_duration = i;
		}
	}
	/* The total is the decayed bins' sum plus this period's pulse. */
	decayed = teo_decay_bins(t, s);
	t->total = decayed + CADENCE_TEO_PULSE;
	t->tick_intercepts = teo_decay(t->tick_intercepts);
	t->total_tick = teo_decay(t->total_tick);
	if (tick && e->tick.woke) {
		t->total_tick += CADENCE_TEO_PULSE;
		/*
		 * Tick wake-ups above 2/3 of all (083654ded547, 6.19): a hit in
		 * the deepest state's bin, so that the tick may be stopped.
		 */
		if (3 * t->total_tick > 2 * t->total) {
			t->hits[st(s->nr - 1)] += CADENCE_TEO_PULSE;
			return 0;
		}
		/*
		 * Intercepts within a tick below 2/3 of the decayed bins
		 * (60836533b4c7, 7.0): the tick likely stood in for an
		 * intercept that did not come, a hit in the timer's bin.
		 */
		if (3 * t->tick_intercepts < 2 * decayed) {
			t->hits[st(idx_timer)] += CADENCE_TEO_PULSE;
			return 0;
		}
	}
	if (idx_timer == idx_duration && on_time) {
		t->hits[st(idx_timer)] += CADENCE_TEO_PULSE;
	} else {
		t->intercepts[st(idx_duration)] += CADENCE_TEO_PULSE;
		/* Within a tick's length (50db438231dc); never with the tick not known. */
		if (tick && measured <= tick)
			t->tick_intercepts += CADENCE_TEO_PULSE;
	}
	return 0;
}

/* The per-choice pick from the row of teo's choice @row. */
__noinline int per_choice_pick(const struct cadence_idle_learned *t,
			       const struct cadence_idle_states *s, u32 row, u32 rand, u32 pick)
{
	u32 i, n, disabled, best = row, sum = 0, acc = 0, pos, w, heaviest = 0;
	const u16 *weights;

	if (!t || !s || row >= CADENCE_IDLE_MAX_STATES)
		return row;
	weights = t->weight[st(row)];
	n = idle_nr(s);
	disabled = s->disabled;
	idle_for(i, 0, n)
	{
		if (!idle_on(disabled, i))
			continue;
		w = weights[st(i)];
		sum += w;
		/* The heaviest; a tie goes to the shallower state. */
		if (w > heaviest) {
			heaviest = w;
			best = i;
		}
	}
	if (!sum || pick == CADENCE_IDLE_PICK_HEAVIEST)
		return best;
	/* @rand scaled to [0, sum): the row's weights are the odds. */
	pos = ((u64)rand * sum) >> 32;
	idle_for(i, 0, n)
	{
		if (!idle_on(disabled, i))
			continue;
		acc += weights[st(i)];
		if (pos < acc)
			return i;
	}
	return best;
}

/*
 * Seed 003's choice on top of teo's @teo, for @sleep_length: the RFC
 * consults its matrix only when v5.7 teo's 8-interval rule took the
 * choice shallower than the timer-based one (og_idx != idx). Here the
 * timer-based choice is the deepest enabled state cut by the sleep length
 * as teo cuts its own, and the intercepts walk is the rule: if teo ends
 * shallower than that, a state is drawn from row @teo among the enabled
 * states no deeper than @teo, by weight, with the RFC's draw
 * (rnd_num % 100) * sum / 100. The RFC's draw returns the position among
 * the enabled states; this returns the state at that position, which is
 * the same unless a shallower state is disabled.
 */
__noinline int seed_pick(const struct cadence_idle_learned *t, const struct cadence_idle_states *s,
			 u32 teo, u64 sleep_length, u32 rand)
{
	u32 i, timer = 0, sum = 0, acc = 0, pos;

	if (!t || !s || teo >= CADENCE_IDLE_MAX_STATES)
		return teo;
	idle_for(i, 0, idle_nr(s))
	{
		if (idle_enabled(s, i))
			timer = i;
	}
	if (idle_residency(s, timer) > sleep_length)
		timer = teo_shallower(s, timer, sleep_length);
	if (teo >= timer)
		return teo;
	idle_for(i, 0, idle_nr(s))
	{
		if (i > teo)
			break;
		if (idle_enabled(s, i))
			sum += t->seed_weight[st(teo)][st(i)];
	}
	pos = (rand % CADENCE_SEED_RAND_STEPS) * sum / CADENCE_SEED_RAND_STEPS;
	idle_for(i, 0, idle_nr(s))
	{
		if (i > teo)
			break;
		if (!idle_enabled(s, i))
			continue;
		acc += t->seed_weight[st(teo)][st(i)];
		if (pos < acc)
			return i;
	}
	return teo;
}

/*
 * Seed 003's update of @row (a matrix row) toward @target with learning
 * rate lr (%, @pol's): over all @s->nr states, the target gains lr% of its
 * weight while it stays below (100 - lr)%, the others lose lr% / (nr - 1)
 * of theirs while they stay above lr%.
 */
static __always_inline void matrix_learn(u16 *row, const struct cadence_idle_states *s, u32 target,
					 const struct cadence_policy *pol)
{
	u32 i, k, n = s->nr, states = idle_nr(s), w, d, lr = pol->idle_learning_rate;

	if (n < 2)
		return;
	idle_for(i, 0, states)
	{
		k = st(i);
		w = row[k];
		if (i == target) {
			d = lr * w / 100;
			if (w + d < (100 - lr) * 100)
				row[k] = w + d;
		} else {
			d = lr * w / (100 * (n - 1));
			if (w - d > lr * 100)
				row[k] = w - d;
		}
	}
}

/* The per-choice matrix learns: its row @row (teo's choice) toward @target. */
__noinline int per_choice_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s,
				u32 row, u32 target, const struct cadence_policy *pol)
{
	if (t && s && pol && row < CADENCE_IDLE_MAX_STATES)
		matrix_learn(t->weight[st(row)], s, target, pol);
	return 0;
}

/* Seed 003's matrix learns: its row @row (the state entered) toward @target. */
__noinline int seed_learn(struct cadence_idle_learned *t, const struct cadence_idle_states *s,
			  u32 row, u32 target, const struct cadence_policy *pol)
{
	if (t && s && pol && row < CADENCE_IDLE_MAX_STATES)
		matrix_learn(t->seed_weight[st(row)], s, target, pol);
	return 0;
}

/*
 * The state seed 003 learns toward after the period @e started, which
 * lasted @duration_ns (v5.7 teo_update() with the RFC's additions): the
 * period is measured as v5.7 measured it (endless if it reached the sleep
 * length or a safety net ended it, else less half the exit latency of the
 * state entered, the seed's); idx_timer is the deepest state whose target
 * residency fits the sleep length, idx_hit the deepest that fits both it
 * and the period. On a miss (idx_timer > idx_hit) the target is idx_hit,
 * or idx_timer if no state fits the period; on a hit it is the state
 * entered. -1: no state fits the sleep length, and the RFC learns nothing.
 */
__noinline int seed_target(const struct cadence_idle_states *s, const struct cadence_idle_entry *e,
			   u64 duration_ns)
{
	u64 sleep, measured = duration_ns, lat;
	s32 idx_timer = -1, idx_hit = -1;
	u32 i;

	if (!s || !e || e->seed >= CADENCE_IDLE_MAX_STATES)
		return -1;
	sleep = e->sleep_length_ns;
	lat = s->exit_latency_ns[st(e->seed)];
	/*
	 * v5.7 teo_reflect()'s safety nets count as reaching the sleep
	 * length: a poll that gave up, and a wake-up by the tick with the
	 * sleep length past a tick.
	 */
	if (measured >= sleep || e->tick.poll_limit ||
	    (e->tick.woke && e->tick.tick_ns && sleep > e->tick.tick_ns))
		measured = CADENCE_IDLE_ENDLESS;
	else if (measured >= lat)
		measured -= lat / 2;
	else
		measured /= 2;
	idle_for(i, 0, idle_nr(s))
	{
		if (s->residency_ns[st(i)] <= sleep) {
			idx_timer = i;
			if (s->residency_ns[st(i)] <= measured)
				idx_hit = i;
		}
	}
	if (idx_timer < 0)
		return -1;
	if (idx_timer > idx_hit)
		return idx_hit >= 0 ? idx_hit : idx_timer;
	return e->seed;
}
