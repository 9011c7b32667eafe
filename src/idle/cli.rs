//! `scx_cadence idle ...`: the running learner's scores, and recording and
//! replaying idle periods.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::{record, replay};
use crate::recording::{Output, RecordArgs};

#[derive(Debug, Subcommand)]
pub enum IdleAction {
    /// The running scheduler's idle-state predictions since it started,
    /// scored against the state that would have been ideal (Correct, US k:
    /// k states too deep, OS k: k states too shallow), for teo, seed 003,
    /// the per-choice variant and the kernel's own choice.
    Stats {
        /// One table per CPU as well.
        #[clap(long)]
        per_cpu: bool,
    },
    /// Record the running scheduler's idle periods for SECS seconds into
    /// FILE (JSON lines, docs/idle.md), and print how the scheduler scored
    /// them. SIGINT ends the recording early.
    Record(RecordArgs),
    /// Run a recorded trace through the BPF learner (no scheduler needed,
    /// root is) and print the score table (as `idle stats`) for teo, seed
    /// 003, the per-choice variant and an oracle.
    Replay {
        #[clap(value_name = "FILE")]
        file: PathBuf,
        /// The states the trace's CPUs have, as for the scheduler; default:
        /// this machine's sysfs cpuidle.
        #[clap(long, value_name = "STATES")]
        idle_states: Option<PathBuf>,
        /// The policy whose [idle] knobs to learn with: a preset or a file.
        #[clap(long, value_name = "FILE|PRESET", default_value = crate::policy::DEFAULT_PRESET)]
        policy: String,
        #[clap(long, value_enum, default_value = "text")]
        format: Output,
    },
}

pub fn run(action: IdleAction) -> Result<()> {
    match action {
        IdleAction::Stats { per_cpu } => print_stats(&crate::stats::fetch_once()?, per_cpu),
        IdleAction::Record(a) => {
            let stop = crate::recording::stop_on_signals()?;
            let rec = record::record(&a.pin_dir, a.seconds, &a.file, &stop)?;
            record::print(&rec, &a.file, a.format == Output::Json);
            Ok(())
        }
        IdleAction::Replay {
            file,
            idle_states,
            policy,
            format,
        } => replay::run(
            &file,
            idle_states.as_deref(),
            &policy,
            format == Output::Json,
        ),
    }
}

/// `idle stats`: the score table of the machine, and per CPU.
fn print_stats(m: &crate::stats::Metrics, per_cpu: bool) -> Result<()> {
    use super::score_table::{self, PER_CHOICE, SEED, TEO, render};
    let n = m.idle_nr_states as usize;
    if n == 0 {
        anyhow::bail!(
            "the idle learner is off: the scheduler found no idle states (see `scx_cadence idle-states`)"
        );
    }
    println!(
        "idle learner: predictor {} acting, {} states, {} periods, {} lost exits; PM QoS limits on {} CPUs",
        m.idle_predictor, n, m.idle.idle_periods, m.idle.idle_lost_exits, m.idle_qos_cpus
    );
    let scores = m.idle.scores();
    print!("{}", render(&scores, n, &[]));
    let by_residency = &score_table::rows(&scores)[0];
    let short: Vec<_> = [PER_CHOICE, SEED]
        .into_iter()
        .filter(|&src| by_residency[src].periods < by_residency[TEO].periods)
        .map(|src| score_table::SOURCE_NAMES[src])
        .collect();
    if !short.is_empty() {
        println!(
            "{} scored on fewer periods than teo: a matrix predictor runs only while it acts, or with idle.compare = true",
            short.join(" and ")
        );
    }
    if per_cpu {
        for (cpu, c) in &m.cpu_idle {
            println!("CPU {cpu}: {} periods", c.idle_periods);
            print!("{}", render(&c.scores(), n, &[]));
        }
    }
    Ok(())
}
