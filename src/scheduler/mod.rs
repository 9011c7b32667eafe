//! The scheduler's life: load and attach the BPF skeleton (load.rs), serve
//! stats and control requests while it runs (serve.rs), report why it
//! exited, and attach again after CPU hotplug (here).

mod load;
mod serve;

use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use crossbeam::channel::Receiver;
use log::info;
use scx_stats::prelude::*;

use crate::RunOpts;
use crate::bpf_skel::*;
use crate::control::server::{Pending, Server};
use crate::freq::{FreqSource, Governors};
use crate::idle;
use crate::idle::latency_req::LatencyFeed;
use crate::idle::qos_live::{self, QosLive};
use crate::idle::states::IdleStates;
use crate::instance::{InstanceLock, LOCK_FILE};
use crate::pins::Pins;
use crate::policy::Live;
use crate::stats::Metrics;
use crate::topology::LlcMap;

pub const SCHEDULER_NAME: &str = "scx_cadence";
/// Longest watchdog timeout sched_ext accepts in sched_ext_ops.timeout_ms
/// (SCX_WATCHDOG_MAX_TIMEOUT in kernel/sched/ext.c: 30 s); a longer one
/// fails the attach.
pub const MAX_STALL_TIMEOUT_MS: u32 = 30_000;
/// Shortest watchdog timeout the loader accepts: twice the longest wait
/// the scheduler itself allows a runnable task, 250 jiffies in a CPU's own
/// queue before it runs out of order (bpf/queues.bpf.h, take_starved()):
/// 2.5 s at HZ=100. A shorter one would end the scheduler for waits it
/// means to allow.
pub const MIN_STALL_TIMEOUT_MS: u32 = 5_000;

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
    // The PM QoS limit the learner's teo reads, kept current.
    latency: LatencyFeed,
    nr_restarts: u64,
    stats_server: StatsServer<(), Metrics>,
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
    loop {
        if nr_restarts > 0 {
            wait_for_hotplug_to_settle();
        }
        let mut sched = Scheduler::init(opts, &mut open_object, nr_restarts, &live)?;
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
