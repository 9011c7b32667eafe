"""Policy swaps back to back against a running scx_cadence: presets, policy
files and field edits, every tenth through the `scx_cadence ctl` client and
the rest straight on the socket. After each swap the reply must name the
next generation and the pinned BPF policy map, read with bpftool, must hold
that generation and exactly the policy the reply describes. Every tenth
swap, every CPU's copy (policy_cpu) must catch up too. A busy CPU refreshes
its copy at its next tick, which under single-threaded TCG can come after
bpftool's first read, so the copies are polled for up to CATCH_UP_S; the
slowest catch-up is printed. A CPU that never refreshes still fails.
Where the slowest request's time went (connect, send, reply, and how long
this client waited for a CPU) is printed, and that of any request that
failed.

    swap_storm.py SCHED_BINARY N_SWAPS WORK_DIR
"""

import random
import subprocess
import sys
import time

from policy_maps import bpf_policy, cpu_generations, request

sched, n_swaps, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(1234)
# How long every CPU's copy may take to reach a new generation: hundreds of
# ticks even at HZ=100, so only a CPU that stopped refreshing misses it.
CATCH_UP_S = 2.0

files = []
for i in range(4):
    path = f"{work}/storm{i}.toml"
    with open(path, "w") as f:
        f.write(f"[slice]\nmax_us = {4000 + 1000 * i}\nlag_us = {500 * i}\n"
                f"[placement]\nidle_core_first = {'true' if i % 2 else 'false'}\n")
    files.append(path)


def one_swap(i):
    """Builds swap i; returns (socket request, ctl argv, fields it must set)."""
    kind = i % 3
    if kind == 0:
        name = rng.choice(["performance", "balanced", "powersave"])
        return {"cmd": "switch", "policy": name, "text": None}, ["switch", name], {}
    if kind == 1:
        path = rng.choice(files)
        with open(path) as f:
            text = f.read()
        return {"cmd": "switch", "policy": path, "text": text}, ["switch", path], {}
    mx = rng.randrange(1000, 20000)
    mn = rng.randrange(50, mx)
    sets = [f"slice.max_us={mx}", f"slice.min_us={mn}"]
    return {"cmd": "set", "assignments": sets}, ["set"] + sets, {"slice_max_ns": mx * 1000, "slice_min_ns": mn * 1000}


generation = request({"cmd": "get"})["generation"]
failures = 0
slowest = 0.0
slowest_request = {"total": 0.0}
start = time.monotonic()
for i in range(n_swaps):
    req, argv, must = one_swap(i)
    if i % 25 == 0:
        out = subprocess.run([sched, "ctl"] + argv, capture_output=True, text=True)
        if out.returncode != 0:
            failures += 1
            print(f"swap {i}: ctl {argv} failed: {out.stderr.strip()}")
            continue
        reply = request({"cmd": "get"})
        if f"generation {reply['generation']} " not in out.stdout:
            failures += 1
            print(f"swap {i}: ctl said {out.stdout.strip()!r}, server has {reply['generation']}")
    else:
        timing = {}
        reply = request(req, timing)
        timing["total"] = round(sum(timing[k] for k in ("connect", "send", "reply")), 1)
        if timing["total"] > slowest_request["total"]:
            slowest_request = dict(timing, swap=i)
    if reply.get("error") or reply["generation"] != generation + 1:
        failures += 1
        print(f"swap {i}: {req['cmd']} gave {reply}")
        if i % 25:
            print(f"swap {i}: its request's time, ms: {timing}")
        generation = reply["generation"]
        continue
    generation = reply["generation"]
    gen, fields = bpf_policy()
    # What the scheduler built from the policy (src/policy/to_bpf.rs), and
    # the fields the swap itself asked for.
    want = reply["bpf"]
    if gen != generation or fields != want or any(fields[k] != v for k, v in must.items()):
        failures += 1
        print(f"swap {i}: BPF holds generation {gen} {fields}, want {generation} {want} {must}")
    if i % 10 == 9:
        t0 = time.monotonic()
        while True:
            stale = {cpu: g for cpu, g in cpu_generations().items() if g != generation}
            if not stale or time.monotonic() - t0 > CATCH_UP_S:
                break
            time.sleep(0.01)
        slowest = max(slowest, time.monotonic() - t0)
        if stale:
            failures += 1
            print(f"swap {i}: CPUs still on an older copy after {CATCH_UP_S} s: {stale} "
                  f"(want {generation})")
    if i % 100 == 99:
        print(f"{i + 1} swaps, {failures} failed, {time.monotonic() - start:.0f} s", flush=True)

elapsed = time.monotonic() - start
print(f"{n_swaps} swaps in {elapsed:.0f} s, {failures} failed, last generation {generation}, "
      f"slowest catch-up of every CPU's copy {slowest * 1000:.0f} ms")
print(f"slowest request, ms: {slowest_request}")
sys.exit(1 if failures else 0)
