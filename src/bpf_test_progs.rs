//! The SEC("syscall") test programs that the host tests run through
//! BPF_PROG_TEST_RUN (bpf/pelt_test.bpf.c, bpf/place_test.bpf.c,
//! bpf/deadline_test.bpf.c, bpf/cgroup_test.bpf.c;
//! build.rs compiles their skeletons), and the one
//! loader they all use.
//!
//! Loading them takes the kernel's bpf_capable() (CAP_BPF or CAP_SYS_ADMIN)
//! for a syscall program and perfmon_capable() (CAP_PERFMON or
//! CAP_SYS_ADMIN) for their bpf_probe_read_kernel() of the context, which
//! the verifier otherwise refuses ("R3 leaks addr into helper function").
//! Without them `cargo test` does not fail: each such test says on stderr
//! that it is skipped and why, and passes. With SCX_CADENCE_REQUIRE_BPF=1
//! (tests/run.sh sets it) a missing privilege fails the test instead, so
//! the full suite never skips them. Any other error fails the test.

use std::io::Write;
use std::mem::MaybeUninit;

use libbpf_rs::ErrorKind;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

/// bpf/pelt_test.bpf.c: PELT (bpf/pelt.bpf.h), its glue, and the
/// frequency ratio tick (bpf/freq_ratio_math.bpf.h).
pub mod pelt {
    include!(concat!(env!("OUT_DIR"), "/pelt_test_skel.rs"));
}

/// bpf/place_test.bpf.c linked with bpf/place_search.bpf.c, the scheduler's
/// idle-CPU search unit.
pub mod place {
    linked_skel!("place_test", PlaceTestSkel, PlaceTestSkelBuilder);
}

/// bpf/deadline_test.bpf.c: virtual deadlines, eligibility and the wake-up
/// preemption decision (bpf/deadline.bpf.h).
pub mod deadline {
    include!(concat!(env!("OUT_DIR"), "/deadline_test_skel.rs"));
}

/// bpf/cgroup_test.bpf.c: a task's weight from its cgroups
/// (bpf/group_share.bpf.h).
pub mod cgroup {
    include!(concat!(env!("OUT_DIR"), "/cgroup_test_skel.rs"));
}

/// The variable under which a missing privilege fails instead of skipping.
pub const REQUIRE_ENV: &str = "SCX_CADENCE_REQUIRE_BPF";

/// Capability numbers (include/uapi/linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// What loading the test programs lacks with effective capability set
/// @cap_eff (the kernel's bpf_capable() and perfmon_capable()), as it is
/// named in the skip message; None when nothing is missing.
fn missing_caps(cap_eff: u64) -> Option<&'static str> {
    let has = |cap: u32| cap_eff & (1 << cap) != 0;
    let bpf = has(CAP_BPF) || has(CAP_SYS_ADMIN);
    let perfmon = has(CAP_PERFMON) || has(CAP_SYS_ADMIN);
    match (bpf, perfmon) {
        (true, true) => None,
        (false, true) => Some("CAP_BPF"),
        (true, false) => Some("CAP_PERFMON"),
        (false, false) => Some("CAP_BPF and CAP_PERFMON"),
    }
}

/// The CapEff line of a /proc/<pid>/status text: the effective set.
fn cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// Whether @value of SCX_CADENCE_REQUIRE_BPF asks that the programs load:
/// set to anything but "" or "0".
fn required(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process's SCX_CADENCE_REQUIRE_BPF asks that they load.
fn required_by_env() -> bool {
    required(std::env::var(REQUIRE_ENV).ok().as_deref())
}

/// Why this process cannot load the test programs, or None if it can. A
/// /proc it cannot read counts as able: the load then says what is wrong.
fn lacking_privilege() -> Option<String> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let missing = missing_caps(cap_eff(&status)?)?;
    Some(format!(
        "loading BPF test programs needs {missing} (run as root, as tests/run.sh does)"
    ))
}

/// The line that says @test is skipped for @why; when @require
/// (SCX_CADENCE_REQUIRE_BPF is set) it fails the test instead.
fn skip_line(test: &str, why: &str, require: bool) -> String {
    if require {
        panic!("{REQUIRE_ENV} is set, but {why}");
    }
    format!("{test}: skipped: {why}")
}

/// Skips the running test for @why (see skip_line), on stderr, written
/// past the test harness's capture (it takes print!/eprint! only) so that
/// `cargo test` shows it.
fn skip(why: &str) {
    let thread = std::thread::current();
    let line = skip_line(
        thread.name().unwrap_or("a BPF test"),
        why,
        required_by_env(),
    );
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Skips the running test, which needs root for something other than the
/// BPF test programs (a perf event, another uid), the same way: one line
/// past the capture, or a failure under SCX_CADENCE_REQUIRE_BPF.
pub fn skip_without_root(why: &str) -> bool {
    if crate::owned::euid() == 0 {
        return false;
    }
    skip(why);
    true
}

/// Some(()) if this process may load BPF test programs; else None, after
/// the skip line (or a failure under SCX_CADENCE_REQUIRE_BPF). For
/// programs that their module loads itself (src/idle/learner_bpf.rs).
pub fn skip_without_bpf() -> Option<()> {
    match lacking_privilege() {
        Some(why) => {
            skip(&why);
            None
        }
        None => Some(()),
    }
}

/// Opens and loads a test program's skeleton, for the life of the test
/// process. None (after the skip line) when this process lacks the
/// privilege to load BPF; any other error panics.
pub fn load<B>(builder: B) -> Option<<B::Output as OpenSkel<'static>>::Output>
where
    B: SkelBuilder<'static>,
{
    load_with(builder, |_| {})
}

/// load(), with @setup run on the opened skeleton before it is loaded
/// (to set its rodata).
pub fn load_with<B>(
    builder: B,
    setup: impl FnOnce(&mut B::Output),
) -> Option<<B::Output as OpenSkel<'static>>::Output>
where
    B: SkelBuilder<'static>,
{
    if let Some(why) = lacking_privilege() {
        skip(&why);
        return None;
    }
    let object = Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = builder.open(object).expect("opening a BPF test object");
    let name = open
        .open_object()
        .name()
        .map_or("?".into(), |n| n.to_string_lossy().into_owned());
    setup(&mut open);
    match open.load() {
        Ok(skel) => Some(skel),
        // The capabilities are there but count for nothing here, as in a
        // user namespace other than the initial one.
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            skip(&format!(
                "the kernel refused to load {name} ({e}): these tests need CAP_BPF and \
                 CAP_PERFMON in the initial user namespace (run as root, as tests/run.sh does)"
            ));
            None
        }
        Err(e) => panic!("loading the BPF test object {name} failed: {e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_cap_sys_admin_alone_can_load() {
        // Root's set on a 6.x kernel: capabilities 0 to 40.
        assert_eq!(missing_caps(0x1ff_ffff_ffff), None);
        assert_eq!(missing_caps(1 << CAP_SYS_ADMIN), None);
        assert_eq!(missing_caps(1 << CAP_BPF | 1 << CAP_PERFMON), None);
    }

    #[test]
    fn each_missing_capability_is_named() {
        assert_eq!(missing_caps(0), Some("CAP_BPF and CAP_PERFMON"));
        assert_eq!(missing_caps(1 << CAP_BPF), Some("CAP_PERFMON"));
        assert_eq!(missing_caps(1 << CAP_PERFMON), Some("CAP_BPF"));
        // CAP_NET_ADMIN (12) and CAP_SYS_PTRACE (19) are not enough.
        assert_eq!(
            missing_caps(1 << 12 | 1 << 19),
            Some("CAP_BPF and CAP_PERFMON")
        );
    }

    #[test]
    fn cap_eff_is_read_from_its_line() {
        // The lines of /proc/self/status around it, as `setpriv
        // --inh-caps=+bpf --ambient-caps=+bpf` leaves them.
        let status = "Name:\tcat\nCapInh:\t0000008000000000\nCapPrm:\t0000008000000000\n\
                      CapEff:\t0000008000000000\nCapBnd:\t000001ffffffffff\n";
        assert_eq!(cap_eff(status), Some(1 << CAP_BPF));
        assert_eq!(cap_eff("Name:\tcat\n"), None);
        assert_eq!(cap_eff("CapEff:\tnot hex\n"), None);
    }

    #[test]
    fn only_an_unset_empty_or_zero_variable_allows_skipping() {
        assert!(!required(None));
        assert!(!required(Some("")));
        assert!(!required(Some("0")));
        assert!(required(Some("1")));
        assert!(required(Some("yes")));
    }

    #[test]
    fn a_missing_privilege_skips_unless_required() {
        assert_eq!(
            skip_line("pelt::t", "the reason", false),
            "pelt::t: skipped: the reason"
        );
        let failed = std::panic::catch_unwind(|| skip_line("pelt::t", "the reason", true))
            .expect_err("skipped although required");
        let msg = failed.downcast::<String>().unwrap();
        assert_eq!(*msg, "SCX_CADENCE_REQUIRE_BPF is set, but the reason");
    }
}
