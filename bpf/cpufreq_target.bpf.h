/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cpufreq target of a CPU, and the deadband that decides whether
 * a new target is worth a request. Pure functions of the policy, the
 * CPU's state (struct cadence_cpu_cpufreq), its util and the time: no maps,
 * no kfuncs, so cpufreq_replay.bpf.c runs this very code outside the scheduler, and
 * src/cpufreq/ checks it against a Rust reference.
 *
 * The target. From frequency-invariant util alone (seed 000, section 3):
 * util already says how much of freq_max the CPU needs, whatever it runs
 * at now, so the target needs no feedback on the current frequency and
 * can jump to any level in one request. schedutil turns a target into a
 * frequency as 1.25 x cpuinfo_max_freq x target / 1024 (map_util_perf()
 * adds the 25%), so the policy's total headroom h gives
 *
 *	target = util x h / 125 x cpufreq_scale / 1024
 *
 * where cpufreq_scale = freq_max / cpuinfo_max_freq x 1024 re-expresses
 * util (relative to freq_max) relative to what schedutil calls 1024. With
 * h = 125 the CPU gets exactly schedutil's margin, not that margin twice.
 *
 * No input here depends on iowait (seed 001): the iowait boost below runs
 * only when the policy's legacy switch asks for it, for comparisons.
 *
 * The deadband (seed 004), in the order a new target meets it:
 * 1. floor: while util < fmin / freq_max, ask for the minimum, as
 *    pcc-cpufreq did before ondemand lost its deadband: all the small
 *    loads then share one target, and wandering among them asks nothing;
 * 2. hysteresis: a target less than `band` from the one in force is not
 *    asked for, except the two ends (0 and 1024), which always are;
 * 3. down hold: a lower target is asked for only once it has been asked
 *    for continuously for the hold time; a higher one at once;
 * 4. rate limit: at most one request per interval on a CPU.
 *
 * Idle (cpufreq_idle()). A CPU that goes idle asks for its floor at once,
 * past the hold and the rate limit: see there.
 */
#ifndef __CADENCE_CPUFREQ_TARGET_BPF_H
#define __CADENCE_CPUFREQ_TARGET_BPF_H

/* The target @util (0..1024) asks for under @pol, before the deadband. */
static __always_inline u32 cpufreq_target(const struct cadence_policy *pol, u32 util)
{
	u64 t;

	if (pol->cpufreq_mode == CADENCE_CPUFREQ_MODE_PERFORMANCE)
		return CADENCE_CPUFREQ_MAX;
	if (pol->cpufreq_mode == CADENCE_CPUFREQ_MODE_POWERSAVE)
		return CADENCE_CPUFREQ_MIN;
	if (util > CADENCE_CAP_SCALE)
		util = CADENCE_CAP_SCALE;
	/* At most 1024 x 400 x 4096: far from overflow in 64 bits. */
	t = (u64)util * pol->cpufreq_headroom_pct * pol->cpufreq_scale /
	    ((u64)CADENCE_SCHEDUTIL_MARGIN_PCT << CADENCE_CAP_SHIFT);
	return t > CADENCE_CPUFREQ_MAX ? CADENCE_CPUFREQ_MAX : (u32)t;
}

/* The target after the floor: the minimum while util is under it. */
static __always_inline u32 cpufreq_floored(const struct cadence_policy *pol, u32 util, u32 raw)
{
	if (pol->cpufreq_mode == CADENCE_CPUFREQ_MODE_UTIL && util < pol->cpufreq_floor_util)
		return CADENCE_CPUFREQ_MIN;
	return raw;
}

/* Count an issued target in its histogram bucket (1024 in the last). */
static __always_inline void cpufreq_hist_add(struct cadence_cpu_cpufreq *pc, u32 t)
{
	u32 b = t >> CADENCE_CPUFREQ_HIST_SHIFT;

	if (b >= CADENCE_CPUFREQ_HIST_BUCKETS)
		b = CADENCE_CPUFREQ_HIST_BUCKETS - 1;
	pc->hist[b]++;
}

/*
 * One evaluation at @now of a CPU whose util is @util: returns the
 * verdict (enum cadence_cpufreq_verdict); on CADENCE_CPUFREQ_ISSUED,
 * pc->target is the new target to request.
 */
static __always_inline u32 cpufreq_decide(struct cadence_cpu_cpufreq *pc,
					  const struct cadence_policy *pol, u32 util, u64 now)
{
	u32 raw = cpufreq_target(pol, util);
	u32 t = cpufreq_floored(pol, util, raw);
	u32 last = pc->target, diff;

	if (t == last) {
		pc->down_since = 0;
		if (raw != last) {
			pc->supp_deadband++;
			return CADENCE_CPUFREQ_DEADBAND;
		}
		return CADENCE_CPUFREQ_SAME;
	}
	diff = t > last ? t - last : last - t;
	if (diff < pol->cpufreq_band && t != CADENCE_CPUFREQ_MIN && t != CADENCE_CPUFREQ_MAX) {
		pc->down_since = 0;
		pc->supp_hysteresis++;
		return CADENCE_CPUFREQ_HYSTERESIS;
	}
	if (t < last) {
		if (!pc->down_since)
			pc->down_since = now;
		if (now - pc->down_since < pol->cpufreq_down_hold_ns) {
			pc->supp_hold++;
			return CADENCE_CPUFREQ_HOLD;
		}
	} else {
		pc->down_since = 0;
	}
	if (pc->last_at && now - pc->last_at < pol->cpufreq_interval_ns) {
		pc->supp_rate++;
		return CADENCE_CPUFREQ_RATE;
	}
	pc->target = t;
	pc->last_at = now;
	pc->down_since = 0;
	pc->issued++;
	cpufreq_hist_add(pc, t);
	return CADENCE_CPUFREQ_ISSUED;
}

/*
 * schedutil's iowait boost, for comparisons only (the policy's
 * legacy_iowait_boost): sugov_iowait_boost() then sugov_iowait_apply() on
 * one update at @now, @iowait saying whether an iowait wake-up came since
 * the last one. The boost starts at 128 and doubles per iowait wake-up, up
 * to 1024; an update without one halves it, and under 128 it ends. More
 * than @tick_ns since the last update resets it (sugov_iowait_reset()).
 * Returns the boost to apply, 0..1024.
 */
static __always_inline u32 cpufreq_iowait_boost(struct cadence_cpu_cpufreq *pc, u64 now,
						bool iowait, u64 tick_ns)
{
	if (pc->boost && now - pc->boost_at > tick_ns) {
		pc->boost = iowait ? CADENCE_IOWAIT_BOOST_MIN : 0;
		pc->boost_pending = iowait;
	} else if (iowait && !pc->boost_pending) {
		pc->boost_pending = 1;
		if (!pc->boost)
			pc->boost = CADENCE_IOWAIT_BOOST_MIN;
		else if (pc->boost < CADENCE_CPUFREQ_MAX / 2)
			pc->boost <<= 1;
		else
			pc->boost = CADENCE_CPUFREQ_MAX;
	}
	pc->boost_at = now;

	if (!pc->boost)
		return 0;
	if (!pc->boost_pending) {
		pc->boost >>= 1;
		if (pc->boost < CADENCE_IOWAIT_BOOST_MIN) {
			pc->boost = 0;
			return 0;
		}
	}
	pc->boost_pending = 0;
	return pc->boost;
}

/* Every CPU starts at 1024 when a scheduler loads (ext.c). */
static __always_inline void cpufreq_init(struct cadence_cpu_cpufreq *pc)
{
	if (!pc->init) {
		pc->target = CADENCE_CPUFREQ_MAX;
		pc->init = 1;
	}
}

/*
 * The CPU goes idle (ops.update_idle(idle = true)): it asks for its floor,
 * the target util 0 asks for under @pol: the minimum in util and powersave
 * modes (below any floor_util), 1024 in performance mode. An idle CPU runs
 * nothing, and its target would otherwise stay until it runs again: the
 * kernel keeps a CPU's cpuperf target while it idles, and schedutil takes
 * the maximum over the CPUs of a shared policy, so one idle CPU would hold
 * its whole frequency domain at its last burst's target.
 *
 * Asked for at once, and only if it is not already in force. The down
 * hold is for loads that come and go while the CPU stays busy; a pending
 * one is dropped. The request neither waits for nor starts the rate-limit
 * interval, so the raise after the wake-up waits only for the interval
 * since the last request made while busy. At most one idle request per
 * idle period, counted in idle_floor (and in issued).
 * Returns the verdict; on CADENCE_CPUFREQ_ISSUED, pc->target is the floor.
 */
static __always_inline u32 cpufreq_idle(struct cadence_cpu_cpufreq *pc,
					const struct cadence_policy *pol)
{
	u32 floor = cpufreq_floored(pol, 0, cpufreq_target(pol, 0));

	cpufreq_init(pc);
	pc->down_since = 0;
	pc->util = 0;
	if (pc->target == floor)
		return CADENCE_CPUFREQ_SAME;
	pc->target = floor;
	pc->issued++;
	pc->idle_floor++;
	cpufreq_hist_add(pc, floor);
	return CADENCE_CPUFREQ_ISSUED;
}

/*
 * One evaluation of a CPU's target, as the scheduler makes it from
 * ops.running() and ops.tick(): the legacy boost if the policy asks for
 * it, then the deadband. @util is the CPU's invariant util (0..1024).
 */
static __always_inline u32 cpufreq_evaluate(struct cadence_cpu_cpufreq *pc,
					    const struct cadence_policy *pol, u32 util, bool iowait,
					    u64 now, u64 tick_ns)
{
	u32 boost;

	cpufreq_init(pc);
	if (util > CADENCE_CAP_SCALE)
		util = CADENCE_CAP_SCALE;
	if (pol->cpufreq_iowait_boost) {
		boost = cpufreq_iowait_boost(pc, now, iowait, tick_ns);
		if (boost > util) {
			util = boost;
			pc->iowait_boosts++;
		}
	}
	pc->util = util;
	return cpufreq_decide(pc, pol, util, now);
}

#endif /* __CADENCE_CPUFREQ_TARGET_BPF_H */
