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

/// Where the kernel says it is a PREEMPT_RT build (kernel/ksysfs.c: a file
/// `realtime` reading 1, present only with CONFIG_PREEMPT_RT).
pub const KERNEL_SYSFS: &str = "/sys/kernel";

/// Whether the kernel under @kernel_sysfs is PREEMPT_RT, whose verifier
/// refuses BPF timers (bpf/parity_timer.bpf.h is then turned off).
pub fn preempt_rt(kernel_sysfs: &Path) -> bool {
    read_trimmed(&kernel_sysfs.join("realtime")).is_ok_and(|s| s == "1")
}

/// All three, in the order a user would fix them.
pub fn check_all(sysfs: &Path) -> Result<()> {
    check_sched_ext(sysfs)?;
    check_root(crate::owned::euid())?;
    check_no_other_scheduler(sysfs)
}

fn read_trimmed(path: &Path) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(s.trim().to_string()),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch stand-in for /sys/kernel/sched_ext, removed on drop.
    struct FakeSysfs(PathBuf);

    impl FakeSysfs {
        fn new(name: &str, state: Option<&str>, ops: Option<&str>) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "scx_cadence-preflight-{name}-{}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("root")).unwrap();
            if let Some(s) = state {
                fs::write(dir.join("state"), format!("{s}\n")).unwrap();
            }
            if let Some(o) = ops {
                fs::write(dir.join("root/ops"), format!("{o}\n")).unwrap();
            }
            Self(dir)
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn preempt_rt_is_read_from_the_realtime_file() {
        let sys = FakeSysfs::new("rt", None, None);
        assert!(!preempt_rt(&sys.0), "no realtime file: not PREEMPT_RT");
        fs::write(sys.0.join("realtime"), "1\n").unwrap();
        assert!(preempt_rt(&sys.0));
        fs::write(sys.0.join("realtime"), "0\n").unwrap();
        assert!(!preempt_rt(&sys.0));
    }

    #[test]
    fn kernel_without_sched_ext_is_named() {
        let sys = FakeSysfs::new("nosched", None, None);
        let err = check_sched_ext(&sys.0).unwrap_err().to_string();
        assert!(err.contains("this kernel has no sched_ext"), "{err}");
        assert!(err.contains("CONFIG_SCHED_CLASS_EXT"), "{err}");
    }

    #[test]
    fn non_root_is_refused_and_root_accepted() {
        let err = check_root(1000).unwrap_err().to_string();
        assert!(err.contains("must be run as root"), "{err}");
        check_root(0).unwrap();
    }

    #[test]
    fn a_loaded_scheduler_is_named() {
        let sys = FakeSysfs::new("loaded", Some("enabled"), Some("scx_bpfland_1.1.4"));
        let err = check_no_other_scheduler(&sys.0).unwrap_err().to_string();
        assert!(err.contains("already loaded (scx_bpfland_1.1.4"), "{err}");
    }

    #[test]
    fn a_scheduler_still_disabling_counts_as_loaded() {
        let sys = FakeSysfs::new("disabling", Some("disabling"), None);
        let err = check_no_other_scheduler(&sys.0).unwrap_err().to_string();
        assert!(err.contains("state disabling"), "{err}");
    }

    #[test]
    fn disabled_sched_ext_passes() {
        let sys = FakeSysfs::new("free", Some("disabled"), None);
        check_sched_ext(&sys.0).unwrap();
        check_no_other_scheduler(&sys.0).unwrap();
    }
}
