//! The BPF maps pinned under bpffs (default /sys/fs/bpf/scx_cadence/), so
//! that `bpftool map dump pinned …` shows them with their BTF field names
//! while the scheduler runs. The pins go away when the Pins value is
//! dropped: at exit, after an error, and before a hotplug re-attach.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapMut};
use log::{info, warn};

/// Where the maps are pinned unless told otherwise.
pub const DEFAULT_PIN_DIR: &str = "/sys/fs/bpf/scx_cadence";

/// statfs(2) f_type of a bpffs mount: BPF_FS_MAGIC in include/uapi/linux/magic.h.
const BPF_FS_MAGIC: i64 = 0xcafe4a11;

/// The pinned maps of one attached instance.
pub struct Pins {
    dir: PathBuf,
    pinned: Vec<PathBuf>,
}

/// True if @dir is on a bpffs mount.
fn on_bpffs(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated, st is a valid statfs buffer.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Mounts bpffs on /sys/fs/bpf if nothing is mounted there, as bpftool does.
fn ensure_bpffs(dir: &Path) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    if on_bpffs(parent) {
        return Ok(());
    }
    if parent != Path::new("/sys/fs/bpf") {
        bail!("{} is not on a bpffs mount", parent.display());
    }
    let src = c"bpf";
    let target = c"/sys/fs/bpf";
    // SAFETY: all pointers are valid NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            src.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        bail!(
            "mounting bpffs on /sys/fs/bpf: {}",
            std::io::Error::last_os_error()
        );
    }
    info!("mounted bpffs on /sys/fs/bpf");
    Ok(())
}

impl Pins {
    /// Makes @dir ready for pins. Leftovers of an instance that was killed
    /// are removed first (the caller holds the instance lock).
    pub fn create(dir: &Path) -> Result<Self> {
        ensure_bpffs(dir)?;
        if dir.exists() {
            remove_stale(dir)?;
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            pinned: Vec::new(),
        })
    }

    /// Pins @map as <dir>/<map name>.
    pub fn add(&mut self, map: &mut MapMut) -> Result<()> {
        let name = map.name().to_string_lossy().into_owned();
        let path = self.dir.join(name);
        map.pin(&path)
            .with_context(|| format!("pinning {}", path.display()))?;
        self.pinned.push(path);
        Ok(())
    }

    /// Pins @link as <dir>/<name>; for an iterator, reading it runs it.
    pub fn add_link(&mut self, link: &mut libbpf_rs::Link, name: &str) -> Result<()> {
        let path = self.dir.join(name);
        link.pin(&path)
            .with_context(|| format!("pinning {}", path.display()))?;
        self.pinned.push(path);
        Ok(())
    }
}

/// Removes the files in @dir left by an instance that could not clean up.
fn remove_stale(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut n = 0;
    for e in entries {
        let path = e?.path();
        std::fs::remove_file(&path)
            .with_context(|| format!("removing stale pin {}", path.display()))?;
        n += 1;
    }
    if n > 0 {
        warn!(
            "removed {n} stale pins from {} (a previous instance was killed)",
            dir.display()
        );
    }
    Ok(())
}

impl Drop for Pins {
    fn drop(&mut self) {
        for path in &self.pinned {
            if let Err(e) = std::fs::remove_file(path) {
                warn!("unpinning {}: {e}", path.display());
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
