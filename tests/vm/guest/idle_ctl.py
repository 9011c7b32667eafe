"""`ctl idle save/load/reset` against the kernel (issue 13). scx_cadence runs
with --idle-states from a file (4 states) on the VM's 4 CPUs. Each step is
checked against the pinned idle_table map read with bpftool, not against the
loader's own files alone:

1. sleepers on every CPU make the tables learn; then `ctl set
   idle.predictor=off` stops learning (the tracepoint returns at once) and
   a task on each CPU closes the period it was in, so the tables hold still;
2. `ctl idle save A`: A holds what bpftool shows, CPU by CPU;
3. `ctl idle reset`: every entry's learned table is all zero (nr_states 0,
   fresh) and its generation grew by 1; `ctl idle save R` holds fresh tables;
4. `ctl idle load A`: the map holds A's tables again, generation + 1 more;
   `ctl idle save B`: B is A, byte for byte;
5. A without CPU 3, and A with 3 states on CPU 1, are refused (exit code 1,
   one line naming the difference); the map's generations do not move and
   a save after them is A;
6. `ctl set idle.predictor=seed` and sleepers again: the tables change.

Usage: idle_ctl.py SCHED PIN_DIR OUT_PREFIX"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

SCHED, PIN_DIR, OUT = sys.argv[1:4]
CPUS = list(range(os.cpu_count()))
bpftool = _Bpftool()
failures = []


def check(ok: bool, what: str):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def ctl(*args) -> subprocess.CompletedProcess:
    r = subprocess.run([SCHED, "ctl", *args], capture_output=True, text=True)
    print(f"$ scx_cadence ctl {' '.join(args)} -> rc {r.returncode}: "
          f"{(r.stdout + r.stderr).strip()}")
    return r


def entries() -> dict:
    """CPU -> (generation, learned) of the online CPUs, from bpftool."""
    out = {}
    for e in bpftool.dump(f"{PIN_DIR}/idle_table"):
        if e["key"] in CPUS:
            out[e["key"]] = (e["value"]["generation"], e["value"]["learned"])
    return out


def tables(path: str) -> dict:
    with open(path) as f:
        return {c["cpu"]: c["table"] for c in json.load(f)["cpus"]}


def sleepers(seconds: int):
    """A 2 ms sleeper on each CPU for @seconds: idle periods everywhere."""
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: time.sleep(0.002)"
    procs = [subprocess.Popen(["taskset", "-c", str(c), "python3", "-c", code]) for c in CPUS]
    for p in procs:
        p.wait()


def wake_every_cpu():
    """Runs a task on each CPU, which ends the idle period it was in."""
    for c in CPUS:
        subprocess.run(["taskset", "-c", str(c), "true"], check=True)


def zero(t: dict) -> bool:
    return all(v == 0 or (isinstance(v, list) and not any(
        any(x) if isinstance(x, list) else x for x in v)) for v in t.values())


# 1. Learn, then hold still.
sleepers(3)
check(ctl("set", "idle.predictor=off").returncode == 0, "learning turned off")
wake_every_cpu()
before = entries()
check(all(t["nr_states"] == 4 and t["periods"] > 0 for _, t in before.values()),
      f"every CPU learned: periods {[t['periods'] for _, t in before.values()]}")

# 2. Save.
A = f"{OUT}.A.json"
check(ctl("idle", "save", A).returncode == 0, "save A")
a = tables(A)
check(sorted(a) == CPUS, f"A has CPUs {sorted(a)}")
check(all(a.get(c) == t for c, (_, t) in before.items()), "A holds the map's tables")
with open(A) as f:
    check("generation" not in f.read(), "A has no generation")

# 3. Reset.
check(ctl("idle", "reset").returncode == 0, "reset")
after = entries()
check(all(zero(t) for _, t in after.values()),
      f"every table is fresh: nr_states {[t['nr_states'] for _, t in after.values()]}")
check(all(after[c][0] == before[c][0] + 1 for c in CPUS),
      f"generations {[g for g, _ in before.values()]} -> {[g for g, _ in after.values()]}")
R = f"{OUT}.R.json"
check(ctl("idle", "save", R).returncode == 0, "save R")
check(all(zero(t) for t in tables(R).values()), "R holds fresh tables")

# 4. Load A back.
check(ctl("idle", "load", A).returncode == 0, "load A")
loaded = entries()
check(all(loaded[c][1] == a[c] for c in CPUS), "the map holds A's tables")
check(all(loaded[c][0] == before[c][0] + 2 for c in CPUS),
      f"generations -> {[g for g, _ in loaded.values()]}")
B = f"{OUT}.B.json"
check(ctl("idle", "save", B).returncode == 0, "save B")
with open(A) as fa, open(B) as fb:
    text_a = fa.read()
    check(fb.read() == text_a, "B is A, byte for byte")

# 5. Files for other CPUs or states are refused.
doc = json.loads(text_a)
fewer_cpus = dict(doc, cpus=doc["cpus"][:-1])
cpu1 = dict(doc["cpus"][1])
t = json.loads(json.dumps(cpu1["table"]))
t["nr_states"] = 3
for arr in ("hits", "intercepts"):
    t[arr][3] = 0
for m in ("weight", "seed_weight"):
    t[m] = [[w if r < 3 and i < 3 else 0 for i, w in enumerate(row)]
            for r, row in enumerate(t[m])]
cpu1.update(nr_states=3, states=cpu1["states"][:3], table=t)
fewer_states = dict(doc, cpus=[doc["cpus"][0], cpu1] + doc["cpus"][2:])
last = CPUS[-1]
for name, bad, want in [
        ("cpus", fewer_cpus,
         f"the file has tables for {len(CPUS) - 1} CPUs (0-{last - 1}), "
         f"the scheduler runs on {len(CPUS)} (0-{last})"),
        ("states", fewer_states, "CPU 1: the file has 3 idle states, the scheduler runs with 4")]:
    path = f"{OUT}.bad-{name}.json"
    with open(path, "w") as f:
        json.dump(bad, f)
    gens = {c: g for c, (g, _) in entries().items()}
    r = ctl("idle", "load", path)
    err = r.stderr.strip()
    check(r.returncode == 1, f"{name}: exit code {r.returncode}")
    check(len(err.splitlines()) == 1 and want in err and "the tables in force stay" in err,
          f"{name}: the message names the difference")
    check({c: g for c, (g, _) in entries().items()} == gens, f"{name}: no table was written")
C = f"{OUT}.C.json"
check(ctl("idle", "save", C).returncode == 0, "save C")
with open(C) as f:
    check(f.read() == text_a, "after the refusals the tables are A's")

# 6. Learning again.
check(ctl("set", "idle.predictor=seed").returncode == 0, "learning turned on")
sleepers(3)
again = entries()
check(any(again[c][1] != a[c] for c in CPUS), "the tables change again")
check(all(again[c][0] == loaded[c][0] for c in CPUS), "BPF does not move the generation")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
