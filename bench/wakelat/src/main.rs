//! scx_wakelat: how long the waking tasks of one name wait before they run
//! (wakelat.bpf.c), from the moment it is started until SIGINT or SIGTERM;
//! then one line of results. A measure for bench/, beside any scheduler.
//!
//!     scx_wakelat COMM_PREFIX
//!
//! prints `n N p50_us A p99_us B p999_us C max_us D lost L`: the wake-ups
//! timed, three percentiles (each the upper end of its histogram bucket,
//! at most 3.1% above the true value, and never above the longest delay),
//! the longest delay (exact), and the wake-ups not timed because the
//! pending map was full.

mod bpf_skel {
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}

use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bpf_skel::BpfSkelBuilder;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use signal_hook::consts::{SIGINT, SIGTERM};

/// wakelat.bpf.c's WAKELAT_SUB_BITS: 2^5 buckets per power of two.
const SUB_BITS: u32 = 5;
/// wakelat.bpf.c's WAKELAT_NR_BUCKETS.
const NR_BUCKETS: u32 = 60 << SUB_BITS;
/// TASK_COMM_LEN: a task name's bytes, with its terminating zero.
const COMM_LEN: usize = 16;

/// The delays in ns that bucket `idx` of wakelat.bpf.c's bucket() holds,
/// first and last included.
fn bucket_bounds(idx: u32) -> (u64, u64) {
    if idx < 1 << SUB_BITS {
        return (idx as u64, idx as u64);
    }
    let group = idx >> SUB_BITS;
    let sub = (idx & ((1 << SUB_BITS) - 1)) as u64;
    let width = 1u64 << (group - 1);
    let low = ((1u64 << SUB_BITS) + sub) << (group - 1);
    (low, low + width - 1)
}

/// The upper end, in ns, of the bucket holding the q-quantile of the
/// delays counted in `hist` (nearest rank: the ceil(q n)-th smallest).
fn quantile_ns(hist: &[u64], q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    let rank = ((q * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (idx, &count) in hist.iter().enumerate() {
        seen += count;
        if seen >= rank {
            return bucket_bounds(idx as u32).1;
        }
    }
    0
}

/// The sum over CPUs of a per-CPU u64 array map's slot `key`.
fn per_cpu_sum(map: &dyn MapCore, key: u32) -> Result<u64> {
    let values = map
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)?
        .context("per-CPU slot missing")?;
    Ok(values
        .iter()
        .map(|v| u64::from_ne_bytes(v[0..8].try_into().unwrap()))
        .sum())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, prefix] = args.as_slice() else {
        bail!("usage: scx_wakelat COMM_PREFIX");
    };
    if prefix.is_empty() || prefix.len() >= COMM_LEN {
        bail!("the name prefix must have 1 to {} bytes", COMM_LEN - 1);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("signal handler")?;
    }

    let mut open_object = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default()
        .open(&mut open_object)
        .context("opening wakelat.bpf.c")?;
    let rodata = open.maps.rodata_data.as_mut().unwrap();
    for (i, b) in prefix.bytes().enumerate() {
        rodata.comm_prefix[i] = b as i8;
    }
    rodata.comm_len = prefix.len() as u32;
    let mut skel = open.load().context("loading wakelat.bpf.c")?;
    skel.attach().context("attaching wakelat.bpf.c")?;
    eprintln!("scx_wakelat: following tasks named {prefix}*");
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }

    let mut hist = Vec::with_capacity(NR_BUCKETS as usize);
    for idx in 0..NR_BUCKETS {
        hist.push(per_cpu_sum(&skel.maps.hist, idx)?);
    }
    // struct wakelat_totals, per CPU: max_ns (the largest of them, not a
    // sum) and lost (summed); one read for both.
    let totals = skel
        .maps
        .totals
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?
        .context("totals missing")?;
    let word = |v: &[u8], i: usize| u64::from_ne_bytes(v[8 * i..8 * i + 8].try_into().unwrap());
    let max_ns = totals.iter().map(|v| word(v, 0)).max().unwrap_or(0);
    let lost: u64 = totals.iter().map(|v| word(v, 1)).sum();
    let us = |ns: u64| ns as f64 / 1000.0;
    println!(
        "n {} p50_us {:.1} p99_us {:.1} p999_us {:.1} max_us {:.1} lost {}",
        hist.iter().sum::<u64>(),
        us(quantile_ns(&hist, 0.50).min(max_ns)),
        us(quantile_ns(&hist, 0.99).min(max_ns)),
        us(quantile_ns(&hist, 0.999).min(max_ns)),
        us(max_ns),
        lost
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_the_delays_worked_by_hand() {
        // Under 32 ns: one bucket per value.
        assert_eq!(bucket_bounds(0), (0, 0));
        assert_eq!(bucket_bounds(31), (31, 31));
        // 32..63 ns: the first power of two, still 1 ns wide.
        assert_eq!(bucket_bounds(32), (32, 32));
        assert_eq!(bucket_bounds(63), (63, 63));
        // 64 ns: highest bit 6, group 2, 2 ns wide.
        assert_eq!(bucket_bounds(64), (64, 65));
        // 1000 ns: highest bit 9 (512), group 5, sub (1000 >> 4) & 31 = 30:
        // bucket 5 * 32 + 30 = 190, 16 ns wide from 62 * 16 = 992.
        assert_eq!(bucket_bounds(190), (992, 1007));
        // The last bucket ends at u64::MAX.
        assert_eq!(bucket_bounds(NR_BUCKETS - 1).1, u64::MAX);
        // The buckets tile the line: each begins where the last ended.
        for idx in 1..NR_BUCKETS {
            assert_eq!(
                bucket_bounds(idx).0,
                bucket_bounds(idx - 1).1 + 1,
                "bucket {idx}"
            );
        }
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let mut hist = vec![0u64; NR_BUCKETS as usize];
        hist[10] = 98; // 10 ns
        hist[190] = 1; // 992..1007 ns
        hist[191] = 1; // 1008..1023 ns
        assert_eq!(quantile_ns(&hist, 0.50), 10);
        // The 99th of 100 is the first in bucket 190; the 100th, 191's.
        assert_eq!(quantile_ns(&hist, 0.99), 1007);
        assert_eq!(quantile_ns(&hist, 0.999), 1023);
        assert_eq!(quantile_ns(&[0; 4], 0.5), 0);
    }
}
