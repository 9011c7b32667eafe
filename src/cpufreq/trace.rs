//! The cpufreq trace that `cpufreq record` writes and `cpufreq replay`
//! reads: JSON lines, one record a line (docs/design.md, "Recording and
//! replaying"):
//!
//! ```text
//! {"header":{"freq":{"base_mhz":2000,...}}}
//! {"join":{"cpu":1,"tick_ns":4000000,"knobs":{"mode":0,"headroom_pct":125,...},
//!   "state":{"target":1024,"util":0,"last_at":0,...}}}
//! {"step":{"cpu":1,"now_ns":..,"util":310,"idle":false,"verdict":"hysteresis",
//!   "target":512,"freq_scale":1024}}
//! {"live":{"cpu":1,"drops":0,"busy":[..6],"idle":[..6]}}
//! ```
//!
//! The header holds the recording machine's frequencies, which a policy
//! given to `replay` is resolved against. A CPU's `join` is its state as
//! it stood before its first step in the recording, and again before its
//! first step under changed knobs (a policy swap); its steps follow in
//! order. `live` lines, last, are what the scheduler counted of the
//! recorded steps, by verdict: a replay under the recorded knobs must give
//! them. Empty lines are skipped.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::bpf_intf;
use crate::freq::FreqTable;

/// How many verdicts there are (enum cadence_cpufreq_verdict).
pub const NR_VERDICTS: usize =
    bpf_intf::cadence_cpufreq_verdict_CADENCE_CPUFREQ_NR_VERDICTS as usize;
/// enum cadence_cpufreq_verdict, by name.
pub const VERDICTS: [&str; NR_VERDICTS] =
    ["issued", "same", "deadband", "hysteresis", "hold", "rate"];
/// Step kinds, the first index of the counts (bpf/intf_cpufreq.h).
pub const BUSY: usize = bpf_intf::cadence_cpufreq_record_consts_CADENCE_CPUFREQ_STEP_BUSY as usize;
pub const IDLE: usize = bpf_intf::cadence_cpufreq_record_consts_CADENCE_CPUFREQ_STEP_IDLE as usize;
/// Verdicts a replay counts as the deadband's suppressions (stages 1-4).
pub const SUPPRESSED: std::ops::RangeInclusive<usize> = 2..=5;

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    Header(Header),
    Join(Join),
    Step(StepRecord),
    Live(Live),
}

/// The recording machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub freq: FreqTable,
}

/// The policy's fields the cpufreq code reads (struct cadence_cpufreq_knobs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    /// enum cadence_cpufreq_mode: 0 util, 1 performance, 2 powersave.
    pub mode: u32,
    pub headroom_pct: u32,
    pub scale: u32,
    pub floor_util: u32,
    pub band: u32,
    pub iowait_boost: u32,
    pub interval_ns: u64,
    pub down_hold_ns: u64,
}

impl Knobs {
    pub fn from_bpf(k: &bpf_intf::cadence_cpufreq_knobs) -> Knobs {
        Knobs {
            mode: k.mode,
            headroom_pct: k.headroom_pct,
            scale: k.scale,
            floor_util: k.floor_util,
            band: k.band,
            iowait_boost: k.iowait_boost,
            interval_ns: k.interval_ns,
            down_hold_ns: k.down_hold_ns,
        }
    }

    /// The knobs of a policy as the loader built it.
    pub fn of_policy(p: &bpf_intf::cadence_policy) -> Knobs {
        Knobs {
            mode: p.cpufreq_mode,
            headroom_pct: p.cpufreq_headroom_pct,
            scale: p.cpufreq_scale,
            floor_util: p.cpufreq_floor_util,
            band: p.cpufreq_band,
            iowait_boost: p.cpufreq_iowait_boost,
            interval_ns: p.cpufreq_interval_ns,
            down_hold_ns: p.cpufreq_down_hold_ns,
        }
    }

    /// A policy with these knobs: all the cpufreq code reads of it.
    pub fn to_policy(self) -> bpf_intf::cadence_policy {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut p: bpf_intf::cadence_policy = unsafe { std::mem::zeroed() };
        p.cpufreq_mode = self.mode;
        p.cpufreq_headroom_pct = self.headroom_pct;
        p.cpufreq_scale = self.scale;
        p.cpufreq_floor_util = self.floor_util;
        p.cpufreq_band = self.band;
        p.cpufreq_iowait_boost = self.iowait_boost;
        p.cpufreq_interval_ns = self.interval_ns;
        p.cpufreq_down_hold_ns = self.down_hold_ns;
        p
    }
}

/// A CPU's deadband state (struct cadence_cpu_cpufreq without its counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub target: u32,
    pub util: u32,
    pub last_at: u64,
    pub down_since: u64,
    pub boost_at: u64,
    pub boost: u32,
    pub boost_pending: u32,
    /// 0: the CPU has not yet taken the kernel's starting target (1024).
    pub init: u32,
}

impl State {
    pub fn from_bpf(s: &bpf_intf::cadence_cpu_cpufreq) -> State {
        State {
            target: s.target,
            util: s.util,
            last_at: s.last_at,
            down_since: s.down_since,
            boost_at: s.boost_at,
            boost: s.boost,
            boost_pending: s.boost_pending,
            init: s.init,
        }
    }

    /// The BPF state, its counters zero.
    pub fn to_bpf(self) -> bpf_intf::cadence_cpu_cpufreq {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut s: bpf_intf::cadence_cpu_cpufreq = unsafe { std::mem::zeroed() };
        s.target = self.target;
        s.util = self.util;
        s.last_at = self.last_at;
        s.down_since = self.down_since;
        s.boost_at = self.boost_at;
        s.boost = self.boost;
        s.boost_pending = self.boost_pending;
        s.init = self.init;
        s
    }
}

/// A CPU joins, or joins again under changed knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
    pub cpu: u32,
    /// TICK_NSEC of the recording kernel.
    pub tick_ns: u64,
    pub knobs: Knobs,
    pub state: State,
}

/// One step of one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    pub cpu: u32,
    /// scx_bpf_now() of the step.
    pub now_ns: u64,
    /// The util the evaluation saw, before any boost (0 going idle).
    pub util: u32,
    /// An iowait wake-up came (the legacy boost's input).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub iowait: bool,
    /// The CPU went idle; else an evaluation.
    pub idle: bool,
    /// What the scheduler decided: a name of VERDICTS.
    pub verdict: String,
    /// The target in force after the step.
    pub target: u32,
    /// The CPU's frequency ratio, 1024 = freq_max (0: not read, idle);
    /// for the reader (bench/plot.py draws it), no input of the decision.
    pub freq_scale: u32,
}

/// What the scheduler counted of one CPU's recorded steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Live {
    pub cpu: u32,
    /// Records the ring buffer had no room for.
    pub drops: u64,
    /// Evaluations, by verdict (VERDICTS' order).
    pub busy: [u64; NR_VERDICTS],
    /// Idle steps, by verdict.
    pub idle: [u64; NR_VERDICTS],
}

/// Steps by kind (BUSY, IDLE) and verdict.
pub type Counts = [[u64; NR_VERDICTS]; 2];

/// The live counts of @live summed, by kind and verdict.
pub fn live_counts(live: &[Live]) -> Counts {
    let mut n = Counts::default();
    for l in live {
        for (sums, counts) in n.iter_mut().zip([&l.busy, &l.idle]) {
            for (sum, c) in sums.iter_mut().zip(counts) {
                *sum += c;
            }
        }
    }
    n
}

/// Size of the ring buffer's records (bpf/intf_cpufreq.h).
const JOIN_SIZE: usize = std::mem::size_of::<bpf_intf::cadence_cpufreq_join>();
const STEP_SIZE: usize = std::mem::size_of::<bpf_intf::cadence_cpufreq_step_event>();

/// The record of one ring buffer sample; None for one this build does not
/// know (a wrong kind or size).
pub fn from_ringbuf(raw: &[u8]) -> Option<Record> {
    let kind = u32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
    if kind == bpf_intf::cadence_cpufreq_record_consts_CADENCE_CPUFREQ_EVENT_STEP
        && raw.len() == STEP_SIZE
    {
        let e: bpf_intf::cadence_cpufreq_step_event = bpf_intf::from_bytes(raw)?;
        return Some(Record::Step(StepRecord {
            cpu: e.cpu,
            now_ns: e.now,
            util: e.util,
            iowait: e.iowait != 0,
            idle: e.idle != 0,
            verdict: VERDICTS.get(e.verdict as usize)?.to_string(),
            target: e.target,
            freq_scale: e.freq_scale,
        }));
    }
    if kind == bpf_intf::cadence_cpufreq_record_consts_CADENCE_CPUFREQ_EVENT_JOIN
        && raw.len() == JOIN_SIZE
    {
        let j: bpf_intf::cadence_cpufreq_join = bpf_intf::from_bytes(raw)?;
        return Some(Record::Join(Join {
            cpu: j.cpu,
            tick_ns: j.tick_ns,
            knobs: Knobs::from_bpf(&j.knobs),
            state: State::from_bpf(&j.state),
        }));
    }
    None
}

/// @r as one line of a trace, without the newline.
pub fn to_line(r: &Record) -> String {
    serde_json::to_string(r).expect("a trace record is plain data")
}

/// One CPU's steps under one join: what a replay runs at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub join: Join,
    pub steps: Vec<StepRecord>,
}

/// A trace read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub header: Option<Header>,
    /// In the order of the joins.
    pub segments: Vec<Segment>,
    /// By CPU, as the recording ended.
    pub live: Vec<Live>,
}

/// Reads a trace; an error names the line and what is wrong with it.
pub fn parse(text: &str) -> Result<Trace> {
    let mut t = Trace::default();
    // The segment each CPU's steps go to: an index into t.segments.
    let mut open: std::collections::BTreeMap<u32, usize> = Default::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("line {}", i + 1);
        let r: Record = serde_json::from_str(line).with_context(at)?;
        match r {
            Record::Header(h) => {
                if t.header.is_some() || !t.segments.is_empty() {
                    bail!("{}: a header must come first, and once", at());
                }
                t.header = Some(h);
            }
            Record::Join(j) => {
                open.insert(j.cpu, t.segments.len());
                t.segments.push(Segment {
                    join: j,
                    steps: Vec::new(),
                });
            }
            Record::Step(s) => {
                if !VERDICTS.contains(&s.verdict.as_str()) {
                    bail!(
                        "{}: unknown verdict {:?} (one of {})",
                        at(),
                        s.verdict,
                        VERDICTS.join(", ")
                    );
                }
                let Some(&seg) = open.get(&s.cpu) else {
                    bail!(
                        "{}: a step of CPU {} before its join: the replay would not know where it stood",
                        at(),
                        s.cpu
                    );
                };
                t.segments[seg].steps.push(s);
            }
            Record::Live(l) => t.live.push(l),
        }
    }
    if t.segments.is_empty() {
        bail!("no CPU joined: the trace has no steps to replay");
    }
    Ok(t)
}

/// Reads the trace in @path.
pub fn read(path: &std::path::Path) -> Result<Trace> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| format!("{} is not a cpufreq trace", path.display()))
}
