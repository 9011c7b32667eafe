//! The idle learner in plain Rust, written from its sources rather than from
//! bpf/idle_learn.bpf.h: mainline teo's teo_select()/teo_update()
//! (drivers/cpuidle/governors/teo.c) for a CPU whose tick runs and which has
//! no latency limit, and seed 003's weight matrix as
//! ../shared/DESIGN.md states it, with the aging this project adds. The
//! host tests hold the BPF code against it, bit for bit.

pub use super::period::{BY_EXIT, BY_RESIDENCY, DIFFS, Entry, Scores};
use super::table::{MAX, StatesNs, Table};

/// teo.c's PULSE and DECAY_SHIFT.
const PULSE: u32 = 1024;
const DECAY_SHIFT: u32 = 3;
/// gov.h's RESIDENCY_THRESHOLD_NS.
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// KTIME_MAX: an unknown sleep length.
pub const ENDLESS: u64 = i64::MAX as u64;
/// The sources, in enum cadence_idle_source's order.
pub const TEO: usize = 0;
pub const WEIGHTED: usize = 1;
pub const KERNEL: usize = 2;
/// Seed 003: weights out of 10000, 6000 on a fresh row's diagonal.
const SCALE: u32 = 10_000;
const DIAG: u16 = 6_000;

/// How the weighted predictor reads its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Random,
    Heaviest,
}

#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    pub pick: Pick,
    pub learning_rate: u32,
    pub aging_interval: u32,
}

/// A fresh table: empty bins, every row 6000 on the diagonal and 4000
/// shared by the other states.
pub fn fresh(nr: usize) -> Table {
    let mut t = Table {
        nr_states: nr as u32,
        ..Table::default()
    };
    let off = if nr > 1 {
        ((SCALE - DIAG as u32) / (nr as u32 - 1)) as u16
    } else {
        0
    };
    for r in 0..nr {
        for i in 0..nr {
            t.weight[r][i] = if r == i { DIAG } else { off };
        }
    }
    t
}

/// The deepest enabled state below @idx whose residency fits @duration,
/// else the shallowest enabled one below it (teo_find_shallower_state()).
fn shallower(s: &StatesNs, idx: usize, duration: u64) -> usize {
    let mut found = idx;
    for i in (0..idx).rev().filter(|&i| s.enabled(i)) {
        found = i;
        if s.residency_ns[i] <= duration {
            break;
        }
    }
    found
}

/// teo_select()'s state, and whether it read the sleep length.
pub fn teo_choose(t: &Table, s: &StatesNs, sleep_length: u64) -> (usize, bool) {
    let n = s.nr();
    if n < 2 {
        return (0, false);
    }
    let enabled: Vec<usize> = (0..n).filter(|&i| s.enabled(i)).collect();
    let Some(&deepest) = enabled.last() else {
        return (0, false);
    };
    // The first enabled state among 1.. (state 0 counts as idx0 = 0 when
    // it is enabled: teo starts idx at 0 then).
    let idx0 = if s.enabled(0) { 0 } else { enabled[0] };
    if deepest == idx0 {
        return (deepest, false);
    }
    let mut idx = deepest;
    // Sums over the bins shallower than the deepest enabled state.
    let idx_intercepts = t.intercepts[..idx]
        .iter()
        .fold(0u32, |a, &b| a.wrapping_add(b));
    let idx_hits = t.hits[..idx].iter().fold(0u32, |a, &b| a.wrapping_add(b));
    if idx_intercepts.wrapping_mul(2) > t.total.wrapping_sub(idx_hits) {
        let mut first = idx;
        let mut sum = 0u32;
        for i in (0..idx).rev() {
            sum = sum.wrapping_add(t.intercepts[i]);
            if sum.wrapping_mul(2) > idx_intercepts {
                idx = if s.enabled(i) { i } else { first };
                break;
            }
            if s.enabled(i) {
                first = i;
            }
        }
    }
    let shallow = idx == 0 || s.residency_ns[idx] < RESIDENCY_THRESHOLD_NS;
    if shallow && t.short_idles.wrapping_mul(2) >= t.total {
        return (idx, false);
    }
    if idx == 0 {
        return (0, true);
    }
    if s.residency_ns[idx] > sleep_length {
        idx = shallower(s, idx, sleep_length);
    }
    (idx, true)
}

/// teo_update() after a period of @duration that teo chose @e.teo for.
pub fn teo_learn(t: &mut Table, s: &StatesNs, e: &Entry, duration: u64) {
    let decay = |v: &mut u32| *v -= *v >> DECAY_SHIFT;
    let sleep = if e.sleep_length_used {
        e.sleep_length_ns
    } else {
        ENDLESS
    };
    let lat = s.exit_latency_ns[e.teo as usize];
    decay(&mut t.short_idles);
    let measured = if duration >= lat {
        duration - lat / 2
    } else {
        duration / 2
    };
    if duration < lat || measured < RESIDENCY_THRESHOLD_NS {
        t.short_idles += PULSE;
    }
    let (mut timer, mut dur) = (0, 0);
    for i in 0..s.nr() {
        decay(&mut t.hits[i]);
        decay(&mut t.intercepts[i]);
        if s.residency_ns[i] <= sleep {
            timer = i;
            if s.residency_ns[i] <= measured {
                dur = i;
            }
        }
    }
    if timer == dur {
        t.hits[timer] += PULSE;
    } else {
        t.intercepts[dur] += PULSE;
    }
    decay(&mut t.total);
    t.total += PULSE;
}

/// The state a period of @duration justified, by residency alone or with
/// the exit latency added.
pub fn ideal(s: &StatesNs, duration: u64, with_exit: bool) -> usize {
    let need = |i: usize| s.residency_ns[i] + if with_exit { s.exit_latency_ns[i] } else { 0 };
    let enabled: Vec<usize> = (0..s.nr()).filter(|&i| s.enabled(i)).collect();
    let Some(&first) = enabled.first() else {
        return 0;
    };
    enabled
        .iter()
        .rev()
        .copied()
        .find(|&i| need(i) <= duration)
        .unwrap_or(first)
}

/// Seed 003's pick from row @row: weighted by @rand, or the heaviest.
pub fn weighted_pick(t: &Table, s: &StatesNs, row: usize, rand: u32, pick: Pick) -> usize {
    let states: Vec<usize> = (0..s.nr()).filter(|&i| s.enabled(i)).collect();
    let w = |i: usize| u32::from(t.weight[row][i]);
    let sum: u32 = states.iter().map(|&i| w(i)).sum();
    // The heaviest, the shallowest of equals; with all weights 0, the row.
    let heaviest = heaviest(t, &states, row);
    if sum == 0 || pick == Pick::Heaviest {
        return heaviest;
    }
    // rand / 2^32 of the way through the row's total weight.
    let pos = (u64::from(rand) * u64::from(sum)) >> 32;
    let mut acc = 0u64;
    for &i in &states {
        acc += u64::from(w(i));
        if pos < acc {
            return i;
        }
    }
    heaviest
}

/// Seed 003's update of @row toward @target, then aging.
pub fn weighted_learn(t: &mut Table, s: &StatesNs, row: usize, target: usize, k: &Knobs) {
    let n = s.nr() as u32;
    if n < 2 {
        return;
    }
    let lr = k.learning_rate;
    for i in 0..s.nr() {
        let w = u32::from(t.weight[row][i]);
        if i == target {
            let grown = w + lr * w / 100;
            if grown < (100 - lr) * 100 {
                t.weight[row][i] = grown as u16;
            }
        } else {
            let shrunk = w - lr * w / (100 * (n - 1));
            if shrunk > lr * 100 {
                t.weight[row][i] = shrunk as u16;
            }
        }
    }
    if k.aging_interval == 0 {
        return;
    }
    t.row_updates[row] += 1;
    if u32::from(t.row_updates[row]) < k.aging_interval {
        return;
    }
    t.row_updates[row] = 0;
    let states: Vec<usize> = (0..s.nr()).filter(|&i| s.enabled(i)).collect();
    if states.len() < 2 {
        return;
    }
    let h = heaviest(t, &states, row);
    let share = (t.weight[row][h] >> 3) / (states.len() as u16 - 1);
    for &i in states.iter().filter(|&&i| i != h) {
        t.weight[row][i] += share;
        t.weight[row][h] -= share;
    }
}

/// The first of the heaviest of @states in row @row, among weights above
/// 0; the row's own state if there are none.
fn heaviest(t: &Table, states: &[usize], row: usize) -> usize {
    let w = |i: usize| t.weight[row][i];
    states
        .iter()
        .copied()
        .filter(|&i| w(i) > 0)
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if w(b) >= w(i) => Some(b),
            _ => Some(i),
        })
        .unwrap_or(row)
}

/// At entry: both predictions.
pub fn predict(
    t: &mut Table,
    s: &StatesNs,
    k: &Knobs,
    sleep_length: u64,
    rand: u32,
    kernel: i32,
) -> Entry {
    if t.nr_states as usize != s.nr() {
        *t = fresh(s.nr());
    }
    let (teo, used) = teo_choose(t, s, sleep_length);
    Entry {
        teo: teo as u32,
        weighted: weighted_pick(t, s, teo, rand, k.pick) as u32,
        kernel,
        rand,
        sleep_length_ns: sleep_length,
        sleep_length_used: used,
    }
}

/// At exit: both learn.
pub fn learn(t: &mut Table, s: &StatesNs, k: &Knobs, e: &Entry, duration: u64) {
    if t.nr_states as usize != s.nr() {
        *t = fresh(s.nr());
    }
    let target = ideal(s, duration, false);
    teo_learn(t, s, e, duration);
    weighted_learn(t, s, e.teo as usize, target, k);
    t.periods += 1;
}

/// Score a period for each source against both ideals.
pub fn score(sc: &mut Scores, s: &StatesNs, e: &Entry, duration: u64, kernel_indices: bool) {
    for (kind, with_exit) in [(BY_RESIDENCY, false), (BY_EXIT, true)] {
        let ideal = ideal(s, duration, with_exit);
        let mut count = |src: usize, chosen: usize| {
            sc.0[src][kind][chosen + MAX - 1 - ideal] += 1;
        };
        count(TEO, e.teo as usize);
        count(WEIGHTED, e.weighted as usize);
        if kernel_indices && e.kernel >= 0 && (e.kernel as usize) < s.nr() {
            count(KERNEL, e.kernel as usize);
        }
    }
}
