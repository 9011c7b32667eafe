//! The idle trace that `idle record` writes and `idle replay` reads: JSON
//! lines, one record a line, as the `idle_trace` ring buffer gives them
//! (bpf/idle.bpf.c, struct cadence_idle_table_event and
//! cadence_idle_period):
//!
//! ```text
//! {"table":{"cpu":1,"nr_states":4,"hits":[...],"intercepts":[...],"total":..,
//!   "short_idles":..,"weight":[[...]...],"seed_weight":[[...]...],"periods":..}}
//! {"period":{"cpu":1,"start_ns":..,"duration_ns":..,"sleep_length_ns":..,
//!   "kernel_state":-1,"rand":..}}
//! ```
//!
//! A period also carries the tick and PM QoS inputs teo read, and, where
//! the kernel judged it, its verdict (`"kernel_miss":"above"` or
//! `"below"`).
//!
//! A CPU's `table` record is its table as it stood when it joined the
//! recording, before its first period; its periods follow in order. Empty
//! lines are skipped.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::learner_bpf::Period;
use super::period::{self, Miss, Scores, Tick};
use super::score_table;
use super::table::Table;
use crate::bpf_intf;

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    Table(Box<TableRecord>),
    Period(PeriodRecord),
}

/// A CPU's table when it joined the recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRecord {
    pub cpu: u32,
    #[serde(flatten)]
    pub table: Table,
}

/// One idle period of one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodRecord {
    pub cpu: u32,
    /// bpf_ktime_get_ns() at idle entry.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The sleep length: the governor's where one asked, else the time to
    /// the CPU's next timer event; KTIME_MAX (i64::MAX) if neither is known.
    pub sleep_length_ns: u64,
    /// The state the kernel entered (power:cpu_idle), -1 if not known.
    pub kernel_state: i32,
    /// The random number the random picks used.
    pub rand: u32,
    /// The tick at selection and how the period ended; recordings of
    /// builds before it have none (nothing known).
    #[serde(default)]
    pub tick: Tick,
    /// The CPU's PM QoS limit at selection, ns; none (KTIME_MAX) in
    /// recordings of builds before it.
    #[serde(default = "period::endless")]
    pub latency_req_ns: u64,
    /// The kernel's verdict on the period (power:cpu_idle_miss); left out
    /// when none, as in recordings of builds before it.
    #[serde(default, skip_serializing_if = "Miss::is_none")]
    pub kernel_miss: Miss,
}

impl PeriodRecord {
    pub fn period(&self) -> Period {
        Period {
            duration_ns: self.duration_ns,
            sleep_length_ns: self.sleep_length_ns,
            kernel_state: self.kernel_state,
            rand: self.rand,
            tick: self.tick,
            latency_req_ns: self.latency_req_ns,
            kernel_miss: self.kernel_miss,
        }
    }
}

/// Size of the ring buffer's records (bpf/intf_idle.h).
const PERIOD_SIZE: usize = std::mem::size_of::<bpf_intf::cadence_idle_period>();
const TABLE_SIZE: usize = std::mem::size_of::<bpf_intf::cadence_idle_table_event>();

/// The record of one ring buffer sample; None for one this build does not
/// know (a wrong kind or size).
pub fn from_ringbuf(raw: &[u8]) -> Option<Record> {
    let kind = u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
    if kind == bpf_intf::cadence_idle_event_kind_CADENCE_IDLE_EVENT_PERIOD
        && raw.len() == PERIOD_SIZE
    {
        let p: bpf_intf::cadence_idle_period = bpf_intf::from_bytes(raw)?;
        return Some(Record::Period(PeriodRecord {
            cpu: p.cpu,
            start_ns: p.start_ns,
            duration_ns: p.duration_ns,
            sleep_length_ns: p.sleep_length_ns,
            kernel_state: p.kernel_state,
            rand: p.rand,
            tick: Tick::from_bpf(&p.tick),
            latency_req_ns: p.latency_req_ns,
            kernel_miss: Miss::from_bpf(p.kernel_miss),
        }));
    }
    if kind == bpf_intf::cadence_idle_event_kind_CADENCE_IDLE_EVENT_TABLE && raw.len() == TABLE_SIZE
    {
        let t: bpf_intf::cadence_idle_table_event = bpf_intf::from_bytes(raw)?;
        return Some(Record::Table(Box::new(TableRecord {
            cpu: t.cpu,
            table: Table::from_bpf(&t.table),
        })));
    }
    None
}

/// @r as one line of a trace, without the newline.
pub fn to_line(r: &Record) -> String {
    serde_json::to_string(r).expect("a trace record is plain data")
}

/// @scores as JSON, per source and ideal the seed's columns as counts:
/// `{"teo": {"residency": {"periods", "correct", "undershoot": [US1..],
/// "overshoot": [OS1..]}, "exit": {...}}, "per_choice": ..., "seed": ...,
/// "kernel": ..., "kernel_misses": {"above": {"residency", "exit"},
/// "below": ...}}`, the last the kernel's periods by its verdict.
/// `idle record --format json` and `idle replay --format json` print this.
pub fn counts(scores: &Scores) -> serde_json::Value {
    let rows = score_table::rows(scores);
    let row = |r: &score_table::Row| {
        serde_json::json!({
            "periods": r.periods,
            "correct": r.correct,
            "undershoot": r.undershoot,
            "overshoot": r.overshoot,
        })
    };
    let sources = score_table::SOURCE_NAMES
        .iter()
        .enumerate()
        .map(|(src, name)| {
            let by = serde_json::json!({
                "residency": row(&rows[period::BY_RESIDENCY][src]),
                "exit": row(&rows[period::BY_EXIT][src]),
            });
            (name.to_string(), by)
        });
    let mut out: serde_json::Map<_, _> = sources.collect();
    let misses = score_table::miss_rows(scores);
    let verdicts = score_table::VERDICT_NAMES
        .iter()
        .enumerate()
        .map(|(v, name)| {
            let by = serde_json::json!({
                "residency": row(&misses[period::BY_RESIDENCY][v]),
                "exit": row(&misses[period::BY_EXIT][v]),
            });
            (name.to_string(), by)
        });
    out.insert(
        "kernel_misses".into(),
        serde_json::Value::Object(verdicts.collect()),
    );
    serde_json::Value::Object(out)
}

/// One CPU's part of a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTrace {
    /// Where the CPU stood when it joined; None: not recorded, start fresh.
    pub table: Option<Table>,
    pub periods: Vec<Period>,
}

/// A trace, per CPU, each CPU's periods in order.
pub type Trace = BTreeMap<u32, CpuTrace>;

/// Parses a trace; an error names the line (1-based) and what is wrong.
pub fn parse(text: &str) -> Result<Trace> {
    let mut trace = Trace::new();
    let mut last_start: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                // serde_json's position is within the line: the column.
                let at = format!(" at line {} column {}", e.line(), e.column());
                let what = e.to_string();
                let what = what.strip_suffix(&at).unwrap_or(&what);
                bail!(
                    "line {n}, column {}: not a trace record: {what}",
                    e.column()
                )
            }
        };
        match record {
            Record::Table(t) => {
                let cpu = trace.entry(t.cpu).or_default();
                if cpu.table.is_some() || !cpu.periods.is_empty() {
                    bail!(
                        "line {n}: a table for CPU {} after its table or periods (one recording a file)",
                        t.cpu
                    );
                }
                if t.table.nr_states as usize > super::table::MAX {
                    bail!(
                        "line {n}: CPU {}'s table is for {} states, at most {} fit",
                        t.cpu,
                        t.table.nr_states,
                        super::table::MAX
                    );
                }
                cpu.table = Some(t.table);
            }
            Record::Period(p) => {
                if last_start.get(&p.cpu).is_some_and(|&s| p.start_ns < s) {
                    bail!(
                        "line {n}: CPU {}'s period starts before its previous one",
                        p.cpu
                    );
                }
                last_start.insert(p.cpu, p.start_ns);
                trace.entry(p.cpu).or_default().periods.push(p.period());
            }
        }
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idle::reference;

    fn period(cpu: u32, start_ns: u64, duration_ns: u64) -> PeriodRecord {
        PeriodRecord {
            cpu,
            start_ns,
            duration_ns,
            sleep_length_ns: reference::ENDLESS,
            kernel_state: -1,
            rand: 7,
            tick: Tick::default(),
            latency_req_ns: reference::ENDLESS,
            kernel_miss: Miss::None,
        }
    }

    #[test]
    fn records_round_trip_through_their_lines() {
        let t = Record::Table(Box::new(TableRecord {
            cpu: 2,
            table: reference::fresh(4),
        }));
        let p = Record::Period(period(2, 100, 2_000_000));
        let text = format!("{}\n\n{}\n", to_line(&t), to_line(&p));
        assert!(
            to_line(&p).starts_with(r#"{"period":{"cpu":2,"start_ns":100,"#),
            "{text}"
        );
        assert!(
            to_line(&t).starts_with(r#"{"table":{"cpu":2,"nr_states":4,"#),
            "{text}"
        );
        let trace = parse(&text).unwrap();
        assert_eq!(trace.len(), 1);
        assert_eq!(trace[&2].table, Some(reference::fresh(4)));
        assert_eq!(trace[&2].periods, [period(2, 100, 2_000_000).period()]);
        // A verdict is written by name; none is left out, as before it.
        assert!(!to_line(&p).contains("kernel_miss"), "{text}");
        let judged = PeriodRecord {
            kernel_miss: Miss::Above,
            ..period(2, 100, 2_000_000)
        };
        let line = to_line(&Record::Period(judged));
        assert!(line.contains(r#""kernel_miss":"above""#), "{line}");
        assert_eq!(parse(&line).unwrap()[&2].periods, [judged.period()]);
    }

    #[test]
    fn periods_are_grouped_per_cpu_in_order() {
        let lines: Vec<String> = [
            period(0, 10, 1),
            period(1, 11, 2),
            period(0, 20, 3),
            period(1, 21, 4),
        ]
        .iter()
        .map(|p| to_line(&Record::Period(*p)))
        .collect();
        let trace = parse(&lines.join("\n")).unwrap();
        let durations = |cpu| {
            trace[&cpu]
                .periods
                .iter()
                .map(|p| p.duration_ns)
                .collect::<Vec<_>>()
        };
        assert_eq!(durations(0), [1, 3]);
        assert_eq!(durations(1), [2, 4]);
        assert_eq!(trace[&0].table, None);
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        let good = to_line(&Record::Period(period(0, 10, 1)));
        let table = to_line(&Record::Table(Box::new(TableRecord {
            cpu: 0,
            table: reference::fresh(2),
        })));
        let cases = [
            (
                format!("{good}\nnot json"),
                "line 2, column 1: not a trace record: expected value",
            ),
            (
                format!("{good}\n{}", good.replace("\"rand\"", "\"random\"")),
                "line 2, column",
            ),
            (
                format!("{good}\n\n{}", good.replace(",\"rand\":7", "")),
                "line 3, column 247: not a trace record: missing field `rand`",
            ),
            (
                format!("{good}\n{}", good.replace("\"cpu\":0", "\"cpu\":-1")),
                "line 2, column",
            ),
            (
                r#"{"idle":{}}"#.to_string(),
                "line 1, column 7: not a trace record: unknown variant `idle`",
            ),
            (
                format!("{good}\n{table}"),
                "line 2: a table for CPU 0 after its table or periods",
            ),
            (
                format!("{table}\n{table}"),
                "line 2: a table for CPU 0 after its table or periods",
            ),
            (
                table.replace("\"nr_states\":2", "\"nr_states\":11"),
                "line 1: CPU 0's table is for 11 states, at most 10 fit",
            ),
            (
                format!(
                    "{good}\n{}",
                    good.replace("\"start_ns\":10", "\"start_ns\":9")
                ),
                "line 2: CPU 0's period starts before its previous one",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn ringbuf_samples_become_records() {
        // SAFETY: bindgen structs of integers: all zeroes is a valid value.
        let mut p: bpf_intf::cadence_idle_period = unsafe { std::mem::zeroed() };
        p.kind = bpf_intf::cadence_idle_event_kind_CADENCE_IDLE_EVENT_PERIOD;
        p.cpu = 3;
        p.start_ns = 5;
        p.duration_ns = 6;
        p.sleep_length_ns = 7;
        p.kernel_state = -1;
        p.rand = 8;
        p.tick.tick_ns = 4_000_000;
        p.tick.next_event_ns = 9;
        p.tick.woke = 1;
        p.latency_req_ns = 20_000;
        p.kernel_miss = bpf_intf::cadence_idle_miss_CADENCE_IDLE_MISS_BELOW;
        let raw = bpf_intf::as_bytes(&p);
        assert_eq!(
            from_ringbuf(raw),
            Some(Record::Period(PeriodRecord {
                cpu: 3,
                start_ns: 5,
                duration_ns: 6,
                sleep_length_ns: 7,
                kernel_state: -1,
                rand: 8,
                tick: Tick {
                    tick_ns: 4_000_000,
                    next_event_ns: 9,
                    woke: true,
                    ..Tick::default()
                },
                latency_req_ns: 20_000,
                kernel_miss: Miss::Below,
            }))
        );
        // A short sample or an unknown kind is not taken for a record.
        assert_eq!(from_ringbuf(&raw[..raw.len() - 1]), None);
        p.kind = 9;
        assert_eq!(from_ringbuf(bpf_intf::as_bytes(&p)), None);
        // SAFETY: as above.
        let mut t: bpf_intf::cadence_idle_table_event = unsafe { std::mem::zeroed() };
        t.kind = bpf_intf::cadence_idle_event_kind_CADENCE_IDLE_EVENT_TABLE;
        t.cpu = 1;
        t.table = reference::fresh(3).to_bpf();
        assert_eq!(
            from_ringbuf(bpf_intf::as_bytes(&t)),
            Some(Record::Table(Box::new(TableRecord {
                cpu: 1,
                table: reference::fresh(3)
            })))
        );
    }
}
