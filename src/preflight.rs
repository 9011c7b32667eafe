//! Checks made before anything is opened or loaded, so that the usual reasons a
//! scheduler cannot start end in one clear line and leave nothing behind.

use std::fs;
use std::path::Path;

use anyhow::{Result, bail};

/// Where the kernel exposes sched_ext's state (kernel/sched/ext.c).
pub const SCHED_EXT_SYSFS: &str = "/sys/kernel/sched_ext";

/// The kernel must have been built with CONFIG_SCHED_CLASS_EXT.
pub fn check_sched_ext(sysfs: &Path) -> Result<()> {
    let state = sysfs.join("state");
    if !state.exists() {
        bail!(
            "this kernel has no sched_ext: {} is missing (it needs CONFIG_SCHED_CLASS_EXT=y, Linux 6.12 or later)",
            state.display()
        );
    }
    Ok(())
}

/// Loading struct_ops needs CAP_BPF and CAP_SYS_ADMIN: in practice, root.
pub fn check_root(euid: u32) -> Result<()> {
    if euid != 0 {
        bail!("must be run as root: loading a sched_ext scheduler needs CAP_BPF and CAP_SYS_ADMIN");
    }
    Ok(())
}

/// Only one sched_ext scheduler can be attached at a time.
pub fn check_no_other_scheduler(sysfs: &Path) -> Result<()> {
    let state = read_trimmed(&sysfs.join("state"))?;
    if state != "disabled" {
        let ops = read_trimmed(&sysfs.join("root/ops")).unwrap_or_else(|_| "unknown".into());
        bail!(
            "another sched_ext scheduler is already loaded ({ops}, state {state}): stop it first"
        );
    }
    Ok(())
}

/// All three, in the order a user would fix them.
pub fn check_all(sysfs: &Path) -> Result<()> {
    check_sched_ext(sysfs)?;
    // SAFETY: geteuid() has no preconditions and cannot fail.
    check_root(unsafe { libc::geteuid() })?;
    check_no_other_scheduler(sysfs)
}

fn read_trimmed(path: &Path) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(s.trim().to_string()),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    }
}
