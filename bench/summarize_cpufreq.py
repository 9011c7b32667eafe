"""Table of the cpufreq bench (bench/cpufreq.sh): per policy, the medians
over rounds of requests issued, requests per second of workload, each
suppression counter, and the workload's duration; the ratio of requests to
the deadband-off run of the same round, as a median.

    summarize_cpufreq.py CPUFREQ_CSV"""

import csv
import os
import statistics
import sys
from collections import defaultdict

import ejected

FIELDS = ["seconds", "issued", "deadband", "hysteresis", "hold", "rate"]
rows = defaultdict(dict)  # policy -> round -> {field: value}
lost = ejected.load(os.path.dirname(sys.argv[1]))
ejected.note(lost)
with open(sys.argv[1]) as f:
    for r in csv.reader(f):
        if (r[1], r[0]) in lost:
            continue
        rnd, name = int(r[0]), r[1]
        rows[name][rnd] = dict(zip(FIELDS, map(float, r[2:])))


def med(name, field):
    return statistics.median(v[field] for v in rows[name].values())


def ratio(name):
    """Median over rounds of issued / issued with the deadband off."""
    rs = [v["issued"] / rows["off"][rnd]["issued"]
          for rnd, v in rows[name].items() if rows["off"].get(rnd, {}).get("issued")]
    return statistics.median(rs) if rs else float("nan")


print("| policy | requests | requests/s | vs off | suppressed: floor | band | hold | rate | workload s |")
print("|---|---|---|---|---|---|---|---|---|")
for name in rows:
    per_s = statistics.median(v["issued"] / v["seconds"] for v in rows[name].values())
    print(f"| {name} | {med(name, 'issued'):.0f} | {per_s:.0f} | {ratio(name):.2f}x "
          f"| {med(name, 'deadband'):.0f} | {med(name, 'hysteresis'):.0f} "
          f"| {med(name, 'hold'):.0f} | {med(name, 'rate'):.0f} | {med(name, 'seconds'):.1f} |")
n = len(next(iter(rows.values())))
print()
print(f"Medians over {n} rounds. `vs off` is the median over rounds of this policy's")
print("requests divided by the deadband-off requests of the same round; the issue's")
print("target is at most 0.50x for the balanced deadband.")
