//! scx_cadence command line: options, logging, signals; the work is done in
//! the modules below.

mod bpf_intf;
#[macro_use]
mod bpf_skel;
#[cfg(test)]
mod bpf_stack_tests;
#[cfg(test)]
mod bpf_test_progs;
mod cgroups;
mod control;
mod cpufreq;
mod freq;
mod idle;
mod instance;
#[cfg(test)]
mod latency;
#[cfg(test)]
mod machines_tests;
mod owned;
#[cfg(test)]
mod pelt;
mod pins;
mod policy;
mod preflight;
mod recording;
mod scheduler;
mod stats;
mod topology;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use scx_utils::build_id;
use scx_utils::libbpf_clap_opts::LibbpfOpts;
use signal_hook::SigId;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::stats::Format;

/// scx_cadence: a weighted-fair sched_ext scheduler that places tasks
/// big-core-aware and will steer CPU frequency from frequency-invariant
/// utilization.
///
/// Without a subcommand it runs the scheduler until SIGINT or SIGTERM; the
/// kernel falls back to its default scheduler when it exits. SIGHUP reloads
/// the policy file and applies --set and --freq-max again.
#[derive(Debug, Parser)]
#[command(name = "scx_cadence", version, args_conflicts_with_subcommands = true)]
pub struct Opts {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[clap(flatten)]
    pub run: RunOpts,
}

/// Options of the scheduler itself.
#[derive(Debug, clap::Args)]
pub struct RunOpts {
    /// The policy to start with: a preset (performance, balanced, powersave)
    /// or a TOML file (a path with a `/` or a .toml suffix).
    #[clap(long, value_name = "FILE|PRESET", default_value = policy::DEFAULT_PRESET)]
    pub policy: String,

    /// Change one policy field at start, e.g. --set slice.max_us=5000;
    /// may be repeated.
    #[clap(long = "set", value_name = "KEY=VALUE")]
    pub assignments: Vec<String>,

    /// Control socket that `scx_cadence ctl` talks to.
    #[clap(long, value_name = "PATH", default_value = control::DEFAULT_SOCKET)]
    pub ctl_socket: PathBuf,

    /// bpffs directory where the maps are pinned while the scheduler runs.
    #[clap(long, value_name = "DIR", default_value = pins::DEFAULT_PIN_DIR)]
    pub pin_dir: PathBuf,

    /// Bytes of kernel debug dump kept when the scheduler exits on an error
    /// (0: the kernel's default).
    #[clap(long, default_value = "0")]
    pub exit_dump_len: u32,

    /// sched_ext's watchdog: the kernel ends the scheduler (and falls back
    /// to its default one) when a runnable task has not run for MS
    /// milliseconds; 5000..=30000, 0 for the kernel's default (30 s).
    #[clap(long, value_name = "MS", default_value = "0", value_parser = parse_stall_timeout)]
    pub stall_timeout_ms: u32,

    /// Print stats every SECS seconds while running the scheduler.
    #[clap(long, value_name = "SECS")]
    pub stats: Option<f64>,

    /// Print the stats of an already running instance every SECS seconds;
    /// does not load a scheduler.
    #[clap(long, value_name = "SECS")]
    pub monitor: Option<f64>,

    /// How --stats and --monitor print.
    #[clap(long, value_enum, default_value = "text")]
    pub format: Format,

    /// With --stats and --monitor: one line per CPU as well.
    #[clap(long)]
    pub per_cpu: bool,

    /// Describe every statistic and exit.
    #[clap(long)]
    pub help_stats: bool,

    /// freq_max, the frequency a ratio of 1024 stands for: auto, 1c..Nc
    /// (N-core turbo), base, max or MHz; sets the policy's freq.max. See
    /// `scx_cadence freq-max --list` for this machine's choices.
    #[clap(long, value_name = "CHOICE", value_parser = parse_freq_max)]
    pub freq_max: Option<freq::FreqMax>,

    /// Test only: read APERF/MPERF from the freq_inject map, as if the base
    /// frequency (MPERF's rate) were MHZ. For VMs, which have no APERF/MPERF.
    #[clap(long, value_name = "MHZ", hide = true)]
    pub test_freq_inject: Option<u32>,

    /// Describe the CPUs by hand instead of reading sysfs: small, big,
    /// llc and node lines of CPU lists (see `scx_cadence topology --help`).
    #[clap(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,

    /// Give every CPU these idle states instead of reading sysfs cpuidle:
    /// one `name exit_latency_us target_residency_us [power=N] [disabled]`
    /// line per state (see `scx_cadence idle-states --help`).
    #[clap(long, value_name = "FILE")]
    pub idle_states: Option<PathBuf>,

    /// Test only: cpufreq targets follow the util in the util_inject map
    /// instead of PELT, so that VM tests can drive the deadband exactly.
    #[clap(long, hide = true)]
    pub test_util_inject: bool,

    /// Test only: after reading the CPU topology, wait until FILE exists, so
    /// that a VM test can hotplug a CPU before the scheduler attaches.
    #[clap(long, value_name = "FILE", hide = true)]
    pub test_wait_after_topology: Option<PathBuf>,

    /// Verbose output, including libbpf's messages; with --stats and
    /// --monitor, every counter instead of the short line.
    #[clap(short = 'v', long)]
    pub verbose: bool,

    #[clap(flatten, next_help_heading = "Libbpf Options")]
    pub libbpf: LibbpfOpts,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Change or show the policy of the running scheduler, without
    /// detaching it.
    Ctl {
        /// The running scheduler's control socket.
        #[clap(long, value_name = "PATH", default_value = control::DEFAULT_SOCKET)]
        socket: PathBuf,
        #[command(subcommand)]
        action: CtlAction,
    },
    /// Print the running scheduler's stats once: cumulative counters, per
    /// CPU and summed.
    Stats {
        #[clap(long, value_enum, default_value = "text")]
        format: Format,
        /// Text format: one line per CPU as well.
        #[clap(long)]
        per_cpu: bool,
        /// Text format: every counter, not only the short line's.
        #[clap(short = 'v', long)]
        verbose: bool,
    },
    /// List the policy fields with their allowed values, and the presets.
    Policies {
        /// Print the fields and the presets' values as Markdown tables
        /// (what docs/policy.md holds).
        #[clap(long)]
        markdown: bool,
    },
    /// Print the CPU hierarchy: NUMA node, LLC, big core, small core.
    Topology {
        /// Describe the machine by hand instead (checked against this
        /// machine's online CPUs); see src/topology/file.rs for the format.
        #[clap(long, value_name = "FILE")]
        topology: Option<PathBuf>,
        /// Test only: read sysfs from this directory instead of /sys.
        #[clap(long, value_name = "DIR", default_value = "/sys", hide = true)]
        sysfs: PathBuf,
    },
    /// Print each CPU's idle states: name, exit latency, target residency,
    /// disabled; from sysfs cpuidle, or from a file.
    IdleStates {
        /// Read the states from this file instead: one state a line,
        /// shallowest first, `name exit_latency_us target_residency_us
        /// [disabled]`, `#` comments; examples in docs/idle-states/.
        #[clap(long, value_name = "FILE")]
        idle_states: Option<PathBuf>,
        /// Test only: read sysfs from this directory instead of /sys.
        #[clap(long, value_name = "DIR", default_value = "/sys", hide = true)]
        sysfs: PathBuf,
    },
    /// The idle learner: its scores, and recording and replaying idle
    /// periods (docs/idle.md).
    Idle {
        #[command(subcommand)]
        action: idle::cli::IdleAction,
    },
    /// cpufreq hints: recording the running scheduler's steps and
    /// replaying them under other policies and bands (docs/design.md).
    Cpufreq {
        #[command(subcommand)]
        action: cpufreq::cli::CpufreqAction,
    },
    /// Show this machine's frequencies and the freq_max choices.
    FreqMax {
        /// Print the frequencies found, the choices and the one in force.
        #[clap(long, required = true)]
        list: bool,
        /// The policy whose freq.max to show as in force, when no
        /// scheduler is running (default: the running one's, else balanced).
        #[clap(long, value_name = "FILE|PRESET")]
        policy: Option<String>,
        /// The running scheduler's control socket.
        #[clap(long, value_name = "PATH", default_value = control::DEFAULT_SOCKET)]
        socket: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum CtlAction {
    /// Put a preset or a policy file in force.
    Switch {
        #[clap(value_name = "FILE|PRESET")]
        policy: String,
    },
    /// Change fields of the policy in force: key=value, e.g.
    /// slice.max_us=5000.
    Set {
        #[clap(value_name = "KEY=VALUE", required = true)]
        assignments: Vec<String>,
    },
    /// Print the policy in force and its generation.
    Get,
    /// Save, load or reset the idle learner's tables (each CPU's is
    /// replaced whole, under its lock).
    Idle {
        #[command(subcommand)]
        action: IdleAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum IdleAction {
    /// Write every online CPU's learned idle table to FILE (JSON).
    Save {
        #[clap(value_name = "FILE")]
        file: PathBuf,
    },
    /// Put FILE's tables in force; a file for other CPUs or other idle
    /// states is refused and the tables in force stay.
    Load {
        #[clap(value_name = "FILE")]
        file: PathBuf,
    },
    /// Make every online CPU's table fresh: empty bins, and every weight
    /// row 60% on its own state.
    Reset,
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
fn spawn_monitor(
    opts: &RunOpts,
    secs: f64,
    shutdown: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    let intv = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("the stats interval must be a positive number of seconds")?;
    let (format, per_cpu, verbose) = (opts.format, opts.per_cpu, opts.verbose);
    Ok(std::thread::spawn(move || {
        if let Err(e) = stats::monitor(intv, format, per_cpu, verbose, shutdown) {
            log::warn!("stats monitor stopped: {e:#}");
        }
    }))
}

/// Set by SIGHUP; the scheduler's loop reloads the policy and clears it.
static RELOAD: AtomicBool = AtomicBool::new(false);

/// SIGINT, SIGTERM and SIGHUP set @shutdown: until the scheduler is
/// attached (install_sighup), and in --monitor, a SIGHUP stops it too.
/// Returns the SIGHUP registration, for install_sighup to replace.
fn install_shutdown(shutdown: &Arc<AtomicBool>) -> Result<SigId> {
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, shutdown.clone())
            .context("installing the SIGINT/SIGTERM handler")?;
    }
    signal_hook::flag::register(SIGHUP, shutdown.clone()).context("installing the SIGHUP handler")
}

/// From here on SIGHUP reloads the policy instead of stopping.
fn install_sighup(stop_on_hup: SigId) -> Result<()> {
    signal_hook::flag::register(SIGHUP, &RELOAD).context("installing the SIGHUP handler")?;
    signal_hook::low_level::unregister(stop_on_hup);
    Ok(())
}

/// The policy to start with: --policy, then each --set, then --freq-max.
fn starting_policy(opts: &RunOpts) -> Result<policy::Named> {
    policy::Named::load(&opts.policy)?.with_start_edits(&policy::StartEdits {
        assignments: opts.assignments.clone(),
        freq_max: opts.freq_max,
    })
}

/// clap's parser for --freq-max: the policy's own spelling rules.
/// --stall-timeout-ms: 0 (the kernel's default) or
/// MIN_STALL_TIMEOUT_MS..=MAX_STALL_TIMEOUT_MS.
fn parse_stall_timeout(s: &str) -> Result<u32, String> {
    let (min, max) = (
        scheduler::MIN_STALL_TIMEOUT_MS,
        scheduler::MAX_STALL_TIMEOUT_MS,
    );
    match s.parse::<u32>() {
        Ok(ms) if ms == 0 || (min..=max).contains(&ms) => Ok(ms),
        _ => Err(format!(
            "{s} is not 0 or in {min}..={max}: the kernel accepts at most {max}, and under {min} the watchdog would end the scheduler for waits it allows"
        )),
    }
}

fn parse_freq_max(s: &str) -> Result<freq::FreqMax, String> {
    s.parse().map_err(|e| format!("{e}"))
}

/// `freq-max --list`: the running scheduler's choice if one answers on
/// @socket, else @policy's (default balanced).
fn print_freq_max(policy_arg: Option<String>, socket: &Path) -> Result<()> {
    let table = freq::FreqTable::probe();
    let choice = match policy_arg {
        Some(p) => policy::Named::load(&p)?.policy.freq.max,
        None => match control::client::send(socket, &control::Request::Get {}) {
            Ok(reply) => policy::Policy::parse(&reply.policy)?.freq.max,
            Err(_) => policy::Named::load(policy::DEFAULT_PRESET)?.policy.freq.max,
        },
    };
    freq::print_list(&table, choice);
    Ok(())
}

fn run_ctl(socket: &Path, action: CtlAction) -> Result<()> {
    use control::{Request, client};
    let (request, show_policy) = match action {
        CtlAction::Switch { policy } => (client::switch_request(&policy)?, false),
        CtlAction::Set { assignments } => (Request::Set { assignments }, false),
        CtlAction::Get => (Request::Get {}, true),
        CtlAction::Idle { action } => return run_ctl_idle(socket, action),
    };
    client::print(&client::send(socket, &request)?, show_policy)
}

fn run_ctl_idle(socket: &Path, action: IdleAction) -> Result<()> {
    use control::client;
    match action {
        IdleAction::Save { file } => {
            let n = client::idle_save(socket, &file)?;
            println!("saved the idle tables of {n} CPUs to {}", file.display());
        }
        IdleAction::Load { file } => {
            let n = client::idle_load(socket, &file)?;
            println!("loaded the idle tables of {n} CPUs from {}", file.display());
        }
        IdleAction::Reset => {
            client::idle_reset(socket)?;
            println!("reset the idle tables");
        }
    }
    Ok(())
}

fn print_policies() {
    println!("Policy fields (a policy file may leave any out; balanced fills them):");
    for f in policy::FIELDS {
        println!("  {:<28} {}", f.key, f.doc);
        println!("  {:<28} {}", "", f.kind.allowed());
    }
    let names: Vec<&str> = policy::PRESETS.iter().map(|(n, _)| *n).collect();
    println!("Presets: {}", names.join(", "));
}

fn run(opts: Opts) -> Result<()> {
    match opts.command {
        Some(Command::Ctl { socket, action }) => return run_ctl(&socket, action),
        Some(Command::Stats {
            format,
            per_cpu,
            verbose,
        }) => {
            return stats::fetch_once()?.print(&mut std::io::stdout(), format, per_cpu, verbose);
        }
        Some(Command::Policies { markdown }) => {
            if markdown {
                print!("{}", policy::markdown());
            } else {
                print_policies();
            }
            return Ok(());
        }
        Some(Command::Idle { action }) => return idle::cli::run(action),
        Some(Command::Cpufreq { action }) => return cpufreq::cli::run(action),
        Some(Command::FreqMax { policy, socket, .. }) => return print_freq_max(policy, &socket),
        Some(Command::Topology { topology, sysfs }) => {
            let (h, source) = topology::read_hierarchy(&sysfs, topology.as_deref())?;
            print!("{}", topology::show::render(&h, &source));
            return Ok(());
        }
        Some(Command::IdleStates { idle_states, sysfs }) => {
            let online = topology::sysfs::read(&sysfs).cpus.into_keys().collect();
            let states = idle::states::IdleStates::read(&sysfs, idle_states.as_deref(), &online)?;
            print!("{}", idle::states::render(&states));
            return Ok(());
        }
        None => {}
    }
    let opts = opts.run;
    if opts.help_stats {
        stats::server_data().describe_meta(&mut std::io::stdout(), None)?;
        return Ok(());
    }
    init_logging(opts.verbose)?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let stop_on_hup = install_shutdown(&shutdown)?;

    if let Some(secs) = opts.monitor {
        let _ = spawn_monitor(&opts, secs, shutdown)?.join();
        return Ok(());
    }

    // Bad policies (and a freq.max this machine lacks) are refused before
    // anything is loaded.
    let first = starting_policy(&opts)?;
    // So is a bad --idle-states file (the scheduler reads it again at each
    // attach, for the CPUs online then).
    if let Some(file) = &opts.idle_states {
        idle::states::read_file(file)?;
    }
    let freq = match opts.test_freq_inject {
        Some(mhz) => freq::FreqTable::injected(mhz),
        None => freq::FreqTable::probe(),
    };
    let live = policy::Live::new(first, freq)?;
    preflight::check_all(
        Path::new(preflight::SCHED_EXT_SYSFS),
        Path::new(preflight::OSRELEASE),
    )?;
    install_sighup(stop_on_hup)?;
    if let Some(secs) = opts.stats {
        spawn_monitor(&opts, secs, shutdown.clone())?;
    }
    scheduler::run_until_shutdown(&opts, live, shutdown, &RELOAD)
}

fn main() -> ExitCode {
    // Usage errors: one line and exit code 2; --help and --version as usual.
    // -V names the build as the scx schedulers do: version and target.
    let version: &'static str =
        Box::leak(build_id::full_version(env!("CARGO_PKG_VERSION")).into_boxed_str());
    let parsed = Opts::command()
        .version(version)
        .try_get_matches()
        .and_then(|m| Opts::from_arg_matches(&m));
    let opts = match parsed {
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
