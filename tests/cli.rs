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

#[test]
fn unknown_option_is_one_line_and_exit_2() {
    let out = scx_cadence(&["--no-such-option"]);
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("--no-such-option"), "{lines:?}");
}

#[test]
fn out_of_range_slice_names_the_range() {
    let out = scx_cadence(&["--slice-max-us", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("100..=100000"), "{lines:?}");
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
