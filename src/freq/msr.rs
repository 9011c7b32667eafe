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
/// Lake-X/D, Sapphire/Emerald/Granite Rapids, Sierra Forest, and the
/// Goldmont/Tremont Atoms. This is the hardware's encoding as turbostat
/// reads it (tools/power/x86/turbostat, TRL_CORECOUNT), not the kernel's
/// list: the kernel's frequency invariance (arch/x86/kernel/cpu/
/// aperfmperf.c) knows groups only on Skylake-X and the Goldmonts, and
/// reads every other model as 1C..8C (see kernel_turbo_ratio()).
const GROUP_MODELS: &[u32] = &[
    0x55, 0x6a, 0x6c, 0x8f, 0xcf, 0xad, 0xae, 0xaf, 0x5c, 0x5f, 0x7a, 0x86,
];
/// Xeon Phi Knights Landing (0x57) and Knights Mill (0x85): the MSR holds
/// a first group (bits 7:1 cores, 15:8 ratio) and then, per byte, more
/// cores (bits 4:0) at a lower ratio (bits 7:5 the decrease).
const KNL_MODELS: &[u32] = &[0x57, 0x85];
/// The kernel's own group lists (aperfmperf.c): has_skx_turbo_ratio_limits
/// (Skylake-X) and has_glm_turbo_ratio_limits (Goldmont, -D, Plus).
const KERNEL_SKX_MODELS: &[u32] = &[0x55];
const KERNEL_GLM_MODELS: &[u32] = &[0x5c, 0x5f, 0x7a];

/// The MSR values of one Intel CPU, as read or as recorded in a fixture.
#[derive(Clone, Debug, Default)]
pub(super) struct MsrValues {
    pub family: u32,
    pub model: u32,
    pub platform_info: u64,
    pub misc_enable: Option<u64>,
    pub turbo_ratio_limit: Option<u64>,
    pub turbo_ratio_limit1: Option<u64>,
}

impl MsrValues {
    fn is(&self, models: &[u32]) -> bool {
        self.family == 6 && models.contains(&self.model)
    }

    fn turbo_disabled(&self) -> bool {
        self.misc_enable
            .is_some_and(|v| v & MISC_ENABLE_TURBO_DISABLE != 0)
    }

    /// The turbo ratio of each active-core count, as the hardware means it.
    pub fn turbo_ratios(&self) -> Vec<u32> {
        let Some(limit) = self.turbo_ratio_limit else {
            return Vec::new();
        };
        if self.is(KNL_MODELS) {
            return knl_turbo_ratios(limit);
        }
        let groups = if self.is(GROUP_MODELS) {
            self.turbo_ratio_limit1
        } else {
            None
        };
        turbo_ratios(limit, groups)
    }

    /// The ratio the kernel's frequency invariance calls 1024
    /// (intel_set_max_freq_ratio() in aperfmperf.c): 1C on the Goldmonts,
    /// the second-highest ratio on Xeon Phi, the first group of at least 4
    /// cores on Skylake-X, else byte 3 ("4C") or, if 0, byte 0; the base
    /// ratio when turbo is off. None on models it gives up on.
    pub fn kernel_turbo_ratio(&self) -> Option<u32> {
        let base = ((self.platform_info >> 8) & 0xff) as u32;
        if self.turbo_disabled() {
            return Some(base);
        }
        let limit = self.turbo_ratio_limit?;
        let byte = |v: u64, i: u32| ((v >> (8 * i)) & 0xff) as u32;
        let ratio = if self.is(KERNEL_GLM_MODELS) || self.is(KERNEL_SKX_MODELS) {
            let size = if self.is(KERNEL_GLM_MODELS) { 1 } else { 4 };
            let groups = self.turbo_ratio_limit1?;
            (0..8)
                .find(|&i| byte(groups, i) >= size)
                .map(|i| byte(limit, i))?
        } else if self.is(KNL_MODELS) {
            // The ratio after the first non-zero decrease.
            let first = byte(limit, 1);
            (2..8)
                .map(|i| byte(limit, i) >> 5)
                .find(|&d| d != 0)
                .map(|d| first.saturating_sub(d))?
        } else {
            match byte(limit, 3) {
                0 => byte(limit, 0),
                r => r,
            }
        };
        (ratio > 0).then_some(ratio)
    }
}

/// Xeon Phi's delta encoding, expanded to one ratio per active-core count.
pub(super) fn knl_turbo_ratios(limit: u64) -> Vec<u32> {
    let mut cores = ((limit >> 1) & 0x7f) as usize;
    let mut ratio = ((limit >> 8) & 0xff) as u32;
    let mut out = vec![ratio; cores];
    for i in (16..64).step_by(8) {
        let more = ((limit >> i) & 0x1f) as usize;
        let down = ((limit >> (i + 5)) & 0x7) as u32;
        if more == 0 || down > ratio {
            break;
        }
        cores += more;
        ratio -= down;
        out.resize(cores, ratio);
    }
    out
}

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
    let values = MsrValues {
        family,
        model,
        platform_info: platform,
        misc_enable: read_msr(&file, MSR_IA32_MISC_ENABLE).ok(),
        turbo_ratio_limit: read_msr(&file, MSR_TURBO_RATIO_LIMIT).ok(),
        turbo_ratio_limit1: read_msr(&file, MSR_TURBO_RATIO_LIMIT1).ok(),
    };
    apply(&values, t);
}

/// Fills @t from one CPU's MSR values.
pub(super) fn apply(v: &MsrValues, t: &mut FreqTable) {
    let origin = "MSR_PLATFORM_INFO";
    let platform = v.platform_info;
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
    // The kernel's reference, whatever the turbo state below.
    if let Some(r) = v.kernel_turbo_ratio() {
        FreqTable::offer(
            &mut t.kernel_ref_mhz,
            r * BUS_MHZ,
            "kernel reference (its max_freq_ratio)",
            "MSR_TURBO_RATIO_LIMIT as aperfmperf.c reads it",
            &mut t.notes,
        );
    }
    if v.turbo_disabled() {
        t.notes
            .push("turbo: disabled (MSR_IA32_MISC_ENABLE bit 38)".to_string());
        return;
    }
    if v.turbo_ratio_limit.is_none() {
        t.notes
            .push("turbo: MSR_TURBO_RATIO_LIMIT unreadable".to_string());
        return;
    }
    let ratios = v.turbo_ratios();
    if t.turbo_mhz.is_empty() && !ratios.is_empty() {
        t.turbo_mhz = ratios.iter().map(|r| r * BUS_MHZ).collect();
        let how = if v.is(KNL_MODELS) {
            " (Xeon Phi deltas)"
        } else if v.is(GROUP_MODELS) && v.turbo_ratio_limit1.is_some() {
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
