"""Samples CPUs 1 (a task busy a third of the time) and 2 (a hog) in the
pinned cpu_perf map while the deadband is off, at headroom 125 and 250:
each sample's target must be min(1024, util x headroom / 125) of the util
the same evaluation saw. bpftool reads a per-CPU value without a lock, so
a read can land between an evaluation's util and its target: 90% of the
samples must be exact (the mismatches are printed). A CPU reads util 0
and target 0 while idle (it asked for its floor going idle).

Usage: perf_follows.py PIN_DIR SCHED"""

import statistics
import subprocess
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR, SCHED = sys.argv[1], sys.argv[2]
SAMPLES = 30
bpftool = _Bpftool()
failures = []

for headroom in (125, 250):
    subprocess.run([SCHED, "ctl", "set", f"cpufreq.headroom_pct={headroom}"], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    for cpu in (1, 2):
        exact, utils = 0, []
        for _ in range(SAMPLES):
            dump = bpftool.dump(f"{PIN_DIR}/cpu_perf")
            v = next(x["value"] for x in dump[0]["values"] if x["cpu"] == cpu)
            want = min(1024, v["util"] * headroom // 125)
            utils.append(v["util"])
            if v["target"] == want:
                exact += 1
            else:
                print(f"  headroom {headroom} cpu {cpu}: target {v['target']}, util {v['util']} "
                      f"gives {want}")
            time.sleep(0.1)
        # An idle CPU reads util 0 and its floor (it asked for it going
        # idle): the median is over the samples of a busy CPU.
        busy = [u for u in utils if u > 0] or [0]
        med = statistics.median(busy)
        print(f"headroom {headroom} cpu {cpu}: {exact}/{SAMPLES} exact, median util {med}")
        if exact < 0.9 * SAMPLES:
            failures.append(f"headroom {headroom} cpu {cpu}: only {exact}/{SAMPLES} exact")
        if cpu == 2 and med < 900:
            failures.append(f"the hog's CPU has median util {med}")
        if cpu == 1 and not 100 <= med <= 900:
            failures.append(f"the part-time task's CPU has median util {med}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
