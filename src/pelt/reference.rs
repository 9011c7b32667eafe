//! The kernel's PELT integer math, one function per kernel function.

/// SCHED_CAPACITY_SHIFT: capacities and ratios are in 1/1024.
pub const CAP_SHIFT: u32 = 10;
/// LOAD_AVG_PERIOD: y^32 = 1/2.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// LOAD_AVG_MAX: fixed point of max = (max * y_inv >> 32) + 1024
/// (recomputed by `converged_max()` in the tests).
pub const LOAD_AVG_MAX: u32 = 47742;
/// UTIL_EST_WEIGHT_SHIFT: new util_est samples weigh 1/4.
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// UTIL_EST_MARGIN: 1% of capacity.
pub const UTIL_EST_MARGIN: u32 = 1024 / 100;
/// UTIL_AVG_UNCHANGED: util_est's flag bit.
pub const UTIL_AVG_UNCHANGED: u32 = 0x8000_0000;

/// runnable_avg_yN_inv[n] = (2^32 - 1) * y^n, truncated, as
/// Documentation/scheduler/sched-pelt.c generates it.
pub fn yn_inv_table() -> [u32; 32] {
    let y = 0.5f64.powf(1.0 / 32.0);
    std::array::from_fn(|n| (((1u64 << 32) - 1) as f64 * y.powi(n as i32)) as u32)
}

/// struct sched_avg.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Avg {
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u32,
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
    pub util_est: u32,
}

/// rq->clock_pelt, rq->lost_idle_time and the last clock_task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    pub clock_pelt: u64,
    pub lost_idle_time: u64,
    pub clock_task: u64,
}

pub struct Pelt {
    yn_inv: [u32; 32],
}

impl Pelt {
    pub fn new() -> Self {
        Pelt {
            yn_inv: yn_inv_table(),
        }
    }

    /// decay_load(): val * y^n, with mul_u64_u32_shr's 128-bit product.
    pub fn decay_load(&self, mut val: u64, n: u64) -> u64 {
        if n > LOAD_AVG_PERIOD * 63 {
            return 0;
        }
        let mut local_n = n as u32;
        if local_n as u64 >= LOAD_AVG_PERIOD {
            val >>= local_n / LOAD_AVG_PERIOD as u32;
            local_n %= LOAD_AVG_PERIOD as u32;
        }
        ((val as u128 * self.yn_inv[local_n as usize] as u128) >> 32) as u64
    }

    /// __accumulate_pelt_segments().
    fn segments(&self, periods: u64, d1: u32, d3: u32) -> u32 {
        let c1 = self.decay_load(d1 as u64, periods) as u32;
        let c2 = LOAD_AVG_MAX
            .wrapping_sub(self.decay_load(LOAD_AVG_MAX as u64, periods) as u32)
            .wrapping_sub(1024);
        c1.wrapping_add(c2).wrapping_add(d3)
    }

    /// accumulate_sum().
    fn accumulate(
        &self,
        mut delta: u64,
        sa: &mut Avg,
        load: u64,
        runnable: u64,
        running: bool,
    ) -> u64 {
        let mut contrib = delta as u32;
        delta += sa.period_contrib as u64;
        let periods = delta / 1024;
        if periods > 0 {
            sa.load_sum = self.decay_load(sa.load_sum, periods);
            sa.runnable_sum = self.decay_load(sa.runnable_sum, periods);
            sa.util_sum = self.decay_load(sa.util_sum as u64, periods) as u32;
            delta %= 1024;
            if load != 0 {
                contrib = self.segments(periods, 1024 - sa.period_contrib, delta as u32);
            }
        }
        sa.period_contrib = delta as u32;
        if load != 0 {
            sa.load_sum = sa.load_sum.wrapping_add(load.wrapping_mul(contrib as u64));
        }
        if runnable != 0 {
            sa.runnable_sum = sa
                .runnable_sum
                .wrapping_add(runnable.wrapping_mul(contrib as u64) << CAP_SHIFT);
        }
        if running {
            sa.util_sum = sa.util_sum.wrapping_add(contrib << CAP_SHIFT);
        }
        periods
    }

    /// ___update_load_sum().
    fn update_sum(
        &self,
        now: u64,
        sa: &mut Avg,
        load: u64,
        mut runnable: u64,
        mut running: bool,
    ) -> bool {
        let mut delta = now.wrapping_sub(sa.last_update_time);
        if (delta as i64) < 0 {
            sa.last_update_time = now;
            return false;
        }
        delta >>= 10;
        if delta == 0 {
            return false;
        }
        sa.last_update_time += delta << 10;
        if load == 0 {
            runnable = 0;
            running = false;
        }
        self.accumulate(delta, sa, load, runnable, running) != 0
    }

    /// ___update_load_avg() with get_pelt_divider().
    fn update_avg(sa: &mut Avg, weight: u64) {
        let divider = (LOAD_AVG_MAX - 1024 + sa.period_contrib) as u64;
        sa.load_avg = weight.wrapping_mul(sa.load_sum) / divider;
        sa.runnable_avg = sa.runnable_sum / divider;
        sa.util_avg = sa.util_sum as u64 / divider;
    }

    /// __update_load_avg_se() / update_rt_rq_load_avg(): true if the
    /// averages were recomputed.
    pub fn update(
        &self,
        now: u64,
        sa: &mut Avg,
        weight: u64,
        runnable: bool,
        running: bool,
    ) -> bool {
        if !self.update_sum(now, sa, runnable as u64, runnable as u64, running) {
            return false;
        }
        Self::update_avg(sa, weight);
        sa.util_est &= !UTIL_AVG_UNCHANGED;
        true
    }
}

/// cap_scale().
fn cap_scale(v: u64, scale: u32) -> u64 {
    v.wrapping_mul(scale as u64) >> CAP_SHIFT
}

impl Clock {
    /// update_rq_clock_pelt() on a busy CPU.
    pub fn busy(&mut self, now: u64, cpu_cap: u32, freq_scale: u32) {
        let mut delta = now.wrapping_sub(self.clock_task);
        if (delta as i64) < 0 {
            delta = 0;
        }
        self.clock_pelt += cap_scale(cap_scale(delta, cpu_cap), freq_scale);
        self.clock_task = now;
    }

    /// _update_idle_rq_clock_pelt().
    pub fn idle(&mut self, now: u64) {
        self.clock_task = now;
        self.clock_pelt = now;
    }

    /// update_idle_rq_clock_pelt() when the CPU goes idle.
    pub fn go_idle(&mut self, now: u64, util_sum: u32) {
        let divider = ((LOAD_AVG_MAX - 1024) << CAP_SHIFT) - LOAD_AVG_MAX;
        if util_sum >= divider {
            self.lost_idle_time = self
                .lost_idle_time
                .wrapping_add(now.wrapping_sub(self.clock_pelt));
        }
        self.idle(now);
    }

    /// rq_clock_pelt().
    pub fn now(&self) -> u64 {
        self.clock_pelt.wrapping_sub(self.lost_idle_time)
    }
}

/// util_est_update() when the task sleeps.
pub fn util_est_update(sa: &mut Avg, cpu_cap: u32) {
    let mut ewma = sa.util_est;
    if ewma & UTIL_AVG_UNCHANGED != 0 {
        return;
    }
    let dequeued = sa.util_avg as u32;
    if ewma <= dequeued {
        sa.util_est = dequeued | UTIL_AVG_UNCHANGED;
        return;
    }
    let last_ewma_diff = ewma - dequeued;
    if last_ewma_diff >= UTIL_EST_MARGIN {
        if dequeued > cpu_cap {
            return;
        }
        if dequeued.wrapping_add(UTIL_EST_MARGIN) as u64 >= sa.runnable_avg {
            ewma <<= UTIL_EST_WEIGHT_SHIFT;
            ewma -= last_ewma_diff;
            ewma >>= UTIL_EST_WEIGHT_SHIFT;
        }
    }
    sa.util_est = ewma | UTIL_AVG_UNCHANGED;
}
