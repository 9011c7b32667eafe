//! `scx_cadence topology`: the hierarchy as an indented tree, one line per
//! group, in the spirit of the kernel's sched-domain dumps (each level's
//! span, then its parts).

use std::collections::BTreeSet;
use std::fmt::Write;

use super::cpulist;
use super::hierarchy::Hierarchy;

/// The tree, then a summary line and the notes.
pub fn render(h: &Hierarchy, source: &str) -> String {
    let mut out = String::new();
    let nodes: BTreeSet<u32> = h.cpus.values().map(|p| p.node).collect();
    for node in &nodes {
        let cpus: BTreeSet<u32> = h
            .cpus
            .iter()
            .filter(|(_, p)| p.node == *node)
            .map(|(c, _)| *c)
            .collect();
        let _ = writeln!(out, "node {node}: CPUs {}", cpulist::format(&cpus));
        let llcs: BTreeSet<usize> = h
            .cpus
            .values()
            .filter(|p| p.node == *node)
            .map(|p| p.llc)
            .collect();
        for llc in llcs {
            let _ = writeln!(out, "  LLC {llc}: CPUs {}", cpulist::format(&h.llc[llc]));
            for big in h.big_cores_of(llc) {
                let smalls = h.small_cores_of(big);
                let _ = writeln!(
                    out,
                    "    big core {big}: CPUs {} ({} small core{})",
                    cpulist::format(&h.big[big]),
                    smalls.len(),
                    if smalls.len() == 1 { "" } else { "s" }
                );
                for s in smalls {
                    let _ = writeln!(
                        out,
                        "      small core {s}: CPUs {}",
                        cpulist::format(&h.small[s])
                    );
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "{} CPUs, {} small cores, {} big cores, {} LLCs, {} NUMA nodes (from {source})",
        h.cpus.len(),
        h.small.len(),
        h.big.len(),
        h.llc.len(),
        nodes.len()
    );
    for n in &h.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
