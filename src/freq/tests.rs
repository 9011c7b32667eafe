use std::path::Path;

use super::choice::FreqMax;
use super::msr::turbo_ratios;
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
    assert_eq!(turbo_ratios(0x2526_2727, None), vec![39, 39, 38, 37]);
    // Groups: ratio 36 up to 2 cores, 34 up to 4, 30 up to 8.
    let limit = 0x1e_22_24;
    let groups = 0x08_04_02;
    assert_eq!(
        turbo_ratios(limit, Some(groups)),
        vec![36, 36, 34, 34, 30, 30, 30, 30]
    );
}

#[test]
fn sysfs_sources_and_their_failures() {
    let mut t = FreqTable::default();
    sysfs::read_cppc(&fixture("amd-cppc"), &mut t);
    assert_eq!((t.base_mhz, t.max_mhz), (Some(3000), Some(4150)));

    let mut t = FreqTable::default();
    sysfs::read_cpufreq(&fixture("intel-pstate"), &mut t);
    assert_eq!(
        (t.base_mhz, t.max_mhz, t.kernel_ref_mhz, t.min_mhz),
        (Some(2100), Some(4900), Some(4900), Some(800))
    );
    assert_eq!(t.fmin_mhz(), Some(800));
    // freq_max = base: util 1024 is 2100 MHz, a cpuperf target of 2100/4900.
    let base = t.resolve(FreqMax::Base).unwrap();
    assert_eq!(base.perf_scale(&t), 2100 * 1024 / 4900);

    let mut t = FreqTable::default();
    sysfs::read_cpufreq(&fixture("broken-cpufreq"), &mut t);
    sysfs::read_cppc(&fixture("broken-cpufreq"), &mut t);
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
fn a_refused_aperf_load_falls_back_to_the_next_source() {
    use super::source::{SourceKind, decide, refusal_reason, retry_without};
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

    // Only the aperf source makes a refused load worth retrying.
    assert!(retry_without(SourceKind::Aperf));
    for k in [SourceKind::Cpuperf, SourceKind::None, SourceKind::Inject] {
        assert!(!retry_without(k), "{k:?}");
    }

    // First load: aperf. After the refusal: cpuperf, and the one line says why.
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
