//! `scx_cadence idle replay`: an `idle record` trace (see `trace`) run
//! through the BPF learner (bpf/idle_replay.bpf.c, BPF_PROG_TEST_RUN) with no
//! scheduler attached: each CPU's periods in order, from the table it had
//! when it joined the recording (fresh if none was recorded). Both
//! predictors come from the one run, as in the scheduler; the oracle is the
//! ideal itself.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::energy::{EnergyModel, EnergyUse};
use super::learner_bpf::BpfLearner;
use super::period::{IDEALS, SOURCES, Scores};
use super::score_table::{self, KERNEL, PER_CHOICE, Row, SEED, TEO};
use super::states::{IdleStates, StatesSource};
use super::table::StatesNs;
use super::trace::{self, Trace};
use crate::bpf_intf;
use crate::freq::{FreqMax, FreqTable};
use crate::policy;

/// Each traced CPU's states, whether their indices are the kernel's, and
/// the energy model of the CPUs whose states carry power.
pub struct ReplayStates {
    pub cpus: BTreeMap<u32, StatesNs>,
    pub kernel_indices: bool,
    pub energy: BTreeMap<u32, EnergyModel>,
}

impl ReplayStates {
    /// From --idle-states FILE (every CPU alike), else this machine's
    /// sysfs cpuidle; every CPU of @trace must have states.
    pub fn read(file: Option<&Path>, trace: &Trace) -> Result<ReplayStates> {
        let cpus = trace.keys().copied().collect();
        let states = IdleStates::read(Path::new("/sys"), file, &cpus)?;
        if states.source == StatesSource::None {
            bail!("no cpuidle driver here: give the states with --idle-states FILE");
        }
        let (mut out, mut energy) = (BTreeMap::new(), BTreeMap::new());
        for cpu in trace.keys() {
            match states.cpus.get(cpu) {
                Some(s) if !s.is_empty() => {
                    out.insert(*cpu, StatesNs::from_states(s));
                    if let Some(m) = EnergyModel::new(s) {
                        energy.insert(*cpu, m);
                    }
                }
                _ => bail!("CPU {cpu} of the trace has no idle states here"),
            };
        }
        Ok(ReplayStates {
            cpus: out,
            kernel_indices: states.kernel_indices(),
            energy,
        })
    }
}

/// What `idle replay` found.
pub struct Replayed {
    pub scores: Scores,
    pub periods: u64,
    pub nr_states: usize,
    /// Per source (reference::TEO .. KERNEL, then the oracle), the
    /// latency cost.
    pub early: [EarlyWakeUps; LATENCY_SOURCES],
    /// Per source as above, the energy proxy, over the CPUs whose states
    /// carry power (none: every count 0).
    pub energy: [EnergyUse; LATENCY_SOURCES],
}

/// The latency cost of a source's choices: the wake-ups that came before
/// the chosen state's target residency (the state did not pay off, and the
/// wake-up still paid its exit latency), and that exit latency summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EarlyWakeUps {
    /// Periods the source chose a state for.
    pub periods: u64,
    pub early: u64,
    pub exit_latency_ns: u64,
}

impl EarlyWakeUps {
    /// Counts a period of @duration_ns in the chosen state @state of @s.
    fn count(&mut self, s: &StatesNs, state: usize, duration_ns: u64) {
        self.periods += 1;
        if duration_ns < s.residency_ns[state] {
            self.early += 1;
            self.exit_latency_ns += s.exit_latency_ns[state];
        }
    }
}

/// The sources the latency cost is kept for: enum cadence_idle_source's
/// (teo, per_choice, seed, the kernel), then the oracle.
const LATENCY_SOURCES: usize = SOURCES + 1;
const ORACLE: usize = SOURCES;

/// The latency cost's sources by name, in that order.
fn latency_names() -> impl Iterator<Item = &'static str> {
    score_table::SOURCE_NAMES.into_iter().chain(["oracle"])
}

/// The policy @arg (a preset or a file) as the learner reads it; its
/// freq.max does not matter here and is taken as auto.
pub fn policy(arg: &str) -> Result<bpf_intf::cadence_policy> {
    let named = policy::Named::load(arg)?.with_freq_max(FreqMax::Auto);
    named.policy.to_bpf(&FreqTable::default())
}

/// Runs @trace through @learner under @pol, with every predictor running
/// whatever @pol's idle.compare says: a replay is for comparing them.
pub fn replay(
    learner: &BpfLearner,
    pol: &bpf_intf::cadence_policy,
    states: &ReplayStates,
    trace: &Trace,
) -> Result<Replayed> {
    let pol = &bpf_intf::cadence_policy {
        idle_compare: 1,
        ..*pol
    };
    let mut out = Replayed {
        scores: Scores::default(),
        periods: 0,
        nr_states: 0,
        early: Default::default(),
        energy: Default::default(),
    };
    for (cpu, t) in trace {
        let s = &states.cpus[cpu];
        let start = t.table.clone().unwrap_or_default();
        let run = learner
            .run(
                pol,
                s,
                &start,
                &out.scores,
                states.kernel_indices,
                &t.periods,
            )
            .with_context(|| format!("replaying CPU {cpu}"))?;
        let model = states.energy.get(cpu);
        for (e, p) in run.entries.iter().zip(&t.periods) {
            let d = p.duration_ns;
            let kernel = (states.kernel_indices && e.kernel >= 0 && (e.kernel as usize) < s.nr())
                .then_some((KERNEL, e.kernel as usize));
            let chosen = [
                (TEO, e.teo as usize),
                (PER_CHOICE, e.per_choice as usize),
                (SEED, e.seed as usize),
                (ORACLE, oracle_state(s, d)),
            ];
            let least = model.map(|m| (m, m.least(d)));
            for (source, state) in chosen.into_iter().chain(kernel) {
                out.early[source].count(s, state, d);
                if let Some((m, least)) = least {
                    out.energy[source].count(m, state, d, least);
                }
            }
        }
        out.scores = run.scores;
        out.periods += t.periods.len() as u64;
        out.nr_states = out.nr_states.max(s.nr());
    }
    Ok(out)
}

/// The oracle's state for a period of @duration_ns: the deepest enabled
/// state whose target residency it lasted, else the shallowest enabled.
fn oracle_state(s: &StatesNs, duration_ns: u64) -> usize {
    let first = (0..s.nr()).find(|&i| s.enabled(i)).unwrap_or(0);
    (0..s.nr())
        .rev()
        .find(|&i| s.enabled(i) && s.residency_ns[i] <= duration_ns)
        .unwrap_or(first)
}

/// The oracle's rows: every period predicted right, by either ideal.
fn oracle(periods: u64) -> Vec<Row> {
    let row = Row {
        periods,
        correct: periods,
        undershoot: vec![0; super::table::MAX - 1],
        overshoot: vec![0; super::table::MAX - 1],
    };
    vec![row; IDEALS]
}

/// `scx_cadence idle replay FILE`.
pub fn run(file: &Path, idle_states: Option<&Path>, policy_arg: &str, json: bool) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading trace {}", file.display()))?;
    let trace = trace::parse(&text).with_context(|| format!("trace {}", file.display()))?;
    let states = ReplayStates::read(idle_states, &trace)?;
    let pol = policy(policy_arg)?;
    let learner = BpfLearner::load()?;
    let r = replay(&learner, &pol, &states, &trace)?;
    if json {
        let v = serde_json::json!({
            "file": file,
            "cpus": trace.keys().collect::<Vec<_>>(),
            "periods": r.periods,
            "scores": trace::counts(&r.scores),
            "latency_cost": latency_json(&r.early),
            "energy": energy_json(&r.energy),
        });
        println!("{v}");
    } else {
        println!(
            "replayed {} idle periods of {} CPUs from {} under policy {policy_arg}:",
            r.periods,
            trace.len(),
            file.display()
        );
        print!(
            "{}",
            score_table::render(&r.scores, r.nr_states, &[("oracle", oracle(r.periods))])
        );
        print!("{}", latency_table(&r.early));
        print!("{}", energy_table(&r.energy));
    }
    Ok(())
}

/// The energy proxy as `idle replay --format json` gives it, by source
/// (totals in the states file's power unit times ns, as decimal strings:
/// they are u128 and JSON numbers lose digits above 2^53; `ratio` = spent
/// / least; `extra_per_period` in the unit times us), or null when the
/// states carry no power.
fn energy_json(energy: &[EnergyUse; LATENCY_SOURCES]) -> serde_json::Value {
    if energy.iter().all(|e| e.periods == 0) {
        return serde_json::Value::Null;
    }
    let by_source = latency_names().zip(energy).map(|(name, e)| {
        let v = serde_json::json!({
            "periods": e.periods,
            "spent": e.spent.to_string(),
            "least": e.least.to_string(),
            "ratio": e.ratio(),
            "extra_per_period": e.extra_per_period(),
        });
        (name.to_string(), v)
    });
    serde_json::Value::Object(by_source.collect())
}

/// The energy proxy as a table: per source, its energy over the least any
/// state could have spent on the same periods (src/idle/energy.rs).
fn energy_table(energy: &[EnergyUse; LATENCY_SOURCES]) -> String {
    if energy.iter().all(|e| e.periods == 0) {
        return "energy proxy: none (the states carry no power=; see docs/idle.md)\n".into();
    }
    let mut out = String::from(
        "energy proxy = power x time in the chosen state + its entry and exit (which break\n\
         even at the target residency), over the least any state would have spent, and\n\
         above it per period (power unit x us):\n",
    );
    out += &format!(
        "  {:<12} {:>8} {:>8} {:>16}\n",
        "", "periods", "ratio", "extra per period"
    );
    for (name, e) in latency_names().zip(energy) {
        if let (Some(r), Some(x)) = (e.ratio(), e.extra_per_period()) {
            out += &format!("  {:<12} {:>8} {:>8.4} {:>16.1}\n", name, e.periods, r, x);
        }
    }
    out
}

/// The latency cost as `idle replay --format json` gives it, by source.
fn latency_json(early: &[EarlyWakeUps; LATENCY_SOURCES]) -> serde_json::Value {
    let by_source = latency_names().zip(early).map(|(name, e)| {
        let v = serde_json::json!({
            "periods": e.periods,
            "early": e.early,
            "exit_latency_ns": e.exit_latency_ns,
        });
        (name.to_string(), v)
    });
    serde_json::Value::Object(by_source.collect())
}

/// The latency cost as a table: per source, the share of wake-ups that
/// came early and the exit latency they paid, per period on average.
fn latency_table(early: &[EarlyWakeUps; LATENCY_SOURCES]) -> String {
    let mut out = String::from(
        "latency cost = exit latency paid on wake-ups before the chosen state's target residency:\n",
    );
    out += &format!(
        "  {:<12} {:>8} {:>8} {:>16}\n",
        "", "periods", "early %", "us per period"
    );
    for (name, e) in latency_names().zip(early) {
        if e.periods == 0 {
            continue;
        }
        out += &format!(
            "  {:<12} {:>8} {:>8.2} {:>16.3}\n",
            name,
            e.periods,
            100.0 * e.early as f64 / e.periods as f64,
            e.exit_latency_ns as f64 / 1000.0 / e.periods as f64
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf_test_progs;
    use crate::idle::learner_bpf::Period;
    use crate::idle::reference::{self, ENDLESS, Knobs, Miss, Pick, Tick};
    use crate::idle::table::Table;
    use crate::idle::trace::{PeriodRecord, Record, TableRecord, to_line};

    const US: u64 = 1000;

    /// The Skylake-SP example file's states (docs/idle-states), in ns.
    fn skylake() -> StatesNs {
        StatesNs {
            residency_ns: vec![0, 2 * US, 20 * US, 600 * US],
            exit_latency_ns: vec![0, 2 * US, 10 * US, 133 * US],
            disabled: vec![false; 4],
            polling: vec![true, false, false, false],
        }
    }

    /// A hand-made trace: CPU 0 from a learned table (teo's bins full of
    /// intercepts in C1), CPU 2 without a table record (fresh), periods
    /// interleaved as the ring buffer gives them.
    fn hand_trace() -> (String, Table) {
        let mut table = reference::fresh(4);
        table.intercepts[1] = 8000;
        table.total = 8192;
        table.short_idles = 0;
        table.weight[1] = [1000, 3000, 5000, 1000, 0, 0, 0, 0, 0, 0];
        table.periods = 77;
        let durations = [30, 800, 3, 2000, 25, 25, 700, 1, 150, 40, 9000, 60];
        let mut lines = vec![to_line(&Record::Table(Box::new(TableRecord {
            cpu: 0,
            table: table.clone(),
        })))];
        for (i, d) in durations.iter().enumerate() {
            lines.push(to_line(&Record::Period(PeriodRecord {
                cpu: if i % 3 == 1 { 2 } else { 0 },
                start_ns: 1_000_000 * i as u64,
                duration_ns: d * US,
                sleep_length_ns: if i % 2 == 0 { ENDLESS } else { 2 * d * US },
                kernel_state: -1,
                rand: (i as u32).wrapping_mul(0x9e37_79b9),
                tick: Tick::default(),
                latency_req_ns: ENDLESS,
                kernel_miss: Miss::None,
            })));
        }
        (lines.join("\n"), table)
    }

    /// The reference over one CPU's periods from @table.
    fn reference_scores(
        k: &Knobs,
        s: &StatesNs,
        table: &Table,
        periods: &[Period],
        sc: &mut Scores,
    ) {
        let mut t = table.clone();
        for p in periods {
            let e = reference::predict(&mut t, s, k, p, false);
            reference::learn(&mut t, s, k, &e, p.duration_ns);
            reference::score(sc, s, &e, p.duration_ns, false);
        }
    }

    #[test]
    fn a_hand_made_trace_replays_as_the_reference_scores_it() {
        let (text, table) = hand_trace();
        let trace = trace::parse(&text).unwrap();
        assert_eq!(trace[&0].table, Some(table.clone()));
        assert_eq!(trace[&0].periods.len(), 8);
        assert_eq!(trace[&2].table, None);
        assert_eq!(trace[&2].periods.len(), 4);

        // The balanced preset's knobs, as the reference takes them.
        let pol = policy("balanced").unwrap();
        let k = Knobs {
            pick: if pol.idle_pick == bpf_intf::cadence_idle_pick_CADENCE_IDLE_PICK_HEAVIEST {
                Pick::Heaviest
            } else {
                Pick::Random
            },
            learning_rate: pol.idle_learning_rate,
        };
        let mut want = Scores::default();
        reference_scores(&k, &skylake(), &table, &trace[&0].periods, &mut want);
        reference_scores(
            &k,
            &skylake(),
            &Table::default(),
            &trace[&2].periods,
            &mut want,
        );
        // Twelve periods, each scored once per ideal for teo, per-choice
        // and the seed.
        let rows = score_table::rows(&want);
        assert_eq!(rows[reference::BY_RESIDENCY][reference::TEO].periods, 12);
        assert_eq!(rows[reference::BY_EXIT][reference::PER_CHOICE].periods, 12);
        assert_eq!(rows[reference::BY_EXIT][reference::SEED].periods, 12);
        assert_eq!(rows[reference::BY_EXIT][reference::KERNEL].periods, 0);

        if bpf_test_progs::skip_without_bpf().is_none() {
            return;
        }
        let learner = BpfLearner::load().unwrap();
        let states = ReplayStates {
            cpus: [(0, skylake()), (2, skylake())].into(),
            kernel_indices: false,
            energy: BTreeMap::new(),
        };
        let got = replay(&learner, &pol, &states, &trace).unwrap();
        assert_eq!(got.periods, 12);
        assert_eq!(got.scores, want);
        // Starting CPU 0 fresh instead gives other counts: the table record
        // is used.
        let mut fresh = trace.clone();
        fresh.get_mut(&0).unwrap().table = None;
        let other = replay(&learner, &pol, &states, &fresh).unwrap();
        assert_ne!(other.scores, want);
    }

    /// The latency cost by hand: five 30 us periods, no timer known, on
    /// Skylake-SP's states from fresh tables. The first period teo takes
    /// C6 (600 us): it wakes 570 us early and pays C6's 133 us exit
    /// latency; the per-choice pick (the heaviest of C6's fresh row) and
    /// the seed (teo did not walk, so no draw) take C6 as well. From then
    /// on teo walks to C1 (2 us), the per-choice row of C1 says C1 and the
    /// seed draws POLL or C1: none wakes early. The oracle's C1E (20 us)
    /// never does; the kernel's state is not known.
    #[test]
    fn the_latency_cost_counts_exit_latency_paid_on_early_wake_ups() {
        if bpf_test_progs::skip_without_bpf().is_none() {
            return;
        }
        let period = PeriodRecord {
            cpu: 0,
            start_ns: 0,
            duration_ns: 30 * US,
            sleep_length_ns: ENDLESS,
            kernel_state: -1,
            rand: 0,
            tick: Tick::default(),
            latency_req_ns: ENDLESS,
            kernel_miss: Miss::None,
        };
        let lines: Vec<String> = (0..5)
            .map(|i| {
                to_line(&Record::Period(PeriodRecord {
                    start_ns: i * 100 * US,
                    rand: i as u32 * 0x9e37_79b9,
                    ..period
                }))
            })
            .collect();
        let trace = trace::parse(&lines.join("\n")).unwrap();
        let states = ReplayStates {
            cpus: [(0, skylake())].into(),
            kernel_indices: false,
            energy: BTreeMap::new(),
        };
        let learner = BpfLearner::load().unwrap();
        let got = replay(&learner, &policy("balanced").unwrap(), &states, &trace).unwrap();
        let c6_once = EarlyWakeUps {
            periods: 5,
            early: 1,
            exit_latency_ns: 133 * US,
        };
        assert_eq!(got.early[TEO], c6_once);
        assert_eq!(got.early[PER_CHOICE], c6_once);
        assert_eq!(got.early[SEED], c6_once);
        assert_eq!(got.early[KERNEL], EarlyWakeUps::default());
        let never = EarlyWakeUps {
            periods: 5,
            ..Default::default()
        };
        assert_eq!(got.early[ORACLE], never);
        let table = latency_table(&got.early);
        assert!(
            table.contains("  teo                 5    20.00           26.600\n"),
            "{table}"
        );
        assert!(!table.contains("kernel"), "{table}");
    }

    /// The energy proxy end to end: five 1 ms periods, no timer known, on
    /// the Juno A57 file's states (src/idle/energy.rs works its numbers,
    /// in power x us: WFI 80 x 1000 = 80000 for 1 ms, cluster-sleep-0
    /// 132500 + 24 x 1000 = 156500). From a fresh table teo takes the
    /// deepest state once, then WFI, as with Skylake's states above; the
    /// oracle's WFI is the least.
    #[test]
    fn the_energy_proxy_of_a_states_file_with_power() {
        if bpf_test_progs::skip_without_bpf().is_none() {
            return;
        }
        let lines: Vec<String> = (0..5)
            .map(|i| {
                to_line(&Record::Period(PeriodRecord {
                    cpu: 0,
                    start_ns: i * 2000 * US,
                    duration_ns: 1000 * US,
                    sleep_length_ns: ENDLESS,
                    kernel_state: -1,
                    rand: i as u32 * 0x9e37_79b9,
                    tick: Tick::default(),
                    latency_req_ns: ENDLESS,
                    kernel_miss: Miss::None,
                }))
            })
            .collect();
        let trace = trace::parse(&lines.join("\n")).unwrap();
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/idle-states/juno-r0-a57.txt");
        let states = ReplayStates::read(Some(&file), &trace).unwrap();
        assert!(states.energy.contains_key(&0));
        let learner = BpfLearner::load().unwrap();
        let got = replay(&learner, &policy("balanced").unwrap(), &states, &trace).unwrap();
        let units = |n: u128| n * u128::from(US);
        let least = units(5 * 80_000);
        assert_eq!(
            got.energy[ORACLE],
            EnergyUse {
                periods: 5,
                spent: least,
                least
            }
        );
        assert_eq!(got.energy[TEO].least, least);
        assert_eq!(got.energy[TEO].spent, units(156_500 + 4 * 80_000));
        // (476500 - 400000) / 5 periods.
        assert_eq!(got.energy[TEO].extra_per_period(), Some(15_300.0));
        assert_eq!(got.energy[KERNEL], EnergyUse::default());
        let table = energy_table(&got.energy);
        assert!(
            table.contains("  oracle              5   1.0000              0.0\n"),
            "{table}"
        );
        assert!(table.contains("  teo                 5   1.19"), "{table}");
        // Without power in the states: no proxy, said so.
        let plain = ReplayStates {
            energy: BTreeMap::new(),
            ..states
        };
        let got = replay(&learner, &policy("balanced").unwrap(), &plain, &trace).unwrap();
        assert_eq!(energy_json(&got.energy), serde_json::Value::Null);
        assert!(energy_table(&got.energy).starts_with("energy proxy: none"));
    }

    #[test]
    fn a_states_file_gives_every_traced_cpu_its_states() {
        let (text, _) = hand_trace();
        let trace = trace::parse(&text).unwrap();
        let file =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/idle-states/intel-skylake-sp.txt");
        let s = ReplayStates::read(Some(&file), &trace).unwrap();
        assert!(!s.kernel_indices);
        assert_eq!(s.cpus[&0], skylake());
        assert_eq!(s.cpus[&2], skylake());
    }

    #[test]
    fn the_oracle_is_always_right() {
        let text = score_table::render(&Scores::default(), 4, &[("oracle", oracle(5))]);
        assert!(
            text.contains(
                "oracle             5   100.00   0.00   0.00   0.00   0.00   0.00   0.00"
            ),
            "{text}"
        );
    }
}
