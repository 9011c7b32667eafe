//! The scheduler's life: open, configure, load and attach the BPF skeleton,
//! serve stats while it runs, and report why it exited.

use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use crossbeam::channel::RecvTimeoutError;
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::info;
use scx_stats::prelude::*;
use scx_utils::{UserExitInfo, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use crate::Opts;
use crate::bpf_skel::*;
use crate::stats::{self, Counters, Metrics, NR_STATS};
use crate::topology::LlcMap;

pub const SCHEDULER_NAME: &str = "scx_cadence";

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    llcs: LlcMap,
    nr_restarts: u64,
    stats_server: StatsServer<(), Metrics>,
}

impl<'a> Scheduler<'a> {
    pub fn init(
        opts: &Opts,
        open_object: &'a mut MaybeUninit<OpenObject>,
        nr_restarts: u64,
    ) -> Result<Self> {
        scx_utils::try_set_rlimit_infinity();

        let llcs = LlcMap::probe().context("reading the CPU topology")?;
        info!(
            "{SCHEDULER_NAME} {}: {} CPUs in {} LLCs",
            env!("CARGO_PKG_VERSION"),
            llcs.cpu_llc.len(),
            llcs.nr_llcs()
        );

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(opts.verbose);
        let open_opts = opts.libbpf.clone().into_bpf_open_opts();
        let mut skel = scx_ops_open!(builder, open_object, cadence_ops, open_opts)?;

        skel.struct_ops.cadence_ops_mut().exit_dump_len = opts.exit_dump_len;

        let rodata = skel.maps.rodata_data.as_mut().unwrap();
        rodata.nr_llcs = llcs.nr_llcs() as u32;
        for &(cpu, llc) in &llcs.cpu_llc {
            rodata.cpu_llc[cpu] = llc;
        }
        for (llc, n) in llcs.llc_nr_cpus.iter().enumerate() {
            rodata.llc_nr_cpus[llc] = *n;
        }
        rodata.slice_max_ns = opts.slice_max_us * 1000;
        rodata.slice_min_ns = opts.slice_min_us * 1000;
        rodata.slice_lag_ns = opts.slice_lag_us * 1000;

        let mut skel = scx_ops_load!(skel, cadence_ops, uei)?;
        let struct_ops = Some(scx_ops_attach!(skel, cadence_ops)?);
        info!("{SCHEDULER_NAME} attached");

        let stats_server = StatsServer::new(stats::server_data())
            .launch()
            .context("starting the stats server")?;

        Ok(Self {
            skel,
            struct_ops,
            llcs,
            nr_restarts,
            stats_server,
        })
    }

    /// The BPF per-CPU counters, summed over CPUs.
    fn counters(&self) -> Result<Counters> {
        let per_cpu = self
            .skel
            .maps
            .cpu_stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading cpu_stats")?
            .unwrap_or_default();
        let values: Vec<Counters> = per_cpu.iter().map(|raw| parse_counters(raw)).collect();
        Ok(stats::sum_counters(&values))
    }

    fn metrics(&self) -> Result<Metrics> {
        Ok(Metrics::from_counters(
            &self.counters()?,
            self.llcs.cpu_llc.len() as u64,
            self.llcs.nr_llcs() as u64,
            self.nr_restarts,
        ))
    }

    fn exited(&mut self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Serves stats until a signal or the kernel ends the scheduler, then
    /// detaches and returns the exit information.
    pub fn run(&mut self, shutdown: &AtomicBool) -> Result<UserExitInfo> {
        let (res_ch, req_ch) = self.stats_server.channels();
        while !shutdown.load(Ordering::Relaxed) && !self.exited() {
            match req_ch.recv_timeout(Duration::from_millis(250)) {
                Ok(()) => res_ch.send(self.metrics()?)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(e) => Err(e)?,
            }
        }
        self.struct_ops.take();
        uei_report!(&self.skel, uei)
    }
}

/// One CPU's raw `struct cadence_cpu_stats`: NR_STATS native-endian u64s.
fn parse_counters(raw: &[u8]) -> Counters {
    let mut c = [0u64; NR_STATS];
    for (slot, chunk) in c.iter_mut().zip(raw.chunks_exact(8)) {
        *slot = u64::from_ne_bytes(chunk.try_into().unwrap());
    }
    c
}

/// Runs the scheduler until SIGINT/SIGTERM, re-attaching after CPU hotplug.
pub fn run_until_shutdown(opts: &Opts, shutdown: Arc<AtomicBool>) -> Result<()> {
    let mut nr_restarts = 0;
    let mut open_object = MaybeUninit::uninit();
    loop {
        if nr_restarts > 0 {
            wait_for_hotplug_to_settle();
        }
        let mut sched = Scheduler::init(opts, &mut open_object, nr_restarts)?;
        let uei = sched.run(&shutdown)?;
        drop(sched);
        if !uei.should_restart() || shutdown.load(Ordering::Relaxed) {
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
