"""Samples CPUs 1 (a task busy a third of the time) and 2 (a hog) in the
pinned cpu_cpufreq map while the deadband is off, at headroom 125 and 250:
each sample's target must be min(1024, util x headroom / 125) of the util
the same evaluation saw. bpftool reads a per-CPU value without a lock, so
a read can land between an evaluation's util and its target: 90% of the
samples must be exact (the mismatches are printed). A CPU reads util 0
and target 0 while idle (it asked for its floor going idle).

How busy the part-time task really is depends on the host: under TCG its
loop and wake-ups cost as much again as its 4 ms of spinning (measured:
half the time, not a third). So its CPU's util is held against the share
of time the task ran, read exactly from /proc/PID/schedstat over the same
samples: PELT's util_avg of a CPU running a share s of the time converges
to s x 1024 (kernel/sched/pelt.c), and what the target follows is never
below it (it is the larger of that and the task's util_est). It must also
stay below saturation, where the hog's CPU is, unless the task itself ran
nearly all the time. Run this pinned away from CPUs 1 and 2, or the
sampler's own util is what it reads there.

Usage: cpufreq_follows.py PIN_DIR SCHED PART_TIME_PID"""

import statistics
import subprocess
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR, SCHED, PART_TIME_PID = sys.argv[1], sys.argv[2], sys.argv[3]
SAMPLES = 30
bpftool = _Bpftool()
failures = []
# How far the part-time CPU's median util may fall below 1024 x the task's
# share: the rise of util_avg over one 4 ms burst from a third of 1024,
# (1024 - 341) x (1 - y^4) = 57 with y^32 = 1/2, with room for TCG's longer
# bursts.
SHARE_TOLERANCE = 100
# Saturation: the hog's CPU reads 1023-1024, a CPU idle part of the time
# stays under this (unless the task ran over SATURATED_SHARE of the time).
SATURATED_UTIL = 1000
SATURATED_SHARE = 0.85


def ran_ns():
    """Nanoseconds the part-time task has run (sum_exec_runtime)."""
    with open(f"/proc/{PART_TIME_PID}/schedstat") as f:
        return int(f.read().split()[0])

for headroom in (125, 250):
    subprocess.run([SCHED, "ctl", "set", f"cpufreq.headroom_pct={headroom}"], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    for cpu in (1, 2):
        exact, utils = 0, []
        ran0, t0 = ran_ns(), time.monotonic_ns()
        for _ in range(SAMPLES):
            dump = bpftool.dump(f"{PIN_DIR}/cpu_cpufreq")
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
        share = (ran_ns() - ran0) / (time.monotonic_ns() - t0)
        print(f"headroom {headroom} cpu {cpu}: {exact}/{SAMPLES} exact, median util {med}"
              + (f", the part-time task ran {share:.2f} of the time" if cpu == 1 else ""))
        if exact < 0.9 * SAMPLES:
            failures.append(f"headroom {headroom} cpu {cpu}: only {exact}/{SAMPLES} exact")
        if cpu == 2 and med < 900:
            failures.append(f"the hog's CPU has median util {med}")
        if cpu == 1 and med < share * 1024 - SHARE_TOLERANCE:
            failures.append(f"the part-time task's CPU has median util {med}, "
                            f"below its share {share:.2f} x 1024")
        if cpu == 1 and share < SATURATED_SHARE and med >= SATURATED_UTIL:
            failures.append(f"the part-time task's CPU reads saturated ({med}) "
                            f"though the task ran {share:.2f} of the time")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
