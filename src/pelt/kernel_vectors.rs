//! Test vectors for bpf/pelt.bpf.h derived from PELT's definitions, not
//! from any copy of its code: the decay table from y^32 = 1/2 in exact
//! integer arithmetic, util of a task that runs from nothing from the
//! geometric series, the half-life, and the worked example of
//! accumulate_sum()'s comment in kernel/sched/pelt.c. Each runs through the
//! BPF code (BPF_PROG_TEST_RUN of bpf/pelt_test.bpf.c); the bounds state
//! where the kernel's integer truncation lets the result differ from the
//! real-valued form. Needs CAP_BPF and CAP_PERFMON (skipped without), not sched_ext.

use super::bpf_tests::BpfPelt;
use super::model::{Op, State, Step};
use crate::bpf_intf;

/// y, with y^32 = 1/2 (kernel/sched/pelt.c: "y^32 = 0.5").
fn y() -> f64 {
    0.5f64.powf(1.0 / 32.0)
}

/// A PELT period: 1024 units of 1024 ns.
const PERIOD_NS: u64 = 1 << 20;
/// A period boundary far from 0.
const START: u64 = 1000 * PERIOD_NS;
/// LOAD_AVG_MAX - 1024: the divider of util_avg at a period boundary.
const DIVIDER: f64 = (47742 - 1024) as f64;

fn decay(bpf: &BpfPelt, calls: &[(u64, u64)]) -> Vec<u64> {
    // SAFETY: plain integers; all zeroes is valid.
    let mut d: bpf_intf::cadence_decay_test = unsafe { std::mem::zeroed() };
    assert!(calls.len() <= d.val.len());
    for (i, &(v, n)) in calls.iter().enumerate() {
        d.val[i] = v;
        d.n[i] = n;
    }
    d.nr = calls.len() as u32;
    bpf_intf::test_run_in_place(&bpf.skel.progs.decay_run, &mut d);
    assert_eq!(d.error, 0);
    d.out[..calls.len()].to_vec()
}

/// Unsigned big integers as little-endian u32 limbs: just enough for
/// 32nd powers of 33-bit numbers (about 1056 bits).
#[derive(Clone, PartialEq, Eq, Debug)]
struct Big(Vec<u32>);

impl Big {
    fn from(v: u64) -> Big {
        Big(vec![v as u32, (v >> 32) as u32])
    }

    fn mul(&self, m: u64) -> Big {
        let (lo, hi) = (m & 0xffff_ffff, m >> 32);
        let part = |f: u64| {
            let mut out = Vec::with_capacity(self.0.len() + 1);
            let mut carry = 0u64;
            for &l in &self.0 {
                let p = l as u64 * f + carry;
                out.push(p as u32);
                carry = p >> 32;
            }
            out.push(carry as u32);
            out
        };
        let mut sum = part(lo);
        sum.push(0);
        let high = part(hi);
        let mut carry = 0u64;
        for i in 0..sum.len() {
            let h = if i >= 1 && i - 1 < high.len() {
                high[i - 1] as u64
            } else {
                0
            };
            let s = sum[i] as u64 + h + carry;
            sum[i] = s as u32;
            carry = s >> 32;
        }
        Big(sum)
    }

    fn pow(v: u64, e: u32) -> Big {
        (0..e).fold(Big::from(1), |acc, _| acc.mul(v))
    }

    fn shl(&self, bits: u32) -> Big {
        (0..bits).fold(self.clone(), |acc, _| acc.mul(2))
    }

    fn cmp(&self, o: &Big) -> std::cmp::Ordering {
        let n = self.0.len().max(o.0.len());
        let get = |b: &Big, i: usize| b.0.get(i).copied().unwrap_or(0);
        for i in (0..n).rev() {
            match get(self, i).cmp(&get(o, i)) {
                std::cmp::Ordering::Equal => continue,
                c => return c,
            }
        }
        std::cmp::Ordering::Equal
    }
}

/// Every entry of runnable_avg_yN_inv, read back through the BPF
/// decay_load() (decay_load(2^32, n) = 2^32 * yN_inv[n] >> 32 = yN_inv[n]),
/// is floor((2^32 - 1) * y^n) (Documentation/scheduler/sched-pelt.c), and
/// that is checked exactly: t = floor(M * 2^(-n/32)) with M = 2^32 - 1
/// holds iff t^32 * 2^n <= M^32 < (t + 1)^32 * 2^n.
#[test]
fn decay_table_is_floor_of_y_pow_n_exactly() {
    let Some(bpf) = BpfPelt::load() else { return };
    let calls: Vec<(u64, u64)> = (0..32).map(|n| (1u64 << 32, n)).collect();
    let table = decay(&bpf, &calls);
    let m32 = Big::pow((1u64 << 32) - 1, 32);
    for (n, &t) in table.iter().enumerate() {
        let lo = Big::pow(t, 32).shl(n as u32);
        let hi = Big::pow(t + 1, 32).shl(n as u32);
        assert!(
            lo.cmp(&m32).is_le() && m32.cmp(&hi).is_lt(),
            "yN_inv[{n}] = {t:#x} is not floor((2^32 - 1) * y^{n})"
        );
        // And in f64, as a cross-check of the exact test itself.
        let f = (((1u64 << 32) - 1) as f64 * y().powi(n as i32)).floor() as u64;
        assert!(t.abs_diff(f) <= 1, "yN_inv[{n}] = {t}, f64 says {f}");
    }
}

/// decay_load(v, n) = v * y^n: v >> (n / 32) then the table, so it never
/// exceeds v * y^n and falls short by less than 2 (one truncation in the
/// shift, one in the product) plus what the table's entries lose against
/// 2^32 y^r (their 2^32 - 1 factor and truncation): at most v / 2^31.
/// 0 past 63 half-lives (n > 2016).
#[test]
fn decay_load_is_v_times_y_pow_n() {
    let Some(bpf) = BpfPelt::load() else { return };
    let vals = [
        1024u64,
        47742,
        1 << 20,
        47742 << 10,
        u32::MAX as u64,
        1 << 40,
    ];
    let ns = [0u64, 1, 31, 32, 33, 64, 100, 345, 1000, 2016];
    let calls: Vec<(u64, u64)> = vals
        .iter()
        .flat_map(|&v| ns.iter().map(move |&n| (v, n)))
        .collect();
    for chunk in calls.chunks(64) {
        for (&(v, n), got) in chunk.iter().zip(decay(&bpf, chunk)) {
            let want = v as f64 * y().powi(n as i32);
            // f64 carries 53 bits: allow its own error on 2^40-sized values.
            let slack = want * 1e-12;
            let short = 2.0 + v as f64 / (1u64 << 31) as f64;
            assert!(
                (got as f64) <= want + slack && (got as f64) > want - short - slack,
                "decay_load({v}, {n}) = {got}, v * y^n = {want}"
            );
        }
    }
    assert_eq!(
        decay(&bpf, &[(1 << 40, 2017), (u64::MAX, 5000)]),
        vec![0, 0]
    );
}

fn running(delta_ns: u64) -> Step {
    Step {
        delta_ns,
        freq_scale: 1024,
        cpu_cap: 1024,
        op: Op::Stay,
    }
}

/// A task that runs n full periods from nothing, in one update from a
/// period boundary. Its contributions are 1024 (y + y^2 + ... + y^n) units;
/// PELT sums the first and the n - 1 full periods as
/// decay_load(1024, n) + LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, n) - 1024,
/// i.e. (LOAD_AVG_MAX - 1024)(1 - y^n) with each decay_load() short by
/// less than 2, and util_avg divides util_sum = contrib * 1024 by
/// LOAD_AVG_MAX - 1024. So util_avg = floor(1024 (1 - y^n) + e) with
/// |e| < 2 * 1024 / 46718 < 0.05, and exactly 1024 once decay_load()
/// returns 0 (n > 2016). n = 32 is the half-life: 512.
#[test]
fn util_of_a_task_running_n_periods_from_nothing() {
    let Some(bpf) = BpfPelt::load() else { return };
    for n in [
        1u64, 2, 3, 5, 10, 16, 31, 32, 33, 64, 100, 200, 345, 1000, 2016, 2017, 3000,
    ] {
        let out = bpf.run(START, State::Running, &[running(n * PERIOD_NS)]);
        let util = out.task_util[0] as f64;
        let real = 1024.0 * (1.0 - y().powi(n as i32));
        let (lo, hi) = ((real - 0.05).floor(), (real + 0.05).floor());
        assert!(
            util >= lo && util <= hi,
            "n = {n}: util_avg {util}, 1024 (1 - y^n) = {real}"
        );
        assert_eq!(out.task.period_contrib, 0);
        if n == 32 {
            assert_eq!(util, 512.0);
        }
        if n > 2016 {
            assert_eq!(util, 1024.0);
            assert_eq!(out.task.util_sum, 46718 << 10);
        }
        // The CPU's signal saw the same: busy from nothing, same clock.
        assert_eq!(out.cpu.util_sum, out.task.util_sum);
    }
}

/// The same task updated once per period instead: each update adds
/// c1 + c2 with c1 = decay_load(1024, 1) = floor(1024 y) (one truncation)
/// and c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, 1) - 1024, which the
/// decay_load() bound puts in (46718 - 47742 y, 46718 - 47742 y + 2) =
/// (-0.99, 1.01): 0 or 1. So util_sum after k updates lies between the
/// geometric series 1024 c (1 - y^k) / (1 - y) for c = floor(1024 y) and
/// c + 1, less one unit per decay_load() truncation of util_sum.
#[test]
fn util_of_a_task_running_updated_every_period() {
    let Some(bpf) = BpfPelt::load() else { return };
    let n = 64u64;
    let steps: Vec<Step> = (0..n).map(|_| running(PERIOD_NS)).collect();
    let out = bpf.run(START, State::Running, &steps);
    let c = (1024.0 * y()).floor();
    for (k, &u) in out.task_util.iter().enumerate() {
        let k = k as f64 + 1.0;
        let series = |c: f64| 1024.0 * c * (1.0 - y().powf(k)) / (1.0 - y());
        let lo = ((series(c) - 2.0 * k) / DIVIDER).floor();
        let hi = (series(c + 1.0) / DIVIDER).floor();
        assert!(
            (u as f64) >= lo && (u as f64) <= hi,
            "after {k} periods: util_avg {u}, series between {lo} and {hi}"
        );
    }
}

/// A half-life: a task saturated at 1024 (3000 periods running) that then
/// sleeps 32 periods shows 512; 64 periods, 256 (each within one unit:
/// util_sum is halved by a shift and the table's entry 0 is 1 - 2^-32).
#[test]
fn sleeping_32_periods_halves_util() {
    let Some(bpf) = BpfPelt::load() else { return };
    for (periods, want) in [(32u64, 512.0), (64, 256.0), (16, 1024.0 * y().powi(16))] {
        let sleep = Step {
            op: Op::Sleep,
            ..running(3000 * PERIOD_NS)
        };
        let asleep = Step {
            op: Op::Stay,
            ..running(periods * PERIOD_NS)
        };
        let out = bpf.run(START, State::Running, &[sleep, asleep]);
        assert_eq!(out.task_util[0], 1024);
        let u = out.task_util[1] as f64;
        assert!(
            (u - want).abs() <= 1.0,
            "{periods} periods asleep: {u}, want {want}"
        );
    }
}

/// The example drawn in accumulate_sum()'s comment (kernel/sched/pelt.c):
/// a signal u last updated d0 into a period; now is d1, p - 1 full
/// periods and d3 later, and
///
/// ```text
/// u' = (u + d1) y^p + 1024 \Sum_{n=1}^{p-1} y^n + d3 y^0
/// ```
///
/// Traced by hand with d0 = 300 units of running from a period start
/// (u = 300), then d1 = 724, p = 4, d3 = 100, all running:
///
/// ```text
/// u' = 1024 y^4 + 1024 (y + y^2 + y^3) + 100
///    = 939.01 + 2942.22 + 100 = 3981.23 units
/// ```
///
/// The kernel forms the middle sum as LOAD_AVG_MAX (1 - y^p) - 1024,
/// and LOAD_AVG_MAX = 47742 is the limit of the truncated sums, not
/// 1024 / (1 - y) = 47788.08: 46.08 (1 - y^4) = 3.82 units lower. With
/// three decay_load() truncations (under 2 each) u' must lie in
/// [3981.23 - 3.82 - 6, 3981.23].
#[test]
fn accumulate_sum_comment_example() {
    let Some(bpf) = BpfPelt::load() else { return };
    let unit = 1024u64;
    let steps = [running(300 * unit), running((724 + 3 * 1024 + 100) * unit)];
    let out = bpf.run(START, State::Running, &steps);
    assert_eq!(out.task.period_contrib, 100);
    let y = y();
    let real = 1024.0 * y.powi(4) + 1024.0 * (y + y * y + y.powi(3)) + 100.0;
    assert!((real - 3981.23).abs() < 0.01, "hand trace: {real}");
    let got = out.task.util_sum as f64 / 1024.0;
    assert!(
        got >= real - 3.82 - 6.0 && got <= real,
        "util_sum / 1024 = {got}, the comment's u' = {real}"
    );
}
