//! The scheduler's life: open, configure, load and attach the BPF skeleton;
//! serve stats and control requests while it runs; report why it exited.

use std::collections::{BTreeMap, BTreeSet};
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam::channel::{Receiver, select};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_stats::prelude::*;
use scx_utils::{UserExitInfo, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use crate::RunOpts;
use crate::bpf_intf::{self, as_bytes};
use crate::bpf_skel::*;
use crate::control::server::{Pending, Server};
use crate::control::{Reply, Request};
use crate::freq::{self, FreqSource, Governors};
use crate::idle;
use crate::idle::attach::Plan as IdlePlan;
use crate::idle::qos_live::{self, QosLive};
use crate::idle::states::IdleStates;
use crate::instance::{InstanceLock, LOCK_FILE};
use crate::pins::Pins;
use crate::policy::Live;
use crate::stats::{self, CpuMetrics, CpuUtil, CpufreqCounters, IdleCounters, Metrics};
use crate::topology::{self, LlcMap};

pub const SCHEDULER_NAME: &str = "scx_cadence";
/// Longest watchdog timeout sched_ext accepts in sched_ext_ops.timeout_ms
/// (SCX_WATCHDOG_MAX_TIMEOUT in kernel/sched/ext.c: 30 s); a longer one
/// fails the attach.
pub const MAX_STALL_TIMEOUT_MS: u32 = 30_000;
/// Shortest watchdog timeout the loader accepts: twice the longest wait
/// the scheduler itself allows a runnable task, 250 jiffies in a CPU's own
/// queue before it runs out of order (bpf/main.bpf.c, take_starved()):
/// 2.5 s at HZ=100. A shorter one would end the scheduler for waits it
/// means to allow.
pub const MIN_STALL_TIMEOUT_MS: u32 = 5_000;

/// How often the loop looks at signals and the exit state when idle.
const POLL: Duration = Duration::from_millis(100);

pub struct Scheduler<'a> {
    // Dropped first: the pins go before the maps they name.
    _pins: Pins,
    // The task util view's iterator link (pinned as <pin-dir>/tasks).
    _task_view: libbpf_rs::Link,
    // The APERF/MPERF events BPF reads, open while it may read them.
    _freq_source: FreqSource,
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    llcs: LlcMap,
    // The cpufreq governors at start: whether the hints take effect.
    governors: Governors,
    // Each online CPU's idle states (--idle-states or sysfs cpuidle), which
    // the idle learner learns for.
    idle_states: IdleStates,
    // idle.qos = learned: the per-CPU PM QoS limits, restored when dropped.
    qos: QosLive,
    nr_restarts: u64,
    stats_server: StatsServer<(), Metrics>,
}

impl<'a> Scheduler<'a> {
    pub fn init(
        opts: &RunOpts,
        open_object: &'a mut MaybeUninit<OpenObject>,
        nr_restarts: u64,
        live: &Live,
        aperf_refused: Option<&str>,
    ) -> Result<Self> {
        scx_utils::try_set_rlimit_infinity();

        // Open first: scx_ops_open! records the kernel's hotplug_seq, and the
        // kernel ends an attach that a hotplug event has since made stale
        // (with a restart, see run_until_shutdown). Read after it, the
        // topology cannot miss an event.
        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(opts.verbose);
        let open_opts = opts.libbpf.clone().into_bpf_open_opts();
        let mut skel = scx_ops_open!(builder, open_object, cadence_ops, open_opts)?;

        let (hier, source) = topology::read_hierarchy(Path::new("/sys"), opts.topology.as_deref())?;
        if let Some(file) = &opts.test_wait_after_topology {
            wait_for_file(file);
        }
        for note in &hier.notes {
            warn!("topology: {note}");
        }
        // Checks the hierarchy against the BPF tables' limits, first.
        let place_table = topology::table::build(&hier).context("reading the CPU topology")?;
        let llcs = LlcMap::from_hierarchy(&hier);
        info!(
            "{SCHEDULER_NAME} {}: {} CPUs in {} small cores, {} big cores, {} LLCs (from {source}), policy {} (generation {})",
            scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION")),
            llcs.cpu_llc.len(),
            hier.small.len(),
            hier.big.len(),
            llcs.nr_llcs(),
            live.current().name,
            live.generation()
        );
        // The idle states of the CPUs the hierarchy holds, which are the
        // online ones (a --topology file must name exactly those).
        let online: BTreeSet<u32> = hier.cpus.keys().copied().collect();
        let idle_states =
            IdleStates::read(Path::new("/sys"), opts.idle_states.as_deref(), &online)?;
        for note in &idle_states.notes {
            warn!("idle states: {note}");
        }
        info!("{}", idle_states.summary());
        let idle_plan = IdlePlan::new(&idle_states);
        idle_plan.configure(&mut skel);

        skel.struct_ops.cadence_ops_mut().exit_dump_len = opts.exit_dump_len;
        skel.struct_ops.cadence_ops_mut().timeout_ms = opts.stall_timeout_ms;

        let cpus: Vec<usize> = llcs.cpu_llc.iter().map(|&(cpu, _)| cpu).collect();
        let freq_source = FreqSource::choose(
            live.freq(),
            &cpus,
            opts.test_freq_inject.is_some(),
            aperf_refused,
        );
        info!("{}", freq_source.summary);
        let governors = Governors::probe(Path::new("/sys"));
        if governors.all_applied() {
            info!("{}", governors.summary());
        } else {
            warn!("{}", governors.summary());
        }
        if let Some(note) = live.current().policy.note(live.freq()) {
            warn!("{note}");
        }

        let rodata = skel.maps.rodata_data.as_mut().unwrap();
        rodata.freq_source = freq_source.kind.to_bpf();
        rodata.cpufreq_util_inject = opts.test_util_inject;
        if opts.test_util_inject {
            warn!("test only: cpufreq targets follow util_inject, not PELT");
        }
        // PREEMPT_RT's verifier refuses BPF timers: there a wake-up held
        // back by run-to-parity, and a slice that ends while others wait,
        // wait for the tick (bpf/timers.bpf.h).
        rodata.bpf_timers_on =
            !crate::preflight::preempt_rt(Path::new(crate::preflight::KERNEL_SYSFS));
        if !rodata.bpf_timers_on {
            warn!(
                "PREEMPT_RT kernel: no BPF timers, so wake-ups held back by slice.min_us, and latency.slice_timer_us, wait for the tick"
            );
        }
        rodata.nr_llcs = llcs.nr_llcs() as u32;
        for &(cpu, llc) in &llcs.cpu_llc {
            rodata.cpu_llc[cpu] = llc;
        }
        for (llc, n) in llcs.llc_nr_cpus.iter().enumerate() {
            rodata.llc_nr_cpus[llc] = *n;
        }
        // Hybrid parts: each CPU's APERF/MPERF against its own maximum
        // (bpf/freq_ratio_math.bpf.h).
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let hybrid = freq::probe_hybrid(Path::new("/sys"), &cpuinfo, &cpus);
        info!("{}", hybrid.note);
        for &(cpu, scale) in &hybrid.scale {
            if let Some(slot) = rodata.cpu_freq_max_scale.get_mut(cpu) {
                *slot = scale;
            }
        }

        // With the aperf source, a kernel whose verifier refuses the
        // APERF/MPERF reads refuses the whole program: keep its log quiet
        // and let the caller retry with the next source (AperfRefused).
        let retry = freq::retry_without(freq_source.kind);
        let capture = retry.then(LogCapture::start);
        let loaded = scx_ops_load!(skel, cadence_ops, uei);
        let log = capture.map(|c| c.stop(loaded.is_ok())).unwrap_or_default();
        let mut skel = match loaded {
            Ok(skel) => skel,
            Err(e) if retry => {
                let reason = freq::refusal_reason(&log, &format!("{e:#}"));
                return Err(anyhow::Error::new(AperfRefused(reason)));
            }
            Err(e) => return Err(e),
        };
        // The callbacks refuse to run without a policy: write it first.
        live.write(&skel.maps.policy, &skel.maps.policy_state)?;
        freq_source.install(&skel.maps.aperf_events, &skel.maps.mperf_events)?;
        skel.maps
            .place_topo
            .update(&0u32.to_ne_bytes(), as_bytes(&*place_table), MapFlags::ANY)
            .context("writing the place_topo map")?;

        let mut pins = Pins::create(&opts.pin_dir)?;
        pins.add_maps(skel.object_mut())?;
        let mut task_view = skel
            .progs
            .task_util_view
            .attach()
            .context("attaching the task util view (iter/task)")?;
        pins.add_task_view(&mut task_view)?;

        idle_plan.install(&skel, &idle_states)?;
        info!("{}", idle_plan.summary());
        let struct_ops = Some(scx_ops_attach!(skel, cadence_ops)?);
        info!(
            "{SCHEDULER_NAME} attached; maps pinned in {}",
            opts.pin_dir.display()
        );

        let stats_server = StatsServer::new(stats::server_data())
            .launch()
            .context("starting the stats server")?;

        // Opens nothing until idle.qos = learned is in force (run()); the
        // instance lock is held (run_until_shutdown).
        let qos = QosLive::new(Path::new("/sys"), Path::new(idle::qos::RUN_DIR), online);
        Ok(Self {
            _pins: pins,
            _task_view: task_view,
            _freq_source: freq_source,
            skel,
            struct_ops,
            llcs,
            governors,
            idle_states,
            qos,
            nr_restarts,
            stats_server,
        })
    }

    /// Each online CPU's value of the per-CPU map @map (named @name in
    /// errors) as its struct T, made into an R by @make (given the CPU).
    fn per_cpu<T: Copy, R>(
        &self,
        map: &impl MapCore,
        name: &str,
        make: impl Fn(usize, &T) -> R,
    ) -> Result<BTreeMap<u32, R>> {
        let values = bpf_intf::percpu_values(map, name)?;
        Ok(self
            .llcs
            .cpu_llc
            .iter()
            .filter_map(|&(cpu, _)| {
                let raw: T = bpf_intf::from_bytes(values.get(cpu)?)?;
                Some((cpu as u32, make(cpu, &raw)))
            })
            .collect())
    }

    /// Each online CPU's counters and policy generation.
    fn cpu_metrics(&self) -> Result<BTreeMap<u32, CpuMetrics>> {
        let copies = bpf_intf::percpu_values(&self.skel.maps.policy_cpu, "policy_cpu")?;
        self.per_cpu(&self.skel.maps.cpu_stats, "cpu_stats", |cpu, raw| {
            CpuMetrics::from_bpf(raw, copy_generation(copies.get(cpu)))
        })
    }

    fn metrics(&self, live: &Live) -> Result<Metrics> {
        let mut m = Metrics::new(
            self.cpu_metrics()?,
            self.llcs.nr_llcs() as u64,
            self.nr_restarts,
        )
        .with_util(self.per_cpu(&self.skel.maps.cpu_util, "cpu_util", |_, r| {
            CpuUtil::from_bpf(r)
        })?)
        .with_cpufreq(
            self.per_cpu(&self.skel.maps.cpu_cpufreq, "cpu_cpufreq", |_, r| {
                CpufreqCounters::from_bpf(r)
            })?,
        )
        .with_idle(self.per_cpu(&self.skel.maps.idle_cpu, "idle_cpu", |_, r| {
            IdleCounters::from_bpf(r)
        })?);
        m.policy = live.current().name.clone();
        m.placement_order = live.current().policy.placement.order.to_string();
        m.policy_generation = live.generation();
        m.freq_max_mhz = live.built().freq_max_mhz.into();
        m.cpufreq_driver = self.governors.summary();
        m.cpufreq_hint_cpus = self.governors.applied_cpus as u64;
        m.idle_predictor = live.current().policy.idle.predictor.to_string();
        m.idle_nr_states = self
            .idle_states
            .cpus
            .values()
            .map(Vec::len)
            .max()
            .unwrap_or(0) as u64;
        m.idle_qos_cpus = self.qos.limited() as u64;
        Ok(m)
    }

    /// `ctl idle save/load/reset`, answered with the policy in force.
    fn idle_request(&self, request: Request, live: &Live) -> Reply {
        let map = &self.skel.maps.idle_table;
        let states = &self.idle_states;
        let result = match request {
            Request::IdleSave {} => idle::manage::save(map, states).map(Some),
            Request::IdleLoad { file } => idle::manage::load(map, states, &file).map(|()| None),
            Request::IdleReset {} => idle::manage::reset(map, states).map(|()| None),
            _ => unreachable!("not an idle request"),
        };
        match result {
            Ok(idle) => {
                if idle.is_none() {
                    info!("ctl: idle tables written");
                }
                Reply {
                    idle,
                    ..live.reply()
                }
            }
            Err(e) => Reply {
                error: Some(format!("{e:#}")),
                ..live.reply()
            },
        }
    }

    /// idle.qos: sets the limits while the policy in force has learned
    /// (and something learns), restores them at once when it has not.
    fn qos_tick(&mut self, live: &Live) {
        let idle = &live.current().policy.idle;
        let learning = self.idle_states.cpus.values().any(|s| !s.is_empty());
        let on = qos_live::wanted(idle.qos, idle.predictor, learning);
        let map = &self.skel.maps.idle_table;
        let states = &self.idle_states;
        self.qos.tick(on, Instant::now(), |cpu| {
            let e = idle::manage::read_entry(map, cpu)?;
            let table = idle::table::Table::from_bpf(&e.learned);
            Ok(states
                .cpus
                .get(&cpu)
                .and_then(|s| idle::qos_rule::limit_us(&table, s)))
        });
    }

    fn exited(&mut self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Serves stats and control requests until a signal or the kernel ends
    /// the scheduler, then detaches and returns the exit information.
    pub fn run(&mut self, events: &Events, live: &mut Live) -> Result<UserExitInfo> {
        let (res_ch, req_ch) = self.stats_server.channels();
        while !events.shutdown.load(Ordering::Relaxed) && !self.exited() {
            if events.reload.swap(false, Ordering::Relaxed) {
                let maps = &self.skel.maps;
                match live.reload(&maps.policy, &maps.policy_state) {
                    Ok(generation) => info!("SIGHUP: reloaded (generation {generation})"),
                    Err(e) => warn!(
                        "SIGHUP: {e:#}; keeping {} (generation {})",
                        live.current().name,
                        live.generation()
                    ),
                }
            }
            select! {
                recv(req_ch) -> req => {
                    req?;
                    res_ch.send(self.metrics(live)?)?;
                }
                recv(events.control) -> pending => {
                    if let Ok(Pending { request, reply }) = pending {
                        let maps = &self.skel.maps;
                        let answer = match request {
                            Request::IdleSave {} | Request::IdleLoad { .. } | Request::IdleReset {} => {
                                self.idle_request(request, live)
                            }
                            request => live.handle(request, &maps.policy, &maps.policy_state),
                        };
                        // A swap off idle.qos = learned has restored the
                        // limits when the client hears back.
                        self.qos_tick(live);
                        let _ = reply.send(answer);
                    }
                }
                default(POLL) => {}
            }
            self.qos_tick(live);
        }
        self.struct_ops.take();
        uei_report!(&self.skel, uei)
    }
}

/// The generation held in one CPU's raw `policy_cpu` value (0 if unreadable).
fn copy_generation(raw: Option<&Vec<u8>>) -> u64 {
    let off = std::mem::offset_of!(bpf_intf::cadence_policy_cpu, generation);
    raw.and_then(|r| r.get(off..off + 8))
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap()))
}

/// The kernel refused the BPF program loaded with the aperf source; the
/// verifier's reason.
#[derive(Debug)]
struct AperfRefused(String);

impl std::fmt::Display for AperfRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the kernel refused the program reading APERF/MPERF: {}",
            self.0
        )
    }
}

impl std::error::Error for AperfRefused {}

/// libbpf's messages while a load may be refused: kept, not printed (a
/// refused load prints the whole verifier log), then the logger restored;
/// after a load that went through they are passed on as usual.
struct LogCapture(Option<(libbpf_rs::PrintLevel, libbpf_rs::PrintCallback)>);

type Captured = Vec<(libbpf_rs::PrintLevel, String)>;
static CAPTURED: std::sync::Mutex<Captured> = std::sync::Mutex::new(Vec::new());

fn capture_print(level: libbpf_rs::PrintLevel, msg: String) {
    if let Ok(mut v) = CAPTURED.lock() {
        v.push((level, msg));
    }
}

impl LogCapture {
    fn start() -> Self {
        CAPTURED.lock().map(|mut v| v.clear()).ok();
        LogCapture(libbpf_rs::set_print(Some((
            libbpf_rs::PrintLevel::Debug,
            capture_print,
        ))))
    }

    /// Restores the logger; passes the messages on if @replay; returns them.
    fn stop(self, replay: bool) -> Vec<String> {
        libbpf_rs::set_print(self.0);
        let lines = CAPTURED
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        if let (true, Some((max, print))) = (replay, self.0) {
            for (level, msg) in lines.iter().filter(|(l, _)| *l <= max) {
                print(*level, msg.clone());
            }
        }
        lines.into_iter().map(|(_, m)| m).collect()
    }
}

/// What the loop reacts to besides stats requests.
pub struct Events {
    /// SIGINT or SIGTERM.
    pub shutdown: Arc<AtomicBool>,
    /// SIGHUP: reload the policy.
    pub reload: &'static AtomicBool,
    /// Checked control requests.
    pub control: Receiver<Pending>,
}

/// Runs the scheduler until SIGINT/SIGTERM, re-attaching after CPU hotplug
/// with the policy last in force.
pub fn run_until_shutdown(
    opts: &RunOpts,
    mut live: Live,
    shutdown: Arc<AtomicBool>,
    reload: &'static AtomicBool,
) -> Result<()> {
    // A pin directory we must refuse is refused before anything is made.
    crate::owned::check_dir(&opts.pin_dir, "pin directory")?;
    let _lock = InstanceLock::take(Path::new(LOCK_FILE))?;
    // Only under the lock: what a kill -9 left of the PM QoS limits.
    qos_live::restore_leftovers(Path::new("/sys"), Path::new(idle::qos::RUN_DIR));
    let (_server, control) = Server::start(&opts.ctl_socket)?;
    let events = Events {
        shutdown,
        reload,
        control,
    };
    let mut nr_restarts = 0;
    let mut open_object = MaybeUninit::uninit();
    // Set once the kernel refused the program with the aperf source; every
    // later load (retry, restarts) uses the next source.
    let mut aperf_refused: Option<String> = None;
    loop {
        if nr_restarts > 0 {
            wait_for_hotplug_to_settle();
        }
        let init = Scheduler::init(
            opts,
            &mut open_object,
            nr_restarts,
            &live,
            aperf_refused.as_deref(),
        );
        let mut sched = match init {
            Ok(sched) => sched,
            Err(e) => match e.downcast::<AperfRefused>() {
                Ok(AperfRefused(reason)) if aperf_refused.is_none() => {
                    aperf_refused = Some(reason);
                    continue;
                }
                Ok(AperfRefused(reason)) => anyhow::bail!("loading the BPF program: {reason}"),
                Err(e) => return Err(e),
            },
        };
        let uei = sched.run(&events, &mut live)?;
        drop(sched);
        if !uei.should_restart() || events.shutdown.load(Ordering::Relaxed) {
            return Ok(());
        }
        nr_restarts += 1;
        info!("{SCHEDULER_NAME}: restarting after a topology change (#{nr_restarts})");
    }
}

/// After a hotplug exit, wait this long for the CPU set to stop changing
/// before attaching again, polling every HOTPLUG_POLL. If another event still
/// races the attach, the kernel sees a stale hotplug sequence number and ends
/// the new instance with SCX_ECODE_ACT_RESTART, and the loop above retries.
const HOTPLUG_SETTLE: Duration = Duration::from_millis(500);
const HOTPLUG_POLL: Duration = Duration::from_millis(100);
/// Give up waiting for the previous instance to be fully disabled after this.
const HOTPLUG_MAX_WAIT: Duration = Duration::from_secs(10);

fn wait_for_hotplug_to_settle() {
    let sysfs = std::path::Path::new(crate::preflight::SCHED_EXT_SYSFS);
    let read = |f: &str| std::fs::read_to_string(sysfs.join(f)).unwrap_or_default();
    let start = std::time::Instant::now();
    let mut seq = read("hotplug_seq");
    let mut stable_since = std::time::Instant::now();
    while start.elapsed() < HOTPLUG_MAX_WAIT {
        std::thread::sleep(HOTPLUG_POLL);
        let now_seq = read("hotplug_seq");
        if now_seq != seq {
            seq = now_seq;
            stable_since = std::time::Instant::now();
        }
        if read("state").trim() == "disabled" && stable_since.elapsed() >= HOTPLUG_SETTLE {
            return;
        }
    }
}

/// Test only (--test-wait-after-topology): waits until @file exists, so that
/// a VM test can take a CPU offline between the topology read and the attach.
fn wait_for_file(file: &Path) {
    info!("test: topology read; waiting for {}", file.display());
    while !file.exists() {
        std::thread::sleep(HOTPLUG_POLL);
    }
}
