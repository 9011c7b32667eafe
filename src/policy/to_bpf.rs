//! The one place a policy becomes what BPF reads: struct cadence_policy
//! (bpf/intf.h), with freq.max resolved against this machine. Live keeps
//! the struct it built and wrote, the stats read freq_max from it, and
//! `ctl get` returns its fields by name, so the VM tests hold the pinned
//! map against this very output.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Policy;
use crate::bpf_intf;
use crate::freq::FreqTable;

impl Policy {
    /// The policy as the BPF side reads it; an error names the freq_max
    /// choices this machine has, or a floor fmin at or above freq_max.
    pub fn to_bpf(&self, freq: &FreqTable) -> Result<bpf_intf::cadence_policy> {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut pol: bpf_intf::cadence_policy = unsafe { std::mem::zeroed() };
        pol.slice_max_ns = self.slice.max_us * 1000;
        pol.slice_min_ns = self.slice.min_us * 1000;
        pol.slice_lag_ns = self.slice.lag_us * 1000;
        pol.wakeup_preempt = self.latency.wakeup_preempt as u16;
        pol.sync_wakeup = self.latency.sync_wakeup as u16;
        // schema.rs bounds it to 100_000.
        pol.slice_timer_us = self.latency.slice_timer_us as u32;
        pol.idle_core_first = self.placement.idle_core_first as u32;
        pol.place_order = self.placement.order.bpf();
        pol.place_hold = self.placement.hold as u32;
        pol.place_move_margin = self.placement.move_margin;

        let fmax = freq.resolve(self.freq.max)?;
        pol.freq_max_ratio = fmax.freq_max_ratio(freq);
        pol.cpuperf_scale = fmax.cpuperf_scale(freq);
        pol.cpufreq_scale = fmax.cpufreq_scale(freq);
        pol.freq_max_mhz = fmax.mhz.unwrap_or(0);

        let c = &self.cpufreq;
        pol.cpufreq_mode = c.mode.bpf();
        pol.cpufreq_headroom_pct = c.headroom_pct as u32;
        pol.cpufreq_floor_util = c.floor_util(freq, fmax.mhz)?;
        pol.cpufreq_band = c.band as u32;
        pol.cpufreq_interval_ns = c.interval_us * 1000;
        pol.cpufreq_down_hold_ns = c.down_hold_us * 1000;
        pol.cpufreq_iowait_boost = c.legacy_iowait_boost as u32;

        let i = &self.idle;
        pol.idle_predictor = i.predictor.bpf();
        pol.idle_pick = i.pick.bpf();
        pol.idle_learning_rate = i.learning_rate as u32;
        pol.idle_aging_interval = i.aging_interval as u32;
        pol.idle_place = i.place.bpf();
        Ok(pol)
    }
}

/// @pol's fields by their C names (the names bpftool prints from BTF),
/// padding left out. A field added to the struct and not here shows up as
/// a mismatch in the VM's pinned-map comparison.
pub fn fields(pol: &bpf_intf::cadence_policy) -> BTreeMap<String, u64> {
    let f: [(&str, u64); 26] = [
        ("slice_max_ns", pol.slice_max_ns),
        ("slice_min_ns", pol.slice_min_ns),
        ("slice_lag_ns", pol.slice_lag_ns),
        ("idle_core_first", pol.idle_core_first.into()),
        ("freq_max_ratio", pol.freq_max_ratio.into()),
        ("cpuperf_scale", pol.cpuperf_scale.into()),
        ("freq_max_mhz", pol.freq_max_mhz.into()),
        ("cpufreq_mode", pol.cpufreq_mode.into()),
        ("cpufreq_headroom_pct", pol.cpufreq_headroom_pct.into()),
        ("cpufreq_scale", pol.cpufreq_scale.into()),
        ("cpufreq_floor_util", pol.cpufreq_floor_util.into()),
        ("cpufreq_band", pol.cpufreq_band.into()),
        ("cpufreq_iowait_boost", pol.cpufreq_iowait_boost.into()),
        ("cpufreq_interval_ns", pol.cpufreq_interval_ns),
        ("cpufreq_down_hold_ns", pol.cpufreq_down_hold_ns),
        ("place_order", pol.place_order.into()),
        ("idle_predictor", pol.idle_predictor.into()),
        ("idle_pick", pol.idle_pick.into()),
        ("idle_learning_rate", pol.idle_learning_rate.into()),
        ("idle_aging_interval", pol.idle_aging_interval.into()),
        ("idle_place", pol.idle_place.into()),
        ("wakeup_preempt", pol.wakeup_preempt.into()),
        ("sync_wakeup", pol.sync_wakeup.into()),
        ("slice_timer_us", pol.slice_timer_us.into()),
        ("place_hold", pol.place_hold.into()),
        ("place_move_margin", pol.place_move_margin.into()),
    ];
    f.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}
