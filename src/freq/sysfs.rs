//! Frequencies from sysfs: AMD's ACPI CPPC (acpi_cppc/) and cpufreq
//! (cpufreq/). @root is /sys, or a fixture directory in the tests.

use std::path::Path;

use super::table::FreqTable;

/// A number from a sysfs file; Err says which file and why.
fn read_num(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{} holds `{}`, not a number", path.display(), text.trim()))
}

/// CPPC_HIGHEST_PERF_PREFCORE and CPPC_HIGHEST_PERF_PERFORMANCE
/// (arch/x86/kernel/acpi/cppc.c): on parts with preferred cores,
/// highest_perf ranks the cores (and differs between them), so the kernel
/// takes its boost numerator from these constants instead.
const CPPC_HIGHEST_PERF_PREFCORE: u64 = 166;
const CPPC_HIGHEST_PERF_PERFORMANCE: u64 = 196;

/// Family and model from /proc/cpuinfo's first CPU.
fn cpuinfo_field(cpuinfo: &str, name: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(name))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim().to_string())
}

/// amd_get_boost_ratio_numerator(): highest_perf without preferred cores
/// (every CPU's highest_perf equal), else 196 on Zen 4 models 0x70-0x7f
/// (family 0x19) and 166 on the others. (Heterogeneous Zen 5 parts, where
/// the kernel takes each E-core's own highest_perf, are not told apart.)
pub(super) fn amd_boost_numerator(highest: &[u64], cpuinfo: &str) -> Option<u64> {
    let first = *highest.first()?;
    if highest.iter().all(|&h| h == first) {
        return Some(first);
    }
    let family = cpuinfo_field(cpuinfo, "cpu family").and_then(|f| f.parse::<u32>().ok());
    let model = cpuinfo_field(cpuinfo, "model").and_then(|m| m.parse::<u32>().ok());
    Some(match (family, model) {
        (Some(0x19), Some(0x70..=0x7f)) => CPPC_HIGHEST_PERF_PERFORMANCE,
        _ => CPPC_HIGHEST_PERF_PREFCORE,
    })
}

/// Whether /proc/cpuinfo's first CPU is an AMD one: the only x86 vendor
/// whose acpi_cppc the kernel reads in AMD's perf units (amd-pstate,
/// amd_get_boost_ratio_numerator()); Intel's is in HWP units, with
/// highest_perf differing between P- and E-cores.
fn is_amd(cpuinfo: &str) -> bool {
    cpuinfo_field(cpuinfo, "vendor_id").as_deref() == Some("AuthenticAMD")
}

/// Every CPU's acpi_cppc/highest_perf, in CPU order.
fn all_highest_perf(root: &Path) -> Vec<u64> {
    let cpu = root.join("devices/system/cpu");
    let mut ids: Vec<u32> = std::fs::read_dir(&cpu)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_prefix("cpu")?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids.iter()
        .filter_map(|i| read_num(&cpu.join(format!("cpu{i}/acpi_cppc/highest_perf"))).ok())
        .collect()
}

/// CPPC: highest_perf and nominal_perf are abstract performance levels;
/// nominal_freq (MHz) anchors them, so max = boost numerator x
/// nominal_freq / nominal_perf, which is also the kernel's reference
/// (amd_set_max_freq_ratio(): numerator / nominal_perf x1024).
pub(super) fn read_cppc(root: &Path, cpuinfo: &str, t: &mut FreqTable) {
    let dir = root.join("devices/system/cpu/cpu0/acpi_cppc");
    if !is_amd(cpuinfo) {
        t.notes
            .push("CPPC: not an AMD CPU, whose CPPC units this reads".to_string());
        return;
    }
    if !dir.is_dir() {
        t.notes.push(format!("CPPC: no {}", dir.display()));
        return;
    }
    let values = (|| -> Result<(u64, u64, u64), String> {
        Ok((
            read_num(&dir.join("highest_perf"))?,
            read_num(&dir.join("nominal_perf"))?,
            read_num(&dir.join("nominal_freq"))?,
        ))
    })();
    match values {
        Ok((_, 0, _)) | Ok((_, _, 0)) => t
            .notes
            .push("CPPC: nominal_perf or nominal_freq is 0".to_string()),
        Ok((highest0, nominal_perf, nominal_mhz)) => {
            let origin = "acpi_cppc";
            let all = all_highest_perf(root);
            let highest = amd_boost_numerator(&all, cpuinfo).unwrap_or(highest0);
            if highest != highest0 {
                t.notes.push(format!(
                    "CPPC: preferred cores (highest_perf differs between CPUs): boost numerator {highest}, as the kernel takes it"
                ));
            }
            FreqTable::offer(
                &mut t.base_mhz,
                nominal_mhz as u32,
                "base",
                origin,
                &mut t.notes,
            );
            let max = highest * nominal_mhz / nominal_perf;
            FreqTable::offer(&mut t.max_mhz, max as u32, "max", origin, &mut t.notes);
            FreqTable::offer(
                &mut t.kernel_ref_mhz,
                max as u32,
                "kernel reference",
                "acpi_cppc boost numerator",
                &mut t.notes,
            );
        }
        Err(e) => t.notes.push(format!("CPPC: {e}")),
    }
}

/// cpufreq: cpuinfo_max_freq (kHz) is the highest frequency, what
/// schedutil calls 1024, and, except on x86 (@x86), the reference of the
/// kernel's own ratio; cpuinfo_min_freq the lowest; base_frequency
/// (intel_pstate) is the base.
pub(super) fn read_cpufreq(root: &Path, x86: bool, t: &mut FreqTable) {
    let dir = root.join("devices/system/cpu/cpu0/cpufreq");
    if !dir.is_dir() {
        t.notes.push(format!("cpufreq: no {}", dir.display()));
        return;
    }
    let origin = "cpufreq";
    match read_num(&dir.join("cpuinfo_max_freq")) {
        Ok(khz) => {
            let mhz = (khz / 1000) as u32;
            FreqTable::offer(&mut t.max_mhz, mhz, "max", origin, &mut t.notes);
            FreqTable::offer(
                &mut t.cpufreq_max_mhz,
                mhz,
                "schedutil's 1024",
                origin,
                &mut t.notes,
            );
            // On x86 the kernel's ratio is relative to its max_freq_ratio
            // (MSRs or CPPC above), never to cpuinfo_max_freq.
            if !x86 {
                FreqTable::offer(
                    &mut t.kernel_ref_mhz,
                    mhz,
                    "kernel reference",
                    origin,
                    &mut t.notes,
                );
            }
        }
        Err(e) => t.notes.push(format!("cpufreq: {e}")),
    }
    if let Ok(khz) = read_num(&dir.join("cpuinfo_min_freq")) {
        FreqTable::offer(
            &mut t.min_mhz,
            (khz / 1000) as u32,
            "min",
            origin,
            &mut t.notes,
        );
    }
    if let Ok(khz) = read_num(&dir.join("base_frequency")) {
        FreqTable::offer(
            &mut t.base_mhz,
            (khz / 1000) as u32,
            "base",
            origin,
            &mut t.notes,
        );
    }
}
