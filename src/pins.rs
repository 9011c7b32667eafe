//! The BPF maps pinned under bpffs (default /sys/fs/bpf/scx_cadence/), so
//! that `bpftool map dump pinned …` shows them with their BTF field names
//! while the scheduler runs. The pins go away when the Pins value is
//! dropped: at exit, after an error, and before a hotplug re-attach.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapMut, Object};
use log::{info, warn};
use nix::mount::{MsFlags, mount};
use nix::sys::statfs::{BPF_FS_MAGIC, statfs};

/// Where the maps are pinned unless told otherwise.
pub const DEFAULT_PIN_DIR: &str = "/sys/fs/bpf/scx_cadence";

/// The maps pinned, by their BPF names (bpf/*.bpf.c). With TASK_VIEW, the
/// only names scx_cadence creates or removes in the pin directory, which
/// other tools may share.
pub const PINNED_MAPS: &[&str] = &[
    "policy",
    "policy_state",
    "policy_cpu",
    "cpu_stats",
    "cpu_util",
    "freq_inject",
    "cpu_cpufreq",
    "cpufreq_ctl",
    "cpufreq_record",
    "cpufreq_trace",
    "util_inject",
    "place_topo",
    "idle_states",
    "idle_table",
    "idle_cpu",
    "idle_ctl",
    "idle_trace",
    "cgroups",
];

/// The task util view's iterator link, pinned beside the maps.
pub const TASK_VIEW: &str = "tasks";

/// Names earlier releases pinned and this one does not: still ours, so a
/// stale one left by a killed older instance is removed too. cpu_perf was
/// renamed cpu_cpufreq (one name per idea).
const FORMER_PINS: &[&str] = &["cpu_perf"];

/// Every name scx_cadence pins, or pinned before.
fn pinned_names() -> impl Iterator<Item = &'static str> {
    PINNED_MAPS
        .iter()
        .copied()
        .chain([TASK_VIEW])
        .chain(FORMER_PINS.iter().copied())
}

/// The pinned maps of one attached instance.
pub struct Pins {
    dir: PathBuf,
    pinned: Vec<PathBuf>,
}

/// True if @dir is on a bpffs mount.
fn on_bpffs(dir: &Path) -> bool {
    // statfs(2) f_type of a bpffs mount: BPF_FS_MAGIC in include/uapi/linux/magic.h.
    statfs(dir).is_ok_and(|st| st.filesystem_type() == BPF_FS_MAGIC)
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
    if let Err(e) = mount(
        Some("bpf"),
        "/sys/fs/bpf",
        Some("bpf"),
        MsFlags::empty(),
        None::<&str>,
    ) {
        bail!("mounting bpffs on /sys/fs/bpf: {}", std::io::Error::from(e));
    }
    info!("mounted bpffs on /sys/fs/bpf");
    Ok(())
}

impl Pins {
    /// Makes @dir ready for pins. Leftovers of an instance that was killed
    /// are removed first (the caller holds the instance lock); other files
    /// in @dir are left alone.
    pub fn create(dir: &Path) -> Result<Self> {
        crate::owned::check_dir(dir, "pin directory")?;
        ensure_bpffs(dir)?;
        if dir.exists() {
            remove_stale(dir)?;
        }
        // At most 0755 after the umask: never writable by others.
        crate::owned::create_dir(dir, 0o755, "pin directory")?;
        Ok(Self {
            dir: dir.to_path_buf(),
            pinned: Vec::new(),
        })
    }

    /// Pins each map of @obj named in PINNED_MAPS; all of them must exist.
    pub fn add_maps(&mut self, obj: &mut Object) -> Result<()> {
        let before = self.pinned.len();
        for mut map in obj.maps_mut() {
            if PINNED_MAPS.contains(&map.name().to_string_lossy().as_ref()) {
                self.add(&mut map)?;
            }
        }
        if self.pinned.len() - before != PINNED_MAPS.len() {
            bail!("the BPF object lacks some of the maps to pin: {PINNED_MAPS:?}");
        }
        Ok(())
    }

    /// Pins @map as <dir>/<map name>.
    fn add(&mut self, map: &mut MapMut) -> Result<()> {
        let name = map.name().to_string_lossy().into_owned();
        let path = self.dir.join(name);
        map.pin(&path)
            .with_context(|| format!("pinning {}", path.display()))?;
        self.pinned.push(path);
        Ok(())
    }

    /// Pins the task view @link as <dir>/TASK_VIEW; reading it runs it.
    pub fn add_task_view(&mut self, link: &mut libbpf_rs::Link) -> Result<()> {
        let path = self.dir.join(TASK_VIEW);
        link.pin(&path)
            .with_context(|| format!("pinning {}", path.display()))?;
        self.pinned.push(path);
        Ok(())
    }
}

/// Removes the pins in @dir left by an instance that could not clean up:
/// only the names scx_cadence pins, so that other tools' pins survive.
fn remove_stale(dir: &Path) -> Result<()> {
    let mut n = 0;
    for name in pinned_names() {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => n += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("removing stale pin {}", path.display()));
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owned::tests::Scratch;

    #[test]
    fn stale_pins_removed_are_ours_only() {
        let s = Scratch::new("stale-pins");
        for name in [
            "policy",
            "tasks",
            "cpu_perf",
            "other_tool_map",
            "cpu_cpufreq.bak",
        ] {
            std::fs::write(s.0.join(name), name).unwrap();
        }
        remove_stale(&s.0).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&s.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["cpu_cpufreq.bak", "other_tool_map"]);
    }

    #[test]
    fn a_symlinked_pin_dir_is_refused_before_anything_else() {
        let s = Scratch::new("pin-link");
        let target = s.0.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("policy"), "theirs").unwrap();
        let link = s.0.join("pins");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = Pins::create(&link).err().unwrap().to_string();
        assert_eq!(
            e,
            format!(
                "refusing {} as the pin directory: it is a symbolic link",
                link.display()
            )
        );
        assert_eq!(std::fs::read(target.join("policy")).unwrap(), b"theirs");
    }
}
