//! The frequencies a CPU can run at, as far as this machine tells: read
//! once at start from Intel's MSRs, AMD's CPPC sysfs or cpufreq sysfs, the
//! first source giving each value. Every source that gave nothing leaves a
//! note saying why, for `freq-max --list` and the start-up log.

use std::path::Path;

use anyhow::{Result, bail};

use super::choice::FreqMax;
use super::{msr, sysfs};

/// Serialized in `cpufreq record`'s trace, for the replay.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FreqTable {
    /// Lowest efficient frequency (MSR_PLATFORM_INFO's max efficiency ratio).
    pub efficiency_mhz: Option<u32>,
    /// Base (nominal) frequency; MPERF counts at this rate.
    pub base_mhz: Option<u32>,
    /// turbo_mhz[n - 1]: the frequency with n cores active.
    pub turbo_mhz: Vec<u32>,
    /// Highest frequency: 1C turbo, CPPC highest perf, or cpuinfo_max_freq.
    pub max_mhz: Option<u32>,
    /// The frequency the kernel's own ratio (scx_bpf_cpuperf_cur()) is
    /// relative to: on x86 its max_freq_ratio x base (the turbo ratio of
    /// MSR_TURBO_RATIO_LIMIT as aperfmperf.c reads it, or AMD's CPPC boost
    /// numerator), elsewhere cpuinfo_max_freq. None when unknown, and on x86
    /// without APERFMPERF, where the kernel's ratio is always 1024.
    pub kernel_ref_mhz: Option<u32>,
    /// cpuinfo_max_freq: what schedutil maps a cpuperf target of 1024 to
    /// (get_capacity_ref_freq() with frequency invariance).
    pub cpufreq_max_mhz: Option<u32>,
    /// Lowest frequency cpufreq will set: cpuinfo_min_freq.
    pub min_mhz: Option<u32>,
    /// Where each value came from, and why a source gave nothing.
    pub notes: Vec<String>,
}

/// What the BPF side needs of a freq_max choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The MHz a ratio of 1024 stands for; None if nothing is known.
    pub mhz: Option<u32>,
}

impl Resolved {
    /// freq_max / base x1024 (arch_max_freq_ratio); 1024 when unknown.
    pub fn freq_max_ratio(&self, table: &FreqTable) -> u32 {
        match (self.mhz, table.base_mhz) {
            (Some(m), Some(b)) if b > 0 => ((m as u64 * 1024) / b as u64) as u32,
            _ => 1024,
        }
    }

    /// kernel reference / freq_max x1024; 1024 when unknown.
    pub fn cpuperf_scale(&self, table: &FreqTable) -> u32 {
        match (self.mhz, table.kernel_ref_mhz) {
            (Some(m), Some(k)) if m > 0 => ((k as u64 * 1024) / m as u64) as u32,
            _ => 1024,
        }
    }

    /// freq_max / cpuinfo_max_freq x1024: turns util (relative to
    /// freq_max) into a cpuperf target (relative to cpuinfo_max_freq);
    /// 1024 when unknown.
    pub fn cpufreq_scale(&self, table: &FreqTable) -> u32 {
        match (self.mhz, table.cpufreq_max_mhz) {
            (Some(m), Some(k)) if k > 0 => ((m as u64 * 1024) / k as u64) as u32,
            _ => 1024,
        }
    }
}

impl FreqTable {
    /// Reads this machine: MSRs (Intel), then CPPC (AMD), then cpufreq.
    pub fn probe() -> FreqTable {
        let mut t = FreqTable::default();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        msr::read_intel(&mut t);
        t.read_sysfs(Path::new("/sys"), &cpuinfo, cfg!(target_arch = "x86_64"));
        t
    }

    /// What sysfs under @root (/sys, or a machine's fixture in the tests)
    /// adds after the MSRs: CPPC, then cpufreq, and the kernel's own
    /// invariance from @cpuinfo; @x86 as the machine is.
    pub fn read_sysfs(&mut self, root: &Path, cpuinfo: &str, x86: bool) {
        sysfs::read_cppc(root, cpuinfo, self);
        sysfs::read_cpufreq(root, x86, self);
        self.check_kernel_invariance(x86, cpuinfo);
    }

    /// On x86 the kernel's frequency ratio exists only with APERFMPERF
    /// (arch/x86/kernel/cpu/aperfmperf.c); without it
    /// scx_bpf_cpuperf_cur() is always 1024 and tells nothing.
    pub(super) fn check_kernel_invariance(&mut self, x86: bool, cpuinfo: &str) {
        let flags = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or_default();
        if x86 && !flags.split_whitespace().any(|f| f == "aperfmperf") {
            self.kernel_ref_mhz = None;
            self.notes.push(
                "kernel reference: none, the kernel's frequency invariance is off (no aperfmperf flag): its ratio is always 1024"
                    .into(),
            );
        }
    }

    /// Test only: a machine whose base frequency (the MPERF rate) is
    /// @base_mhz and nothing else, for `--test-freq-inject`.
    pub fn injected(base_mhz: u32) -> FreqTable {
        FreqTable {
            base_mhz: Some(base_mhz),
            notes: vec![format!(
                "base {base_mhz} MHz: given by --test-freq-inject (test only)"
            )],
            ..FreqTable::default()
        }
    }

    /// Sets @slot to @mhz from @origin unless an earlier source set it.
    pub(super) fn offer(
        slot: &mut Option<u32>,
        mhz: u32,
        what: &str,
        origin: &str,
        notes: &mut Vec<String>,
    ) {
        if slot.is_none() && mhz > 0 {
            *slot = Some(mhz);
            notes.push(format!("{what} {mhz} MHz: {origin}"));
        }
    }

    /// The MHz of @choice, or an error naming the choices this machine has.
    pub fn resolve(&self, choice: FreqMax) -> Result<Resolved> {
        let mhz = match choice {
            FreqMax::Auto => {
                let four = self
                    .turbo_mhz
                    .get(3.min(self.turbo_mhz.len().saturating_sub(1)));
                return Ok(Resolved {
                    mhz: four.copied().or(self.max_mhz).or(self.base_mhz),
                });
            }
            FreqMax::Turbo(n) => self.turbo_mhz.get(n as usize - 1).copied(),
            FreqMax::Base => self.base_mhz,
            FreqMax::Max => self.max_mhz,
            // MHz mean something only against the MPERF rate or the kernel's
            // reference frequency.
            FreqMax::Mhz(m) => (self.base_mhz.is_some()
                || self.kernel_ref_mhz.is_some()
                || self.cpufreq_max_mhz.is_some())
            .then_some(m),
        };
        match mhz {
            Some(mhz) => Ok(Resolved { mhz: Some(mhz) }),
            None => bail!(
                "freq_max `{choice}` is not available on this machine: the choices here are {}",
                self.choices().join(", ")
            ),
        }
    }

    /// The lowest frequency, for the deadband's floor: cpuinfo_min_freq,
    /// else the MSRs' maximum-efficiency frequency.
    pub fn fmin_mhz(&self) -> Option<u32> {
        self.min_mhz.or(self.efficiency_mhz)
    }

    /// Every choice that resolves here, with its MHz.
    pub fn choices(&self) -> Vec<String> {
        let mut out = vec![match self.resolve(FreqMax::Auto) {
            Ok(Resolved { mhz: Some(m) }) => format!("auto ({m} MHz)"),
            _ => "auto (no frequency known: ratios stay 1024)".to_string(),
        }];
        out.extend(
            self.turbo_mhz
                .iter()
                .enumerate()
                .map(|(i, m)| format!("{}c ({m} MHz)", i + 1)),
        );
        if let Some(b) = self.base_mhz {
            out.push(format!("base ({b} MHz)"));
        }
        if let Some(m) = self.max_mhz {
            out.push(format!("max ({m} MHz)"));
        }
        if self.base_mhz.is_some()
            || self.kernel_ref_mhz.is_some()
            || self.cpufreq_max_mhz.is_some()
        {
            out.push("a frequency in MHz".to_string());
        }
        out
    }
}
