#!/usr/bin/env python3
"""Sleeps for growing intervals and prints, after each wake-up, how long the
task waited to run: the growth of run_delay in /proc/self/schedstat (the
kernel's sched_info, the same for every scheduling class), in ms.

    fair_wait.py SECONDS...     e.g. fair_wait.py 1 2 4 8 15 30

Run it pinned to one CPU (taskset) before the load starts: a task that was
queued behind a stale frontier waits about as long as it slept.
Prints one line per wake-up: "slept S s waited W ms".
"""
import sys
import time


def run_delay_ns():
    # /proc/PID/schedstat: time on CPU, time waiting on a runqueue, timeslices.
    with open("/proc/self/schedstat") as f:
        return int(f.read().split()[1])


def main():
    for arg in sys.argv[1:]:
        before = run_delay_ns()
        time.sleep(float(arg))
        waited = run_delay_ns() - before
        print(f"slept {arg} s waited {waited / 1e6:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
