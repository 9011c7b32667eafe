//! One idle period as `idle record` writes it and `idle replay` feeds it to
//! the BPF learner (bpf/idle_replay.bpf.c): what each source chose when the
//! period began, and the scores per source that replay prints. The layout
//! follows bpf/intf_idle.h (enum cadence_idle_source, cadence_idle_ideal).

use super::table::MAX;
use crate::bpf_intf;

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
}

/// Sources and ideals, as enum cadence_idle_source / cadence_idle_ideal
/// (the sources by name: reference::TEO, PER_CHOICE, SEED, KERNEL).
pub const SOURCES: usize = bpf_intf::cadence_idle_source_CADENCE_IDLE_SOURCES as usize;
pub const IDEALS: usize = 2;
pub const DIFFS: usize = 2 * MAX - 1;
pub const BY_RESIDENCY: usize = 0;
pub const BY_EXIT: usize = 1;

/// Counts per source, ideal and chosen - ideal (+ MAX - 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scores(pub [[[u64; DIFFS]; IDEALS]; SOURCES]);

impl Default for Scores {
    fn default() -> Self {
        Scores([[[0; DIFFS]; IDEALS]; SOURCES])
    }
}
