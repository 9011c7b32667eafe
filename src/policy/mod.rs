//! Policies: every tunable of the scheduler, as one named TOML file.
//!
//! A policy file may leave fields out; they take the `balanced` preset's
//! value. Unknown keys, wrong types and values out of range are refused with
//! a message naming the field, the value and what is allowed (fields.rs
//! declares every field, schema.rs checks values).
//! Three presets ship inside the binary (presets/).

mod choices;
mod cpufreq;
mod fields;
mod live;
mod markdown;
mod schema;
mod to_bpf;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
pub use choices::{Choice, CpufreqMode, IdlePredictor, IdleQos, PlaceOrder};
pub use fields::{Cpufreq, FIELDS, Idle, Policy};
#[cfg(test)]
pub use fields::{Fairness, Freq, Latency, Placement, Slice};
pub use live::Live;
pub use markdown::markdown;
pub use to_bpf::fields as bpf_fields;

use crate::freq::{FreqMax, FreqTable};

/// The presets that ship with the scheduler: (name, TOML text).
pub const PRESETS: &[(&str, &str)] = &[
    ("performance", include_str!("presets/performance.toml")),
    ("balanced", include_str!("presets/balanced.toml")),
    ("powersave", include_str!("presets/powersave.toml")),
];

/// The preset that fills fields a policy file leaves out.
pub const DEFAULT_PRESET: &str = "balanced";

/// Where a policy came from: what SIGHUP reloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Preset(String),
    File(PathBuf),
}

/// A policy with its name and origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub source: Source,
    /// What the command line changed at start: SIGHUP makes it again.
    pub start_edits: StartEdits,
    pub policy: Policy,
}

/// The command line's changes to the starting policy (--set, --freq-max).
/// SIGHUP reloads the source and makes them again, as the command line
/// still stands (a service's `systemctl reload`); `ctl set` edits are
/// dropped, and `ctl switch` starts a policy without them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartEdits {
    pub assignments: Vec<String>,
    pub freq_max: Option<FreqMax>,
}

fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

fn preset_names() -> String {
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    names.join(", ")
}

impl Policy {
    /// Parses a policy file's text on top of the default preset.
    pub fn parse(text: &str) -> Result<Self> {
        let user: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| anyhow::anyhow!("{}", syntax_error(text, &e)))?;
        let base = toml::Table::try_from(Self::default_preset())?;
        Self::merged(base, &user)
    }

    /// This policy with `key=value` assignments applied, e.g.
    /// `slice.max_us=5000`. Values are TOML values; a bare word is a string.
    pub fn with_assignments<S: AsRef<str>>(&self, assignments: &[S]) -> Result<Self> {
        if assignments.is_empty() {
            bail!("nothing to set: give one or more key=value");
        }
        let mut user = toml::Table::new();
        for a in assignments {
            let a = a.as_ref();
            let (key, value) = a
                .split_once('=')
                .with_context(|| format!("`{a}` is not key=value"))?;
            let (key, value) = (key.trim(), value.trim());
            insert_dotted(&mut user, key, parse_value(value))?;
        }
        Self::merged(toml::Table::try_from(self)?, &user)
    }

    /// @user checked field by field and laid over @base.
    fn merged(mut base: toml::Table, user: &toml::Table) -> Result<Self> {
        overlay(&mut base, user, "").map_err(anyhow::Error::msg)?;
        let policy: Self = toml::Value::Table(base)
            .try_into()
            .context("policy does not match the schema")?;
        policy.check_relations()?;
        Ok(policy)
    }

    /// Constraints between fields, which the per-field ranges cannot say.
    fn check_relations(&self) -> Result<()> {
        if self.slice.min_us > self.slice.max_us {
            bail!(
                "slice.min_us = {} is out of range: it must not exceed slice.max_us = {}",
                self.slice.min_us,
                self.slice.max_us
            );
        }
        Ok(())
    }

    fn default_preset() -> Self {
        let text = preset_text(DEFAULT_PRESET).expect("the default preset ships");
        toml::from_str(text).expect("the default preset is complete and valid")
    }

    /// The policy as TOML, every field present.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a policy always serializes")
    }

    /// A line saying that a feature the policy asks for is off on this
    /// machine, if one is.
    pub fn note(&self, freq: &FreqTable) -> Option<&'static str> {
        let fmax = freq.resolve(self.freq.max).ok()?.mhz;
        self.cpufreq.floor_off(freq, fmax).map(|f| f.describe())
    }
}

impl Named {
    /// Resolves a `--policy` / `ctl switch` argument: a preset name, or a
    /// path to a TOML file (anything with a `/` or ending in `.toml`).
    pub fn load(arg: &str) -> Result<Self> {
        if arg.contains('/') || arg.ends_with(".toml") {
            return Self::from_file(Path::new(arg));
        }
        let text = preset_text(arg).with_context(|| {
            format!(
                "unknown policy `{arg}`: the presets are {}; a file needs a `/` or a .toml suffix",
                preset_names()
            )
        })?;
        Ok(Self {
            name: arg.to_string(),
            source: Source::Preset(arg.to_string()),
            start_edits: StartEdits::default(),
            policy: Policy::parse(text).expect("presets are valid"),
        })
    }

    /// Reads and checks a policy file; its name is the file's stem.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading policy file {}", path.display()))?;
        Self::from_text(path, &text)
    }

    /// A policy file's @text, read from @path by whoever holds it.
    pub fn from_text(path: &Path, text: &str) -> Result<Self> {
        let policy =
            Policy::parse(text).with_context(|| format!("policy file {}", path.display()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "policy".to_string());
        Ok(Self {
            name,
            source: Source::File(path.to_path_buf()),
            start_edits: StartEdits::default(),
            policy,
        })
    }

    /// This policy with `key=value` @assignments applied. It keeps its
    /// source and start edits, so SIGHUP reloads those and drops these
    /// edits; its name gets a `*` to show it differs from the source.
    pub fn edited<S: AsRef<str>>(&self, assignments: &[S]) -> Result<Self> {
        let policy = self.policy.with_assignments(assignments)?;
        Ok(Self {
            name: self.edited_name(),
            source: self.source.clone(),
            start_edits: self.start_edits.clone(),
            policy,
        })
    }

    /// This policy with the command line's @edits made (--set, then
    /// --freq-max) and kept for SIGHUP.
    pub fn with_start_edits(&self, edits: &StartEdits) -> Result<Self> {
        let mut next = if edits.assignments.is_empty() {
            self.clone()
        } else {
            self.edited(&edits.assignments).context("--set")?
        };
        if let Some(choice) = edits.freq_max {
            next = next.with_freq_max(choice);
        }
        next.start_edits = edits.clone();
        Ok(next)
    }

    /// This policy with freq.max set to @choice (`--freq-max`), marked as
    /// edited like `edited`. Whether the machine has it is checked when the
    /// policy is put in force.
    pub fn with_freq_max(&self, choice: FreqMax) -> Self {
        let mut next = self.clone();
        next.policy.freq.max = choice;
        next.name = self.edited_name();
        next
    }

    /// The name of an edited copy: this one with one `*`.
    fn edited_name(&self) -> String {
        format!("{}*", self.name.trim_end_matches('*'))
    }

    /// Loads the policy again from where it came from, with the start
    /// edits made again (SIGHUP).
    pub fn reload(&self) -> Result<Self> {
        let source = match &self.source {
            Source::Preset(name) => Self::load(name),
            Source::File(path) => Self::from_file(path),
        }?;
        source.with_start_edits(&self.start_edits)
    }
}

/// A TOML syntax error on one line: where it is and what is wrong.
fn syntax_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim_end().replace('\n', "; ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("not valid TOML at line {line}, column {column}: {msg}")
        }
        None => format!("not valid TOML: {msg}"),
    }
}

/// A `ctl set` value: TOML if it parses as one, else a bare string.
fn parse_value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// Sets `a.b.c` in @table, creating the sections on the way.
fn insert_dotted(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<()> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().filter(|k| !k.is_empty());
    let last = last.with_context(|| format!("`{key}` is not a field name"))?;
    let mut t = table;
    for p in parts {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .with_context(|| format!("`{key}`: `{p}` is set twice"))?;
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Lays @user over @base, checking each leaf against the schema. @prefix is
/// the dotted path of the tables being merged.
fn overlay(base: &mut toml::Table, user: &toml::Table, prefix: &str) -> Result<(), String> {
    for (k, v) in user {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let unknown = || {
            format!(
                "unknown key `{key}`: the policy fields are {}",
                schema::known_keys()
            )
        };
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(u)) => overlay(b, u, &key)?,
            (Some(toml::Value::Table(_)), other) => {
                return Err(format!(
                    "{key} = {other} has the wrong type: expected a [{key}] section"
                ));
            }
            (Some(slot), _) => {
                let kind = schema::field(&key).ok_or_else(unknown)?.kind;
                kind.check(&key, v)?;
                *slot = kind.normalize(v);
            }
            (None, _) => return Err(unknown()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
