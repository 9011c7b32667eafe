"""Runs N CPU-bound tasks for SECONDS and samples every 100 ms which CPU
each one is on (/proc/PID/stat, field 39), then counts the samples in
which the tasks are spread evenly over the given small cores (per small
core, N / cores rounded down or up), seed 002's "optimal placement".

    place_sample.py N SECONDS SMALL_CORES [MIN_SHARE]
SMALL_CORES: small cores as cpulists joined by '/', e.g. 0,2,4,6/1,3,5,7.
Prints one JSON line; with MIN_SHARE, exits 1 if the share of even samples
is below it (and, for N = number of small cores, names the samples with
two tasks in one small core)."""

import json
import subprocess
import sys
import time

from proc_cpus import cpu_of, cpulist


n, seconds = int(sys.argv[1]), float(sys.argv[2])
smalls = [cpulist(s) for s in sys.argv[3].split("/")]
min_share = float(sys.argv[4]) if len(sys.argv) > 4 else None
core_of = {cpu: i for i, s in enumerate(smalls) for cpu in s}


tasks = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
try:
    time.sleep(1.0)  # let the placement settle
    lo, hi = n // len(smalls), -(-n // len(smalls))
    even = total = 0
    per_core_seen = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        counts = [0] * len(smalls)
        for t in tasks:
            counts[core_of.get(cpu_of(t.pid), 0)] += 1
        total += 1
        if all(lo <= c <= hi for c in counts):
            even += 1
        key = "/".join(map(str, counts))
        per_core_seen[key] = per_core_seen.get(key, 0) + 1
        time.sleep(0.1)
finally:
    for t in tasks:
        t.kill()
share = even / total if total else 0.0
print(json.dumps({"tasks": n, "samples": total, "even": even, "share": round(share, 3),
                  "distributions": per_core_seen}))
if min_share is not None and share < min_share:
    print(f"FAIL: {n} tasks spread evenly over {len(smalls)} small cores in "
          f"{share:.0%} of samples, want {min_share:.0%}")
    sys.exit(1)
