//! Intel's frequency MSRs through /dev/cpu/N/msr (the msr module, loaded
//! if missing): MSR_PLATFORM_INFO for base and efficiency ratios,
//! MSR_TURBO_RATIO_LIMIT for the turbo ratio of each active-core count,
//! MSR_IA32_MISC_ENABLE for turbo being disabled. Ratios are in units of
//! the 100 MHz bus clock (Sandy Bridge and later).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::table::FreqTable;

/// MSR_PLATFORM_INFO: bits 15:8 base ratio, bits 47:40 max efficiency ratio.
const MSR_PLATFORM_INFO: u64 = 0xce;
/// MSR_IA32_MISC_ENABLE: bit 38 set means turbo is disabled.
const MSR_IA32_MISC_ENABLE: u64 = 0x1a0;
const MISC_ENABLE_TURBO_DISABLE: u64 = 1 << 38;
/// MSR_TURBO_RATIO_LIMIT: byte n is a turbo ratio; for which core count
/// depends on the model (below).
const MSR_TURBO_RATIO_LIMIT: u64 = 0x1ad;
/// MSR_TURBO_RATIO_LIMIT1 on group-size models: byte n is the number of
/// active cores byte n of MSR_TURBO_RATIO_LIMIT applies up to.
const MSR_TURBO_RATIO_LIMIT1: u64 = 0x1ae;
/// Bus clock: ratios are multiples of 100 MHz.
const BUS_MHZ: u32 = 100;

/// Family-6 models whose MSR_TURBO_RATIO_LIMIT holds core-count groups
/// (sizes in MSR_TURBO_RATIO_LIMIT1) instead of 1C, 2C, ... in order:
/// Skylake-X and its successors (Cascade/Cooper Lake share 0x55), Ice
/// Lake-X/D, Sapphire/Emerald/Granite Rapids, and the Goldmont-based Atoms.
/// As the kernel's arch/x86/kernel/cpu/aperfmperf.c distinguishes them.
const GROUP_MODELS: &[u32] = &[
    0x55, 0x6a, 0x6c, 0x8f, 0xcf, 0xad, 0xae, 0x5c, 0x5f, 0x7a, 0x86,
];

fn read_msr(file: &File, reg: u64) -> std::io::Result<u64> {
    let mut buf = [0u8; 8];
    file.read_exact_at(&mut buf, reg)?;
    Ok(u64::from_le_bytes(buf))
}

/// Family and model from /proc/cpuinfo, if this is an Intel CPU.
fn intel_model() -> Option<(u32, u32)> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
    };
    if field("vendor_id")? != "GenuineIntel" {
        return None;
    }
    Some((
        field("cpu family")?.parse().ok()?,
        field("model")?.parse().ok()?,
    ))
}

/// The turbo ratio of each active-core count, from the two MSRs.
pub(super) fn turbo_ratios(limit: u64, groups: Option<u64>) -> Vec<u32> {
    let bytes = |v: u64| (0..8).map(move |i| ((v >> (8 * i)) & 0xff) as u32);
    let mut out = Vec::new();
    match groups {
        None => out.extend(bytes(limit).take_while(|&r| r > 0)),
        Some(g) => {
            for (ratio, upto) in bytes(limit).zip(bytes(g)) {
                if ratio == 0 || upto as usize <= out.len() {
                    break;
                }
                out.resize(upto as usize, ratio);
            }
        }
    }
    out
}

pub(super) fn read_intel(t: &mut FreqTable) {
    let Some((family, model)) = intel_model() else {
        t.notes.push("MSRs: not an Intel CPU".to_string());
        return;
    };
    let dev = Path::new("/dev/cpu/0/msr");
    if !dev.exists() {
        // Quietly: where the module does not exist, the note below says
        // what is missing, in the loader's own words.
        let _ = Command::new("modprobe")
            .arg("msr")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let file = match File::open(dev) {
        Ok(f) => f,
        Err(e) => {
            t.notes.push(format!(
                "MSRs: cannot open {} ({e}); `modprobe msr` as root",
                dev.display()
            ));
            return;
        }
    };
    let platform = match read_msr(&file, MSR_PLATFORM_INFO) {
        Ok(v) => v,
        Err(e) => {
            t.notes
                .push(format!("MSRs: cannot read MSR_PLATFORM_INFO ({e})"));
            return;
        }
    };
    let origin = "MSR_PLATFORM_INFO";
    FreqTable::offer(
        &mut t.base_mhz,
        ((platform >> 8) & 0xff) as u32 * BUS_MHZ,
        "base",
        origin,
        &mut t.notes,
    );
    FreqTable::offer(
        &mut t.efficiency_mhz,
        ((platform >> 40) & 0xff) as u32 * BUS_MHZ,
        "efficiency",
        origin,
        &mut t.notes,
    );
    if read_msr(&file, MSR_IA32_MISC_ENABLE).is_ok_and(|v| v & MISC_ENABLE_TURBO_DISABLE != 0) {
        t.notes
            .push("turbo: disabled (MSR_IA32_MISC_ENABLE bit 38)".to_string());
        return;
    }
    let Ok(limit) = read_msr(&file, MSR_TURBO_RATIO_LIMIT) else {
        t.notes
            .push("turbo: MSR_TURBO_RATIO_LIMIT unreadable".to_string());
        return;
    };
    let groups = (family == 6 && GROUP_MODELS.contains(&model))
        .then(|| read_msr(&file, MSR_TURBO_RATIO_LIMIT1).ok())
        .flatten();
    let ratios = turbo_ratios(limit, groups);
    if t.turbo_mhz.is_empty() && !ratios.is_empty() {
        t.turbo_mhz = ratios.iter().map(|r| r * BUS_MHZ).collect();
        let how = if groups.is_some() {
            " with group sizes from MSR_TURBO_RATIO_LIMIT1"
        } else {
            ""
        };
        t.notes.push(format!(
            "turbo 1c..{}c: MSR_TURBO_RATIO_LIMIT{how}",
            ratios.len()
        ));
        FreqTable::offer(
            &mut t.max_mhz,
            t.turbo_mhz[0],
            "max (1c turbo)",
            "MSR_TURBO_RATIO_LIMIT",
            &mut t.notes,
        );
    }
}
