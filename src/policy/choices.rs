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
    /// Spread over small cores first (bpf/place_search.bpf.h, seed 002).
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

impl TryFrom<String> for PlaceOrder {
    type Error = String;
    fn try_from(word: String) -> Result<Self, String> {
        parse_word(word)
    }
}

impl TryFrom<String> for CpufreqMode {
    type Error = String;
    fn try_from(word: String) -> Result<Self, String> {
        parse_word(word)
    }
}

impl From<PlaceOrder> for String {
    fn from(v: PlaceOrder) -> String {
        v.word().to_string()
    }
}

impl From<CpufreqMode> for String {
    fn from(v: CpufreqMode) -> String {
        v.word().to_string()
    }
}

impl fmt::Display for PlaceOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl fmt::Display for CpufreqMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}
