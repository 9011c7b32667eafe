//! Statistics: the BPF per-CPU counters, per CPU and summed, served through
//! scx_stats. The server hands out cumulative values; `--stats` and
//! `--monitor` print per-interval deltas, `scx_cadence stats` prints one
//! cumulative reading as text, JSON or OpenMetrics.

mod cgroup;
mod cpu;
mod cpufreq;
mod idle;
mod openmetrics;
mod text;
mod util;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use scx_stats::prelude::*;
use scx_stats_derive::{Stats, stat_doc};
use serde::{Deserialize, Serialize};

pub use cgroup::{CgroupMetrics, read as cgroup_metrics};
pub use cpu::CpuMetrics;
pub use cpufreq::CpufreqCounters;
pub use idle::IdleCounters;
pub use openmetrics::write_openmetrics;
pub use util::CpuUtil;

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
    #[stat(desc = "Name of the policy in force")]
    pub policy: String,
    #[stat(desc = "Generation of the policy in force: 1 at start, +1 per change")]
    pub policy_generation: u64,
    #[stat(desc = "placement.order of the policy in force: small_core or core")]
    #[serde(default)]
    pub placement_order: String,
    #[stat(desc = "Every CPU's counters summed")]
    pub total: CpuMetrics,
    #[stat(desc = "Counters of each CPU, by CPU id")]
    pub cpus: BTreeMap<u32, CpuMetrics>,
    #[stat(desc = "freq_max in force, MHz (0: no frequency known)")]
    pub freq_max_mhz: u64,
    #[stat(desc = "Utilization and frequency of the machine")]
    pub util: CpuUtil,
    #[stat(desc = "Utilization and frequency of each CPU, by CPU id")]
    pub cpu_util: BTreeMap<u32, CpuUtil>,
    #[stat(desc = "cpufreq targets and deadband counters of the machine")]
    pub cpufreq: CpufreqCounters,
    #[stat(desc = "cpufreq target and deadband counters of each CPU, by CPU id")]
    pub cpu_cpufreq: BTreeMap<u32, CpufreqCounters>,
    #[stat(desc = "cpufreq driver and governor at start, and whether they apply the hints")]
    pub cpufreq_driver: String,
    #[stat(desc = "CPUs whose cpufreq governor applies the hints (schedutil)")]
    pub cpufreq_hint_cpus: u64,
    #[stat(desc = "idle.predictor of the policy in force: off, teo, per_choice or seed")]
    #[serde(default)]
    pub idle_predictor: String,
    #[stat(desc = "Most idle states any CPU learns for (0: the learner is off)")]
    #[serde(default)]
    pub idle_nr_states: u64,
    #[stat(desc = "CPUs with a PM QoS resume-latency limit of idle.qos = learned in force")]
    #[serde(default)]
    pub idle_qos_cpus: u64,
    #[stat(desc = "Idle learner counters and scores of the machine")]
    #[serde(default)]
    pub idle: IdleCounters,
    #[stat(desc = "Idle learner counters and scores of each CPU, by CPU id")]
    #[serde(default)]
    pub cpu_idle: BTreeMap<u32, IdleCounters>,
    #[stat(
        desc = "fairness.cgroups of the policy in force: 1 if cgroup cpu.weight counts, else 0"
    )]
    #[serde(default)]
    pub fair_cgroups: u64,
    #[stat(desc = "Each cgroup's weight, share and CPU time, by path under /sys/fs/cgroup")]
    #[serde(default)]
    pub cgroups: BTreeMap<String, CgroupMetrics>,
}

/// How a stats reading is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One short line for the machine; with -v every counter, and with
    /// --per-cpu one line per CPU as well.
    Text,
    /// The scx_stats JSON object, one per line.
    Json,
    /// Prometheus/OpenMetrics text exposition (cumulative counters).
    Openmetrics,
}

impl Metrics {
    /// Adds each CPU's utilization and frequency, and their total.
    pub fn with_util(mut self, cpu_util: BTreeMap<u32, CpuUtil>) -> Self {
        self.util = CpuUtil::total(cpu_util.values());
        self.cpu_util = cpu_util;
        self
    }

    /// Adds each CPU's cpufreq target and deadband counters, and their total.
    pub fn with_cpufreq(mut self, cpu_cpufreq: BTreeMap<u32, CpufreqCounters>) -> Self {
        self.cpufreq = CpufreqCounters::total(cpu_cpufreq.values());
        self.cpu_cpufreq = cpu_cpufreq;
        self
    }

    /// Adds each CPU's idle learner counters, and their total.
    pub fn with_idle(mut self, cpu_idle: BTreeMap<u32, IdleCounters>) -> Self {
        self.idle = IdleCounters::total(cpu_idle.values());
        self.cpu_idle = cpu_idle;
        self
    }

    /// Builds the metrics from each CPU's counters.
    pub fn new(cpus: BTreeMap<u32, CpuMetrics>, nr_llcs: u64, nr_restarts: u64) -> Self {
        let mut total = cpus.values().next().cloned().unwrap_or_default();
        for c in cpus.values().skip(1) {
            total.add(c);
        }
        Self {
            nr_cpus: cpus.len() as u64,
            nr_llcs,
            nr_restarts,
            total,
            cpus,
            ..Default::default()
        }
    }

    /// The counters' growth since @prev; gauges are taken as they are now.
    pub fn delta(&self, prev: &Self) -> Self {
        let cpus = self
            .cpus
            .iter()
            .map(|(id, c)| (*id, prev.cpus.get(id).map_or(c.clone(), |p| c.delta(p))))
            .collect();
        let cpu_util = self
            .cpu_util
            .iter()
            .map(|(id, c)| (*id, prev.cpu_util.get(id).map_or(c.clone(), |p| c.delta(p))))
            .collect();
        let cpu_cpufreq = self
            .cpu_cpufreq
            .iter()
            .map(|(id, c)| {
                (
                    *id,
                    prev.cpu_cpufreq.get(id).map_or(c.clone(), |p| c.delta(p)),
                )
            })
            .collect();
        let cpu_idle = self
            .cpu_idle
            .iter()
            .map(|(id, c)| (*id, prev.cpu_idle.get(id).map_or(c.clone(), |p| c.delta(p))))
            .collect();
        let cgroups = self
            .cgroups
            .iter()
            .map(|(path, c)| {
                (
                    path.clone(),
                    prev.cgroups.get(path).map_or(c.clone(), |p| c.delta(p)),
                )
            })
            .collect();
        Self {
            total: self.total.delta(&prev.total),
            cgroups,
            idle: self.idle.delta(&prev.idle),
            cpu_idle,
            util: self.util.delta(&prev.util),
            cpufreq: self.cpufreq.delta(&prev.cpufreq),
            cpus,
            cpu_util,
            cpu_cpufreq,
            ..self.clone()
        }
    }

    /// Human-readable: the short line (text.rs); with @verbose or @per_cpu
    /// every counter of the machine on one line, and with @per_cpu one line
    /// per CPU after it.
    pub fn format<W: Write>(&self, w: &mut W, per_cpu: bool, verbose: bool) -> Result<()> {
        if !verbose && !per_cpu {
            writeln!(w, "{}", text::brief(self))?;
            return Ok(());
        }
        writeln!(
            w,
            "[scx_cadence] cpus {} llcs {} restarts {} policy {} (gen {}) freq_max {} | {} | {}{} | {}",
            self.nr_cpus,
            self.nr_llcs,
            self.nr_restarts,
            self.policy,
            self.policy_generation,
            match self.freq_max_mhz {
                0 => "unknown".to_string(),
                mhz => format!("{mhz} MHz"),
            },
            self.util.format(),
            self.cpufreq.format(),
            match self.cpufreq_driver.as_str() {
                "" => String::new(),
                c => format!(" ({c})"),
            },
            cpu::format_counters(&self.total)
        )?;
        if per_cpu {
            for (id, c) in &self.cpus {
                let util = self
                    .cpu_util
                    .get(id)
                    .map(CpuUtil::format)
                    .unwrap_or_default();
                let cpufreq = self
                    .cpu_cpufreq
                    .get(id)
                    .map(CpufreqCounters::format)
                    .unwrap_or_default();
                writeln!(
                    w,
                    "  cpu {id:>3} | {util} | {cpufreq} | {}",
                    cpu::format_counters(c)
                )?;
            }
        }
        // The cgroups that ran or wait to: the rest are idle.
        if verbose && self.fair_cgroups == 1 {
            for (path, c) in &self.cgroups {
                if c.active_weight > 0 || c.usage_us > 0 {
                    writeln!(w, "{}", c.format(path))?;
                }
            }
        }
        Ok(())
    }

    /// Prints @self in @format; @per_cpu and @verbose apply to text.
    pub fn print<W: Write>(
        &self,
        w: &mut W,
        format: Format,
        per_cpu: bool,
        verbose: bool,
    ) -> Result<()> {
        match format {
            Format::Text => self.format(w, per_cpu, verbose),
            Format::Json => Ok(writeln!(w, "{}", serde_json::to_string(self)?)?),
            Format::Openmetrics => write_openmetrics(self, w),
        }
    }
}

/// The stats server's description: one "top" reader that returns the
/// cumulative metrics each time it is asked.
pub fn server_data() -> StatsServerData<(), Metrics> {
    let open: Box<dyn StatsOpener<(), Metrics>> = Box::new(move |(req_ch, res_ch)| {
        let (req_ch, res_ch) = (req_ch.clone(), res_ch.clone());
        let read: Box<dyn StatsReader<(), Metrics>> = Box::new(move |_args, _| {
            req_ch.send(())?;
            res_ch.recv()?.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(CgroupMetrics::meta())
        .add_meta(CpuMetrics::meta())
        .add_meta(CpuUtil::meta())
        .add_meta(CpufreqCounters::meta())
        .add_meta(IdleCounters::meta())
        .add_meta(Metrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// Prints the growth of the running instance's stats every @intv until
/// @shutdown; the first reading is the total since it started.
pub fn monitor(
    intv: Duration,
    format: Format,
    per_cpu: bool,
    verbose: bool,
    shutdown: Arc<AtomicBool>,
) -> Result<()> {
    let mut prev: Option<Metrics> = None;
    scx_utils::monitor_stats::<Metrics>(
        &[],
        intv,
        || shutdown.load(Ordering::Relaxed),
        |cur| {
            let shown = match (&prev, format) {
                // OpenMetrics counters are cumulative by definition.
                (_, Format::Openmetrics) | (None, _) => cur.clone(),
                (Some(p), _) => cur.delta(p),
            };
            shown.print(&mut std::io::stdout(), format, per_cpu, verbose)?;
            prev = Some(cur);
            Ok(())
        },
    )
}

/// One cumulative reading from the running instance.
pub fn fetch_once() -> Result<Metrics> {
    let mut client = StatsClient::new()
        .connect(None)
        .context("connecting to the stats server: is scx_cadence running?")?;
    client.request::<Metrics>("stats", vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(n: u64, generation: u64) -> CpuMetrics {
        CpuMetrics {
            policy_generation: generation,
            enq_llc: n,
            tick_preempt: 2 * n,
            ..Default::default()
        }
    }

    fn sample() -> Metrics {
        let mut m = Metrics::new(BTreeMap::from([(0, cpu(3, 2)), (1, cpu(4, 1))]), 1, 0);
        m.policy = "balanced".into();
        m.policy_generation = 2;
        m
    }

    #[test]
    fn total_sums_every_cpu() {
        let m = sample();
        assert_eq!(
            (m.nr_cpus, m.total.enq_llc, m.total.tick_preempt),
            (2, 7, 14)
        );
        assert_eq!(m.total.policy_generation, 1, "the oldest copy in use");
    }

    #[test]
    fn delta_is_per_cpu_and_total() {
        let before = sample();
        let mut after = sample();
        after.cpus.insert(1, cpu(10, 2));
        after = Metrics {
            policy: "balanced".into(),
            ..Metrics::new(after.cpus, 1, 0)
        };
        let d = after.delta(&before);
        assert_eq!(d.cpus[&0].enq_llc, 0);
        assert_eq!(d.cpus[&1].enq_llc, 6);
        assert_eq!(d.total.enq_llc, 6);
        assert_eq!(d.policy, "balanced");
    }

    #[test]
    fn text_is_one_line_plus_one_per_cpu() {
        let mut out = Vec::new();
        sample().format(&mut out, true, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        let first = text.lines().next().unwrap();
        for part in [
            "cpus 2",
            "policy balanced (gen 2) freq_max unknown",
            "wake:",
            "enq:",
            "dsp:",
            "preempt 14",
        ] {
            assert!(first.contains(part), "{part} missing in {first}");
        }
        assert!(text.lines().nth(2).unwrap().starts_with("  cpu   1 |"));
    }

    #[test]
    fn text_says_when_the_hints_are_not_applied() {
        let mut m = sample();
        m.cpufreq_driver = "cpufreq: no cpufreq driver, hints not applied".into();
        let mut out = Vec::new();
        m.format(&mut out, false, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("(cpufreq: no cpufreq driver, hints not applied) |"),
            "{text}"
        );
        let mut out = Vec::new();
        m.print(&mut out, Format::Json, false, false).unwrap();
        let json = String::from_utf8(out).unwrap();
        assert!(
            json.contains(r#""cpufreq_driver":"cpufreq: no cpufreq driver, hints not applied""#),
            "{json}"
        );
    }

    #[test]
    fn json_round_trips_with_per_cpu_entries() {
        let mut out = Vec::new();
        sample()
            .print(&mut out, Format::Json, false, false)
            .unwrap();
        let back: Metrics = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, sample());
    }
}
