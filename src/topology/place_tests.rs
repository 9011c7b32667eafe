//! bpf/place_search.bpf.c, the placement search the scheduler runs, run in the
//! host kernel through BPF_PROG_TEST_RUN of bpf/place_test.bpf.c on
//! machines built by the loader's own code (file.rs, sysfs.rs, table.rs)
//! and hand-made idle masks: each level of the order picks the CPU it
//! should. Needs CAP_BPF and CAP_PERFMON (skipped without, src/bpf_test_progs.rs); it does not need sched_ext.

use std::collections::BTreeSet;
use std::path::Path;

use libbpf_rs::{MapCore, MapFlags};

use super::hierarchy::Hierarchy;
use super::{file, sysfs, table};
use crate::bpf_intf::{self, as_bytes};
use crate::bpf_test_progs::{self, place as skel};

use bpf_intf::cadence_place_level as L;

pub(super) const PREV_SMALL: L = bpf_intf::cadence_place_level_CADENCE_PLACE_PREV_SMALL;
pub(super) const IDLE_BIG: L = bpf_intf::cadence_place_level_CADENCE_PLACE_IDLE_BIG;
pub(super) const IDLE_SMALL: L = bpf_intf::cadence_place_level_CADENCE_PLACE_IDLE_SMALL;
pub(super) const NEAR_SMALL: L = bpf_intf::cadence_place_level_CADENCE_PLACE_NEAR_SMALL;
pub(super) const NEAR_BIG: L = bpf_intf::cadence_place_level_CADENCE_PLACE_NEAR_BIG;
pub(super) const NEAR_LLC: L = bpf_intf::cadence_place_level_CADENCE_PLACE_NEAR_LLC;
pub(super) const ANY: L = bpf_intf::cadence_place_level_CADENCE_PLACE_ANY;
pub(super) const BUSY: L = bpf_intf::cadence_place_level_CADENCE_PLACE_BUSY;

/// The search loaded with one machine.
pub(super) struct Search {
    skel: skel::PlaceTestSkel<'static>,
    table: Box<bpf_intf::cadence_topo>,
    /// The inputs' `shallow`: idle states break ties (idle.place).
    shallow: bool,
}

impl Search {
    /// None: skipped, this process may not load BPF (bpf_test_progs).
    pub(super) fn new(h: &Hierarchy) -> Option<Search> {
        let skel = bpf_test_progs::load(skel::PlaceTestSkelBuilder::default())?;
        let s = Search {
            skel,
            table: table::build(h).unwrap(),
            shallow: false,
        };
        s.write_table();
        Some(s)
    }

    fn write_table(&self) {
        self.skel
            .maps
            .place_topo
            .update(&0u32.to_ne_bytes(), as_bytes(&*self.table), MapFlags::ANY)
            .expect("writing the place_topo map");
    }

    /// With idle.place = shallow, each CPU of @exit_ns in an idle state of
    /// that exit latency (ns), the others at 0 (as the tracepoint leaves a
    /// CPU whose state is not known).
    pub(super) fn shallow(mut self, exit_ns: &[(u32, u32)]) -> Search {
        self.table.idle_exit_ns.fill(0);
        for &(cpu, ns) in exit_ns {
            self.table.idle_exit_ns[cpu as usize] = ns;
        }
        self.shallow = true;
        self.write_table();
        self
    }

    /// Searches for a task last on @prev, the CPUs in @busy not idle, the
    /// task allowed on @allowed (None: everywhere).
    pub(super) fn run(
        &self,
        prev: i32,
        busy: &[u32],
        allowed: Option<&[u32]>,
        spread: bool,
    ) -> (i32, L) {
        self.run_task(prev, busy, allowed, spread, false)
    }

    /// As run(); @leaving: the task still runs on @prev (which the caller
    /// then counts idle: leave it out of @busy).
    pub(super) fn run_task(
        &self,
        prev: i32,
        busy: &[u32],
        allowed: Option<&[u32]>,
        spread: bool,
        leaving: bool,
    ) -> (i32, L) {
        let mut ctx = self.inputs(prev, busy, allowed, &[]);
        ctx.in_.spread = spread as u32;
        ctx.in_.leaving = leaving as u32;
        self.place_run(&mut ctx);
        (ctx.cpu, ctx.level)
    }

    /// A run's inputs: the task last on @prev, the CPUs in @busy not idle,
    /// those of @light running light work, the task allowed on @allowed
    /// (None: everywhere).
    fn inputs(
        &self,
        prev: i32,
        busy: &[u32],
        allowed: Option<&[u32]>,
        light: &[u32],
    ) -> bpf_intf::cadence_place_test {
        // SAFETY: plain-data struct from bindgen; all zeroes is valid.
        let mut ctx: bpf_intf::cadence_place_test = unsafe { std::mem::zeroed() };
        let busy: BTreeSet<u32> = busy.iter().copied().collect();
        for cpu in 0..self.table.nr_cpus {
            let (w, bit) = ((cpu / 64) as usize, 1u64 << (cpu % 64));
            if !busy.contains(&cpu) {
                ctx.in_.idle[w] |= bit;
            }
            if light.contains(&cpu) {
                ctx.in_.light[w] |= bit;
            }
            if allowed.is_none_or(|a| a.contains(&cpu)) {
                ctx.in_.allowed[w] |= bit;
            }
        }
        ctx.in_.prev = prev;
        ctx.in_.shallow = self.shallow as u32;
        ctx
    }

    /// Runs place_run on @ctx, in place.
    fn place_run(&self, ctx: &mut bpf_intf::cadence_place_test) {
        bpf_intf::test_run_in_place(&self.skel.progs.place_run, ctx);
        assert_ne!(ctx.cpu, -22, "place_run could not read its input");
    }
}

/// What the hold made of a running task's search (place_run's outputs):
/// @seen is the run of checks that saw a freer core, as this one left it;
/// @to where a verdict to move reached with light work counted idle takes
/// the task (-1: none, or the search's own pick @cpu stands).
#[derive(Debug, PartialEq)]
struct Hold {
    cpu: i32,
    gain: i32,
    verdict: u32,
    seen: u32,
    to: i32,
}

const MOVE: u32 = bpf_intf::cadence_hold_verdict_CADENCE_HOLD_MOVE;
const STAY: u32 = bpf_intf::cadence_hold_verdict_CADENCE_HOLD_STAY;
const WAIT: u32 = bpf_intf::cadence_hold_verdict_CADENCE_HOLD_WAIT;
/// Checks in a row that wait before the one that moves: CADENCE_MOVE_CONFIRM - 1.
const LAST_WAIT: u32 = bpf_intf::cadence_hold_consts_CADENCE_MOVE_CONFIRM - 1;

impl Search {
    /// A running task on @prev re-enqueued (it leaves @prev out of @busy):
    /// the search, then one check of the hold with margin 2 after @seen
    /// checks in a row that saw a freer core, the CPUs of @light running
    /// tasks lighter than half its util.
    fn hold(&self, prev: i32, busy: &[u32], light: &[u32], seen: u32) -> Hold {
        let mut ctx = self.inputs(prev, busy, None, light);
        ctx.in_.spread = 1;
        ctx.in_.leaving = 1;
        ctx.margin = 2;
        ctx.seen = seen;
        self.place_run(&mut ctx);
        Hold {
            cpu: ctx.cpu,
            gain: ctx.gain,
            verdict: ctx.verdict,
            seen: ctx.seen,
            to: ctx.to,
        }
    }

    /// move_span() of a move from @from to @to, on this machine.
    fn span(&self, from: i32, to: i32) -> u32 {
        let mut ctx = bpf_intf::cadence_move_span_test { from, to, span: 0 };
        bpf_intf::test_run_in_place(&self.skel.progs.move_span_run, &mut ctx);
        assert_ne!(ctx.span, u32::MAX, "move_span_run found no table");
        ctx.span
    }
}

pub(super) fn online(n: u32) -> BTreeSet<u32> {
    (0..n).collect()
}

/// Two POWER9-like big cores (interleaved SMT4 halves) sharing one LLC.
pub(super) fn two_big_cores() -> Hierarchy {
    let text = "small 0,2,4,6\nsmall 1,3,5,7\nsmall 8,10,12,14\nsmall 9,11,13,15\n\
                big 0-7\nbig 8-15\nllc 0-15\n";
    file::parse(text, &online(16)).unwrap()
}

#[test]
fn each_level_picks_the_expected_cpu() {
    let Some(s) = Search::new(&two_big_cores()) else {
        return;
    };
    // 1. prev's whole small core idle.
    assert_eq!(s.run(2, &[], None, true), (2, PREV_SMALL));
    // 2. prev's small core busy: the other, fully idle big core.
    assert_eq!(s.run(2, &[0], None, true), (8, IDLE_BIG));
    // 3. No idle big core: the idle small core of prev's big core.
    assert_eq!(s.run(2, &[0, 8], None, true), (1, IDLE_SMALL));
    // ... and of another big core when prev's has none.
    assert_eq!(s.run(2, &[0, 1, 8], None, true), (9, IDLE_SMALL));
    // 4a. No whole small core: the small core of prev's big core with
    // the most idle threads, prev's own on a tie, prev itself if idle.
    assert_eq!(s.run(2, &[0, 1, 8, 9], None, true), (2, NEAR_SMALL));
    // 4b. The sibling small core has more idle threads.
    assert_eq!(s.run(2, &[0, 2, 1, 8, 9], None, true), (3, NEAR_BIG));
    // 4c. prev's big core full: the LLC.
    let full: Vec<u32> = (0..8).chain([8, 9]).collect();
    assert_eq!(s.run(2, &full, None, true), (10, NEAR_LLC));
    // Nothing idle.
    let all: Vec<u32> = (0..16).collect();
    assert_eq!(s.run(2, &all, None, true), (-1, BUSY));
    // Allowed CPUs are respected at every level.
    assert_eq!(s.run(2, &[], Some(&[15]), true), (15, IDLE_BIG));
    assert_eq!(s.run(2, &[0, 8], Some(&[3, 5]), true), (3, IDLE_SMALL));
}

#[test]
fn another_llc_only_when_nothing_near_is_idle() {
    // POWER9 SMT8 fixture: an LLC per big core.
    let Some(s) = Search::new(&sysfs::read(&fixture("power9-smt8"))) else {
        return;
    };
    let near: Vec<u32> = (0..8).collect();
    assert_eq!(s.run(2, &near, None, true), (8, ANY));
    assert_eq!(s.run(2, &[0], None, true), (1, IDLE_SMALL));
}

#[test]
fn four_tasks_from_one_parent_split_two_and_two() {
    // The seed's "optimal placement": one SMT8 big core, the parent on CPU
    // 0, four CPU-bound children placed one after the other.
    let h = file::parse("small 0,2,4,6\nsmall 1,3,5,7\nbig 0-7\n", &online(8)).unwrap();
    let Some(s) = Search::new(&h) else { return };
    let mut busy = vec![0];
    for _ in 0..4 {
        let (cpu, _) = s.run(0, &busy, None, true);
        busy.push(cpu as u32);
    }
    let children = &busy[1..];
    let even = children.iter().filter(|c| *c % 2 == 0).count();
    assert_eq!(even, 2, "children on {children:?}: not 2 per small core");
    // Two children: one per small core.
    assert_ne!(children[0] % 2, children[1] % 2, "{children:?}");
}

#[test]
fn packing_fills_the_busiest_small_core_first() {
    let Some(s) = Search::new(&two_big_cores()) else {
        return;
    };
    assert_eq!(s.run(2, &[], None, false), (2, NEAR_SMALL));
    assert_eq!(s.run(2, &[0, 2, 4], None, false), (6, NEAR_SMALL));
    // prev's small core full: its sibling, then the LLC.
    assert_eq!(s.run(2, &[0, 2, 4, 6, 1], None, false), (3, NEAR_BIG));
}

#[test]
fn no_smt_and_hybrid_degrade_cleanly() {
    let Some(s) = Search::new(&sysfs::read(&fixture("no-smt"))) else {
        return;
    };
    assert_eq!(s.run(1, &[], None, true), (1, PREV_SMALL));
    assert_eq!(s.run(1, &[1], None, true), (0, IDLE_BIG));
    assert_eq!(s.run(1, &[0, 1, 2, 3], None, true), (-1, BUSY));
    // Hybrid: a busy E-core's cluster mate before a P-core's thread.
    let Some(s) = Search::new(&sysfs::read(&fixture("x86-hybrid"))) else {
        return;
    };
    let busy = [0, 2, 4, 8];
    assert_eq!(s.run(4, &busy, None, true), (5, IDLE_SMALL));
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

/// QEMU's own topology: each thread its own L1, so eight single-thread
/// small cores in two SMT4 big cores.
fn qemu_smt4() -> Hierarchy {
    let smalls: String = (0..8).map(|c| format!("small {c}\n")).collect();
    file::parse(&format!("{smalls}big 0-3\nbig 4-7\n"), &online(8)).unwrap()
}

#[test]
fn single_thread_small_cores_spread_over_big_cores() {
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    // Four forks from a parent on CPU 0: step 3 takes the freer big core.
    let mut busy = vec![0];
    for _ in 0..4 {
        let (cpu, _) = s.run(0, &busy, None, true);
        busy.push(cpu as u32);
    }
    let low = busy[1..].iter().filter(|c| **c < 4).count();
    assert_eq!(low, 2, "children on {:?}: not 2 per big core", &busy[1..]);
}

#[test]
fn a_running_task_leaves_a_crowded_big_core_and_otherwise_stays() {
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    // 3 and 1: the task on CPU 2 (counted idle) moves to the freer core.
    assert_eq!(s.run_task(2, &[0, 1, 4], None, true, true), (5, IDLE_SMALL));
    // 2 and 2: nothing is freer, the search returns prev (it stays).
    assert_eq!(s.run_task(1, &[0, 4, 5], None, true, true), (1, IDLE_SMALL));
    // POWER9 halves, 2 and 2 with a transient task next to it: it stays.
    let Some(s) = Search::new(&file::parse("small 0,2,4,6\nsmall 1,3,5,7\n", &online(8)).unwrap())
    else {
        return;
    };
    assert_eq!(
        s.run_task(2, &[0, 4, 1, 3], None, true, true),
        (2, NEAR_SMALL)
    );
}

#[test]
fn moves_are_told_apart_by_small_and_big_core() {
    use bpf_intf::cadence_move_span as S;
    const NONE: S = bpf_intf::cadence_move_span_CADENCE_SPAN_NONE;
    const THREAD: S = bpf_intf::cadence_move_span_CADENCE_SPAN_THREAD;
    const SMALL: S = bpf_intf::cadence_move_span_CADENCE_SPAN_SMALL;
    const BIG: S = bpf_intf::cadence_move_span_CADENCE_SPAN_BIG;
    // POWER9-like: small cores {0,2,4,6} {1,3,5,7} in big core 0-7, and
    // {8,10,12,14} {9,11,13,15} in big core 8-15.
    let Some(s) = Search::new(&two_big_cores()) else {
        return;
    };
    assert_eq!(s.span(0, 6), THREAD, "the same SMT4 half");
    assert_eq!(s.span(0, 1), SMALL, "the other half of the big core");
    assert_eq!(s.span(7, 2), SMALL);
    assert_eq!(s.span(0, 8), BIG);
    assert_eq!(s.span(9, 6), BIG);
    assert_eq!(s.span(3, 3), NONE, "no move");
    assert_eq!(s.span(-1, 3), NONE, "before its first run");
    assert_eq!(s.span(3, 16), NONE, "past the table");
    // QEMU's SMT4 cores, every thread its own small core.
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    assert_eq!(s.span(0, 3), SMALL);
    assert_eq!(s.span(3, 4), BIG);
}

/// Issue 15's hysteresis, on QEMU's SMT4 cores (every thread its own small
/// core): a running task re-enqueued at a slice end moves to the other big
/// core only when that one is freer by two threads, counting threads that
/// run light work as free, and only at the CADENCE_MOVE_CONFIRM-th such re-enqueue in a row.
#[test]
fn a_running_task_moves_only_for_a_real_and_lasting_imbalance() {
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    // CPU-bound tasks 2 and 2 (0, 1 | 4, 5), the one on 1 re-enqueued,
    // and two short tasks come up beside it on 2 and 3: the search sees 4
    // idle threads there against none here, but the short ones are light,
    // so the cores are even (2 free each): it stays, at every sighting.
    let two_short = s.hold(1, &[0, 2, 3, 4, 5], &[2, 3], 0);
    assert_eq!(
        two_short,
        Hold {
            cpu: 6,
            gain: 0,
            verdict: STAY,
            seen: 0,
            to: -1
        }
    );
    assert_eq!(
        s.hold(1, &[0, 2, 3, 4, 5], &[2, 3], LAST_WAIT).verdict,
        STAY
    );
    // The same two tasks counted as loaded (no util to tell them apart):
    // the gain is 2, and the first sighting only waits.
    assert_eq!(
        s.hold(1, &[0, 2, 3, 4, 5], &[], 0),
        Hold {
            cpu: 6,
            gain: 2,
            verdict: WAIT,
            seen: 1,
            to: -1
        }
    );
    // CPU-bound tasks 3 and 1 (0, 1, 2 | 4): a real imbalance of two,
    // waited out, then moved at the CADENCE_MOVE_CONFIRM-th check in a row.
    let real = s.hold(2, &[0, 1, 4], &[], 0);
    assert_eq!(
        real,
        Hold {
            cpu: 5,
            gain: 2,
            verdict: WAIT,
            seen: 1,
            to: -1
        }
    );
    assert_eq!(s.hold(2, &[0, 1, 4], &[], LAST_WAIT - 1).verdict, WAIT);
    assert_eq!(s.hold(2, &[0, 1, 4], &[], LAST_WAIT).verdict, MOVE);
    // 3 and 1 where one of the three is a short task: 2 and 1 of real
    // load, a gain of 1, which a move would only reverse: it stays.
    assert_eq!(s.hold(2, &[0, 1, 4], &[1], LAST_WAIT).verdict, STAY);
    // A move within the small core or to its own CPU is not weighed.
    assert_eq!(s.hold(1, &[0, 4, 5], &[], 0).verdict, MOVE);
}

/// The hold counts checks in a row, not sightings. Traced in the bench's
/// churn runs (QEMU's SMT4 cores, one CPU-bound task per core, three
/// shells forking short commands): the core of the task on CPU 4 carried
/// two loaded shells at some of its slice ends and looked even at the
/// others. Counting sightings, 8 of them over 0.3 s moved it onto the
/// other CPU-bound task's core. A check that keeps it where it is ends
/// the run, so only an imbalance seen at every check moves it; a shell
/// that sleeps in between is placed at its own wake-up instead.
#[test]
fn an_imbalance_seen_now_and_then_never_moves_a_running_task() {
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    // CPU-bound tasks on 1 and 4 (4 re-enqueued), loaded shells on 5, 6:
    // core 0-3 has 3 free threads, 4-7 one beside the task's own.
    let uneven = |seen| s.hold(4, &[1, 5, 6], &[], seen);
    // One shell went to sleep and one woke on 2: 2 free threads each,
    // and the search keeps the task on its own CPU.
    let even = |seen| s.hold(4, &[1, 2, 5], &[], seen);
    let mut seen = 0;
    for n in 1..=LAST_WAIT {
        let h = uneven(seen);
        assert_eq!((h.cpu, h.gain, h.verdict, h.seen), (0, 2, WAIT, n));
        seen = h.seen;
    }
    assert_eq!(
        even(seen),
        Hold {
            cpu: 4,
            gain: 0,
            verdict: MOVE,
            seen: 0,
            to: -1
        },
        "an even check ends the run; nothing is held, the search keeps it"
    );
    // Uneven at every check but one, over and over: it never moves.
    seen = 0;
    for round in 0..3 {
        for _ in 0..LAST_WAIT {
            let h = uneven(seen);
            assert_eq!(h.verdict, WAIT, "round {round}");
            seen = h.seen;
        }
        seen = even(seen).seen;
    }
    // No idle CPU at all at a check, and no short task to count idle:
    // that ends the run too.
    let full: Vec<u32> = (0..8).filter(|&c| c != 4).collect();
    assert_eq!(s.hold(4, &full, &[], LAST_WAIT).seen, 0);
    // Uneven at CADENCE_MOVE_CONFIRM checks in a row: it moves.
    seen = 0;
    for _ in 0..LAST_WAIT {
        seen = uneven(seen).seen;
    }
    let h = uneven(seen);
    assert_eq!((h.cpu, h.verdict, h.seen), (0, MOVE, LAST_WAIT));
}

/// Short tasks on the freer core's idle threads do not end the run of
/// checks. CPU-bound tasks split 3 and 1 (0, 1, 2 | 4) with short commands
/// running on 5 and 6: the search sees core 0-3 as freer (its own thread
/// and 3 against 7) and keeps the task on 2 where it is; counted idle, as
/// the gain counts them, they make core 4-7 freer by 2. Before, each such
/// check ended the run and the split lasted (VM case
/// place_split_undone_under_churn). The task stays for the run, then moves
/// to a thread of core 4-7 idle now, if there is one.
#[test]
fn short_tasks_on_the_freer_core_do_not_hide_an_imbalance() {
    let Some(s) = Search::new(&qemu_smt4()) else {
        return;
    };
    let short_there = |seen| s.hold(2, &[0, 1, 4, 5, 6], &[5, 6], seen);
    let mut seen = 0;
    for n in 1..=LAST_WAIT {
        let h = short_there(seen);
        assert_eq!(
            h,
            Hold {
                cpu: 2,
                gain: 2,
                verdict: WAIT,
                seen: n,
                to: -1
            },
            "check {n}: the search keeps it, the imbalance is seen"
        );
        seen = h.seen;
    }
    // The run is complete: the task moves to the thread of core 4-7 idle
    // now (7), though the search on idle threads alone would keep it.
    let h = short_there(seen);
    assert_eq!((h.cpu, h.verdict, h.seen, h.to), (2, MOVE, LAST_WAIT, 7));
    // A short task on 7 too: no thread there is idle now, it stays, and
    // the run stays complete for the next check.
    let h = s.hold(2, &[0, 1, 4, 5, 6, 7], &[5, 6, 7], LAST_WAIT);
    assert_eq!(
        (h.cpu, h.gain, h.verdict, h.seen, h.to),
        (2, 2, MOVE, LAST_WAIT, -1)
    );
    // They exit: the search itself finds 5 idle and moves the task there.
    let h = s.hold(2, &[0, 1, 4], &[], h.seen);
    assert_eq!((h.cpu, h.gain, h.verdict, h.to), (5, 2, MOVE, -1));
    // Split 2 and 2 (0, 1 | 4, 5), a short task on 6: idle or not, core
    // 0-3 is the freer; the check ends the run.
    let h = s.hold(1, &[0, 4, 5, 6], &[6], LAST_WAIT);
    assert_eq!((h.cpu, h.gain, h.verdict, h.seen), (1, 0, MOVE, 0));
    // Loaded tasks on 5 and 6 (not light): a real 3 and 3, no imbalance.
    let h = s.hold(2, &[0, 1, 4, 5, 6], &[], LAST_WAIT);
    assert_eq!((h.cpu, h.gain, h.verdict, h.seen), (2, 0, MOVE, 0));
}

/// The same on POWER9-like halves {0,2,4,6} and {1,3,5,7} of one big
/// core: small cores are weighed against each other.
#[test]
fn the_hold_weighs_small_cores_within_a_big_core() {
    let h = file::parse("small 0,2,4,6\nsmall 1,3,5,7\nbig 0-7\n", &online(8)).unwrap();
    let Some(s) = Search::new(&h) else { return };
    // 3 and 1 over the halves (0, 2, 4 | 1), the one on 2 re-enqueued:
    // the other half has 3 free threads against 1 here.
    assert_eq!(
        s.hold(2, &[0, 4, 1], &[], 0),
        Hold {
            cpu: 3,
            gain: 2,
            verdict: WAIT,
            seen: 1,
            to: -1
        }
    );
    assert_eq!(s.hold(2, &[0, 4, 1], &[], LAST_WAIT).verdict, MOVE);
    // 2 and 2 with a short task on 6 beside the one on 2: even.
    assert_eq!(
        s.hold(2, &[0, 6, 1, 3], &[6], 1).cpu,
        2,
        "stays by the search itself"
    );
}
