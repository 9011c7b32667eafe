//! bench/hw/meter.py, the hardware kit's counters, against a fake sysfs tree
//! (METER_SYS) whose counters move by amounts chosen here: the energy of a
//! RAPL zone that wraps, C-state residency over two CPUs, the cpuidle
//! above/below sums and the sampled frequency, each worked by hand.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn put(root: &Path, rel: &str, value: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{value}\n")).unwrap();
}

fn meter(root: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/hw/meter.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .env("METER_SYS", root)
        .output()
        .expect("running python3 bench/hw/meter.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The counters of the tree: package-0's energy, core's, and per CPU the
/// time (us), usage, above and below of its states POLL and C6.
fn counters(root: &Path, pkg_uj: u64, core_uj: u64, c6_time_us: [u64; 2], c6_above: u64) {
    let rapl = "class/powercap/intel-rapl:0";
    put(root, &format!("{rapl}/name"), "package-0");
    put(root, &format!("{rapl}/energy_uj"), &pkg_uj.to_string());
    put(root, &format!("{rapl}/max_energy_range_uj"), "262143328850");
    put(root, &format!("{rapl}/intel-rapl:0:0/name"), "core");
    put(
        root,
        &format!("{rapl}/intel-rapl:0:0/energy_uj"),
        &core_uj.to_string(),
    );
    put(
        root,
        &format!("{rapl}/intel-rapl:0:0/max_energy_range_uj"),
        "262143328850",
    );
    // The kernel also links the subzone at the top (intel-rapl:0:0).
    let top = root.join("class/powercap/intel-rapl:0:0");
    if !top.exists() {
        std::os::unix::fs::symlink(root.join(format!("{rapl}/intel-rapl:0:0")), top).unwrap();
    }
    for (cpu, c6_us) in c6_time_us.iter().enumerate() {
        let idle = format!("devices/system/cpu/cpu{cpu}/cpuidle");
        put(root, &format!("{idle}/state0/name"), "POLL");
        for f in ["time", "usage", "above", "below"] {
            put(root, &format!("{idle}/state0/{f}"), "0");
        }
        put(root, &format!("{idle}/state1/name"), "C6");
        put(root, &format!("{idle}/state1/time"), &c6_us.to_string());
        put(root, &format!("{idle}/state1/usage"), "10");
        put(root, &format!("{idle}/state1/above"), &c6_above.to_string());
        put(root, &format!("{idle}/state1/below"), "1");
    }
}

fn value(lines: &str, metric: &str) -> String {
    lines
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{metric},")))
        .unwrap_or_else(|| panic!("no {metric} in:\n{lines}"))
        .to_string()
}

fn snap_time(path: &Path) -> f64 {
    let text = fs::read_to_string(path).unwrap();
    let after = text.split("\"t\": ").nth(1).unwrap();
    after.split(',').next().unwrap().parse().unwrap()
}

#[test]
fn energy_wraps_residency_and_counts_by_hand() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("scx_cadence-meter-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let root = dir.join("sys");
    fs::create_dir_all(&root).unwrap();
    let (before, after, freq) = (dir.join("a.json"), dir.join("b.json"), dir.join("freq"));

    counters(&root, 262_143_000_000, 5_000_000, [1_000_000, 2_000_000], 3);
    let sources = meter(&root, &["sources"]);
    assert!(
        sources.contains("energy: RAPL through powercap: pkg0 (package-0), core0 (core)"),
        "{sources}"
    );
    assert!(
        sources.contains("frequency: not measured: no cpufreq driver"),
        "{sources}"
    );
    assert!(
        sources.contains("C-states: cpuidle time, usage, above, below of POLL, C6"),
        "{sources}"
    );
    meter(&root, &["snap", before.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // package-0 wraps: 262143000000 -> 500000 of a 262143328850 range.
    // CPU 0 sleeps 100 ms more in C6, CPU 1 200 ms; above 3 -> 5 per CPU.
    counters(&root, 500_000, 7_500_000, [1_100_000, 2_200_000], 5);
    meter(&root, &["snap", after.to_str().unwrap()]);
    // Two CPUs' frequencies, twice, in kHz: the mean is 2.5 GHz.
    fs::write(&freq, "2000000 3000000\n2500000 2500000\n").unwrap();
    let lines = meter(
        &root,
        &[
            "diff",
            before.to_str().unwrap(),
            after.to_str().unwrap(),
            freq.to_str().unwrap(),
            "w",
        ],
    );

    // 500000 + 262143328850 - 262143000000 = 828850 uJ.
    assert_eq!(value(&lines, "w_energy_pkg0_j"), "0.829");
    // 7500000 - 5000000 uJ.
    assert_eq!(value(&lines, "w_energy_core0_j"), "2.500");
    // C6: 300 ms of sleep over 2 CPUs and the snapshots' interval.
    let seconds = snap_time(&after) - snap_time(&before);
    let c6: f64 = value(&lines, "w_residency_C6_pct").parse().unwrap();
    let want = 100.0 * 300_000.0 / (seconds * 1e6 * 2.0);
    assert!(
        (c6 - want).abs() <= 0.01,
        "C6 {c6}% against {want}% over {seconds} s"
    );
    assert_eq!(value(&lines, "w_residency_POLL_pct"), "0.00");
    // above 3 -> 5 on each of two CPUs; below and usage do not move.
    assert_eq!(value(&lines, "w_idle_above"), "4");
    assert_eq!(value(&lines, "w_idle_below"), "0");
    assert_eq!(value(&lines, "w_idle_usage"), "0");
    assert_eq!(value(&lines, "w_avg_mhz"), "2500");
    fs::remove_dir_all(&dir).unwrap();
}
