//! scx_cadence command line: options, logging, signals; the work is done in
//! the modules below.

mod bpf_intf;
mod bpf_skel;
mod preflight;
mod scheduler;
mod stats;
mod topology;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use scx_utils::libbpf_clap_opts::LibbpfOpts;

/// scx_cadence: a weighted-fair sched_ext scheduler that places tasks
/// big-core-aware and will steer CPU frequency from frequency-invariant
/// utilization.
///
/// Runs until SIGINT or SIGTERM; the kernel falls back to its default
/// scheduler when it exits.
#[derive(Debug, Parser)]
#[command(name = "scx_cadence", version)]
pub struct Opts {
    /// Longest slice in microseconds, given when no other task waits for the
    /// CPU; slices shrink as more tasks wait. The default, 3000, is EEVDF's
    /// base slice on machines with 8 or more CPUs.
    #[clap(long, default_value = "3000", value_parser = clap::value_parser!(u64).range(100..=100_000))]
    pub slice_max_us: u64,

    /// Shortest slice in microseconds, however many tasks wait.
    #[clap(long, default_value = "250", value_parser = clap::value_parser!(u64).range(50..=100_000))]
    pub slice_min_us: u64,

    /// How far behind the most advanced running task, in microseconds of
    /// virtual time, a task that slept may start: the most priority sleeping
    /// can earn.
    #[clap(long, default_value = "3000", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub slice_lag_us: u64,

    /// Bytes of kernel debug dump kept when the scheduler exits on an error
    /// (0: the kernel's default).
    #[clap(long, default_value = "0")]
    pub exit_dump_len: u32,

    /// Print stats every SECS seconds while running the scheduler.
    #[clap(long, value_name = "SECS")]
    pub stats: Option<f64>,

    /// Print the stats of an already running instance every SECS seconds;
    /// does not load a scheduler.
    #[clap(long, value_name = "SECS")]
    pub monitor: Option<f64>,

    /// Describe every statistic and exit.
    #[clap(long)]
    pub help_stats: bool,

    /// Verbose output, including libbpf's messages.
    #[clap(short = 'v', long)]
    pub verbose: bool,

    #[clap(flatten, next_help_heading = "Libbpf Options")]
    pub libbpf: LibbpfOpts,
}

fn init_logging(verbose: bool) -> Result<()> {
    let level = if verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    let cfg = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .set_location_level(simplelog::LevelFilter::Off)
        .build();
    simplelog::TermLogger::init(
        level,
        cfg,
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Never,
    )?;
    Ok(())
}

/// Prints stats of the (local or already running) instance every @secs.
fn spawn_monitor(secs: f64, shutdown: Arc<AtomicBool>) -> Result<std::thread::JoinHandle<()>> {
    let intv = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("the stats interval must be a positive number of seconds")?;
    Ok(std::thread::spawn(move || {
        if let Err(e) = stats::monitor(intv, shutdown) {
            log::warn!("stats monitor stopped: {e:#}");
        }
    }))
}

fn run(opts: Opts) -> Result<()> {
    if opts.help_stats {
        stats::server_data().describe_meta(&mut std::io::stdout(), None)?;
        return Ok(());
    }
    init_logging(opts.verbose)?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the SIGINT/SIGTERM handler")?;

    if let Some(secs) = opts.monitor {
        let _ = spawn_monitor(secs, shutdown)?.join();
        return Ok(());
    }

    preflight::check_all(Path::new(preflight::SCHED_EXT_SYSFS))?;
    if opts.slice_min_us > opts.slice_max_us {
        anyhow::bail!(
            "--slice-min-us ({}) must not exceed --slice-max-us ({})",
            opts.slice_min_us,
            opts.slice_max_us
        );
    }
    if let Some(secs) = opts.stats {
        spawn_monitor(secs, shutdown.clone())?;
    }
    scheduler::run_until_shutdown(&opts, shutdown)
}

fn main() -> ExitCode {
    // Usage errors: one line and exit code 2; --help and --version as usual.
    let opts = match Opts::try_parse() {
        Ok(opts) => opts,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("invalid arguments");
            eprintln!(
                "scx_cadence: {} (see --help)",
                first.trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
    };
    match run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_cadence: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
