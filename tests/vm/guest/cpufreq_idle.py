"""An idle CPU drops its cpufreq target (issue 11, item 3). scx_cadence runs
with --test-util-inject, util 800 on every CPU, so every evaluation on a
busy CPU asks for a high target and only idle entry can lower it. Run
pinned to CPU 0 (taskset): CPU 1 is the one watched, and nothing of ours
may run there after its hog stops.

- util mode: a hog raises CPU 1's target; once the hog is gone and CPU 1
  idles, its target reads 0 (the floor: what util 0 asks for) and its
  idle_floor counter grew.
- performance mode: the floor is 1024: CPU 1 keeps 1024 through idle and
  no idle request is counted.

Polls with generous deadlines (TCG is slow), asserts no timing.
Usage: cpufreq_idle.py PIN_DIR SCHED"""

import subprocess
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR, SCHED = sys.argv[1], sys.argv[2]
CPU = 1
DEADLINE_S = 20.0
bpftool = _Bpftool()
failures = []


def set_util(util: int):
    value = [str(b) for b in util.to_bytes(8, "little")]
    subprocess.run(["bpftool", "map", "update", "pinned", f"{PIN_DIR}/util_inject",
                    "key", "0", "0", "0", "0", "value", *value], check=True)


def perf() -> dict:
    dump = bpftool.dump(f"{PIN_DIR}/cpu_cpufreq")
    return {v["cpu"]: v["value"] for v in dump[0]["values"]}[CPU]


def hog():
    return subprocess.Popen(["taskset", "-c", str(CPU), "sh", "-c", "while :; do :; done"])


def poll(what, pred):
    """The first snapshot of CPU 1 that satisfies @pred, else a failure."""
    end = time.monotonic() + DEADLINE_S
    while True:
        p = perf()
        if pred(p):
            print(f"{what}: target {p['target']} idle_floor {p.get('idle_floor')}")
            return p
        if time.monotonic() > end:
            failures.append(f"{what}: not within {DEADLINE_S} s; last: target {p['target']} "
                            f"idle_floor {p.get('idle_floor')}")
            return p
        time.sleep(0.1)


set_util(800)
h = hog()
busy = poll("util mode, hog on cpu 1", lambda p: p["target"] >= 410)
h.kill()
h.wait()
idle = poll("util mode, cpu 1 idle", lambda p: p["target"] == 0
            and p.get("idle_floor", 0) > busy.get("idle_floor", 0))

subprocess.run([SCHED, "ctl", "set", "cpufreq.mode=performance"], check=True,
               stdout=subprocess.DEVNULL)
h = hog()
busy = poll("performance, hog on cpu 1", lambda p: p["target"] == 1024)
h.kill()
h.wait()
time.sleep(2)
for _ in range(20):
    p = perf()
    if p["target"] != 1024 or p.get("idle_floor") != busy.get("idle_floor"):
        failures.append(f"performance, cpu 1 idle: target {p['target']} idle_floor "
                        f"{p.get('idle_floor')} (want 1024, {busy.get('idle_floor')})")
        break
    time.sleep(0.1)
print(f"performance, cpu 1 idle: target {p['target']} idle_floor {p.get('idle_floor')}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
