//! One CPU's cpufreq target and what the deadband did, as the BPF
//! `cpu_perf` map holds them (struct cadence_cpu_perf in bpf/intf_perf.h):
//! gauges (target, util) and counters (requests, suppressions by stage,
//! boosts, the histogram of issued targets).

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

/// The counters of CpuPerf with their descriptions: the one list that the
/// sums, the deltas, the text line and OpenMetrics all follow.
pub const PERF_COUNTERS: &[(&str, &str)] = &[
    (
        "perf_issued",
        "cpufreq target requests issued (scx_bpf_cpuperf_set)",
    ),
    (
        "perf_supp_deadband",
        "Requests the floor suppressed: util under fmin/freq_max, the minimum already in force",
    ),
    (
        "perf_supp_hysteresis",
        "Requests suppressed because the target moved by less than the band",
    ),
    (
        "perf_supp_hold",
        "Requests for a lower target suppressed until it held for the hold time",
    ),
    (
        "perf_supp_rate",
        "Requests suppressed because the last was less than the interval ago",
    ),
    (
        "perf_iowait_boosts",
        "Evaluations where the legacy iowait boost raised util (legacy_iowait_boost only)",
    ),
    (
        "perf_idle_floor",
        "Requests for the floor issued as the CPU went idle (also in perf_issued)",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct CpuPerf {
    #[stat(
        desc = "cpufreq target in force, 0..1024 (the kernel's 1024 until the first request); the total is the mean"
    )]
    pub perf_target: u64,
    #[stat(desc = "Util the last evaluation saw, boost included; the total is the sum")]
    pub perf_util: u64,
    #[stat(desc = "cpufreq target requests issued (scx_bpf_cpuperf_set)")]
    pub perf_issued: u64,
    #[stat(desc = "Requests the floor suppressed (util under fmin/freq_max)")]
    pub perf_supp_deadband: u64,
    #[stat(desc = "Requests suppressed by the hysteresis band")]
    pub perf_supp_hysteresis: u64,
    #[stat(desc = "Requests for a lower target held back by the hold time")]
    pub perf_supp_hold: u64,
    #[stat(desc = "Requests suppressed by the rate limit")]
    pub perf_supp_rate: u64,
    #[stat(desc = "Evaluations where the legacy iowait boost raised util")]
    pub perf_iowait_boosts: u64,
    #[stat(desc = "Requests for the floor issued as the CPU went idle (also in perf_issued)")]
    pub perf_idle_floor: u64,
    #[stat(desc = "Issued targets in 16 buckets of 64 (0-63, 64-127, ..., 960-1024)")]
    pub perf_hist: Vec<u64>,
}

impl CpuPerf {
    pub fn from_bpf(raw: &bpf_intf::cadence_cpu_perf) -> Self {
        Self {
            // Before its first evaluation a CPU is at the kernel's 1024.
            perf_target: if raw.init != 0 {
                raw.target as u64
            } else {
                1024
            },
            perf_util: raw.util as u64,
            perf_issued: raw.issued,
            perf_supp_deadband: raw.supp_deadband,
            perf_supp_hysteresis: raw.supp_hysteresis,
            perf_supp_hold: raw.supp_hold,
            perf_supp_rate: raw.supp_rate,
            perf_iowait_boosts: raw.iowait_boosts,
            perf_idle_floor: raw.idle_floor,
            perf_hist: raw.hist.to_vec(),
        }
    }

    /// The counters' values, in the order of PERF_COUNTERS.
    pub fn counters(&self) -> [u64; 7] {
        [
            self.perf_issued,
            self.perf_supp_deadband,
            self.perf_supp_hysteresis,
            self.perf_supp_hold,
            self.perf_supp_rate,
            self.perf_iowait_boosts,
            self.perf_idle_floor,
        ]
    }

    fn counters_mut(&mut self) -> [&mut u64; 7] {
        [
            &mut self.perf_issued,
            &mut self.perf_supp_deadband,
            &mut self.perf_supp_hysteresis,
            &mut self.perf_supp_hold,
            &mut self.perf_supp_rate,
            &mut self.perf_iowait_boosts,
            &mut self.perf_idle_floor,
        ]
    }

    /// The machine: counters and histograms summed, util summed, target
    /// averaged.
    pub fn total<'a>(cpus: impl Iterator<Item = &'a CpuPerf>) -> Self {
        let mut t = CpuPerf {
            perf_hist: vec![0; bpf_intf::cadence_perf_consts_CADENCE_PERF_HIST_BUCKETS as usize],
            ..Default::default()
        };
        let mut n = 0;
        for c in cpus {
            t.perf_target += c.perf_target;
            t.perf_util += c.perf_util;
            for (sum, v) in t.counters_mut().into_iter().zip(c.counters()) {
                *sum += v;
            }
            for (sum, v) in t.perf_hist.iter_mut().zip(&c.perf_hist) {
                *sum += v;
            }
            n += 1;
        }
        t.perf_target = t.perf_target.checked_div(n).unwrap_or(0);
        t
    }

    /// Counters' growth since @prev (from zero after a re-attach).
    pub fn delta(&self, prev: &Self) -> Self {
        let d = |a: u64, b: u64| a.checked_sub(b).unwrap_or(a);
        let mut out = self.clone();
        for (o, p) in out.counters_mut().into_iter().zip(prev.counters()) {
            *o = d(*o, p);
        }
        for (o, p) in out.perf_hist.iter_mut().zip(&prev.perf_hist) {
            *o = d(*o, *p);
        }
        out
    }

    /// "perf 512 req 40 supp db 3 hy 10 hold 2 rate 1 idle 5".
    pub fn format(&self) -> String {
        let mut s = format!(
            "perf {} req {} supp db {} hy {} hold {} rate {}",
            self.perf_target,
            self.perf_issued,
            self.perf_supp_deadband,
            self.perf_supp_hysteresis,
            self.perf_supp_hold,
            self.perf_supp_rate
        );
        if self.perf_idle_floor > 0 {
            s += &format!(" idle {}", self.perf_idle_floor);
        }
        if self.perf_iowait_boosts > 0 {
            s += &format!(" boost {}", self.perf_iowait_boosts);
        }
        s
    }
}

/// Reads one CPU's raw `cpu_perf` value.
pub fn parse_raw_perf(raw: &[u8]) -> Option<bpf_intf::cadence_cpu_perf> {
    if raw.len() < std::mem::size_of::<bpf_intf::cadence_cpu_perf>() {
        return None;
    }
    // SAFETY: length checked; plain integers; read_unaligned needs no alignment.
    Some(unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(issued: u64, target: u32) -> bpf_intf::cadence_cpu_perf {
        // SAFETY: plain integers; all zeroes is valid.
        let mut r: bpf_intf::cadence_cpu_perf = unsafe { std::mem::zeroed() };
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
            CpuPerf::from_bpf(&raw(3, 100)),
            CpuPerf::from_bpf(&raw(5, 300)),
        ];
        let t = CpuPerf::total(cpus.iter());
        assert_eq!(
            (t.perf_issued, t.perf_supp_hold, t.perf_target),
            (8, 16, 200)
        );
        assert_eq!(t.perf_hist[3], 8);
        assert_eq!(t.perf_hist.len(), 16);
    }

    #[test]
    fn delta_counts_growth_and_keeps_gauges() {
        let before = CpuPerf::from_bpf(&raw(3, 100));
        let after = CpuPerf::from_bpf(&raw(10, 700));
        let d = after.delta(&before);
        assert_eq!((d.perf_issued, d.perf_hist[3], d.perf_target), (7, 7, 700));
        // After a re-attach the counters start again from zero.
        assert_eq!(before.delta(&after).perf_issued, 3);
    }

    #[test]
    fn a_cpu_not_yet_evaluated_is_at_the_kernels_1024() {
        // SAFETY: plain integers; all zeroes is valid.
        let fresh: bpf_intf::cadence_cpu_perf = unsafe { std::mem::zeroed() };
        assert_eq!(CpuPerf::from_bpf(&fresh).perf_target, 1024);
        assert!(
            CpuPerf::from_bpf(&raw(1, 0))
                .format()
                .starts_with("perf 0 req 1")
        );
    }
}
