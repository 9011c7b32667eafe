"""Drives the real BPF cpufreq path with injected util (the VM has no
cpufreq and no real frequencies): scx_cadence runs with
--test-util-inject and a deadband policy whose floor is 410 (fmin 400 MHz
over freq_max 1000 MHz), band 32, interval 1 ms and down hold 100 ms. A hog
on every CPU makes every CPU evaluate its target on each tick. Each phase
sets a util on all CPUs, waits, and checks what each CPU's counters in the
pinned cpu_cpufreq map did: the exact number of requests issued, which
suppression counter moved, and the target in force.

Usage: cpufreq_inject.py PIN_DIR SCHED"""

import json
import subprocess
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR, SCHED = sys.argv[1], sys.argv[2]
# Under TCG a tick can come late; a second holds hundreds of them.
SETTLE_S = 1.0
COUNTERS = ["issued", "supp_deadband", "supp_hysteresis", "supp_hold", "supp_rate"]

bpftool = _Bpftool()
writer = subprocess.Popen(["bpftool", "batch", "file", "-"], stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, text=True, bufsize=1)


def set_util(util: int):
    """The same util on every CPU (bpftool copies a per-CPU value to all)."""
    value = " ".join(str(b) for b in util.to_bytes(8, "little"))
    writer.stdin.write(f"map update pinned {PIN_DIR}/util_inject key 0 0 0 0 value {value}\n")
    writer.stdin.flush()


def snapshot() -> dict:
    dump = bpftool.dump(f"{PIN_DIR}/cpu_cpufreq")
    return {v["cpu"]: v["value"] for v in dump[0]["values"]}


def ctl_set(*assignments):
    subprocess.run([SCHED, "ctl", "set", *assignments], check=True, stdout=subprocess.DEVNULL)


failures = []


def phase(name, action, issued, moved=None, target=None, at_least=False):
    """Runs @action (a util to set, or a function), waits, and checks each
    CPU's growth of `issued` (exactly @issued, or at least it), that
    counter @moved grew, and the @target in force."""
    before = snapshot()
    if callable(action):
        action()
    elif action is not None:
        set_util(action)
    time.sleep(SETTLE_S)
    after = snapshot()
    for cpu in sorted(after):
        d = {c: after[cpu][c] - before[cpu][c] for c in COUNTERS}
        line = (f"{name}: cpu {cpu} target {after[cpu]['target']} util {after[cpu]['util']} "
                + " ".join(f"{c} +{v}" for c, v in d.items()))
        print(line)
        ok_issued = d["issued"] >= issued if at_least else d["issued"] == issued
        if not ok_issued:
            failures.append(f"{line}: issued {'at least ' if at_least else ''}{issued} expected")
        if moved and d[moved] <= 0:
            failures.append(f"{line}: {moved} did not move")
        if target is not None and after[cpu]["target"] != target:
            failures.append(f"{line}: target {target} expected")
    return after


def alternate(a, b, seconds, period=0.05):
    """Util flipping between @a and @b every @period, for @seconds."""
    stop = threading.Event()

    def run():
        v = a
        while not stop.is_set():
            set_util(v)
            v = b if v == a else a
            time.sleep(period)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return stop, t


# From attach every CPU saw util 0 (the map starts zeroed): floored to the
# minimum, held 100 ms, then asked for once: one request per CPU so far.
time.sleep(SETTLE_S)
start = snapshot()
for cpu, v in sorted(start.items()):
    print(f"start: cpu {cpu} target {v['target']} issued {v['issued']} hold {v['supp_hold']}")
    if v["issued"] != 1 or v["target"] != 0:
        failures.append(f"start: cpu {cpu} issued {v['issued']} target {v['target']}, "
                        "want one request for 0")

phase("raise 700", 700, 1, target=700)
phase("720 within the band", 720, 0, moved="supp_hysteresis", target=700)
phase("300 under the floor", 300, 1, moved="supp_hold", target=0)
phase("200 under the floor", 200, 0, moved="supp_deadband", target=0)

# Hot-swap the deadband away: the same util 200 is now asked for.
phase("deadband off, 200", lambda: ctl_set("cpufreq.floor=false", "cpufreq.band=0",
                                            "cpufreq.interval_us=0", "cpufreq.down_hold_us=0"),
      1, target=200)

# Util flipping 200/210 every 50 ms: without the band each flip is a
# request; with band 32 (swapped in under the same load) none is.
stop, t = alternate(200, 210, 2.0)
phase("flips, band 0", None, 5, at_least=True)
ctl_set("cpufreq.band=32")
time.sleep(0.2)
phase("flips, band 32", None, 0, moved="supp_hysteresis")
stop.set()
t.join()

# Fixed targets: every CPU asks for 1024, then for the minimum.
phase("mode performance", lambda: ctl_set("cpufreq.mode=performance"), 1, target=1024)
phase("mode powersave", lambda: ctl_set("cpufreq.mode=powersave"), 1, target=0)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
