//! `scx_cadence idle record`: a client of the running scheduler through its
//! pinned maps (bpf/idle.bpf.c). It makes `idle_ctl.record_gen` odd; each
//! CPU, at its next idle entry, joins by writing its table to the
//! `idle_trace` ring buffer and zeroing its `record_scores`, then writes
//! every period it scores. After the time asked, record_gen goes even
//! again, and the live scores of the recorded periods are read back from
//! `idle_cpu`: `idle replay` of the trace must give these same counts.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};

use super::period::Scores;
use super::score_table;
use super::trace::{self, Record};
use crate::bpf_intf::{self, as_bytes};
use crate::recording;

/// The pinned maps a recording uses.
struct Maps {
    ctl: MapHandle,
    trace: MapHandle,
    cpu: MapHandle,
    states: MapHandle,
}

fn open(dir: &Path, name: &str) -> Result<MapHandle> {
    let path = dir.join(name);
    MapHandle::from_pinned_path(&path).with_context(|| format!("opening {}", path.display()))
}

impl Maps {
    fn open(dir: &Path) -> Result<Maps> {
        if !dir.join("idle_ctl").exists() {
            bail!(
                "no scheduler is running: nothing pinned at {}/idle_ctl",
                dir.display()
            );
        }
        Ok(Maps {
            ctl: open(dir, "idle_ctl")?,
            trace: open(dir, "idle_trace")?,
            cpu: open(dir, "idle_cpu")?,
            states: open(dir, "idle_states")?,
        })
    }

    fn ctl(&self) -> Result<bpf_intf::cadence_idle_ctl> {
        let raw = self
            .ctl
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading idle_ctl")?
            .context("idle_ctl has no element")?;
        bpf_intf::from_bytes(&raw).context("idle_ctl: a value of the wrong size")
    }

    /// Sets record_gen to @generation; the other fields stay (only the loader
    /// writes them, before attaching).
    fn set_gen(&self, generation: u64) -> Result<()> {
        let mut ctl = self.ctl()?;
        ctl.record_gen = generation;
        self.ctl
            .update(&0u32.to_ne_bytes(), as_bytes(&ctl), MapFlags::ANY)
            .context("writing idle_ctl")
    }

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
    let maps = Maps::open(pin_dir)?;
    // One recording at a time, of either kind (cpufreq record takes the
    // same lock): record_gen is read, then written.
    let _lock = recording::lock(pin_dir)?;
    let mut generation = maps.ctl()?.record_gen;
    let out = File::create(file).with_context(|| format!("cannot write {}", file.display()))?;
    let out = RefCell::new(Writer {
        file: BufWriter::new(out),
        tables: 0,
        periods: 0,
        cpus: BTreeSet::new(),
        discard: false,
        error: None,
    });
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&maps.trace, |raw| {
            out.borrow_mut().write(raw);
            0
        })
        .context("opening the idle_trace ring buffer")?;
    let rb = builder
        .build()
        .context("opening the idle_trace ring buffer")?;

    if generation & 1 == 1 {
        // Odd with nobody holding the lock: a recorder was killed. End its
        // recording and throw away what it left.
        eprintln!(
            "scx_cadence: warning: an `idle record` was killed while recording (record_gen {generation}): ending it"
        );
        generation += 1;
        maps.set_gen(generation)?;
        std::thread::sleep(recording::SETTLE);
    }
    let drops_before = drops(&maps.cpus()?);
    discard(&rb, &out)?;

    let generation = generation + 1;
    maps.set_gen(generation)?;
    let result = recording::read_for(&rb, length, stop, "idle_trace");
    // Whatever happened, the recording ends.
    maps.set_gen(generation + 1)?;
    let seconds = result?.as_secs_f64();
    std::thread::sleep(recording::SETTLE);
    rb.consume().context("draining idle_trace")?;

    let cpus = maps.cpus()?;
    drop(rb);
    let mut w = out.into_inner();
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
        for (sum, n) in rec
            .scores
            .0
            .as_flattened_mut()
            .as_flattened_mut()
            .iter_mut()
            .zip(c.record_scores.n.as_flattened().as_flattened())
        {
            *sum += n;
        }
    }
    Ok(rec)
}

/// Total record_drops of @cpus.
fn drops(cpus: &[Option<bpf_intf::cadence_idle_cpu>]) -> u64 {
    cpus.iter().flatten().map(|c| c.record_drops).sum()
}

/// Empties the ring buffer without writing what it held.
fn discard(rb: &libbpf_rs::RingBuffer, out: &RefCell<Writer>) -> Result<()> {
    out.borrow_mut().discard = true;
    let r = rb.consume().context("draining idle_trace");
    out.borrow_mut().discard = false;
    r
}

/// Where the ring buffer's records go.
struct Writer {
    file: BufWriter<File>,
    tables: u64,
    periods: u64,
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
        if self.discard || self.error.is_some() {
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
