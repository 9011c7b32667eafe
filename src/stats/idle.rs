//! One CPU's idle learner counters, as the BPF `idle_cpu` map holds them
//! (struct cadence_idle_cpu in bpf/intf_idle.h): periods scored, the rare
//! anomalies, and every score bucket (seed 003's table:
//! src/idle/score_table.rs).

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;
use crate::idle::period::{DIFFS, IDEALS, MISSES, SOURCES, Scores};

/// The counters with their descriptions, in the order of the fields.
pub const IDLE_COUNTERS: &[(&str, &str)] = &[
    (
        "idle_periods",
        "Idle periods scored and learned from (power:cpu_idle entry to exit)",
    ),
    (
        "idle_lost_exits",
        "Idle entries that found the previous entry without its exit",
    ),
    (
        "idle_overtaken",
        "Write-backs of a CPU's learning dropped because ctl idle load/reset wrote the table meanwhile",
    ),
    (
        "idle_record_drops",
        "Records `idle record` lost: the ring buffer was full",
    ),
    (
        "idle_stray_misses",
        "The kernel's cpu_idle_miss verdicts that matched no ended period of the CPU, or another state than it entered",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct IdleCounters {
    #[stat(desc = "Idle periods scored and learned from (power:cpu_idle entry to exit)")]
    pub idle_periods: u64,
    #[stat(desc = "Idle entries that found the previous entry without its exit")]
    pub idle_lost_exits: u64,
    #[stat(desc = "Idle exits not learned from: ctl idle load/reset wrote the table meanwhile")]
    pub idle_overtaken: u64,
    #[stat(desc = "Records idle record lost: the ring buffer was full")]
    pub idle_record_drops: u64,
    #[stat(
        desc = "The kernel's cpu_idle_miss verdicts that matched no ended period of the CPU, or another state than it entered"
    )]
    pub idle_stray_misses: u64,
    #[stat(
        desc = "Score counts, source (teo, per_choice, seed, kernel) x ideal (by residency, by residency + exit latency) x (chosen - ideal + 9), then the kernel's choices again for the periods it judged a miss, verdict (above, below) x ideal x (chosen - ideal + 9), flattened in that order"
    )]
    pub idle_scores: Vec<u64>,
}

impl IdleCounters {
    pub fn from_bpf(raw: &bpf_intf::cadence_idle_cpu) -> Self {
        Self {
            idle_periods: raw.periods,
            idle_lost_exits: raw.lost_exits,
            idle_overtaken: raw.overtaken,
            idle_record_drops: raw.record_drops,
            idle_stray_misses: raw.stray_misses,
            idle_scores: Scores::from_bpf(&raw.scores).flat().copied().collect(),
        }
    }

    fn counters_mut(&mut self) -> [&mut u64; 5] {
        [
            &mut self.idle_periods,
            &mut self.idle_lost_exits,
            &mut self.idle_overtaken,
            &mut self.idle_record_drops,
            &mut self.idle_stray_misses,
        ]
    }

    /// The machine: everything summed.
    pub fn total<'a>(cpus: impl Iterator<Item = &'a IdleCounters>) -> Self {
        let mut t = IdleCounters {
            idle_scores: vec![0; (SOURCES + MISSES) * IDEALS * DIFFS],
            ..Default::default()
        };
        for c in cpus {
            for (sum, v) in t.counters_mut().into_iter().zip(c.values()) {
                *sum = sum.wrapping_add(v);
            }
            for (sum, v) in t.idle_scores.iter_mut().zip(&c.idle_scores) {
                *sum = sum.wrapping_add(*v);
            }
        }
        t
    }

    /// Growth since @prev (from zero after a re-attach, as the others).
    pub fn delta(&self, prev: &Self) -> Self {
        let mut out = self.clone();
        for (o, v) in out.counters_mut().into_iter().zip(prev.values()) {
            *o = o.checked_sub(v).unwrap_or(*o);
        }
        for (o, v) in out.idle_scores.iter_mut().zip(&prev.idle_scores) {
            *o = o.checked_sub(*v).unwrap_or(*o);
        }
        out
    }

    /// The scores as the score table takes them.
    pub fn scores(&self) -> Scores {
        let mut sc = Scores::default();
        let mut it = self.idle_scores.iter();
        for b in sc.flat_mut() {
            *b = it.next().copied().unwrap_or(0);
        }
        sc
    }

    pub fn values(&self) -> [u64; 5] {
        [
            self.idle_periods,
            self.idle_lost_exits,
            self.idle_overtaken,
            self.idle_record_drops,
            self.idle_stray_misses,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idle::reference::{BY_EXIT, BY_RESIDENCY, SEED, TEO};
    use crate::idle::table::MAX;

    fn raw(periods: u64) -> bpf_intf::cadence_idle_cpu {
        // SAFETY: a bindgen struct of integers: all zeroes is valid.
        let mut r: bpf_intf::cadence_idle_cpu = unsafe { std::mem::zeroed() };
        r.periods = periods;
        r.scores.n[TEO][BY_RESIDENCY][MAX - 1] = periods;
        r.scores.n[SEED][BY_RESIDENCY][MAX] = periods;
        r.scores.miss[1][BY_EXIT][MAX - 2] = periods;
        r
    }

    #[test]
    fn buckets_keep_their_place_through_the_flat_list() {
        let c = IdleCounters::from_bpf(&raw(5));
        // 4 sources and 2 verdicts x 2 ideals x 19 differences (-9..=9).
        assert_eq!(c.idle_scores.len(), 228);
        let sc = c.scores();
        assert_eq!(sc.n[TEO][BY_RESIDENCY][MAX - 1], 5);
        assert_eq!(sc.n[SEED][BY_RESIDENCY][MAX], 5);
        assert_eq!(sc.n.iter().flatten().flatten().sum::<u64>(), 10);
        assert_eq!(sc.miss[1][BY_EXIT][MAX - 2], 5);
        assert_eq!(sc.flat().sum::<u64>(), 15);
    }

    #[test]
    fn total_sums_and_delta_counts_growth() {
        let (a, b) = (
            IdleCounters::from_bpf(&raw(5)),
            IdleCounters::from_bpf(&raw(7)),
        );
        let t = IdleCounters::total([&a, &b].into_iter());
        assert_eq!(t.idle_periods, 12);
        assert_eq!(t.scores().n[TEO][BY_RESIDENCY][MAX - 1], 12);
        let d = b.delta(&a);
        assert_eq!(d.idle_periods, 2);
        assert_eq!(d.scores().n[SEED][BY_RESIDENCY][MAX], 2);
    }
}
