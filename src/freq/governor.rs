//! Whether the cpufreq hints can take effect. scx_bpf_cpuperf_set() only
//! sets the CPU's target for the scheduler-util hook (cpufreq_update_util);
//! of the cpufreq governors only schedutil reads it (kernel/sched/
//! cpufreq_schedutil.c). intel_pstate and amd-pstate in active mode have no
//! governor at all (setpolicy drivers: their scaling_governor `powersave`/
//! `performance` are the driver's own modes), and performance, powersave,
//! ondemand, conservative and userspace ignore the scheduler's util. So a
//! policy applies the hints if and only if its scaling_governor is
//! schedutil. Read once at start, from @root (/sys, or a fixture tree).

use std::collections::BTreeMap;
use std::path::Path;

/// The only governor that turns a cpuperf target into a frequency.
const SCHEDUTIL: &str = "schedutil";

/// What the cpufreq policies of this machine do with the hints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Governors {
    /// (driver, governor, driver mode) -> number of CPUs.
    pub groups: BTreeMap<(String, String, Option<String>), usize>,
    /// CPUs whose policy's governor is schedutil.
    pub applied_cpus: usize,
    /// CPUs under any cpufreq policy.
    pub policy_cpus: usize,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Number of CPUs in a cpulist such as "0-3,8".
fn cpulist_len(list: &str) -> usize {
    list.split(',')
        .filter_map(|r| {
            let mut it = r.trim().splitn(2, '-');
            let a: usize = it.next()?.parse().ok()?;
            let b: usize = match it.next() {
                Some(b) => b.parse().ok()?,
                None => a,
            };
            (b >= a).then_some(b - a + 1)
        })
        .sum()
}

/// The mode file of the setpolicy-capable drivers: intel_pstate/status
/// (active, passive, off) and amd_pstate/status (active, passive, guided,
/// disable). intel_pstate in passive mode registers as intel_cpufreq, and
/// amd-pstate in active mode as amd-pstate-epp.
fn driver_mode(root: &Path, driver: &str) -> Option<String> {
    let dir = match driver {
        "intel_pstate" | "intel_cpufreq" => "intel_pstate",
        d if d.starts_with("amd-pstate") => "amd_pstate",
        _ => return None,
    };
    read(&root.join("devices/system/cpu").join(dir).join("status"))
}

impl Governors {
    pub fn probe(root: &Path) -> Governors {
        let mut g = Governors::default();
        let dir = root.join("devices/system/cpu/cpufreq");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return g;
        };
        let mut policies: Vec<_> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("policy"))
            .map(|e| e.path())
            .collect();
        policies.sort();
        for p in policies {
            // affected_cpus: the online CPUs of the policy (related_cpus
            // also counts offline ones).
            let cpus = read(&p.join("affected_cpus"))
                .map(|l| l.split_whitespace().count())
                .or_else(|| read(&p.join("related_cpus")).map(|l| cpulist_len(&l)))
                .unwrap_or(1);
            let driver = read(&p.join("scaling_driver")).unwrap_or_else(|| "unknown".into());
            let governor = read(&p.join("scaling_governor")).unwrap_or_else(|| "none".into());
            let mode = driver_mode(root, &driver);
            if governor == SCHEDUTIL {
                g.applied_cpus += cpus;
            }
            g.policy_cpus += cpus;
            *g.groups.entry((driver, governor, mode)).or_default() += cpus;
        }
        g
    }

    /// True if every CPU under cpufreq runs schedutil.
    pub fn all_applied(&self) -> bool {
        self.policy_cpus > 0 && self.applied_cpus == self.policy_cpus
    }

    /// One line for the log and the stats, e.g. "cpufreq: intel_pstate
    /// active (powersave), hints not applied".
    pub fn summary(&self) -> String {
        if self.policy_cpus == 0 {
            return "cpufreq: no cpufreq driver, hints not applied".into();
        }
        let parts: Vec<String> = self
            .groups
            .iter()
            .map(|((driver, governor, mode), n)| {
                let mode = mode.as_deref().map(|m| format!(" {m}")).unwrap_or_default();
                let cpus = if self.groups.len() > 1 {
                    format!(" on {n} CPUs")
                } else {
                    String::new()
                };
                format!("{driver}{mode} ({governor}){cpus}")
            })
            .collect();
        let verdict = if self.all_applied() {
            "hints applied".to_string()
        } else if self.applied_cpus == 0 {
            "hints not applied (needs the schedutil governor)".to_string()
        } else {
            format!(
                "hints applied on {} of {} CPUs (the others need the schedutil governor)",
                self.applied_cpus, self.policy_cpus
            )
        };
        format!("cpufreq: {}, {verdict}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/governor")
            .join(name)
    }

    #[test]
    fn intel_pstate_active_ignores_the_hints() {
        let g = Governors::probe(&fixture("intel-pstate-active"));
        assert_eq!((g.applied_cpus, g.policy_cpus), (0, 4));
        assert!(!g.all_applied());
        assert_eq!(
            g.summary(),
            "cpufreq: intel_pstate active (powersave), hints not applied (needs the schedutil governor)"
        );
    }

    #[test]
    fn intel_pstate_passive_with_schedutil_applies_them() {
        let g = Governors::probe(&fixture("intel-passive-schedutil"));
        assert_eq!((g.applied_cpus, g.policy_cpus), (4, 4));
        assert_eq!(
            g.summary(),
            "cpufreq: intel_cpufreq passive (schedutil), hints applied"
        );
    }

    #[test]
    fn amd_pstate_epp_and_a_mixed_machine() {
        let g = Governors::probe(&fixture("amd-pstate-active"));
        assert_eq!((g.applied_cpus, g.policy_cpus), (0, 2));
        assert!(
            g.summary()
                .starts_with("cpufreq: amd-pstate-epp active (powersave), hints not applied")
        );
        // acpi-cpufreq, one policy on schedutil (CPUs 0-1) and one on
        // performance (CPUs 2-3).
        let g = Governors::probe(&fixture("acpi-mixed"));
        assert_eq!((g.applied_cpus, g.policy_cpus), (2, 4));
        assert_eq!(
            g.summary(),
            "cpufreq: acpi-cpufreq (performance) on 2 CPUs, acpi-cpufreq (schedutil) on 2 CPUs, \
             hints applied on 2 of 4 CPUs (the others need the schedutil governor)"
        );
    }

    #[test]
    fn no_cpufreq_says_so() {
        // The test VM: /sys/devices/system/cpu has no cpufreq directory.
        let g = Governors::probe(&fixture("no-cpufreq"));
        assert_eq!(g, Governors::default());
        assert_eq!(g.summary(), "cpufreq: no cpufreq driver, hints not applied");
    }

    #[test]
    fn cpulists_count_cpus() {
        assert_eq!(cpulist_len("0-3,8"), 5);
        assert_eq!(cpulist_len("7"), 1);
        assert_eq!(cpulist_len(""), 0);
    }
}
