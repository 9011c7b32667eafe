//! Hybrid parts (Intel P- and E-cores): each CPU's highest frequency over
//! the highest of all CPUs, x1024, for bpf/freq_ratio_math.bpf.h, which divides
//! an E-core's APERF/MPERF by its own maximum (as the kernel's
//! arch_set_cpu_capacity() and scale_freq_tick() do) instead of the
//! P-core's whenever the kernel scales that E-core's capacity.
//!
//! A machine is hybrid when the CPUs' cpuinfo_max_freq differ and one of
//! these says so: the perf PMU of Intel's E-cores (/sys/devices/cpu_atom,
//! with its `cpus`, which arch/x86/events/intel/core.c registers on hybrid
//! parts only, beside cpu_core), differing cpu_capacity (arm64; x86 kernels
//! create no such file), or a `hybrid_cpu` flag in /proc/cpuinfo (which
//! cpufeatures.h hides: kept for kernels that would show it). Differing
//! maxima alone (a favoured core of an ITMT part, or one whose limit
//! someone lowered) are not hybrid.

use std::collections::BTreeSet;
use std::path::Path;

/// What the loader puts in .rodata's cpu_freq_max_scale[].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hybrid {
    /// (cpu, cpuinfo_max_freq x 1024 / the highest, rounded); empty when
    /// the machine is not hybrid (the BPF side then changes nothing).
    pub scale: Vec<(usize, u16)>,
    /// One line for the start-up log.
    pub note: String,
}

fn read_num(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn has_hybrid_flag(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "hybrid_cpu"))
}

/// Whether the kernel registered a PMU for Intel's E-cores (a non-empty
/// devices/cpu_atom/cpus under @root).
fn has_atom_pmu(root: &Path) -> bool {
    std::fs::read_to_string(root.join("devices/cpu_atom/cpus"))
        .is_ok_and(|cpus| !cpus.trim().is_empty())
}

/// Reads @cpus' cpuinfo_max_freq and cpu_capacity under @root (/sys).
pub fn probe(root: &Path, cpuinfo: &str, cpus: &[usize]) -> Hybrid {
    let dir = root.join("devices/system/cpu");
    let mut max_khz = Vec::new();
    let mut caps = BTreeSet::new();
    for &cpu in cpus {
        let c = dir.join(format!("cpu{cpu}"));
        if let Some(khz) = read_num(&c.join("cpufreq/cpuinfo_max_freq")).filter(|&k| k > 0) {
            max_khz.push((cpu, khz));
        }
        if let Some(cap) = read_num(&c.join("cpu_capacity")) {
            caps.insert(cap);
        }
    }
    let highest = max_khz.iter().map(|&(_, k)| k).max().unwrap_or(0);
    let differ = max_khz.iter().any(|&(_, k)| k != highest);
    let atom = has_atom_pmu(root);
    let flag = has_hybrid_flag(cpuinfo);
    if !differ || !(atom || caps.len() > 1 || flag) {
        return Hybrid {
            scale: Vec::new(),
            note: "hybrid: no (one frequency reference for all CPUs)".into(),
        };
    }
    let scale: Vec<(usize, u16)> = max_khz
        .iter()
        .map(|&(cpu, k)| (cpu, ((k * 1024 + highest / 2) / highest) as u16))
        .collect();
    let smaller = scale.iter().filter(|&&(_, s)| s < 1024).count();
    let lowest = max_khz.iter().map(|&(_, k)| k).min().unwrap_or(0);
    Hybrid {
        note: format!(
            "hybrid: yes ({}), {smaller} CPUs with a lower maximum ({} to {} MHz): their \
             ratio is relative to their own maximum while the kernel scales their capacity",
            if atom {
                "an E-core PMU, cpu_atom"
            } else if flag {
                "hybrid_cpu flag"
            } else {
                "cpu_capacity differs"
            },
            lowest / 1000,
            highest / 1000
        ),
        scale,
    }
}
