//! Loading: open the skeleton, read the topology, idle states and frequency
//! source (the APERF/MPERF one only if the kernel's verifier accepts its
//! reads, freq::probe), fill the read-only data, load, write the maps, pin
//! them and attach.

use std::collections::BTreeSet;
use std::mem::MaybeUninit;
use std::path::Path;

use anyhow::{Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_stats::prelude::*;
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open};

use super::{HOTPLUG_POLL, SCHEDULER_NAME, Scheduler};
use crate::RunOpts;
use crate::bpf_intf::as_bytes;
use crate::bpf_skel::*;
use crate::freq::{self, FreqSource, Governors};
use crate::idle;
use crate::idle::attach::Plan as IdlePlan;
use crate::idle::latency_req::LatencyFeed;
use crate::idle::qos_live::QosLive;
use crate::idle::states::IdleStates;
use crate::pins::Pins;
use crate::policy::Live;
use crate::stats;
use crate::topology::{self, LlcMap};

impl<'a> Scheduler<'a> {
    pub fn init(
        opts: &RunOpts,
        open_object: &'a mut MaybeUninit<OpenObject>,
        nr_restarts: u64,
        live: &Live,
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
        let perf_reads = freq::probe::perf_reads_allowed();
        match &perf_reads {
            Ok(()) => info!(
                "kernel: sched_ext callbacks may read perf events (bpf_perf_event_read_value())"
            ),
            Err(why) => info!(
                "kernel: sched_ext callbacks may not read perf events (bpf_perf_event_read_value()): {why}"
            ),
        }
        let freq_source = FreqSource::choose(
            live.freq(),
            &cpus,
            opts.test_freq_inject.is_some(),
            perf_reads,
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
                "PREEMPT_RT kernel: no BPF timers, so wake-ups held back by slice.min_us, and latency.slice_timer_us, wait for the tick, and cgroup cpu.max is not enforced"
            );
        }
        // scx_ops_load! leaves ops.cgroup_set_bandwidth out where the
        // kernel lacks it (before 6.17): cpu.max is then not enforced.
        if compat::struct_has_field("sched_ext_ops", "cgroup_set_bandwidth").unwrap_or(false) {
            if rodata.bpf_timers_on {
                info!("kernel: cgroup cpu.max is enforced (ops.cgroup_set_bandwidth)");
            }
        } else {
            warn!(
                "kernel: cgroup cpu.max is not enforced: this kernel's sched_ext has no ops.cgroup_set_bandwidth (Linux 6.17 added it)"
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

        let mut skel = scx_ops_load!(skel, cadence_ops, uei)?;
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
            latency: LatencyFeed::new(Path::new("/sys")),
            nr_restarts,
            stats_server,
        })
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
