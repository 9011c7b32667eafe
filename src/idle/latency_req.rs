//! The PM QoS limit teo reads at each selection, fed to the BPF learner:
//! cpuidle_governor_latency_req() (drivers/cpuidle/governor.c) is the least
//! of the CPU's resume-latency limit (sysfs `pm_qos_resume_latency_us`) and
//! the global CPU latency limits (/dev/cpu_dma_latency, and from Linux 6.19
//! /dev/cpu_wakeup_latency), in ns. The loader reads them every
//! qos::MIN_INTERVAL and writes each CPU's into its `idle_states` element
//! when it changed, so the learner's teo follows the limit within that
//! time (docs/idle.md, "teo: which rules").

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use libbpf_rs::{MapCore, MapFlags};
use log::warn;

use super::qos::{self, MIN_INTERVAL};
use super::states::IdleStates;
use super::table::StatesNs;
use crate::bpf_intf::as_bytes;

/// PM_QOS_RESUME_LATENCY_NO_CONSTRAINT (include/linux/pm_qos.h), us: what
/// dev_pm_qos_raw_resume_latency() gives a CPU without a limit.
const NO_CONSTRAINT_US: u32 = i32::MAX as u32;

/// The global limits' character devices; a read gives the limit in force,
/// a native-endian s32 in us (kernel/power/qos.c).
const GLOBAL_LIMITS: [&str; 2] = ["/dev/cpu_dma_latency", "/dev/cpu_wakeup_latency"];

/// cpuidle_governor_latency_req() for a CPU whose sysfs limit is @cpu_limit
/// (qos::parse_limit: None is no constraint) under the global limits
/// @globals (us): the least, times NSEC_PER_USEC.
pub fn latency_req_ns(cpu_limit: Option<u32>, globals: &[u32]) -> u64 {
    let device = cpu_limit.unwrap_or(NO_CONSTRAINT_US);
    let least = globals.iter().fold(device, |a, &g| a.min(g));
    u64::from(least) * 1000
}

/// The global limit in @path, None if it cannot be read (no such device
/// before 6.19, or no permission).
fn read_global_us(path: &Path) -> Option<u32> {
    let mut raw = [0u8; 4];
    std::fs::File::open(path).ok()?.read_exact(&mut raw).ok()?;
    u32::try_from(i32::from_ne_bytes(raw)).ok()
}

pub struct LatencyFeed {
    sysfs: PathBuf,
    /// What each CPU's `idle_states` element holds now.
    written: BTreeMap<u32, u64>,
    last: Option<Instant>,
    /// CPUs whose limit could not be read: warned once each.
    unreadable: Vec<u32>,
}

impl LatencyFeed {
    pub fn new(sysfs: &Path) -> LatencyFeed {
        LatencyFeed {
            sysfs: sysfs.to_path_buf(),
            written: BTreeMap::new(),
            last: None,
            unreadable: Vec::new(),
        }
    }

    /// Every MIN_INTERVAL: each learning CPU's limit, written to @map
    /// (`idle_states`) where it changed. A CPU whose sysfs file cannot be
    /// read counts as having no limit of its own.
    pub fn tick(&mut self, map: &impl MapCore, states: &IdleStates, now: Instant) {
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < MIN_INTERVAL)
        {
            return;
        }
        self.last = Some(now);
        let globals: Vec<u32> = GLOBAL_LIMITS
            .iter()
            .filter_map(|p| read_global_us(Path::new(p)))
            .collect();
        for (&cpu, list) in states.cpus.iter().filter(|(_, l)| !l.is_empty()) {
            let own = match qos::read_limit(&self.sysfs, cpu) {
                Ok(l) => l,
                Err(e) => {
                    if !self.unreadable.contains(&cpu) {
                        self.unreadable.push(cpu);
                        warn!("idle learner: cpu{cpu}'s PM QoS limit is not read: {e:#}");
                    }
                    None
                }
            };
            let req = latency_req_ns(own, &globals);
            if self.written.get(&cpu) == Some(&req) {
                continue;
            }
            let mut s = StatesNs::from_states(list).to_bpf();
            s.latency_req_ns = req;
            match map.update(&cpu.to_ne_bytes(), as_bytes(&s), MapFlags::ANY) {
                Ok(()) => {
                    self.written.insert(cpu, req);
                }
                Err(e) => warn!("idle learner: writing cpu{cpu}'s PM QoS limit: {e:#}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_limit_counts_in_ns() {
        // No limit anywhere: S32_MAX us, as the kernel computes it.
        assert_eq!(latency_req_ns(None, &[]), 2_147_483_647_000);
        // The global default, 2000 s (PM_QOS_CPU_LATENCY_DEFAULT_VALUE).
        assert_eq!(latency_req_ns(None, &[2_000_000_000]), 2_000_000_000_000);
        assert_eq!(latency_req_ns(Some(20), &[2_000_000_000]), 20_000);
        assert_eq!(latency_req_ns(Some(20), &[2_000_000_000, 5]), 5_000);
        // "n/a": 0 us, only the polling state.
        assert_eq!(latency_req_ns(Some(0), &[]), 0);
    }
}
