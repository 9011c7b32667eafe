"""The idle learner learns in the kernel (issue 13), and only the acting
matrix runs unless idle.compare asks for both (issue 51). scx_cadence runs
with --idle-states from a file (the TCG VM has no cpuidle driver) and the
balanced policy (predictor per_choice, compare false). A sleeper on CPU 1
makes idle periods there; this reads the pinned maps with bpftool:

- idle_table[1]: learned for the file's 4 states, periods counted, and the
  per-choice weights moved off seed 003's fresh rows (6000 on the diagonal,
  4000 / 3 = 1333 elsewhere), the seed's not: it does not act;
- idle_cpu on CPU 1: every scored period counted once per ideal for teo and
  the per-choice pick, none for the seed, and none for the kernel's state,
  whose indices are not the file's; and almost every entry closed by its
  exit (a program attached twice sees each entry twice);
- after `ctl set idle.compare=true` and the sleeper again: the seed's
  weights move and it is scored, on fewer periods than teo (not those that
  began before the switch), while teo and the per-choice pick still score
  every period.

Polls with generous deadlines (TCG is slow), asserts no timing.
Usage: idle_learns.py SCHED PIN_DIR"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

SCHED, PIN_DIR = sys.argv[1:3]
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


def sleep_on_cpu(secs: int) -> None:
    """2 ms sleeps on CPU @CPU for @secs s: each one an idle period there."""
    subprocess.run(
        ["taskset", "-c", str(CPU), "python3", "-c",
         f"import time\nend = time.time() + {secs}\nwhile time.time() < end: time.sleep(0.002)"],
        check=True)


def scored(c: dict, src: int) -> list:
    """Periods @src was scored on in idle_cpu @c, by ideal."""
    return [sum(c["scores"]["n"][src][ideal]) for ideal in range(2)]


def show(t: dict, c: dict) -> None:
    print(f"idle_table[{CPU}]: nr_states={t['nr_states']} periods={t['periods']} "
          f"total={t['total']} hits={t['hits'][:NR_STATES]} intercepts={t['intercepts'][:NR_STATES]}")
    print(f"weights: {weights(t, 'weight')}\nseed weights: {weights(t, 'seed_weight')}")
    print(f"idle_cpu[{CPU}]: periods={c['periods']} lost_exits={c['lost_exits']} "
          f"overtaken={c['overtaken']} scored teo {scored(c, 0)} per_choice {scored(c, 1)} "
          f"seed {scored(c, 2)} kernel {scored(c, 3)}")


def weights(t: dict, matrix: str) -> list:
    return [row[:NR_STATES] for row in t[matrix][:NR_STATES]]


failures = []
sleep_on_cpu(5)
t = table()
c = cpu_state()
show(t, c)
if c["lost_exits"] * 20 > c["periods"]:
    failures.append(f"{c['lost_exits']} entries found the last one open, of {c['periods']}")
if t["nr_states"] != NR_STATES:
    failures.append(f"the table was learned for {t['nr_states']} states, not {NR_STATES}")
if t["periods"] < 100:
    failures.append(f"only {t['periods']} periods learned in 5 s of 2 ms sleeps")
if weights(t, "weight") == FRESH:
    failures.append("the per-choice weights never moved off the fresh rows")
if weights(t, "seed_weight") != FRESH:
    failures.append("the seed's weights moved while it neither acts nor idle.compare is on")
for src, name in [(0, "teo"), (1, "per_choice")]:
    if scored(c, src) != [c["periods"]] * 2:
        failures.append(f"{name} scored {scored(c, src)} periods by ideal, not {c['periods']}")
if scored(c, 2) != [0, 0]:
    failures.append(f"the seed was scored on {scored(c, 2)} periods while it does not run")
if scored(c, 3) != [0, 0]:
    failures.append("the kernel's state was scored although the indices are the file's")

r = subprocess.run([SCHED, "ctl", "set", "idle.compare=true"], capture_output=True, text=True)
print(f"$ scx_cadence ctl set idle.compare=true -> rc {r.returncode}: {(r.stdout + r.stderr).strip()}")
if r.returncode != 0:
    failures.append("ctl set idle.compare=true failed")
before = c["periods"]
sleep_on_cpu(3)
t = table()
c = cpu_state()
show(t, c)
if weights(t, "seed_weight") == FRESH:
    failures.append("the seed's weights never moved off the fresh rows with idle.compare on")
for src, name in [(0, "teo"), (1, "per_choice")]:
    if scored(c, src) != [c["periods"]] * 2:
        failures.append(f"{name} scored {scored(c, src)} periods by ideal, not {c['periods']}")
seed = scored(c, 2)
if not (seed[0] == seed[1] and 100 <= seed[0] <= c["periods"] - before):
    failures.append(f"the seed was scored on {seed} periods with idle.compare on, "
                    f"want at least 100 and at most the {c['periods'] - before} since")
for f in failures:
    print(f"FAIL: {f}")
sys.exit(1 if failures else 0)
