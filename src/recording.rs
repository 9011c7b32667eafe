//! What `idle record` and `cpufreq record` share: the generation in a
//! control map that makes each CPU join, one recording at a time per pin
//! directory, and reading a ring buffer the BPF side fills without waking
//! the reader.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};
use nix::fcntl::{Flock, FlockArg};
use signal_hook::consts::{SIGINT, SIGTERM};

/// How often the ring buffer is read. The BPF side submits without a
/// wake-up (a recorder woken per record records mostly itself) and sizes
/// its ring buffer for what a busy machine writes in this time.
const READ_EVERY: Duration = Duration::from_millis(100);

/// After the generation goes even, how long a callback that read it odd
/// just before may still be writing: a few instructions; this leaves any
/// CPU time to finish its callback.
const SETTLE: Duration = Duration::from_millis(200);

/// How the record and replay commands (`idle`, `cpufreq`) print their counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// A table (for `idle`, seed 003's).
    Text,
    /// One JSON object of the counts.
    Json,
}

/// The arguments of `idle record` and `cpufreq record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    #[clap(long, value_name = "SECS")]
    pub seconds: f64,
    #[clap(value_name = "FILE")]
    pub file: PathBuf,
    #[clap(long, value_enum, default_value = "text")]
    pub format: Output,
    /// bpffs directory where the running scheduler pinned its maps.
    #[clap(long, value_name = "DIR", default_value = crate::pins::DEFAULT_PIN_DIR)]
    pub pin_dir: PathBuf,
}

/// The flag SIGINT and SIGTERM set: a recording then ends early, its trace
/// and counts complete.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .context("installing the SIGINT/SIGTERM handler")?;
    }
    Ok(stop)
}

/// The recording's length from --seconds.
pub fn length(secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--seconds must be a positive number")
}

/// Locks @pin_dir for one recording, of either kind: each reads its
/// generation, then writes it. Refused in one line while another holds it.
fn lock(pin_dir: &Path) -> Result<Flock<File>> {
    let dir = File::open(pin_dir).with_context(|| format!("opening {}", pin_dir.display()))?;
    Flock::lock(dir, FlockArg::LockExclusiveNonblock).map_err(|_| {
        anyhow::anyhow!(
            "another recording (`idle record` or `cpufreq record`) is in progress (it holds {})",
            pin_dir.display()
        )
    })
}

/// Reads @rb every READ_EVERY for @length or until @stop; returns the time
/// it read for. @name names the ring buffer in errors.
fn read_for(
    rb: &libbpf_rs::RingBuffer,
    length: Duration,
    stop: &AtomicBool,
    name: &str,
) -> Result<Duration> {
    let began = Instant::now();
    let end = began + length;
    while !stop.load(Ordering::Relaxed) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(READ_EVERY));
        rb.consume().with_context(|| format!("reading {name}"))?;
    }
    Ok(began.elapsed())
}

/// Opens the map pinned at @dir/@name.
pub fn open_pinned(dir: &Path, name: &str) -> Result<MapHandle> {
    let path = dir.join(name);
    MapHandle::from_pinned_path(&path).with_context(|| format!("opening {}", path.display()))
}

/// Where a recording's ring buffer records go.
pub trait Sink {
    fn record(&mut self, raw: &[u8]);
}

/// What a recording gave: its sink, the generation it recorded, and how
/// long it recorded (less than asked after SIGINT).
pub struct Recording<S> {
    pub sink: S,
    pub generation: u64,
    pub seconds: f64,
}

/// One kind of recording: its control map, whose one element begins with
/// `record_gen` (a u64, odd while recording: struct cadence_idle_ctl and
/// cadence_cpufreq_ctl, each module asserts it), and its ring buffer.
pub struct Recorder {
    /// `idle` or `cpufreq`, as in `scx_cadence idle record`.
    kind: &'static str,
    ctl_name: &'static str,
    ctl: MapHandle,
    ring_name: &'static str,
    ring: MapHandle,
}

impl Recorder {
    /// The maps of @kind's recording pinned in @dir; an error says so when
    /// no scheduler pinned them.
    pub fn open(
        dir: &Path,
        kind: &'static str,
        ctl_name: &'static str,
        ring_name: &'static str,
    ) -> Result<Recorder> {
        if !dir.join(ctl_name).exists() {
            bail!(
                "no scheduler is running: nothing pinned at {}/{ctl_name}",
                dir.display()
            );
        }
        Ok(Recorder {
            kind,
            ctl_name,
            ctl: open_pinned(dir, ctl_name)?,
            ring_name,
            ring: open_pinned(dir, ring_name)?,
        })
    }

    fn ctl_value(&self) -> Result<Vec<u8>> {
        let raw = self
            .ctl
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .with_context(|| format!("reading {}", self.ctl_name))?
            .with_context(|| format!("{} has no element", self.ctl_name))?;
        if raw.len() < 8 {
            bail!("{}: a value of {} bytes", self.ctl_name, raw.len());
        }
        Ok(raw)
    }

    /// The control map's record_gen.
    fn generation(&self) -> Result<u64> {
        let raw = self.ctl_value()?;
        Ok(u64::from_ne_bytes(raw[..8].try_into().expect("8 bytes")))
    }

    /// Sets record_gen; the other fields stay (only the loader writes them,
    /// before attaching).
    fn set_generation(&self, generation: u64) -> Result<()> {
        let mut raw = self.ctl_value()?;
        raw[..8].copy_from_slice(&generation.to_ne_bytes());
        self.ctl
            .update(&0u32.to_ne_bytes(), &raw, MapFlags::ANY)
            .with_context(|| format!("writing {}", self.ctl_name))
    }

    /// Records for @length (or until @stop) under the lock of @pin_dir:
    /// the sink @make_sink makes (after the lock, so that a refused
    /// recording writes nothing) gets every record of this recording's
    /// generation. @before_start runs once leftovers of an earlier
    /// recording are discarded, just before the generation goes odd.
    pub fn run<S: Sink>(
        &self,
        pin_dir: &Path,
        length: Duration,
        stop: &AtomicBool,
        make_sink: impl FnOnce() -> Result<S>,
        before_start: impl FnOnce() -> Result<()>,
    ) -> Result<Recording<S>> {
        let _lock = lock(pin_dir)?;
        let mut generation = self.generation()?;
        let sink = RefCell::new(make_sink()?);
        let discarding = Cell::new(false);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&self.ring, |raw| {
                if !discarding.get() {
                    sink.borrow_mut().record(raw);
                }
                0
            })
            .with_context(|| format!("opening the {} ring buffer", self.ring_name))?;
        let rb = builder
            .build()
            .with_context(|| format!("opening the {} ring buffer", self.ring_name))?;

        if generation & 1 == 1 {
            // Odd with nobody holding the lock: a recorder was killed. End
            // its recording and throw away what it left.
            eprintln!(
                "scx_cadence: warning: a `{} record` was killed while recording (record_gen {generation}): ending it",
                self.kind
            );
            generation += 1;
            self.set_generation(generation)?;
            std::thread::sleep(SETTLE);
        }
        discarding.set(true);
        let drained = rb.consume();
        discarding.set(false);
        drained.with_context(|| format!("draining {}", self.ring_name))?;
        before_start()?;

        let generation = generation + 1;
        self.set_generation(generation)?;
        let result = read_for(&rb, length, stop, self.ring_name);
        // Whatever happened, the recording ends.
        self.set_generation(generation + 1)?;
        let seconds = result?.as_secs_f64();
        std::thread::sleep(SETTLE);
        rb.consume()
            .with_context(|| format!("draining {}", self.ring_name))?;
        drop(rb);
        Ok(Recording {
            sink: sink.into_inner(),
            generation,
            seconds,
        })
    }
}
