//! File handling of the PM QoS writer on a fake sysfs tree in a scratch
//! directory. The values follow drivers/base/power/sysfs.c (reads "0" for no
//! constraint, "n/a" for 0 us); what the kernel does with them is the VM
//! test's part.

use super::*;
use crate::owned::tests::Scratch;

/// A sysfs root under @s with one pm_qos_resume_latency_us per (cpu, text),
/// holding text and a newline as the kernel's show does.
pub(crate) fn fake_sysfs(s: &Scratch, cpus: &[(u32, &str)]) -> PathBuf {
    let root = s.0.join("sys");
    for &(cpu, text) in cpus {
        let path = qos_path(&root, cpu);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{text}\n")).unwrap();
    }
    root
}

/// CPU @cpu's file under @sysfs, without its newline.
pub(crate) fn file(sysfs: &Path, cpu: u32) -> String {
    std::fs::read_to_string(qos_path(sysfs, cpu))
        .unwrap()
        .trim()
        .to_string()
}

fn saved(run: &Path) -> Option<String> {
    std::fs::read_to_string(run.join(SAVED_FILE)).ok()
}

fn set(cpus: &[u32]) -> BTreeSet<u32> {
    cpus.iter().copied().collect()
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn the_file_text_parses_as_the_kernel_shows_it() {
    assert_eq!(parse_limit("0\n").unwrap(), None);
    assert_eq!(parse_limit("n/a\n").unwrap(), Some(0));
    assert_eq!(parse_limit("100\n").unwrap(), Some(100));
    assert_eq!(parse_limit("2147483646").unwrap(), Some(MAX_LIMIT_US));
    for bad in ["", "-1", "+5", "abc", "0x10", "1 2", "2147483647", "N/A"] {
        assert!(parse_limit(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        parse_limit("-1").unwrap_err().to_string(),
        "unexpected resume latency \"-1\" (expected 0, n/a or a number of microseconds up to 2147483646)"
    );
    // What we write reads back as what we asked for.
    for limit in [None, Some(0), Some(1), Some(100), Some(MAX_LIMIT_US)] {
        assert_eq!(parse_limit(&limit_text(limit)).unwrap(), limit);
    }
    assert_eq!(limit_text(None), "0");
    assert_eq!(limit_text(Some(0)), "n/a");
    assert_eq!(limit_text(Some(u32::MAX)), "2147483646");

    let s = Scratch::new("qos-read");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "n/a"), (2, "100"), (3, "x")]);
    assert_eq!(read_limit(&sysfs, 0).unwrap(), None);
    assert_eq!(read_limit(&sysfs, 1).unwrap(), Some(0));
    assert_eq!(read_limit(&sysfs, 2).unwrap(), Some(100));
    let e = format!("{:#}", read_limit(&sysfs, 3).unwrap_err());
    assert!(
        e.starts_with(&format!("in {}: ", qos_path(&sysfs, 3).display())),
        "{e}"
    );
    assert!(read_limit(&sysfs, 4).is_err());
}

#[test]
fn the_run_dir_is_the_instance_locks() {
    assert_eq!(
        Path::new(crate::instance::LOCK_FILE).parent().unwrap(),
        Path::new(RUN_DIR)
    );
}

#[test]
fn originals_are_saved_before_the_first_write_and_restored_exactly() {
    let s = Scratch::new("qos-restore");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "n/a"), (2, "100")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    assert_eq!(saved(&run), None, "nothing saved before a write");

    assert!(q.request(0, Some(50), t0));
    assert_eq!(file(&sysfs, 0), "50");
    assert_eq!(saved(&run).unwrap(), "0 0 50\n");
    assert!(q.request(1, None, t0));
    assert_eq!(file(&sysfs, 1), "0");
    assert!(q.request(2, Some(0), t0));
    assert_eq!(file(&sysfs, 2), "n/a");
    assert_eq!(saved(&run).unwrap(), "0 0 50\n1 n/a 0\n2 100 n/a\n");
    // A second write keeps the first original.
    assert!(q.request(0, Some(7), t0 + MIN_INTERVAL));
    assert_eq!(saved(&run).unwrap(), "0 0 50 7\n1 n/a 0\n2 100 n/a\n");

    q.restore_all().unwrap();
    assert_eq!(
        [file(&sysfs, 0), file(&sysfs, 1), file(&sysfs, 2)],
        ["0", "n/a", "100"]
    );
    assert_eq!(saved(&run), None);
    q.restore_all().unwrap();
    assert_eq!(file(&sysfs, 0), "0");

    // Usable again after a restore: it saves anew.
    assert!(q.request(2, Some(9), t0 + 2 * MIN_INTERVAL));
    assert_eq!(saved(&run).unwrap(), "2 100 9\n");
    drop(q);
    assert_eq!(file(&sysfs, 2), "100");
    assert_eq!(saved(&run), None);
}

#[test]
fn drop_restores() {
    let s = Scratch::new("qos-drop");
    let sysfs = fake_sysfs(&s, &[(0, "n/a"), (1, "20")]);
    let run = s.0.join("run");
    {
        let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1])).unwrap();
        assert!(q.request(0, Some(3), Instant::now()));
        assert!(q.request(1, None, Instant::now()));
        assert_eq!([file(&sysfs, 0), file(&sysfs, 1)], ["3", "0"]);
    }
    assert_eq!([file(&sysfs, 0), file(&sysfs, 1)], ["n/a", "20"]);
    assert_eq!(saved(&run), None);
}

#[test]
fn the_next_open_after_a_kill_restores_the_originals() {
    let s = Scratch::new("qos-kill");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "100"), (2, "n/a")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    assert!(q.request(0, Some(50), t0));
    assert!(q.request(1, Some(0), t0));
    assert!(q.request(0, Some(60), t0 + MIN_INTERVAL));
    // kill -9: no Drop, no restore.
    std::mem::forget(q);
    assert_eq!(
        [file(&sysfs, 0), file(&sysfs, 1), file(&sysfs, 2)],
        ["60", "n/a", "n/a"]
    );
    assert_eq!(saved(&run).unwrap(), "0 0 50 60\n1 100 n/a\n");

    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    assert_eq!(
        [file(&sysfs, 0), file(&sysfs, 1), file(&sysfs, 2)],
        ["0", "100", "n/a"]
    );
    assert_eq!(saved(&run), None);
    assert!(q.warnings().is_empty());
    // What this run saves is the original, not what the killed run wrote.
    assert!(q.request(0, Some(5), t0));
    assert_eq!(saved(&run).unwrap(), "0 0 5\n");
    // And it is killed too: the third start still finds the original.
    std::mem::forget(q);
    let q = QosLimits::open(&sysfs, &run, &set(&[0])).unwrap();
    assert_eq!(file(&sysfs, 0), "0");
    drop(q);
}

/// After a kill -9 the next start tells the values the killed run may have
/// left (the limit in force, the one it was writing) from another writer's
/// (issue 50): it restores over its own, and leaves another writer's. A line
/// of an older saved file, without those values, is restored as before.
#[test]
fn the_next_open_after_a_kill_leaves_what_another_writer_set_since() {
    let s = Scratch::new("qos-kill-foreign");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "100"), (2, "n/a"), (3, "0")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2, 3])).unwrap();
    for cpu in 0..4 {
        assert!(q.request(cpu, Some(40), t0));
    }
    assert!(q.request(3, Some(30), t0 + MIN_INTERVAL));
    std::mem::forget(q);
    assert_eq!(
        saved(&run).unwrap(),
        "0 0 40\n1 100 40\n2 n/a 40\n3 0 40 30\n"
    );
    // After the kill: a tuning daemon sets CPU 0 to 7 us and CPU 1 to no
    // limit. CPU 2 still holds our 40; CPU 3 holds 40, as if the run died
    // between storing the line and writing 30.
    std::fs::write(qos_path(&sysfs, 0), "7\n").unwrap();
    std::fs::write(qos_path(&sysfs, 1), "0\n").unwrap();
    std::fs::write(qos_path(&sysfs, 3), "40\n").unwrap();
    let q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2, 3])).unwrap();
    assert_eq!(
        [0, 1, 2, 3].map(|cpu| file(&sysfs, cpu)),
        ["7", "0", "n/a", "0"]
    );
    assert_eq!(saved(&run), None);
    // The new originals are what the files hold now.
    let want: BTreeMap<u32, Option<u32>> =
        [(0, Some(7)), (1, None), (2, Some(0)), (3, None)].into();
    assert_eq!(q.originals(), want);
    drop(q);

    // An older file's line has no values of ours: restored as before.
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join(SAVED_FILE), "0 n/a\n").unwrap();
    let _q = QosLimits::open(&sysfs, &run, &set(&[0])).unwrap();
    assert_eq!(file(&sysfs, 0), "n/a");
}

/// A CPU whose restore failed at open stays saved with its value unknown
/// (a sysfs write can fail where the probe's open does not): its saved
/// line then says what may be ours. A value the killed run may have left
/// is written over, and the new line keeps the value found and the one
/// written; another writer's value is left, with the CPU.
#[test]
fn a_cpu_whose_restore_failed_is_judged_by_its_saved_line() {
    let s = Scratch::new("qos-unknown");
    let sysfs = fake_sysfs(&s, &[(0, "30"), (1, "30"), (2, "n/a")]);
    let run = s.0.join("run");
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    // As open() leaves a CPU whose restore failed (the restore path itself
    // is an_original_that_cannot_be_restored_stays_saved's).
    for cpu in [0, 1, 2] {
        q.cpus.get_mut(&cpu).unwrap().in_force = Some(u32::MAX);
        let line = Saved {
            original: "n/a".into(),
            ours: vec!["40".into(), "30".into()],
        };
        q.saved.insert(cpu, line);
    }
    std::fs::write(qos_path(&sysfs, 1), "77\n").unwrap();
    let t0 = Instant::now();
    assert!(q.request(0, Some(20), t0));
    assert!(!q.request(1, Some(20), t0));
    // CPU 2 holds its original, and gets it written: the line still names
    // a value of ours (the original), so it does not read as an older
    // file's line.
    assert!(q.request(2, Some(0), t0));
    assert_eq!([0, 1, 2].map(|cpu| file(&sysfs, cpu)), ["20", "77", "n/a"]);
    assert_eq!(saved(&run).unwrap(), "0 n/a 30 20\n2 n/a n/a\n");
    assert_eq!(q.warned(), set(&[1]));
    // Killed now, the next start restores CPU 0 over its 20, and leaves the
    // value another writer then gave CPU 2.
    std::mem::forget(q);
    std::fs::write(qos_path(&sysfs, 2), "5\n").unwrap();
    let _q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    assert_eq!([0, 1, 2].map(|cpu| file(&sysfs, cpu)), ["n/a", "77", "5"]);
}

#[test]
fn writes_are_rate_limited_and_the_last_request_catches_up() {
    let s = Scratch::new("qos-rate");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "0")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1])).unwrap();

    // The limit already in force is not written (nor saved).
    assert!(!q.request(0, None, t0));
    assert_eq!(saved(&run), None);

    assert!(q.request(0, Some(10), t0));
    assert!(!q.request(0, Some(20), t0 + 100 * MS));
    assert!(!q.request(0, Some(30), t0 + 200 * MS), "the latest is kept");
    assert_eq!(file(&sysfs, 0), "10");
    // Other CPUs have their own interval.
    assert!(q.request(1, Some(10), t0 + 100 * MS));
    assert_eq!(q.flush(t0 + 249 * MS), 0);
    assert_eq!(file(&sysfs, 0), "10");
    assert_eq!(q.flush(t0 + 250 * MS), 1);
    assert_eq!(file(&sysfs, 0), "30");
    assert_eq!(q.flush(t0 + 260 * MS), 0, "nothing pending on either CPU");

    // Same value: nothing written; a request back to the value in force
    // drops the kept one.
    assert!(!q.request(0, Some(30), t0 + 300 * MS));
    assert!(!q.request(0, Some(40), t0 + 350 * MS));
    assert!(!q.request(0, Some(30), t0 + 400 * MS));
    assert_eq!(q.flush(t0 + 600 * MS), 0);
    assert_eq!(file(&sysfs, 0), "30");

    // The next request after the interval writes at once.
    assert!(q.request(0, Some(40), t0 + 600 * MS));
    assert_eq!(file(&sysfs, 0), "40");
    // Limits too large for the file are clamped, and equal once clamped.
    assert!(q.request(0, Some(u32::MAX), t0 + 850 * MS));
    assert_eq!(file(&sysfs, 0), "2147483646");
    assert!(!q.request(0, Some(MAX_LIMIT_US), t0 + 1100 * MS));
    drop(q);
    assert_eq!([file(&sysfs, 0), file(&sysfs, 1)], ["0", "0"]);
}

#[test]
fn nothing_is_written_unless_the_original_is_saved() {
    let s = Scratch::new("qos-nosave");
    let sysfs = fake_sysfs(&s, &[(0, "n/a"), (1, "0")]);
    let run = s.0.join("run");
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1])).unwrap();
    // A directory where the saved file goes: the rename fails.
    std::fs::create_dir(run.join(SAVED_FILE)).unwrap();
    let t0 = Instant::now();
    assert!(!q.request(0, Some(5), t0));
    assert!(!q.request(1, Some(5), t0));
    assert_eq!([file(&sysfs, 0), file(&sysfs, 1)], ["n/a", "0"]);
    assert!(q.warnings().is_empty(), "the CPUs are fine");
    std::fs::remove_dir(run.join(SAVED_FILE)).unwrap();
    assert!(q.request(0, Some(5), t0));
    assert_eq!(saved(&run).unwrap(), "0 n/a 5\n");
}

#[test]
fn a_cpu_without_a_writable_file_is_warned_about_once_and_the_rest_work() {
    let s = Scratch::new("qos-warn");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (3, "abc"), (4, "0"), (5, "0")]);
    // cpu1: no file at all (a kernel without it, or no such CPU).
    // cpu2: a real sysfs file that the kernel refuses to open for writing,
    // even for root (kernfs: no store method).
    let read_only = Path::new("/sys/devices/system/cpu/cpu0/topology/core_id");
    assert!(
        read_only.exists(),
        "the host has no {}",
        read_only.display()
    );
    let cpu2 = qos_path(&sysfs, 2);
    std::fs::create_dir_all(cpu2.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(read_only, &cpu2).unwrap();
    assert!(
        std::fs::read_to_string(&cpu2).is_ok(),
        "readable, so only writing fails"
    );
    let run = s.0.join("run");
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2, 3, 4, 5])).unwrap();
    assert_eq!(q.warned(), set(&[1, 2, 3]));
    assert_eq!(q.warnings().len(), 3);
    assert!(
        q.warnings()[1]
            .1
            .starts_with(&format!("opening {} for writing: ", cpu2.display())),
        "{:?}",
        q.warnings()[1]
    );

    // cpu4's file disappears after open: its first write fails.
    std::fs::remove_file(qos_path(&sysfs, 4)).unwrap();
    let t0 = Instant::now();
    for i in 0..3 {
        let now = t0 + i * MIN_INTERVAL;
        let us = Some(10 + i);
        assert!(q.request(0, us, now));
        assert!(q.request(5, us, now));
        for cpu in [1, 2, 3, 4, 9] {
            assert!(!q.request(cpu, us, now), "cpu{cpu}");
        }
    }
    assert_eq!([file(&sysfs, 0), file(&sysfs, 5)], ["12", "12"]);
    assert_eq!(q.warned(), set(&[1, 2, 3, 4, 9]));
    assert_eq!(q.warnings().len(), 5, "{:?}", q.warnings());
    // Nothing was changed on cpu4, so nothing is kept to restore there.
    assert_eq!(saved(&run).unwrap(), "0 0 11 12\n5 0 11 12\n");
    assert_eq!(std::fs::read_to_string(read_only).unwrap().trim(), "0");
    q.restore_all().unwrap();
    assert_eq!([file(&sysfs, 0), file(&sysfs, 5)], ["0", "0"]);
}

#[test]
fn a_saved_file_that_does_not_parse_is_refused_and_nothing_changes() {
    let s = Scratch::new("qos-badsaved");
    let sysfs = fake_sysfs(&s, &[(0, "50"), (1, "60")]);
    let run = s.0.join("run");
    std::fs::create_dir(&run).unwrap();
    for (text, err) in [
        (
            "0 0\nbogus\n",
            "line 2: expected \"CPU ORIGINAL [OURS [OURS]]\": \"bogus\"",
        ),
        (
            "0 0 5 6 7\n",
            "line 1: expected \"CPU ORIGINAL [OURS [OURS]]\": \"0 0 5 6 7\"",
        ),
        ("0 0 5 -1\n", "line 1: unexpected resume latency \"-1\""),
        ("0 0\n1 -1\n", "line 2: unexpected resume latency \"-1\""),
        ("x 0\n", "line 1: bad CPU number: \"x 0\""),
        ("1 0\n1 n/a\n", "line 2: CPU saved twice: \"1 n/a\""),
    ] {
        std::fs::write(run.join(SAVED_FILE), text).unwrap();
        let e = QosLimits::open(&sysfs, &run, &set(&[0, 1]))
            .err()
            .unwrap()
            .to_string();
        let path = run.join(SAVED_FILE);
        assert!(e.starts_with(&format!("{} {err}", path.display())), "{e}");
        assert!(e.ends_with("(remove the file if the values it saved no longer matter)"));
        assert_eq!([file(&sysfs, 0), file(&sysfs, 1)], ["50", "60"]);
        assert_eq!(saved(&run).unwrap(), text);
    }
}

#[test]
fn an_original_that_cannot_be_restored_stays_saved() {
    let s = Scratch::new("qos-keep");
    let sysfs = fake_sysfs(&s, &[(0, "50"), (1, "0")]);
    let run = s.0.join("run");
    std::fs::create_dir(&run).unwrap();
    // cpu1's file is not writable now; cpu7 is gone (no device directory):
    // its request went with it.
    let cpu1 = qos_path(&sysfs, 1);
    std::fs::remove_file(&cpu1).unwrap();
    std::fs::create_dir(&cpu1).unwrap();
    std::fs::write(run.join(SAVED_FILE), "0 0\n1 n/a\n7 100\n").unwrap();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1])).unwrap();
    assert_eq!(file(&sysfs, 0), "0");
    assert_eq!(saved(&run).unwrap(), "1 n/a\n");
    assert_eq!(q.warned(), set(&[1]));
    let e = q.restore_all().unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "could not restore one CPU (kept in {}): cpu1: opening {} for writing: ",
            run.join(SAVED_FILE).display(),
            cpu1.display()
        )),
        "{e}"
    );
    // Writable again: the next start restores it.
    std::fs::remove_dir(&cpu1).unwrap();
    std::fs::write(&cpu1, "7\n").unwrap();
    std::mem::forget(q);
    let _q = QosLimits::open(&sysfs, &run, &set(&[0, 1])).unwrap();
    assert_eq!(file(&sysfs, 1), "n/a");
    assert_eq!(saved(&run), None);
}

#[test]
fn originals_and_the_limited_count_follow_the_file() {
    let s = Scratch::new("qos-count");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "n/a"), (2, "777")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2])).unwrap();
    let want: BTreeMap<u32, Option<u32>> = [(0, None), (1, Some(0)), (2, Some(777))].into();
    assert_eq!(q.originals(), want);
    assert_eq!(q.limited(), 0);
    assert!(q.request(0, Some(3), t0));
    assert!(q.request(2, Some(11), t0));
    assert_eq!(q.limited(), 2);
    // Back to its original: not limited, though written by us.
    assert!(q.request(2, Some(777), t0 + MIN_INTERVAL));
    assert_eq!(q.limited(), 1);
    // CPU 1 written with its own original, then a limit kept for later
    // (inside the interval): not in force, not counted until written.
    assert!(!q.request(1, Some(0), t0));
    assert!(q.request(1, Some(7), t0));
    assert_eq!(q.limited(), 2);
    assert!(!q.request(1, Some(0), t0 + MS));
    assert!(!q.request(1, Some(5), t0 + 2 * MS));
    assert_eq!(q.limited(), 2);
    assert_eq!(q.flush(t0 + MIN_INTERVAL), 1);
    assert_eq!(file(&sysfs, 1), "5");
    assert_eq!(q.limited(), 2);
    q.restore_all().unwrap();
    assert_eq!(q.limited(), 0);
    assert_eq!(q.originals(), want, "the originals outlive a restore");
}

/// Another writer's value is the CPU's from then on (issue 50): seen before
/// a write, it is not overwritten and nothing is restored over it, and the
/// CPU is left alone; seen at the restore, it stays. CPUs nobody else
/// touched are restored as before.
#[test]
fn a_value_another_writer_set_is_neither_overwritten_nor_restored_over() {
    let s = Scratch::new("qos-foreign");
    let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "0"), (2, "0"), (3, "0")]);
    let run = s.0.join("run");
    let t0 = Instant::now();
    let mut q = QosLimits::open(&sysfs, &run, &set(&[0, 1, 2, 3])).unwrap();
    for cpu in 0..3 {
        assert!(q.request(cpu, Some(40), t0));
    }
    assert_eq!(saved(&run).unwrap(), "0 0 40\n1 0 40\n2 0 40\n");
    // Between two of our writes, someone sets CPU 0 to 7 us.
    std::fs::write(qos_path(&sysfs, 0), "7\n").unwrap();
    assert!(!q.request(0, Some(30), t0 + MIN_INTERVAL));
    assert_eq!(file(&sysfs, 0), "7");
    assert_eq!(saved(&run).unwrap(), "1 0 40\n2 0 40\n");
    assert_eq!(q.warned(), set(&[0]));
    assert!(
        q.warnings()[0]
            .1
            .contains("another writer set it to 7 (it was 40)")
    );
    assert!(!q.originals().contains_key(&0));
    // Left alone from then on.
    assert!(!q.request(0, Some(20), t0 + 2 * MIN_INTERVAL));
    assert_eq!(file(&sysfs, 0), "7");
    // Before our first write to CPU 3, someone sets it to n/a: ours is
    // never written, and nothing of CPU 3 is saved.
    std::fs::write(qos_path(&sysfs, 3), "n/a\n").unwrap();
    assert!(!q.request(3, Some(40), t0));
    assert_eq!(file(&sysfs, 3), "n/a");
    assert_eq!(saved(&run).unwrap(), "1 0 40\n2 0 40\n");
    // After our last write to CPU 1, someone sets 900: the restore leaves
    // it, and restores CPU 2 (untouched by others) to its original.
    std::fs::write(qos_path(&sysfs, 1), "900\n").unwrap();
    q.restore_all().unwrap();
    assert_eq!(
        [
            file(&sysfs, 0),
            file(&sysfs, 1),
            file(&sysfs, 2),
            file(&sysfs, 3)
        ],
        ["7", "900", "0", "n/a"]
    );
    assert_eq!(saved(&run), None);
    assert_eq!(q.limited(), 0);
}
