//! Reads the state table from sysfs cpuidle (@root is /sys, or a recorded
//! tree in the tests), as Documentation/admin-guide/pm/cpuidle.rst lays it
//! out:
//! - devices/system/cpu/cpuidle/current_driver: the driver (`none` when
//!   there is none, as in the TCG VM); current_governor, or
//!   current_governor_ro without `cpuidle_sysfs_switch`: the governor;
//! - devices/system/cpu/cpuN/cpuidle/stateK/{name,latency,residency,disable}
//!   per CPU, K from 0 up, shallow to deep; latency and residency in
//!   microseconds; `disable` is 1 when the state is disabled for that CPU
//!   (by a write to it, or from the start for a state whose
//!   `default_status` is `disabled`).
//!
//! Only online CPUs are read. A CPU without a cpuidle/ directory, or with
//! a file that cannot be read, gets no states and one note; nothing here
//! fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::states::{IdleState, IdleStates, MAX_STATES, StatesSource};
use crate::topology::cpulist;

/// A file's text, trimmed.
fn read_word(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A number file; Err says which file and why.
fn read_u32(path: &Path) -> Result<u32, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: `{}` is not a number", path.display(), text.trim()))
}

/// The states under one CPU's cpuidle/ directory.
fn cpu_states(dir: &Path) -> Result<Vec<IdleState>, String> {
    let mut states = Vec::new();
    loop {
        let state = dir.join(format!("state{}", states.len()));
        if !state.is_dir() {
            return Ok(states);
        }
        if states.len() == MAX_STATES {
            return Err(format!(
                "{}: more than {MAX_STATES} states (the kernel's CPUIDLE_STATE_MAX)",
                dir.display()
            ));
        }
        let name = state.join("name");
        let name = read_word(&name)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("cannot read {}", name.display()))?;
        states.push(IdleState {
            name,
            exit_latency_us: read_u32(&state.join("latency"))?,
            target_residency_us: read_u32(&state.join("residency"))?,
            disabled: read_u32(&state.join("disable"))? != 0,
            power: None,
        });
    }
}

/// The table of each @online CPU of the machine whose sysfs is at @root.
pub fn read(root: &Path, online: &BTreeSet<u32>) -> IdleStates {
    let cpu_dir = root.join("devices/system/cpu");
    let driver = read_word(&cpu_dir.join("cpuidle/current_driver"));
    let Some(driver) = driver.filter(|d| !d.is_empty() && d != "none") else {
        return IdleStates {
            cpus: BTreeMap::new(),
            source: StatesSource::None,
            notes: Vec::new(),
        };
    };
    let governor = ["current_governor", "current_governor_ro"]
        .iter()
        .find_map(|f| read_word(&cpu_dir.join("cpuidle").join(f)))
        .unwrap_or_else(|| "unknown".into());
    let mut notes = Vec::new();
    let mut missing = BTreeSet::new();
    let mut cpus = BTreeMap::new();
    for &cpu in online {
        let dir = cpu_dir.join(format!("cpu{cpu}/cpuidle"));
        let states = if !dir.is_dir() {
            missing.insert(cpu);
            Vec::new()
        } else {
            cpu_states(&dir).unwrap_or_else(|e| {
                notes.push(format!("CPU {cpu}: {e}: no idle states"));
                Vec::new()
            })
        };
        cpus.insert(cpu, states);
    }
    if !missing.is_empty() {
        notes.insert(
            0,
            format!(
                "CPU{} {}: no cpuidle/ directory in sysfs: no idle states",
                if missing.len() == 1 { "" } else { "s" },
                cpulist::format(&missing)
            ),
        );
    }
    IdleStates {
        cpus,
        source: StatesSource::Sysfs { driver, governor },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/idle")
            .join(name)
    }

    /// intel_idle.c skx_cstates behind poll_state.c's POLL, independent of
    /// the fixture's generator.
    fn skx(c6_disabled: bool) -> Vec<IdleState> {
        vec![
            IdleState::new("POLL", 0, 0, false),
            IdleState::new("C1", 2, 2, false),
            IdleState::new("C1E", 10, 20, false),
            IdleState::new("C6", 133, 600, c6_disabled),
        ]
    }

    #[test]
    fn intel_tree_gives_every_cpu_the_kernel_table() {
        let online = BTreeSet::from([0, 1, 2, 3]);
        let s = IdleStates::read(&fixture("intel-skx"), None, &online).unwrap();
        assert_eq!(
            s.source,
            StatesSource::Sysfs {
                driver: "intel_idle".into(),
                governor: "menu".into()
            }
        );
        assert!(s.kernel_indices());
        assert_eq!(s.cpus.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
        for states in s.cpus.values() {
            assert_eq!(*states, skx(false));
        }
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn only_online_cpus_are_read() {
        let s = read(&fixture("intel-skx"), &BTreeSet::from([1, 3]));
        assert_eq!(s.cpus.keys().copied().collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn disabled_state_and_cpu_without_cpuidle() {
        // CPU 3 has a cpuidle/ directory but is offline: not read.
        let online = BTreeSet::from([0, 1, 2]);
        let s = read(&fixture("mixed"), &online);
        assert_eq!(
            s.source,
            StatesSource::Sysfs {
                driver: "intel_idle".into(),
                governor: "teo".into()
            }
        );
        assert_eq!(s.cpus[&0], skx(false));
        assert_eq!(s.cpus[&1], skx(true));
        assert_eq!(s.cpus[&2], Vec::new());
        assert!(!s.cpus.contains_key(&3));
        assert_eq!(
            s.notes,
            ["CPU 2: no cpuidle/ directory in sysfs: no idle states"]
        );
    }

    #[test]
    fn no_cpuidle_driver_is_no_table_and_no_error() {
        let online = BTreeSet::from([0, 1]);
        let s = IdleStates::read(&fixture("no-cpuidle"), None, &online).unwrap();
        assert_eq!(s.source, StatesSource::None);
        assert!(s.cpus.is_empty());
        assert!(s.notes.is_empty());
        assert!(!s.kernel_indices());
        // No cpuidle directory at all (CONFIG_CPU_IDLE off): the same.
        let s = read(Path::new("/nonexistent"), &online);
        assert_eq!(s.source, StatesSource::None);
    }

    #[test]
    fn unreadable_state_gives_that_cpu_no_states_and_a_note() {
        let root = std::env::temp_dir().join(format!("scx_cadence-idle-{}", std::process::id()));
        let cpu = root.join("devices/system/cpu");
        std::fs::create_dir_all(cpu.join("cpuidle")).unwrap();
        std::fs::write(cpu.join("cpuidle/current_driver"), "acpi_idle\n").unwrap();
        for (n, residency) in [(0, "1\n"), (1, "lots\n")] {
            let st = cpu.join(format!("cpu{n}/cpuidle/state0"));
            std::fs::create_dir_all(&st).unwrap();
            std::fs::write(st.join("name"), "C1\n").unwrap();
            std::fs::write(st.join("latency"), "1\n").unwrap();
            std::fs::write(st.join("residency"), residency).unwrap();
            std::fs::write(st.join("disable"), "0\n").unwrap();
        }
        let s = read(&root, &BTreeSet::from([0, 1]));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            s.source,
            StatesSource::Sysfs {
                driver: "acpi_idle".into(),
                governor: "unknown".into()
            }
        );
        assert_eq!(s.cpus[&0], vec![IdleState::new("C1", 1, 1, false)]);
        assert!(s.cpus[&1].is_empty());
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(
            s.notes[0].starts_with("CPU 1: ") && s.notes[0].contains("`lots` is not a number"),
            "{:?}",
            s.notes
        );
    }
}
