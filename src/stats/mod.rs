//! Statistics: the BPF per-CPU counters, summed and turned into per-interval
//! deltas, served through scx_stats (`--stats`, `--monitor`, `--help-stats`).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use scx_stats::prelude::*;
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

/// Number of per-CPU event counters kept by BPF (enum cadence_stat).
pub const NR_STATS: usize = bpf_intf::cadence_stat_CADENCE_NR_STATS as usize;

/// One value of the BPF `cpu_stats` map: a counter per enum cadence_stat.
pub type Counters = [u64; NR_STATS];

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "Online CPUs the scheduler runs on")]
    pub nr_cpus: u64,
    #[stat(desc = "Last-level caches, one shared DSQ each")]
    pub nr_llcs: u64,
    #[stat(desc = "Re-attachments after CPU hotplug since start")]
    pub nr_restarts: u64,
    #[stat(desc = "Wake-ups placed on the previous CPU, its whole core idle")]
    pub select_prev_core: u64,
    #[stat(desc = "Wake-ups placed on an idle core in the previous CPU's LLC")]
    pub select_llc_core: u64,
    #[stat(desc = "Wake-ups placed on an idle core in another LLC")]
    pub select_any_core: u64,
    #[stat(desc = "Wake-ups placed on the previous CPU, its sibling busy")]
    pub select_prev_cpu: u64,
    #[stat(desc = "Wake-ups placed on an idle CPU in the previous CPU's LLC")]
    pub select_llc_cpu: u64,
    #[stat(desc = "Wake-ups placed on an idle CPU in another LLC")]
    pub select_any_cpu: u64,
    #[stat(desc = "Wake-ups that found no idle CPU and were queued")]
    pub select_busy: u64,
    #[stat(desc = "Enqueues to a per-CPU DSQ (task can run on one CPU only)")]
    pub enq_pinned: u64,
    #[stat(desc = "Enqueues sent straight to an idle CPU")]
    pub enq_idle: u64,
    #[stat(desc = "Enqueues to the LLC's shared vtime DSQ")]
    pub enq_llc: u64,
    #[stat(desc = "Dispatches from the CPU's own DSQ")]
    pub dispatch_cpu: u64,
    #[stat(desc = "Dispatches from the CPU's LLC DSQ")]
    pub dispatch_llc: u64,
    #[stat(desc = "Dispatches stolen from another LLC's DSQ")]
    pub dispatch_steal: u64,
    #[stat(desc = "Slice refills for a task that stayed first in virtual time")]
    pub dispatch_keep: u64,
    #[stat(desc = "Slices cut short by the tick because others were waiting")]
    pub tick_preempt: u64,
}

impl Metrics {
    /// Builds the metrics from the summed BPF counters.
    pub fn from_counters(c: &Counters, nr_cpus: u64, nr_llcs: u64, nr_restarts: u64) -> Self {
        use bpf_intf::*;
        let at = |i: cadence_stat| c[i as usize];
        Self {
            nr_cpus,
            nr_llcs,
            nr_restarts,
            select_prev_core: at(cadence_stat_CADENCE_STAT_SELECT_PREV_CORE),
            select_llc_core: at(cadence_stat_CADENCE_STAT_SELECT_LLC_CORE),
            select_any_core: at(cadence_stat_CADENCE_STAT_SELECT_ANY_CORE),
            select_prev_cpu: at(cadence_stat_CADENCE_STAT_SELECT_PREV_CPU),
            select_llc_cpu: at(cadence_stat_CADENCE_STAT_SELECT_LLC_CPU),
            select_any_cpu: at(cadence_stat_CADENCE_STAT_SELECT_ANY_CPU),
            select_busy: at(cadence_stat_CADENCE_STAT_SELECT_BUSY),
            enq_pinned: at(cadence_stat_CADENCE_STAT_ENQ_PINNED),
            enq_idle: at(cadence_stat_CADENCE_STAT_ENQ_IDLE),
            enq_llc: at(cadence_stat_CADENCE_STAT_ENQ_LLC),
            dispatch_cpu: at(cadence_stat_CADENCE_STAT_DISPATCH_CPU),
            dispatch_llc: at(cadence_stat_CADENCE_STAT_DISPATCH_LLC),
            dispatch_steal: at(cadence_stat_CADENCE_STAT_DISPATCH_STEAL),
            dispatch_keep: at(cadence_stat_CADENCE_STAT_DISPATCH_KEEP),
            tick_preempt: at(cadence_stat_CADENCE_STAT_TICK_PREEMPT),
        }
    }

    /// The counters' growth since @prev; the gauges (CPUs, LLCs, restarts) are
    /// taken as they are now. Counters restart from zero when the scheduler
    /// re-attaches, so a counter smaller than before counts from zero.
    pub fn delta(&self, prev: &Self) -> Self {
        let d = |now: u64, before: u64| now.checked_sub(before).unwrap_or(now);
        Self {
            nr_cpus: self.nr_cpus,
            nr_llcs: self.nr_llcs,
            nr_restarts: self.nr_restarts,
            select_prev_core: d(self.select_prev_core, prev.select_prev_core),
            select_llc_core: d(self.select_llc_core, prev.select_llc_core),
            select_any_core: d(self.select_any_core, prev.select_any_core),
            select_prev_cpu: d(self.select_prev_cpu, prev.select_prev_cpu),
            select_llc_cpu: d(self.select_llc_cpu, prev.select_llc_cpu),
            select_any_cpu: d(self.select_any_cpu, prev.select_any_cpu),
            select_busy: d(self.select_busy, prev.select_busy),
            enq_pinned: d(self.enq_pinned, prev.enq_pinned),
            enq_idle: d(self.enq_idle, prev.enq_idle),
            enq_llc: d(self.enq_llc, prev.enq_llc),
            dispatch_cpu: d(self.dispatch_cpu, prev.dispatch_cpu),
            dispatch_llc: d(self.dispatch_llc, prev.dispatch_llc),
            dispatch_steal: d(self.dispatch_steal, prev.dispatch_steal),
            dispatch_keep: d(self.dispatch_keep, prev.dispatch_keep),
            tick_preempt: d(self.tick_preempt, prev.tick_preempt),
        }
    }

    /// One human-readable line, as `--stats` and `--monitor` print it.
    pub fn format<W: Write>(&self, w: &mut W) -> Result<()> {
        writeln!(
            w,
            "[scx_cadence] cpus {} llcs {} restarts {} | wake: prev-core {} llc-core {} core {} prev {} llc {} any {} busy {} | enq: pinned {} idle {} llc {} | dsp: own {} llc {} steal {} keep {} | preempt {}",
            self.nr_cpus,
            self.nr_llcs,
            self.nr_restarts,
            self.select_prev_core,
            self.select_llc_core,
            self.select_any_core,
            self.select_prev_cpu,
            self.select_llc_cpu,
            self.select_any_cpu,
            self.select_busy,
            self.enq_pinned,
            self.enq_idle,
            self.enq_llc,
            self.dispatch_cpu,
            self.dispatch_llc,
            self.dispatch_steal,
            self.dispatch_keep,
            self.tick_preempt,
        )?;
        Ok(())
    }
}

/// Sums per-CPU copies of the counters into one.
pub fn sum_counters<'a>(per_cpu: impl IntoIterator<Item = &'a Counters>) -> Counters {
    let mut total = [0u64; NR_STATS];
    for c in per_cpu {
        for (t, v) in total.iter_mut().zip(c.iter()) {
            *t = t.wrapping_add(*v);
        }
    }
    total
}

/// The stats server's description: one "top" reader that returns the deltas
/// since the client's previous read.
pub fn server_data() -> StatsServerData<(), Metrics> {
    let open: Box<dyn StatsOpener<(), Metrics>> = Box::new(move |(req_ch, res_ch)| {
        req_ch.send(())?;
        let mut prev = res_ch.recv()?;
        let read: Box<dyn StatsReader<(), Metrics>> = Box::new(move |_args, (req_ch, res_ch)| {
            req_ch.send(())?;
            let cur = res_ch.recv()?;
            let delta = cur.delta(&prev);
            prev = cur;
            delta.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// Prints the stats of the running instance every @intv until @shutdown.
pub fn monitor(intv: Duration, shutdown: Arc<AtomicBool>) -> Result<()> {
    scx_utils::monitor_stats::<Metrics>(
        &[],
        intv,
        || shutdown.load(Ordering::Relaxed),
        |metrics| metrics.format(&mut std::io::stdout()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters whose slot i holds 1000 + i, so each field shows its slot.
    fn numbered() -> Counters {
        std::array::from_fn(|i| 1000 + i as u64)
    }

    #[test]
    fn every_counter_lands_in_its_own_field() {
        let m = Metrics::from_counters(&numbered(), 8, 2, 1);
        let json = serde_json::to_value(&m).unwrap();
        // The JSON field names in enum cadence_stat order, after the gauges.
        let order = [
            "select_prev_core",
            "select_llc_core",
            "select_any_core",
            "select_prev_cpu",
            "select_llc_cpu",
            "select_any_cpu",
            "select_busy",
            "enq_pinned",
            "enq_idle",
            "enq_llc",
            "dispatch_cpu",
            "dispatch_llc",
            "dispatch_steal",
            "dispatch_keep",
            "tick_preempt",
        ];
        assert_eq!(order.len(), NR_STATS, "a counter is missing from Metrics");
        for (i, name) in order.iter().enumerate() {
            assert_eq!(json[name], 1000 + i as u64, "{name}");
        }
        assert_eq!(json["nr_cpus"], 8);
        assert_eq!(json["nr_llcs"], 2);
        assert_eq!(json["nr_restarts"], 1);
    }

    #[test]
    fn per_cpu_copies_are_summed() {
        let a = numbered();
        let b = [1u64; NR_STATS];
        let sum = sum_counters([&a, &b]);
        assert!(sum.iter().enumerate().all(|(i, v)| *v == 1001 + i as u64));
    }

    #[test]
    fn delta_counts_growth_and_keeps_gauges() {
        let before = Metrics::from_counters(&[5; NR_STATS], 4, 1, 0);
        let after = Metrics::from_counters(&[12; NR_STATS], 3, 1, 1);
        let d = after.delta(&before);
        assert_eq!(d.enq_llc, 7);
        assert_eq!(d.tick_preempt, 7);
        assert_eq!((d.nr_cpus, d.nr_llcs, d.nr_restarts), (3, 1, 1));
    }

    #[test]
    fn delta_after_a_restart_counts_from_zero() {
        // After hotplug the BPF maps are new and the counters start over.
        let before = Metrics::from_counters(&[500; NR_STATS], 4, 1, 0);
        let after = Metrics::from_counters(&[20; NR_STATS], 4, 1, 1);
        assert_eq!(after.delta(&before).dispatch_llc, 20);
    }

    #[test]
    fn format_is_one_line_with_every_group() {
        let mut out = Vec::new();
        Metrics::from_counters(&numbered(), 4, 1, 0)
            .format(&mut out)
            .unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(line.lines().count(), 1);
        for part in ["cpus 4", "wake:", "enq:", "dsp:", "preempt 1014"] {
            assert!(line.contains(part), "{part} missing in {line}");
        }
    }
}
