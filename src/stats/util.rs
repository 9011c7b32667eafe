//! One CPU's utilization and frequency ratio, as the BPF `cpu_util` map
//! holds them (struct cadence_cpu_util in bpf/intf_util.h): gauges (util,
//! ratio, source) and the tick counters behind the clamped share.

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;
use crate::freq::SourceKind;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct CpuUtil {
    #[stat(
        desc = "Frequency-invariant PELT util_avg of the CPU (1024 = busy at freq_max on the biggest CPU); the total is the sum"
    )]
    pub util_avg: u64,
    #[stat(desc = "Frequency ratio at the last tick, 1024 = freq_max; the total is the mean")]
    pub freq_scale: u64,
    #[stat(desc = "Where the ratio comes from: aperf, cpuperf, inject (tests) or none")]
    pub freq_source: String,
    #[stat(desc = "Ticks that computed a ratio")]
    pub freq_ticks: u64,
    #[stat(desc = "Ticks whose ratio was clamped at 1024: the CPU ran above freq_max")]
    pub freq_clamped: u64,
    #[stat(desc = "Ticks whose reading failed (overflow, zero, unreadable event)")]
    pub freq_errors: u64,
}

/// The counters of CpuUtil, for OpenMetrics.
pub const UTIL_COUNTERS: &[(&str, &str)] = &[
    ("freq_ticks", "Ticks that computed a frequency ratio"),
    (
        "freq_clamped",
        "Ticks whose ratio was clamped at 1024: the CPU ran above freq_max",
    ),
    ("freq_errors", "Ticks whose frequency reading failed"),
];

impl CpuUtil {
    pub fn from_bpf(raw: &bpf_intf::cadence_cpu_util) -> Self {
        Self {
            util_avg: raw.avg.util_avg,
            freq_scale: raw.freq_scale as u64,
            freq_source: SourceKind::from_bpf(raw.freq_source).name().to_string(),
            freq_ticks: raw.freq_ticks,
            freq_clamped: raw.freq_clamped,
            freq_errors: raw.freq_errors,
        }
    }

    /// The counters' values, in the order of UTIL_COUNTERS.
    pub fn counters(&self) -> [u64; 3] {
        [self.freq_ticks, self.freq_clamped, self.freq_errors]
    }

    /// The machine: util summed, ratio averaged, counters summed, the
    /// source if every CPU agrees (else "mixed").
    pub fn total<'a>(cpus: impl Iterator<Item = &'a CpuUtil>) -> Self {
        let mut t = CpuUtil::default();
        let mut n = 0;
        for c in cpus {
            t.util_avg += c.util_avg;
            t.freq_scale += c.freq_scale;
            t.freq_ticks += c.freq_ticks;
            t.freq_clamped += c.freq_clamped;
            t.freq_errors += c.freq_errors;
            if n == 0 {
                t.freq_source = c.freq_source.clone();
            } else if t.freq_source != c.freq_source {
                t.freq_source = "mixed".into();
            }
            n += 1;
        }
        t.freq_scale = t.freq_scale.checked_div(n).unwrap_or(0);
        t
    }

    /// Tick counters' growth since @prev (from zero after a re-attach).
    pub fn delta(&self, prev: &Self) -> Self {
        let d = |a: u64, b: u64| a.checked_sub(b).unwrap_or(a);
        Self {
            freq_ticks: d(self.freq_ticks, prev.freq_ticks),
            freq_clamped: d(self.freq_clamped, prev.freq_clamped),
            freq_errors: d(self.freq_errors, prev.freq_errors),
            ..self.clone()
        }
    }

    /// Share of ticks clamped, in percent.
    pub fn clamped_pct(&self) -> f64 {
        if self.freq_ticks == 0 {
            0.0
        } else {
            100.0 * self.freq_clamped as f64 / self.freq_ticks as f64
        }
    }

    /// The frequency ratio in whole percent of freq_max.
    pub fn freq_pct(&self) -> u64 {
        self.freq_scale * 100 / 1024
    }

    /// "util 312 freq 87% clamped 0.0% src aperf".
    pub fn format(&self) -> String {
        format!(
            "util {} freq {}% clamped {:.1}% src {}",
            self.util_avg,
            self.freq_pct(),
            self.clamped_pct(),
            self.freq_source
        )
    }
}
