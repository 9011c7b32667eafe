//! The machine's CPUs.
//!
//! `hierarchy`, `sysfs`, `file` and `show`: CPU → small core → big core →
//! LLC → NUMA node, read from sysfs or a hand-written file, and printed by
//! `scx_cadence topology`; `table`: the same as the BPF placement search
//! reads it. scx_utils' Topology assumes two threads per core
//! and cannot see POWER9's small cores or E-core clusters, hence our own.
//!
//! `LlcMap` (below): the CPU → LLC map that the BPF side needs for its
//! per-LLC DSQs, dense indices, taken from the hierarchy so that the DSQs
//! and the placement search agree on what an LLC is.

pub mod cpulist;
pub mod file;
pub mod hierarchy;
#[cfg(test)]
mod hierarchy_tests;
#[cfg(test)]
mod place_shallow_tests;
#[cfg(test)]
mod place_tests;
pub mod show;
pub mod sysfs;
pub mod table;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

/// The hierarchy of this machine (sysfs at @sys_root), or of @file, which
/// must name this machine's online CPUs; with a word on where it came from.
pub fn read_hierarchy(
    sys_root: &Path,
    file: Option<&Path>,
) -> Result<(hierarchy::Hierarchy, String)> {
    let machine = sysfs::read(sys_root);
    let Some(path) = file else {
        return Ok((machine, format!("{}", sys_root.display())));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading topology file {}", path.display()))?;
    let online: BTreeSet<u32> = machine.cpus.keys().copied().collect();
    let h =
        file::parse(&text, &online).with_context(|| format!("topology file {}", path.display()))?;
    Ok((h, path.display().to_string()))
}

/// Dense LLC indices for the online CPUs, as the DSQ code needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlcMap {
    /// (CPU id, dense LLC index), by CPU id.
    pub cpu_llc: Vec<(usize, u32)>,
    /// Online CPUs in each dense LLC.
    pub llc_nr_cpus: Vec<u32>,
}

impl LlcMap {
    /// The LLCs of @h, whose indices are already dense (ordered by lowest
    /// CPU). The limits of the BPF tables are table::build()'s to check.
    pub fn from_hierarchy(h: &hierarchy::Hierarchy) -> Self {
        Self {
            cpu_llc: h
                .cpus
                .iter()
                .map(|(&c, p)| (c as usize, p.llc as u32))
                .collect(),
            llc_nr_cpus: h.llc.iter().map(|l| l.len() as u32).collect(),
        }
    }

    pub fn nr_llcs(&self) -> usize {
        self.llc_nr_cpus.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::hierarchy::{CpuGroups, Hierarchy};
    use super::*;
    use crate::bpf_intf;

    /// CPUs with the LLC of each (each CPU its own small and big core).
    fn machine(cpu_llcs: &[(u32, &[u32])]) -> Hierarchy {
        let groups: BTreeMap<u32, CpuGroups> = cpu_llcs
            .iter()
            .map(|&(cpu, llc)| {
                let own = BTreeSet::from([cpu]);
                let llc = llc.iter().copied().collect();
                (
                    cpu,
                    CpuGroups {
                        small: own.clone(),
                        big: own,
                        llc,
                        node: 0,
                    },
                )
            })
            .collect();
        Hierarchy::from_groups(groups, Vec::new())
    }

    #[test]
    fn interleaved_llcs_get_dense_indices_by_lowest_cpu() {
        let (a, b): (&[u32], &[u32]) = (&[0, 2, 4], &[1, 3]);
        let h = machine(&[(0, a), (1, b), (2, a), (3, b), (4, a)]);
        let map = LlcMap::from_hierarchy(&h);
        assert_eq!(map.cpu_llc, vec![(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]);
        assert_eq!(map.llc_nr_cpus, vec![3, 2]);
        assert_eq!(map.nr_llcs(), 2);
    }

    #[test]
    fn offline_cpus_leave_holes_in_cpu_ids() {
        let (a, b): (&[u32], &[u32]) = (&[0, 2], &[5]);
        let map = LlcMap::from_hierarchy(&machine(&[(0, a), (2, a), (5, b)]));
        assert_eq!(map.cpu_llc, vec![(0, 0), (2, 0), (5, 1)]);
        assert_eq!(map.llc_nr_cpus, vec![2, 1]);
    }

    #[test]
    fn no_cpus_is_an_error() {
        let err = table::build(&machine(&[])).unwrap_err();
        assert!(err.to_string().contains("no online CPUs"), "{err}");
    }

    #[test]
    fn cpu_beyond_the_bpf_tables_is_refused() {
        let max = bpf_intf::cadence_consts_CADENCE_MAX_CPUS;
        let err = table::build(&machine(&[(0, &[0]), (max, &[max])])).unwrap_err();
        assert!(err.to_string().contains(&format!("CPU {max}")), "{err}");
    }

    #[test]
    fn too_many_llcs_are_refused() {
        let max = bpf_intf::cadence_consts_CADENCE_MAX_LLCS;
        let cpus: Vec<u32> = (0..=max).collect();
        let own: Vec<(u32, &[u32])> = cpus.iter().map(|c| (*c, std::slice::from_ref(c))).collect();
        let err = table::build(&machine(&own)).unwrap_err();
        assert!(err.to_string().contains("LLCs found"), "{err}");
    }
}
