//! The stats as one OpenMetrics text exposition (which Prometheus also
//! reads), for people who scrape: counters are cumulative and carry a
//! `cpu` label; the machine-wide sum is left to the query.
//!
//! Hand-written because scx_stats 1.1.4 has no OpenMetrics writer in Rust:
//! its `_om_prefix`/`_om_label`/`_om_skip` attributes only feed the
//! external scripts/scxstats_to_openmetrics.py, which makes every field a
//! Gauge (no counter with `_total`, no info families) and needs Python's
//! prometheus_client at run time.

use std::io::Write;

use anyhow::Result;

use super::cpufreq::CPUFREQ_COUNTERS;
use super::idle::IDLE_COUNTERS;
use super::util::UTIL_COUNTERS;
use super::{CpuMetrics, CpuUtil, Metrics};
use crate::idle::period::{DIFFS, IDEALS};
use crate::idle::score_table::{SOURCE_NAMES, VERDICT_NAMES};
use crate::idle::table::MAX;

/// Prefix of every metric family name.
const PREFIX: &str = "scx_cadence";

/// Escapes a label value or HELP text as OpenMetrics requires.
fn escape(s: &str) -> String {
    s.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn family<W: Write>(w: &mut W, name: &str, kind: &str, help: &str) -> Result<()> {
    writeln!(w, "# TYPE {PREFIX}_{name} {kind}")?;
    writeln!(w, "# HELP {PREFIX}_{name} {}", escape(help))?;
    Ok(())
}

/// Writes @m as an OpenMetrics exposition, ending with `# EOF`.
pub fn write_openmetrics<W: Write>(m: &Metrics, w: &mut W) -> Result<()> {
    for (name, help, value) in [
        ("nr_cpus", "Online CPUs the scheduler runs on", m.nr_cpus),
        (
            "nr_llcs",
            "Last-level caches, one shared DSQ each",
            m.nr_llcs,
        ),
        (
            "nr_restarts",
            "Re-attachments after CPU hotplug since start",
            m.nr_restarts,
        ),
        (
            "policy_generation",
            "Generation of the policy in force",
            m.policy_generation,
        ),
        (
            "freq_max_mhz",
            "freq_max in force, MHz (0: no frequency known)",
            m.freq_max_mhz,
        ),
        (
            "cpufreq_hint_cpus",
            "CPUs whose cpufreq governor applies the hints (schedutil)",
            m.cpufreq_hint_cpus,
        ),
    ] {
        family(w, name, "gauge", help)?;
        writeln!(w, "{PREFIX}_{name} {value}")?;
    }
    family(w, "policy", "info", "Name of the policy in force")?;
    writeln!(
        w,
        "{PREFIX}_policy_info{{name=\"{}\"}} 1",
        escape(&m.policy)
    )?;
    family(
        w,
        "cpufreq",
        "info",
        "cpufreq driver and governor at start, and whether they apply the hints",
    )?;
    writeln!(
        w,
        "{PREFIX}_cpufreq_info{{state=\"{}\"}} 1",
        escape(&m.cpufreq_driver)
    )?;

    family(
        w,
        "cpu_policy_generation",
        "gauge",
        "Generation of each CPU's policy copy",
    )?;
    for (id, c) in &m.cpus {
        writeln!(
            w,
            "{PREFIX}_cpu_policy_generation{{cpu=\"{id}\"}} {}",
            c.policy_generation
        )?;
    }
    let per_cpu: Vec<(u32, Vec<u64>)> = m.cpus.iter().map(|(id, c)| (*id, c.values())).collect();
    for (i, (name, help)) in CpuMetrics::COUNTERS.iter().enumerate() {
        family(w, name, "counter", help)?;
        for (id, values) in &per_cpu {
            writeln!(w, "{PREFIX}_{name}_total{{cpu=\"{id}\"}} {}", values[i])?;
        }
    }
    type Gauge = fn(&CpuUtil) -> u64;
    let gauges: [(&str, &str, Gauge); 2] = [
        (
            "cpu_util_avg",
            "Frequency-invariant PELT util_avg of each CPU (1024 = busy at freq_max)",
            |u| u.util_avg,
        ),
        (
            "freq_scale",
            "Frequency ratio at the last tick, 1024 = freq_max",
            |u| u.freq_scale,
        ),
    ];
    for (name, help, value) in gauges {
        family(w, name, "gauge", help)?;
        for (id, u) in &m.cpu_util {
            writeln!(w, "{PREFIX}_{name}{{cpu=\"{id}\"}} {}", value(u))?;
        }
    }
    family(
        w,
        "freq_source",
        "info",
        "Where each CPU's frequency ratio comes from",
    )?;
    for (id, u) in &m.cpu_util {
        writeln!(
            w,
            "{PREFIX}_freq_source_info{{cpu=\"{id}\",source=\"{}\"}} 1",
            escape(&u.freq_source)
        )?;
    }
    for (i, (name, help)) in UTIL_COUNTERS.iter().enumerate() {
        family(w, name, "counter", help)?;
        for (id, u) in &m.cpu_util {
            writeln!(
                w,
                "{PREFIX}_{name}_total{{cpu=\"{id}\"}} {}",
                u.counters()[i]
            )?;
        }
    }
    family(
        w,
        "cpufreq_target",
        "gauge",
        "cpufreq target in force on each CPU, 0..1024",
    )?;
    for (id, p) in &m.cpu_cpufreq {
        writeln!(
            w,
            "{PREFIX}_cpufreq_target{{cpu=\"{id}\"}} {}",
            p.cpufreq_target
        )?;
    }
    for (i, (name, help)) in CPUFREQ_COUNTERS.iter().enumerate() {
        family(w, name, "counter", help)?;
        for (id, p) in &m.cpu_cpufreq {
            writeln!(
                w,
                "{PREFIX}_{name}_total{{cpu=\"{id}\"}} {}",
                p.counters()[i]
            )?;
        }
    }
    family(
        w,
        "cpufreq_issued_target",
        "counter",
        "Issued cpufreq targets by bucket of 64 (le: the bucket's top)",
    )?;
    for (id, p) in &m.cpu_cpufreq {
        for (b, n) in p.cpufreq_hist.iter().enumerate() {
            let top = if b + 1 == p.cpufreq_hist.len() {
                1024
            } else {
                64 * b + 63
            };
            writeln!(
                w,
                "{PREFIX}_cpufreq_issued_target_total{{cpu=\"{id}\",le=\"{top}\"}} {n}"
            )?;
        }
    }
    write_idle(m, w)?;
    write_cgroups(m, w)?;
    writeln!(w, "# EOF")?;
    Ok(())
}

/// Each cgroup of the `cgroups` map, labelled by its path: its weight,
/// share and cpu.max as gauges, its CPU time and throttles as counters.
fn write_cgroups<W: Write>(m: &Metrics, w: &mut W) -> Result<()> {
    type Value = fn(&super::cgroup::CgroupMetrics) -> u64;
    let series: [(&str, &str, &str, Value); 6] = [
        (
            "cgroup_cpu_weight",
            "gauge",
            "cpu.weight of each cgroup",
            |c| c.cpu_weight,
        ),
        (
            "cgroup_active_weight",
            "gauge",
            "Weight of each cgroup's runnable tasks and active children (1024 = one nice-0 task)",
            |c| c.active_weight,
        ),
        (
            "cgroup_share_ppm",
            "gauge",
            "Share of the CPUs each cgroup's weight gives it against everything runnable now, ppm",
            |c| c.share_ppm,
        ),
        (
            "cgroup_max_millicpus",
            "gauge",
            "cpu.max of each cgroup in thousandths of a CPU (0: no limit)",
            |c| (c.max_cpus * 1000.0).round() as u64,
        ),
        (
            "cgroup_usage_us",
            "counter",
            "CPU time of each cgroup since boot, us (cpu.stat usage_usec)",
            |c| c.usage_us,
        ),
        (
            "cgroup_throttled",
            "counter",
            "Times each cgroup's cpu.max runtime ran out since attach",
            |c| c.throttled,
        ),
    ];
    for (name, kind, help, value) in series {
        family(w, name, kind, help)?;
        let suffix = if kind == "counter" { "_total" } else { "" };
        for (path, c) in &m.cgroups {
            writeln!(
                w,
                "{PREFIX}_{name}{suffix}{{cgroup=\"{}\"}} {}",
                escape(path),
                value(c)
            )?;
        }
    }
    Ok(())
}

/// @metric's counts per ideal and bucket under @label, the buckets never
/// hit left out: `miss` is the bucket's chosen - ideal.
fn write_buckets<W: Write>(
    w: &mut W,
    metric: &str,
    label: &str,
    by_ideal: &[[u64; DIFFS]; IDEALS],
) -> Result<()> {
    for (ideal, ideal_name) in ["residency", "exit"].iter().enumerate() {
        for (b, n) in by_ideal[ideal].iter().enumerate() {
            if *n > 0 {
                let miss = b as i64 - (MAX as i64 - 1);
                writeln!(
                    w,
                    "{PREFIX}_{metric}_total{{{label},ideal=\"{ideal_name}\",miss=\"{miss}\"}} {n}"
                )?;
            }
        }
    }
    Ok(())
}

/// The idle learner: its counters per CPU, and the machine's predictions
/// by source, ideal and miss (chosen - ideal: 0 correct, +k too deep, -k
/// too shallow), only the buckets that were ever hit.
fn write_idle<W: Write>(m: &Metrics, w: &mut W) -> Result<()> {
    for (i, (name, help)) in IDLE_COUNTERS.iter().enumerate() {
        family(w, name, "counter", help)?;
        for (id, c) in &m.cpu_idle {
            writeln!(w, "{PREFIX}_{name}_total{{cpu=\"{id}\"}} {}", c.values()[i])?;
        }
    }
    family(
        w,
        "idle_predictions",
        "counter",
        "Idle-state predictions of the machine by source, ideal (residency: by target residency; exit: residency + exit latency) and miss (chosen - ideal)",
    )?;
    let sc = m.idle.scores();
    for (src, name) in SOURCE_NAMES.iter().enumerate() {
        let label = format!("source=\"{name}\"");
        write_buckets(w, "idle_predictions", &label, &sc.n[src])?;
    }
    family(
        w,
        "idle_kernel_misses",
        "counter",
        "The kernel's own idle-state choices that its power:cpu_idle_miss judged a miss, by verdict (above: too deep, below: too shallow), ideal and miss (chosen - ideal)",
    )?;
    for (v, verdict) in VERDICT_NAMES.iter().enumerate() {
        let label = format!("verdict=\"{verdict}\"");
        write_buckets(w, "idle_kernel_misses", &label, &sc.miss[v])?;
    }
    family(
        w,
        "idle_qos_cpus",
        "gauge",
        "CPUs whose PM QoS resume-latency limit idle.qos = learned sets now",
    )?;
    writeln!(w, "{PREFIX}_idle_qos_cpus {}", m.idle_qos_cpus)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;
    use crate::stats::CpufreqCounters;

    fn exposition(m: &Metrics) -> String {
        let mut out = Vec::new();
        write_openmetrics(m, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn sample() -> Metrics {
        let cpu = |n| CpuMetrics {
            enq_idle: n,
            policy_generation: 3,
            ..Default::default()
        };
        let util = |u, clamped| CpuUtil {
            util_avg: u,
            freq_scale: 512,
            freq_source: "aperf".into(),
            freq_ticks: 100,
            freq_clamped: clamped,
            freq_errors: 0,
        };
        let cpufreq = |t| CpufreqCounters {
            cpufreq_target: t,
            cpufreq_issued: 7,
            cpufreq_hist: vec![1; 16],
            ..Default::default()
        };
        let mut m = Metrics::new(BTreeMap::from([(0, cpu(5)), (2, cpu(9))]), 1, 0)
            .with_util(BTreeMap::from([(0, util(300, 4)), (2, util(700, 0))]))
            .with_cpufreq(BTreeMap::from([(0, cpufreq(400)), (2, cpufreq(900))]));
        m.policy = "my \"odd\" policy".into();
        m.policy_generation = 3;
        m.cpufreq_driver = "cpufreq: intel_pstate active (powersave), hints not applied".into();
        m.cgroups = BTreeMap::from([(
            "/system.slice/a \"b\"".to_string(),
            crate::stats::cgroup::CgroupMetrics {
                id: 7,
                cpu_weight: 300,
                active_weight: 2048,
                share_ppm: 750_000,
                usage_us: 12_345,
                max_cpus: 0.5,
                throttled: 3,
            },
        )]);
        m
    }

    #[test]
    fn cgroups_are_labelled_by_path() {
        let text = exposition(&sample());
        for line in [
            "scx_cadence_cgroup_cpu_weight{cgroup=\"/system.slice/a \\\"b\\\"\"} 300\n",
            "scx_cadence_cgroup_share_ppm{cgroup=\"/system.slice/a \\\"b\\\"\"} 750000\n",
            "scx_cadence_cgroup_max_millicpus{cgroup=\"/system.slice/a \\\"b\\\"\"} 500\n",
            "scx_cadence_cgroup_usage_us_total{cgroup=\"/system.slice/a \\\"b\\\"\"} 12345\n",
            "scx_cadence_cgroup_throttled_total{cgroup=\"/system.slice/a \\\"b\\\"\"} 3\n",
            "# TYPE scx_cadence_cgroup_throttled counter\n",
        ] {
            assert!(text.contains(line), "{line} missing in {text}");
        }
    }

    #[test]
    fn the_cpufreq_state_is_an_info_and_a_gauge() {
        let text = exposition(&sample());
        assert!(
            text.contains(
                "scx_cadence_cpufreq_info{state=\"cpufreq: intel_pstate active (powersave), hints not applied\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("scx_cadence_cpufreq_hint_cpus 0\n"), "{text}");
    }

    #[test]
    fn every_sample_belongs_to_a_declared_family_and_it_ends_with_eof() {
        let text = exposition(&sample());
        assert_eq!(text.lines().last(), Some("# EOF"));
        let mut declared = HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(["gauge", "counter", "info"].contains(&kind), "{line}");
                assert!(declared.insert(name.to_string()), "family twice: {name}");
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_total", "_info"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| declared.contains(*f)))
                .unwrap_or(name);
            assert!(declared.contains(family), "undeclared sample: {line}");
            let value = line.rsplit(' ').next().unwrap();
            assert!(value.parse::<u64>().is_ok(), "{line}");
        }
    }

    #[test]
    fn counters_are_per_cpu_and_labels_are_escaped() {
        let text = exposition(&sample());
        assert!(
            text.contains("scx_cadence_enq_idle_total{cpu=\"0\"} 5\n"),
            "{text}"
        );
        assert!(text.contains("scx_cadence_enq_idle_total{cpu=\"2\"} 9\n"));
        assert!(text.contains("# TYPE scx_cadence_enq_idle counter\n"));
        assert!(text.contains(r#"scx_cadence_policy_info{name="my \"odd\" policy"} 1"#));
        assert!(text.contains("scx_cadence_policy_generation 3\n"));
    }

    #[test]
    fn util_gauges_source_and_tick_counters_are_per_cpu() {
        let text = exposition(&sample());
        for line in [
            "scx_cadence_cpu_util_avg{cpu=\"2\"} 700\n",
            "scx_cadence_freq_scale{cpu=\"0\"} 512\n",
            "scx_cadence_freq_source_info{cpu=\"0\",source=\"aperf\"} 1\n",
            "scx_cadence_freq_clamped_total{cpu=\"0\"} 4\n",
            "# TYPE scx_cadence_cpu_util_avg gauge\n",
        ] {
            assert!(text.contains(line), "{line} missing in {text}");
        }
    }
}

#[cfg(test)]
mod idle_tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::idle::reference::{BY_EXIT, BY_RESIDENCY, SEED, TEO};
    use crate::stats::IdleCounters;

    /// Two CPUs' idle counters: the per-CPU counters keep their CPU label,
    /// the machine's predictions are summed and labelled by source, ideal
    /// and miss, and buckets never hit are left out.
    #[test]
    fn idle_predictions_are_labelled_by_source_ideal_and_miss() {
        let cpu = |periods: u64| {
            let mut c = IdleCounters {
                idle_periods: periods,
                ..Default::default()
            };
            let mut sc = c.scores();
            sc.n[TEO][BY_RESIDENCY][MAX - 1] = periods;
            sc.n[SEED][BY_EXIT][MAX + 1] = 1;
            sc.miss[0][BY_RESIDENCY][MAX] = 2;
            c.idle_scores = sc.flat().copied().collect();
            c
        };
        let mut m = Metrics::default().with_idle(BTreeMap::from([(0, cpu(3)), (5, cpu(4))]));
        m.idle_qos_cpus = 2;
        let mut out = Vec::new();
        write_openmetrics(&m, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("scx_cadence_idle_periods_total{cpu=\"5\"} 4\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "scx_cadence_idle_predictions_total{source=\"teo\",ideal=\"residency\",miss=\"0\"} 7\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "scx_cadence_idle_predictions_total{source=\"seed\",ideal=\"exit\",miss=\"2\"} 2\n"
            ),
            "{text}"
        );
        assert_eq!(
            text.matches("scx_cadence_idle_predictions_total{").count(),
            2
        );
        assert!(
            text.contains(
                "scx_cadence_idle_kernel_misses_total{verdict=\"above\",ideal=\"residency\",miss=\"1\"} 4\n"
            ),
            "{text}"
        );
        assert_eq!(
            text.matches("scx_cadence_idle_kernel_misses_total{")
                .count(),
            1
        );
        assert!(text.contains("scx_cadence_idle_qos_cpus 2\n"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
