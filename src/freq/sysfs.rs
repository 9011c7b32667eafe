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

/// CPPC: highest_perf and nominal_perf are abstract performance levels;
/// nominal_freq (MHz) anchors them, so highest = highest_perf x
/// nominal_freq / nominal_perf.
pub(super) fn read_cppc(root: &Path, t: &mut FreqTable) {
    let dir = root.join("devices/system/cpu/cpu0/acpi_cppc");
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
        Ok((highest, nominal_perf, nominal_mhz)) => {
            let origin = "acpi_cppc";
            FreqTable::offer(
                &mut t.base_mhz,
                nominal_mhz as u32,
                "base",
                origin,
                &mut t.notes,
            );
            let max = highest * nominal_mhz / nominal_perf;
            FreqTable::offer(&mut t.max_mhz, max as u32, "max", origin, &mut t.notes);
        }
        Err(e) => t.notes.push(format!("CPPC: {e}")),
    }
}

/// cpufreq: cpuinfo_max_freq (kHz) is the highest frequency and the
/// reference of the kernel's own ratio; cpuinfo_min_freq the lowest;
/// base_frequency (intel_pstate) is the base.
pub(super) fn read_cpufreq(root: &Path, t: &mut FreqTable) {
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
                &mut t.kernel_ref_mhz,
                mhz,
                "kernel reference",
                origin,
                &mut t.notes,
            );
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
