//! The hierarchy read from every fixture tree (tests/fixtures/topology/,
//! see its make.py for what each machine is), and hand-written topology
//! files, good and bad.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::hierarchy::Hierarchy;
use super::{cpulist, file, show, sysfs};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

/// Each level's groups as cpulists.
fn lists(groups: &[BTreeSet<u32>]) -> Vec<String> {
    groups.iter().map(cpulist::format).collect()
}

fn read(name: &str) -> Hierarchy {
    sysfs::read(&fixture(name))
}

#[test]
fn power9_smt8_has_interleaved_small_cores_in_big_cores() {
    let h = read("power9-smt8");
    assert_eq!(
        lists(&h.small),
        ["0,2,4,6", "1,3,5,7", "8,10,12,14", "9,11,13,15"]
    );
    assert_eq!(lists(&h.big), ["0-7", "8-15"]);
    assert_eq!(lists(&h.llc), ["0-7", "8-15"]);
    assert_eq!(h.small_cores_of(0), [0, 1]);
    assert_eq!((h.cpus[&6].small, h.cpus[&6].big), (0, 0));
    assert_eq!((h.cpus[&13].small, h.cpus[&13].big), (3, 1));
    assert!(h.notes.is_empty(), "{:?}", h.notes);
}

#[test]
fn power9_lower_smt_modes_keep_both_small_cores() {
    // The seed: offlining goes from the highest thread down, so each small
    // core keeps an equal share of the online threads.
    let h = read("power9-smt4");
    assert_eq!(lists(&h.small), ["0,2", "1,3", "8,10", "9,11"]);
    assert_eq!(lists(&h.big), ["0-3", "8-11"]);
    let h = read("power9-smt2");
    assert_eq!(lists(&h.small), ["0", "1", "8", "9"]);
    assert_eq!(lists(&h.big), ["0,1", "8,9"]);
    assert_eq!(h.small_cores_of(1), [2, 3]);
}

#[test]
fn x86_smt2_two_sockets_two_nodes() {
    let h = read("x86-smt2");
    assert_eq!(lists(&h.small), ["0,4", "1,5", "2,6", "3,7"]);
    assert_eq!(h.big, h.small, "plain SMT2: a big core is one small core");
    assert_eq!(lists(&h.llc), ["0,1,4,5", "2,3,6,7"]);
    assert_eq!((h.cpus[&5].node, h.cpus[&6].node), (0, 1));
}

#[test]
fn x86_hybrid_e_core_clusters_are_big_cores() {
    let h = read("x86-hybrid");
    assert_eq!(
        lists(&h.small),
        ["0,1", "2,3", "4", "5", "6", "7", "8", "9", "10", "11"]
    );
    assert_eq!(lists(&h.big), ["0,1", "2,3", "4-7", "8-11"]);
    assert_eq!(lists(&h.llc), ["0-11"]);
    assert_eq!(h.small_cores_of(2).len(), 4);
}

#[test]
fn no_smt_is_flat() {
    let h = read("no-smt");
    assert_eq!(lists(&h.small), ["0", "1", "2", "3"]);
    assert_eq!(h.big, h.small);
    assert_eq!(lists(&h.llc), ["0-3"]);
}

#[test]
fn missing_files_degrade_with_notes() {
    let h = read("missing-cache");
    assert_eq!(lists(&h.small), ["0", "1", "2", "3"]);
    assert_eq!(lists(&h.llc), ["0-3"], "the package stands in for the LLC");
    let notes = h.notes.join("\n");
    assert!(notes.contains("no L1 cache in sysfs"), "{notes}");
    assert!(notes.contains("LLC = package"), "{notes}");
    assert!(notes.contains("node 0"), "{notes}");
    // Nothing at all: no CPUs, a note, no panic.
    let h = sysfs::read(Path::new("/nonexistent"));
    assert!(h.cpus.is_empty());
    assert!(!h.notes.is_empty());
}

#[test]
fn inconsistent_sysfs_is_flattened_with_a_warning() {
    let h = read("inconsistent");
    assert_eq!(lists(&h.small), ["0", "1", "2", "3"]);
    let notes = h.notes.join("\n");
    assert!(
        notes.contains("CPUs 1,2: their small core groups overlap"),
        "{notes}"
    );
}

#[test]
fn show_prints_the_tree() {
    let text = show::render(&read("power9-smt8"), "fixture");
    assert!(
        text.starts_with(
            "node 0: CPUs 0-15\n  LLC 0: CPUs 0-7\n    big core 0: CPUs 0-7 (2 small cores)\n      small core 0: CPUs 0,2,4,6\n      small core 1: CPUs 1,3,5,7\n"
        ),
        "{text}"
    );
    assert!(text.contains("16 CPUs, 4 small cores, 2 big cores, 2 LLCs, 1 NUMA nodes"));
}

const POWER9_FILE: &str =
    "# POWER9-like big core\nsmall 0,2,4,6\nsmall 1,3,5,7\nbig 0-7\nllc 0-7\n";

fn online(n: u32) -> BTreeSet<u32> {
    (0..n).collect()
}

#[test]
fn a_topology_file_describes_the_machine() {
    let h = file::parse(POWER9_FILE, &online(8)).unwrap();
    assert_eq!(lists(&h.small), ["0,2,4,6", "1,3,5,7"]);
    assert_eq!(lists(&h.big), ["0-7"]);
    assert!(h.notes.is_empty());
    // Levels left out: big core = small core, one LLC.
    let h = file::parse("small 0,1\nsmall 2,3\n", &online(4)).unwrap();
    assert_eq!(h.big, h.small);
    assert_eq!(lists(&h.llc), ["0-3"]);
}

/// Each bad file is refused with its offending line named.
#[test]
fn bad_topology_files_name_the_line() {
    let cases = [
        (
            "small 0-3\nsmall 4-8\n",
            "line 2: `small 4-8`: CPU 8 is not an online CPU of this machine (online: 0-7)",
        ),
        (
            "small 0-3\nsmall 3-7\n",
            "line 2: `small 3-7`: CPU 3 is already in the small group on line 1",
        ),
        (
            "small 0,1\nsmall 2,3\nsmall 4,5\nsmall 6,7\nbig 0-2\nbig 3-7\n",
            "line 2: small 2,3 spans more than one big group (lines 5, 6)",
        ),
        (
            "small 0-3\ncore 4-7\n",
            "line 2: `core 4-7`: unknown level `core`",
        ),
        (
            "small 0-3\nsmall 4-x\n",
            "line 2: `small 4-x`: `4-x` is not a CPU",
        ),
        ("small 0-3\n", "CPU 4 is online but in no `small` line"),
        (
            "small 0-3\nsmall 4-7\nbig 0-3\n",
            "CPU 4 is in no `big` line",
        ),
    ];
    for (text, want) in cases {
        let e = format!("{:#}", file::parse(text, &online(8)).unwrap_err());
        assert!(e.contains(want), "for {text:?}: got `{e}`, want `{want}`");
    }
}

#[test]
fn the_bpf_table_numbers_each_llcs_big_cores_consecutively() {
    // x86-smt2: CPUs of the two sockets interleave (0,1,4,5 and 2,3,6,7).
    let t = super::table::build(&read("x86-smt2")).unwrap();
    assert_eq!((t.nr_cpus, t.nr_small, t.nr_big, t.nr_llc), (8, 4, 4, 2));
    assert_eq!((t.llc_first_big[0], t.llc_nr_big[0]), (0, 2));
    assert_eq!((t.llc_first_big[1], t.llc_nr_big[1]), (2, 2));
    for cpu in 0..8u32 {
        let small = t.cpu_small[cpu as usize] as usize;
        let big = t.small_big[small] as usize;
        let llc = t.big_llc[big] as usize;
        let want_llc = if cpu % 4 < 2 { 0 } else { 1 };
        assert_eq!(llc, want_llc, "CPU {cpu}");
        let n = t.small_nr_cpus[small] as usize;
        assert!(t.small_cpus[small][..n].contains(&cpu));
    }
    // POWER9: the two interleaved halves of big core 0 are small cores 0, 1.
    let t = super::table::build(&read("power9-smt8")).unwrap();
    assert_eq!((t.big_first_small[0], t.big_nr_small[0]), (0, 2));
    assert_eq!(&t.small_cpus[1][..4], &[1, 3, 5, 7]);
}

#[test]
fn the_bpf_table_refuses_what_it_cannot_hold() {
    let h = file::parse("small 0-8\n", &online(9)).unwrap();
    let e = super::table::build(&h).unwrap_err().to_string();
    assert!(e.contains("a small core of 9 threads"), "{e}");
}
