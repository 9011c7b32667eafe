//! `scx_cadence cpufreq record`: a client of the running scheduler through
//! its pinned maps (bpf/cpufreq.bpf.c). It makes `cpufreq_ctl.record_gen`
//! odd; each CPU, at its next step (an evaluation in running() or tick(),
//! or going idle), joins by writing its state to the `cpufreq_trace` ring
//! buffer and zeroing its counts in `cpufreq_record`, then writes every
//! step with the verdict it made. After the time asked, record_gen goes even
//! again, and the live counts of the recorded steps are read back and
//! written last: `cpufreq replay` of the trace must give these same counts.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use libbpf_rs::MapHandle;

use super::trace::{self, BUSY, Header, IDLE, Live, Record, VERDICTS, live_counts};
use crate::bpf_intf;
use crate::freq::FreqTable;
use crate::recording::{self, Recorder, Sink};

/// record_gen leads struct cadence_cpufreq_ctl (recording::Recorder reads
/// and writes it there).
const _: () = assert!(std::mem::offset_of!(bpf_intf::cadence_cpufreq_ctl, record_gen) == 0);

/// Every possible CPU's cpufreq_record value (None where unreadable).
fn cpus(record: &MapHandle) -> Result<Vec<Option<bpf_intf::cadence_cpufreq_record>>> {
    let raw = bpf_intf::percpu_values(record, "cpufreq_record")?;
    Ok(raw.iter().map(|r| bpf_intf::from_bytes(r)).collect())
}

/// What a recording gave.
pub struct Recorded {
    /// How long it recorded (less than asked after SIGINT).
    pub seconds: f64,
    /// The live counts of each CPU that joined.
    pub live: Vec<Live>,
    /// Records written to the file.
    pub joins: u64,
    pub steps: u64,
}

impl Recorded {
    pub fn drops(&self) -> u64 {
        self.live.iter().map(|l| l.drops).sum()
    }
}

/// Records for @secs (or until @stop) into @file through the maps pinned in
/// @pin_dir.
pub fn record(pin_dir: &Path, secs: f64, file: &Path, stop: &Arc<AtomicBool>) -> Result<Recorded> {
    let length = recording::length(secs)?;
    let recorder = Recorder::open(pin_dir, "cpufreq", "cpufreq_ctl", "cpufreq_trace")?;
    let record = recording::open_pinned(pin_dir, "cpufreq_record")?;
    let make_sink = || {
        let out = File::create(file).with_context(|| format!("cannot write {}", file.display()))?;
        let mut w = Writer {
            file: BufWriter::new(out),
            joins: 0,
            steps: 0,
            error: None,
        };
        // The frequencies a replay resolves other policies against.
        w.line(&Record::Header(Header {
            freq: FreqTable::probe(),
        }));
        Ok(w)
    };
    let done = recorder.run(pin_dir, length, stop, make_sink, || Ok(()))?;
    let (mut w, generation) = (done.sink, done.generation);

    // The CPUs that took part hold this generation (cpufreq_record is
    // written only while a recording runs), even one whose every record
    // was dropped.
    let mut live = Vec::new();
    for (cpu, r) in cpus(&record)?.into_iter().enumerate() {
        let Some(r) = r.filter(|r| r.record_gen == generation) else {
            continue;
        };
        let l = Live {
            cpu: cpu as u32,
            drops: r.drops,
            busy: r.n[BUSY],
            idle: r.n[IDLE],
        };
        w.line(&Record::Live(l));
        live.push(l);
    }
    if let Some(e) = w.error.take() {
        return Err(e).with_context(|| format!("writing {}", file.display()));
    }
    w.file
        .flush()
        .with_context(|| format!("writing {}", file.display()))?;
    Ok(Recorded {
        seconds: done.seconds,
        live,
        joins: w.joins,
        steps: w.steps,
    })
}

/// Where the ring buffer's records go.
struct Writer {
    file: BufWriter<File>,
    joins: u64,
    steps: u64,
    /// The first write error; later records are not written.
    error: Option<std::io::Error>,
}

impl Sink for Writer {
    fn record(&mut self, raw: &[u8]) {
        let Some(r) = trace::from_ringbuf(raw) else {
            return;
        };
        match &r {
            Record::Join(_) => self.joins += 1,
            Record::Step(_) => self.steps += 1,
            Record::Header(_) | Record::Live(_) => {}
        }
        self.line(&r);
    }
}

impl Writer {
    fn line(&mut self, r: &Record) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = writeln!(self.file, "{}", trace::to_line(r)) {
            self.error = Some(e);
        }
    }
}

/// `cpufreq record`'s output: the live counts, or JSON.
pub fn print(rec: &Recorded, file: &Path, json: bool) {
    let n = live_counts(&rec.live);
    if json {
        let by = |k: usize| -> serde_json::Map<String, serde_json::Value> {
            VERDICTS
                .iter()
                .zip(n[k])
                .map(|(name, v)| (name.to_string(), v.into()))
                .collect()
        };
        let v = serde_json::json!({
            "file": file,
            "seconds": rec.seconds,
            "cpus": rec.live.iter().map(|l| l.cpu).collect::<Vec<_>>(),
            "joins": rec.joins,
            "steps": rec.steps,
            "drops": rec.drops(),
            "busy": by(BUSY),
            "idle": by(IDLE),
        });
        println!("{v}");
    } else {
        println!(
            "recorded {} cpufreq steps of {} CPUs in {:.1} s to {}; the scheduler decided:",
            rec.steps,
            rec.live.len(),
            rec.seconds,
            file.display()
        );
        for (k, what) in [(BUSY, "evaluations"), (IDLE, "going idle")] {
            let parts: Vec<String> = VERDICTS
                .iter()
                .zip(n[k])
                .filter(|(_, v)| *v > 0)
                .map(|(name, v)| format!("{name} {v}"))
                .collect();
            println!("  {what}: {}", parts.join(", "));
        }
    }
    if rec.drops() > 0 {
        eprintln!(
            "scx_cadence: warning: {} records did not fit in the ring buffer: the trace is not complete, and its replay will not match",
            rec.drops()
        );
    }
}
