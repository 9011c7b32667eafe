//! freq_max, the frequency a ratio of 1024 stands for: the denominator of
//! every frequency ratio. The seed's trade-off: 1C turbo undershoots (lower
//! util, lower frequency requests: efficiency), base overshoots (higher
//! util: performance), 4C turbo is a compromise.

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Lowest and highest MHz accepted as an explicit freq_max: below 100 MHz
/// or above 10 GHz no x86 or Arm CPU has run; anything outside is a typo.
pub const MHZ_RANGE: std::ops::RangeInclusive<u32> = 100..=10_000;

/// Largest N in "Nc": MSR_TURBO_RATIO_LIMIT lists 8 buckets, and group
/// sizes (MSR_TURBO_RATIO_LIMIT1) reach 255 cores.
pub const MAX_TURBO_CORES: u32 = 255;

/// In a policy's TOML it is a string as `--freq-max` takes it, or MHz as an
/// integer; it is written back as the string (`max = "2800"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FreqMaxText", into = "String")]
pub enum FreqMax {
    /// 4c where turbo ratios can be read (the seed's choice), else max.
    Auto,
    /// The N-active-cores turbo frequency ("Nc").
    Turbo(u32),
    /// The base (nominal, guaranteed) frequency.
    Base,
    /// The highest frequency: 1C turbo, CPPC highest, cpuinfo_max_freq.
    Max,
    /// An explicit frequency.
    Mhz(u32),
}

/// The accepted spellings, for error messages.
pub const SYNTAX: &str =
    "auto, 1c..255c (N-core turbo), base, max or a frequency in MHz (100..=10000)";

impl FromStr for FreqMax {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.as_str();
        match t {
            "auto" => return Ok(FreqMax::Auto),
            "base" => return Ok(FreqMax::Base),
            "max" => return Ok(FreqMax::Max),
            _ => {}
        }
        if let Some(n) = t.strip_suffix('c') {
            if let Some(n) = n
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_TURBO_CORES).contains(n))
            {
                return Ok(FreqMax::Turbo(n));
            }
        } else if let Some(mhz) = t
            .trim_end_matches("mhz")
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|m| MHZ_RANGE.contains(m))
        {
            return Ok(FreqMax::Mhz(mhz));
        }
        bail!("unknown freq_max `{s}`: expected {SYNTAX}")
    }
}

/// freq.max as TOML may spell it.
#[derive(Deserialize)]
#[serde(untagged)]
enum FreqMaxText {
    Word(String),
    Mhz(i64),
}

impl TryFrom<FreqMaxText> for FreqMax {
    type Error = String;
    fn try_from(t: FreqMaxText) -> Result<Self, String> {
        match t {
            FreqMaxText::Word(s) => s.parse().map_err(|e| format!("{e}")),
            FreqMaxText::Mhz(m) => match u32::try_from(m) {
                Ok(m) if MHZ_RANGE.contains(&m) => Ok(FreqMax::Mhz(m)),
                _ => Err(format!("{m} MHz is out of range: expected {SYNTAX}")),
            },
        }
    }
}

impl From<FreqMax> for String {
    fn from(f: FreqMax) -> String {
        f.to_string()
    }
}

impl fmt::Display for FreqMax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreqMax::Auto => write!(f, "auto"),
            FreqMax::Turbo(n) => write!(f, "{n}c"),
            FreqMax::Base => write!(f, "base"),
            FreqMax::Max => write!(f, "max"),
            FreqMax::Mhz(m) => write!(f, "{m}"),
        }
    }
}
