//! The hierarchy as the BPF placement search reads it (struct cadence_topo
//! in bpf/intf_place.h): flat tables in which the big cores of an LLC and
//! the small cores of a big core are numbered consecutively, so that the
//! search walks them as ranges.

use anyhow::{Result, bail};

use super::hierarchy::Hierarchy;
use crate::bpf_intf;

const MAX_CPUS: usize = bpf_intf::cadence_consts_CADENCE_MAX_CPUS as usize;
const MAX_LLCS: usize = bpf_intf::cadence_consts_CADENCE_MAX_LLCS as usize;
const MAX_SMT: usize = bpf_intf::cadence_place_consts_CADENCE_MAX_SMT as usize;
const NO_GROUP: u32 = bpf_intf::cadence_place_consts_CADENCE_NO_GROUP;

/// Builds the table; an error if the machine exceeds the BPF tables.
pub fn build(h: &Hierarchy) -> Result<Box<bpf_intf::cadence_topo>> {
    // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
    let mut t: Box<bpf_intf::cadence_topo> = Box::new(unsafe { std::mem::zeroed() });
    let Some(&max_cpu) = h.cpus.keys().next_back() else {
        bail!("no online CPUs in the topology");
    };
    if max_cpu as usize >= MAX_CPUS {
        bail!("CPU {max_cpu} is beyond the {MAX_CPUS} CPUs scx_cadence supports");
    }
    if h.llc.len() > MAX_LLCS {
        bail!(
            "{} LLCs found, scx_cadence supports {MAX_LLCS}",
            h.llc.len()
        );
    }
    if let Some(s) = h.small.iter().find(|s| s.len() > MAX_SMT) {
        bail!(
            "a small core of {} threads (CPUs {}): scx_cadence supports at most {MAX_SMT}",
            s.len(),
            super::cpulist::format(s)
        );
    }
    t.nr_cpus = max_cpu + 1;
    t.cpu_small.fill(NO_GROUP);
    let (mut nr_small, mut nr_big) = (0usize, 0usize);
    for llc in 0..h.llc.len() {
        t.llc_first_big[llc] = nr_big as u32;
        for big in h.big_cores_of(llc) {
            t.big_llc[nr_big] = llc as u32;
            t.big_first_small[nr_big] = nr_small as u32;
            for small in h.small_cores_of(big) {
                let cpus = &h.small[small];
                for (i, &cpu) in cpus.iter().enumerate() {
                    t.small_cpus[nr_small][i] = cpu;
                    t.cpu_small[cpu as usize] = nr_small as u32;
                }
                t.small_nr_cpus[nr_small] = cpus.len() as u32;
                t.small_big[nr_small] = nr_big as u32;
                nr_small += 1;
            }
            t.big_nr_small[nr_big] = nr_small as u32 - t.big_first_small[nr_big];
            nr_big += 1;
        }
        t.llc_nr_big[llc] = nr_big as u32 - t.llc_first_big[llc];
    }
    t.nr_small = nr_small as u32;
    t.nr_big = nr_big as u32;
    t.nr_llc = h.llc.len() as u32;
    Ok(t)
}
