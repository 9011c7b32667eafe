//! One CPU's learned idle table (struct cadence_idle_learned, bpf/intf_idle.h)
//! as Rust and JSON see it: `ctl idle save/load`, the traces' table records
//! and the reference model all use this one type.

use serde::{Deserialize, Serialize};

use super::states::IdleState;
use crate::bpf_intf;

/// bpf/intf_idle.h's CADENCE_IDLE_MAX_STATES.
pub const MAX: usize = bpf_intf::cadence_idle_consts_CADENCE_IDLE_MAX_STATES as usize;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    /// The number of states it was learned for; 0: fresh.
    pub nr_states: u32,
    /// teo's bins, per state.
    pub hits: [u32; MAX],
    pub intercepts: [u32; MAX],
    pub total: u32,
    pub short_idles: u32,
    /// teo's tick_intercepts and total_tick; tables saved before they were
    /// kept have none.
    #[serde(default)]
    pub tick_intercepts: u32,
    #[serde(default)]
    pub total_tick: u32,
    /// The per-choice predictor's matrix: row = teo's choice, column =
    /// the state.
    pub weight: [[u16; MAX]; MAX],
    /// Seed 003's matrix: row = the state the seed entered.
    pub seed_weight: [[u16; MAX]; MAX],
    pub periods: u64,
}

impl Table {
    pub fn from_bpf(t: &bpf_intf::cadence_idle_learned) -> Table {
        Table {
            nr_states: t.nr_states,
            hits: t.hits,
            intercepts: t.intercepts,
            total: t.total,
            short_idles: t.short_idles,
            tick_intercepts: t.tick_intercepts,
            total_tick: t.total_tick,
            weight: t.weight,
            seed_weight: t.seed_weight,
            periods: t.periods,
        }
    }

    pub fn to_bpf(&self) -> bpf_intf::cadence_idle_learned {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut t: bpf_intf::cadence_idle_learned = unsafe { std::mem::zeroed() };
        t.nr_states = self.nr_states;
        t.hits = self.hits;
        t.intercepts = self.intercepts;
        t.total = self.total;
        t.short_idles = self.short_idles;
        t.tick_intercepts = self.tick_intercepts;
        t.total_tick = self.total_tick;
        t.weight = self.weight;
        t.seed_weight = self.seed_weight;
        t.periods = self.periods;
        t
    }
}

/// One CPU's states as BPF reads them (struct cadence_idle_states): target
/// residencies and exit latencies in ns, disabled and polling ones as bit
/// masks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatesNs {
    pub residency_ns: Vec<u64>,
    pub exit_latency_ns: Vec<u64>,
    pub disabled: Vec<bool>,
    /// Polling states (CPUIDLE_FLAG_POLLING); none where shorter.
    pub polling: Vec<bool>,
}

/// The names the kernel gives its polling states (CPUIDLE_FLAG_POLLING):
/// drivers/cpuidle/poll_state.c's, and POWER's snooze_loop()
/// (cpuidle-powernv.c, cpuidle-pseries.c).
pub const POLL_STATES: [&str; 2] = ["POLL", "snooze"];

impl StatesNs {
    /// @states (in us, as sysfs and the files give them) in ns.
    pub fn from_states(states: &[IdleState]) -> StatesNs {
        StatesNs {
            residency_ns: states
                .iter()
                .map(|s| u64::from(s.target_residency_us) * 1000)
                .collect(),
            exit_latency_ns: states
                .iter()
                .map(|s| u64::from(s.exit_latency_us) * 1000)
                .collect(),
            disabled: states.iter().map(|s| s.disabled).collect(),
            polling: states
                .iter()
                .map(|s| POLL_STATES.contains(&s.name.as_str()))
                .collect(),
        }
    }

    pub fn nr(&self) -> usize {
        self.residency_ns.len()
    }

    pub fn enabled(&self, i: usize) -> bool {
        i < self.nr() && !self.disabled[i]
    }

    pub fn polling(&self, i: usize) -> bool {
        self.polling.get(i).copied().unwrap_or(false)
    }

    pub fn to_bpf(&self) -> bpf_intf::cadence_idle_states {
        // SAFETY: as above.
        let mut s: bpf_intf::cadence_idle_states = unsafe { std::mem::zeroed() };
        s.nr = self.nr() as u32;
        // No limit until the loader reads one (idle::latency_req).
        s.latency_req_ns = super::period::ENDLESS;
        for i in 0..self.nr().min(MAX) {
            s.residency_ns[i] = self.residency_ns[i];
            s.exit_latency_ns[i] = self.exit_latency_ns[i];
            if self.disabled[i] {
                s.disabled |= 1 << i;
            }
            if self.polling(i) {
                s.polling |= 1 << i;
            }
        }
        s
    }
}
