//! The idle learner in plain Rust, written from its sources rather than from
//! bpf/idle_learn.bpf.c: teo_select()/teo_update() of Linux 7.1
//! (drivers/cpuidle/governors/teo.c), tick rules and PM QoS limit
//! included; seed 003's weight matrix as its RFC v2 posting
//! ("Weighted approach to gather and use history in TEO governor", May
//! 2020, on teo of v5.7) adds it to teo_select() and teo_update(); and this
//! project's per-choice variant of that matrix. The host tests hold the
//! BPF code against it, bit for bit.

use super::learner_bpf::Period;
pub use super::period::{BY_EXIT, BY_RESIDENCY, DIFFS, ENDLESS, Entry, Miss, Scores, Tick};
use super::table::{MAX, StatesNs, Table};

/// teo.c's PULSE and DECAY_SHIFT.
const PULSE: u32 = 1024;
const DECAY_SHIFT: u32 = 3;
/// gov.h's RESIDENCY_THRESHOLD_NS.
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// gov.h's SAFE_TIMER_RANGE_NS (7.1), in ticks.
const SAFE_TIMER_TICKS: u64 = 2;
/// teo.c's LATENCY_THRESHOLD_NS.
const LATENCY_THRESHOLD_NS: u64 = RESIDENCY_THRESHOLD_NS / 2;
/// The sources, in enum cadence_idle_source's order.
pub const TEO: usize = 0;
pub const PER_CHOICE: usize = 1;
pub const SEED: usize = 2;
pub const KERNEL: usize = 3;
/// Seed 003: weights out of 10000, 6000 on a fresh row's diagonal.
const SCALE: u32 = 10_000;
const DIAG: u16 = 6_000;

/// How the per-choice predictor reads its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Random,
    Heaviest,
}

#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    pub pick: Pick,
    pub learning_rate: u32,
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
            t.seed_weight[r][i] = t.weight[r][i];
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

/// teo_select() of Linux 7.1 under the PM QoS limit @latency_req: its
/// state, and whether it read the sleep length. @tick's tick_ns 0 is a
/// tick never due.
pub fn teo_choose(
    t: &Table,
    s: &StatesNs,
    sleep_length: u64,
    tick: &Tick,
    latency_req: u64,
) -> (usize, bool) {
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
    // One enabled state: `goto end` with its own residency as the
    // duration, and no shallower state to cap to.
    if deepest == idx0 {
        return (deepest, false);
    }
    let mut idx = deepest;
    // The deepest enabled state past 0 whose exit latency the limit allows;
    // 0 is the floor, never tested.
    let constraint_idx = enabled
        .iter()
        .copied()
        .rfind(|&i| i > 0 && s.exit_latency_ns[i] <= latency_req)
        .unwrap_or(0);
    // Sums over the bins shallower than the deepest enabled state.
    let sum = |bins: &[u32]| bins.iter().fold(0u32, |a, &b| a.wrapping_add(b));
    let idx_intercepts = sum(&t.intercepts[..idx]);
    let idx_hits = sum(&t.hits[..idx]);
    // The bin below the last state with the most intercepts, the deepest
    // of equals, disabled or not (a971f984b845).
    let most = (0..n - 1)
        .max_by_key(|&i| (t.intercepts[i], i))
        .unwrap_or(0);
    if idx_intercepts.wrapping_mul(2) > t.total.wrapping_sub(idx_hits) {
        let mut walked = 0u32;
        for i in (idx0..deepest).rev() {
            walked = walked.wrapping_add(t.intercepts[i]);
            if !s.enabled(i) {
                continue;
            }
            idx = i;
            if walked.wrapping_mul(2) > idx_intercepts && i <= most {
                break;
            }
        }
    }
    idx = idx.min(constraint_idx);
    // A tick of unknown length is never taken as stopped.
    let stopped = tick.stopped && tick.tick_ns != 0;
    let shallow = idx == 0 || s.residency_ns[idx] < RESIDENCY_THRESHOLD_NS;
    let short = t.short_idles.wrapping_mul(2) >= t.total || latency_req < LATENCY_THRESHOLD_NS;
    if !stopped && shallow && short {
        return (idx, false);
    }
    let mut duration = sleep_length;
    let tick_ns = tick.tick_ns;
    if stopped && duration > SAFE_TIMER_TICKS * tick_ns && s.residency_ns[idx] < tick_ns {
        let deeper = ((idx + 1)..=constraint_idx)
            .rev()
            .find(|&i| s.enabled(i) && s.residency_ns[i] <= duration);
        return (deeper.unwrap_or(idx), true);
    }
    if idx == 0 {
        return (0, true);
    }
    if s.residency_ns[idx] > duration {
        idx = shallower(s, idx, duration);
    }
    if s.residency_ns[idx] < tick_ns && t.tick_intercepts.wrapping_mul(3) >= t.total.wrapping_mul(2)
    {
        duration = tick_ns / 2;
    }
    // end: the tick is stopped, or stays and caps the choice.
    if (!s.polling(idx) && duration >= tick_ns) || stopped {
        return (idx, true);
    }
    if idx > idx0 && s.residency_ns[idx] > tick.next_event_ns {
        idx = shallower(s, idx, tick.next_event_ns);
    }
    (idx, true)
}

/// teo_update() of Linux 7.1 after a period of @duration that began and
/// ended as @e says.
pub fn teo_learn(t: &mut Table, s: &StatesNs, e: &Entry, duration: u64) {
    // teo_decay(): an eighth off, and what has no eighth left is 0.
    let decay = |v: &mut u32| {
        *v = if *v >> DECAY_SHIFT == 0 {
            0
        } else {
            *v - (*v >> DECAY_SHIFT)
        }
    };
    let sleep = if e.sleep_length_used {
        e.sleep_length_ns
    } else {
        ENDLESS
    };
    // The state entered pays the exit latency.
    let lat = s.exit_latency_ns[e.entered as usize];
    decay(&mut t.short_idles);
    // A poll that gave up counts as S64_MAX, and not as a short idle.
    let measured = if e.tick.poll_limit {
        ENDLESS
    } else if duration >= lat {
        duration - lat / 2
    } else {
        duration / 2
    };
    if !e.tick.poll_limit && (duration < lat || measured < RESIDENCY_THRESHOLD_NS) {
        t.short_idles += PULSE;
    }
    let (mut timer, mut dur) = (0, 0);
    let mut total = 0u32;
    for i in 0..s.nr() {
        decay(&mut t.hits[i]);
        decay(&mut t.intercepts[i]);
        total = total.wrapping_add(t.hits[i]).wrapping_add(t.intercepts[i]);
        if s.residency_ns[i] <= sleep {
            timer = i;
            if s.residency_ns[i] <= measured {
                dur = i;
            }
        }
    }
    t.total = total.wrapping_add(PULSE);
    decay(&mut t.tick_intercepts);
    decay(&mut t.total_tick);
    if e.tick.woke && e.tick.tick_ns != 0 {
        t.total_tick += PULSE;
        // Tick wake-ups dominate: a hit on the deepest state.
        if t.total_tick.wrapping_mul(3) > t.total.wrapping_mul(2) {
            t.hits[s.nr() - 1] += PULSE;
            return;
        }
        // Few intercepts within a tick: the tick stood in for one.
        if t.tick_intercepts.wrapping_mul(3) < total.wrapping_mul(2) {
            t.hits[timer] += PULSE;
            return;
        }
    }
    // A hit: the sleep length's bin, and the wake-up no earlier than the
    // timer less half the exit latency (s64 arithmetic, as teo's).
    let on_time = (sleep as i64).wrapping_sub(measured as i64) < (lat / 2) as i64;
    if timer == dur && on_time {
        t.hits[timer] += PULSE;
    } else {
        t.intercepts[dur] += PULSE;
        // Within a tick's length; a tick not known has none.
        if e.tick.tick_ns != 0 && measured <= e.tick.tick_ns {
            t.tick_intercepts += PULSE;
        }
    }
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

/// The per-choice pick from row @row: weighted by @rand, or the heaviest.
pub fn per_choice_pick(t: &Table, s: &StatesNs, row: usize, rand: u32, pick: Pick) -> usize {
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

/// Seed 003's pick (RFC v2's teo_select()): teo's @teo, unless teo ended
/// shallower than its timer-based choice (the deepest enabled state, cut
/// by @sleep_length as teo cuts); then the enabled states up to @teo are
/// drawn from row @teo, `rand % 100` percent of the way through their
/// weights.
pub fn seed_pick(t: &Table, s: &StatesNs, teo: usize, sleep_length: u64, rand: u32) -> usize {
    let Some(deepest) = (0..s.nr()).rev().find(|&i| s.enabled(i)) else {
        return teo;
    };
    let timer = if s.residency_ns[deepest] > sleep_length {
        shallower(s, deepest, sleep_length)
    } else {
        deepest
    };
    if teo >= timer {
        return teo;
    }
    let states: Vec<usize> = (0..=teo).filter(|&i| s.enabled(i)).collect();
    let w = |i: usize| u32::from(t.seed_weight[teo][i]);
    let sum: u32 = states.iter().map(|&i| w(i)).sum();
    let pos = (rand % 100) * sum / 100;
    // The first state whose running sum passes the draw.
    let mut acc = 0;
    states
        .into_iter()
        .find(|&i| {
            acc += w(i);
            pos < acc
        })
        .unwrap_or(teo)
}

/// Seed 003's update rule, on the row @row of matrix @m toward @target.
fn matrix_learn(m: &mut [[u16; MAX]; MAX], s: &StatesNs, row: usize, target: usize, k: &Knobs) {
    let n = s.nr() as u32;
    if n < 2 {
        return;
    }
    let lr = k.learning_rate;
    for (i, weight) in m[row].iter_mut().enumerate().take(s.nr()) {
        let w = u32::from(*weight);
        if i == target {
            let grown = w + lr * w / 100;
            if grown < (100 - lr) * 100 {
                *weight = grown as u16;
            }
        } else {
            let shrunk = w - lr * w / (100 * (n - 1));
            if shrunk > lr * 100 {
                *weight = shrunk as u16;
            }
        }
    }
}

/// The state seed 003 learns toward (RFC v2's teo_update() on v5.7 teo),
/// None where no state fits the sleep length.
pub fn seed_target(s: &StatesNs, e: &Entry, duration: u64) -> Option<usize> {
    let entered = e.seed as usize;
    let lat = s.exit_latency_ns[entered];
    // v5.7: a period that reached the sleep length counts as endless, a
    // shorter one loses half the exit latency of the state entered. Its
    // teo_reflect()'s safety nets (a poll that gave up, the tick's wake-up
    // with the sleep length past TICK_NSEC) count as reaching it.
    let safety_net = e.tick.poll_limit
        || (e.tick.woke && e.tick.tick_ns != 0 && e.sleep_length_ns > e.tick.tick_ns);
    let measured = if duration >= e.sleep_length_ns || safety_net {
        ENDLESS
    } else if duration >= lat {
        duration - lat / 2
    } else {
        duration / 2
    };
    let fits_sleep: Vec<usize> = (0..s.nr())
        .filter(|&i| s.residency_ns[i] <= e.sleep_length_ns)
        .collect();
    let timer = *fits_sleep.last()?;
    let hit = fits_sleep
        .into_iter()
        .rfind(|&i| s.residency_ns[i] <= measured);
    Some(match hit {
        Some(h) if h >= timer => entered,
        Some(h) => h,
        None => timer,
    })
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

/// At entry of period @p: the three predictions.
pub fn predict(t: &mut Table, s: &StatesNs, k: &Knobs, p: &Period, kernel_indices: bool) -> Entry {
    if t.nr_states as usize != s.nr() {
        *t = fresh(s.nr());
    }
    let (sleep_length, rand, kernel) = (p.sleep_length_ns, p.rand, p.kernel_state);
    let (teo, used) = teo_choose(t, s, sleep_length, &p.tick, p.latency_req_ns);
    Entry {
        teo: teo as u32,
        per_choice: per_choice_pick(t, s, teo, rand, k.pick) as u32,
        seed: seed_pick(t, s, teo, sleep_length, rand) as u32,
        kernel,
        rand,
        sleep_length_ns: sleep_length,
        sleep_length_used: used,
        entered: if kernel_indices && kernel >= 0 && (kernel as usize) < s.nr() {
            kernel as u32
        } else {
            teo as u32
        },
        tick: p.tick,
        latency_req_ns: p.latency_req_ns,
        kernel_miss: p.kernel_miss,
    }
}

/// At exit: all three learn.
pub fn learn(t: &mut Table, s: &StatesNs, k: &Knobs, e: &Entry, duration: u64) {
    if t.nr_states as usize != s.nr() {
        *t = fresh(s.nr());
    }
    let target = ideal(s, duration, false);
    let seed_toward = seed_target(s, e, duration);
    teo_learn(t, s, e, duration);
    matrix_learn(&mut t.weight, s, e.teo as usize, target, k);
    if let Some(toward) = seed_toward {
        matrix_learn(&mut t.seed_weight, s, e.seed as usize, toward, k);
    }
    t.periods += 1;
}

/// Score a period for each source against both ideals, the kernel's
/// choice again under its verdict when that was a miss.
pub fn score(sc: &mut Scores, s: &StatesNs, e: &Entry, duration: u64, kernel_indices: bool) {
    for (kind, with_exit) in [(BY_RESIDENCY, false), (BY_EXIT, true)] {
        let ideal = ideal(s, duration, with_exit);
        let bucket = |chosen: usize| chosen + MAX - 1 - ideal;
        sc.n[TEO][kind][bucket(e.teo as usize)] += 1;
        sc.n[PER_CHOICE][kind][bucket(e.per_choice as usize)] += 1;
        sc.n[SEED][kind][bucket(e.seed as usize)] += 1;
        if kernel_indices && e.kernel >= 0 && (e.kernel as usize) < s.nr() {
            let b = bucket(e.kernel as usize);
            sc.n[KERNEL][kind][b] += 1;
            match e.kernel_miss {
                Miss::Above => sc.miss[0][kind][b] += 1,
                Miss::Below => sc.miss[1][kind][b] += 1,
                Miss::None => {}
            }
        }
    }
}
