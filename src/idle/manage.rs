//! `ctl idle save/load/reset` on the running scheduler's `idle_table` map.
//!
//! Each CPU's entry is read and written whole under its spin lock
//! (BPF_F_LOCK), as the CPU itself reads and writes it, so no reader ever
//! sees half a table. Every write adds 1 to the entry's generation: a CPU
//! that is learning from a copy taken before it does not write that copy
//! back (idle_learn_ended() in bpf/idle.bpf.c). Only the loader changes the
//! generation, and the loader's requests are served one at a time, so the
//! generation read before a write is still the entry's when it is written.
//! The CPUs switch one after the other, each at its own instant; the
//! per-CPU scores (`idle_cpu`, written by each CPU without a lock) are not
//! touched.

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags};

use super::states::IdleStates;
use super::table::Table;
use super::table_file::{CpuTable, TableFile, VERSION};
use crate::bpf_intf::{self, as_bytes};

/// What a request gets when there is nothing to manage.
const OFF: &str = "the idle learner is off: no idle states (see `scx_cadence idle-states`)";

fn learner_on(states: &IdleStates) -> Result<()> {
    if !states.cpus.values().any(|s| !s.is_empty()) {
        bail!(OFF);
    }
    Ok(())
}

/// @cpu's entry, read under its lock.
pub fn read_entry(map: &impl MapCore, cpu: u32) -> Result<bpf_intf::cadence_idle_table> {
    let raw = map
        .lookup(&cpu.to_ne_bytes(), MapFlags::LOCK)
        .with_context(|| format!("reading CPU {cpu}'s idle table"))?
        .with_context(|| format!("CPU {cpu} has no idle table entry"))?;
    if raw.len() != std::mem::size_of::<bpf_intf::cadence_idle_table>() {
        bail!("CPU {cpu}'s idle table entry is {} bytes", raw.len());
    }
    bpf_intf::from_bytes(&raw).context("an idle table entry of the wrong size")
}

/// Writes @learned as @cpu's table, under its lock, with @generation.
fn write_entry(
    map: &impl MapCore,
    cpu: u32,
    generation: u64,
    learned: bpf_intf::cadence_idle_learned,
) -> Result<()> {
    // SAFETY: a bindgen struct of integers: all zeroes is a valid value
    // (the lock is not written under BPF_F_LOCK).
    let mut e: bpf_intf::cadence_idle_table = unsafe { std::mem::zeroed() };
    e.generation = generation;
    e.learned = learned;
    map.update(&cpu.to_ne_bytes(), as_bytes(&e), MapFlags::LOCK)
        .with_context(|| format!("writing CPU {cpu}'s idle table"))
}

/// Every online CPU's table, each read whole.
pub fn save(map: &impl MapCore, states: &IdleStates) -> Result<TableFile> {
    learner_on(states)?;
    let mut cpus = Vec::new();
    for (&cpu, list) in &states.cpus {
        let e = read_entry(map, cpu)?;
        cpus.push(CpuTable {
            cpu,
            nr_states: list.len() as u32,
            states: list.iter().map(|s| s.name.clone()).collect(),
            table: Table::from_bpf(&e.learned),
        });
    }
    Ok(TableFile {
        version: VERSION,
        cpus,
    })
}

/// Replaces every table by @file's, after checking all of it; a file that
/// does not fit changes nothing.
pub fn load(map: &impl MapCore, states: &IdleStates, file: &TableFile) -> Result<()> {
    learner_on(states)?;
    file.check(states).map_err(anyhow::Error::msg)?;
    let new: Vec<(u32, bpf_intf::cadence_idle_learned)> = file
        .cpus
        .iter()
        .map(|c| (c.cpu, c.table.to_bpf()))
        .collect();
    replace(map, &new)
}

/// Makes every online CPU's table fresh: nr_states 0, which BPF
/// initialises to seed 003's rows at the CPU's next idle period.
pub fn reset(map: &impl MapCore, states: &IdleStates) -> Result<()> {
    learner_on(states)?;
    let fresh = Table::default().to_bpf();
    let new: Vec<_> = states.cpus.keys().map(|&cpu| (cpu, fresh)).collect();
    replace(map, &new)
}

/// Writes each (cpu, table) of @new with the entry's generation + 1. If a
/// write fails, the tables already written are put back.
fn replace(map: &impl MapCore, new: &[(u32, bpf_intf::cadence_idle_learned)]) -> Result<()> {
    let old = new
        .iter()
        .map(|&(cpu, _)| read_entry(map, cpu))
        .collect::<Result<Vec<_>>>()?;
    for (i, &(cpu, learned)) in new.iter().enumerate() {
        if let Err(e) = write_entry(map, cpu, old[i].generation + 1, learned) {
            for (&(cpu, _), prev) in new[..i].iter().zip(&old) {
                let _ = write_entry(map, cpu, prev.generation + 2, prev.learned);
            }
            return Err(e);
        }
    }
    Ok(())
}
