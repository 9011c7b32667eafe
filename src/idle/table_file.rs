//! The file of `scx_cadence ctl idle save/load`: every online CPU's learned
//! table, with the states it was learned for, so that a table can seed
//! another machine (or this one later) and a file for different CPUs or
//! states is refused before anything is written.
//!
//! JSON, one line per CPU:
//!
//! ```text
//! {"version":2,"cpus":[
//! {"cpu":0,"nr_states":4,"states":["POLL","C1","C1E","C6"],"table":{...}},
//! ...
//! ]}
//! ```
//!
//! `table` is [`Table`] (struct cadence_idle_learned); its `nr_states` is 0
//! for a CPU whose table is fresh (BPF then starts from seed 003's rows).
//! The loader's write counter (`generation`) is not part of the file.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::states::{IdleStates, MAX_STATES};
use super::table::{MAX, Table};
use crate::topology::cpulist;

/// The format's version; a file of another version is refused. 2: the
/// seed's matrix (`seed_weight`) beside the per-choice one, no aging
/// counters (`row_updates`). 3: teo's tick counters (`tick_intercepts`,
/// `total_tick`); a version 2 file loads with them at 0, as a fresh table
/// has them.
pub const VERSION: u32 = 3;
const OLDEST_READ: u32 = 2;

/// Seed 003: a weight is 0..10000 (percent x 100); bpf/intf_idle.h's
/// CADENCE_IDLE_WEIGHT_SCALE.
const WEIGHT_SCALE: u16 = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableFile {
    pub version: u32,
    pub cpus: Vec<CpuTable>,
}

/// One CPU: its states (as the scheduler that saved it ran with them) and
/// what it learned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuTable {
    pub cpu: u32,
    /// The CPU's idle states, `states`' length.
    pub nr_states: u32,
    /// Their names, shallowest first.
    pub states: Vec<String>,
    pub table: Table,
}

impl TableFile {
    /// The file's text: one CPU a line, so that files diff line by line.
    pub fn to_text(&self) -> String {
        let cpus: Vec<String> = self
            .cpus
            .iter()
            .map(|c| serde_json::to_string(c).expect("a table serializes"))
            .collect();
        format!(
            "{{\"version\":{},\"cpus\":[\n{}\n]}}\n",
            self.version,
            cpus.join(",\n")
        )
    }

    /// Parses a file's text; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<TableFile, String> {
        serde_json::from_str(text).map_err(|e| format!("not an idle table file: {e}"))
    }

    /// Whether this file fits @running (the scheduler's CPUs and their
    /// states), and whether every table is one BPF could have written. The
    /// error is one line naming the first difference.
    pub fn check(&self, running: &IdleStates) -> Result<(), String> {
        if !(OLDEST_READ..=VERSION).contains(&self.version) {
            return Err(format!(
                "idle table file version {} (this scx_cadence reads versions {OLDEST_READ} to {VERSION})",
                self.version
            ));
        }
        let mut seen = BTreeSet::new();
        for c in &self.cpus {
            if !seen.insert(c.cpu) {
                return Err(format!("CPU {} has two tables in the file", c.cpu));
            }
        }
        let ours: BTreeSet<u32> = running.cpus.keys().copied().collect();
        if seen != ours {
            return Err(format!(
                "the file has tables for {} CPUs ({}), the scheduler runs on {} ({})",
                seen.len(),
                cpulist::format(&seen),
                ours.len(),
                cpulist::format(&ours)
            ));
        }
        for c in &self.cpus {
            check_cpu(c, &running.cpus[&c.cpu])?;
        }
        Ok(())
    }
}

/// One CPU's entry against the states it runs with.
fn check_cpu(c: &CpuTable, states: &[super::states::IdleState]) -> Result<(), String> {
    let cpu = c.cpu;
    if c.nr_states as usize != c.states.len() {
        return Err(format!(
            "CPU {cpu}: nr_states is {} but {} state names are given",
            c.nr_states,
            c.states.len()
        ));
    }
    if c.states.len() > MAX_STATES {
        return Err(format!(
            "CPU {cpu}: {} idle states, more than the {MAX_STATES} the tables hold",
            c.states.len()
        ));
    }
    let names: Vec<&str> = states.iter().map(|s| s.name.as_str()).collect();
    if c.states.len() != names.len() {
        return Err(format!(
            "CPU {cpu}: the file has {} idle states, the scheduler runs with {}",
            c.states.len(),
            names.len()
        ));
    }
    if c.states != names {
        return Err(format!(
            "CPU {cpu}: the file's idle states are {}, the scheduler's are {}",
            c.states.join(" "),
            names.join(" ")
        ));
    }
    let t = &c.table;
    let n = t.nr_states as usize;
    if n != 0 && n != names.len() {
        return Err(format!(
            "CPU {cpu}: its table was learned for {n} states, not {}",
            names.len()
        ));
    }
    // Past its states a table is zero (idle_table_init() zeroes it, and
    // the learner never writes there); a fresh one (0 states) is all zero.
    let beyond = |what: &str, i: usize, v: u64| {
        format!("CPU {cpu}: {what}[{i}] = {v}, but its table has {n} states")
    };
    for i in n..MAX {
        for (what, v) in [
            ("hits", u64::from(t.hits[i])),
            ("intercepts", u64::from(t.intercepts[i])),
        ] {
            if v != 0 {
                return Err(beyond(what, i, v));
            }
        }
    }
    for (what, m) in [("weight", &t.weight), ("seed_weight", &t.seed_weight)] {
        for (r, row) in m.iter().enumerate() {
            for (i, &w) in row.iter().enumerate() {
                if (r >= n || i >= n) && w != 0 {
                    return Err(format!(
                        "CPU {cpu}: {what}[{r}][{i}] = {w}, but its table has {n} states"
                    ));
                }
                if w > WEIGHT_SCALE {
                    return Err(format!(
                        "CPU {cpu}: {what}[{r}][{i}] = {w} is above {WEIGHT_SCALE}"
                    ));
                }
            }
        }
    }
    if n == 0 && (t.total != 0 || t.short_idles != 0 || t.periods != 0) {
        return Err(format!(
            "CPU {cpu}: a fresh table (nr_states 0) has nothing learned, but total, \
             short_idles or periods is not 0"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::idle::reference::fresh;
    use crate::idle::states::{IdleState, StatesSource};

    fn state(name: &str, res: u32) -> IdleState {
        IdleState {
            name: name.into(),
            exit_latency_us: res / 2,
            target_residency_us: res,
            disabled: false,
            power: None,
        }
    }

    const NAMES: [&str; 4] = ["POLL", "C1", "C1E", "C6"];

    /// A scheduler on CPUs 0-3 with Skylake-SP's four states.
    fn running() -> IdleStates {
        let states: Vec<IdleState> = NAMES
            .iter()
            .zip([0, 2, 20, 600])
            .map(|(n, r)| state(n, r))
            .collect();
        IdleStates {
            cpus: (0..4)
                .map(|c| (c, states.clone()))
                .collect::<BTreeMap<_, _>>(),
            source: StatesSource::File("skx.txt".into()),
            notes: Vec::new(),
        }
    }

    /// A file that fits running(): CPU 0 fresh, the others learned a bit.
    fn good() -> TableFile {
        let cpus = (0..4)
            .map(|cpu| {
                let mut table = if cpu == 0 { Table::default() } else { fresh(4) };
                if cpu > 0 {
                    table.hits[1] = 1024 * cpu;
                    table.total = 1024 * cpu;
                    table.weight[1][2] = 7000;
                    table.periods = u64::from(cpu);
                }
                CpuTable {
                    cpu,
                    nr_states: 4,
                    states: NAMES.iter().map(|s| s.to_string()).collect(),
                    table,
                }
            })
            .collect();
        TableFile {
            version: VERSION,
            cpus,
        }
    }

    /// @f's refusal by running().
    fn refusal(f: &TableFile) -> String {
        f.check(&running()).unwrap_err()
    }

    #[test]
    fn a_file_round_trips_through_its_text() {
        let f = good();
        let text = f.to_text();
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(text.starts_with("{\"version\":3,\"cpus\":[\n{\"cpu\":0,\"nr_states\":4,"));
        assert_eq!(TableFile::parse(&text).unwrap(), f);
        assert_eq!(f.check(&running()), Ok(()));
        // The loader's write counter is not in it.
        assert!(!text.contains("generation"));
    }

    #[test]
    fn broken_text_is_refused() {
        let e = TableFile::parse("{\"version\":1}").unwrap_err();
        assert!(
            e.starts_with("not an idle table file: missing field `cpus`"),
            "{e}"
        );
        let text = good()
            .to_text()
            .replacen("\"cpu\":0,", "\"cpu\":0,\"x\":1,", 1);
        let e = TableFile::parse(&text).unwrap_err();
        assert!(e.contains("unknown field `x`"), "{e}");
        let text = good().to_text().replacen("\"total\":0", "\"total\":-1", 1);
        assert!(TableFile::parse(&text).is_err());
    }

    #[test]
    fn a_version_2_file_loads_with_no_tick_counts() {
        // Saved before teo's tick counters were kept: they start at 0.
        let mut f = good();
        f.cpus[0].table.tick_intercepts = 5;
        let text = f
            .to_text()
            .replacen("\"version\":3", "\"version\":2", 1)
            .replace(",\"tick_intercepts\":5", "")
            .replace(",\"tick_intercepts\":0", "")
            .replace(",\"total_tick\":0", "");
        assert!(!text.contains("tick"), "{text}");
        let old = TableFile::parse(&text).unwrap();
        assert_eq!(old.check(&running()), Ok(()));
        assert_eq!(old.cpus[0].table.tick_intercepts, 0);
        assert_eq!(old.cpus[1..], good().cpus[1..]);
    }

    #[test]
    fn another_version_is_refused() {
        // Version 1 (before the seed's matrix): refused, not misread.
        let mut f = good();
        f.version = 1;
        assert_eq!(
            refusal(&f),
            "idle table file version 1 (this scx_cadence reads versions 2 to 3)"
        );
    }

    #[test]
    fn other_cpus_are_refused() {
        let mut f = good();
        f.cpus.pop();
        assert_eq!(
            refusal(&f),
            "the file has tables for 3 CPUs (0-2), the scheduler runs on 4 (0-3)"
        );
        let mut f = good();
        let mut extra = f.cpus[3].clone();
        extra.cpu = 4;
        f.cpus.push(extra);
        assert_eq!(
            refusal(&f),
            "the file has tables for 5 CPUs (0-4), the scheduler runs on 4 (0-3)"
        );
        let mut f = good();
        f.cpus[3].cpu = 7;
        assert_eq!(
            refusal(&f),
            "the file has tables for 4 CPUs (0-2,7), the scheduler runs on 4 (0-3)"
        );
        let mut f = good();
        f.cpus[3].cpu = 2;
        assert_eq!(refusal(&f), "CPU 2 has two tables in the file");
    }

    #[test]
    fn other_states_are_refused() {
        let mut f = good();
        f.cpus[2].states.pop();
        f.cpus[2].nr_states = 3;
        assert_eq!(
            refusal(&f),
            "CPU 2: the file has 3 idle states, the scheduler runs with 4"
        );
        let mut f = good();
        f.cpus[2].nr_states = 3;
        assert_eq!(
            refusal(&f),
            "CPU 2: nr_states is 3 but 4 state names are given"
        );
        let mut f = good();
        f.cpus[1].states[3] = "C6P".into();
        assert_eq!(
            refusal(&f),
            "CPU 1: the file's idle states are POLL C1 C1E C6P, the scheduler's are POLL C1 C1E C6"
        );
        let mut f = good();
        f.cpus[1].states = (0..11).map(|i| format!("S{i}")).collect();
        f.cpus[1].nr_states = 11;
        assert_eq!(
            refusal(&f),
            "CPU 1: 11 idle states, more than the 10 the tables hold"
        );
    }

    #[test]
    fn tables_bpf_could_not_have_written_are_refused() {
        let mut f = good();
        f.cpus[3].table.nr_states = 3;
        assert_eq!(
            refusal(&f),
            "CPU 3: its table was learned for 3 states, not 4"
        );
        let mut f = good();
        f.cpus[3].table.nr_states = 11;
        assert_eq!(
            refusal(&f),
            "CPU 3: its table was learned for 11 states, not 4"
        );
        let mut f = good();
        f.cpus[1].table.weight[2][1] = 10_001;
        assert_eq!(refusal(&f), "CPU 1: weight[2][1] = 10001 is above 10000");
        let mut f = good();
        f.cpus[1].table.weight[4][0] = 5;
        assert_eq!(
            refusal(&f),
            "CPU 1: weight[4][0] = 5, but its table has 4 states"
        );
        let mut f = good();
        f.cpus[1].table.intercepts[9] = 5;
        assert_eq!(
            refusal(&f),
            "CPU 1: intercepts[9] = 5, but its table has 4 states"
        );
        let mut f = good();
        f.cpus[0].table.hits[0] = 1;
        assert_eq!(
            refusal(&f),
            "CPU 0: hits[0] = 1, but its table has 0 states"
        );
        let mut f = good();
        f.cpus[0].table.periods = 1;
        assert!(refusal(&f).starts_with("CPU 0: a fresh table (nr_states 0) has nothing learned"));
        // A weight of exactly 10000 is allowed.
        let mut f = good();
        f.cpus[1].table.weight[3][3] = 10_000;
        assert_eq!(f.check(&running()), Ok(()));
    }

    #[test]
    fn the_largest_file_fits_a_request() {
        // 1024 CPUs (CADENCE_MAX_CPUS), 10 states with sysfs's longest
        // names (CPUIDLE_NAME_LEN 16, 15 characters), every number at its
        // widest.
        let t = Table {
            nr_states: 10,
            hits: [u32::MAX; MAX],
            intercepts: [u32::MAX; MAX],
            total: u32::MAX,
            short_idles: u32::MAX,
            tick_intercepts: u32::MAX,
            total_tick: u32::MAX,
            weight: [[10_000; MAX]; MAX],
            seed_weight: [[10_000; MAX]; MAX],
            periods: u64::MAX,
        };
        let f = TableFile {
            version: VERSION,
            cpus: (0..crate::bpf_intf::cadence_consts_CADENCE_MAX_CPUS)
                .map(|cpu| CpuTable {
                    cpu,
                    nr_states: 10,
                    states: (0..10).map(|i| format!("{i:>15}")).collect(),
                    table: t.clone(),
                })
                .collect(),
        };
        let req = serde_json::to_vec(&crate::control::Request::IdleLoad { file: f }).unwrap();
        assert!(
            req.len() < crate::control::MAX_IDLE_REQUEST,
            "{} bytes",
            req.len()
        );
    }
}
