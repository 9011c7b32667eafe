//! Before the scheduler is loaded: may this kernel's sched_ext callbacks
//! read perf events? The APERF/MPERF source calls
//! bpf_perf_event_read_value() from ops.tick(), and a kernel whose verifier
//! refuses that refuses the whole scheduler. bpf/aperf_probe.bpf.c makes
//! the same call from a sched_ext callback; loading it, never attaching it,
//! is the kernel's own answer, asked once per process.

use std::mem::MaybeUninit;
use std::sync::{Mutex, OnceLock};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{PrintCallback, PrintLevel};

mod skel {
    include!(concat!(env!("OUT_DIR"), "/aperf_probe_skel.rs"));
}

/// Ok if the kernel's verifier lets sched_ext callbacks call
/// bpf_perf_event_read_value(); Err: its reason for refusing.
pub fn perf_reads_allowed() -> Result<(), String> {
    static VERDICT: OnceLock<Result<(), String>> = OnceLock::new();
    VERDICT.get_or_init(load_probe).clone()
}

fn load_probe() -> Result<(), String> {
    let quiet = QuietLog::start();
    let mut object = MaybeUninit::uninit();
    let loaded = skel::AperfProbeSkelBuilder::default()
        .open(&mut object)
        .and_then(|open| open.load().map(drop));
    let log = quiet.stop();
    loaded.map_err(|e| refusal_reason(&log, &format!("{e:#}")))
}

/// The verifier's reason, from the libbpf log lines of a refused load:
/// the line naming the helper, else the log's last line, else @err.
pub fn refusal_reason(log: &[String], err: &str) -> String {
    let mut line = log
        .iter()
        .flat_map(|m| m.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty());
    line.clone()
        .find(|l| l.contains("bpf_perf_event_read_value"))
        .or_else(|| line.next_back())
        .unwrap_or(err)
        .to_string()
}

/// libbpf's messages while the probe loads: kept, not printed (a refused
/// load prints the whole verifier log), then the logger restored.
struct QuietLog(Option<(PrintLevel, PrintCallback)>);

static CAPTURED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture(_level: PrintLevel, msg: String) {
    if let Ok(mut v) = CAPTURED.lock() {
        v.push(msg);
    }
}

impl QuietLog {
    fn start() -> Self {
        CAPTURED.lock().map(|mut v| v.clear()).ok();
        QuietLog(libbpf_rs::set_print(Some((PrintLevel::Debug, capture))))
    }

    /// Restores the logger; returns what libbpf said meanwhile.
    fn stop(self) -> Vec<String> {
        libbpf_rs::set_print(self.0);
        CAPTURED
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}
