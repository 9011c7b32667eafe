#!/usr/bin/env python3
"""bench/hw/run.sh's table: per metric, each scheduler's median over the
rounds and its ratio to EEVDF's median, with the spread of the ratio: each round's
value over EEVDF's in the same round (the schedulers of one round ran one
after the other), smallest and largest.

    summarize.py RAW_CSV

RAW_CSV: round,scheduler,metric,value lines (bench/hw/run.sh's raw.csv).
For times, energy and latencies lower is better; frequencies and residencies
describe, they do not judge.
"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summarize import BASELINE, read_rows  # noqa: E402


def main(path):
    by_round = collections.defaultdict(dict)
    order, metrics = [], []
    for rnd, sched, metric, value in read_rows(path):
        if not value:
            continue
        by_round[(sched, metric)][rnd] = float(value)
        if sched not in order:
            order.append(sched)
        if metric not in metrics:
            metrics.append(metric)
    others = [s for s in order if s != BASELINE]
    print("Medians; in parentheses the ratio of the median to EEVDF's and, after it, the smallest")
    print("and largest ratio of one round's value to EEVDF's in that round.")
    print()
    print("| metric | " + " | ".join([BASELINE] + others) + " |")
    print("|---" * (2 + len(others)) + "|")
    for metric in metrics:
        base = by_round.get((BASELINE, metric), {})
        if not base:
            continue
        base_med = statistics.median(base.values())
        cells = [f"{base_med:.3f}"]
        for sched in others:
            got = by_round.get((sched, metric), {})
            if not got:
                cells.append("-")
                continue
            med = statistics.median(got.values())
            ratios = [v / base[r] for r, v in got.items() if base.get(r)]
            if base_med and ratios:
                cells.append(f"{med:.3f} ({med / base_med:.2f}x; {min(ratios):.2f}-{max(ratios):.2f})")
            else:
                cells.append(f"{med:.3f}")
        print(f"| {metric} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
