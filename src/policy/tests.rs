//! Policy parsing: presets, every kind of bad input, `ctl set` assignments,
//! the kept corpus (tests/corpus/policy/) and property tests over it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use proptest::prelude::*;

use super::choices::{Choice, IdlePick, IdlePlace, IdlePredictor, IdleQos};
use super::*;

/// Every leaf of @t as a dotted key.
fn dotted_keys(t: &toml::Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(sub) => dotted_keys(sub, &key, out),
            _ => {
                out.insert(key);
            }
        }
    }
}

fn schema_keys() -> BTreeSet<String> {
    FIELDS.iter().map(|f| f.key.to_string()).collect()
}

fn err(text: &str) -> String {
    format!("{:#}", Policy::parse(text).unwrap_err())
}

#[test]
fn the_schema_covers_exactly_the_policy_fields() {
    let mut keys = BTreeSet::new();
    dotted_keys(
        &toml::Table::try_from(Policy::default_preset()).unwrap(),
        "",
        &mut keys,
    );
    assert_eq!(keys, schema_keys());
}

#[test]
fn every_preset_is_valid_and_lists_every_field() {
    for (name, text) in PRESETS {
        let table: toml::Table = text.parse().unwrap();
        let mut keys = BTreeSet::new();
        dotted_keys(&table, "", &mut keys);
        assert_eq!(keys, schema_keys(), "{name}");
        let named = Named::load(name).unwrap();
        assert_eq!(named.name, *name);
        assert_eq!(named.source, Source::Preset(name.to_string()));
    }
}

#[test]
fn presets_differ_where_they_say_they_do() {
    let p = |n| Named::load(n).unwrap().policy;
    assert!(p("performance").slice.max_us > p("balanced").slice.max_us);
    assert!(!p("powersave").placement.idle_core_first);
    assert!(p("balanced").placement.idle_core_first);
}

#[test]
fn missing_fields_come_from_balanced() {
    let p = Policy::parse("[slice]\nmax_us = 4000\n").unwrap();
    let balanced = Named::load("balanced").unwrap().policy;
    assert_eq!(p.slice.max_us, 4000);
    assert_eq!(p.slice.min_us, balanced.slice.min_us);
    assert_eq!(p.placement, balanced.placement);
}

#[test]
fn errors_name_the_field_the_value_and_the_range() {
    assert_eq!(
        err("[slice]\nmax_us = 50\n"),
        "slice.max_us = 50 is out of range: allowed 100..=100000 (microseconds)"
    );
    assert!(err("[slice]\nmax_us = true\n").starts_with(
        "slice.max_us = true has the wrong type: expected an integer in 100..=100000"
    ));
    assert!(
        err("[slice]\nfoo = 1\n")
            .starts_with("unknown key `slice.foo`: the policy fields are slice.max_us,")
    );
    // latency.slice_timer_us: 0 is off, 1-49 times nothing that 50 does
    // not (every slice is at least 50 us), so it is refused.
    assert_eq!(
        err("[latency]\nslice_timer_us = 49\n"),
        "latency.slice_timer_us = 49 is out of range: allowed 0 (off) or 50..=100000 (microseconds)"
    );
    assert!(Policy::parse("[latency]\nslice_timer_us = 0\n").is_ok());
    assert!(Policy::parse("[latency]\nslice_timer_us = 50\n").is_ok());
    let e = err("[slice\n");
    assert!(e.starts_with("not valid TOML at line 1, column 7: "), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn unknown_presets_and_missing_files_are_named() {
    let e = format!("{:#}", Named::load("turbo").unwrap_err());
    assert!(
        e.contains("unknown policy `turbo`: the presets are performance, balanced, powersave"),
        "{e}"
    );
    let e = format!("{:#}", Named::load("/nonexistent/x.toml").unwrap_err());
    assert!(
        e.starts_with("reading policy file /nonexistent/x.toml"),
        "{e}"
    );
}

#[test]
fn file_policies_are_named_after_the_file() {
    let n = Named::from_text(Path::new("/etc/scx/quiet.toml"), "[slice]\nlag_us = 0\n").unwrap();
    assert_eq!(n.name, "quiet");
    assert_eq!(n.policy.slice.lag_us, 0);
    assert_eq!(n.source, Source::File("/etc/scx/quiet.toml".into()));
}

#[test]
fn assignments_change_only_their_fields() {
    let base = Named::load("balanced").unwrap().policy;
    let p = base
        .with_assignments(&["slice.max_us=5000", " placement.idle_core_first = false"])
        .unwrap();
    assert_eq!(p.slice.max_us, 5000);
    assert!(!p.placement.idle_core_first);
    assert_eq!(p.slice.min_us, base.slice.min_us);
}

#[test]
fn bad_assignments_are_refused() {
    let base = Named::load("balanced").unwrap().policy;
    let e = |a: &[&str]| format!("{:#}", base.with_assignments(a).unwrap_err());
    assert_eq!(e(&[]), "nothing to set: give one or more key=value");
    assert_eq!(e(&["slice.max_us"]), "`slice.max_us` is not key=value");
    assert!(e(&["slice.max_us=fast"]).starts_with("slice.max_us = \"fast\" has the wrong type"));
    assert!(e(&["nope=1"]).starts_with("unknown key `nope`"));
    assert!(e(&["slice.=1"]).starts_with("`slice.` is not a field name"));
    assert!(e(&["slice.min_us=4000"]).contains("must not exceed slice.max_us = 3000"));
    // Both at once are checked together: raising max first makes min legal.
    let p = base
        .with_assignments(&["slice.min_us=4000", "slice.max_us=8000"])
        .unwrap();
    assert_eq!((p.slice.min_us, p.slice.max_us), (4000, 8000));
}

#[test]
fn to_bpf_converts_microseconds_to_nanoseconds() {
    let b = Named::load("powersave")
        .unwrap()
        .policy
        .to_bpf(&crate::freq::FreqTable::default())
        .unwrap();
    assert_eq!(
        (b.slice_max_ns, b.slice_min_ns, b.slice_lag_ns),
        (10_000_000, 1_000_000, 3_000_000)
    );
    assert_eq!(b.idle_core_first, 0);
}

/// The words reach BPF as the C enums number them (bpf/intf_place.h:
/// CADENCE_ORDER_CORE = 1; bpf/intf_cpufreq.h: CADENCE_CPUFREQ_MODE_*
/// = 0, 1, 2), and the presets say what their files say.
#[test]
fn words_reach_bpf_as_the_c_enums_number_them() {
    let table = crate::freq::FreqTable::default();
    let p = Named::load("balanced").unwrap().policy;
    let bpf = |a: &str| p.with_assignments(&[a]).unwrap().to_bpf(&table).unwrap();
    assert_eq!(bpf("placement.order=small_core").place_order, 0);
    assert_eq!(bpf("placement.order=core").place_order, 1);
    assert_eq!(bpf("cpufreq.mode=util").cpufreq_mode, 0);
    assert_eq!(bpf("cpufreq.mode=performance").cpufreq_mode, 1);
    assert_eq!(bpf("cpufreq.mode=powersave").cpufreq_mode, 2);
    assert_eq!(bpf("latency.wakeup_preempt=false").wakeup_preempt, 0);
    assert_eq!(bpf("latency.wakeup_preempt=true").wakeup_preempt, 1);
    assert_eq!(bpf("latency.sync_wakeup=false").sync_wakeup, 0);
    assert_eq!(bpf("latency.slice_timer_us=750").slice_timer_us, 750);
    assert_eq!(bpf("latency.slice_timer_us=0").slice_timer_us, 0);
    // presets/performance.toml: max_us = 6000, headroom_pct = 160.
    let perf = Named::load("performance").unwrap().policy;
    let b = perf.to_bpf(&table).unwrap();
    assert_eq!((b.slice_max_ns, b.cpufreq_headroom_pct), (6_000_000, 160));
}

/// `ctl get` names every field of struct cadence_policy: 5 u64 and 22 u32
/// fields make its 128 bytes. A field added to the
/// C struct changes the size and fails here until bpf_fields() has it.
#[test]
fn bpf_fields_name_every_field_of_the_struct() {
    assert_eq!(std::mem::size_of::<crate::bpf_intf::cadence_policy>(), 128);
    let pol = Named::load("balanced")
        .unwrap()
        .policy
        .to_bpf(&crate::freq::FreqTable::default())
        .unwrap();
    let f = bpf_fields(&pol);
    assert_eq!(f.len(), 27);
    assert_eq!(f["idle_compare"], 0);
    assert_eq!(f["fair_cgroups"], 1);
    assert_eq!(f["slice_timer_us"], 0);
    assert_eq!(f["place_hold"], 1);
    assert_eq!(f["place_move_margin"], 2);
    assert_eq!(f["wakeup_preempt"], u64::from(pol.wakeup_preempt));
    assert_eq!(f["slice_max_ns"], pol.slice_max_ns);
    assert_eq!(f["cpufreq_down_hold_ns"], pol.cpufreq_down_hold_ns);
    assert_eq!(f["place_order"], u64::from(pol.place_order));
}

fn corpus() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/policy");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the corpus is missing");
    files
}

/// Each corpus file says on its first line what parsing it must give:
/// `# expect-ok` or `# expect-err: <start of the message>`.
#[test]
fn the_corpus_gives_what_each_file_expects() {
    for (path, text) in corpus() {
        let first = text.lines().next().unwrap_or_default();
        let got = Policy::parse(&text);
        if first == "# expect-ok" {
            assert!(got.is_ok(), "{}: {:#}", path.display(), got.unwrap_err());
        } else {
            let want = first
                .strip_prefix("# expect-err: ")
                .expect("an expectation line");
            let e = format!("{:#}", got.expect_err(&path.display().to_string()));
            assert!(
                e.contains(want),
                "{}: got `{e}`, want `{want}`",
                path.display()
            );
        }
    }
}

/// What every accepted policy must satisfy.
fn assert_valid(p: &Policy) {
    for f in FIELDS {
        let table = toml::Table::try_from(p).unwrap();
        let (sec, name) = f.key.split_once('.').unwrap();
        let v = &table[sec][name];
        f.kind.check(f.key, v).unwrap();
    }
    assert!(p.slice.min_us <= p.slice.max_us);
    assert_eq!(Policy::parse(&p.to_toml()).unwrap(), *p, "round trip");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text at all: an error or a valid policy, never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        if let Ok(p) = Policy::parse(&text) {
            assert_valid(&p);
        }
    }

    /// Corpus files with bytes replaced, inserted or cut: an error that
    /// says something, or a valid policy.
    #[test]
    fn mutated_corpus_is_refused_or_valid(
        idx in 0usize..64,
        edits in prop::collection::vec((0usize..400, any::<u8>(), 0u8..3), 1..6),
    ) {
        let files = corpus();
        let mut bytes = files[idx % files.len()].1.clone().into_bytes();
        for (pos, byte, op) in edits {
            let at = pos % (bytes.len() + 1);
            match op {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ => bytes.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match Policy::parse(&text) {
            Ok(p) => assert_valid(&p),
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(!msg.is_empty());
                prop_assert!(!msg.contains('\n'), "not one line: {}", msg);
            }
        }
    }

    /// Every policy inside the schema's ranges parses back to itself, and
    /// one step outside any range is refused.
    #[test]
    fn in_range_values_round_trip(
        max in 100u64..=100_000,
        min_frac in 0.0f64..=1.0,
        lag in 0u64..=1_000_000,
        idle_core_first: bool,
        place_order in 0usize..2,
        freq_max in prop_oneof![
            Just("auto".to_string()),
            Just("base".to_string()),
            Just("max".to_string()),
            (1u32..=255).prop_map(|n| format!("{n}c")),
            (100u32..=10_000).prop_map(|m| m.to_string()),
        ],
        mode in 0usize..3,
        headroom_pct in 100u64..=400,
        floor: bool,
        min_mhz in 0u64..=10_000,
        band in 0u64..=256,
        interval_us in 0u64..=1_000_000,
        down_hold_us in 0u64..=1_000_000,
        legacy_iowait_boost: bool,
        latency in (any::<bool>(), any::<bool>(), prop_oneof![Just(0u64), 50u64..=100_000]),
        hold in (any::<bool>(), 2u32..=64, any::<bool>()),
        idle in (0usize..4, 0usize..2, 1u64..=49, 0usize..2, 0usize..2, any::<bool>(), any::<bool>()),
    ) {
        let min = (50 + ((max.max(50) - 50) as f64 * min_frac) as u64).min(max);
        let p = Policy {
            slice: Slice { max_us: max, min_us: min, lag_us: lag },
            fairness: Fairness { cgroups: hold.2 },
            latency: Latency {
                wakeup_preempt: latency.0,
                sync_wakeup: latency.1,
                slice_timer_us: latency.2,
            },
            placement: Placement {
                idle_core_first,
                order: PlaceOrder::WORDS[place_order].0,
                hold: hold.0,
                move_margin: hold.1,
            },
            freq: Freq { max: freq_max.parse().unwrap() },
            cpufreq: Cpufreq {
                mode: CpufreqMode::WORDS[mode].0,
                headroom_pct,
                floor,
                min_mhz,
                band,
                interval_us,
                down_hold_us,
                legacy_iowait_boost,
            },
            idle: Idle {
                predictor: IdlePredictor::WORDS[idle.0].0,
                compare: idle.6,
                pick: IdlePick::WORDS[idle.1].0,
                learning_rate: idle.2,
                place: IdlePlace::WORDS[idle.3].0,
                qos: IdleQos::WORDS[idle.4].0,
                file_is_this_machine: idle.5,
            },
        };
        assert_valid(&p);
        let too_far = p.with_assignments(&["slice.lag_us=1000001"]);
        prop_assert!(too_far.is_err());
        prop_assert!(p.with_assignments(&["cpufreq.band=257"]).is_err());
        prop_assert!(p.with_assignments(&["cpufreq.mode=fast"]).is_err());
        prop_assert!(p.with_assignments(&["idle.learning_rate=50"]).is_err());
        prop_assert!(p.with_assignments(&["idle.predictor=menu"]).is_err());
    }
}

#[test]
fn edits_keep_the_source_and_mark_the_name_once() {
    let n = Named::load("powersave").unwrap();
    let once = n.edited(&["slice.max_us=4000"]).unwrap();
    let twice = once.edited(&["slice.lag_us=0"]).unwrap();
    assert_eq!(twice.name, "powersave*");
    assert_eq!(twice.source, Source::Preset("powersave".into()));
    assert_eq!(
        (twice.policy.slice.max_us, twice.policy.slice.lag_us),
        (4000, 0)
    );
}

/// SIGHUP after a start with --set and --freq-max: the file is read again
/// and the command line's edits made again; a `ctl set` edit made since is
/// dropped; a bad file is refused whole.
#[test]
fn reload_makes_the_start_edits_again_and_drops_ctl_edits() {
    let dir = std::env::temp_dir().join(format!("scx_cadence-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("quiet.toml");
    std::fs::write(&path, "[slice]\nmax_us = 6000\nlag_us = 1000\n").unwrap();
    let edits = StartEdits {
        assignments: vec!["slice.lag_us=2000".into()],
        freq_max: Some(FreqMax::Base),
    };
    let started = Named::load(path.to_str().unwrap())
        .unwrap()
        .with_start_edits(&edits)
        .unwrap();
    let ctl = started.edited(&["slice.min_us=500"]).unwrap();
    std::fs::write(&path, "[slice]\nmax_us = 7000\nlag_us = 1000\n").unwrap();
    let reloaded = ctl.reload().unwrap();
    assert_eq!(reloaded.name, "quiet*");
    assert_eq!(
        (
            reloaded.policy.slice.max_us,
            reloaded.policy.slice.lag_us,
            reloaded.policy.slice.min_us,
            reloaded.policy.freq.max
        ),
        (7000, 2000, 250, FreqMax::Base),
        "the file's 7000, --set's 2000, balanced's 250 (ctl's 500 dropped), --freq-max's base"
    );
    assert_eq!(reloaded.start_edits, edits);
    std::fs::write(&path, "[slice]\nmax_us = 200000\n").unwrap();
    assert!(reloaded.reload().is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn freq_max_is_checked_by_spelling_and_normalized() {
    let p = Named::load("balanced").unwrap().policy;
    let set = p.with_assignments(&["freq.max=2400"]).unwrap();
    assert_eq!(set.freq.max, FreqMax::Mhz(2400));
    assert!(
        set.to_toml().contains("max = \"2400\""),
        "{}",
        set.to_toml()
    );
    let turbo = p.with_assignments(&["freq.max=4C"]).unwrap();
    assert_eq!(turbo.freq.max, FreqMax::Turbo(4));
    assert!(
        turbo.to_toml().contains("max = \"4c\""),
        "{}",
        turbo.to_toml()
    );
    let e = p.with_assignments(&["freq.max=turbo"]).unwrap_err();
    assert!(
        format!("{e:#}").contains("unknown freq_max `turbo`"),
        "{e:#}"
    );
    let e = p.with_assignments(&["freq.max=50"]).unwrap_err();
    assert!(
        format!("{e:#}").contains("freq.max = 50 is out of range"),
        "{e:#}"
    );
}

/// A machine with cpufreq limits @fmin..@fmax MHz (fmax also the base).
fn machine(fmin: Option<u32>, fmax: u32) -> FreqTable {
    FreqTable {
        base_mhz: Some(fmax),
        min_mhz: fmin,
        ..FreqTable::default()
    }
}

#[test]
fn cpufreq_fields_reach_bpf_with_the_floor_from_fmin() {
    let p = Named::load("balanced").unwrap().policy;
    let p = p
        .with_assignments(&[
            "freq.max=2800",
            "cpufreq.band=16",
            "cpufreq.interval_us=500",
        ])
        .unwrap();
    // Seed 004: 1200 / 2800 MHz is a floor under 42.9% (439 of 1024).
    let pol = p.to_bpf(&machine(Some(1200), 2800)).unwrap();
    assert_eq!(
        (
            pol.cpufreq_floor_util,
            pol.cpufreq_band,
            pol.cpufreq_interval_ns
        ),
        (439, 16, 500_000)
    );
    assert_eq!(
        (
            pol.cpufreq_headroom_pct,
            pol.cpufreq_mode,
            pol.cpufreq_down_hold_ns
        ),
        (125, 0, 8_000_000)
    );
    // cpufreq.min_mhz overrides the machine's fmin.
    let q = p.with_assignments(&["cpufreq.min_mhz=1400"]).unwrap();
    assert_eq!(
        q.to_bpf(&machine(Some(1200), 2800))
            .unwrap()
            .cpufreq_floor_util,
        512
    );
    // No floor without fmin, and a note that says so.
    assert_eq!(
        p.to_bpf(&machine(None, 2800)).unwrap().cpufreq_floor_util,
        0
    );
    assert!(
        p.note(&machine(None, 2800))
            .unwrap()
            .contains("cpufreq.min_mhz")
    );
    assert!(p.note(&machine(Some(1200), 2800)).is_none());
    // Fixed modes have no floor.
    let perf = p.with_assignments(&["cpufreq.mode=performance"]).unwrap();
    let pol = perf.to_bpf(&machine(Some(1200), 2800)).unwrap();
    assert_eq!((pol.cpufreq_mode, pol.cpufreq_floor_util), (1, 0));
}

#[test]
fn fmin_at_or_above_freq_max_is_refused() {
    let p = Named::load("balanced").unwrap().policy;
    let p = p
        .with_assignments(&["freq.max=2000", "cpufreq.min_mhz=2000"])
        .unwrap();
    let e = p.to_bpf(&machine(Some(800), 2000)).unwrap_err();
    assert!(
        format!("{e:#}").contains("it must be below freq_max (2000 MHz)"),
        "{e:#}"
    );
}

/// Issue 14's bad input: a preemption setting of the wrong type is refused
/// in one line that names the field, as is a minimum slice above the
/// maximum; the policy they were applied to is unchanged.
#[test]
fn latency_settings_of_the_wrong_type_are_refused_by_name() {
    let p = Named::load("balanced").unwrap().policy;
    for bad in ["latency.wakeup_preempt=1", "latency.sync_wakeup=\"yes\""] {
        let e = format!("{:#}", p.with_assignments(&[bad]).unwrap_err());
        let key = bad.split('=').next().unwrap();
        assert!(e.contains(key) && e.contains("wrong type"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    let e = format!(
        "{:#}",
        p.with_assignments(&["slice.min_us=4000"]).unwrap_err()
    );
    assert!(
        e.contains("slice.min_us") && e.contains("slice.max_us"),
        "{e}"
    );
    assert_eq!(p, Named::load("balanced").unwrap().policy);
}
