//! The loader's readers over five real machines' sysfs
//! (tests/fixtures/machines/, each value with its public source in the
//! machine's SOURCES.md): the frequencies and the freq_max `auto` resolves
//! to, the cpufreq driver line (the warning an active-mode pstate driver
//! gets), hybrid or not, the idle states, and the topology. The expected
//! values are worked by hand from the kernel's rules in
//! tests/fixtures/machines/README.md. MSRs are not part of the fixtures:
//! on Intel the loader reads them first, so these are its values where the
//! msr module cannot be read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::freq::{self, FreqMax, FreqTable, Governors};
use crate::idle::states::IdleStates;
use crate::topology;

fn machine(name: &str) -> (PathBuf, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/machines")
        .join(name);
    let cpuinfo = std::fs::read_to_string(dir.join("cpuinfo")).unwrap();
    (dir.join("sys"), cpuinfo)
}

/// What the loader makes of one machine.
#[derive(Debug)]
struct Seen {
    freq: FreqTable,
    /// freq_max `auto`, MHz.
    auto_mhz: Option<u32>,
    governors: String,
    /// (cpu, cpu_freq_max_scale) when hybrid.
    hybrid: Vec<(usize, u16)>,
    hybrid_note: String,
    /// CPU 0's idle states: (name, exit latency us, target residency us).
    idle0: Vec<(String, u32, u32)>,
    /// Every CPU has CPU 0's states.
    idle_same: bool,
    small: Vec<BTreeSet<u32>>,
    big: Vec<BTreeSet<u32>>,
    llc: Vec<BTreeSet<u32>>,
}

fn see(name: &str, x86: bool) -> Seen {
    let (root, cpuinfo) = machine(name);
    let mut freq = FreqTable::default();
    freq.read_sysfs(&root, &cpuinfo, x86);
    let auto_mhz = freq.resolve(FreqMax::Auto).unwrap().mhz;
    let (hier, _) = topology::read_hierarchy(&root, None).unwrap();
    let online: BTreeSet<u32> = hier.cpus.keys().copied().collect();
    let cpus: Vec<usize> = online.iter().map(|&c| c as usize).collect();
    let hybrid = freq::probe_hybrid(&root, &cpuinfo, &cpus);
    let states = IdleStates::read(&root, None, &online).unwrap();
    let idle0: Vec<(String, u32, u32)> = states.cpus[&0]
        .iter()
        .map(|s| (s.name.clone(), s.exit_latency_us, s.target_residency_us))
        .collect();
    let idle_same = states.cpus.values().all(|c| c == &states.cpus[&0]);
    Seen {
        freq,
        auto_mhz,
        governors: Governors::probe(&root).summary(),
        hybrid: hybrid.scale,
        hybrid_note: hybrid.note,
        idle0,
        idle_same,
        small: hier.small,
        big: hier.big,
        llc: hier.llc,
    }
}

fn sets(groups: &[&[u32]]) -> Vec<BTreeSet<u32>> {
    groups.iter().map(|g| g.iter().copied().collect()).collect()
}

fn states(list: &[(&str, u32, u32)]) -> Vec<(String, u32, u32)> {
    list.iter()
        .map(|&(n, l, r)| (n.to_string(), l, r))
        .collect()
}

const PSTATE_ACTIVE: &str =
    "cpufreq: intel_pstate active (powersave), hints not applied (needs the schedutil governor)";

/// i5-6200U: intel_pstate active, 2.8 GHz max, 2.3 GHz base, no CPPC.
#[test]
fn intel_client() {
    let m = see("intel-client", true);
    let f = &m.freq;
    assert_eq!(
        (
            f.base_mhz,
            f.max_mhz,
            f.cpufreq_max_mhz,
            f.min_mhz,
            f.kernel_ref_mhz
        ),
        (Some(2300), Some(2800), Some(2800), Some(400), None)
    );
    assert_eq!(m.auto_mhz, Some(2800));
    assert_eq!(m.governors, PSTATE_ACTIVE);
    assert!(m.hybrid.is_empty(), "{}", m.hybrid_note);
    #[rustfmt::skip]
    let want = states(&[("POLL", 0, 0), ("C1", 2, 2), ("C1E", 10, 20), ("C3", 70, 100),
        ("C6", 85, 200), ("C7s", 124, 800), ("C8", 200, 800), ("C9", 480, 5000),
        ("C10", 890, 5000)]);
    assert_eq!(m.idle0, want);
    assert!(m.idle_same);
    assert_eq!(m.small, sets(&[&[0, 2], &[1, 3]]));
    assert_eq!(m.llc, sets(&[&[0, 1, 2, 3]]));
}

/// Two Xeon 8260L: their acpi_cppc is Intel's (nominal_freq 0), not read;
/// one L3 per socket.
#[test]
fn intel_server() {
    let m = see("intel-server", true);
    let f = &m.freq;
    assert_eq!(
        (f.base_mhz, f.max_mhz, f.min_mhz, f.kernel_ref_mhz),
        (Some(2400), Some(3900), Some(1000), None)
    );
    assert!(
        f.notes.iter().any(|n| n.contains("not an AMD CPU")),
        "{:?}",
        f.notes
    );
    assert_eq!(m.auto_mhz, Some(3900));
    assert_eq!(m.governors, PSTATE_ACTIVE);
    assert!(m.hybrid.is_empty(), "{}", m.hybrid_note);
    let want = states(&[
        ("POLL", 0, 0),
        ("C1", 2, 2),
        ("C1E", 10, 20),
        ("C6", 133, 600),
    ]);
    assert_eq!(m.idle0, want);
    assert!(m.idle_same);
    assert_eq!(m.small, sets(&[&[0, 4], &[1, 5], &[2, 6], &[3, 7]]));
    assert_eq!(m.llc, sets(&[&[0, 1, 4, 5], &[2, 3, 6, 7]]));
}

/// i7-1260P: hybrid by its cpu_atom PMU, E-cores at round(3400 x 1024 /
/// 4700) = 741; its acpi_cppc (highest_perf 60 on P, 34 on E) is not taken
/// for AMD preferred cores.
#[test]
fn hybrid_alder_lake() {
    let m = see("hybrid-adl", true);
    let f = &m.freq;
    assert_eq!(
        (f.base_mhz, f.max_mhz, f.min_mhz, f.kernel_ref_mhz),
        (Some(2100), Some(4700), Some(400), None)
    );
    assert_eq!(m.auto_mhz, Some(4700));
    assert_eq!(m.governors, PSTATE_ACTIVE);
    let want: Vec<(usize, u16)> = (0..8)
        .map(|c| (c, if c < 4 { 1024 } else { 741 }))
        .collect();
    assert_eq!(m.hybrid, want, "{}", m.hybrid_note);
    assert!(m.hybrid_note.contains("cpu_atom"), "{}", m.hybrid_note);
    #[rustfmt::skip]
    let want = states(&[("POLL", 0, 0), ("C1E", 2, 4), ("C6", 170, 500), ("C8", 200, 600),
        ("C10", 230, 700)]);
    assert_eq!(m.idle0, want);
    assert_eq!(m.small, sets(&[&[0, 1], &[2, 3], &[4], &[5], &[6], &[7]]));
    assert_eq!(m.big, sets(&[&[0, 1], &[2, 3], &[4, 5, 6, 7]]));
    assert_eq!(m.llc, sets(&[&[0, 1, 2, 3, 4, 5, 6, 7]]));
}

/// A Zen 2 desktop with preferred cores (highest_perf 216, 211, 206, 166):
/// the kernel's numerator 166, so 166 x 3801 / 135 = 4673 MHz.
#[test]
fn amd_preferred_cores() {
    let m = see("amd-prefcore", true);
    let f = &m.freq;
    assert_eq!(
        (
            f.base_mhz,
            f.max_mhz,
            f.kernel_ref_mhz,
            f.cpufreq_max_mhz,
            f.min_mhz
        ),
        (Some(3801), Some(4673), Some(4673), Some(4673), Some(550))
    );
    assert_eq!(m.auto_mhz, Some(4673));
    assert_eq!(
        m.governors,
        "cpufreq: amd-pstate-epp active (powersave), hints not applied (needs the schedutil governor)"
    );
    assert!(m.hybrid.is_empty(), "{}", m.hybrid_note);
    assert_eq!(
        m.idle0,
        states(&[("POLL", 0, 0), ("C1", 1, 2), ("C2", 400, 800)])
    );
    assert!(m.idle_same);
    assert_eq!(m.small, sets(&[&[0, 4], &[1, 5], &[2, 6], &[3, 7]]));
    assert_eq!(m.llc, sets(&[&[0, 1, 4, 5], &[2, 6], &[3, 7]]));
}

/// A POWER9 (powernv): one cpufreq policy per SMT4 core; cpuinfo_max_freq
/// is the kernel's reference off x86; stop states.
#[test]
fn power9() {
    let m = see("power9", false);
    let f = &m.freq;
    assert_eq!(
        (f.base_mhz, f.max_mhz, f.min_mhz, f.kernel_ref_mhz),
        (None, Some(3800), Some(2166), Some(3800))
    );
    assert_eq!(m.auto_mhz, Some(3800));
    assert_eq!(
        m.governors,
        "cpufreq: powernv-cpufreq (performance), hints not applied (needs the schedutil governor)"
    );
    assert!(m.hybrid.is_empty(), "{}", m.hybrid_note);
    #[rustfmt::skip]
    let want = states(&[("snooze", 0, 0), ("stop0_lite", 1, 10), ("stop0", 2, 20),
        ("stop1", 5, 50), ("stop2", 10, 100), ("stop4", 100, 10000), ("stop5", 200, 20000)]);
    assert_eq!(m.idle0, want);
    assert!(m.idle_same);
    assert_eq!(m.small, sets(&[&[0, 1, 2, 3], &[4, 5, 6, 7]]));
    assert_eq!(m.llc, sets(&[&[0, 1, 2, 3], &[4, 5, 6, 7]]));
}
