//! bpf/freq_ratio_math.bpf.h (the APERF/MPERF tick of freq_ratio_tick()), run in the
//! host kernel through BPF_PROG_TEST_RUN of freq_run in
//! bpf/pelt_test.bpf.c, on a hybrid machine. Needs CAP_BPF and CAP_PERFMON (skipped without, src/bpf_test_progs.rs); it does
//! not need sched_ext.
//!
//! The machine (hand-encoded, i7-12700H-like, never measured): MPERF at the
//! 2300 MHz base, P-cores up to 4700 MHz, E-cores up to 3500 MHz, freq_max
//! = 4700, so freq_max_ratio = 4700 x 1024 / 2300 = 2092 and the loader's
//! E-core factor is round(3500 x 1024 / 4700) = 763.
//!
//! The expected ratios are the kernel's: with hybrid capacity scaling,
//! arch_set_cpu_capacity() gives the E-core freq_ratio = (3500 << 10) / 2300
//! = 1558, and scale_freq_tick() computes (acnt << 20) / (mcnt x 1558).

use crate::bpf_intf;
use crate::bpf_test_progs::{self, pelt as skel};

/// One 4 ms tick (HZ=250) of MPERF at the 2300 MHz base.
const MCNT: u64 = 2300 * 4000;
/// freq_max (4700 MHz) over the base, x1024, floored as the loader does.
const FREQ_MAX_RATIO: u32 = 2092;
/// The E-core (CPU 7 here): round(3500 x 1024 / 4700).
const E_CPU: i32 = 7;
const E_SCALE: u16 = 763;
/// An E-core's capacity as intel_pstate reports it on such a part (~0.6).
const E_CAP: u32 = 620;

struct Out {
    freq_scale: u32,
    clamped: u64,
}

/// The test program, loaded with E_CPU's factor.
struct FreqRatio {
    skel: skel::PeltTestSkel<'static>,
}

impl FreqRatio {
    /// None: skipped, this process may not load BPF (bpf_test_progs).
    fn load() -> Option<FreqRatio> {
        let skel = bpf_test_progs::load_with(skel::PeltTestSkelBuilder::default(), |open| {
            let rodata = open.maps.rodata_data.as_mut().unwrap();
            rodata.cpu_freq_max_scale[E_CPU as usize] = E_SCALE;
        })?;
        Some(FreqRatio { skel })
    }

    /// One tick of @acnt on @cpu of capacity @cpu_cap, from a fresh state.
    fn run(&self, acnt: u64, cpu: i32, cpu_cap: u32) -> Out {
        // SAFETY: plain-data struct from bindgen; all zeroes is valid.
        let mut ctx: bpf_intf::cadence_freq_test = unsafe { std::mem::zeroed() };
        ctx.acnt = acnt;
        ctx.mcnt = MCNT;
        ctx.freq_max_ratio = FREQ_MAX_RATIO;
        ctx.cpu_cap = cpu_cap;
        ctx.cpu = cpu;
        bpf_intf::test_run_in_place(&self.skel.progs.freq_run, &mut ctx);
        assert_eq!(ctx.error, 0, "freq_run refused its input");
        assert_eq!(ctx.no_ratio, 0, "no ratio from acnt {acnt}");
        assert_eq!(ctx.freq_ticks, 1);
        Out {
            freq_scale: ctx.freq_scale,
            clamped: ctx.freq_clamped,
        }
    }
}

/// The kernel's E-core ratio for @mhz: (acnt << 20) / (mcnt x 1558).
fn kernel_e(acnt: u64) -> u32 {
    ((acnt << 20) / (MCNT * 1558)) as u32
}

#[test]
fn e_core_at_its_own_max_is_1024() {
    let acnt = 3500 * 4000;
    // (14e6 << 20) / (9.2e6 x 1558) = 1024.2 -> 1024; before the fix the
    // P-core's 2092 gave 762 = 3500/4700, on top of the capacity.
    assert_eq!(kernel_e(acnt), 1024);
    let Some(bpf) = FreqRatio::load() else { return };
    let o = bpf.run(acnt, E_CPU, E_CAP);
    assert_eq!(o.freq_scale, 1024);
    assert_eq!(o.clamped, 0);
}

#[test]
fn e_core_below_its_max_matches_the_kernel() {
    // 2800 MHz = 80% of the E-core's 3500: 819 (not 610 = 2800/4700).
    let acnt = 2800 * 4000;
    assert_eq!(kernel_e(acnt), 819);
    let Some(bpf) = FreqRatio::load() else { return };
    assert_eq!(bpf.run(acnt, E_CPU, E_CAP).freq_scale, 819);
}

#[test]
fn p_core_and_kernels_without_hybrid_scaling_keep_the_global_ratio() {
    // A P-core (factor 0 = unset) at 2800 MHz: 2800/4700 x 1024 = 610.
    let acnt = 2800 * 4000;
    let Some(bpf) = FreqRatio::load() else { return };
    assert_eq!(bpf.run(acnt, 0, 1024).freq_scale, 610);
    // The E-core while the kernel reports capacity 1024 (no hybrid
    // capacity scaling): the kernel then uses arch_max_freq_ratio for every
    // CPU, so the ratio stays relative to the P-core's max.
    assert_eq!(bpf.run(acnt, E_CPU, 1024).freq_scale, 610);
}
