//! The one place a policy becomes what BPF reads: struct cadence_policy
//! (bpf/intf.h), with freq.max resolved against this machine. Live keeps
//! the struct it built and wrote, the stats read freq_max from it, and
//! `ctl get` returns its fields by name, so the VM tests hold the pinned
//! map against this very output.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Policy;
use super::fields::direct_bpf_fields;
use crate::bpf_intf;
use crate::freq::FreqTable;

impl Policy {
    /// The policy as the BPF side reads it; an error names the freq_max
    /// choices this machine has, or a floor fmin at or above freq_max.
    pub fn to_bpf(&self, freq: &FreqTable) -> Result<bpf_intf::cadence_policy> {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut pol: bpf_intf::cadence_policy = unsafe { std::mem::zeroed() };
        self.direct_to_bpf(&mut pol);

        // The fields whose value depends on this machine or on other fields.
        let fmax = freq.resolve(self.freq.max)?;
        pol.freq_max_ratio = fmax.freq_max_ratio(freq);
        pol.cpuperf_scale = fmax.cpuperf_scale(freq);
        pol.cpufreq_scale = fmax.cpufreq_scale(freq);
        pol.freq_max_mhz = fmax.mhz.unwrap_or(0);

        pol.cpufreq_floor_util = self.cpufreq.floor_util(freq, fmax.mhz)?;
        Ok(pol)
    }
}

/// @pol's fields by their C names (the names bpftool prints from BTF),
/// padding left out: those fields.rs declares, and those written above. A
/// field added to the struct and to neither shows up as a mismatch in the
/// VM's pinned-map comparison, and in the size check of the host tests.
pub fn fields(pol: &bpf_intf::cadence_policy) -> BTreeMap<String, u64> {
    let derived: [(&str, u64); 5] = [
        ("freq_max_ratio", pol.freq_max_ratio.into()),
        ("cpuperf_scale", pol.cpuperf_scale.into()),
        ("cpufreq_scale", pol.cpufreq_scale.into()),
        ("freq_max_mhz", pol.freq_max_mhz.into()),
        ("cpufreq_floor_util", pol.cpufreq_floor_util.into()),
    ];
    direct_bpf_fields(pol)
        .into_iter()
        .chain(derived)
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}
