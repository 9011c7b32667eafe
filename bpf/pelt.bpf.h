/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PELT, the kernel's per-entity load tracking (kernel/sched/pelt.c and
 * pelt.h), in BPF with the kernel's integer math: same units, same table,
 * same rounding. No kfuncs here, only arithmetic on the structs of
 * intf_util.h, so the syscall test programs (pelt_test.bpf.c) run exactly
 * this code against the Rust reference in src/pelt/.
 *
 * Invariance model. This follows today's kernel (v5.1 and later), not the
 * seed's (v5.4 x86 patch over the pre-5.1 PELT). The seed scaled each
 * contribution by the frequency ratio r, so a CPU-bound task converges to
 * r * 1024 and can never look bigger than r: the "known limitation".
 * Here, as in the kernel, the CPU's PELT clock runs at capacity x frequency
 * while the CPU is busy; contributions are not scaled. A task that runs all
 * the time therefore still converges to 1024, only more slowly, and a task
 * that runs a fixed amount of work per period shows the same util at any
 * frequency (its run time grows as its clock slows). When the CPU goes
 * idle its PELT clock catches up with the task clock, so idle time decays
 * signals at full speed; if the CPU was saturated (util_sum at its maximum)
 * the gap is "lost idle time" and is not counted as idle at all.
 */
#ifndef __CADENCE_PELT_BPF_H
#define __CADENCE_PELT_BPF_H

/*
 * runnable_avg_yN_inv[n] = (2^32 - 1) * y^n with y^32 = 1/2, truncated:
 * kernel/sched/sched-pelt.h, as Documentation/scheduler/sched-pelt.c
 * generates it. src/pelt/ regenerates it and checks every entry.
 */
static const u32 pelt_yn_inv[CADENCE_LOAD_AVG_PERIOD] = {
	0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb,
	0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9,
	0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9,
	0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a,
	0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
};

/*
 * mul_u64_u32_shr(a, mul, 32): the low 64 bits of (a * mul) >> 32 without
 * 128-bit arithmetic, which BPF lacks. Splitting a = hi * 2^32 + lo gives
 * hi * mul + (lo * mul >> 32) exactly: hi * mul * 2^32 has no bits below
 * 32, and wrapping u64 arithmetic keeps the same low 64 bits.
 */
static __always_inline u64 pelt_mul_shr32(u64 a, u32 mul)
{
	return (a >> 32) * mul + (((a & 0xffffffffULL) * mul) >> 32);
}

/* decay_load(): @val * y^@n. */
static __always_inline u64 pelt_decay_load(u64 val, u64 n)
{
	u32 local_n;

	if (n > CADENCE_PELT_DECAY_CUTOFF)
		return 0;
	local_n = n;
	if (local_n >= CADENCE_LOAD_AVG_PERIOD) {
		val >>= local_n / CADENCE_LOAD_AVG_PERIOD;
		local_n %= CADENCE_LOAD_AVG_PERIOD;
	}
	/* local_n < 32 here; the mask tells the verifier so. */
	return pelt_mul_shr32(val, pelt_yn_inv[local_n & (CADENCE_LOAD_AVG_PERIOD - 1)]);
}

/*
 * __accumulate_pelt_segments(): the contribution of d1 (the rest of the
 * first period), the @periods - 1 full periods, and d3 (the start of the
 * current one), each decayed to now.
 */
static __always_inline u32 pelt_segments(u64 periods, u32 d1, u32 d3)
{
	u32 c1, c2, c3 = d3;

	c1 = pelt_decay_load((u64)d1, periods);
	c2 = CADENCE_LOAD_AVG_MAX - pelt_decay_load(CADENCE_LOAD_AVG_MAX, periods) - 1024;
	return c1 + c2 + c3;
}

/* accumulate_sum(): decay the sums over @delta (1024 ns units), then add. */
static __always_inline u64 pelt_accumulate(u64 delta, struct cadence_pelt_avg *sa, u64 load,
					   u64 runnable, int running)
{
	u32 contrib = (u32)delta;
	u64 periods;

	delta += sa->period_contrib;
	periods = delta / 1024;
	if (periods) {
		sa->load_sum = pelt_decay_load(sa->load_sum, periods);
		sa->runnable_sum = pelt_decay_load(sa->runnable_sum, periods);
		sa->util_sum = pelt_decay_load((u64)sa->util_sum, periods);
		delta %= 1024;
		/* As in the kernel: without load, contrib stays the raw delta. */
		if (load)
			contrib = pelt_segments(periods, 1024 - sa->period_contrib, delta);
	}
	sa->period_contrib = delta;
	if (load)
		sa->load_sum += load * contrib;
	if (runnable)
		sa->runnable_sum += runnable * contrib << CADENCE_CAP_SHIFT;
	if (running)
		sa->util_sum += contrib << CADENCE_CAP_SHIFT;
	return periods;
}

/*
 * ___update_load_sum(): bring @sa to @now (PELT clock, ns). True when a
 * period boundary was crossed, i.e. when the averages must be recomputed.
 */
static __always_inline bool pelt_update_sum(u64 now, struct cadence_pelt_avg *sa, u64 load,
					    u64 runnable, int running)
{
	u64 delta = now - sa->last_update_time;

	/* The clock went backwards: restart from @now. */
	if ((s64)delta < 0) {
		sa->last_update_time = now;
		return false;
	}
	/* 1024 ns units; the remainder waits for the next update. */
	delta >>= 10;
	if (!delta)
		return false;
	sa->last_update_time += delta << 10;
	if (!load)
		runnable = running = 0;
	return pelt_accumulate(delta, sa, load, runnable, running) != 0;
}

/*
 * ___update_load_avg() with get_pelt_divider(): the averages are the sums
 * over LOAD_AVG_MAX - 1024 + period_contrib, the largest sum possible at
 * this point of the period. @weight multiplies load_avg as se_weight() does.
 */
static __always_inline void pelt_update_avg(struct cadence_pelt_avg *sa, u64 weight)
{
	u32 divider = CADENCE_LOAD_AVG_MAX - 1024 + sa->period_contrib;

	sa->load_avg = weight * sa->load_sum / divider;
	sa->runnable_avg = sa->runnable_sum / divider;
	sa->util_avg = sa->util_sum / divider;
}

/*
 * __update_load_avg_se() for a task, or update_rt_rq_load_avg() for a CPU
 * (load = runnable = running): sums, then averages when a period ended,
 * then clear UTIL_AVG_UNCHANGED so util_est knows util_avg moved.
 */
static __always_inline bool pelt_update(u64 now, struct cadence_pelt_avg *sa, u64 weight,
					bool runnable, bool running)
{
	if (!pelt_update_sum(now, sa, runnable, runnable, running))
		return false;
	pelt_update_avg(sa, weight);
	sa->util_est &= ~CADENCE_UTIL_AVG_UNCHANGED;
	return true;
}

/* cap_scale(): @v * @scale / 1024. */
static __always_inline u64 pelt_cap_scale(u64 v, u32 scale)
{
	return (v * scale) >> CADENCE_CAP_SHIFT;
}

/*
 * update_rq_clock_pelt() on a busy CPU: the time since the last update
 * counts at capacity x frequency.
 */
static __always_inline void pelt_clock_busy(struct cadence_pelt_clock *clk, u64 now, u32 cpu_cap,
					    u32 freq_scale)
{
	u64 delta = now - clk->clock_task;

	if ((s64)delta < 0)
		delta = 0;
	delta = pelt_cap_scale(delta, cpu_cap);
	delta = pelt_cap_scale(delta, freq_scale);
	clk->clock_pelt += delta;
	clk->clock_task = now;
}

/* _update_idle_rq_clock_pelt(): an idle CPU's PELT clock is its task clock. */
static __always_inline void pelt_clock_idle(struct cadence_pelt_clock *clk, u64 now)
{
	clk->clock_task = now;
	clk->clock_pelt = now;
}

/*
 * update_idle_rq_clock_pelt(), when the CPU goes idle at @now: a CPU whose
 * util_sum reached its maximum had no idle time to give; the time its PELT
 * clock is behind is lost idle time, not idle time.
 */
static __always_inline void pelt_clock_go_idle(struct cadence_pelt_clock *clk, u64 now,
					       u32 util_sum)
{
	/* ((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX */
	u32 divider = ((CADENCE_LOAD_AVG_MAX - 1024) << CADENCE_CAP_SHIFT) - CADENCE_LOAD_AVG_MAX;

	if (util_sum >= divider)
		clk->lost_idle_time += now - clk->clock_pelt;
	pelt_clock_idle(clk, now);
}

/* rq_clock_pelt(): the clock that signals on this CPU are updated with. */
static __always_inline u64 pelt_clock_now(const struct cadence_pelt_clock *clk)
{
	return clk->clock_pelt - clk->lost_idle_time;
}

/*
 * util_est_update() when a task sleeps: the EWMA jumps up to util_avg, and
 * moves 1/4 of the way down, unless within the 1% margin, unless util_avg
 * exceeds the CPU's capacity (no idle time seen: no conclusion), unless the
 * task did not get the CPU time it wanted (runnable well above util).
 */
static __always_inline void pelt_util_est_update(struct cadence_pelt_avg *sa, u32 cpu_cap)
{
	u32 ewma = sa->util_est, dequeued, last_ewma_diff;

	if (ewma & CADENCE_UTIL_AVG_UNCHANGED)
		return;
	dequeued = sa->util_avg;
	if (ewma <= dequeued) {
		ewma = dequeued;
		goto done;
	}
	last_ewma_diff = ewma - dequeued;
	if (last_ewma_diff < CADENCE_UTIL_EST_MARGIN)
		goto done;
	if (dequeued > cpu_cap)
		return;
	if (dequeued + CADENCE_UTIL_EST_MARGIN < sa->runnable_avg)
		goto done;
	ewma <<= CADENCE_UTIL_EST_WEIGHT_SHIFT;
	ewma -= last_ewma_diff;
	ewma >>= CADENCE_UTIL_EST_WEIGHT_SHIFT;
done:
	sa->util_est = ewma | CADENCE_UTIL_AVG_UNCHANGED;
}

/* task_util_est(): what the task is expected to need when it wakes. */
static __always_inline u32 pelt_util_est(const struct cadence_pelt_avg *sa)
{
	u32 est = sa->util_est & ~CADENCE_UTIL_AVG_UNCHANGED;

	return est > sa->util_avg ? est : (u32)sa->util_avg;
}

#endif /* __CADENCE_PELT_BPF_H */
