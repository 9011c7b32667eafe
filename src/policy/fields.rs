//! Every policy field, declared once: its section and name (the TOML key),
//! its Rust type, what it allows (schema.rs's Kind, with where its bounds
//! come from), what it does, and the field of struct cadence_policy
//! (bpf/intf.h) it becomes, with the conversion. `policy_fields!` turns the
//! list into the section structs and Policy (serde), FIELDS (the schema that
//! parsing checks and that `scx_cadence policies` and docs/policy.md print),
//! and the direct part of `to_bpf()` and of `bpf_fields()`. Fields whose BPF
//! value depends on the machine or on other fields (freq.max,
//! cpufreq.floor, cpufreq.min_mhz) are converted in to_bpf.rs; idle.qos acts
//! in the loader only.

use serde::{Deserialize, Serialize};

use super::choices::{
    Choice, CpufreqMode, IdlePick, IdlePlace, IdlePredictor, IdleQos, PlaceOrder,
};
use super::schema::{Field, Kind};
use crate::bpf_intf;
use crate::freq::FreqMax;

/// Declares the policy: per section `name => Type { field: type = kind,
/// "doc" [, bpf c_field = conversion]; ... }`.
macro_rules! policy_fields {
    ($(
        #[doc = $section_doc:literal]
        $section:ident => $Section:ident {
            $(
                $field:ident: $ty:ty = $kind:expr, $doc:literal
                $(, bpf $bpf:ident = $conv:expr)?;
            )*
        }
    )*) => {
        $(
            #[doc = $section_doc]
            #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            pub struct $Section {
                $(#[doc = $doc] pub $field: $ty,)*
            }
        )*

        /// Every tunable. Values are checked when parsed; a Policy is always
        /// valid.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Policy {
            $(pub $section: $Section,)*
        }

        /// Every field, in the order `ctl get` prints them.
        pub const FIELDS: &[Field] = &[$($(Field {
            key: concat!(stringify!($section), ".", stringify!($field)),
            kind: $kind,
            doc: $doc,
        },)*)*];

        impl Policy {
            /// Writes every field that maps to one field of @pol by itself.
            pub(super) fn direct_to_bpf(&self, pol: &mut bpf_intf::cadence_policy) {
                $($($(pol.$bpf = ($conv)(self.$section.$field);)?)*)*
            }
        }

        /// The fields of @pol that `direct_to_bpf()` writes, by C name.
        pub(super) fn direct_bpf_fields(pol: &bpf_intf::cadence_policy) -> Vec<(&'static str, u64)> {
            vec![$($($((stringify!($bpf), pol.$bpf.into()),)?)*)*]
        }
    };
}

policy_fields! {
    #[doc = "Slice lengths and the sleeper-credit bound."]
    slice => Slice {
        // 100 us is about twenty context switches' worth of time: below it
        // switching dominates. 100 ms is CFS's longest latency period
        // (sysctl_sched_latency's ceiling); longer slices starve interactive
        // tasks for human-visible time.
        max_us: u64 = Kind::Int { min: 100, max: 100_000, unit: "microseconds" },
            "Longest slice, for a CPU nobody else waits for",
            bpf slice_max_ns = |v: u64| v * 1000;
        // 50 us is the BPF side's per-task slice floor (CADENCE_SLICE_FLOOR_NS);
        // the ceiling is slice.max_us's.
        min_us: u64 = Kind::Int { min: 50, max: 100_000, unit: "microseconds" },
            "Shortest slice however many tasks wait (at most slice.max_us)",
            bpf slice_min_ns = |v: u64| v * 1000;
        // 0 gives sleepers no credit at all; 1 s is far beyond any useful
        // bound and keeps vtime arithmetic far from overflow.
        lag_us: u64 = Kind::Int { min: 0, max: 1_000_000, unit: "microseconds" },
            "Most lag a sleeper keeps when it wakes (a task pinned to one CPU is credited its sleep up to twice this)",
            bpf slice_lag_ns = |v: u64| v * 1000;
    }

    #[doc = "Whose weights share the CPUs (bpf/cgroup.bpf.c)."]
    fairness => Fairness {
        cgroups: bool = Kind::Bool,
            "Honour cgroup cpu.weight (and cpu.weight.nice) through the whole hierarchy, as the fair class does: a cgroup's tasks share what its weight gets among its parent's active members; off: only nice levels weigh",
            bpf fair_cgroups = |v: bool| v as u32;
    }

    #[doc = "Wake-up latency: preemption and sync wake-ups (bpf/latency.bpf.h)."]
    latency => Latency {
        wakeup_preempt: bool = Kind::Bool,
            "A waking task that finds no idle CPU preempts a running task whose virtual deadline is later, or that has run past its share or used up its slice; one within its share and its slice first runs slice.min_us of its request (EEVDF's wake-up preemption with run-to-parity)",
            bpf wakeup_preempt = |v: bool| v as u32;
        sync_wakeup: bool = Kind::Bool,
            "A sync wake-up (the waker is about to sleep: pipes, sockets) goes to the waker's CPU when it shares the wakee's LLC and nothing else waits there; one that finds no CPU at all preempts nobody",
            bpf sync_wakeup = |v: bool| v as u32;
        // 0 switches the timer off. Otherwise at least slice.min_us's floor
        // (50): every slice is at least that long, so a lower value times
        // nothing that 50 does not. The ceiling is slice.max_us's: a floor
        // above every slice would time nothing the tick does not.
        slice_timer_us: u64 = Kind::OffOrInt { min: 50, max: 100_000, unit: "microseconds" },
            "While others wait for its CPU, a running task's slice is ended by a timer when it is used up, but no sooner than this after the task began, instead of at the next tick (the fair class's HRTICK); 0: only the tick ends slices",
            bpf slice_timer_us = |v: u64| v as u32;
    }

    #[doc = "Where waking tasks go (bpf/place.bpf.h)."]
    placement => Placement {
        idle_core_first: bool = Kind::Bool,
            "Wake tasks on a fully idle SMT core before an idle sibling thread",
            bpf idle_core_first = |v: bool| v as u32;
        order: PlaceOrder = Kind::Choice { values: PlaceOrder::words },
            "small_core: spread over small cores first (POWER9 halves, E-core clusters); core: the plain prev/idle-core order, for comparison",
            bpf place_order = PlaceOrder::bpf;
        hold: bool = Kind::Bool,
            "Running tasks hold their CPU while short tasks come and go: an idle CPU takes a waiting task before a busy one gives up its own; a running task put back (preempted by a higher class or a waking task, or displaced by a short one) waits for its CPU, and only one displaced by a lasting task of like util per unit of weight is queued for any CPU; a running task moves to another small or big core only when that core has move_margin more free threads (idle, or running a short task: one awake less than 256 ms or lighter than half its own, per unit of weight) at 8 slice ends or re-enqueues in a row (the margin with placement.order = small_core only)",
            bpf place_hold = |v: bool| v as u32;
        // 2 is the least imbalance a move evens out instead of reversing
        // (bpf/place_search.bpf.c, pl_move_gain()); 64 is far above the
        // threads of any core today (POWER9/10 big cores have 8), and a
        // margin above a core's threads means running tasks never move.
        move_margin: u32 = Kind::Int { min: 2, max: 64, unit: "threads" },
            "With hold: how many more free threads (idle, or running a short task: awake less than 256 ms or lighter than half its own, per unit of weight) another small or big core must have for a running task to move there",
            bpf place_move_margin = |v: u32| v;
    }

    #[doc = "Frequency: what a ratio of 1024 stands for."]
    freq => Freq {
        // The seed's choices; which exist depends on the machine and is
        // checked when the policy is put in force (freq-max --list).
        max: FreqMax = Kind::FreqMax,
            "The frequency a ratio of 1024 stands for: auto (4c, else max), Nc turbo, base, max or MHz";
    }

    #[doc = "cpufreq targets and their deadband (bpf/cpufreq_target.bpf.h)."]
    cpufreq => Cpufreq {
        mode: CpufreqMode = Kind::Choice { values: CpufreqMode::words },
            "How each CPU's cpufreq target is chosen: util (from invariant util), performance (always 1024), powersave (always the minimum)",
            bpf cpufreq_mode = CpufreqMode::bpf;
        // 100: no headroom at all (the target is what util needs). 400:
        // a CPU at a quarter of freq_max already asks for all of it; more
        // is the performance mode.
        headroom_pct: u64 = Kind::Int { min: 100, max: 400, unit: "percent of util, schedutil's 25% included" },
            "Frequency offered per unit of util, schedutil's own margin included: 125 is schedutil's 1.25",
            bpf cpufreq_headroom_pct = |v: u64| v as u32;
        floor: bool = Kind::Bool,
            "pcc-style deadband: while util < fmin/freq_max, ask for the minimum";
        // 0 defers to cpufreq; otherwise the same bounds as an explicit
        // freq_max (freq::MHZ_RANGE's ceiling).
        min_mhz: u64 = Kind::Int { min: 0, max: 10_000, unit: "MHz, 0 = cpuinfo_min_freq" },
            "fmin for the floor; 0 reads cpuinfo_min_freq (else the MSRs' efficiency frequency)";
        // 0: every change is asked for. 256: a quarter of the range, past
        // which the hysteresis would hide real load changes.
        band: u64 = Kind::Int { min: 0, max: 256, unit: "cpuperf units of 1024" },
            "Hysteresis: the least change of target worth a request (the ends 0 and 1024 always are)",
            bpf cpufreq_band = |v: u64| v as u32;
        // 0: no limit. 1 s: pcc's firmware allowed up to 1 s between
        // commands (seed 004's "max time between commands").
        interval_us: u64 = Kind::Int { min: 0, max: 1_000_000, unit: "microseconds" },
            "Least time between two requests on one CPU",
            bpf cpufreq_interval_ns = |v: u64| v * 1000;
        // 0: drop at once. 1 s: about 30 PELT half-lives; longer holds
        // keep a CPU fast long after its load is gone.
        down_hold_us: u64 = Kind::Int { min: 0, max: 1_000_000, unit: "microseconds" },
            "How long a lower target must be asked for before it is requested (raises go at once)",
            bpf cpufreq_down_hold_ns = |v: u64| v * 1000;
        legacy_iowait_boost: bool = Kind::Bool,
            "Emulate schedutil's iowait boost, for comparisons only (off: iowait is never an input)",
            bpf cpufreq_iowait_boost = |v: bool| v as u32;
    }

    #[doc = "The idle-state learner (bpf/idle_learn.bpf.c) and how its predictions act."]
    idle => Idle {
        predictor: IdlePredictor = Kind::Choice { values: IdlePredictor::words },
            "The idle-state prediction that acts: off (no learning), teo (mainline teo's bins), seed (seed 003's matrix over teo, as its RFC v2 posted it), per_choice (a matrix row per teo choice, learning toward the state each period justified; docs/idle.md)",
            bpf idle_predictor = IdlePredictor::bpf;
        // Off by default: each matrix costs a pick and an update per idle
        // period (in the pipe bench, 175 and 312 of 2752 BPF instructions
        // per switch), and `idle record` + `idle replay` compares all
        // offline at no cost to the machine.
        compare: bool = Kind::Bool,
            "true: both matrix predictors (seed, per_choice) predict, learn and are scored on every idle period, to compare them live in `idle stats`; false: only the acting one, and teo, which both build on (a matrix that does not act keeps its weights; `idle replay` of a recording compares all)",
            bpf idle_compare = |v: bool| v as u32;
        pick: IdlePick = Kind::Choice { values: IdlePick::words },
            "How the per_choice predictor reads its row: random (a state drawn by its weight) or heaviest (deterministic); seed always draws at random, as the RFC",
            bpf idle_pick = IdlePick::bpf;
        // Seed 003's LEARNING_RATE: a weight grows by rate% of itself while
        // below (100 - rate)%, shrinks while above rate%; at 50 the two
        // bounds meet and nothing can move.
        learning_rate: u64 = Kind::Int { min: 1, max: 49, unit: "percent of a weight" },
            "The matrices' learning rate (seed and per_choice): how far one idle period moves a row",
            bpf idle_learning_rate = |v: u64| v as u32;
        place: IdlePlace = Kind::Choice { values: IdlePlace::words },
            "shallow: among idle CPUs equally good for the placement search, wake the one in the shallowest state (observed, else predicted); off: ignore idle states. Acts with placement.order = small_core (docs/idle.md)",
            bpf idle_place = IdlePlace::bpf;
        qos: IdleQos = Kind::Choice { values: IdleQos::words },
            "learned: write per-CPU PM QoS resume-latency limits (at most every 250 ms) that keep the kernel's governor out of states in which most recent idle periods would have been cut short (docs/idle.md); the originals are restored on every exit, and a CPU whose limit someone else changes is left to them. Needs idle.predictor on, and states from sysfs or idle.file_is_this_machine; off: leave them alone";
        file_is_this_machine: bool = Kind::Bool,
            "true: the --idle-states file describes this machine's idle states, so idle.qos = learned may write limits from tables learned with it; false: with a file, idle.qos writes nothing (a file from another machine would limit states by latencies this one does not have)";
    }
}
