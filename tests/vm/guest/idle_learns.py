"""The idle learner learns in the kernel (issue 13). scx_cadence runs with
--idle-states from a file (the TCG VM has no cpuidle driver) and the
balanced policy (predictor per_choice). A sleeper on CPU 1 makes idle periods
there; this reads the pinned maps with bpftool:

- idle_table[1]: learned for the file's 4 states, periods counted, and the
  weights of both matrices (per_choice's and the seed's) moved off seed
  003's fresh rows (6000 on the diagonal, 4000 / 3 = 1333 elsewhere);
- idle_cpu on CPU 1: every scored period counted once per ideal for teo,
  the per-choice pick and the seed's, and none for the kernel's state, whose
  indices are not the file's; and almost every entry closed by its exit
  (a program attached twice sees each entry twice).

Polls with generous deadlines (TCG is slow), asserts no timing.
Usage: idle_learns.py PIN_DIR"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR = sys.argv[1]
CPU = 1
NR_STATES = 4
FRESH = [[6000 if r == i else 1333 for i in range(NR_STATES)] for r in range(NR_STATES)]
bpftool = _Bpftool()


def table() -> dict:
    for entry in bpftool.dump(f"{PIN_DIR}/idle_table"):
        if entry["key"] == CPU:
            return entry["value"]["learned"]
    raise RuntimeError(f"no idle_table entry for CPU {CPU}")


def cpu_state() -> dict:
    dump = bpftool.dump(f"{PIN_DIR}/idle_cpu")
    return {v["cpu"]: v["value"] for v in dump[0]["values"]}[CPU]


# Sleep 2 ms at a time on CPU 1 for 5 s: each sleep is an idle period there.
sleeper = subprocess.Popen(
    ["taskset", "-c", str(CPU), "python3", "-c",
     "import time\nend = time.time() + 5\nwhile time.time() < end: time.sleep(0.002)"])
sleeper.wait()

t = table()
c = cpu_state()
failures = []
print(f"idle_table[{CPU}]: nr_states={t['nr_states']} periods={t['periods']} "
      f"total={t['total']} hits={t['hits'][:NR_STATES]} intercepts={t['intercepts'][:NR_STATES]}")
weights = [row[:NR_STATES] for row in t["weight"][:NR_STATES]]
seed_weights = [row[:NR_STATES] for row in t["seed_weight"][:NR_STATES]]
print(f"weights: {weights}\nseed weights: {seed_weights}")
print(f"idle_cpu[{CPU}]: periods={c['periods']} lost_exits={c['lost_exits']} "
      f"overtaken={c['overtaken']}")
if c["lost_exits"] * 20 > c["periods"]:
    failures.append(f"{c['lost_exits']} entries found the last one open, of {c['periods']}")
if t["nr_states"] != NR_STATES:
    failures.append(f"the table was learned for {t['nr_states']} states, not {NR_STATES}")
if t["periods"] < 100:
    failures.append(f"only {t['periods']} periods learned in 5 s of 2 ms sleeps")
if weights == FRESH:
    failures.append("the per-choice weights never moved off the fresh rows")
if seed_weights == FRESH:
    failures.append("the seed's weights never moved off the fresh rows")
scores = c["scores"]["n"]
for src, name in [(0, "teo"), (1, "per_choice"), (2, "seed")]:
    for ideal in range(2):
        n = sum(scores[src][ideal])
        if n != c["periods"]:
            failures.append(f"{name} scored {n} periods by ideal {ideal}, not {c['periods']}")
if any(sum(row) for row in scores[3]):
    failures.append("the kernel's state was scored although the indices are the file's")
for f in failures:
    print(f"FAIL: {f}")
sys.exit(1 if failures else 0)
