//! Where each CPU's frequency ratio comes from, chosen once at start: the
//! msr PMU's APERF/MPERF events, else the kernel's cpuperf (cpufreq), else
//! none. The choice and the reason the better ones were passed over make
//! one log line, and the stats report the source per CPU.

use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use scx_utils::perf;

use super::table::FreqTable;
use crate::bpf_intf;

/// enum cadence_freq_source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    None,
    Aperf,
    Cpuperf,
    Inject,
}

impl SourceKind {
    pub fn to_bpf(self) -> u32 {
        match self {
            SourceKind::None => bpf_intf::cadence_freq_source_CADENCE_FREQ_NONE,
            SourceKind::Aperf => bpf_intf::cadence_freq_source_CADENCE_FREQ_APERF,
            SourceKind::Cpuperf => bpf_intf::cadence_freq_source_CADENCE_FREQ_CPUPERF,
            SourceKind::Inject => bpf_intf::cadence_freq_source_CADENCE_FREQ_INJECT,
        }
    }

    pub fn from_bpf(v: u32) -> Self {
        match v {
            bpf_intf::cadence_freq_source_CADENCE_FREQ_APERF => SourceKind::Aperf,
            bpf_intf::cadence_freq_source_CADENCE_FREQ_CPUPERF => SourceKind::Cpuperf,
            bpf_intf::cadence_freq_source_CADENCE_FREQ_INJECT => SourceKind::Inject,
            _ => SourceKind::None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SourceKind::None => "none",
            SourceKind::Aperf => "aperf",
            SourceKind::Cpuperf => "cpuperf",
            SourceKind::Inject => "inject",
        }
    }
}

/// The chosen source, with the perf events it reads (APERF/MPERF only).
pub struct FreqSource {
    pub kind: SourceKind,
    /// (cpu, aperf event, mperf event), kept open while the scheduler runs.
    pub events: Vec<(usize, OwnedFd, OwnedFd)>,
    /// One line: the source and why the better ones were not used.
    pub summary: String,
}

/// The msr PMU, where the kernel's arch/x86/events/msr.c publishes them.
const MSR_PMU: &str = "/sys/bus/event_source/devices/msr";

/// "event=0x01" (a PMU's events/NAME file) -> 1.
fn event_config(text: &str) -> Option<u64> {
    let v = text.trim().strip_prefix("event=")?;
    u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
}

/// Opens one counting event of PMU @pmu_type on @cpu, all tasks, with
/// scx_utils' perf_event_open(2) and perf_event_attr bindings.
/// (setup_perf_events() does not fit: it stores the fd in an
/// scx_pmu_map and returns none, and opens without CLOEXEC.)
fn open_event(pmu_type: u32, config: u64, cpu: usize) -> std::io::Result<OwnedFd> {
    let mut attr = perf::bindings::perf_event_attr {
        type_: pmu_type,
        size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
        config,
        ..Default::default()
    };
    // SAFETY: attr is initialized and outlives the call; a counting event
    // (no sampling, no mmap) asks nothing unsafe of the kernel.
    let fd = unsafe {
        perf::perf_event_open(
            &mut attr,
            -1,
            cpu as i32,
            -1,
            perf::bindings::PERF_FLAG_FD_CLOEXEC.into(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The aperf and mperf events of every CPU in @cpus.
fn open_aperf_mperf(pmu: &Path, cpus: &[usize]) -> Result<Vec<(usize, OwnedFd, OwnedFd)>> {
    let read =
        |f: &str| fs::read_to_string(pmu.join(f)).with_context(|| format!("{}/{f}", pmu.display()));
    let pmu_type: u32 = read("type")?.trim().parse().context("msr PMU type")?;
    let (Some(aperf), Some(mperf)) = (
        read("events/aperf").ok().and_then(|t| event_config(&t)),
        read("events/mperf").ok().and_then(|t| event_config(&t)),
    ) else {
        bail!("the msr PMU has no aperf/mperf events (no APERFMPERF on this CPU, or a VM)");
    };
    cpus.iter()
        .map(|&cpu| {
            let a = open_event(pmu_type, aperf, cpu)
                .with_context(|| format!("opening aperf on CPU {cpu}"))?;
            let m = open_event(pmu_type, mperf, cpu)
                .with_context(|| format!("opening mperf on CPU {cpu}"))?;
            Ok((cpu, a, m))
        })
        .collect()
}

/// The source and its one-line summary, from what each source offered
/// (Err: why it cannot be used) and, if the probe was refused, the
/// verifier's reason for refusing the APERF/MPERF reads.
pub fn decide(
    inject: bool,
    aperf: Result<(), String>,
    cpuperf: Result<(), String>,
    refused: Option<&str>,
) -> (SourceKind, String) {
    if inject {
        return (
            SourceKind::Inject,
            "frequency source: inject (test only: APERF/MPERF values come from the freq_inject map)"
                .into(),
        );
    }
    let mut passed = Vec::new();
    match (refused, aperf) {
        (Some(why), _) => passed.push(format!(
            "aperf: this kernel refuses bpf_perf_event_read_value() in struct_ops (Linux 6.15 or later allows it): {why}"
        )),
        (None, Ok(())) => {
            return (
                SourceKind::Aperf,
                "frequency source: aperf (APERF/MPERF perf events, read every tick)".into(),
            );
        }
        (None, Err(e)) => passed.push(format!("aperf: {e}")),
    }
    match cpuperf {
        Ok(()) => (
            SourceKind::Cpuperf,
            format!(
                "frequency source: cpuperf (scx_bpf_cpuperf_cur(), rescaled); passed over {}",
                passed.join("; ")
            ),
        ),
        Err(e) => {
            passed.push(format!("cpuperf: {e}"));
            (
                SourceKind::None,
                format!(
                    "frequency source: none, utilization is NOT frequency-invariant (ratio fixed at 1024): {}",
                    passed.join("; ")
                ),
            )
        }
    }
}

impl FreqSource {
    /// The best source this machine has for @cpus; @perf_reads is the
    /// probe's verdict (probe::perf_reads_allowed()).
    pub fn choose(
        table: &FreqTable,
        cpus: &[usize],
        inject: bool,
        perf_reads: Result<(), String>,
    ) -> FreqSource {
        let mut events = Vec::new();
        let pmu = Path::new(MSR_PMU);
        let refused = perf_reads.err();
        let refused = refused.as_deref();
        let aperf = if inject || refused.is_some() {
            Err(String::new())
        } else if table.base_mhz.is_none() {
            Err("the base frequency (MPERF's rate) is unknown".to_string())
        } else if !pmu.is_dir() {
            Err(format!("no msr PMU at {MSR_PMU}"))
        } else {
            match open_aperf_mperf(pmu, cpus) {
                Ok(ev) => {
                    events = ev;
                    Ok(())
                }
                Err(e) => Err(format!("{e:#}")),
            }
        };
        let cpufreq = Path::new("/sys/devices/system/cpu/cpu0/cpufreq");
        let cpuperf = if !cpufreq.is_dir() {
            Err("no cpufreq driver, so the kernel has no frequency ratio".to_string())
        } else if table.kernel_ref_mhz.is_none() {
            Err("the kernel's reference frequency is unknown, or its ratio is fixed at 1024 (see `freq-max --list`)".to_string())
        } else {
            Ok(())
        };
        let (kind, summary) = decide(inject, aperf, cpuperf, refused);
        if kind != SourceKind::Aperf {
            events.clear();
        }
        FreqSource {
            kind,
            events,
            summary,
        }
    }

    /// Puts the events in the BPF perf event arrays, slot = CPU.
    pub fn install<M: libbpf_rs::MapCore>(&self, aperf_map: &M, mperf_map: &M) -> Result<()> {
        for (cpu, a, m) in &self.events {
            let key = (*cpu as u32).to_ne_bytes();
            for (map, event, name) in [(aperf_map, a, "aperf"), (mperf_map, m, "mperf")] {
                let fd = (event.as_raw_fd() as u32).to_ne_bytes();
                map.update(&key, &fd, libbpf_rs::MapFlags::ANY)
                    .with_context(|| format!("installing CPU {cpu}'s {name} event"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use std::io::Read;

    /// open_event() against the kernel: the msr PMU's tsc event (present
    /// wherever the PMU is, unlike aperf/mperf in a VM) opens on CPU 0,
    /// close-on-exec, and counts.
    #[test]
    fn an_msr_pmu_event_opens_close_on_exec_and_counts() {
        let pmu = Path::new(MSR_PMU);
        let (Ok(ty), Ok(tsc)) = (
            fs::read_to_string(pmu.join("type")),
            fs::read_to_string(pmu.join("events/tsc")),
        ) else {
            eprintln!("SKIPPED an_msr_pmu_event_opens_close_on_exec_and_counts: no msr PMU");
            return;
        };
        if crate::bpf_test_progs::skip_without_root("opening an msr PMU event needs root") {
            return;
        }
        let fd = open_event(ty.trim().parse().unwrap(), event_config(&tsc).unwrap(), 0).unwrap();
        let flags = fcntl(&fd, FcntlArg::F_GETFD).unwrap();
        assert!(
            FdFlag::from_bits_truncate(flags).contains(FdFlag::FD_CLOEXEC),
            "not close-on-exec"
        );
        // A counting event's read(2) is its u64 count (no read_format).
        let mut count = [0u8; 8];
        fs::File::from(fd).read_exact(&mut count).unwrap();
        assert!(u64::from_ne_bytes(count) > 0, "the TSC did not count");
    }
}
