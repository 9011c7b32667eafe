//! Reads the hierarchy from sysfs (@root is /sys, or a recorded tree in the
//! tests), per online CPU:
//! - small core: the CPUs sharing its L1 data cache (cache/indexK with
//!   level 1), else its SMT siblings;
//! - big core: the union of its SMT siblings (topology/thread_siblings_list,
//!   else core_cpus_list) and, when it contains the small core, its L2
//!   share, else cluster_cpus_list;
//! - LLC: the CPUs sharing its highest-level cache, else its package;
//! - NUMA node: the node/nodeN/cpulist that lists it.
//!
//! A missing file makes that level flatter and leaves a note; nothing here
//! fails. The POWER device tree's ibm,thread-groups is not read: on POWER9
//! big-core kernels the L1 share already is the small core.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::cpulist;
use super::hierarchy::{CpuGroups, Hierarchy};

/// A cpulist file; Err says which file and why.
fn read_list(path: &Path) -> Result<BTreeSet<u32>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    cpulist::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A file's text, trimmed.
fn read_word(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The online CPUs: the `online` list, else every cpuN with a topology/.
fn online_cpus(cpu_dir: &Path, notes: &mut Vec<String>) -> BTreeSet<u32> {
    match read_list(&cpu_dir.join("online")) {
        Ok(set) if !set.is_empty() => return set,
        Ok(_) => notes.push(format!("{}/online is empty", cpu_dir.display())),
        Err(e) => notes.push(e),
    }
    let mut set = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(cpu_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse().ok())
                && e.path().join("topology").is_dir()
            {
                set.insert(n);
            }
        }
    }
    set
}

/// The caches of one CPU: (level, shared CPUs) of each data or unified
/// cache it lists.
fn caches(dir: &Path) -> Vec<(u32, BTreeSet<u32>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join("cache")) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !e.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        if read_word(&p.join("type")).as_deref() == Some("Instruction") {
            continue;
        }
        let level = read_word(&p.join("level")).and_then(|l| l.parse().ok());
        if let (Some(level), Ok(shared)) = (level, read_list(&p.join("shared_cpu_list"))) {
            out.push((level, shared));
        }
    }
    out
}

/// The NUMA node of each CPU, from node/nodeN/cpulist.
fn numa_nodes(root: &Path) -> BTreeMap<u32, u32> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(root.join("devices/system/node")) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(node) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Ok(cpus) = read_list(&e.path().join("cpulist")) {
            out.extend(cpus.into_iter().map(|c| (c, node)));
        }
    }
    out
}

/// Which inputs were missing, over all CPUs, for one note each.
#[derive(Default)]
struct Missing {
    siblings: BTreeSet<u32>,
    l1: BTreeSet<u32>,
    llc: BTreeSet<u32>,
    node: BTreeSet<u32>,
}

/// Reads the hierarchy of the machine whose sysfs is at @root.
pub fn read(root: &Path) -> Hierarchy {
    let cpu_dir = root.join("devices/system/cpu");
    let mut notes = Vec::new();
    let online = online_cpus(&cpu_dir, &mut notes);
    let nodes = numa_nodes(root);
    let mut missing = Missing::default();
    let mut groups = BTreeMap::new();
    for &cpu in &online {
        let dir = cpu_dir.join(format!("cpu{cpu}"));
        let topo = dir.join("topology");
        let siblings = read_list(&topo.join("thread_siblings_list"))
            .or_else(|_| read_list(&topo.join("core_cpus_list")))
            .unwrap_or_else(|_| {
                missing.siblings.insert(cpu);
                BTreeSet::from([cpu])
            });
        let caches = caches(&dir);
        let share = |level: u32| caches.iter().find(|(l, _)| *l == level).map(|(_, s)| s);
        let small = share(1).cloned().unwrap_or_else(|| {
            missing.l1.insert(cpu);
            siblings.clone()
        });
        let mut big: BTreeSet<u32> = siblings.union(&small).copied().collect();
        let upper = share(2)
            .cloned()
            .or_else(|| read_list(&topo.join("cluster_cpus_list")).ok());
        if let Some(upper) = upper.filter(|u| u.is_superset(&big)) {
            big = upper;
        }
        let llc = match caches.iter().max_by_key(|(l, _)| *l) {
            Some((_, s)) => s.clone(),
            None => {
                missing.llc.insert(cpu);
                read_list(&topo.join("package_cpus_list")).unwrap_or_else(|_| online.clone())
            }
        };
        let node = nodes.get(&cpu).copied().unwrap_or_else(|| {
            missing.node.insert(cpu);
            0
        });
        groups.insert(
            cpu,
            CpuGroups {
                small,
                big,
                llc,
                node,
            },
        );
    }
    for (set, what) in [
        (
            &missing.siblings,
            "no SMT sibling list: each is its own core",
        ),
        (&missing.l1, "no L1 cache in sysfs: small core = SMT core"),
        (&missing.llc, "no cache in sysfs: LLC = package"),
        (&missing.node, "in no NUMA node's cpulist: node 0"),
    ] {
        if !set.is_empty() {
            notes.push(format!("CPUs {}: {what}", cpulist::format(set)));
        }
    }
    Hierarchy::from_groups(groups, notes)
}
