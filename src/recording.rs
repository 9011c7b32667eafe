//! What `idle record` and `cpufreq record` share: one recording at a time
//! per pin directory, and reading a ring buffer the BPF side fills without
//! waking the reader.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

/// How often the ring buffer is read. The BPF side submits without a
/// wake-up (a recorder woken per record records mostly itself) and sizes
/// its ring buffer for over a second of a busy machine.
const READ_EVERY: Duration = Duration::from_millis(100);

/// After the generation goes even, how long a callback that read it odd
/// just before may still be writing: a few instructions; this leaves any
/// CPU time to finish its callback.
pub const SETTLE: Duration = Duration::from_millis(200);

/// The recording's length from --seconds.
pub fn length(secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--seconds must be a positive number")
}

/// Locks @pin_dir for one recording, of either kind: each reads its
/// generation, then writes it. Refused in one line while another holds it.
pub fn lock(pin_dir: &Path) -> Result<Flock<File>> {
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
pub fn read_for(
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
