//! A machine described by hand (`--topology FILE`), for tests and for
//! machines whose sysfs says too little. One group per line, `#` starts a
//! comment:
//!
//! ```text
//! # POWER9-like: one SMT8 big core of two interleaved SMT4 small cores
//! small 0,2,4,6
//! small 1,3,5,7
//! big 0-7
//! llc 0-7
//! node 0-7
//! ```
//!
//! Every online CPU must be in exactly one small core; the other levels may
//! be left out (a big core is then its small core, one LLC and one node hold
//! everything), but a level that is given must hold every CPU. Groups must not overlap, must not name CPUs the machine has
//! not online, and must nest: a small core inside one big core, a big core
//! inside one LLC. Every refusal names the line.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use super::cpulist;
use super::hierarchy::{CpuGroups, Hierarchy};

/// The levels a line may name, bottom up.
const LEVELS: [&str; 4] = ["small", "big", "llc", "node"];

/// One group as written: its CPUs and the line it is on.
struct Group {
    cpus: BTreeSet<u32>,
    line: usize,
}

/// Parses @text against the machine's @online CPUs.
pub fn parse(text: &str, online: &BTreeSet<u32>) -> Result<Hierarchy> {
    // level -> groups; cpu -> index of its group, per level.
    let mut groups: BTreeMap<&str, Vec<Group>> = BTreeMap::new();
    let mut member: BTreeMap<&str, BTreeMap<u32, usize>> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let (word, list) = content
            .split_once(char::is_whitespace)
            .unwrap_or((content, ""));
        let Some(level) = LEVELS.iter().find(|l| **l == word) else {
            bail!(
                "line {line}: `{raw}`: unknown level `{word}` (expected {})",
                LEVELS.join(", ")
            );
        };
        let cpus =
            cpulist::parse(list).map_err(|e| anyhow::anyhow!("line {line}: `{raw}`: {e}"))?;
        if cpus.is_empty() {
            bail!("line {line}: `{raw}`: no CPUs");
        }
        if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
            bail!(
                "line {line}: `{raw}`: CPU {c} is not an online CPU of this machine (online: {})",
                cpulist::format(online)
            );
        }
        let of_level = member.entry(level).or_default();
        let list = groups.entry(level).or_default();
        for c in &cpus {
            if let Some(&other) = of_level.get(c) {
                bail!(
                    "line {line}: `{raw}`: CPU {c} is already in the {level} group on line {}",
                    list[other].line
                );
            }
            of_level.insert(*c, list.len());
        }
        list.push(Group { cpus, line });
    }

    let small = member.get("small").cloned().unwrap_or_default();
    if let Some(c) = online.iter().find(|c| !small.contains_key(c)) {
        bail!("CPU {c} is online but in no `small` line: every CPU needs its small core");
    }
    for level in &LEVELS[1..] {
        if let Some(m) = member.get(level)
            && let Some(c) = online.iter().find(|c| !m.contains_key(c))
        {
            bail!("CPU {c} is in no `{level}` line: a level given at all must hold every CPU");
        }
    }
    // Nesting: every group inside exactly one group of the next level up.
    for (lower, upper) in [("small", "big"), ("big", "llc"), ("llc", "node")] {
        let (Some(lows), Some(ups)) = (groups.get(lower), member.get(upper)) else {
            continue;
        };
        for g in lows {
            let homes: BTreeSet<usize> =
                g.cpus.iter().filter_map(|c| ups.get(c)).copied().collect();
            let lines: Vec<String> = homes
                .iter()
                .map(|&h| groups[upper][h].line.to_string())
                .collect();
            if homes.len() > 1 || (homes.len() == 1 && g.cpus.iter().any(|c| !ups.contains_key(c)))
            {
                bail!(
                    "line {}: {lower} {} spans more than one {upper} group (lines {})",
                    g.line,
                    cpulist::format(&g.cpus),
                    if lines.is_empty() {
                        "none".into()
                    } else {
                        lines.join(", ")
                    }
                );
            }
        }
    }

    let set_of = |level: &str, cpu: u32| -> Option<BTreeSet<u32>> {
        let idx = member.get(level)?.get(&cpu)?;
        Some(groups[level][*idx].cpus.clone())
    };
    let node_of = |cpu: u32| {
        member
            .get("node")
            .and_then(|m| m.get(&cpu))
            .map_or(0, |&i| i as u32)
    };
    let per_cpu = online
        .iter()
        .map(|&cpu| {
            let small = set_of("small", cpu).expect("checked above");
            let big = set_of("big", cpu).unwrap_or_else(|| small.clone());
            let llc = set_of("llc", cpu).unwrap_or_else(|| online.clone());
            let node = node_of(cpu);
            (
                cpu,
                CpuGroups {
                    small,
                    big,
                    llc,
                    node,
                },
            )
        })
        .collect();
    let hier = Hierarchy::from_groups(per_cpu, Vec::new());
    // The checks above leave nothing for from_groups to flatten.
    debug_assert!(hier.notes.is_empty(), "{:?}", hier.notes);
    Ok(hier)
}
