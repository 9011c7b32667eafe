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
            "this kernel has no sched_ext: {} is missing (it needs CONFIG_SCHED_CLASS_EXT=y, Linux {}.{} or later)",
            state.display(),
            OLDEST_KERNEL.0,
            OLDEST_KERNEL.1
        );
    }
    Ok(())
}

/// The oldest kernel scx_cadence runs on: the oldest its VM tests boot
/// (Debian trixie-backports' 6.16, tests/vm/setup.sh). Older sched_ext
/// kernels differ where it matters and are not tested: 6.12 has no
/// SCX_ENQ_CPU_SELECTED, so every enqueue would look selected and the
/// hold would never run; before 6.12.11 (30dd3b13f9de) a CPU whose
/// dispatch() refills prev's slice with SCX_OPS_ENQ_LAST goes idle with
/// prev parked; before 6.15 struct_ops programs cannot read APERF/MPERF.
pub const OLDEST_KERNEL: (u32, u32) = (6, 16);

/// Where the running kernel's release string is.
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// (major, minor) of a kernel release string such as "6.16.12+deb13-cloud-amd64".
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The kernel in @osrelease must be OLDEST_KERNEL or later.
pub fn check_kernel_version(osrelease: &Path) -> Result<()> {
    let release = read_trimmed(osrelease)?;
    let Some(version) = kernel_version(&release) else {
        bail!(
            "cannot tell the kernel's version from {}: '{release}'",
            osrelease.display()
        );
    };
    if version < OLDEST_KERNEL {
        bail!(
            "Linux {release} is older than {}.{}, the oldest kernel scx_cadence is tested on: use {}.{} or later",
            OLDEST_KERNEL.0,
            OLDEST_KERNEL.1,
            OLDEST_KERNEL.0,
            OLDEST_KERNEL.1
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

/// All four, in the order a user would fix them.
pub fn check_all(sysfs: &Path, osrelease: &Path) -> Result<()> {
    check_sched_ext(sysfs)?;
    check_kernel_version(osrelease)?;
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
    fn kernels_older_than_the_oldest_tested_are_refused() {
        assert_eq!(kernel_version("6.16.12+deb13-cloud-amd64"), Some((6, 16)));
        assert_eq!(kernel_version("7.2.13+deb14-cloud-amd64"), Some((7, 2)));
        assert_eq!(kernel_version("6.12.0"), Some((6, 12)));
        assert_eq!(kernel_version("6"), None);
        let dir =
            std::env::temp_dir().join(format!("scx_cadence-osrelease-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("osrelease");
        for (release, ok) in [
            ("6.12.48+deb13-amd64", false),
            ("6.15.9", false),
            ("6.16.12+deb13-cloud-amd64", true),
            ("7.2.13", true),
            ("10.0.1", true),
        ] {
            fs::write(&file, format!("{release}\n")).unwrap();
            let r = check_kernel_version(&file);
            assert_eq!(r.is_ok(), ok, "{release}: {r:?}");
            if let Err(e) = r {
                let msg = format!("{e:#}");
                assert!(
                    msg.contains(release) && msg.contains("6.16 or later"),
                    "{msg}"
                );
                assert_eq!(msg.lines().count(), 1, "{msg}");
            }
        }
        fs::write(&file, "garbage\n").unwrap();
        assert!(check_kernel_version(&file).is_err());
        fs::remove_dir_all(&dir).unwrap();
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
