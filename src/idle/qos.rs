//! Per-CPU PM QoS resume-latency limits (issue 13, item 4): the writer that
//! owns /sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us while
//! `idle.qos = "learned"` is in force. Which limit each CPU gets is decided
//! elsewhere; this module saves what it replaces, rate-limits its writes and
//! puts the originals back on every exit, including the next start after a
//! kill -9 (the saved originals live in RUN_DIR).
//!
//! The file, from drivers/base/power/sysfs.c (pm_qos_resume_latency_us_show
//! and _store) and Documentation/ABI/testing/sysfs-devices-power:
//! - reads "0" when there is no constraint (PM_QOS_RESUME_LATENCY_NO_CONSTRAINT),
//!   "n/a" for a 0 us limit, else the limit in us ("%d");
//! - writing "0" removes the constraint, "n/a" sets a 0 us limit, N sets N
//!   (kstrtos32; negative values and S32_MAX are refused with EINVAL).
//!
//! So every value the kernel shows can be written back as it was read, and
//! the saved file keeps the raw text. The cpuidle governors skip states whose
//! exit latency exceeds the limit, from the CPU's next idle entry; the file
//! exists without a cpuidle driver too (it belongs to the CPU device).
//!
//! scx_utils::pm::update_cpu_idle_resume_latency is not used: it hard-codes
//! /sys, creates the file if it is missing, cannot write "n/a" (its 0 means
//! "no constraint") and reads nothing back to restore.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use log::warn;

/// Where scx_cadence keeps state that must outlive a kill -9: the directory
/// of the instance lock (crate::instance::LOCK_FILE), root-only (0700) and
/// checked by crate::owned like the lock's.
pub const RUN_DIR: &str = "/run/scx_cadence";

/// The originals this run replaced, in RUN_DIR: one line per CPU,
/// "CPU ORIGINAL [OURS [OURS]]", each value exactly as the sysfs file reads:
/// the value to restore, then the one or two values this run may have left
/// in the file (the limit in force and the one it was writing when it last
/// stored the line). After a kill -9 the next start restores ORIGINAL only
/// where the file still holds one of them (or ORIGINAL itself): any other
/// value was put there by another writer since. A line without OURS (a file
/// from before they were kept) is restored whatever the file holds.
pub const SAVED_FILE: &str = "pm_qos_saved";

/// At most one write per CPU per MIN_INTERVAL: the issue asks for "at most a
/// few times a second per CPU"; 250 ms is four. Each write takes the device's
/// PM QoS lock and runs the constraint notifiers, and the governor sees the
/// new limit only from the CPU's next idle entry anyway.
pub const MIN_INTERVAL: Duration = Duration::from_millis(250);

/// The largest limit the file accepts: its store refuses S32_MAX, which is
/// PM_QOS_RESUME_LATENCY_NO_CONSTRAINT (include/linux/pm_qos.h). Larger
/// requests are clamped to it (about 36 minutes: no state is that deep).
pub const MAX_LIMIT_US: u32 = i32::MAX as u32 - 1;

/// The per-CPU file under a sysfs root (normally /sys).
pub fn qos_path(sysfs: &Path, cpu: u32) -> PathBuf {
    sysfs.join(format!(
        "devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us"
    ))
}

/// Parses the file's text: "0" is no constraint (None), "n/a" a 0 us limit
/// (Some(0)), a decimal N in 1..=MAX_LIMIT_US a limit of N us.
pub fn parse_limit(text: &str) -> Result<Option<u32>> {
    let t = text.trim();
    if t == "n/a" {
        return Ok(Some(0));
    }
    let n = match t.parse::<u32>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) && n <= MAX_LIMIT_US => n,
        _ => bail!(
            "unexpected resume latency {t:?} (expected 0, n/a or a number of microseconds up to {MAX_LIMIT_US})"
        ),
    };
    Ok(if n == 0 { None } else { Some(n) })
}

/// The text that asks the kernel for @limit (the inverse of parse_limit).
pub fn limit_text(limit: Option<u32>) -> String {
    match limit {
        None => "0".into(),
        Some(0) => "n/a".into(),
        Some(n) => n.min(MAX_LIMIT_US).to_string(),
    }
}

/// Reads @cpu's resume-latency limit under @sysfs (see parse_limit).
pub fn read_limit(sysfs: &Path, cpu: u32) -> Result<Option<u32>> {
    let path = qos_path(sysfs, cpu);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_limit(&text).with_context(|| format!("in {}", path.display()))
}

/// The raw text of @path, trimmed, and the limit it means (so it is a
/// value the file accepts back).
fn read_raw(path: &Path) -> Result<(String, Option<u32>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let raw = text.trim().to_string();
    let limit = parse_limit(&raw).with_context(|| format!("in {}", path.display()))?;
    Ok((raw, limit))
}

/// Writes @text to @path, which must exist (a missing sysfs file is never
/// created). Truncation is a no-op on sysfs and keeps a plain file exact.
fn write_raw(path: &Path, text: &str) -> Result<()> {
    let mut f = File::options()
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("opening {} for writing", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {text:?} to {}", path.display()))
}

/// Whether sysfs is there (devices/system/cpu) but @cpu's device is not.
fn cpu_is_gone(sysfs: &Path, cpu: u32) -> bool {
    let cpus = sysfs.join("devices/system/cpu");
    cpus.is_dir() && !cpus.join(format!("cpu{cpu}")).exists()
}

/// A CPU's line of SAVED_FILE.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Saved {
    /// The value before the first write, to restore, as read.
    original: String,
    /// What this run may have left in the file, as written (see SAVED_FILE).
    ours: Vec<String>,
}

impl Saved {
    /// Whether @in_file, read from the CPU's file after a kill -9, can be
    /// ours: one of the values we may have left, or the original itself
    /// (restoring over it changes nothing). A line without ours (an older
    /// file) cannot tell, and is restored as it always was.
    fn may_be_ours(&self, in_file: Option<u32>) -> bool {
        let parsed = |raw: &String| parse_limit(raw).expect("saved values are checked");
        self.ours.is_empty()
            || parsed(&self.original) == in_file
            || self.ours.iter().any(|raw| parsed(raw) == in_file)
    }
}

/// The most values a line keeps as ours: the limit in force and the one
/// being written over it.
const MAX_OURS: usize = 2;

/// Parses a saved file: CPU -> its line. Refuses the whole file on a bad
/// line, naming it, so that nothing is written from a file we do not
/// understand.
fn parse_saved(path: &Path, text: &str) -> Result<BTreeMap<u32, Saved>> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |why: &str| {
            anyhow::anyhow!(
                "{} line {}: {why}: {line:?} (remove the file if the values it saved no longer matter)",
                path.display(),
                i + 1
            )
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 2 || words.len() > 2 + MAX_OURS {
            return Err(bad("expected \"CPU ORIGINAL [OURS [OURS]]\""));
        }
        let cpu: u32 = words[0].parse().map_err(|_| bad("bad CPU number"))?;
        for value in &words[1..] {
            parse_limit(value).map_err(|e| bad(&e.to_string()))?;
        }
        let saved = Saved {
            original: words[1].to_string(),
            ours: words[2..].iter().map(|w| w.to_string()).collect(),
        };
        if out.insert(cpu, saved).is_some() {
            return Err(bad("CPU saved twice"));
        }
    }
    Ok(out)
}

/// What this run knows about one usable CPU.
struct Cpu {
    /// The value before this run (after restoring a killed run's), which
    /// restore_all puts back.
    original: Option<u32>,
    /// The limit in the file: read at open, then what we last wrote.
    in_force: Option<u32>,
    /// When we last wrote it (None: not yet).
    last_write: Option<Instant>,
    /// A request that came inside MIN_INTERVAL of the last write.
    pending: Option<Option<u32>>,
}

/// The writer of the per-CPU limits. Open it only while holding the instance
/// lock (crate::instance::InstanceLock, taken first thing in
/// scheduler::run_until_shutdown): open() restores whatever a killed run left
/// in the saved file, which would undo a live instance's limits if two ran
/// at once; the lock makes the second instance fail before it gets here.
pub struct QosLimits {
    sysfs: PathBuf,
    run_dir: PathBuf,
    /// The CPUs whose file was readable and writable at open.
    cpus: BTreeMap<u32, Cpu>,
    /// Originals replaced and not yet restored (mirrored in SAVED_FILE).
    saved: BTreeMap<u32, Saved>,
    /// Every warning issued, one per CPU that cannot be used.
    warnings: Vec<(u32, String)>,
    /// The run directory could not take the saved file: warned once.
    save_warned: bool,
}

impl QosLimits {
    /// Restores anything a previous run left saved in @run_dir (after a kill
    /// -9 the saved file exists), then returns a writer for @cpus. A CPU
    /// whose file is missing, unreadable or not writable gets one warning
    /// (log::warn!, and warnings()) and is left alone; the others work.
    /// Fails only if @run_dir is unsafe or its saved file cannot be parsed
    /// (then nothing is written). Call it only while holding the instance
    /// lock (see the type's comment).
    pub fn open(sysfs: &Path, run_dir: &Path, cpus: &BTreeSet<u32>) -> Result<QosLimits> {
        crate::owned::create_dir(run_dir, 0o700, "PM QoS run directory")?;
        let saved_path = run_dir.join(SAVED_FILE);
        // Parsed before a QosLimits exists, whose Drop would touch the file.
        let saved = match std::fs::read_to_string(&saved_path) {
            Ok(text) => parse_saved(&saved_path, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", saved_path.display()));
            }
        };
        let mut me = QosLimits {
            sysfs: sysfs.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            cpus: BTreeMap::new(),
            saved,
            warnings: Vec::new(),
            save_warned: false,
        };
        // Errors are logged and the failed entries stay saved: this run's
        // restore_all (and, failing that, the next start) tries them again,
        // and they are never saved anew over. No CPU is open yet, so
        // restore_all judges another writer by each saved line alone.
        if let Err(e) = me.restore_all() {
            warn!("PM QoS: restoring what a previous run saved: {e:#}");
        }
        for &cpu in cpus {
            let path = qos_path(sysfs, cpu);
            // Opening for writing writes nothing; on sysfs it fails at once
            // (EACCES, EROFS) when the file cannot be stored to.
            let probe = read_raw(&path).and_then(|(_, limit)| {
                File::options()
                    .write(true)
                    .open(&path)
                    .with_context(|| format!("opening {} for writing", path.display()))?;
                Ok(limit)
            });
            match probe {
                Ok(limit) => {
                    let (original, in_force) = match me.saved.get(&cpu) {
                        // Still ours from a failed restore: what is in
                        // force is not its original, so the next request
                        // writes (no request is above MAX_LIMIT_US).
                        Some(line) => (
                            parse_limit(&line.original).expect("saved values are checked"),
                            Some(u32::MAX),
                        ),
                        None => (limit, limit),
                    };
                    me.cpus.insert(
                        cpu,
                        Cpu {
                            original,
                            in_force,
                            last_write: None,
                            pending: None,
                        },
                    );
                }
                Err(e) => me.warn_cpu(cpu, format!("{e:#}")),
            }
        }
        Ok(me)
    }

    fn saved_path(&self) -> PathBuf {
        self.run_dir.join(SAVED_FILE)
    }

    /// Warns once about @cpu, which is then left alone.
    fn warn_cpu(&mut self, cpu: u32, why: String) {
        if self.warnings.iter().any(|(c, _)| *c == cpu) {
            return;
        }
        warn!("PM QoS: leaving cpu{cpu}'s resume latency alone: {why}");
        self.warnings.push((cpu, why));
        self.cpus.remove(&cpu);
    }

    /// Every warning issued: (CPU, why), one per CPU left alone.
    #[cfg(test)] // the scheduler needs only the log's warnings
    pub fn warnings(&self) -> &[(u32, String)] {
        &self.warnings
    }

    /// The CPUs opened, each with its value before this run (None: no
    /// constraint, Some(0): 0 us).
    pub fn originals(&self) -> BTreeMap<u32, Option<u32>> {
        self.cpus
            .iter()
            .map(|(&cpu, c)| (cpu, c.original))
            .collect()
    }

    /// How many CPUs have a value other than their original in force.
    pub fn limited(&self) -> usize {
        self.cpus
            .values()
            .filter(|c| c.in_force != c.original)
            .count()
    }

    /// The CPUs left alone (each warned about once).
    #[cfg(test)] // the scheduler needs only the log's warnings
    pub fn warned(&self) -> BTreeSet<u32> {
        self.warnings.iter().map(|(c, _)| *c).collect()
    }

    /// Writes the saved originals to SAVED_FILE atomically (a temporary file,
    /// fsync, rename, fsync of the directory), or removes it when none are
    /// left, so that a kill -9 at any point leaves either the old or the new
    /// file, never a torn one.
    fn store_saved(&self) -> Result<()> {
        let path = self.saved_path();
        if self.saved.is_empty() {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            }
        } else {
            let tmp = self.run_dir.join(format!("{SAVED_FILE}.tmp"));
            let text: String = self
                .saved
                .iter()
                .map(|(cpu, line)| {
                    let ours: String = line.ours.iter().map(|raw| format!(" {raw}")).collect();
                    format!("{cpu} {}{ours}\n", line.original)
                })
                .collect();
            let mut f =
                File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            f.write_all(text.as_bytes())
                .and_then(|()| f.sync_all())
                .with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &path)
                .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        }
        File::open(&self.run_dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", self.run_dir.display()))
    }

    /// Asks for a resume-latency limit of @us microseconds on @cpu (None: no
    /// constraint; Some(0): no idle state with an exit latency). Saves the
    /// CPU's original value before the first write to it. Writes at most once
    /// per MIN_INTERVAL per CPU: a request inside the interval is kept (the
    /// latest wins) and written by the next request() or flush() after it,
    /// so the limit in force always catches up with the last one asked for,
    /// even if the caller asks only when its choice changes. Asking for the
    /// limit already in force writes nothing. Returns whether it wrote.
    pub fn request(&mut self, cpu: u32, us: Option<u32>, now: Instant) -> bool {
        let us = us.map(|n| n.min(MAX_LIMIT_US));
        let Some(c) = self.cpus.get_mut(&cpu) else {
            // Once per CPU (warn_cpu), like a file that failed.
            self.warn_cpu(cpu, "not among the CPUs opened for PM QoS".into());
            return false;
        };
        if c.in_force == us {
            c.pending = None;
            return false;
        }
        if let Some(t) = c.last_write
            && now.saturating_duration_since(t) < MIN_INTERVAL
        {
            c.pending = Some(us);
            return false;
        }
        self.write(cpu, us, now)
    }

    /// Writes the kept requests whose interval has passed; returns how many
    /// were written. For a caller that asks only on changes: call it on each
    /// tick of the loop.
    pub fn flush(&mut self, now: Instant) -> usize {
        let due: Vec<(u32, Option<u32>)> = self
            .cpus
            .iter()
            .filter_map(|(&cpu, c)| {
                let us = c.pending?;
                let t = c.last_write?;
                (now.saturating_duration_since(t) >= MIN_INTERVAL).then_some((cpu, us))
            })
            .collect();
        due.into_iter()
            .filter(|&(cpu, us)| self.request(cpu, us, now))
            .count()
    }

    /// Whether @cpu's file no longer holds the value this writer knows to
    /// be in force (read at open or written since): another writer (a
    /// tuning daemon, an administrator, another scheduler's loader)
    /// changed it. A CPU whose value is unknown (still saved from a
    /// restore that failed) is judged by its saved line (Saved::may_be_ours).
    fn changed_by_another(&self, cpu: u32, now_in_file: Option<u32>) -> bool {
        match self.cpus.get(&cpu).map(|c| c.in_force) {
            None => false,
            Some(Some(u32::MAX)) => self
                .saved
                .get(&cpu)
                .is_some_and(|line| !line.may_be_ours(now_in_file)),
            Some(in_force) => in_force != now_in_file,
        }
    }

    /// Hands @cpu to the writer that put @raw in its file: its value is the
    /// new original, which this run never overwrites and restores nothing
    /// over (issue 50); the CPU is left alone from now on, with one warning.
    fn yield_to_another(&mut self, cpu: u32, raw: &str) {
        if self.saved.remove(&cpu).is_some()
            && let Err(e) = self.store_saved()
        {
            warn!("PM QoS: {e:#}");
        }
        let ours = self
            .cpus
            .get(&cpu)
            .map_or_else(String::new, |c| limit_text(c.in_force));
        self.warn_cpu(
            cpu,
            format!(
                "another writer set it to {raw} (it was {ours}): that is its value now, \
                 and this run neither overwrites nor restores over it"
            ),
        );
    }

    /// Reads @cpu's file; if another writer changed it since, hands the CPU
    /// over (yield_to_another) and writes nothing; else saves the CPU's
    /// original if not yet saved, and writes @us.
    fn write(&mut self, cpu: u32, us: Option<u32>, now: Instant) -> bool {
        let path = qos_path(&self.sysfs, cpu);
        let (raw, in_file) = match read_raw(&path) {
            Ok(v) => v,
            Err(e) => {
                self.warn_cpu(cpu, format!("{e:#}"));
                return false;
            }
        };
        if self.changed_by_another(cpu, in_file) {
            self.yield_to_another(cpu, &raw);
            return false;
        }
        // Stored before the write: killed at any point, the file holds what
        // it holds now (ours, as just checked) or @us, both ours for the
        // next start.
        let before = self.saved.get(&cpu).cloned();
        let newly_saved = before.is_none();
        let line = self.saved.entry(cpu).or_insert_with(|| Saved {
            original: raw.clone(),
            ours: Vec::new(),
        });
        line.ours = [raw, limit_text(us)]
            .into_iter()
            .filter(|v| *v != line.original)
            .collect();
        line.ours.dedup();
        // Never empty: a line without values of ours reads as an older
        // file's, restored whatever the file holds.
        if line.ours.is_empty() {
            line.ours.push(line.original.clone());
        }
        if let Err(e) = self.store_saved() {
            // Without the saved original a kill -9 could not be undone, nor
            // told from another writer's value: write nothing.
            match before {
                Some(line) => self.saved.insert(cpu, line),
                None => self.saved.remove(&cpu),
            };
            if !self.save_warned {
                self.save_warned = true;
                warn!("PM QoS: not writing limits: {e:#}");
            }
            return false;
        }
        if let Err(e) = write_raw(&path, &limit_text(us)) {
            // Nothing changed: forget the original again, so that no
            // restore is attempted (and retried at every start) for it.
            if newly_saved {
                self.saved.remove(&cpu);
                if let Err(e) = self.store_saved() {
                    warn!("PM QoS: {e:#}");
                }
            }
            self.warn_cpu(cpu, format!("{e:#}"));
            return false;
        }
        let c = self.cpus.get_mut(&cpu).expect("written CPUs are open");
        c.in_force = us;
        c.last_write = Some(now);
        c.pending = None;
        true
    }

    /// Writes every saved original back and removes the saved file (keeping
    /// in it only the CPUs whose restore failed). A CPU open in this run
    /// whose file another writer changed since our last write keeps that
    /// writer's value (issue 50: nothing restored over it). Idempotent;
    /// also run by Drop. Not rate-limited: it is the way out.
    pub fn restore_all(&mut self) -> Result<()> {
        if self.saved.is_empty() {
            // The saved file mirrors self.saved: there is none.
            return Ok(());
        }
        let mut failed = Vec::new();
        for (cpu, line) in std::mem::take(&mut self.saved) {
            let path = qos_path(&self.sysfs, cpu);
            // A CPU of this run is judged by what it knows it wrote; one a
            // killed run left saved, or whose value is unknown (a restore
            // that failed), by the values its line says it may have left.
            let foreign = |in_file| match self.cpus.get(&cpu).map(|c| c.in_force) {
                Some(Some(u32::MAX)) | None => !line.may_be_ours(in_file),
                Some(in_force) => in_force != in_file,
            };
            let raw = line.original.clone();
            if let Ok((now_raw, in_file)) = read_raw(&path)
                && foreign(in_file)
            {
                warn!(
                    "PM QoS: cpu{cpu}: another writer set {now_raw} since our last write; \
                     leaving it (not restoring {raw})"
                );
                self.cpus.remove(&cpu);
                continue;
            }
            match write_raw(&path, &raw) {
                Err(e) if cpu_is_gone(&self.sysfs, cpu) => {
                    // The CPU device went away, and its PM QoS requests with
                    // it: a CPU that comes back starts without a limit.
                    warn!("PM QoS: cpu{cpu} is gone, nothing to restore ({e:#})");
                }
                Ok(()) => {
                    if let Some(c) = self.cpus.get_mut(&cpu) {
                        c.in_force = parse_limit(&raw).expect("saved values are checked");
                        c.pending = None;
                    }
                }
                Err(e) => {
                    failed.push(format!("cpu{cpu}: {e:#}"));
                    self.saved.insert(cpu, line);
                }
            }
        }
        self.store_saved()?;
        if !failed.is_empty() {
            bail!(
                "could not restore {} (kept in {}): {}",
                if failed.len() == 1 { "one CPU" } else { "CPUs" },
                self.saved_path().display(),
                failed.join("; ")
            );
        }
        Ok(())
    }
}

impl Drop for QosLimits {
    fn drop(&mut self) {
        if let Err(e) = self.restore_all() {
            warn!("PM QoS: {e:#}");
        }
    }
}

#[cfg(test)]
#[path = "qos_tests.rs"]
pub(crate) mod tests;
