//! One idle period as `idle record` writes it and `idle replay` feeds it to
//! the BPF learner (bpf/idle_replay.bpf.c): what each source chose when the
//! period began, and the scores per source that replay prints. The layout
//! follows bpf/intf_idle.h (enum cadence_idle_source, cadence_idle_ideal).

use serde::{Deserialize, Serialize};

use super::table::MAX;
use crate::bpf_intf;

/// KTIME_MAX: an unknown sleep length or clock event.
pub const ENDLESS: u64 = i64::MAX as u64;

/// What teo reads from the tick and the polling state (struct
/// cadence_idle_tick): the tick at selection, and how the period ended.
/// The default knows nothing, and no tick rule fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tick {
    /// TICK_NSEC; 0: not known.
    #[serde(default)]
    pub tick_ns: u64,
    /// At selection, the time to the next clock event (the tick included
    /// while it runs); ENDLESS if not known.
    #[serde(default = "endless")]
    pub next_event_ns: u64,
    /// The tick was already stopped at selection.
    #[serde(default)]
    pub stopped: bool,
    /// The tick's timer woke the CPU.
    #[serde(default)]
    pub woke: bool,
    /// A polling state gave up at its time limit.
    #[serde(default)]
    pub poll_limit: bool,
}

pub fn endless() -> u64 {
    ENDLESS
}

impl Default for Tick {
    fn default() -> Self {
        Tick {
            tick_ns: 0,
            next_event_ns: ENDLESS,
            stopped: false,
            woke: false,
            poll_limit: false,
        }
    }
}

impl Tick {
    pub fn to_bpf(self) -> bpf_intf::cadence_idle_tick {
        bpf_intf::cadence_idle_tick {
            tick_ns: self.tick_ns,
            next_event_ns: self.next_event_ns,
            stopped: self.stopped as u32,
            woke: self.woke as u32,
            poll_limit: self.poll_limit as u32,
            __pad: 0,
        }
    }

    pub fn from_bpf(t: &bpf_intf::cadence_idle_tick) -> Tick {
        Tick {
            tick_ns: t.tick_ns,
            next_event_ns: t.next_event_ns,
            stopped: t.stopped != 0,
            woke: t.woke != 0,
            poll_limit: t.poll_limit != 0,
        }
    }
}

/// The kernel's verdict on the state it entered for a period
/// (power:cpu_idle_miss, enum cadence_idle_miss): "above" the period ended
/// before the state's target residency, "below" a deeper state's fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Miss {
    /// No verdict: the state fit, or there is no cpuidle driver.
    #[default]
    None,
    Above,
    Below,
}

impl Miss {
    pub fn to_bpf(self) -> u32 {
        match self {
            Miss::None => bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_NONE,
            Miss::Above => bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_ABOVE,
            Miss::Below => bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_BELOW,
        }
    }

    pub fn from_bpf(v: u32) -> Miss {
        match v {
            bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_ABOVE => Miss::Above,
            bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_BELOW => Miss::Below,
            _ => Miss::None,
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Miss::None
    }
}

/// What was chosen when a period began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub teo: u32,
    pub per_choice: u32,
    pub seed: u32,
    pub kernel: i32,
    pub rand: u32,
    pub sleep_length_ns: u64,
    pub sleep_length_used: bool,
    /// The state whose exit latency teo's update takes: the kernel's where
    /// its indices are ours, else teo's.
    pub entered: u32,
    pub tick: Tick,
    /// The PM QoS limit teo read, ns.
    pub latency_req_ns: u64,
    /// The kernel's verdict on the period.
    pub kernel_miss: Miss,
}

/// Sources and ideals, as enum cadence_idle_source / cadence_idle_ideal
/// (the sources by name: reference::TEO, PER_CHOICE, SEED, KERNEL).
pub const SOURCES: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SOURCES as usize;
pub const IDEALS: usize = 2;
pub const DIFFS: usize = 2 * MAX - 1;
pub const BY_RESIDENCY: usize = 0;
pub const BY_EXIT: usize = 1;

/// The kernel's verdicts that are a miss: [0] above, [1] below.
pub const MISSES: usize = bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISSES as usize - 1;

/// Counts per ideal and chosen - ideal (+ MAX - 1): per source (@n), and
/// of the kernel's choices again by its verdict when that was a miss
/// (@miss), as struct cadence_idle_scores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scores {
    pub n: [[[u64; DIFFS]; IDEALS]; SOURCES],
    pub miss: [[[u64; DIFFS]; IDEALS]; MISSES],
}

impl Default for Scores {
    fn default() -> Self {
        Scores {
            n: [[[0; DIFFS]; IDEALS]; SOURCES],
            miss: [[[0; DIFFS]; IDEALS]; MISSES],
        }
    }
}

impl Scores {
    pub fn to_bpf(&self) -> bpf_intf::cadence_idle_scores {
        bpf_intf::cadence_idle_scores {
            n: self.n,
            miss: self.miss,
        }
    }

    pub fn from_bpf(sc: &bpf_intf::cadence_idle_scores) -> Scores {
        Scores {
            n: sc.n,
            miss: sc.miss,
        }
    }

    /// Every count, @n then @miss, each flattened in its order.
    pub fn flat(&self) -> impl Iterator<Item = &u64> {
        let n = self.n.as_flattened().as_flattened();
        n.iter().chain(self.miss.as_flattened().as_flattened())
    }

    pub fn flat_mut(&mut self) -> impl Iterator<Item = &mut u64> {
        let n = self.n.as_flattened_mut().as_flattened_mut();
        n.iter_mut()
            .chain(self.miss.as_flattened_mut().as_flattened_mut())
    }
}
