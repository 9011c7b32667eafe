//! The policy's `[cpufreq]` section: how each CPU's cpufreq target is chosen
//! and the deadband in front of scx_bpf_cpuperf_set() (bpf/cpufreq_target.bpf.h
//! says what each field does there).

use anyhow::{Result, bail};

use super::{Cpufreq, CpufreqMode};
use crate::freq::FreqTable;

/// Why the floor is off although the policy asks for it, if it is.
pub enum FloorOff {
    /// Neither cpufreq nor the MSRs gave a minimum frequency.
    NoFmin,
    /// No freq_max is known to divide by.
    NoFmax,
}

impl Cpufreq {
    /// The floor is asked for: it is on, and targets follow util.
    fn wants_floor(&self) -> bool {
        self.floor && self.mode == CpufreqMode::Util
    }

    /// fmin for the floor: the policy's, else the machine's.
    fn fmin_mhz(&self, freq: &FreqTable) -> Option<u32> {
        match self.min_mhz {
            0 => freq.fmin_mhz(),
            m => Some(m as u32),
        }
    }

    /// The util under which the floor asks for the minimum,
    /// ceil(fmin x 1024 / fmax), so that util < it exactly when util / 1024
    /// < fmin / fmax; 0 when there is no floor. An fmin at or above freq_max
    /// would floor everything: refused.
    pub fn floor_util(&self, freq: &FreqTable, fmax_mhz: Option<u32>) -> Result<u32> {
        let (Some(fmin), Some(fmax)) = (self.fmin_mhz(freq), fmax_mhz) else {
            return Ok(0);
        };
        if !self.wants_floor() {
            return Ok(0);
        }
        if fmin >= fmax {
            bail!(
                "cpufreq.min_mhz: fmin {fmin} MHz is out of range: it must be below freq_max ({fmax} MHz)"
            );
        }
        Ok((fmin as u64 * 1024).div_ceil(fmax as u64) as u32)
    }

    /// Why the floor the policy asks for cannot be had here, if so.
    pub fn floor_off(&self, freq: &FreqTable, fmax_mhz: Option<u32>) -> Option<FloorOff> {
        if !self.wants_floor() {
            return None;
        }
        if self.fmin_mhz(freq).is_none() {
            return Some(FloorOff::NoFmin);
        }
        fmax_mhz.is_none().then_some(FloorOff::NoFmax)
    }
}

impl FloorOff {
    /// One line for the log.
    pub fn describe(&self) -> &'static str {
        match self {
            FloorOff::NoFmin => {
                "cpufreq.floor is off: this machine gives no minimum frequency (set cpufreq.min_mhz)"
            }
            FloorOff::NoFmax => "cpufreq.floor is off: no freq_max is known to divide fmin by",
        }
    }
}
