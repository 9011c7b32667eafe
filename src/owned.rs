//! The places scx_cadence writes to are named by the user (--ctl-socket,
//! --pin-dir) and may be shared: it works only in directories nobody else
//! can swap files in, and replaces only files it could have made itself.

use std::fs::Metadata;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// st_mode bits: group- and other-writable (S_IWGRP | S_IWOTH), and the
/// sticky bit (S_ISVTX), from inode(7).
const GROUP_OTHER_WRITE: u32 = 0o022;
const STICKY: u32 = 0o1000;

/// The effective uid: the owner of everything this process creates.
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// @dir without trailing slashes (so that lstat does not follow a final
/// symlink), "." for the empty parent of a bare file name.
fn normalize(dir: &Path) -> PathBuf {
    let d: PathBuf = dir.components().collect();
    if d.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        d
    }
}

/// Why @m, the lstat of a directory, is not safe for us (uid @uid) to
/// create and remove files in, or None if it is. Writable by others is
/// allowed only with the sticky bit, under which they cannot remove or
/// rename our files (and theirs are refused by their owner).
fn unsafe_dir(m: &Metadata, uid: u32) -> Option<String> {
    if m.file_type().is_symlink() {
        return Some("it is a symbolic link".into());
    }
    if !m.is_dir() {
        return Some("it is not a directory".into());
    }
    if m.uid() != uid {
        return Some(format!("it is owned by uid {}, not uid {uid}", m.uid()));
    }
    let mode = m.mode() & 0o7777;
    if mode & GROUP_OTHER_WRITE != 0 && mode & STICKY == 0 {
        return Some(format!(
            "it is writable by group or others (mode {mode:04o}) without the sticky bit"
        ));
    }
    None
}

/// Refuses @dir, which is to hold the @what, unless it is missing (the
/// caller then creates it) or a real directory of ours that no one else can
/// swap files in. Nothing is changed either way.
pub fn check_dir(dir: &Path, what: &str) -> Result<()> {
    let dir = normalize(dir);
    let m = match std::fs::symlink_metadata(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("checking {}", dir.display())),
    };
    if let Some(why) = unsafe_dir(&m, euid()) {
        bail!("refusing {} as the {what}: {why}", dir.display());
    }
    Ok(())
}

/// Checks @dir (see check_dir), creates it with @mode (less the umask) if
/// it is missing, and checks the result.
pub fn create_dir(dir: &Path, mode: u32, what: &str) -> Result<()> {
    check_dir(dir, what)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    check_dir(dir, what)
}

/// Removes the socket a killed instance left at @path, if any; anything
/// else there (a file, a symlink, another user's socket) is refused and
/// kept. The caller holds the instance lock, so no live instance owns it.
pub fn remove_stale_socket(path: &Path) -> Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("checking {}", path.display())),
    };
    if !m.file_type().is_socket() {
        bail!(
            "refusing to replace {}: it is not a socket (choose another --ctl-socket)",
            path.display()
        );
    }
    if m.uid() != euid() {
        bail!(
            "refusing to replace {}: it is a socket of uid {}, not uid {}",
            path.display(),
            m.uid(),
            euid()
        );
    }
    std::fs::remove_file(path).with_context(|| format!("removing stale {}", path.display()))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A scratch directory, removed on drop.
    pub struct Scratch(pub PathBuf);

    impl Scratch {
        pub fn new(name: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("scx_cadence-owned-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            Self(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn lstat(p: &Path) -> Metadata {
        std::fs::symlink_metadata(p).unwrap()
    }

    #[test]
    fn directories_others_can_write_or_swap_are_unsafe() {
        let s = Scratch::new("modes");
        let d = s.0.join("d");
        std::fs::create_dir(&d).unwrap();
        let me = euid();
        for (mode, ok) in [
            (0o700, true),
            (0o755, true),
            (0o775, false),
            (0o757, false),
            (0o1777, true),
            (0o1770, true),
        ] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(unsafe_dir(&lstat(&d), me).is_none(), ok, "mode {mode:o}");
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            unsafe_dir(&lstat(&d), me.wrapping_add(1)).unwrap(),
            format!("it is owned by uid {me}, not uid {}", me.wrapping_add(1))
        );
        let link = s.0.join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        // With or without a trailing slash, the link itself is judged.
        for p in [link.clone(), link.join("")] {
            let e = check_dir(&p, "test directory").unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "refusing {} as the test directory: it is a symbolic link",
                    link.display()
                )
            );
        }
        check_dir(&s.0.join("missing"), "test directory").unwrap();
    }
}
