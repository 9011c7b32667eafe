//! What a policy field allows and how a value is checked against it. The
//! fields themselves are declared in fields.rs; parsing checks user input
//! against them, so an error can always name the field, the value and what
//! is allowed.

use super::fields::FIELDS;

/// What a field holds.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// An integer in min..=max, in @unit.
    Int {
        min: i64,
        max: i64,
        unit: &'static str,
    },
    /// 0 (off), or an integer in min..=max, in @unit.
    OffOrInt {
        min: i64,
        max: i64,
        unit: &'static str,
    },
    /// true or false.
    Bool,
    /// One of a fixed list of words (a choices.rs type's).
    Choice { values: fn() -> Vec<&'static str> },
    /// A freq_max choice: a string (auto, Nc, base, max, MHz) or MHz as an
    /// integer; stored as the string.
    FreqMax,
}

/// One tunable.
#[derive(Debug)]
pub struct Field {
    /// Dotted TOML key: section.name.
    pub key: &'static str,
    pub kind: Kind,
    /// What it does, for `scx_cadence policies` and docs/policy.md.
    pub doc: &'static str,
}

/// The field with dotted key @key.
pub fn field(key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.key == key)
}

/// "a, b or c": the known keys, for error messages.
pub fn known_keys() -> String {
    let keys: Vec<&str> = FIELDS.iter().map(|f| f.key).collect();
    keys.join(", ")
}

impl Kind {
    /// Checks @value against the kind; the error names @key, the value and
    /// what is allowed.
    pub fn check(&self, key: &str, value: &toml::Value) -> Result<(), String> {
        match (self, value) {
            (Kind::Int { min, max, unit }, toml::Value::Integer(v)) => {
                if (*min..=*max).contains(v) {
                    Ok(())
                } else {
                    Err(format!(
                        "{key} = {v} is out of range: allowed {min}..={max} ({unit})"
                    ))
                }
            }
            (Kind::OffOrInt { min, max, unit }, toml::Value::Integer(v)) => {
                if *v == 0 || (*min..=*max).contains(v) {
                    Ok(())
                } else {
                    Err(format!(
                        "{key} = {v} is out of range: allowed 0 (off) or {min}..={max} ({unit})"
                    ))
                }
            }
            (Kind::Bool, toml::Value::Boolean(_)) => Ok(()),
            (Kind::Choice { values }, toml::Value::String(s)) => {
                let values = values();
                if values.contains(&s.as_str()) {
                    Ok(())
                } else {
                    Err(format!(
                        "{key} = \"{s}\" is not allowed: expected one of {}",
                        values.join(", ")
                    ))
                }
            }
            (Kind::FreqMax, toml::Value::String(s)) => s
                .parse::<crate::freq::FreqMax>()
                .map(|_| ())
                .map_err(|e| format!("{key}: {e}")),
            (Kind::FreqMax, toml::Value::Integer(v)) => {
                let range = crate::freq::MHZ_RANGE;
                match u32::try_from(*v) {
                    Ok(m) if range.contains(&m) => Ok(()),
                    _ => Err(format!(
                        "{key} = {v} is out of range: allowed {}..={} (MHz), or auto, Nc, base, max",
                        range.start(),
                        range.end()
                    )),
                }
            }
            (kind, other) => Err(format!(
                "{key} = {other} has the wrong type: expected {}, found {}",
                kind.describe(),
                other.type_str()
            )),
        }
    }

    /// @value as the policy stores it (a checked value).
    pub fn normalize(&self, value: &toml::Value) -> toml::Value {
        match (self, value) {
            (Kind::FreqMax, toml::Value::Integer(v)) => toml::Value::String(v.to_string()),
            (Kind::FreqMax, toml::Value::String(s)) => {
                toml::Value::String(s.trim().to_ascii_lowercase())
            }
            _ => value.clone(),
        }
    }

    /// What the field allows, for `scx_cadence policies`.
    pub fn allowed(&self) -> String {
        self.describe()
    }

    fn describe(&self) -> String {
        match self {
            Kind::Int { min, max, unit } => format!("an integer in {min}..={max} ({unit})"),
            Kind::OffOrInt { min, max, unit } => {
                format!("0 (off) or an integer in {min}..={max} ({unit})")
            }
            Kind::Bool => "true or false".to_string(),
            Kind::Choice { values } => format!("one of {}", values().join(", ")),
            Kind::FreqMax => crate::freq::choice::SYNTAX.to_string(),
        }
    }
}
