//! cgroup cpu.weight and cpu.max: what the BPF side (bpf/cgroup.bpf.c,
//! bpf/cgroup_bw.bpf.c) holds of each cgroup, read back from the `cgroups`
//! map with the cgroup's path and its CPU time (cgroupfs), for the stats.

#[cfg(test)]
mod bpf_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use crate::bpf_intf;

/// Where cgroup v2 is mounted; a cgroup's id is its directory's inode number.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// One cgroup as the map holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub parent_id: u64,
    pub level: u32,
    pub cpu_weight: u32,
    /// Its runnable tasks' and active children's weight (signed, see
    /// struct cadence_cgroup).
    pub active: i64,
    /// What it adds to its parent's `active`: its weight while active, else 0.
    pub contributed: u64,
    /// cpu.max: quota and period in ns (quota 0: no limit).
    pub bw_quota_ns: u64,
    pub bw_period_ns: u64,
    /// Times its runtime ran out and its tasks were throttled.
    pub bw_nr_throttled: u64,
}

impl Entry {
    fn from_bpf(raw: &bpf_intf::cadence_cgroup) -> Self {
        Self {
            parent_id: raw.parent_id,
            level: raw.level,
            cpu_weight: raw.cpu_weight,
            active: raw.active,
            contributed: raw.contributed,
            bw_quota_ns: raw.bw_quota_ns,
            bw_period_ns: raw.bw_period_ns,
            bw_nr_throttled: raw.bw_nr_throttled,
        }
    }
}

/// Every cgroup in @map (the `cgroups` map), by id.
pub fn read_map(map: &impl MapCore) -> Result<BTreeMap<u64, Entry>> {
    let mut out = BTreeMap::new();
    for key in map.keys() {
        let Some(value) = map
            .lookup(&key, MapFlags::ANY)
            .context("reading the cgroups map")?
        else {
            continue; // removed since the key was listed
        };
        let (Some(id), Some(raw)) = (
            bpf_intf::from_bytes::<u64>(&key),
            bpf_intf::from_bytes::<bpf_intf::cadence_cgroup>(&value),
        ) else {
            continue;
        };
        out.insert(id, Entry::from_bpf(&raw));
    }
    Ok(out)
}

/// The share of the CPUs cgroup @id holds while everything runnable now
/// stays so, in parts per million: at each level up to the root, what it
/// adds to its parent's active weight over that weight (fair.c's group
/// entity among its siblings). 0 while it is idle; the root's is 1e6.
pub fn share_ppm(entries: &BTreeMap<u64, Entry>, id: u64) -> u64 {
    let mut share = 1.0f64;
    let mut cur = entries.get(&id);
    let mut depth = 0;
    while let Some(g) = cur {
        if g.level == 0 || depth > bpf_intf::cadence_cgroup_consts_CADENCE_CGROUP_MAX_DEPTH {
            break;
        }
        let parent = entries.get(&g.parent_id);
        let total = parent.map_or(0, |p| p.active.max(0) as u64);
        if g.contributed == 0 || total == 0 {
            return 0;
        }
        share *= g.contributed as f64 / total.max(g.contributed) as f64;
        cur = parent;
        depth += 1;
    }
    (share * 1e6).round() as u64
}

/// Every cgroup directory under @root, by id (inode number): its path
/// relative to @root, "/" for the root itself.
pub fn paths(root: &Path) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        let rel = dir.strip_prefix(root).unwrap_or(&dir);
        out.insert(meta.ino(), format!("/{}", rel.display()));
        let Ok(children) = std::fs::read_dir(&dir) else {
            continue;
        };
        for child in children.flatten() {
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child.path());
            }
        }
    }
    out
}

/// The CPU time of the cgroup at @dir so far, us: cpu.stat's usage_usec.
pub fn usage_us(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}
