/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The small-core placement search (seed 002): which idle CPU a waking task
 * should take, from a bitmap of idle CPUs, a bitmap of the CPUs it may use,
 * its previous CPU and the topology table. Pure: no maps, no kfuncs, so
 * place_test.bpf.c runs this very code on hand-made masks on the host.
 *
 * Best first (enum cadence_place_level):
 *   1. the previous CPU, if its whole small core is idle;
 *   2. a CPU of a fully idle big core in the previous CPU's LLC, the
 *      previous big core first (the previous CPU itself if it is idle);
 *   3. a CPU of a fully idle small core in a busy big core: of the big
 *      cores of the LLC that have one, the one with the most idle threads
 *      (the previous big core on a tie), the previous CPU's small core
 *      first within it;
 *   4. an idle thread next to the previous CPU: of the small cores of its
 *      big core, the one with the most idle threads (its own first on a
 *      tie), then likewise in its LLC;
 *   5. any idle CPU the task may use.
 * Steps 1-4 stay inside the previous CPU's LLC (wake-affine). Step 4
 * departs from "the previous small core first": tasks forked in a row from
 * one parent would otherwise all land on the parent's small core (3 on one
 * SMT4 half and 1 on the other for 4 tasks), where the seed's optimal
 * placement is 2 and 2. With @spread off (the policy's idle_core_first
 * off) steps 1-3 are skipped and step 4 takes the small core with the
 * fewest idle threads instead, packing work onto busy cores.
 *
 * Step 3 weighs big cores by their idle threads: where every thread is its
 * own small core (QEMU, no-L1-sharing machines), "the previous big core
 * first" would stack forked tasks 3 and 1 on two SMT4 cores.
 *
 * A task re-enqueued while it runs (in->leaving) has prev counted idle by
 * the caller and skips step 1, so it leaves a crowded big core for a freer
 * one, and stays (the search returns prev) when nothing is freer.
 *
 * A small core of one thread (no SMT) is fully idle exactly when its CPU
 * is, so steps 1-3 then find any idle CPU and the search degrades to
 * "previous CPU, then any idle CPU in the LLC".
 *
 * With in->shallow (idle.place = shallow), idle states break the ties the
 * order leaves: where it would take "the first" of several CPUs it holds
 * equal, it takes the one whose idle state has the smallest exit latency
 * (topo->idle_exit_ns), the first of those on a tie. That is: the thread
 * within a small core; the big core at step 2 and the small core at step 3
 * among those of the LLC that are not the previous CPU's; at step 3 the
 * big core among those with as many idle threads; at step 4 the small core
 * among those with as many idle threads that are not the preferred one;
 * and the CPU at step 5. The order's own preferences stay: the previous
 * CPU, its small core and its big core still win where they win without
 * it. Waking the shallowest CPU leaves those in deep states asleep (with
 * idle_core_first off, the powersave preset, that packs work onto the
 * awake ones).
 *
 * The helpers are global functions (__noinline, not static): the verifier
 * checks each once on its own, where inlined nested loops over big cores,
 * small cores and threads exceed its complexity limits. Global functions
 * must check their pointer arguments for NULL.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

#include "intf.h"
#include "place_search.bpf.h"
#include "masked_index.bpf.h"

/* Bit @cpu of a CPU bitmap. */
static __always_inline bool pl_bit(const u64 *words, u32 cpu)
{
	u32 w = cpu >> 6;

	barrier_var(w);
	w &= CADENCE_CPU_WORDS - 1;
	return (words[w] >> (cpu & 63)) & 1;
}

/* The exit latency of @cpu's idle state now (0: busy or not known). */
static __always_inline u32 pl_exit_ns(const struct cadence_topo *t, s32 cpu)
{
	return t->idle_exit_ns[cpu_index(cpu)];
}

/*
 * Keep @cpu, in a state of @exit_ns, as *@best if it is shallower than
 * *@best_exit or the first; true when nothing can be shallower (0), so the
 * caller may stop: a tie keeps the first.
 */
static __always_inline bool pl_keep_shallowest(s32 cpu, u32 exit_ns, s32 *best, u32 *best_exit)
{
	if (*best < 0 || exit_ns < *best_exit) {
		*best = cpu;
		*best_exit = exit_ns;
	}
	return !*best_exit;
}

/*
 * What a small core offers: idle threads the task may use, the first (the
 * shallowest with in->shallow) and its exit latency.
 */
struct pl_small {
	s32 first;
	u32 exit_ns;
	u32 idle;
	/* Every thread of the small core is idle (usable or not). */
	bool whole;
};

__noinline int pl_small_scan(const struct cadence_topo *t, const struct cadence_place_in *in, u32 s,
			     struct pl_small *out)
{
	u32 n, i, cpu, exit_ns;

	if (!t || !in || !out)
		return -1;
	n = t->small_nr_cpus[cpu_index(s)];
	out->first = -1;
	out->exit_ns = 0;
	out->idle = 0;
	out->whole = true;
	if (n > CADENCE_MAX_SMT)
		n = CADENCE_MAX_SMT;
	bpf_for (i, 0, n) {
		barrier_var(i);
		cpu = t->small_cpus[cpu_index(s)][i & (CADENCE_MAX_SMT - 1)];
		if (!pl_bit(in->idle, cpu)) {
			out->whole = false;
			continue;
		}
		if (!pl_bit(in->allowed, cpu))
			continue;
		exit_ns = pl_exit_ns(t, cpu);
		if (out->first < 0 || (in->shallow && exit_ns < out->exit_ns)) {
			out->first = cpu;
			out->exit_ns = exit_ns;
		}
		out->idle++;
	}
	return 0;
}

/* A CPU of big core @b (the shallowest) if all of it is idle, else -1. */
__noinline s32 pl_idle_big(const struct cadence_topo *t, const struct cadence_place_in *in, u32 b)
{
	struct pl_small sc;
	u32 first, n, i, best_exit = 0;
	s32 cpu = -1;

	if (!t || !in)
		return -1;
	first = t->big_first_small[cpu_index(b)];
	n = t->big_nr_small[cpu_index(b)];
	bpf_for (i, 0, n) {
		if (pl_small_scan(t, in, first + i, &sc) || !sc.whole)
			return -1;
		if (sc.first >= 0 && (cpu < 0 || (in->shallow && sc.exit_ns < best_exit))) {
			cpu = sc.first;
			best_exit = sc.exit_ns;
		}
	}
	return cpu;
}

/*
 * Step 2 beyond the previous big core @skip: a CPU of a fully idle big
 * core of the LLC's @nr_big from @first_big, the first such big core, or
 * the shallowest CPU of all of them with in->shallow; else -1.
 */
__noinline s32 pl_idle_big_in_llc(const struct cadence_topo *t, const struct cadence_place_in *in,
				  u32 first_big, u32 nr_big, u32 skip)
{
	u32 i, b, best_exit = 0;
	s32 cpu, best = -1;

	if (!t || !in)
		return -1;
	bpf_for (i, 0, nr_big) {
		b = first_big + i;
		if (b == skip)
			continue;
		cpu = pl_idle_big(t, in, b);
		if (cpu < 0)
			continue;
		if (!in->shallow)
			return cpu;
		if (pl_keep_shallowest(cpu, pl_exit_ns(t, cpu), &best, &best_exit))
			return best;
	}
	return best;
}

/*
 * A CPU of a fully idle small core of big core @b, the first such small
 * core's, or the shallowest of all of them with in->shallow; else -1.
 */
__noinline s32 pl_idle_small_in(const struct cadence_topo *t, const struct cadence_place_in *in,
				u32 b)
{
	struct pl_small sc;
	u32 first, n, i, best_exit = 0;
	s32 cpu = -1;

	if (!t || !in)
		return -1;
	first = t->big_first_small[cpu_index(b)];
	n = t->big_nr_small[cpu_index(b)];
	bpf_for (i, 0, n) {
		if (pl_small_scan(t, in, first + i, &sc))
			return -1;
		if (!sc.whole || sc.first < 0)
			continue;
		if (!in->shallow)
			return sc.first;
		if (pl_keep_shallowest(sc.first, sc.exit_ns, &cpu, &best_exit))
			return cpu;
	}
	return cpu;
}

/*
 * Idle threads of big core @b the task may use; *@whole: it has a fully
 * idle small core with such a thread.
 */
__noinline u32 pl_big_idle(const struct cadence_topo *t, const struct cadence_place_in *in, u32 b,
			   bool *whole)
{
	u32 first, n, i, idle = 0;
	struct pl_small sc;

	if (!t || !in || !whole)
		return 0;
	*whole = false;
	first = t->big_first_small[cpu_index(b)];
	n = t->big_nr_small[cpu_index(b)];
	bpf_for (i, 0, n) {
		if (pl_small_scan(t, in, first + i, &sc))
			return 0;
		idle += sc.idle;
		if (sc.whole && sc.first >= 0)
			*whole = true;
	}
	return idle;
}

/*
 * With in->shallow: big core @b's step-3 CPU is in a shallower state than
 * big core @than's (both have a fully idle small core).
 */
__noinline int pl_shallower_big(const struct cadence_topo *t, const struct cadence_place_in *in,
				u32 b, u32 than)
{
	s32 cpu, than_cpu;

	if (!t || !in || !in->shallow || b == than)
		return 0;
	than_cpu = pl_idle_small_in(t, in, than);
	/* Nothing is shallower than 0: skip the second scan. */
	if (than_cpu < 0 || !pl_exit_ns(t, than_cpu))
		return 0;
	cpu = pl_idle_small_in(t, in, b);
	return cpu >= 0 && pl_exit_ns(t, cpu) < pl_exit_ns(t, than_cpu);
}

/* @cpu is idle and the task may use it. */
static __always_inline bool pl_free(const struct cadence_place_in *in, s32 cpu)
{
	return cpu >= 0 && pl_bit(in->idle, cpu) && pl_bit(in->allowed, cpu);
}

/*
 * Step 4 within big core @b: the idle thread of the small core with the
 * most idle threads (@spread) or the fewest but one (!@spread); small core
 * @pref wins ties, and @prev is taken if it is an idle thread of the
 * chosen one. *@small gets the chosen small core. With in->shallow, of
 * small cores tied with neither being @pref, the shallower wins.
 */
__noinline s32 pl_near_in(const struct cadence_topo *t, const struct cadence_place_in *in, u32 b,
			  u32 pref, u32 *small)
{
	u32 first, n, i, s, best_idle = 0, best_exit = 0;
	struct pl_small sc;
	s32 best = -1;
	bool better;

	if (!t || !in || !small)
		return -1;
	first = t->big_first_small[cpu_index(b)];
	n = t->big_nr_small[cpu_index(b)];
	bpf_for (i, 0, n) {
		s = first + i;
		if (pl_small_scan(t, in, s, &sc) || !sc.idle)
			continue;
		if (best < 0)
			better = true;
		else if (sc.idle == best_idle)
			better = s == pref ||
				 (in->shallow && *small != pref && sc.exit_ns < best_exit);
		else
			better = in->spread ? sc.idle > best_idle : sc.idle < best_idle;
		if (better) {
			best = sc.first;
			best_idle = sc.idle;
			best_exit = sc.exit_ns;
			*small = s;
		}
	}
	if (best >= 0 && in->prev >= 0 && *small == t->cpu_small[cpu_index(in->prev)] &&
	    pl_bit(in->idle, in->prev) && pl_bit(in->allowed, in->prev))
		return in->prev;
	return best;
}

/* The shallowest CPU of a word's @bits (CPUs @base..@base+63), else -1. */
__noinline s32 pl_shallowest_of(const struct cadence_topo *t, u64 bits, u32 base)
{
	u32 k, best_exit = 0;
	s32 cpu, best = -1;

	if (!t)
		return -1;
	bpf_for (k, 0, 64) {
		if (!bits)
			break;
		cpu = base + __builtin_ctzll(bits);
		bits &= bits - 1;
		if (pl_keep_shallowest(cpu, pl_exit_ns(t, cpu), &best, &best_exit))
			return best;
	}
	return best;
}

/*
 * Any idle CPU the task may use, lowest id first, or the shallowest
 * (lowest id on a tie) with in->shallow; else -1.
 */
__noinline s32 pl_any(const struct cadence_topo *t, const struct cadence_place_in *in)
{
	u32 w, nr_words, best_exit = 0;
	s32 cpu, best = -1;
	u64 bits;

	if (!t || !in)
		return -1;
	nr_words = (t->nr_cpus + 63) / 64;
	if (nr_words > CADENCE_CPU_WORDS)
		nr_words = CADENCE_CPU_WORDS;
	bpf_for (w, 0, nr_words) {
		barrier_var(w);
		bits = in->idle[w & (CADENCE_CPU_WORDS - 1)] &
		       in->allowed[w & (CADENCE_CPU_WORDS - 1)];
		if (!bits)
			continue;
		if (!in->shallow)
			return w * 64 + __builtin_ctzll(bits);
		cpu = pl_shallowest_of(t, bits, w * 64);
		if (cpu < 0)
			continue;
		if (pl_keep_shallowest(cpu, pl_exit_ns(t, cpu), &best, &best_exit))
			return best;
	}
	return best;
}

/*
 * The search: returns the CPU (or -1) and sets *@level to the step that
 * found it (CADENCE_PLACE_BUSY if none).
 */
__noinline s32 place_search(const struct cadence_topo *t, const struct cadence_place_in *in,
			    u32 *level)
{
	u32 prev_small, prev_big, llc, first_big, nr_big, i, b, s = 0, idle, best_idle;
	struct pl_small sc;
	bool whole;
	s32 cpu;

	if (!t || !in || !level)
		return -1;
	*level = CADENCE_PLACE_BUSY;
	if (in->prev < 0 || (u32)in->prev >= t->nr_cpus ||
	    t->cpu_small[cpu_index(in->prev)] == CADENCE_NO_GROUP)
		goto any;
	prev_small = t->cpu_small[cpu_index(in->prev)];
	prev_big = t->small_big[cpu_index(prev_small)];
	llc = t->big_llc[cpu_index(prev_big)];
	first_big = t->llc_first_big[llc_index(llc)];
	nr_big = t->llc_nr_big[llc_index(llc)];

	if (in->spread) {
		/* 1. prev, its whole small core idle. */
		if (!in->leaving && !pl_small_scan(t, in, prev_small, &sc) && sc.whole &&
		    pl_bit(in->allowed, in->prev)) {
			*level = CADENCE_PLACE_PREV_SMALL;
			return in->prev;
		}
		/* 2. A fully idle big core in the LLC, prev's first. */
		cpu = pl_idle_big(t, in, prev_big);
		if (cpu >= 0 && pl_free(in, in->prev))
			cpu = in->prev;
		if (cpu < 0)
			cpu = pl_idle_big_in_llc(t, in, first_big, nr_big, prev_big);
		if (cpu >= 0) {
			*level = CADENCE_PLACE_IDLE_BIG;
			return cpu;
		}
		/* 3. A fully idle small core, in the freest big core that has one. */
		best_idle = pl_big_idle(t, in, prev_big, &whole);
		b = whole ? prev_big : CADENCE_NO_GROUP;
		if (!whole)
			best_idle = 0;
		bpf_for (i, 0, nr_big) {
			idle = pl_big_idle(t, in, first_big + i, &whole);
			if (!whole)
				continue;
			if (b == CADENCE_NO_GROUP || idle > best_idle ||
			    (idle == best_idle && b != prev_big &&
			     pl_shallower_big(t, in, first_big + i, b))) {
				b = first_big + i;
				best_idle = idle;
			}
		}
		if (b != CADENCE_NO_GROUP) {
			if (b == prev_big && !pl_small_scan(t, in, prev_small, &sc) && sc.whole &&
			    pl_free(in, in->prev))
				cpu = in->prev;
			else
				cpu = pl_idle_small_in(t, in, b);
			if (cpu >= 0) {
				*level = CADENCE_PLACE_IDLE_SMALL;
				return cpu;
			}
		}
	}
	/* 4. An idle thread next to prev: its big core, then its LLC. */
	cpu = pl_near_in(t, in, prev_big, prev_small, &s);
	if (cpu >= 0) {
		*level = s == prev_small ? CADENCE_PLACE_NEAR_SMALL : CADENCE_PLACE_NEAR_BIG;
		return cpu;
	}
	bpf_for (i, 0, nr_big) {
		b = first_big + i;
		if (b == prev_big)
			continue;
		cpu = pl_near_in(t, in, b, CADENCE_NO_GROUP, &s);
		if (cpu >= 0) {
			*level = CADENCE_PLACE_NEAR_LLC;
			return cpu;
		}
	}
any:
	/* 5. Anything idle the task may use. */
	cpu = pl_any(t, in);
	if (cpu >= 0)
		*level = CADENCE_PLACE_ANY;
	return cpu;
}

/*
 * Threads of small core @s the task may use that are idle or run light
 * work (in->light): what a CPU-bound task weighs when it thinks of moving.
 */
__noinline u32 pl_small_free(const struct cadence_topo *t, const struct cadence_place_in *in, u32 s)
{
	u32 n, i, cpu, free = 0;

	if (!t || !in)
		return 0;
	n = t->small_nr_cpus[cpu_index(s)];
	if (n > CADENCE_MAX_SMT)
		n = CADENCE_MAX_SMT;
	bpf_for (i, 0, n) {
		barrier_var(i);
		cpu = t->small_cpus[cpu_index(s)][i & (CADENCE_MAX_SMT - 1)];
		if ((pl_bit(in->idle, cpu) || pl_bit(in->light, cpu)) && pl_bit(in->allowed, cpu))
			free++;
	}
	return free;
}

/* pl_small_free() summed over big core @b's small cores. */
__noinline u32 pl_big_free(const struct cadence_topo *t, const struct cadence_place_in *in, u32 b)
{
	u32 first, n, i, free = 0;

	if (!t || !in)
		return 0;
	first = t->big_first_small[cpu_index(b)];
	n = t->big_nr_small[cpu_index(b)];
	bpf_for (i, 0, n)
		free += pl_small_free(t, in, first + i);
	return free;
}

/*
 * A running task on in->prev (counted idle by the caller, in->leaving) and
 * @cpu, the search's pick in another small or big core: the free threads
 * (idle, or running light work) @cpu's core has beyond prev's, prev itself
 * not counted. Big cores when @cpu is in another big core, else small
 * cores. Moving from a core of k more loaded threads to an equal one
 * evens them out at k >= 2 (one task fewer there, one more here) and swaps
 * them at k = 1, so 1 is never worth a move and 2 is the least margin.
 * Light work counts as free because it comes and goes: two short tasks
 * beside one CPU-bound task made the core of another CPU-bound task look
 * freer, and the search moved the first onto it.
 */
__noinline s32 pl_move_gain(const struct cadence_topo *t, const struct cadence_place_in *in,
			    s32 cpu)
{
	u32 prev_small, cpu_small, prev_big, cpu_big, there, here;

	if (!t || !in || in->prev < 0 || cpu < 0)
		return 0;
	prev_small = t->cpu_small[cpu_index(in->prev)];
	cpu_small = t->cpu_small[cpu_index(cpu)];
	if (prev_small == CADENCE_NO_GROUP || cpu_small == CADENCE_NO_GROUP)
		return 0;
	prev_big = t->small_big[cpu_index(prev_small)];
	cpu_big = t->small_big[cpu_index(cpu_small)];
	if (prev_big != cpu_big) {
		there = pl_big_free(t, in, cpu_big);
		here = pl_big_free(t, in, prev_big);
	} else {
		there = pl_small_free(t, in, cpu_small);
		here = pl_small_free(t, in, prev_small);
	}
	/* prev is counted idle by the caller: it is the task's own thread. */
	if (pl_free(in, in->prev) && here)
		here--;
	return (s32)there - (s32)here;
}

/*
 * After hold_light_pick() found @cpu: a thread idle now (in->idle, not
 * in->light) the task may use in @cpu's small core, or in its big core if
 * that is not in->prev's; -1 if none. The hold's verdict to move, reached
 * with light work counted idle, is carried out there: the search on idle
 * threads alone, which at the same instant often still kept the task
 * (short tasks had just taken or left a thread or two), is not asked
 * again (traced in VM case place_split_undone_under_churn: verdicts to
 * move at most checks for 1.5 s before one found the search agreeing).
 */
__noinline s32 pl_idle_beside(const struct cadence_topo *t, const struct cadence_place_in *in,
			      s32 cpu)
{
	u32 prev_small, cpu_small, big, first, n, i, m, j, s, c;

	if (!t || !in || cpu < 0 || in->prev < 0)
		return -1;
	prev_small = t->cpu_small[cpu_index(in->prev)];
	cpu_small = t->cpu_small[cpu_index(cpu)];
	if (prev_small == CADENCE_NO_GROUP || cpu_small == CADENCE_NO_GROUP)
		return -1;
	big = t->small_big[cpu_index(cpu_small)];
	first = cpu_small;
	n = 1;
	if (big != t->small_big[cpu_index(prev_small)]) {
		first = t->big_first_small[cpu_index(big)];
		n = t->big_nr_small[cpu_index(big)];
	}
	bpf_for (i, 0, n) {
		s = first + i;
		m = t->small_nr_cpus[cpu_index(s)];
		if (m > CADENCE_MAX_SMT)
			m = CADENCE_MAX_SMT;
		bpf_for (j, 0, m) {
			c = t->small_cpus[cpu_index(s)][j & (CADENCE_MAX_SMT - 1)];
			if (pl_bit(in->idle, c) && !pl_bit(in->light, c) && pl_bit(in->allowed, c))
				return c;
		}
	}
	return -1;
}
