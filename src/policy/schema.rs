//! Every policy field: its TOML key, its type, its allowed values and why.
//! Parsing checks user input against this list, so an error can always name
//! the field, the value and what is allowed.

use super::choices::{
    Choice, CpufreqMode, IdlePick, IdlePlace, IdlePredictor, IdleQos, PlaceOrder,
};

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
        doc: "Most lag a sleeper keeps when it wakes (a task pinned to one CPU is credited its sleep up to twice this)",
    },
    Field {
        key: "latency.wakeup_preempt",
        kind: Kind::Bool,
        doc: "A waking task that finds no idle CPU preempts a running task whose virtual deadline is later, or that has run past its share or used up its slice; one within its share and its slice first runs slice.min_us of its request (EEVDF's wake-up preemption with run-to-parity)",
    },
    Field {
        key: "latency.sync_wakeup",
        kind: Kind::Bool,
        doc: "A sync wake-up (the waker is about to sleep: pipes, sockets) goes to the waker's CPU when it shares the wakee's LLC and nothing else waits there; one that finds no CPU at all preempts nobody",
    },
    Field {
        key: "latency.slice_timer_us",
        // 0 switches the timer off. Otherwise at least slice.min_us's floor
        // (50): every slice is at least that long, so a lower value times
        // nothing that 50 does not. The ceiling is slice.max_us's: a floor
        // above every slice would time nothing the tick does not.
        kind: Kind::OffOrInt {
            min: 50,
            max: 100_000,
            unit: "microseconds",
        },
        doc: "While others wait for its CPU, a running task's slice is ended by a timer when it is used up, but no sooner than this after the task began, instead of at the next tick (the fair class's HRTICK); 0: only the tick ends slices",
    },
    Field {
        key: "placement.idle_core_first",
        kind: Kind::Bool,
        doc: "Wake tasks on a fully idle SMT core before an idle sibling thread",
    },
    Field {
        key: "placement.order",
        kind: Kind::Choice {
            values: PlaceOrder::words,
        },
        doc: "small_core: spread over small cores first (POWER9 halves, E-core clusters); core: the plain prev/idle-core order, for comparison",
    },
    Field {
        key: "placement.hold",
        kind: Kind::Bool,
        doc: "Running tasks hold their CPU while short tasks come and go: an idle CPU takes a waiting task before a busy one gives up its own; a running task put back (preempted by a higher class or a waking task, or displaced by a short one) waits for its CPU, and only one displaced by a lasting task of like util is queued for any CPU; a running task moves to another small or big core only when that core has move_margin more free threads (idle, or running a short task: one awake less than 256 ms or lighter than half its own) at 8 slice ends or re-enqueues in a row (the margin with placement.order = small_core only)",
    },
    Field {
        key: "placement.move_margin",
        // 2 is the least imbalance a move evens out instead of reversing
        // (bpf/place_search.bpf.h, pl_move_gain()); 64 is far above the
        // threads of any core today (POWER9/10 big cores have 8), and a
        // margin above a core's threads means running tasks never move.
        kind: Kind::Int {
            min: 2,
            max: 64,
            unit: "threads",
        },
        doc: "With hold: how many more free threads (idle, or running a short task: awake less than 256 ms or lighter than half its own) another small or big core must have for a running task to move there",
    },
    Field {
        key: "freq.max",
        // The seed's choices; which exist depends on the machine and is
        // checked when the policy is put in force (freq-max --list).
        kind: Kind::FreqMax,
        doc: "The frequency a ratio of 1024 stands for: auto (4c, else max), Nc turbo, base, max or MHz",
    },
    Field {
        key: "cpufreq.mode",
        kind: Kind::Choice {
            values: CpufreqMode::words,
        },
        doc: "How each CPU's cpufreq target is chosen: util (from invariant util), performance (always 1024), powersave (always the minimum)",
    },
    Field {
        key: "cpufreq.headroom_pct",
        // 100: no headroom at all (the target is what util needs). 400:
        // a CPU at a quarter of freq_max already asks for all of it; more
        // is the performance mode.
        kind: Kind::Int {
            min: 100,
            max: 400,
            unit: "percent of util, schedutil's 25% included",
        },
        doc: "Frequency offered per unit of util, schedutil's own margin included: 125 is schedutil's 1.25",
    },
    Field {
        key: "cpufreq.floor",
        kind: Kind::Bool,
        doc: "pcc-style deadband: while util < fmin/freq_max, ask for the minimum (seed 004)",
    },
    Field {
        key: "cpufreq.min_mhz",
        // 0 defers to cpufreq; otherwise the same bounds as an explicit
        // freq_max (freq::MHZ_RANGE's ceiling).
        kind: Kind::Int {
            min: 0,
            max: 10_000,
            unit: "MHz, 0 = cpuinfo_min_freq",
        },
        doc: "fmin for the floor; 0 reads cpuinfo_min_freq (else the MSRs' efficiency frequency)",
    },
    Field {
        key: "cpufreq.band",
        // 0: every change is asked for. 256: a quarter of the range, past
        // which the hysteresis would hide real load changes.
        kind: Kind::Int {
            min: 0,
            max: 256,
            unit: "cpuperf units of 1024",
        },
        doc: "Hysteresis: the least change of target worth a request (the ends 0 and 1024 always are)",
    },
    Field {
        key: "cpufreq.interval_us",
        // 0: no limit. 1 s: pcc's firmware allowed up to 1 s between
        // commands (seed 004's "max time between commands").
        kind: Kind::Int {
            min: 0,
            max: 1_000_000,
            unit: "microseconds",
        },
        doc: "Least time between two requests on one CPU",
    },
    Field {
        key: "cpufreq.down_hold_us",
        // 0: drop at once. 1 s: about 30 PELT half-lives; longer holds
        // keep a CPU fast long after its load is gone.
        kind: Kind::Int {
            min: 0,
            max: 1_000_000,
            unit: "microseconds",
        },
        doc: "How long a lower target must be asked for before it is requested (raises go at once)",
    },
    Field {
        key: "cpufreq.legacy_iowait_boost",
        kind: Kind::Bool,
        doc: "Emulate schedutil's iowait boost, for comparisons only (off: iowait is never an input)",
    },
    Field {
        key: "idle.predictor",
        kind: Kind::Choice {
            values: IdlePredictor::words,
        },
        doc: "The idle-state prediction that acts: off (no learning), teo (mainline teo's bins), weighted (seed 003's matrix on teo's choice)",
    },
    Field {
        key: "idle.pick",
        kind: Kind::Choice {
            values: IdlePick::words,
        },
        doc: "How the weighted predictor reads its row: random (weighted, as seed 003) or heaviest (deterministic)",
    },
    Field {
        key: "idle.learning_rate",
        // Seed 003's LEARNING_RATE: a weight grows by rate% of itself while
        // below (100 - rate)%, shrinks while above rate%; at 50 the two
        // bounds meet and nothing can move.
        kind: Kind::Int {
            min: 1,
            max: 49,
            unit: "percent of a weight",
        },
        doc: "Seed 003's learning rate: how far one idle period moves its row",
    },
    Field {
        key: "idle.aging_interval",
        // 0: no aging, the seed as posted. 65535: the u16 row counter's
        // ceiling (bpf/intf_idle.h row_updates).
        kind: Kind::Int {
            min: 0,
            max: 65_535,
            unit: "updates of a row, 0 = never",
        },
        doc: "Every so many updates of a weight row, 1/8 of its heaviest weight spreads over its other states, so that a changed pattern is learned again",
    },
    Field {
        key: "idle.place",
        kind: Kind::Choice {
            values: IdlePlace::words,
        },
        doc: "shallow: among idle CPUs equally good for the placement search, wake the one in the shallowest state (observed, else predicted); off: ignore idle states. Acts with placement.order = small_core (docs/idle.md)",
    },
    Field {
        key: "idle.qos",
        kind: Kind::Choice {
            values: IdleQos::words,
        },
        doc: "learned: write per-CPU PM QoS resume-latency limits (at most every 250 ms) that keep the kernel's governor out of states in which most recent idle periods would have been cut short (docs/idle.md); the originals are restored on every exit. Needs idle.predictor on; off: leave them alone",
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
