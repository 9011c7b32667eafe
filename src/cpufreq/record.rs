//! `scx_cadence cpufreq record`: a client of the running scheduler through
//! its pinned maps (bpf/cpufreq.bpf.c). It makes `cpufreq_ctl.record_gen`
//! odd; each CPU, at its next step (an evaluation in running() or tick(),
//! or going idle), joins by writing its state to the `cpufreq_trace` ring
//! buffer and zeroing its counts in `cpufreq_record`, then writes every
//! step with the verdict it made. After the time asked, record_gen goes even
//! again, and the live counts of the recorded steps are read back and
//! written last: `cpufreq replay` of the trace must give these same counts.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};

use super::replay::live_counts;
use super::trace::{self, Header, Live, Record, VERDICTS};
use crate::bpf_intf::{self, as_bytes};
use crate::freq::FreqTable;
use crate::recording;

/// The pinned maps a recording uses.
struct Maps {
    ctl: MapHandle,
    trace: MapHandle,
    record: MapHandle,
}

fn open(dir: &Path, name: &str) -> Result<MapHandle> {
    let path = dir.join(name);
    MapHandle::from_pinned_path(&path).with_context(|| format!("opening {}", path.display()))
}

impl Maps {
    fn open(dir: &Path) -> Result<Maps> {
        if !dir.join("cpufreq_ctl").exists() {
            bail!(
                "no scheduler is running: nothing pinned at {}/cpufreq_ctl",
                dir.display()
            );
        }
        Ok(Maps {
            ctl: open(dir, "cpufreq_ctl")?,
            trace: open(dir, "cpufreq_trace")?,
            record: open(dir, "cpufreq_record")?,
        })
    }

    fn record_gen(&self) -> Result<u64> {
        let raw = self
            .ctl
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading cpufreq_ctl")?
            .context("cpufreq_ctl has no element")?;
        let ctl: bpf_intf::cadence_cpufreq_ctl =
            bpf_intf::from_bytes(&raw).context("cpufreq_ctl: a value of the wrong size")?;
        Ok(ctl.record_gen)
    }

    fn set_gen(&self, generation: u64) -> Result<()> {
        let ctl = bpf_intf::cadence_cpufreq_ctl {
            record_gen: generation,
        };
        self.ctl
            .update(&0u32.to_ne_bytes(), as_bytes(&ctl), MapFlags::ANY)
            .context("writing cpufreq_ctl")
    }

    /// Every possible CPU's cpufreq_record value (None where unreadable).
    fn cpus(&self) -> Result<Vec<Option<bpf_intf::cadence_cpufreq_record>>> {
        let raw = bpf_intf::percpu_values(&self.record, "cpufreq_record")?;
        Ok(raw.iter().map(|r| bpf_intf::from_bytes(r)).collect())
    }
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
    let maps = Maps::open(pin_dir)?;
    // One recording at a time, of either kind: each reads its generation,
    // then writes it.
    let _lock = recording::lock(pin_dir)?;
    let mut generation = maps.record_gen()?;
    let out = File::create(file).with_context(|| format!("cannot write {}", file.display()))?;
    let out = RefCell::new(Writer {
        file: BufWriter::new(out),
        joins: 0,
        steps: 0,
        cpus: BTreeSet::new(),
        discard: false,
        error: None,
    });
    // The frequencies a replay resolves other policies against.
    out.borrow_mut().line(&Record::Header(Header {
        freq: FreqTable::probe(),
    }));
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&maps.trace, |raw| {
            out.borrow_mut().write(raw);
            0
        })
        .context("opening the cpufreq_trace ring buffer")?;
    let rb = builder
        .build()
        .context("opening the cpufreq_trace ring buffer")?;

    if generation & 1 == 1 {
        // Odd with nobody holding the lock: a recorder was killed. End its
        // recording and throw away what it left.
        eprintln!(
            "scx_cadence: warning: a `cpufreq record` was killed while recording (record_gen {generation}): ending it"
        );
        generation += 1;
        maps.set_gen(generation)?;
        std::thread::sleep(recording::SETTLE);
    }
    out.borrow_mut().discard = true;
    rb.consume().context("draining cpufreq_trace")?;
    out.borrow_mut().discard = false;

    let generation = generation + 1;
    maps.set_gen(generation)?;
    let result = recording::read_for(&rb, length, stop, "cpufreq_trace");
    // Whatever happened, the recording ends.
    maps.set_gen(generation + 1)?;
    let seconds = result?.as_secs_f64();
    std::thread::sleep(recording::SETTLE);
    rb.consume().context("draining cpufreq_trace")?;
    drop(rb);

    let values = maps.cpus()?;
    let mut w = out.into_inner();
    // The CPUs that joined are those in the trace; their values are this
    // recording's as long as they hold its generation.
    let mut live = Vec::new();
    for cpu in std::mem::take(&mut w.cpus) {
        let Some(r) = values.get(cpu as usize).copied().flatten() else {
            bail!("cpufreq_record has no value for CPU {cpu}");
        };
        if r.record_gen != generation {
            bail!(
                "CPU {cpu} joined generation {}, not {generation}",
                r.record_gen
            );
        }
        let l = Live {
            cpu,
            drops: r.drops,
            busy: r.n[0],
            idle: r.n[1],
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
        seconds,
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
    /// The CPUs with a record.
    cpus: BTreeSet<u32>,
    /// Draining leftovers: nothing is written.
    discard: bool,
    /// The first write error; later records are not written.
    error: Option<std::io::Error>,
}

impl Writer {
    fn write(&mut self, raw: &[u8]) {
        let Some(r) = trace::from_ringbuf(raw) else {
            return;
        };
        if self.discard {
            return;
        }
        match &r {
            Record::Join(j) => {
                self.joins += 1;
                self.cpus.insert(j.cpu);
            }
            Record::Step(s) => {
                self.steps += 1;
                self.cpus.insert(s.cpu);
            }
            Record::Header(_) | Record::Live(_) => {}
        }
        self.line(&r);
    }

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
            "busy": by(0),
            "idle": by(1),
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
        for (k, what) in [(0, "evaluations"), (1, "going idle")] {
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
