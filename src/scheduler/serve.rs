//! Serving while the scheduler runs: stats requests, control requests
//! (policy swaps, `ctl idle`), SIGHUP reloads and the PM QoS limits, until a
//! signal or the kernel ends it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use crossbeam::channel::select;
use libbpf_rs::MapCore;
use log::{info, warn};
use scx_utils::{ScxExitKind, UserExitInfo, uei_report};

use super::{Events, Scheduler};
use crate::bpf_intf;
use crate::control::server::Pending;
use crate::control::{Reply, Request};
use crate::idle;
use crate::idle::qos_live;
use crate::policy::IdleQos;
use crate::policy::Live;
use crate::stats::{self, CpuMetrics, CpuUtil, CpufreqCounters, IdleCounters, Metrics};

/// How often the loop looks at signals and the exit state when idle.
const POLL: Duration = Duration::from_millis(100);

impl Scheduler<'_> {
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
        m.fair_cgroups = live.current().policy.fairness.cgroups.into();
        m.cgroups = stats::cgroup_metrics(
            &self.skel.maps.cgroups,
            Path::new(crate::cgroups::CGROUP_ROOT),
        )?;
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
        let from_file = matches!(self.idle_states.source, idle::states::StatesSource::File(_));
        let on = qos_live::wanted(idle, learning, from_file);
        if from_file && idle.qos == IdleQos::Learned && !idle.file_is_this_machine {
            self.qos.note_untrusted_file();
        }
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
        self.exit_kind() != 0
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
            self.latency.tick(
                &self.skel.maps.idle_states,
                &self.idle_states,
                Instant::now(),
            );
        }
        self.struct_ops.take();
        // SysRq-S is an operator asking for the kernel's default scheduler:
        // a stop as deliberate as SIGTERM, so it exits 0 and a service
        // manager does not restart it (docs/install.md). scx_utils reports
        // it as an error.
        if self.exit_kind() == ScxExitKind::SysRq as i32 {
            info!("EXIT: the kernel switched back to its default scheduler on SysRq-S");
            return Ok(UserExitInfo::default());
        }
        uei_report!(&self.skel, uei)
    }

    /// The kernel's exit kind (enum scx_exit_kind), 0 while attached.
    fn exit_kind(&self) -> i32 {
        let data = self
            .skel
            .maps
            .data_data
            .as_ref()
            .expect("the skeleton has .data");
        // ops.exit() writes it (UEI_RECORD), in the kernel's context.
        unsafe { std::ptr::read_volatile(&data.uei.kind) }
    }
}

/// The generation held in one CPU's raw `policy_cpu` value (0 if unreadable).
fn copy_generation(raw: Option<&Vec<u8>>) -> u64 {
    let off = std::mem::offset_of!(bpf_intf::cadence_policy_cpu, generation);
    raw.and_then(|r| r.get(off..off + 8))
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap()))
}
