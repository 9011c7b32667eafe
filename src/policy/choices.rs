//! The policy fields that hold one word of a fixed list: typed from the
//! moment serde reads them, spelled in TOML as before (serde goes through
//! the same word list the schema checks and `policies` prints), and mapped
//! to the C enums of bpf/ in one match each.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bpf_intf;

/// placement.order: how a waking task finds an idle CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PlaceOrder {
    /// Spread over small cores first (bpf/place_search.bpf.c, seed 002).
    SmallCore,
    /// The plain prev / idle-core order on the kernel's SMT mask.
    Core,
}

/// cpufreq.mode: how each CPU's cpufreq target is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CpufreqMode {
    /// From frequency-invariant util (bpf/cpufreq_target.bpf.h).
    Util,
    /// Always 1024.
    Performance,
    /// Always the minimum.
    Powersave,
}

/// idle.predictor: which idle-state prediction acts (bpf/idle_learn.bpf.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum IdlePredictor {
    /// No learning at all: the cpu_idle tracepoint returns at once.
    Off,
    /// Mainline teo's bins (drivers/cpuidle/governors/teo.c).
    Teo,
    /// A weight matrix over teo's choice, a row per choice, learning toward
    /// the state each period justified (this project's variant of seed
    /// 003's matrix).
    PerChoice,
    /// Seed 003's matrix as its RFC v2 posted it: consulted only when
    /// teo's history moved the choice shallower, never deeper than teo.
    Seed,
}

/// idle.pick: how the per-choice predictor reads its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum IdlePick {
    /// Weighted random, as seed 003.
    Random,
    /// The heaviest weight: deterministic.
    Heaviest,
}

/// idle.place: how idle states break ties between equally good idle CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum IdlePlace {
    /// The placement search alone decides.
    Off,
    /// Wake the CPU in the shallowest state (smallest exit latency).
    Shallow,
}

/// idle.qos: whether the loader writes per-CPU PM QoS resume latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum IdleQos {
    /// Leave pm_qos_resume_latency_us alone.
    Off,
    /// Keep the kernel's governor out of states the table predicts would
    /// be cut short.
    Learned,
}

/// A word-valued field: its variants and their TOML words, in one table.
pub trait Choice: Copy + PartialEq + 'static {
    /// Every variant with its word, in the order `policies` lists them.
    const WORDS: &'static [(Self, &'static str)];

    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(v, _)| *v == self)
            .map(|(_, w)| *w)
            .expect("every variant has a word")
    }

    fn from_word(word: &str) -> Option<Self> {
        Self::WORDS
            .iter()
            .find(|(_, w)| *w == word)
            .map(|(v, _)| *v)
    }

    /// The words, for the schema's checks and messages.
    fn words() -> Vec<&'static str> {
        Self::WORDS.iter().map(|(_, w)| *w).collect()
    }
}

impl Choice for PlaceOrder {
    const WORDS: &'static [(Self, &'static str)] =
        &[(Self::SmallCore, "small_core"), (Self::Core, "core")];
}

impl Choice for CpufreqMode {
    const WORDS: &'static [(Self, &'static str)] = &[
        (Self::Util, "util"),
        (Self::Performance, "performance"),
        (Self::Powersave, "powersave"),
    ];
}

impl Choice for IdlePredictor {
    const WORDS: &'static [(Self, &'static str)] = &[
        (Self::Off, "off"),
        (Self::Teo, "teo"),
        (Self::PerChoice, "per_choice"),
        (Self::Seed, "seed"),
    ];
}

impl Choice for IdlePick {
    const WORDS: &'static [(Self, &'static str)] =
        &[(Self::Random, "random"), (Self::Heaviest, "heaviest")];
}

impl Choice for IdlePlace {
    const WORDS: &'static [(Self, &'static str)] =
        &[(Self::Off, "off"), (Self::Shallow, "shallow")];
}

impl Choice for IdleQos {
    const WORDS: &'static [(Self, &'static str)] =
        &[(Self::Off, "off"), (Self::Learned, "learned")];
}

impl IdlePredictor {
    /// enum cadence_idle_predictor.
    pub fn bpf(self) -> u32 {
        match self {
            Self::Off => bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_OFF,
            Self::Teo => bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_TEO,
            Self::PerChoice => bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_PER_CHOICE,
            Self::Seed => bpf_intf::cadence_idle_predictor_CADENCE_IDLE_PREDICTOR_SEED,
        }
    }
}

impl IdlePick {
    /// enum cadence_idle_pick.
    pub fn bpf(self) -> u32 {
        match self {
            Self::Random => bpf_intf::cadence_idle_pick_CADENCE_IDLE_PICK_RANDOM,
            Self::Heaviest => bpf_intf::cadence_idle_pick_CADENCE_IDLE_PICK_HEAVIEST,
        }
    }
}

impl IdlePlace {
    /// enum cadence_idle_place.
    pub fn bpf(self) -> u32 {
        match self {
            Self::Off => bpf_intf::cadence_idle_place_CADENCE_IDLE_PLACE_OFF,
            Self::Shallow => bpf_intf::cadence_idle_place_CADENCE_IDLE_PLACE_SHALLOW,
        }
    }
}

impl PlaceOrder {
    /// enum cadence_place_order.
    pub fn bpf(self) -> u32 {
        match self {
            Self::SmallCore => bpf_intf::cadence_place_order_CADENCE_ORDER_SMALL_CORE,
            Self::Core => bpf_intf::cadence_place_order_CADENCE_ORDER_CORE,
        }
    }
}

impl CpufreqMode {
    /// enum cadence_cpufreq_mode.
    pub fn bpf(self) -> u32 {
        match self {
            Self::Util => bpf_intf::cadence_cpufreq_mode_CADENCE_CPUFREQ_MODE_UTIL,
            Self::Performance => bpf_intf::cadence_cpufreq_mode_CADENCE_CPUFREQ_MODE_PERFORMANCE,
            Self::Powersave => bpf_intf::cadence_cpufreq_mode_CADENCE_CPUFREQ_MODE_POWERSAVE,
        }
    }
}

/// serde's way in: the schema has already checked the word, so an unknown
/// one here means the policy did not come through Policy::parse.
fn parse_word<T: Choice>(word: String) -> Result<T, String> {
    T::from_word(&word)
        .ok_or_else(|| format!("`{word}`: expected one of {}", T::words().join(", ")))
}

/// serde's conversions and Display, through the word table, for each
/// word-valued field.
macro_rules! word_conversions {
    ($($t:ty),*) => {$(
        impl TryFrom<String> for $t {
            type Error = String;
            fn try_from(word: String) -> Result<Self, String> {
                parse_word(word)
            }
        }

        impl From<$t> for String {
            fn from(v: $t) -> String {
                v.word().to_string()
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.word())
            }
        }
    )*};
}

word_conversions!(
    PlaceOrder,
    CpufreqMode,
    IdlePredictor,
    IdlePick,
    IdlePlace,
    IdleQos
);
