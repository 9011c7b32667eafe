//! One scx_cadence at a time: an flock(2) on a file in /run/scx_cadence/,
//! taken before the control socket and the pins are touched, so that a
//! second instance fails without disturbing the first's.

use std::fs::File;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The lock file; the kernel drops the lock when the process ends, however.
pub const LOCK_FILE: &str = "/run/scx_cadence/instance.lock";

/// Held for the life of the scheduler.
pub struct InstanceLock {
    _file: File,
}

/// Creates the directory holding @path, root-only (0700), if it is missing.
pub fn create_parent_dir(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

impl InstanceLock {
    pub fn take(path: &Path) -> Result<Self> {
        create_parent_dir(path)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock on an open descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            bail!(
                "another scx_cadence is running (it holds {})",
                path.display()
            );
        }
        Ok(Self { _file: file })
    }
}
