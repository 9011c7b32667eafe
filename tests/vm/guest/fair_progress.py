#!/usr/bin/env python3
"""Starts one CPU-bound task at a given nice level and watches it make
progress: every 0.1 s it reads the task's time on CPU (the first field of
/proc/PID/schedstat, the kernel's sum_exec_runtime, the same for every
scheduling class) and keeps the longest stretch in which it did not grow.

    fair_progress.py SECONDS NICE

Prints "runs R cpu_ms C longest_gap_ms G" (R: the task's runs on a CPU, from
the third field) and exits 0; the caller judges G.
"""
import os
import sys
import time

# Sampling period: short against the waits that matter (seconds), long
# enough that the sampler itself costs nothing under load.
SAMPLE_S = 0.1


def schedstat(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        on_cpu, _waited, runs = (int(x) for x in f.read().split())
    return on_cpu, runs


def spin(nice):
    os.nice(nice)
    while True:
        pass


def main():
    seconds, nice = float(sys.argv[1]), int(sys.argv[2])
    pid = os.fork()
    if pid == 0:
        spin(nice)
    try:
        start = time.monotonic()
        first_cpu, first_runs = schedstat(pid)
        last_cpu, last_change, longest = first_cpu, start, 0.0
        while True:
            time.sleep(SAMPLE_S)
            now = time.monotonic()
            cpu, runs = schedstat(pid)
            if cpu != last_cpu:
                last_cpu, last_change = cpu, now
            longest = max(longest, now - last_change)
            if now - start >= seconds:
                break
        print(
            f"runs {runs - first_runs} cpu_ms {(cpu - first_cpu) / 1e6:.1f} "
            f"longest_gap_ms {longest * 1e3:.0f}",
            flush=True,
        )
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
