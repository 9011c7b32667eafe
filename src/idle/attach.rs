//! The idle learner inside the scheduler: which of its programs load and
//! the states it learns for (bpf/idle.bpf.c). The programs that load are
//! attached with the rest by scx_ops_attach!, which attaches every program
//! of the skeleton: attaching them here as well would run each twice.

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use super::states::IdleStates;
use super::table::StatesNs;
use crate::bpf_intf::{self, as_bytes};
use crate::bpf_skel::{BpfSkel, OpenBpfSkel};

/// The kernel function whose result is teo's sleep length.
const SLEEP_LENGTH_FN: &str = "tick_nohz_get_sleep_length";

/// Whether this kernel has @func as a symbol that fexit can attach to
/// (a function the compiler inlined everywhere is not in kallsyms).
fn has_function(kallsyms: &str, func: &str) -> bool {
    kallsyms
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some(func))
}

/// TICK_NSEC of the running kernel, from CONFIG_HZ in its configuration
/// (/boot/config-RELEASE, where distributions install it); 0 if it is not
/// there, and teo's tick rules then never fire (docs/idle.md).
fn tick_ns() -> u32 {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config =
        std::fs::read_to_string(format!("/boot/config-{}", release.trim())).unwrap_or_default();
    tick_ns_of(&config)
}

/// TICK_NSEC for the kernel configuration @config: (NSEC_PER_SEC + HZ/2) /
/// HZ (include/vdso/jiffies.h); 0 without a CONFIG_HZ line.
fn tick_ns_of(config: &str) -> u32 {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|hz| hz.trim().parse::<u32>().ok())
        .filter(|&hz| hz > 0)
        .map_or(0, |hz| (1_000_000_000 + hz / 2) / hz)
}

/// What the learner will run on: the tracepoint only with states to learn
/// for, the governor's sleep length only where a cpuidle governor asks for
/// it (else the tracepoint reads the time to the next timer event).
pub struct Plan {
    learn: bool,
    sleep_length: bool,
    tick_ns: u32,
}

impl Plan {
    pub fn new(states: &IdleStates) -> Plan {
        let learn = states.cpus.values().any(|s| !s.is_empty());
        // kallsyms is read only when its answer matters: it is megabytes,
        // and reading it took 3.5 s of an 18 s start in the TCG test VM.
        let sleep_length = learn
            && states.kernel_indices()
            && has_function(
                &std::fs::read_to_string("/proc/kallsyms").unwrap_or_default(),
                SLEEP_LENGTH_FN,
            );
        Plan {
            learn,
            sleep_length,
            tick_ns: if learn { tick_ns() } else { 0 },
        }
    }

    /// Before load: programs that would not run are not loaded.
    pub fn configure(&self, skel: &mut OpenBpfSkel) {
        skel.progs.cadence_cpu_idle.set_autoload(self.learn);
        // Fires only with a cpuidle driver; a test drives it in the VM.
        skel.progs.cadence_cpu_idle_miss.set_autoload(self.learn);
        skel.progs
            .cadence_sleep_length
            .set_autoload(self.sleep_length);
    }

    /// After load: each CPU's states and whether their indices are the
    /// kernel's, before anything is attached.
    pub fn install(&self, skel: &BpfSkel, states: &IdleStates) -> Result<()> {
        for (cpu, list) in &states.cpus {
            let ns = StatesNs::from_states(list);
            skel.maps
                .idle_states
                .update(&cpu.to_ne_bytes(), as_bytes(&ns.to_bpf()), MapFlags::ANY)
                .with_context(|| format!("writing CPU {cpu}'s idle states"))?;
        }
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut ctl: bpf_intf::cadence_idle_ctl = unsafe { std::mem::zeroed() };
        ctl.kernel_indices = states.kernel_indices() as u32;
        ctl.tick_ns = self.tick_ns;
        skel.maps
            .idle_ctl
            .update(&0u32.to_ne_bytes(), as_bytes(&ctl), MapFlags::ANY)
            .context("writing the idle_ctl map")?;
        Ok(())
    }

    /// What the log says about it.
    pub fn summary(&self) -> String {
        let sleep = match (self.learn, self.sleep_length) {
            (false, _) => {
                return "idle learner off: no idle states (see `scx_cadence idle-states`)".into();
            }
            (true, false) => {
                "idle learner on power:cpu_idle; sleep length: the time to the CPU's next timer event (no cpuidle governor asks for it)"
            }
            (true, true) => {
                "idle learner on power:cpu_idle, sleep length from tick_nohz_get_sleep_length, else the time to the CPU's next timer event"
            }
        };
        if self.tick_ns == 0 {
            format!(
                "{sleep}; tick length not known (no CONFIG_HZ in /boot/config-*): teo's tick rules off"
            )
        } else {
            format!("{sleep}; tick {} us (CONFIG_HZ)", self.tick_ns / 1000)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tick_comes_from_config_hz() {
        // HZ=250: 4 ms; HZ=300: TICK_NSEC rounds 3333333.3 to 3333333.
        assert_eq!(tick_ns_of("CONFIG_HZ_250=y\nCONFIG_HZ=250\n"), 4_000_000);
        assert_eq!(tick_ns_of("CONFIG_HZ=300\n"), 3_333_333);
        assert_eq!(tick_ns_of("CONFIG_HZ=1000"), 1_000_000);
        assert_eq!(tick_ns_of("# CONFIG_HZ_1000 is not set\n"), 0);
        assert_eq!(tick_ns_of(""), 0);
    }

    #[test]
    fn a_function_is_found_by_its_name_only() {
        let kallsyms = "ffffffff81100000 T tick_nohz_get_sleep_length\n\
                        ffffffff81100100 t tick_nohz_get_sleep_length_helper\n";
        assert!(has_function(kallsyms, SLEEP_LENGTH_FN));
        assert!(!has_function(
            "ffffffff81100100 t tick_nohz_get_sleep_length_helper\n",
            SLEEP_LENGTH_FN
        ));
    }
}
