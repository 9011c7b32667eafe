#!/usr/bin/env python3
"""A short task that sleeps and wakes: ITERATIONS times it sleeps SLEEP_MS
and then runs SPIN_US on the CPU; with GAP_MS, it then sleeps GAP_MS and
runs SPIN_US once more, so that its wake-ups come in pairs. Reads its own /proc/thread-self/schedstat
before and after (time run, time waited runnable, runs: the kernel's
counters, the same for every scheduling class) and prints

    wakeups N runs R waited_us_per_run W

N counts both wake-ups of a pair. W is the mean time the thread waited runnable before each run: how long a
wake-up took to get a CPU. For the log only; the caller judges counters.
    wake_sleeper.py ITERATIONS SLEEP_MS SPIN_US [GAP_MS]
"""
import sys
import time


def schedstat():
    with open("/proc/thread-self/schedstat") as f:
        _ran, waited, runs = (int(x) for x in f.read().split())
    return waited, runs


def sleep_and_spin(sleep_ms, spin_us):
    time.sleep(sleep_ms / 1000)
    end = time.perf_counter() + spin_us / 1e6
    while time.perf_counter() < end:
        pass


def main():
    iterations, sleep_ms, spin_us = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    gap_ms = float(sys.argv[4]) if len(sys.argv) > 4 else None
    waited0, runs0 = schedstat()
    for _ in range(iterations):
        sleep_and_spin(sleep_ms, spin_us)
        if gap_ms is not None:
            sleep_and_spin(gap_ms, spin_us)
    waited1, runs1 = schedstat()
    runs = max(runs1 - runs0, 1)
    wakeups = iterations * (2 if gap_ms is not None else 1)
    print(f"wakeups {wakeups} runs {runs} waited_us_per_run {(waited1 - waited0) / runs / 1000:.0f}")


if __name__ == "__main__":
    main()
