//! One scx_cadence at a time: an flock(2) on a file in /run/scx_cadence/,
//! taken before the control socket and the pins are touched, so that a
//! second instance fails without disturbing the first's.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use nix::fcntl::{Flock, FlockArg, OFlag};

/// The lock file; the kernel drops the lock when the process ends, however.
pub const LOCK_FILE: &str = "/run/scx_cadence/instance.lock";

/// Held for the life of the scheduler.
pub struct InstanceLock {
    _lock: Flock<File>,
}

/// Creates the directory holding @path (the @what), root-only (0700), if
/// it is missing; refuses one that is a symlink or that others control
/// (crate::owned).
pub fn create_parent_dir(path: &Path, what: &str) -> Result<()> {
    match path.parent() {
        Some(dir) => crate::owned::create_dir(dir, 0o700, &format!("{what} directory")),
        None => Ok(()),
    }
}

impl InstanceLock {
    pub fn take(path: &Path) -> Result<Self> {
        create_parent_dir(path, "instance lock")?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            // A symlink planted here would make us create or lock its target.
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Self { _lock: lock }),
            Err(_) => bail!(
                "another scx_cadence is running (it holds {})",
                path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owned::tests::Scratch;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_symlinked_lock_dir_or_lock_file_is_refused() {
        let s = Scratch::new("lock-link");
        let target = s.0.join("target");
        std::fs::create_dir(&target).unwrap();
        let link = s.0.join("run");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = InstanceLock::take(&link.join("instance.lock"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            format!(
                "refusing {} as the instance lock directory: it is a symbolic link",
                link.display()
            )
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);

        // A lock file that is a symlink would lock (or create) its target.
        let elsewhere = s.0.join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, target.join("instance.lock")).unwrap();
        assert!(InstanceLock::take(&target.join("instance.lock")).is_err());
        assert!(!elsewhere.exists());
    }

    #[test]
    fn a_lock_dir_others_control_is_refused() {
        let s = Scratch::new("lock-foreign");
        let dir = s.0.join("run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = InstanceLock::take(&dir.join("instance.lock"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            format!(
                "refusing {} as the instance lock directory: it is writable by group or others (mode 0777) without the sticky bit",
                dir.display()
            )
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        if crate::owned::euid() == 0 {
            // Owned by nobody (65534), as an unprivileged user's directory.
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let e = InstanceLock::take(&dir.join("instance.lock"))
                .err()
                .unwrap()
                .to_string();
            assert!(e.ends_with("it is owned by uid 65534, not uid 0"), "{e}");
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        }
    }
}
