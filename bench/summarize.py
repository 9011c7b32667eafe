#!/usr/bin/env python3
"""Turns bench/guest.sh's raw CSV into an MMTests-like table: the median of
each metric per scheduler, and its ratio to EEVDF's median from the same run
(below 1.00 is better for every metric here: all are times or latencies).
Then the mean BPF cost per callback of each sched_ext scheduler.

    summarize.py RAW_CSV BPF_CSV
"""

import collections
import os
import statistics
import sys

import ejected

BASELINE = "eevdf"
METRICS = {
    "hackbench_s": "hackbench -g 4 -l 200 (s)",
    "pipe_s": "perf bench sched pipe -l 20000 (s)",
    "cyclictest_avg_us": "cyclictest avg, all CPUs busy (us)",
    "cyclictest_p50_us": "cyclictest p50, all CPUs busy (us)",
    "cyclictest_p99_us": "cyclictest p99, all CPUs busy (us)",
    "cyclictest_p999_us": "cyclictest p99.9, all CPUs busy (us)",
    "cyclictest_max_us": "cyclictest max, all CPUs busy (us)",
    "cyclictest_hackbench_avg_us": "cyclictest avg, beside hackbench (us)",
    "cyclictest_hackbench_p50_us": "cyclictest p50, beside hackbench (us)",
    "cyclictest_hackbench_p99_us": "cyclictest p99, beside hackbench (us)",
    "cyclictest_hackbench_p999_us": "cyclictest p99.9, beside hackbench (us)",
    "cyclictest_hackbench_max_us": "cyclictest max, beside hackbench (us)",
    "cyclictest_hackbench_steady_avg_us": "cyclictest avg, beside steady hackbench (us)",
    "cyclictest_hackbench_steady_p50_us": "cyclictest p50, beside steady hackbench (us)",
    "cyclictest_hackbench_steady_p99_us": "cyclictest p99, beside steady hackbench (us)",
    "cyclictest_hackbench_steady_p999_us": "cyclictest p99.9, beside steady hackbench (us)",
    "cyclictest_hackbench_steady_max_us": "cyclictest max, beside steady hackbench (us)",
}
# cyclictest beside a pipe ping-pong pair (guest.sh --latency only).
for stat, name in (("avg", "avg"), ("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")):
    METRICS[f"cyclictest_pipe_{stat}_us"] = f"cyclictest {name}, beside a pipe pair (us)"
# The wake-to-run delays of cyclictest's threads (bench/wakelat), per load.
LOADS = {
    "cyclictest": "all CPUs busy",
    "cyclictest_hackbench": "beside hackbench",
    "cyclictest_hackbench_steady": "beside steady hackbench",
    "cyclictest_pipe": "beside a pipe pair",
}
for prefix, load in LOADS.items():
    for stat, name in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")):
        METRICS[f"{prefix}_wake_{stat}_us"] = f"wake-to-run {name}, {load} (us)"


def read_rows(path):
    with open(path) as f:
        return [line.strip().split(",") for line in f if line.strip()]


def main(raw_path, bpf_path):
    values = collections.defaultdict(list)
    order = []
    lost = ejected.load(os.path.dirname(raw_path))
    ejected.note(lost)
    for rnd, sched, metric, value in read_rows(raw_path):
        if (sched, rnd) in lost:
            continue
        if sched not in order:
            order.append(sched)
        if value:
            values[(sched, metric)].append(float(value))
    order.sort(key=lambda s: (s != BASELINE, s))

    runs = {s: max((len(values[(s, m)]) for m in METRICS), default=0) for s in order}
    print("| metric | " + " | ".join(f"{s} (n={runs[s]})" for s in order) + " |")
    print("|---|" + "---|" * len(order))
    for metric, label in METRICS.items():
        if not any(values.get((s, metric)) for s in order):
            continue  # not measured in this run
        base = values.get((BASELINE, metric))
        base_med = statistics.median(base) if base else None
        cells = []
        for s in order:
            v = values.get((s, metric))
            if not v:
                cells.append("-")
                continue
            med = statistics.median(v)
            ratio = f" ({med / base_med:.2f}x)" if base_med and s != BASELINE else ""
            cells.append(f"{med:.3f}{ratio}")
        print(f"| {label} | " + " | ".join(cells) + " |")

    cost = collections.defaultdict(lambda: [0, 0])
    for sched, prog, ns, cnt in read_rows(bpf_path):
        cost[(sched, prog)][0] += int(ns)
        cost[(sched, prog)][1] += int(cnt)
    if not cost:
        return
    print()
    # The struct_ops callbacks and the tracing programs beside them
    # (scx_cadence's idle learner, tp_btf/cpu_idle: cadence_cpu_idle).
    print("Mean BPF cost per callback (ns, run_time_ns / run_cnt, all rounds; struct_ops")
    print("callbacks and tracing programs such as the idle learner's cadence_cpu_idle):")
    print()
    print("| scheduler | callback | calls | ns/call |")
    print("|---|---|---|---|")
    totals = collections.defaultdict(lambda: [0, 0])
    for (sched, prog), (ns, cnt) in sorted(cost.items()):
        print(f"| {sched} | {prog} | {cnt} | {ns / cnt:.0f} |")
        totals[sched][0] += ns
        totals[sched][1] += cnt
    for sched, (ns, cnt) in sorted(totals.items()):
        print(f"| {sched} | **all callbacks** | {cnt} | **{ns / cnt:.0f}** |")
    # The same workloads ran under each scheduler, so total BPF time is the
    # fair cost comparison; the mean per callback also moves with the mix of
    # callbacks (cheap update_idle calls, for instance, pull it down).
    print()
    print("| scheduler | total BPF time, all rounds (s) |")
    print("|---|---|")
    for sched, (ns, _cnt) in sorted(totals.items()):
        print(f"| {sched} | {ns / 1e9:.3f} |")
    mean = {s: ns / cnt for s, (ns, cnt) in totals.items() if cnt}
    if "scx_cadence" in mean:
        print()
        # scx_cadence_again: the same binary again (bench/ab.sh), the spread.
        for other in ("scx_bpfland", "scx_cadence_base", "scx_cadence_again"):
            if other in mean:
                print(f"scx_cadence against {other}: "
                      f"{totals['scx_cadence'][0] / totals[other][0]:.2f}x the total BPF time, "
                      f"{mean['scx_cadence'] / mean[other]:.2f}x the mean cost per callback.")


if __name__ == "__main__":
    main(*sys.argv[1:3])
