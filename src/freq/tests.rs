use std::path::Path;

use super::choice::FreqMax;
use super::msr::{self, MsrValues};
use super::table::FreqTable;
use super::{list, sysfs};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/freq")
        .join(name)
}

/// The seed's 8x-SKYLAKE-UMA: base 3500, 4C 3700, 3C 3800, 2C/1C 3900.
fn skylake() -> FreqTable {
    FreqTable {
        efficiency_mhz: Some(800),
        base_mhz: Some(3500),
        turbo_mhz: vec![3900, 3900, 3800, 3700],
        max_mhz: Some(3900),
        kernel_ref_mhz: None,
        cpufreq_max_mhz: None,
        min_mhz: None,
        notes: vec!["fixture".into()],
    }
}

#[test]
fn choices_parse_and_bad_ones_say_what_is_valid() {
    assert_eq!("4c".parse::<FreqMax>().unwrap(), FreqMax::Turbo(4));
    assert_eq!("BASE".parse::<FreqMax>().unwrap(), FreqMax::Base);
    assert_eq!("2400".parse::<FreqMax>().unwrap(), FreqMax::Mhz(2400));
    assert_eq!("2400MHz".parse::<FreqMax>().unwrap(), FreqMax::Mhz(2400));
    for bad in ["0c", "fast", "99999", "c", "-1"] {
        let e = bad.parse::<FreqMax>().unwrap_err().to_string();
        assert!(e.contains(bad) && e.contains("base, max"), "{e}");
    }
}

#[test]
fn auto_is_4c_where_turbo_is_known_else_max() {
    let t = skylake();
    assert_eq!(t.resolve(FreqMax::Auto).unwrap().mhz, Some(3700));
    let no_turbo = FreqTable {
        turbo_mhz: vec![],
        ..skylake()
    };
    assert_eq!(no_turbo.resolve(FreqMax::Auto).unwrap().mhz, Some(3900));
    assert_eq!(
        FreqTable::default().resolve(FreqMax::Auto).unwrap().mhz,
        None
    );
}

#[test]
fn ratios_follow_the_kernels_formulas() {
    let t = skylake();
    // arch_max_freq_ratio = 4C turbo / base x1024 = 3700 / 3500 x 1024.
    let r = t.resolve(FreqMax::Turbo(4)).unwrap();
    assert_eq!(r.freq_max_ratio(&t), 3700 * 1024 / 3500);
    assert_eq!(t.resolve(FreqMax::Base).unwrap().freq_max_ratio(&t), 1024);
    // cpuperf: kernel reference 4900 MHz, freq_max 2450 -> x2.
    let k = FreqTable {
        kernel_ref_mhz: Some(4900),
        cpufreq_max_mhz: Some(4900),
        ..FreqTable::default()
    };
    assert_eq!(
        k.resolve(FreqMax::Mhz(2450)).unwrap().cpuperf_scale(&k),
        2048
    );
}

#[test]
fn unavailable_choice_names_the_available_ones() {
    let t = skylake();
    let e = t.resolve(FreqMax::Turbo(8)).unwrap_err().to_string();
    assert!(e.contains("`8c` is not available"), "{e}");
    for c in [
        "1c (3900 MHz)",
        "4c (3700 MHz)",
        "base (3500 MHz)",
        "max (3900 MHz)",
    ] {
        assert!(e.contains(c), "{c} missing in {e}");
    }
    let e = FreqTable::default()
        .resolve(FreqMax::Base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("auto (no frequency known"), "{e}");
}

#[test]
fn turbo_ratio_limit_in_order_and_in_groups() {
    // Bytes 1C..4C = 39, 39, 38, 37 (the seed's Skylake), then zeros.
    assert_eq!(msr::turbo_ratios(0x2526_2727, None), vec![39, 39, 38, 37]);
    // Groups: ratio 36 up to 2 cores, 34 up to 4, 30 up to 8.
    let limit = 0x1e_22_24;
    let groups = 0x08_04_02;
    assert_eq!(
        msr::turbo_ratios(limit, Some(groups)),
        vec![36, 36, 34, 34, 30, 30, 30, 30]
    );
}

#[test]
fn sysfs_sources_and_their_failures() {
    let amd = "vendor_id\t: AuthenticAMD\n";
    let mut t = FreqTable::default();
    sysfs::read_cppc(&fixture("amd-cppc"), amd, &mut t);
    assert_eq!((t.base_mhz, t.max_mhz), (Some(3000), Some(4150)));
    // Another vendor's acpi_cppc is not in AMD's units: left alone.
    let mut t = FreqTable::default();
    sysfs::read_cppc(&fixture("amd-cppc"), "vendor_id\t: GenuineIntel\n", &mut t);
    assert_eq!((t.base_mhz, t.max_mhz), (None, None));
    assert!(
        t.notes.iter().any(|n| n.contains("not an AMD CPU")),
        "{:?}",
        t.notes
    );

    let mut t = FreqTable::default();
    sysfs::read_cpufreq(&fixture("intel-pstate"), true, &mut t);
    // On x86 cpuinfo_max_freq is schedutil's 1024, not the kernel's reference.
    assert_eq!(
        (t.base_mhz, t.max_mhz, t.cpufreq_max_mhz, t.min_mhz),
        (Some(2100), Some(4900), Some(4900), Some(800))
    );
    assert_eq!(t.kernel_ref_mhz, None);
    let mut arm = FreqTable::default();
    sysfs::read_cpufreq(&fixture("intel-pstate"), false, &mut arm);
    assert_eq!(arm.kernel_ref_mhz, Some(4900));
    assert_eq!(t.fmin_mhz(), Some(800));
    // freq_max = base: util 1024 is 2100 MHz, a cpuperf target of 2100/4900.
    let base = t.resolve(FreqMax::Base).unwrap();
    assert_eq!(base.cpufreq_scale(&t), 2100 * 1024 / 4900);

    let mut t = FreqTable::default();
    sysfs::read_cpufreq(&fixture("broken-cpufreq"), true, &mut t);
    sysfs::read_cppc(&fixture("broken-cpufreq"), amd, &mut t);
    assert_eq!(t.max_mhz, None);
    let notes = t.notes.join("\n");
    assert!(notes.contains("holds `garbage`, not a number"), "{notes}");
    assert!(notes.contains("CPPC: no "), "{notes}");
}

#[test]
fn list_draws_bars_and_marks_the_choice() {
    let text = list::render(&skylake(), FreqMax::Auto);
    assert!(
        text.contains("BASE    3500 |***********************************\n"),
        "{text}"
    );
    assert!(
        text.contains("4C      3700 |*************************************  <- freq_max"),
        "{text}"
    );
    assert!(
        text.contains("In force: freq_max = auto (3700 MHz)"),
        "{text}"
    );
    let none = list::render(&FreqTable::default(), FreqMax::Auto);
    assert!(none.contains("ratios stay 1024"), "{none}");
}

#[test]
fn a_refused_perf_read_probe_passes_aperf_over() {
    use super::probe::refusal_reason;
    use super::source::{SourceKind, decide};
    // The 6.12 verifier's words for a helper the program type lacks
    // (kernel/bpf/verifier.c, check_helper_call(); helper #55).
    let log = vec![
        "libbpf: prog 'cadence_tick': BPF program load failed: Invalid argument\n".to_string(),
        "libbpf: prog 'cadence_tick': -- BEGIN PROG LOAD LOG --\n".to_string(),
        "program of this type cannot use helper bpf_perf_event_read_value#55\nprocessed 412 insns\n"
            .to_string(),
        "libbpf: prog 'cadence_tick': -- END PROG LOAD LOG --\n".to_string(),
    ];
    let why = refusal_reason(&log, "Failed to load BPF program");
    assert_eq!(
        why,
        "program of this type cannot use helper bpf_perf_event_read_value#55"
    );
    // No log at all: the error itself.
    assert_eq!(refusal_reason(&[], "EINVAL"), "EINVAL");

    // Probe allowed: aperf. Refused: cpuperf, and the one line says why.
    let (k, _) = decide(false, Ok(()), Ok(()), None);
    assert_eq!(k, SourceKind::Aperf);
    let (k, line) = decide(false, Ok(()), Ok(()), Some(&why));
    assert_eq!(k, SourceKind::Cpuperf);
    assert!(!line.contains('\n'), "{line}");
    assert!(line.starts_with("frequency source: cpuperf"), "{line}");
    assert!(
        line.contains("cannot use helper bpf_perf_event_read_value#55"),
        "{line}"
    );
    // No cpufreq either: none, with both reasons.
    let (k, line) = decide(false, Ok(()), Err("no cpufreq driver".into()), Some(&why));
    assert_eq!(k, SourceKind::None);
    assert!(line.contains("aperf: this kernel refuses") && line.contains("cpuperf: no cpufreq"));
    // Without a refusal, an unusable aperf passes to cpuperf as before.
    let (k, line) = decide(false, Err("no msr PMU".into()), Ok(()), None);
    assert_eq!(k, SourceKind::Cpuperf);
    assert!(line.contains("aperf: no msr PMU"), "{line}");
}

/// One recorded MSR fixture: `family N`, `model 0xNN`, then `0xREG 0xVALUE`.
fn msr_fixture(name: &str, model: Option<u32>) -> MsrValues {
    let text = std::fs::read_to_string(fixture("msr").join(name)).unwrap();
    let mut v = MsrValues::default();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (k, val) = line.split_once(' ').unwrap();
        match k {
            "family" => v.family = val.parse().unwrap(),
            "model" => v.model = hex(val) as u32,
            "0xce" => v.platform_info = hex(val),
            "0x1a0" => v.misc_enable = Some(hex(val)),
            "0x1ad" => v.turbo_ratio_limit = Some(hex(val)),
            "0x1ae" => v.turbo_ratio_limit1 = Some(hex(val)),
            _ => panic!("{name}: unknown line {line}"),
        }
    }
    if let Some(m) = model {
        v.model = m;
    }
    v
}

fn table_of(v: &MsrValues) -> FreqTable {
    let mut t = FreqTable::default();
    msr::apply(v, &mut t);
    t
}

#[test]
fn group_encoded_models_include_sierra_forest() {
    // The recorded 48-core dump, as turbostat decoded it: 38 up to 24 cores,
    // 37 up to 30, 36 up to 34, 35 up to 38, 33 up to 44, 32 up to 48.
    let mut want = vec![3800; 24];
    want.extend([3700; 6]);
    want.extend([3600; 4]);
    want.extend([3500; 4]);
    want.extend([3300; 6]);
    want.extend([3200; 4]);
    for model in [0x55, 0x6a, 0x8f, 0xad, 0xaf] {
        let t = table_of(&msr_fixture("xeon-48c-groups", Some(model)));
        assert_eq!(t.turbo_mhz, want, "model {model:#x}");
        assert_eq!((t.base_mhz, t.max_mhz), (Some(2400), Some(3800)));
    }
}

#[test]
fn kernel_reference_is_its_max_freq_ratio() {
    // Skylake-X: the first group of at least 4 cores (aperfmperf.c,
    // skx_set_max_freq_ratio(.., 4)): group 0, 24 cores at 38.
    let skx = msr_fixture("xeon-48c-groups", None);
    assert_eq!(skx.kernel_turbo_ratio(), Some(38));
    // Ice Lake-X has the same encoding but the kernel reads byte 3 as "4C":
    // 0x23 = 35. The reference follows the kernel, not the hardware.
    let icx = msr_fixture("xeon-48c-groups", Some(0x6a));
    assert_eq!(icx.kernel_turbo_ratio(), Some(35));
    // Client Skylake: 4C turbo, 37; the table's reference is 3700 MHz.
    let t = table_of(&msr_fixture("skylake-client", None));
    assert_eq!(t.kernel_ref_mhz, Some(3700));
    assert_eq!(t.turbo_mhz, vec![3900, 3900, 3800, 3700]);
    // Turbo off: arch_set_max_freq_ratio(true) makes the base the reference.
    let t = table_of(&msr_fixture("turbo-off", None));
    assert_eq!((t.kernel_ref_mhz, t.base_mhz), (Some(3500), Some(3500)));
    assert!(t.turbo_mhz.is_empty());
    // cpuperf at freq_max 4c on the client part: the kernel's ratio is
    // already relative to 3700 MHz, so the rescale is x1.
    let t = table_of(&msr_fixture("skylake-client", None));
    let r = t.resolve(FreqMax::Turbo(4)).unwrap();
    assert_eq!(r.cpuperf_scale(&t), 1024);
}

#[test]
fn xeon_phi_turbo_is_delta_encoded() {
    let v = msr_fixture("knl-deltas", None);
    let mut want = vec![1600; 2];
    want.extend([1500; 61]);
    let t = table_of(&v);
    assert_eq!(t.turbo_mhz, want);
    assert_eq!((t.base_mhz, t.max_mhz), (Some(1300), Some(1600)));
    // knl_set_max_freq_ratio(.., 1): the ratio after the first decrease.
    assert_eq!(t.kernel_ref_mhz, Some(1500));
}

#[test]
fn amd_preferred_cores_use_the_kernels_boost_numerator() {
    // Zen 4 Raphael (family 0x19, model 0x61): 166.
    let raphael = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 97\n";
    let mut t = FreqTable::default();
    sysfs::read_cppc(&fixture("amd-prefcore"), raphael, &mut t);
    assert_eq!(
        (t.base_mhz, t.max_mhz),
        (Some(3000), Some(166 * 3000 / 120))
    );
    assert_eq!(t.kernel_ref_mhz, t.max_mhz);
    // Zen 4 Phoenix (model 0x74): 196 (bugzilla 218759).
    let phoenix = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 116\n";
    let mut t = FreqTable::default();
    sysfs::read_cppc(&fixture("amd-prefcore"), phoenix, &mut t);
    assert_eq!(t.max_mhz, Some(196 * 3000 / 120));
    // Without preferred cores (every highest_perf equal): highest_perf.
    assert_eq!(sysfs::amd_boost_numerator(&[200, 200], raphael), Some(200));
}

#[test]
fn no_aperfmperf_means_no_kernel_ratio() {
    let mut t = table_of(&msr_fixture("skylake-client", None));
    t.check_kernel_invariance(true, "flags\t\t: fpu vme constant_tsc aperfmperf_x\n");
    assert_eq!(t.kernel_ref_mhz, None);
    assert!(t.notes.iter().any(|n| n.contains("invariance is off")));
    let mut t = table_of(&msr_fixture("skylake-client", None));
    t.check_kernel_invariance(true, "flags\t\t: fpu constant_tsc aperfmperf tsc\n");
    assert_eq!(t.kernel_ref_mhz, Some(3700));
}

#[test]
fn hybrid_e_cores_get_their_own_maximum_over_the_highest() {
    use super::hybrid::probe;
    let cpus: Vec<usize> = (0..20).collect();
    // round(3500 x 1024 / 4700) = round(762.55) = 763; P-cores 1024.
    let want: Vec<(usize, u16)> = (0..20)
        .map(|c| (c, if c < 12 { 1024 } else { 763 }))
        .collect();
    let h = probe(&fixture("hybrid-adl"), "", &cpus);
    assert_eq!(h.scale, want, "{}", h.note);
    assert!(h.note.contains("8 CPUs"), "{}", h.note);
    // No cpu_capacity files: the hybrid_cpu flag decides.
    let flags = "processor\t: 0\nflags\t\t: fpu aperfmperf hybrid_cpu\n";
    let h = probe(&fixture("hybrid-adl-nocap"), flags, &cpus);
    assert_eq!(h.scale, want, "{}", h.note);
    // Maxima that differ without either sign are not hybrid.
    let h = probe(
        &fixture("hybrid-adl-nocap"),
        "flags\t: fpu aperfmperf\n",
        &cpus,
    );
    assert!(h.scale.is_empty(), "{}", h.note);
    // One kind of core: nothing to do.
    let h = probe(&fixture("hybrid-adl"), flags, &(0..12).collect::<Vec<_>>());
    assert!(h.scale.is_empty(), "{}", h.note);
    // No cpufreq at all.
    let h = probe(&fixture("amd-cppc"), flags, &cpus);
    assert!(h.scale.is_empty(), "{}", h.note);
}
