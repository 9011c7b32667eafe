// Compiles bpf/'s units and links them into the scheduler's object
// (OUT_DIR/bpf.bpf.o) and skeleton (OUT_DIR/bpf_skel.rs); links the
// placement test program and the idle learner's replay program with the
// scheduler's own search and learner units (OUT_DIR/{place_test,idle_replay}/
// bpf_skel.rs); builds the test-only PELT, deadline and cgroup programs into
// OUT_DIR/*_test_skel.rs, the cpufreq target's replay program into
// OUT_DIR/cpufreq_replay_skel.rs and the APERF/MPERF probe into
// OUT_DIR/aperf_probe_skel.rs; and turns
// bpf/intf.h into Rust bindings (OUT_DIR/bpf_intf.rs). scx_cargo ships the
// sched_ext headers and vmlinux.h. It runs $BPF_CLANG (default `clang`),
// which must be clang >= 19 (check_clang()): on Debian 12, `export
// BPF_CLANG=clang-19`.
const NO_CLANG: &str =
    "no usable clang >= 19 for bpf/: install clang-19 and export BPF_CLANG=clang-19";

/// The oldest clang major version the BPF is built with: the only one it
/// is built and tested with (Debian 12 packages no clang 17 or 18, and
/// scx_cargo refuses anything older than 18). Another compiler spills
/// differently, which the stack margin test (src/bpf_stack_tests.rs)
/// guards; a newer one is allowed.
const OLDEST_CLANG: u32 = 19;

/// Refuses a $BPF_CLANG older than OLDEST_CLANG, in one line.
fn check_clang() {
    let info = scx_cargo::ClangInfo::new().expect(NO_CLANG);
    let major = info
        .ver
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m >= OLDEST_CLANG => {}
        _ => panic!(
            "{} is clang {}, older than {OLDEST_CLANG}, the oldest scx_cadence's BPF is built \
             and tested with: install clang-19 and export BPF_CLANG=clang-19",
            info.clang, info.ver
        ),
    }
}

/// The scheduler's units besides bpf/main.bpf.c, the callback table and
/// scheduling core (bpf/cadence.bpf.h says what each holds).
const SCHED_UNITS: &[&str] = &[
    "bpf/policy.bpf.c",
    "bpf/util.bpf.c",
    "bpf/cpufreq.bpf.c",
    "bpf/idle.bpf.c",
    "bpf/task_view.bpf.c",
    "bpf/cgroup.bpf.c",
    "bpf/cgroup_bw.bpf.c",
    "bpf/place_search.bpf.c",
    "bpf/idle_learn.bpf.c",
];

/// Builds the SEC("syscall") object @main linked with the units in @units
/// (the same .bpf.c files the scheduler links, so the host tests run the
/// scheduler's own code) into OUT_DIR/@name/bpf_skel.rs. scx_cargo's
/// linking names its object and skeleton `bpf` in the builder's OUT_DIR, so
/// each linked test object gets a directory of its own.
fn linked_skel(name: &str, main: &str, units: &[&str]) {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let dir = std::path::Path::new(&out).join(name);
    std::fs::create_dir_all(&dir).expect("creating a test object's OUT_DIR");
    // SAFETY: the build script runs single-threaded; scx_cargo reads OUT_DIR
    // only in BpfBuilder::new(), and it is put back right after.
    unsafe { std::env::set_var("OUT_DIR", &dir) };
    let mut b = scx_cargo::BpfBuilder::new().expect(NO_CLANG);
    unsafe { std::env::set_var("OUT_DIR", &out) };
    b.enable_skel(main, name);
    for unit in units {
        b.add_source(unit);
    }
    b.compile_link_gen()
        .unwrap_or_else(|e| panic!("building the BPF object {name} failed: {e:#}"));
}

fn main() {
    check_clang();
    // The scheduler: one unit per concern, compiled apart and linked into
    // OUT_DIR/bpf.bpf.o (bpf/cadence.bpf.h declares what they share).
    let mut sched = scx_cargo::BpfBuilder::new().expect(NO_CLANG);
    sched
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf");
    for unit in SCHED_UNITS {
        sched.add_source(unit);
    }
    sched
        .compile_link_gen()
        .expect("building the BPF scheduler failed");
    // SEC("syscall") programs that run bpf/pelt.bpf.h for the host tests
    // (src/pelt/); they need no sched_ext, so they load on any host kernel.
    scx_cargo::BpfBuilder::new()
        .expect(NO_CLANG)
        .enable_skel("bpf/pelt_test.bpf.c", "pelt_test")
        .build()
        .expect("building the BPF PELT test programs failed");
    // And for bpf/place_search.bpf.c, the small-core placement search.
    linked_skel(
        "place_test",
        "bpf/place_test.bpf.c",
        &["bpf/place_search.bpf.c"],
    );
    // And for bpf/deadline.bpf.h, virtual deadlines, eligibility and the
    // wake-up preemption decision.
    scx_cargo::BpfBuilder::new()
        .expect(NO_CLANG)
        .enable_skel("bpf/deadline_test.bpf.c", "deadline_test")
        .build()
        .expect("building the BPF deadline test program failed");
    // And for bpf/group_share.bpf.h, a task's weight from its cgroups.
    scx_cargo::BpfBuilder::new()
        .expect(NO_CLANG)
        .enable_skel("bpf/cgroup_test.bpf.c", "cgroup_test")
        .build()
        .expect("building the BPF cgroup share test program failed");
    // The probe that asks the kernel's verifier, before the scheduler is
    // loaded, whether sched_ext callbacks may read APERF/MPERF.
    scx_cargo::BpfBuilder::new()
        .expect(NO_CLANG)
        .enable_skel("bpf/aperf_probe.bpf.c", "aperf_probe")
        .build()
        .expect("building the BPF APERF/MPERF probe failed");
    // The idle-state learner (bpf/idle_learn.bpf.c) outside the scheduler:
    // what `scx_cadence idle replay` runs, and the host tests with it.
    linked_skel(
        "idle_replay",
        "bpf/idle_replay.bpf.c",
        &["bpf/idle_learn.bpf.c"],
    );
    // The same for the cpufreq target and deadband (bpf/cpufreq_target.bpf.h):
    // what `scx_cadence cpufreq replay` runs, and the host tests with it.
    scx_cargo::BpfBuilder::new()
        .expect(NO_CLANG)
        .enable_skel("bpf/cpufreq_replay.bpf.c", "cpufreq_replay")
        .build()
        .expect("building the BPF cpufreq replay program failed");
}
