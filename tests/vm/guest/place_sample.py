"""Runs N CPU-bound tasks for SECONDS and samples every 100 ms which CPU
each one is on (/proc/PID/stat, field 39), then counts the samples in
which the tasks are spread evenly over the given small cores (per small
core, N / cores rounded down or up), seed 002's "optimal placement".

    place_sample.py N SECONDS SMALL_CORES [MIN_SHARE] [--churn RATE [--min-forks F]]
                    [--from CPUS]
SMALL_CORES: small cores as cpulists joined by '/', e.g. 0,2,4,6/1,3,5,7.
--churn RATE: meanwhile shell-like processes fork short commands (awk,
sleep, cat in turn) RATE times a second in all, as a user's shell or a
build script does next to long-running work (issue 15).
--min-forks F: the samples go on past SECONDS until F forks were made
since the first, counted system-wide (/proc/stat's processes; the churn
makes nearly all of them), up to MIN_FORKS_CAP x SECONDS: the placement
is then judged beside as many short tasks on a host that forks slowly as
on one that does not.
--from CPUS: task i starts pinned to the i-th CPU of the comma-separated
list (an uneven split, say), and is let free on every CPU after the churn
has begun; sampling starts FROM_SETTLE_S later: the samples then show
whether the scheduler undid that split, and whether it keeps it undone.

Prints one JSON line: the share of even samples and the distributions seen,
the CPU-bound tasks' migrations per second (the kernel's se.nr_migrations
in /proc/PID/sched, any scheduler), the forks per second achieved from
the churn's start to the window's end, the forks (system-wide) and
seconds of the sampling window, and,
while scx_cadence runs, its own count of those tasks' moves across small
and big cores by the path that made them (its `tasks` iterator). With
MIN_SHARE, exits 1 if the share of even samples is below it."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

from proc_cpus import cpu_of, cpulist

PIN_DIR = os.environ.get("PIN_DIR", "/sys/fs/bpf/scx_cadence")
# The short commands the churn processes fork, in turn: busybox's (a static
# binary, as cheap to start as a command can be) where it is installed.
_BB = ["busybox"] if shutil.which("busybox") else []
CHURN_COMMANDS = [_BB + ["awk", "BEGIN { exit }"], _BB + ["sleep", "0.001"],
                  _BB + ["cat", "/proc/loadavg"]]
# Forks per second one churn process is asked for: under TCG a fork and
# exec takes tens of ms, so a higher rate is split over more processes.
CHURN_PER_PROCESS = 10
# Seconds between letting --from's tasks free and the first sample: the
# hold needs 8 checks in a row (tens of ms of slices), but on 8 vCPUs over
# 2 host cores a churn's commands can keep it from completing them for
# over a second; 2 s leaves room without hiding a split that lasts.
FROM_SETTLE_S = 2.0
# Longest window --min-forks may stretch the samples to, in SECONDS: 8x.
# Counted while sampling, the churn asked for 30 forks a second reached
# 20-21 under EEVDF on 8 vCPUs beside 4 CPU-bound tasks; the VM tests'
# 150 forks took 10.0-12.1 s under scx_cadence with the host idle, and
# 22-35 s with the host's two CPUs shared with 4 busy loops (QEMU's one
# thread then gets less than half a CPU). 80 s leaves room for a host
# twice slower again.
MIN_FORKS_CAP = 8
# Longest a churner's Python may take to start: seconds under TCG beside
# the CPU-bound tasks; 60 s, then the sampler fails.
CHURN_START_S = 60
# How long a churner forks on past the window it was started for, should
# the sampler not stop it (it does, with SIGTERM, when the window closes).
CHURN_GRACE_S = 10


def args():
    pos, churn, min_forks, start_on = [], 0.0, 0, None
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--churn":
            churn = float(next(it))
        elif a == "--min-forks":
            min_forks = int(next(it))
        elif a == "--from":
            start_on = [int(c) for c in next(it).split(",")]
        else:
            pos.append(a)
    n, seconds, smalls = int(pos[0]), float(pos[1]), [cpulist(s) for s in pos[2].split("/")]
    min_share = float(pos[3]) if len(pos) > 3 else None
    if start_on is not None and len(start_on) != n:
        sys.exit(f"--from names {len(start_on)} CPUs for {n} tasks")
    if min_forks and not churn:
        sys.exit("--min-forks needs --churn")
    return n, seconds, smalls, min_share, churn, min_forks, start_on


def nr_migrations(pid):
    """The kernel's count of @pid's migrations (se.nr_migrations)."""
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            if line.startswith("se.nr_migrations"):
                return int(line.split(":")[1])
    raise RuntimeError(f"no se.nr_migrations in /proc/{pid}/sched")


def cadence_moves(pids):
    """scx_cadence's moves of @pids summed by column, or None if it is not
    running: small, big, and by path wake, requeue, queue."""
    try:
        with open(f"{PIN_DIR}/tasks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    names = ["small", "big", "wake", "requeue", "queue"]
    sums = dict.fromkeys(names, 0)
    head = lines[0].split() if lines else []
    if not all(n in head for n in names):
        return None
    want = {str(p) for p in pids}
    for line in lines[1:]:
        cols = line.split()
        if cols and cols[0] in want:
            for n in names:
                sums[n] += int(cols[head.index(n)])
    return sums


def forks_since_boot():
    """The kernel's count of forks since boot (/proc/stat's processes)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("processes "):
                return int(line.split()[1])
    raise RuntimeError("no processes line in /proc/stat")


def churn_loop(rate, stop_at):
    """Forks one short command every 1/@rate s until @stop_at or SIGTERM;
    the count."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    forks, period, nxt = 0, 1.0 / rate, time.monotonic()
    while not stop and time.monotonic() < stop_at:
        subprocess.run(CHURN_COMMANDS[forks % len(CHURN_COMMANDS)], stdout=subprocess.DEVNULL)
        forks += 1
        nxt += period
        delay = nxt - time.monotonic()
        if delay > 0 and not stop:
            time.sleep(delay)
    return forks


def main():
    n, seconds, smalls, min_share, churn, min_forks, start_on = args()
    settle = FROM_SETTLE_S if start_on else 0.0
    # The churn runs until the window closes (SIGTERM), at most this long.
    churn_s = (MIN_FORKS_CAP if min_forks else 1) * seconds + 0.5 + settle + CHURN_GRACE_S
    core_of = {cpu: i for i, s in enumerate(smalls) for cpu in s}
    tasks = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    for t, cpu in zip(tasks, start_on or []):
        os.sched_setaffinity(t.pid, {cpu})
    churners = []
    try:
        time.sleep(1.0)  # let the placement settle
        if churn:
            # Children, so that the sampler's own wake-ups stay as they were.
            nproc = -(-int(churn) // CHURN_PER_PROCESS)
            churners = [subprocess.Popen(
                [sys.executable, "-c",
                 "import sys, time; sys.path.insert(0, sys.argv[3]); import place_sample as s; "
                 "print('started', flush=True); sys.stdin.readline(); "
                 "print(s.churn_loop(float(sys.argv[1]), time.monotonic() + float(sys.argv[2])))",
                 str(churn / nproc), str(churn_s),
                 os.path.dirname(os.path.abspath(__file__))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(nproc)]
            # Each churner's Python takes seconds to start under TCG
            # beside the CPU-bound tasks: all of them start forking at
            # once, when all have started, and the samples begin after.
            deadline = time.monotonic() + CHURN_START_S
            for c in churners:
                ready = select.select([c.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]
                if not ready or c.stdout.readline() != "started\n":
                    raise RuntimeError(f"a churner did not start within {CHURN_START_S} s")
            for c in churners:
                c.stdin.write("go\n")
                c.stdin.flush()
            churn_start = time.monotonic()
            time.sleep(0.5)
        for t in tasks if start_on else []:
            os.sched_setaffinity(t.pid, os.sched_getaffinity(0))
        time.sleep(settle)
        pids = [t.pid for t in tasks]
        mig0, moves0, t0 = [nr_migrations(p) for p in pids], cadence_moves(pids), time.monotonic()
        forks0 = forks_since_boot()
        lo, hi = n // len(smalls), -(-n // len(smalls))
        even = total = 0
        per_core_seen = {}
        end, cap = t0 + seconds, t0 + (MIN_FORKS_CAP * seconds if min_forks else seconds)
        while time.monotonic() < end or (time.monotonic() < cap and
                                          forks_since_boot() - forks0 < min_forks):
            counts = [0] * len(smalls)
            for t in tasks:
                counts[core_of.get(cpu_of(t.pid), 0)] += 1
            total += 1
            if all(lo <= c <= hi for c in counts):
                even += 1
            key = "/".join(map(str, counts))
            per_core_seen[key] = per_core_seen.get(key, 0) + 1
            time.sleep(0.1)
        elapsed = time.monotonic() - t0
        window_forks = forks_since_boot() - forks0
        churn_end = time.monotonic()
        for c in churners:
            c.terminate()
        mig = sum(nr_migrations(p) for p in pids) - sum(mig0)
        moves1 = cadence_moves(pids)
    finally:
        for t in tasks:
            t.kill()
        for c in churners:
            if c.poll() is None:
                c.terminate()
    forks = sum(int(c.communicate()[0].strip() or 0) for c in churners)
    share = even / total if total else 0.0
    out = {"tasks": n, "samples": total, "even": even, "share": round(share, 3),
           "distributions": per_core_seen,
           "migrations_per_s": round(mig / elapsed, 2)}
    if churn:
        out["forks_per_s"] = round(forks / (churn_end - churn_start), 1)
        out["window_s"] = round(elapsed, 1)
        out["window_forks"] = window_forks
    if moves0 is not None and moves1 is not None:
        out["cadence_moves"] = {k: moves1[k] - moves0[k] for k in moves1}
    print(json.dumps(out))
    if min_share is not None and share < min_share:
        print(f"FAIL: {n} tasks spread evenly over {len(smalls)} small cores in "
              f"{share:.0%} of samples, want {min_share:.0%}")
        sys.exit(1)


if __name__ == "__main__":
    main()
