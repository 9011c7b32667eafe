//! `scx_cadence idle record`: a client of the running scheduler through its
//! pinned maps (bpf/idle.bpf.c). It makes `idle_ctl.record_gen` odd; each
//! CPU, at its next idle entry, joins by writing its table to the
//! `idle_trace` ring buffer and zeroing its `record_scores`, then writes
//! every period it scores. After the time asked, record_gen goes even
//! again, and the live scores of the recorded periods are read back from
//! `idle_cpu`: `idle replay` of the trace must give these same counts.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use super::period::Scores;
use super::score_table;
use super::trace::{self, Record};
use crate::bpf_intf;
use crate::recording::{self, Recorder, Sink};

/// record_gen leads struct cadence_idle_ctl (recording::Recorder reads and
/// writes it there).
const _: () = assert!(std::mem::offset_of!(bpf_intf::cadence_idle_ctl, record_gen) == 0);

/// The per-CPU maps a recording reads besides the recorder's.
struct Maps {
    cpu: MapHandle,
    states: MapHandle,
}

impl Maps {
    /// Every possible CPU's idle_cpu value (None where unreadable).
    fn cpus(&self) -> Result<Vec<Option<bpf_intf::cadence_idle_cpu>>> {
        let raw = bpf_intf::percpu_values(&self.cpu, "idle_cpu")?;
        Ok(raw.iter().map(|r| bpf_intf::from_bytes(r)).collect())
    }

    /// The number of states CPU @cpu learns for.
    fn nr_states(&self, cpu: u32) -> usize {
        self.states
            .lookup(&cpu.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .and_then(|r| bpf_intf::from_bytes::<bpf_intf::cadence_idle_states>(&r))
            .map_or(0, |s| s.nr as usize)
    }
}

/// What a recording gave.
pub struct Recorded {
    /// How long it recorded (less than asked after SIGINT).
    pub seconds: f64,
    /// CPUs that joined the recording.
    pub cpus: Vec<u32>,
    /// Records written to the file.
    pub tables: u64,
    pub periods: u64,
    /// Records the ring buffer had no room for (the trace is incomplete).
    pub drops: u64,
    /// The live scores of the recorded periods, summed over the CPUs.
    pub scores: Scores,
    /// The most states a recorded CPU has.
    pub nr_states: usize,
}

/// Records for @secs (or until @stop) into @file through the maps pinned in
/// @pin_dir.
pub fn record(pin_dir: &Path, secs: f64, file: &Path, stop: &Arc<AtomicBool>) -> Result<Recorded> {
    let length = recording::length(secs)?;
    let recorder = Recorder::open(pin_dir, "idle", "idle_ctl", "idle_trace")?;
    let maps = Maps {
        cpu: recording::open_pinned(pin_dir, "idle_cpu")?,
        states: recording::open_pinned(pin_dir, "idle_states")?,
    };
    let make_sink = || {
        let out = File::create(file).with_context(|| format!("cannot write {}", file.display()))?;
        Ok(Writer {
            file: BufWriter::new(out),
            tables: 0,
            periods: 0,
            cpus: BTreeSet::new(),
            error: None,
        })
    };
    let mut drops_before = 0;
    let done = recorder.run(pin_dir, length, stop, make_sink, || {
        drops_before = drops(&maps.cpus()?);
        Ok(())
    })?;
    let (mut w, seconds) = (done.sink, done.seconds);
    let cpus = maps.cpus()?;
    if let Some(e) = w.error.take() {
        return Err(e).with_context(|| format!("writing {}", file.display()));
    }
    w.file
        .flush()
        .with_context(|| format!("writing {}", file.display()))?;
    let mut rec = Recorded {
        seconds,
        cpus: w.cpus.iter().copied().collect(),
        tables: w.tables,
        periods: w.periods,
        drops: drops(&cpus).saturating_sub(drops_before),
        scores: Scores::default(),
        nr_states: 0,
    };
    // The CPUs that joined are those in the trace: one that did not holds
    // an earlier recording's scores. (Its record_gen does not tell: a CPU
    // that joined may have followed the even generation since.)
    for &cpu in &rec.cpus {
        let Some(c) = cpus.get(cpu as usize).copied().flatten() else {
            bail!("idle_cpu has no value for CPU {cpu}");
        };
        rec.nr_states = rec.nr_states.max(maps.nr_states(cpu));
        let scores = Scores::from_bpf(&c.record_scores);
        for (sum, n) in rec.scores.flat_mut().zip(scores.flat()) {
            *sum += n;
        }
    }
    Ok(rec)
}

/// Total record_drops of @cpus.
fn drops(cpus: &[Option<bpf_intf::cadence_idle_cpu>]) -> u64 {
    cpus.iter().flatten().map(|c| c.record_drops).sum()
}

/// Where the ring buffer's records go.
struct Writer {
    file: BufWriter<File>,
    tables: u64,
    periods: u64,
    /// The CPUs with a record.
    cpus: BTreeSet<u32>,
    /// The first write error; later records are not written.
    error: Option<std::io::Error>,
}

impl Sink for Writer {
    fn record(&mut self, raw: &[u8]) {
        let Some(r) = trace::from_ringbuf(raw) else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        match &r {
            Record::Table(t) => {
                self.tables += 1;
                self.cpus.insert(t.cpu);
            }
            Record::Period(p) => {
                self.periods += 1;
                self.cpus.insert(p.cpu);
            }
        }
        if let Err(e) = writeln!(self.file, "{}", trace::to_line(&r)) {
            self.error = Some(e);
        }
    }
}

/// `idle record`'s output: the table of the live scores, or JSON.
pub fn print(rec: &Recorded, file: &Path, json: bool) {
    if json {
        let v = serde_json::json!({
            "file": file,
            "seconds": rec.seconds,
            "cpus": rec.cpus,
            "tables": rec.tables,
            "periods": rec.periods,
            "drops": rec.drops,
            "scores": trace::counts(&rec.scores),
        });
        println!("{v}");
    } else {
        println!(
            "recorded {} idle periods of {} CPUs in {:.1} s to {}; the scheduler scored them:",
            rec.periods,
            rec.cpus.len(),
            rec.seconds,
            file.display()
        );
        print!("{}", score_table::render(&rec.scores, rec.nr_states, &[]));
    }
    if rec.drops > 0 {
        eprintln!(
            "scx_cadence: warning: {} records did not fit in the ring buffer: the trace is not complete, and its replay will not match",
            rec.drops
        );
    }
}
