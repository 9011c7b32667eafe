#!/usr/bin/env python3
"""Reads cyclictest's histogram output (-h N -q, on stdin) and prints the
latency summary of all its threads together, in microseconds:

    avg max p50 p99 p99.9

The average and the maximum come from cyclictest's own "# Avg Latencies" and
"# Max Latencies" lines (mean of the per-thread averages, largest maximum);
the percentiles from the per-microsecond buckets summed over threads. A
sample beyond the histogram's range (an overflow) counts as the range
itself, so a percentile that falls among overflows reads as "at least N".
Prints nothing if the output holds no histogram.
"""
import sys


def numbers(line):
    return [int(x) for x in line.split(":", 1)[1].split()]


def percentile(buckets, overflows, fraction):
    total = sum(buckets) + overflows
    need = fraction * total
    seen = 0
    for us, count in enumerate(buckets):
        seen += count
        if seen >= need:
            return us
    return len(buckets)


def main():
    buckets, avgs, maxes, overflows = [], [], [], 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if line.startswith("# Avg Latencies:"):
            avgs = numbers(line)
        elif line.startswith("# Max Latencies:"):
            maxes = numbers(line)
        elif line.startswith("# Histogram Overflows:"):
            overflows = sum(numbers(line))
        elif line[0].isdigit():
            fields = [int(x) for x in line.split()]
            us, counts = fields[0], fields[1:]
            while len(buckets) <= us:
                buckets.append(0)
            buckets[us] += sum(counts)
    if not buckets or not avgs or not maxes:
        return
    p50, p99, p999 = (percentile(buckets, overflows, f) for f in (0.5, 0.99, 0.999))
    print(f"{sum(avgs) / len(avgs):.1f} {max(maxes)} {p50} {p99} {p999}")


if __name__ == "__main__":
    main()
