use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use super::*;

fn entry(parent_id: u64, level: u32, active: i64, contributed: u64) -> Entry {
    Entry {
        parent_id,
        level,
        cpu_weight: 100,
        active,
        contributed,
        ..Entry::default()
    }
}

#[test]
fn shares_multiply_level_by_level_and_idle_holds_none() {
    // root (1) holds p (2, 1024) and q (3, 1024), both active; p holds
    // x (4) and y (5), 1024 each, y idle, so p's active weight is x's. The
    // root's tasks weigh 2048 more.
    let mut e = BTreeMap::new();
    e.insert(1, entry(0, 0, 1024 + 1024 + 2048, 0));
    e.insert(2, entry(1, 1, 1024, 1024));
    e.insert(3, entry(1, 1, 4096, 1024));
    e.insert(4, entry(2, 2, 4096, 1024));
    e.insert(5, entry(2, 2, 0, 0));
    // q: 1024 of the root's 4096. x: all of p, p a quarter. y: nothing.
    assert_eq!(share_ppm(&e, 1), 1_000_000);
    assert_eq!(share_ppm(&e, 3), 250_000);
    assert_eq!(share_ppm(&e, 4), 250_000);
    assert_eq!(share_ppm(&e, 5), 0);
    // A cgroup the map does not hold: no share to report.
    assert_eq!(share_ppm(&e, 9), 1_000_000);
}

#[test]
fn cgroup_ids_are_directory_inodes_with_paths() {
    let dir = std::env::temp_dir().join(format!("scx_cadence-cgroups-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    std::fs::write(dir.join("a/cpu.stat"), "usage_usec 1234\nuser_usec 1000\n").unwrap();
    let p = paths(&dir);
    let ino = |rel: &str| std::fs::metadata(dir.join(rel)).unwrap().ino();
    assert_eq!(p[&ino("a/b")], "/a/b");
    assert_eq!(p[&ino("")], "/");
    assert_eq!(usage_us(&dir.join("a")), Some(1234));
    assert_eq!(usage_us(&dir.join("a/b")), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
