//! Each cgroup's weight, share, cpu.max and CPU time (src/cgroups/,
//! bpf/cgroup.bpf.c, bpf/cgroup_bw.bpf.c):
//! the stats' per-cgroup entries, by path.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::cgroups;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct CgroupMetrics {
    #[stat(desc = "cgroup id (its directory's inode number): its key in the pinned cgroups map")]
    pub id: u64,
    #[stat(desc = "cpu.weight (1..10000, 100 by default)")]
    pub cpu_weight: u64,
    #[stat(
        desc = "Weight of its runnable tasks and active child cgroups (1024 = one nice-0 task; the root: its active children only)"
    )]
    pub active_weight: u64,
    #[stat(
        desc = "Share of the CPUs its weight gives it against everything runnable now, ppm (0 while idle)"
    )]
    pub share_ppm: u64,
    #[stat(desc = "CPU time, us (cpu.stat usage_usec): since boot, or in the interval")]
    pub usage_us: u64,
    #[stat(desc = "cpu.max as CPUs (quota / period); 0: no limit")]
    pub max_cpus: f64,
    #[stat(
        desc = "Times its cpu.max runtime ran out and its tasks were throttled: since attach, or in the interval"
    )]
    pub throttled: u64,
}

/// Every cgroup of the `cgroups` map, by path under @root ("id N" for one
/// whose directory was not found).
pub fn read(map: &impl libbpf_rs::MapCore, root: &Path) -> Result<BTreeMap<String, CgroupMetrics>> {
    let entries = cgroups::read_map(map)?;
    let paths = cgroups::paths(root);
    Ok(entries
        .iter()
        .map(|(&id, e)| {
            let path = paths.get(&id).cloned();
            let usage_us = path
                .as_deref()
                .and_then(|p| cgroups::usage_us(&root.join(p.trim_start_matches('/'))))
                .unwrap_or(0);
            let m = CgroupMetrics {
                id,
                cpu_weight: e.cpu_weight.into(),
                active_weight: e.active.max(0) as u64,
                share_ppm: cgroups::share_ppm(&entries, id),
                usage_us,
                max_cpus: if e.bw_quota_ns > 0 && e.bw_period_ns > 0 {
                    e.bw_quota_ns as f64 / e.bw_period_ns as f64
                } else {
                    0.0
                },
                throttled: e.bw_nr_throttled,
            };
            (path.unwrap_or_else(|| format!("id {id}")), m)
        })
        .collect())
}

impl CgroupMetrics {
    /// CPU time since @prev; the rest as it is now.
    pub fn delta(&self, prev: &Self) -> Self {
        Self {
            usage_us: self.usage_us.saturating_sub(prev.usage_us),
            throttled: self.throttled.saturating_sub(prev.throttled),
            ..self.clone()
        }
    }

    /// One line for `--stats -v`.
    pub fn format(&self, path: &str) -> String {
        let max = if self.max_cpus > 0.0 {
            format!(
                " | cpu.max {:.2} CPUs, throttled {}",
                self.max_cpus, self.throttled
            )
        } else {
            String::new()
        };
        format!(
            "  cgroup {path} (id {}) | cpu.weight {} active {} share {:.1}% ran {:.1} ms{max}",
            self.id,
            self.cpu_weight,
            self.active_weight,
            self.share_ppm as f64 / 1e4,
            self.usage_us as f64 / 1e3
        )
    }
}
