//! The cpufreq target and deadband, as bpf/cpufreq_target.bpf.h specifies them,
//! in plain Rust. Constants are the kernel's (see bpf/intf_cpufreq.h).

use crate::bpf_intf;

/// SCX_CPUPERF_ONE: the highest target the kernel accepts.
pub const CPUFREQ_MAX: u32 = 1024;
/// map_util_perf(): util + util / 4, i.e. 125%.
const SCHEDUTIL_MARGIN_PCT: u64 = 125;
/// IOWAIT_BOOST_MIN: SCHED_CAPACITY_SCALE / 8.
pub const IOWAIT_BOOST_MIN: u32 = 128;

/// What one evaluation decided (enum cadence_cpufreq_verdict).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Issued = 0,
    Same = 1,
    Deadband = 2,
    Hysteresis = 3,
    Hold = 4,
    Rate = 5,
}

/// One CPU's state: the fields of struct cadence_cpu_cpufreq.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpufreqState {
    pub last_at: u64,
    pub down_since: u64,
    pub boost_at: u64,
    pub target: u32,
    pub util: u32,
    pub boost: u32,
    pub boost_pending: bool,
    pub init: bool,
    pub issued: u64,
    pub supp_deadband: u64,
    pub supp_hysteresis: u64,
    pub supp_hold: u64,
    pub supp_rate: u64,
    pub iowait_boosts: u64,
    pub idle_floor: u64,
    pub hist: [u64; 16],
}

impl CpufreqState {
    pub fn from_bpf(c: &bpf_intf::cadence_cpu_cpufreq) -> Self {
        Self {
            last_at: c.last_at,
            down_since: c.down_since,
            boost_at: c.boost_at,
            target: c.target,
            util: c.util,
            boost: c.boost,
            boost_pending: c.boost_pending != 0,
            init: c.init != 0,
            issued: c.issued,
            supp_deadband: c.supp_deadband,
            supp_hysteresis: c.supp_hysteresis,
            supp_hold: c.supp_hold,
            supp_rate: c.supp_rate,
            iowait_boosts: c.iowait_boosts,
            idle_floor: c.idle_floor,
            hist: c.hist,
        }
    }
}

/// The target @util asks for under @pol, before the deadband.
pub fn target(pol: &bpf_intf::cadence_policy, util: u32) -> u32 {
    match pol.cpufreq_mode {
        1 => CPUFREQ_MAX,
        2 => 0,
        _ => {
            let util = util.min(1024) as u64;
            let t = util * pol.cpufreq_headroom_pct as u64 * pol.cpufreq_scale as u64
                / (SCHEDUTIL_MARGIN_PCT * 1024);
            t.min(CPUFREQ_MAX as u64) as u32
        }
    }
}

/// The deadband: whether @t (after the floor; @raw before it) is asked for.
fn decide(c: &mut CpufreqState, pol: &bpf_intf::cadence_policy, util: u32, now: u64) -> Verdict {
    let raw = target(pol, util);
    let floored = pol.cpufreq_mode == 0 && util < pol.cpufreq_floor_util;
    let t = if floored { 0 } else { raw };
    let last = c.target;
    if t == last {
        c.down_since = 0;
        if raw != last {
            c.supp_deadband += 1;
            return Verdict::Deadband;
        }
        return Verdict::Same;
    }
    if t.abs_diff(last) < pol.cpufreq_band && t != 0 && t != CPUFREQ_MAX {
        c.down_since = 0;
        c.supp_hysteresis += 1;
        return Verdict::Hysteresis;
    }
    if t < last {
        if c.down_since == 0 {
            c.down_since = now;
        }
        if now - c.down_since < pol.cpufreq_down_hold_ns {
            c.supp_hold += 1;
            return Verdict::Hold;
        }
    } else {
        c.down_since = 0;
    }
    if c.last_at != 0 && now - c.last_at < pol.cpufreq_interval_ns {
        c.supp_rate += 1;
        return Verdict::Rate;
    }
    c.target = t;
    c.last_at = now;
    c.down_since = 0;
    c.issued += 1;
    c.hist[((t >> 6) as usize).min(15)] += 1;
    Verdict::Issued
}

/// schedutil's sugov_iowait_boost() + sugov_iowait_apply() on one update.
pub fn iowait_boost(c: &mut CpufreqState, now: u64, iowait: bool, tick_ns: u64) -> u32 {
    if c.boost != 0 && now - c.boost_at > tick_ns {
        // sugov_iowait_reset(): idle for more than a tick.
        c.boost = if iowait { IOWAIT_BOOST_MIN } else { 0 };
        c.boost_pending = iowait;
    } else if iowait && !c.boost_pending {
        c.boost_pending = true;
        c.boost = if c.boost == 0 {
            IOWAIT_BOOST_MIN
        } else {
            (c.boost * 2).min(CPUFREQ_MAX)
        };
    }
    c.boost_at = now;
    if c.boost == 0 {
        return 0;
    }
    if !c.boost_pending {
        c.boost /= 2;
        if c.boost < IOWAIT_BOOST_MIN {
            c.boost = 0;
            return 0;
        }
    }
    c.boost_pending = false;
    c.boost
}

/// One evaluation, as ops.running() / ops.tick() make it.
pub fn evaluate(
    c: &mut CpufreqState,
    pol: &bpf_intf::cadence_policy,
    util: u32,
    iowait: bool,
    now: u64,
    tick_ns: u64,
) -> Verdict {
    if !c.init {
        c.target = CPUFREQ_MAX;
        c.init = true;
    }
    let mut util = util.min(1024);
    if pol.cpufreq_iowait_boost != 0 {
        let boost = iowait_boost(c, now, iowait, tick_ns);
        if boost > util {
            util = boost;
            c.iowait_boosts += 1;
        }
    }
    c.util = util;
    decide(c, pol, util, now)
}

/// The CPU goes idle: it asks for what util 0 asks for, at once.
pub fn idle(c: &mut CpufreqState, pol: &bpf_intf::cadence_policy) -> Verdict {
    if !c.init {
        c.target = CPUFREQ_MAX;
        c.init = true;
    }
    let floor = target(pol, 0);
    c.down_since = 0;
    c.util = 0;
    if c.target == floor {
        return Verdict::Same;
    }
    c.target = floor;
    c.issued += 1;
    c.idle_floor += 1;
    c.hist[((floor >> 6) as usize).min(15)] += 1;
    Verdict::Issued
}
