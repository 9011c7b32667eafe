//! The command line as a user meets it on the host: usage errors and the
//! refusal to start on a kernel without sched_ext, each as one clear line.

use std::path::Path;
use std::process::{Command, Output};

fn scx_cadence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scx_cadence"))
        .args(args)
        .output()
        .expect("running scx_cadence")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A usage error: exit 2 and one line on stderr, which is returned.
fn usage_error(args: &[&str]) -> String {
    let out = scx_cadence(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

#[test]
fn unknown_option_is_one_line_and_exit_2() {
    let line = usage_error(&["--no-such-option"]);
    assert!(line.contains("--no-such-option"), "{line}");
}

/// A refused start: exit 1 and one line on stderr, which is returned.
fn refused(args: &[&str]) -> String {
    let out = scx_cadence(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

#[test]
fn out_of_range_policy_value_names_field_value_and_range() {
    // Checked before anything touches the kernel, so this runs on any host.
    let line = refused(&["--set", "slice.max_us=5"]);
    assert_eq!(
        line,
        "scx_cadence: error: --set: slice.max_us = 5 is out of range: allowed 100..=100000 (microseconds)"
    );
}

#[test]
fn stall_timeout_beyond_the_kernels_limit_is_a_usage_error() {
    // sched_ext refuses a watchdog timeout over 30 s at attach; the loader
    // refuses it first, in one line, before touching the kernel.
    let line = usage_error(&["--stall-timeout-ms", "30001"]);
    assert!(line.contains("30001 is not 0 or in 5000..=30000"), "{line}");
}

#[test]
fn stall_timeout_below_the_schedulers_own_waits_is_a_usage_error() {
    // The scheduler lets a task wait up to 2.5 s (HZ=100) in a CPU's own
    // queue: a watchdog shorter than twice that is refused before loading.
    let line = usage_error(&["--stall-timeout-ms", "1000"]);
    assert!(line.contains("1000 is not 0 or in 5000..=30000"), "{line}");
}

#[test]
fn bad_policy_files_and_presets_are_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("scx_cadence_cli_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[slice]\nmin_us = \"fast\"\n").unwrap();
    let line = refused(&["--policy", bad.to_str().unwrap()]);
    assert!(
        line.contains("slice.min_us = \"fast\" has the wrong type"),
        "{line}"
    );
    let line = refused(&["--policy", "turbo"]);
    assert!(line.contains("unknown policy `turbo`"), "{line}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctl_without_a_running_scheduler_says_so() {
    let line = refused(&["ctl", "--socket", "/nonexistent/ctl.sock", "get"]);
    assert!(line.contains("is scx_cadence running"), "{line}");
}

#[test]
fn ctl_idle_checks_its_file_before_asking_the_scheduler() {
    // The socket does not exist: these fail on the file, read first.
    let sock = ["ctl", "--socket", "/nonexistent/ctl.sock", "idle"];
    let line = refused(&[&sock[..], &["load", "/nonexistent/tables.json"]].concat());
    assert!(
        line.starts_with("scx_cadence: error: reading idle tables from /nonexistent/tables.json: "),
        "{line}"
    );
    let file = std::env::temp_dir().join(format!("scx_cadence-cli-idle-{}", std::process::id()));
    std::fs::write(&file, "{\"version\":1}\n").unwrap();
    let line = refused(&[&sock[..], &["load", file.to_str().unwrap()]].concat());
    std::fs::remove_file(&file).unwrap();
    assert!(
        line.starts_with(&format!(
            "scx_cadence: error: {}: not an idle table file: missing field `cpus`",
            file.display()
        )),
        "{line}"
    );
    // Without a scheduler, save and reset say so.
    let line = refused(&[&sock[..], &["reset"]].concat());
    assert!(line.contains("is scx_cadence running"), "{line}");
    // An unknown action is a usage error.
    let out = scx_cadence(&[&sock[..], &["forget"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr_lines(&out).len(), 1);
}

#[test]
fn policies_lists_every_field_and_preset() {
    let out = scx_cadence(&["policies"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "slice.max_us",
        "placement.idle_core_first",
        "performance, balanced, powersave",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
}

#[test]
fn help_stats_describes_every_counter() {
    let out = scx_cadence(&["--help-stats"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "select_prev_core",
        "enq_llc",
        "dispatch_steal",
        "tick_preempt",
        "wake_preempt",
        "wake_sync",
        "policy_refresh",
        "policy_generation",
        "idle_periods",
        "idle_scores",
    ] {
        assert!(text.contains(name), "{name} missing from --help-stats");
    }
}

#[test]
fn kernel_without_sched_ext_is_refused_in_one_line() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!(
            "SKIPPED kernel_without_sched_ext_is_refused_in_one_line: this host kernel has \
             sched_ext; the VM tests cover that kernel instead"
        );
        return;
    }
    let out = scx_cadence(&[]);
    assert_eq!(out.status.code(), Some(1));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("this kernel has no sched_ext"),
        "{lines:?}"
    );
}

#[test]
fn unknown_freq_max_lists_the_valid_spellings() {
    // clap parses --freq-max into the policy's type, so a spelling it does
    // not know is a usage error (exit 2), like an unknown option.
    let line = usage_error(&["--freq-max", "warp"]);
    assert!(line.contains("unknown freq_max `warp`"), "{line}");
    assert!(
        line.contains("auto, 1c..255c (N-core turbo), base, max or a frequency in MHz"),
        "{line}"
    );
}

/// No machine lists a turbo ratio for 255 active cores, so 255c is refused
/// everywhere, before the kernel is touched, with this machine's choices.
#[test]
fn unavailable_freq_max_lists_this_machines_choices() {
    let line = refused(&["--freq-max", "255c"]);
    assert!(
        line.contains(
            "freq_max `255c` is not available on this machine: the choices here are auto"
        ),
        "{line}"
    );
}

#[test]
fn freq_max_list_shows_sources_choices_and_the_choice_in_force() {
    let out = scx_cadence(&["freq-max", "--list", "--policy", "balanced"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "Frequencies found (MHz):",
        "Sources:",
        "cpufreq",
        "Choices: auto",
        "In force: freq_max = auto",
    ] {
        assert!(text.contains(part), "{part} missing in {text}");
    }
}

/// `scx_cadence topology` on a recorded POWER9 tree prints the interleaved
/// small cores inside their big core.
#[test]
fn topology_prints_small_cores_inside_big_cores() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/power9-smt8");
    let out = scx_cadence(&["topology", "--sysfs", root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "    big core 1: CPUs 8-15 (2 small cores)\n      small core 2: CPUs 8,10,12,14\n"
        ),
        "{text}"
    );
}

/// A topology file that does not fit the machine is refused in one line
/// that names the offending line.
#[test]
fn bad_topology_file_is_refused_with_its_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/no-smt");
    let file = std::env::temp_dir().join(format!("scx_cadence-topo-{}", std::process::id()));
    std::fs::write(&file, "small 0,1\nsmall 1,2,3\n").unwrap();
    let line = refused(&[
        "topology",
        "--sysfs",
        root.to_str().unwrap(),
        "--topology",
        file.to_str().unwrap(),
    ]);
    std::fs::remove_file(&file).unwrap();
    assert!(
        line.contains("line 2: `small 1,2,3`: CPU 1 is already in the small group on line 1"),
        "{line}"
    );
}

/// `scx_cadence idle-states` with a shipped example file gives every online
/// CPU of the (recorded) machine that table, with the file's indices.
#[test]
fn idle_states_prints_a_shipped_example_for_every_cpu() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = dir.join("tests/fixtures/topology/no-smt");
    let file = dir.join("docs/idle-states/intel-skylake-sp.txt");
    let out = scx_cadence(&[
        "idle-states",
        "--sysfs",
        root.to_str().unwrap(),
        "--idle-states",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!(
        "idle states from file {} (state indices are the file's, not the kernel's)\n\
         CPUs 0-3:\n\
         \x20 state  name  exit latency us  target residency us  disabled\n\
         \x20     0  POLL                0                    0  no\n\
         \x20     1  C1                  2                    2  no\n\
         \x20     2  C1E                10                   20  no\n\
         \x20     3  C6                133                  600  no\n",
        file.display()
    );
    assert_eq!(text, want);
}

/// From sysfs: the driver and governor, a CPU with a disabled state in its
/// own group, a CPU without cpuidle/ noted.
#[test]
fn idle_states_reads_sysfs_cpuidle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/idle/mixed");
    let out = scx_cadence(&["idle-states", "--sysfs", root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "idle states from sysfs: cpuidle driver intel_idle, governor teo (state indices are the kernel's)\n",
        "CPU 1:\n",
        "      3  C6                133                  600  yes\n",
        "CPU 2: no idle states\n",
        "note: CPU 2: no cpuidle/ directory in sysfs: no idle states\n",
    ] {
        assert!(text.contains(part), "{part:?} missing in:\n{text}");
    }
}

/// A bad idle-states file is refused in one line naming its line, by
/// `idle-states` and by the scheduler itself before it touches the kernel.
#[test]
fn bad_idle_states_file_is_refused_with_its_line() {
    let file = std::env::temp_dir().join(format!("scx_cadence-idle-{}", std::process::id()));
    std::fs::write(&file, "# name latency residency\nC1 2 2\nC1E 10\n").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/no-smt");
    let shown = refused(&[
        "idle-states",
        "--sysfs",
        root.to_str().unwrap(),
        "--idle-states",
        file.to_str().unwrap(),
    ]);
    let run = refused(&["--idle-states", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    let want = format!(
        "scx_cadence: error: idle-states file {}: line 3: `C1E 10`: no target residency \
         (expected `name exit_latency_us target_residency_us [power=N] [disabled]`)",
        file.display()
    );
    assert_eq!(shown, want);
    assert_eq!(run, want);
}

/// docs/policy.md holds the output of `policies --markdown` between its two
/// marker comments, so the field reference cannot drift from the schema.
/// With UPDATE_DOCS=1 the test rewrites that part instead of failing.
#[test]
fn policy_doc_is_policies_markdown() {
    const BEGIN: &str = "<!-- scx_cadence policies --markdown: begin -->\n";
    const END: &str = "<!-- scx_cadence policies --markdown: end -->";
    let out = scx_cadence(&["policies", "--markdown"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).expect("UTF-8 output");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policy.md");
    let doc = std::fs::read_to_string(&path).expect("reading docs/policy.md");
    let start = doc
        .find(BEGIN)
        .expect("docs/policy.md has the begin marker")
        + BEGIN.len();
    let end = start
        + doc[start..]
            .find(END)
            .expect("docs/policy.md has the end marker");
    if doc[start..end] == table {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let new = format!("{}{table}{}", &doc[..start], &doc[end..]);
        std::fs::write(&path, new).expect("writing docs/policy.md");
        return;
    }
    let (doc_lines, bin_lines): (Vec<&str>, Vec<&str>) =
        (doc[start..end].lines().collect(), table.lines().collect());
    let first = (0..doc_lines.len().max(bin_lines.len()))
        .find(|&i| doc_lines.get(i) != bin_lines.get(i))
        .unwrap_or(0);
    panic!(
        "docs/policy.md differs from `scx_cadence policies --markdown` at table line {}:\n  \
         doc:    {}\n  binary: {}\nregenerate it with\n  \
         UPDATE_DOCS=1 cargo test --release --locked --test cli policy_doc",
        first + 1,
        doc_lines.get(first).unwrap_or(&"(nothing)"),
        bin_lines.get(first).unwrap_or(&"(nothing)"),
    );
}

/// `idle record` without a running scheduler (nothing pinned) says so in
/// one line and writes no file.
#[test]
fn idle_record_without_a_scheduler_says_so() {
    let dir = std::env::temp_dir().join(format!("scx_cadence-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace");
    let e = refused(&[
        "idle",
        "record",
        "--seconds",
        "1",
        "--pin-dir",
        dir.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    let exists = trace.exists();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        e,
        format!(
            "scx_cadence: error: no scheduler is running: nothing pinned at {}/idle_ctl",
            dir.display()
        )
    );
    assert!(!exists);
}

/// A bad trace line is refused with its number, before anything is loaded.
#[test]
fn idle_replay_refuses_a_bad_trace_line() {
    let file = std::env::temp_dir().join(format!("scx_cadence-trace-{}", std::process::id()));
    std::fs::write(
        &file,
        "{\"period\":{\"cpu\":0,\"start_ns\":1,\"duration_ns\":2,\"sleep_length_ns\":3,\
         \"kernel_state\":-1,\"rand\":4}}\n{\"period\":{\"cpu\":0}}\n",
    )
    .unwrap();
    let states =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/idle-states/intel-skylake-sp.txt");
    let e = refused(&[
        "idle",
        "replay",
        file.to_str().unwrap(),
        "--idle-states",
        states.to_str().unwrap(),
    ]);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        e,
        format!(
            "scx_cadence: error: trace {}: line 2, column 19: not a trace record: missing field `start_ns`",
            file.display()
        )
    );
}
