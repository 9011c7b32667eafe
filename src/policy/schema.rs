//! Every policy field: its TOML key, its type, its allowed values and why.
//! Parsing checks user input against this list, so an error can always name
//! the field, the value and what is allowed.

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer in min..=max, in @unit.
    Int {
        min: i64,
        max: i64,
        unit: &'static str,
    },
    /// true or false.
    Bool,
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
    /// What it does, for `ctl get --describe` and the README.
    pub doc: &'static str,
}

/// Every field, in the order `ctl get` prints them.
pub const FIELDS: &[Field] = &[
    Field {
        key: "slice.max_us",
        // 100 us is about twenty context switches' worth of time: below it
        // switching dominates. 100 ms is CFS's longest latency period
        // (sysctl_sched_latency's ceiling); longer slices starve interactive
        // tasks for human-visible time.
        kind: Kind::Int {
            min: 100,
            max: 100_000,
            unit: "microseconds",
        },
        doc: "Longest slice, for a CPU nobody else waits for",
    },
    Field {
        key: "slice.min_us",
        // 50 us is the BPF side's per-task slice floor (CADENCE_SLICE_FLOOR_NS);
        // the ceiling is slice.max_us's.
        kind: Kind::Int {
            min: 50,
            max: 100_000,
            unit: "microseconds",
        },
        doc: "Shortest slice however many tasks wait (at most slice.max_us)",
    },
    Field {
        key: "slice.lag_us",
        // 0 gives sleepers no credit at all; 1 s is far beyond any useful
        // bound and keeps vtime arithmetic far from overflow.
        kind: Kind::Int {
            min: 0,
            max: 1_000_000,
            unit: "microseconds",
        },
        doc: "Most virtual time a waking task may start behind the frontier",
    },
    Field {
        key: "placement.idle_core_first",
        kind: Kind::Bool,
        doc: "Wake tasks on a fully idle SMT core before an idle sibling thread",
    },
    Field {
        key: "freq.max",
        // The seed's choices; which exist depends on the machine and is
        // checked when the policy is put in force (freq-max --list).
        kind: Kind::FreqMax,
        doc: "The frequency a ratio of 1024 stands for: auto (4c, else max), Nc turbo, base, max or MHz",
    },
];

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
            (Kind::Bool, toml::Value::Boolean(_)) => Ok(()),
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
            Kind::Bool => "true or false".to_string(),
            Kind::FreqMax => crate::freq::choice::SYNTAX.to_string(),
        }
    }
}
