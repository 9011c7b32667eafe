//! One CPU's cpufreq target and what the deadband did, as the BPF
//! `cpu_cpufreq` map holds them (struct cadence_cpu_cpufreq in bpf/intf_cpufreq.h):
//! gauges (target, util) and counters (requests, suppressions by stage,
//! boosts, the histogram of issued targets).

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

/// The counters of CpufreqCounters with their descriptions: the one list that the
/// sums, the deltas, the text line and OpenMetrics all follow.
pub const CPUFREQ_COUNTERS: &[(&str, &str)] = &[
    (
        "cpufreq_issued",
        "cpufreq target requests issued (scx_bpf_cpuperf_set)",
    ),
    (
        "cpufreq_supp_deadband",
        "Requests the floor suppressed: util under fmin/freq_max, the minimum already in force",
    ),
    (
        "cpufreq_supp_hysteresis",
        "Requests suppressed because the target moved by less than the band",
    ),
    (
        "cpufreq_supp_hold",
        "Requests for a lower target suppressed until it held for the hold time",
    ),
    (
        "cpufreq_supp_rate",
        "Requests suppressed because the last was less than the interval ago",
    ),
    (
        "cpufreq_iowait_boosts",
        "Evaluations where the legacy iowait boost raised util (legacy_iowait_boost only)",
    ),
    (
        "cpufreq_idle_floor",
        "Requests for the floor issued as the CPU went idle (also in cpufreq_issued)",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct CpufreqCounters {
    #[stat(
        desc = "cpufreq target in force, 0..1024 (the kernel's 1024 until the first request); the total is the mean"
    )]
    pub cpufreq_target: u64,
    #[stat(desc = "Util the last evaluation saw, boost included; the total is the sum")]
    pub cpufreq_util: u64,
    #[stat(desc = "cpufreq target requests issued (scx_bpf_cpuperf_set)")]
    pub cpufreq_issued: u64,
    #[stat(desc = "Requests the floor suppressed (util under fmin/freq_max)")]
    pub cpufreq_supp_deadband: u64,
    #[stat(desc = "Requests suppressed by the hysteresis band")]
    pub cpufreq_supp_hysteresis: u64,
    #[stat(desc = "Requests for a lower target held back by the hold time")]
    pub cpufreq_supp_hold: u64,
    #[stat(desc = "Requests suppressed by the rate limit")]
    pub cpufreq_supp_rate: u64,
    #[stat(desc = "Evaluations where the legacy iowait boost raised util")]
    pub cpufreq_iowait_boosts: u64,
    #[stat(desc = "Requests for the floor issued as the CPU went idle (also in cpufreq_issued)")]
    pub cpufreq_idle_floor: u64,
    #[stat(desc = "Issued targets in 16 buckets of 64 (0-63, 64-127, ..., 960-1024)")]
    pub cpufreq_hist: Vec<u64>,
}

impl CpufreqCounters {
    pub fn from_bpf(raw: &bpf_intf::cadence_cpu_cpufreq) -> Self {
        Self {
            // Before its first evaluation a CPU is at the kernel's 1024.
            cpufreq_target: if raw.init != 0 {
                raw.target as u64
            } else {
                1024
            },
            cpufreq_util: raw.util as u64,
            cpufreq_issued: raw.issued,
            cpufreq_supp_deadband: raw.supp_deadband,
            cpufreq_supp_hysteresis: raw.supp_hysteresis,
            cpufreq_supp_hold: raw.supp_hold,
            cpufreq_supp_rate: raw.supp_rate,
            cpufreq_iowait_boosts: raw.iowait_boosts,
            cpufreq_idle_floor: raw.idle_floor,
            cpufreq_hist: raw.hist.to_vec(),
        }
    }

    /// The counters' values, in the order of CPUFREQ_COUNTERS.
    pub fn counters(&self) -> [u64; 7] {
        [
            self.cpufreq_issued,
            self.cpufreq_supp_deadband,
            self.cpufreq_supp_hysteresis,
            self.cpufreq_supp_hold,
            self.cpufreq_supp_rate,
            self.cpufreq_iowait_boosts,
            self.cpufreq_idle_floor,
        ]
    }

    fn counters_mut(&mut self) -> [&mut u64; 7] {
        [
            &mut self.cpufreq_issued,
            &mut self.cpufreq_supp_deadband,
            &mut self.cpufreq_supp_hysteresis,
            &mut self.cpufreq_supp_hold,
            &mut self.cpufreq_supp_rate,
            &mut self.cpufreq_iowait_boosts,
            &mut self.cpufreq_idle_floor,
        ]
    }

    /// The machine: counters and histograms summed, util summed, target
    /// averaged.
    pub fn total<'a>(cpus: impl Iterator<Item = &'a CpufreqCounters>) -> Self {
        let mut t = CpufreqCounters {
            cpufreq_hist: vec![
                0;
                bpf_intf::cadence_cpufreq_consts_CADENCE_CPUFREQ_HIST_BUCKETS
                    as usize
            ],
            ..Default::default()
        };
        let mut n = 0;
        for c in cpus {
            t.cpufreq_target += c.cpufreq_target;
            t.cpufreq_util += c.cpufreq_util;
            for (sum, v) in t.counters_mut().into_iter().zip(c.counters()) {
                *sum += v;
            }
            for (sum, v) in t.cpufreq_hist.iter_mut().zip(&c.cpufreq_hist) {
                *sum += v;
            }
            n += 1;
        }
        t.cpufreq_target = t.cpufreq_target.checked_div(n).unwrap_or(0);
        t
    }

    /// Counters' growth since @prev (from zero after a re-attach).
    pub fn delta(&self, prev: &Self) -> Self {
        let d = |a: u64, b: u64| a.checked_sub(b).unwrap_or(a);
        let mut out = self.clone();
        for (o, p) in out.counters_mut().into_iter().zip(prev.counters()) {
            *o = d(*o, p);
        }
        for (o, p) in out.cpufreq_hist.iter_mut().zip(&prev.cpufreq_hist) {
            *o = d(*o, *p);
        }
        out
    }

    /// "cpufreq 512 req 40 supp db 3 hy 10 hold 2 rate 1 idle 5".
    pub fn format(&self) -> String {
        let mut s = format!(
            "cpufreq {} req {} supp db {} hy {} hold {} rate {}",
            self.cpufreq_target,
            self.cpufreq_issued,
            self.cpufreq_supp_deadband,
            self.cpufreq_supp_hysteresis,
            self.cpufreq_supp_hold,
            self.cpufreq_supp_rate
        );
        if self.cpufreq_idle_floor > 0 {
            s += &format!(" idle {}", self.cpufreq_idle_floor);
        }
        if self.cpufreq_iowait_boosts > 0 {
            s += &format!(" boost {}", self.cpufreq_iowait_boosts);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(issued: u64, target: u32) -> bpf_intf::cadence_cpu_cpufreq {
        // SAFETY: plain integers; all zeroes is valid.
        let mut r: bpf_intf::cadence_cpu_cpufreq = unsafe { std::mem::zeroed() };
        r.init = 1;
        r.target = target;
        r.issued = issued;
        r.supp_hold = 2 * issued;
        r.hist[3] = issued;
        r
    }

    #[test]
    fn total_sums_counters_and_averages_the_target() {
        let cpus = [
            CpufreqCounters::from_bpf(&raw(3, 100)),
            CpufreqCounters::from_bpf(&raw(5, 300)),
        ];
        let t = CpufreqCounters::total(cpus.iter());
        assert_eq!(
            (t.cpufreq_issued, t.cpufreq_supp_hold, t.cpufreq_target),
            (8, 16, 200)
        );
        assert_eq!(t.cpufreq_hist[3], 8);
        assert_eq!(t.cpufreq_hist.len(), 16);
    }

    #[test]
    fn delta_counts_growth_and_keeps_gauges() {
        let before = CpufreqCounters::from_bpf(&raw(3, 100));
        let after = CpufreqCounters::from_bpf(&raw(10, 700));
        let d = after.delta(&before);
        assert_eq!(
            (d.cpufreq_issued, d.cpufreq_hist[3], d.cpufreq_target),
            (7, 7, 700)
        );
        // After a re-attach the counters start again from zero.
        assert_eq!(before.delta(&after).cpufreq_issued, 3);
    }

    #[test]
    fn a_cpu_not_yet_evaluated_is_at_the_kernels_1024() {
        // SAFETY: plain integers; all zeroes is valid.
        let fresh: bpf_intf::cadence_cpu_cpufreq = unsafe { std::mem::zeroed() };
        assert_eq!(CpufreqCounters::from_bpf(&fresh).cpufreq_target, 1024);
        assert!(
            CpufreqCounters::from_bpf(&raw(1, 0))
                .format()
                .starts_with("cpufreq 0 req 1")
        );
    }
}
