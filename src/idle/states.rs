//! The state table: per online CPU, its idle states shallow to deep, as
//! the kernel's cpuidle driver describes them (sysfs, see
//! `states_sysfs`) or as an `--idle-states FILE` gives them for every CPU
//! (see `states_file` for the format). `scx_cadence idle-states` prints it
//! with `render`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{states_file, states_sysfs};
use crate::topology::cpulist;

/// Most states per CPU: the kernel's CPUIDLE_STATE_MAX
/// (include/linux/cpuidle.h), so that every sysfs table fits; also the
/// size of the BPF per-CPU tables and of seed 003's state_mat[10][10].
pub const MAX_STATES: usize = 10;

/// One idle state, as sysfs cpuidle/stateK shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IdleState {
    pub name: String,
    /// Worst-case time from the wake-up signal to the first instruction
    /// (sysfs `latency`, microseconds).
    pub exit_latency_us: u32,
    /// Shortest stay (entry included) for which the state saves energy
    /// over the shallower ones (sysfs `residency`, microseconds).
    pub target_residency_us: u32,
    /// Not to be entered on this CPU (sysfs `disable` = 1, or the word
    /// `disabled` in a file).
    pub disabled: bool,
    /// Power drawn while in the state, in any unit the same on every state
    /// (`power=N` in a file; only `idle replay`'s energy proxy reads it).
    /// Never read from sysfs: its `power` is 0 under intel_idle and
    /// UINT_MAX for the ARM drivers' WFI, not a figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<u32>,
}

#[cfg(test)]
impl IdleState {
    /// A state in one line, for the tests' expected tables.
    pub fn new(name: &str, exit_latency_us: u32, target_residency_us: u32, disabled: bool) -> Self {
        IdleState {
            name: name.into(),
            exit_latency_us,
            target_residency_us,
            disabled,
            power: None,
        }
    }
}

/// Where the table came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum StatesSource {
    /// /sys/devices/system/cpu/cpuidle: the driver and the governor in
    /// force.
    Sysfs { driver: String, governor: String },
    /// `--idle-states FILE`.
    File(PathBuf),
    /// No cpuidle driver and no file: no table, the learner stays off.
    None,
}

/// The idle states of each online CPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IdleStates {
    /// Online CPU -> its states, index = the state's index. A CPU that
    /// sysfs gives no states (no cpuidle/ directory) has an empty table.
    pub cpus: BTreeMap<u32, Vec<IdleState>>,
    pub source: StatesSource,
    /// What was odd in sysfs (CPUs without states, unreadable files), one
    /// line each, for a warning at start and for `idle-states`.
    pub notes: Vec<String>,
}

impl IdleStates {
    /// --idle-states FILE if given, else sysfs cpuidle under `sysfs`
    /// (normally /sys). `online` = the online CPUs.
    /// No cpuidle driver (e.g. a TCG VM): Ok with source None and empty
    /// cpus (the learner is then off; not an error).
    pub fn read(sysfs: &Path, file: Option<&Path>, online: &BTreeSet<u32>) -> Result<IdleStates> {
        let Some(path) = file else {
            return Ok(states_sysfs::read(sysfs, online));
        };
        let states = read_file(path)?;
        Ok(IdleStates {
            cpus: online.iter().map(|&c| (c, states.clone())).collect(),
            source: StatesSource::File(path.to_path_buf()),
            notes: Vec::new(),
        })
    }

    /// Whether the state indices are the kernel's own (the source is
    /// sysfs), i.e. the power:cpu_idle tracepoint's state index means the
    /// same state.
    pub fn kernel_indices(&self) -> bool {
        matches!(self.source, StatesSource::Sysfs { .. })
    }

    /// One line for the log at start.
    pub fn summary(&self) -> String {
        let groups = groups(&self.cpus);
        let tables: Vec<String> = groups
            .iter()
            .map(|(states, cpus)| {
                let names: Vec<&str> = states.iter().map(|s| s.name.as_str()).collect();
                format!(
                    "{}: {}",
                    cpus_word(cpus),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(" ")
                    }
                )
            })
            .collect();
        match &self.source {
            StatesSource::None => {
                "idle states: none (no cpuidle driver; --idle-states FILE gives them)".into()
            }
            source => format!(
                "idle states from {}: {}",
                describe(source),
                tables.join("; ")
            ),
        }
    }
}

/// The states of an --idle-states file; errors name the file and the line.
pub fn read_file(path: &Path) -> Result<Vec<IdleState>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading idle-states file {}", path.display()))?;
    states_file::parse(&text).with_context(|| format!("idle-states file {}", path.display()))
}

/// Where @source's states came from, in words.
fn describe(source: &StatesSource) -> String {
    match source {
        StatesSource::Sysfs { driver, governor } => {
            format!("sysfs: cpuidle driver {driver}, governor {governor}")
        }
        StatesSource::File(p) => format!("file {}", p.display()),
        StatesSource::None => "nowhere".into(),
    }
}

/// `CPU 3` or `CPUs 0-2,4`.
fn cpus_word(cpus: &BTreeSet<u32>) -> String {
    let s = if cpus.len() == 1 { "" } else { "s" };
    format!("CPU{s} {}", cpulist::format(cpus))
}

/// CPUs with identical tables, in the order of their lowest CPU.
fn groups(cpus: &BTreeMap<u32, Vec<IdleState>>) -> Vec<(&[IdleState], BTreeSet<u32>)> {
    let mut out: Vec<(&[IdleState], BTreeSet<u32>)> = Vec::new();
    for (&cpu, states) in cpus {
        match out.iter_mut().find(|(s, _)| *s == states.as_slice()) {
            Some((_, set)) => {
                set.insert(cpu);
            }
            None => out.push((states.as_slice(), BTreeSet::from([cpu]))),
        }
    }
    out
}

/// `scx_cadence idle-states`: the source, then one table per group of CPUs
/// with identical states, then the notes.
pub fn render(s: &IdleStates) -> String {
    let mut out = String::new();
    if s.source == StatesSource::None {
        let _ = writeln!(
            out,
            "no cpuidle driver: no idle states (the idle learner is off); \
             --idle-states FILE gives them"
        );
    } else {
        let _ = writeln!(
            out,
            "idle states from {} (state indices {})",
            describe(&s.source),
            if s.kernel_indices() {
                "are the kernel's"
            } else {
                "are the file's, not the kernel's"
            }
        );
    }
    for (states, cpus) in groups(&s.cpus) {
        if states.is_empty() {
            let _ = writeln!(out, "{}: no idle states", cpus_word(&cpus));
            continue;
        }
        let _ = writeln!(out, "{}:", cpus_word(&cpus));
        let width = states
            .iter()
            .map(|st| st.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        // A file's power= column, only when it has one.
        let powered = states.iter().any(|st| st.power.is_some());
        let _ = writeln!(
            out,
            "  {:>5}  {:<width$}  {:>15}  {:>19}  disabled{}",
            "state",
            "name",
            "exit latency us",
            "target residency us",
            if powered { "  power" } else { "" }
        );
        for (i, st) in states.iter().enumerate() {
            let disabled = if st.disabled { "yes" } else { "no" };
            let last = match st.power {
                Some(p) if powered => format!("{disabled:<8}  {p:>5}"),
                _ => disabled.to_string(),
            };
            let _ = writeln!(
                out,
                "  {:>5}  {:<width$}  {:>15}  {:>19}  {last}",
                i, st.name, st.exit_latency_us, st.target_residency_us,
            );
        }
    }
    for n in &s.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn examples() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/idle-states")
    }

    /// (name, exit latency, target residency) of each state in @path.
    fn table(path: &Path) -> Vec<(String, u32, u32)> {
        read_file(path)
            .unwrap()
            .into_iter()
            .map(|s| {
                assert!(!s.disabled);
                (s.name, s.exit_latency_us, s.target_residency_us)
            })
            .collect()
    }

    fn owned(t: &[(&str, u32, u32)]) -> Vec<(String, u32, u32)> {
        t.iter().map(|&(n, l, r)| (n.to_string(), l, r)).collect()
    }

    #[test]
    fn every_shipped_example_parses() {
        let mut n = 0;
        for e in std::fs::read_dir(examples()).unwrap() {
            let path = e.unwrap().path();
            let states = read_file(&path).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(!states.is_empty(), "{}", path.display());
            n += 1;
        }
        assert!(n >= 2, "only {n} example files");
    }

    #[test]
    fn intel_example_is_skx_cstates_behind_poll() {
        // drivers/idle/intel_idle.c skx_cstates; poll_state.c's POLL.
        assert_eq!(
            table(&examples().join("intel-skylake-sp.txt")),
            owned(&[
                ("POLL", 0, 0),
                ("C1", 2, 2),
                ("C1E", 10, 20),
                ("C6", 133, 600)
            ])
        );
    }

    #[test]
    fn power9_example_is_skiboots_table_in_microseconds() {
        // skiboot power9_cpu_idle_states (ns), rounded up to us as
        // cpuidle-powernv.c does; snooze in front.
        let ns = [
            ("stop0_lite", 1_000, 10_000),
            ("stop0", 2_000, 20_000),
            ("stop1", 5_000, 50_000),
            ("stop2", 10_000, 100_000),
            ("stop4", 100_000, 10_000_000),
            ("stop5", 200_000, 20_000_000),
        ];
        let mut want = vec![("snooze".to_string(), 0, 0)];
        want.extend(ns.iter().map(|&(n, l, r): &(&str, u32, u32)| {
            (n.to_string(), l.div_ceil(1000), r.div_ceil(1000))
        }));
        assert_eq!(table(&examples().join("power9.txt")), want);
    }

    #[test]
    fn juno_example_is_the_device_tree_and_energy_model() {
        // juno.dts: entry 300 + exit 1200 us (dt_idle_states.c adds them),
        // min-residency 2000 / 2500 us; psci WFI 1 / 1 us.
        // juno-sched-energy.dtsi idle-cost-data: core 15 15 0 0, cluster
        // 65 65 65 24 (active idle, WFI, cpu-sleep-0, cluster-sleep-0).
        let (core, cluster) = ([15, 0, 0], [65, 65, 24]);
        let got = read_file(&examples().join("juno-r0-a57.txt")).unwrap();
        let want: Vec<IdleState> = [("WFI", 1, 1), ("cpu-sleep-0", 300 + 1200, 2000)]
            .into_iter()
            .chain([("cluster-sleep-0", 300 + 1200, 2500)])
            .enumerate()
            .map(|(i, (name, l, r))| IdleState {
                power: Some(core[i] + cluster[i]),
                ..IdleState::new(name, l, r, false)
            })
            .collect();
        assert_eq!(got, want);
        let s = IdleStates {
            cpus: BTreeMap::from([(0, got)]),
            source: StatesSource::File("juno-r0-a57.txt".into()),
            notes: Vec::new(),
        };
        let text = render(&s);
        assert!(
            text.contains(
                "  state  name             exit latency us  target residency us  disabled  power\n\
                 \x20     0  WFI                            1                    1  no           80\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_file_applies_to_every_online_cpu_with_its_own_indices() {
        let file = examples().join("power9.txt");
        let online = BTreeSet::from([0, 2, 5]);
        // The sysfs root is not read when a file is given.
        let s = IdleStates::read(Path::new("/nonexistent"), Some(&file), &online).unwrap();
        assert_eq!(s.source, StatesSource::File(file.clone()));
        assert!(!s.kernel_indices());
        assert_eq!(s.cpus.keys().copied().collect::<Vec<_>>(), [0, 2, 5]);
        assert!(s.cpus.values().all(|t| *t == s.cpus[&0] && t.len() == 7));
        assert!(s.notes.is_empty());
    }

    #[test]
    fn a_bad_file_is_an_error_naming_file_and_line() {
        let file = std::env::temp_dir().join(format!("scx_cadence-states-{}", std::process::id()));
        std::fs::write(&file, "C1 2 2\nC1E ten 20\n").unwrap();
        let err = IdleStates::read(Path::new("/sys"), Some(&file), &BTreeSet::from([0]));
        std::fs::remove_file(&file).unwrap();
        let msg = format!("{:#}", err.unwrap_err());
        assert!(
            msg.starts_with(&format!(
                "idle-states file {}: line 2: `C1E ten 20`",
                file.display()
            )),
            "{msg}"
        );
        let msg = format!("{:#}", read_file(Path::new("/nonexistent/x")).unwrap_err());
        assert!(
            msg.starts_with("reading idle-states file /nonexistent/x: "),
            "{msg}"
        );
    }

    #[test]
    fn render_groups_identical_tables() {
        let st = |name: &str, res: u32, disabled| IdleState {
            name: name.into(),
            exit_latency_us: res / 2,
            target_residency_us: res,
            disabled,
            power: None,
        };
        let a = vec![st("C1", 2, false), st("C6", 600, false)];
        let b = vec![st("C1", 2, false), st("C6", 600, true)];
        let s = IdleStates {
            cpus: BTreeMap::from([(0, a.clone()), (1, b), (2, a), (3, Vec::new())]),
            source: StatesSource::Sysfs {
                driver: "intel_idle".into(),
                governor: "menu".into(),
            },
            notes: vec!["CPU 3: no cpuidle/ directory in sysfs: no idle states".into()],
        };
        let want = "\
idle states from sysfs: cpuidle driver intel_idle, governor menu (state indices are the kernel's)
CPUs 0,2:
  state  name  exit latency us  target residency us  disabled
      0  C1                  1                    2  no
      1  C6                300                  600  no
CPU 1:
  state  name  exit latency us  target residency us  disabled
      0  C1                  1                    2  no
      1  C6                300                  600  yes
CPU 3: no idle states
note: CPU 3: no cpuidle/ directory in sysfs: no idle states
";
        assert_eq!(render(&s), want);
        assert_eq!(
            s.summary(),
            "idle states from sysfs: cpuidle driver intel_idle, governor menu: \
             CPUs 0,2: C1 C6; CPU 1: C1 C6; CPU 3: none"
        );
    }
}
