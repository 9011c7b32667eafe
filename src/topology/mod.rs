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
mod place_tests;
pub mod show;
pub mod sysfs;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::bpf_intf;

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

/// Dense LLC indices for the online CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlcMap {
    /// (CPU id, dense LLC index), by CPU id.
    pub cpu_llc: Vec<(usize, u32)>,
    /// Online CPUs in each dense LLC.
    pub llc_nr_cpus: Vec<u32>,
}

impl LlcMap {
    /// Builds the map from (CPU id, kernel LLC id) pairs. Dense indices follow
    /// the order of the kernel ids.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (usize, usize)>) -> Result<Self> {
        let pairs: BTreeMap<usize, usize> = pairs.into_iter().collect();
        if pairs.is_empty() {
            bail!("no online CPUs found in the topology");
        }
        let kernel_ids: BTreeSet<usize> = pairs.values().copied().collect();
        let dense: BTreeMap<usize, u32> = kernel_ids
            .into_iter()
            .enumerate()
            .map(|(idx, id)| (id, idx as u32))
            .collect();
        let max_cpus = bpf_intf::cadence_consts_CADENCE_MAX_CPUS as usize;
        let max_llcs = bpf_intf::cadence_consts_CADENCE_MAX_LLCS as usize;
        if let Some((&cpu, _)) = pairs.iter().next_back().filter(|(c, _)| **c >= max_cpus) {
            bail!("CPU {cpu} is beyond the {max_cpus} CPUs scx_cadence supports");
        }
        if dense.len() > max_llcs {
            bail!(
                "{} LLCs found, scx_cadence supports {max_llcs}",
                dense.len()
            );
        }
        let mut llc_nr_cpus = vec![0u32; dense.len()];
        let cpu_llc = pairs
            .iter()
            .map(|(&cpu, llc)| {
                let idx = dense[llc];
                llc_nr_cpus[idx as usize] += 1;
                (cpu, idx)
            })
            .collect();
        Ok(Self {
            cpu_llc,
            llc_nr_cpus,
        })
    }

    /// The LLCs of @h.
    pub fn from_hierarchy(h: &hierarchy::Hierarchy) -> Result<Self> {
        Self::from_pairs(h.cpus.iter().map(|(&cpu, p)| (cpu as usize, p.llc)))
    }

    pub fn nr_llcs(&self) -> usize {
        self.llc_nr_cpus.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_llc_ids_become_dense_in_kernel_order() {
        // Two LLCs with kernel ids 7 and 3, CPUs interleaved between them.
        let map = LlcMap::from_pairs([(0, 7), (1, 3), (2, 7), (3, 3), (4, 7)]).unwrap();
        assert_eq!(map.cpu_llc, vec![(0, 1), (1, 0), (2, 1), (3, 0), (4, 1)]);
        assert_eq!(map.llc_nr_cpus, vec![2, 3]);
        assert_eq!(map.nr_llcs(), 2);
    }

    #[test]
    fn offline_cpus_leave_holes_in_cpu_ids() {
        let map = LlcMap::from_pairs([(0, 0), (2, 0), (5, 1)]).unwrap();
        assert_eq!(map.cpu_llc, vec![(0, 0), (2, 0), (5, 1)]);
        assert_eq!(map.llc_nr_cpus, vec![2, 1]);
    }

    #[test]
    fn no_cpus_is_an_error() {
        let err = LlcMap::from_pairs([]).unwrap_err();
        assert!(err.to_string().contains("no online CPUs"), "{err}");
    }

    #[test]
    fn cpu_beyond_the_bpf_tables_is_refused() {
        let max = bpf_intf::cadence_consts_CADENCE_MAX_CPUS as usize;
        let err = LlcMap::from_pairs([(0, 0), (max, 0)]).unwrap_err();
        assert!(err.to_string().contains(&format!("CPU {max}")), "{err}");
    }

    #[test]
    fn too_many_llcs_are_refused() {
        let max = bpf_intf::cadence_consts_CADENCE_MAX_LLCS as usize;
        let err = LlcMap::from_pairs((0..=max).map(|i| (i, i))).unwrap_err();
        assert!(err.to_string().contains("LLCs found"), "{err}");
    }
}
