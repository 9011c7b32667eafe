//! The CPU → LLC map that the BPF side needs for its per-LLC DSQs.
//!
//! It comes from scx_utils' Topology, which reads LLC ids from sysfs correctly;
//! the kernel's LLC ids may be sparse, the BPF tables want them dense.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::bpf_intf;

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
        let mut dense: BTreeMap<usize, u32> = BTreeMap::new();
        for llc in pairs.values() {
            let next = dense.len() as u32;
            dense.entry(*llc).or_insert(next);
        }
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

    /// Reads the running machine's topology.
    pub fn probe() -> Result<Self> {
        let topo = scx_utils::Topology::new()?;
        Self::from_pairs(topo.all_cpus.values().map(|cpu| (cpu.id, cpu.llc_id)))
    }

    pub fn nr_llcs(&self) -> usize {
        self.llc_nr_cpus.len()
    }
}
