//! `scx_cadence cpufreq ...`: recording the running scheduler's cpufreq
//! steps, and replaying them under other policies and bands.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::{record, replay};
use crate::recording::{Output, RecordArgs};

#[derive(Debug, Subcommand)]
pub enum CpufreqAction {
    /// Record the running scheduler's cpufreq steps (each evaluation of a
    /// CPU's target and each CPU going idle: its util, frequency ratio and
    /// the verdict of the deadband) for SECS seconds into FILE (JSON lines,
    /// docs/design.md), and print what the scheduler decided. SIGINT ends
    /// the recording early.
    Record(RecordArgs),
    /// Run a recorded trace through the BPF cpufreq code (no scheduler
    /// needed, root is) under each policy given, and print per policy and
    /// band the requests issued, those the deadband suppressed, and the time
    /// the target in force stood below and above the one util asked for.
    /// Fails if the recorded knobs do not decide every step as the
    /// scheduler did.
    Replay {
        #[clap(value_name = "FILE")]
        file: PathBuf,
        /// `recorded` (each CPU's knobs as it recorded them), a preset or a
        /// policy file, resolved against the recording machine's
        /// frequencies; repeat for several.
        #[clap(long, value_name = "recorded|FILE|PRESET", default_value = "recorded")]
        policy: Vec<String>,
        /// Sweep cpufreq.band: a list (0,16,32) or a range with a step
        /// (0..128:16), each for every policy.
        #[clap(long, value_name = "BANDS")]
        band: Option<String>,
        /// Write the trace as the first policy and band decided it (the
        /// same format, each step's verdict and target replayed), e.g. for
        /// `bench/plot.py cpufreq`.
        #[clap(long, value_name = "FILE")]
        write: Option<PathBuf>,
        #[clap(long, value_enum, default_value = "text")]
        format: Output,
    },
}

pub fn run(action: CpufreqAction) -> Result<()> {
    match action {
        CpufreqAction::Record(a) => {
            let stop = crate::recording::stop_on_signals()?;
            let rec = record::record(&a.pin_dir, a.seconds, &a.file, &stop)?;
            record::print(&rec, &a.file, a.format == Output::Json);
            Ok(())
        }
        CpufreqAction::Replay {
            file,
            policy,
            band,
            write,
            format,
        } => replay::run(
            &file,
            &policy,
            band.as_deref(),
            write.as_deref(),
            format == Output::Json,
        ),
    }
}
