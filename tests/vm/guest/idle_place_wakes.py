"""idle.place = shallow wakes the CPU in the shallower state (issue 13,
item 4), end to end: the tracepoint's states, the placement search, the
kernel's wake-up.

Four CPUs, each its own core in one LLC (a topology file). A waker spins on
CPU 1 and wakes a task through a pipe; the task may run on CPUs 1-3 and
last ran on CPU 1, which is busy, so the search chooses between the idle
CPUs 2 and 3, which it holds equal: the order takes 2, the first. A
sleeper on CPU 3 sleeps 50 us at a time, so CPU 3's idle periods are short
and the learner predicts a shallow state there (C1E, 10 us exit, below C6's
600 us residency), while CPU 2 sleeps the 20 ms between rounds (C6, 133
us). After each wake-up the task goes back to CPU 1 for the next round.

Prints, for the policy in force, the share of wake-ups that landed on CPU
3 (of those that landed on 2 or 3), as JSON; run.sh compares shallow and
off in one boot. Usage: idle_place_wakes.py ROUNDS"""

import ctypes
import json
import os
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1])
WAKER_CPU, DEEP_CPU, SHALLOW_CPU = 1, 2, 3
# The waker keeps CPU 1 busy this long after each wake-up, so the task
# cannot take it back until the search has run.
BUSY_AFTER_WAKE_S = 0.005
# Rounds this far apart let CPU 2 sleep long enough for C6 (600 us).
ROUND_GAP_S = 0.02

libc = ctypes.CDLL(None, use_errno=True)


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


sleeper = subprocess.Popen(
    ["taskset", "-c", str(SHALLOW_CPU), "python3", "-c",
     "import time\nwhile True: time.sleep(0.00005)"])
wake_r, wake_w = os.pipe()
done_r, done_w = os.pipe()
landed = []
pid = os.fork()
if pid == 0:
    # The waker.
    os.sched_setaffinity(0, {WAKER_CPU})
    for _ in range(ROUNDS):
        os.read(done_r, 1)  # the task is back on CPU 1, asleep
        time.sleep(ROUND_GAP_S)
        spin(0.001)
        os.write(wake_w, b"x")
        spin(BUSY_AFTER_WAKE_S)
    os._exit(0)
try:
    os.sched_setaffinity(0, {WAKER_CPU})
    for _ in range(ROUNDS):
        os.write(done_w, b"x")
        os.read(wake_r, 1)
        landed.append(libc.sched_getcpu())
        os.sched_setaffinity(0, {WAKER_CPU})
        # Allowed on 1-3 again while running on 1: it sleeps with prev 1.
        os.sched_setaffinity(0, {WAKER_CPU, DEEP_CPU, SHALLOW_CPU})
    os.waitpid(pid, 0)
finally:
    sleeper.kill()
on = {cpu: landed.count(cpu) for cpu in sorted(set(landed))}
two_or_three = on.get(DEEP_CPU, 0) + on.get(SHALLOW_CPU, 0)
share = on.get(SHALLOW_CPU, 0) / two_or_three if two_or_three else 0.0
print(json.dumps({"landed": on, "shallow_share": round(share, 3)}))
