//! idle.place = shallow in bpf/place_search.bpf.c, run in the host kernel
//! (see place_tests.rs): where the order holds several idle CPUs equal, the
//! one whose idle state has the smallest exit latency is woken; where the
//! order prefers one (the previous CPU, its small or big core), it still
//! wins. The latencies are Intel Skylake-SP's (docs/idle-states/
//! intel-skylake-sp.txt): C1 2 us, C6 133 us; every expected CPU below is
//! worked out by hand from the order in place_search.bpf.c's comment.

use super::file;
use super::place_tests::{
    ANY, IDLE_BIG, IDLE_SMALL, NEAR_LLC, NEAR_SMALL, PREV_SMALL, Search, online, two_big_cores,
};

/// C1's exit latency (ns).
const C1: u32 = 2_000;
/// C6's exit latency (ns).
const C6: u32 = 133_000;

/// Each of @cpus at @ns.
fn at(ns: u32, cpus: &[u32]) -> Vec<(u32, u32)> {
    cpus.iter().map(|&c| (c, ns)).collect()
}

#[test]
fn the_shallowest_thread_of_an_idle_big_core_is_woken() {
    let Some(plain) = Search::new(&two_big_cores()) else {
        return;
    };
    // prev 2's small core is busy (CPU 0): step 2 takes big core 8-15,
    // whose first thread is 8; with shallow, 13, the only one in C1.
    assert_eq!(plain.run(2, &[0], None, true), (8, IDLE_BIG));
    let mut exit = at(C6, &[8, 9, 10, 11, 12, 14, 15]);
    exit.push((13, C1));
    let s = Search::new(&two_big_cores()).unwrap().shallow(&exit);
    assert_eq!(s.run(2, &[0], None, true), (13, IDLE_BIG));
    // The task may not use 13: the next shallowest, all C6: the first.
    let not_13: Vec<u32> = (0..16).filter(|&c| c != 13).collect();
    assert_eq!(s.run(2, &[0], Some(&not_13), true), (8, IDLE_BIG));
}

#[test]
fn the_previous_cpu_still_wins_where_the_order_prefers_it() {
    // prev 2 in C6, everything else busy-free and at 0: step 1 keeps 2.
    let Some(s) = Search::new(&two_big_cores()) else {
        return;
    };
    let s = s.shallow(&at(C6, &[2]));
    assert_eq!(s.run(2, &[], None, true), (2, PREV_SMALL));
    // No whole small core near prev (0, 1, 8, 9 busy): step 4 takes prev's
    // own small core and prev itself, though 4 and 6 are shallower.
    assert_eq!(s.run(2, &[0, 1, 8, 9], None, true), (2, NEAR_SMALL));
}

#[test]
fn the_shallowest_of_equal_big_cores_in_the_llc_is_woken() {
    // Three SMT2 big cores in one LLC; prev 0's core is busy (CPU 1), so
    // step 2 chooses between the idle cores 2-3 and 4-5: 2 by order, 5 by
    // state.
    let h = file::parse(
        "small 0,1\nsmall 2,3\nsmall 4,5\nbig 0-1\nbig 2-3\nbig 4-5\nllc 0-5\n",
        &online(6),
    )
    .unwrap();
    let Some(plain) = Search::new(&h) else {
        return;
    };
    assert_eq!(plain.run(0, &[1], None, true), (2, IDLE_BIG));
    let mut exit = at(C6, &[2, 3, 4]);
    exit.push((5, C1));
    let s = Search::new(&h).unwrap().shallow(&exit);
    assert_eq!(s.run(0, &[1], None, true), (5, IDLE_BIG));
    // All in C6: a tie, the order's first.
    let s = Search::new(&h).unwrap().shallow(&at(C6, &[2, 3, 4, 5]));
    assert_eq!(s.run(0, &[1], None, true), (2, IDLE_BIG));
}

#[test]
fn the_shallowest_idle_small_core_is_woken_at_step_3() {
    // Within prev's big core: 0 and 8 busy, prev 2's small core is not
    // whole, 1,3,5,7 is: 1 by order; with 5 the only one not in C6, 5.
    let Some(s) = Search::new(&two_big_cores()) else {
        return;
    };
    let s = s.shallow(&at(C6, &[1, 3, 7]));
    assert_eq!(s.run(2, &[0, 8], None, true), (5, IDLE_SMALL));

    // Between big cores with as many idle threads, neither prev's: three
    // big cores of two SMT2 small cores; 0, 2 (prev's core), 4 and 8 busy.
    // Cores 4-7 and 8-11 both have 3 idle threads and one whole small
    // core (6,7 and 10,11): 6 by order, 11 by state.
    let h = file::parse(
        "small 0,1\nsmall 2,3\nsmall 4,5\nsmall 6,7\nsmall 8,9\nsmall 10,11\n\
         big 0-3\nbig 4-7\nbig 8-11\nllc 0-11\n",
        &online(12),
    )
    .unwrap();
    let busy = [0, 2, 4, 8];
    let Some(plain) = Search::new(&h) else {
        return;
    };
    assert_eq!(plain.run(0, &busy, None, true), (6, IDLE_SMALL));
    let mut exit = at(C6, &[6, 7, 10]);
    exit.push((11, C1));
    let s = Search::new(&h).unwrap().shallow(&exit);
    assert_eq!(s.run(0, &busy, None, true), (11, IDLE_SMALL));
}

#[test]
fn the_shallowest_thread_near_prev_is_woken_at_step_4() {
    // prev 2's big core full, 8 and 9 busy: step 4c in big core 8-15,
    // whose small cores tie at 3 idle threads: 10 by order; with every
    // thread in C6 but 13, 13 (the other small core wins the tie).
    let Some(plain) = Search::new(&two_big_cores()) else {
        return;
    };
    let full: Vec<u32> = (0..8).chain([8, 9]).collect();
    assert_eq!(plain.run(2, &full, None, true), (10, NEAR_LLC));
    let mut exit = at(C6, &[10, 11, 12, 14, 15]);
    exit.push((13, C1));
    let s = Search::new(&two_big_cores()).unwrap().shallow(&exit);
    assert_eq!(s.run(2, &full, None, true), (13, NEAR_LLC));
}

#[test]
fn packing_wakes_the_shallowest_thread_of_the_busiest_small_core() {
    // powersave: idle_core_first off. 0 and 2 busy: the small core
    // 0,2,4,6 has the fewest idle threads; prev 2 is busy, so its first
    // idle thread, 4, by order; 6, in C1 beside 4 in C6, by state. The
    // idle cores 1,3,5,7 and 8-15 sleep on whatever their state.
    let Some(plain) = Search::new(&two_big_cores()) else {
        return;
    };
    assert_eq!(plain.run(2, &[0, 2], None, false), (4, NEAR_SMALL));
    let mut exit = at(C6, &[4]);
    exit.push((6, C1));
    let s = Search::new(&two_big_cores()).unwrap().shallow(&exit);
    assert_eq!(s.run(2, &[0, 2], None, false), (6, NEAR_SMALL));
}

#[test]
fn anywhere_takes_the_shallowest_idle_cpu() {
    // Two LLCs of two single-thread cores; prev 0's LLC busy: step 5,
    // 2 by order (lowest id), 3 by state; a tie keeps the lowest id.
    let h = file::parse(
        "small 0\nsmall 1\nsmall 2\nsmall 3\nbig 0\nbig 1\nbig 2\nbig 3\nllc 0-1\nllc 2-3\n",
        &online(4),
    )
    .unwrap();
    let Some(plain) = Search::new(&h) else {
        return;
    };
    assert_eq!(plain.run(0, &[0, 1], None, true), (2, ANY));
    let s = Search::new(&h).unwrap().shallow(&[(2, C6), (3, C1)]);
    assert_eq!(s.run(0, &[0, 1], None, true), (3, ANY));
    let s = Search::new(&h).unwrap().shallow(&[(2, C1), (3, C1)]);
    assert_eq!(s.run(0, &[0, 1], None, true), (2, ANY));
}

#[test]
fn with_no_state_known_shallow_changes_nothing() {
    // All latencies 0 (no table, predictor off, or all busy-fresh): every
    // level of place_tests' walk picks as without shallow.
    let Some(plain) = Search::new(&two_big_cores()) else {
        return;
    };
    let s = Search::new(&two_big_cores()).unwrap().shallow(&[]);
    let full: Vec<u32> = (0..8).chain([8, 9]).collect();
    let cases: [&[u32]; 7] = [
        &[],
        &[0],
        &[0, 8],
        &[0, 1, 8],
        &[0, 1, 8, 9],
        &[0, 2, 1, 8, 9],
        &full,
    ];
    for busy in cases {
        for spread in [true, false] {
            assert_eq!(
                s.run(2, busy, None, spread),
                plain.run(2, busy, None, spread),
                "busy {busy:?} spread {spread}"
            );
        }
    }
}
