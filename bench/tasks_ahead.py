#!/usr/bin/env python3
"""How many tasks a CPU ran between a task's wake-up and its run: the order
a scheduler serves a waking task in, read from the kernel's own
sched_wakeup and sched_switch trace events, not from any clock.

    bench/tasks_ahead.py COMM < trace

(a text trace of those two events, as /sys/kernel/tracing/trace prints it;
docs/benchmarks.md, "A sleeper keeps its lag, a pinned task is credited
its sleep").

Counts, for each wake-up of a task named COMM that always woke on one CPU
(cyclictest's pinned threads; its main thread, which may wake anywhere, is
left out), the sched_switch events on that CPU that switched to another
task before the woken one ran. Prints

    wakeups N ahead_p50 A ahead_p90 B ahead_max C ahead_10 D

ahead_10: the number of wake-ups that waited behind 10 or more tasks. A
wake-up whose run was not traced (the trace ended) is left out.
"""
import sys

from sched_trace import events


def main():
    comm = sys.argv[1]
    evs = list(events(sys.stdin))
    cpus = {}
    for _, _, event, fields in evs:
        if event == "sched_wakeup" and fields.get("comm") == comm:
            cpus.setdefault(int(fields["pid"]), set()).add(int(fields["target_cpu"]))
    pinned = {pid for pid, seen in cpus.items() if len(seen) == 1}
    # pid -> [CPU it was woken on, tasks run there since]
    waiting = {}
    ahead = []
    for cpu, _, event, fields in evs:
        if event == "sched_wakeup":
            pid = int(fields["pid"])
            if pid in pinned:
                waiting[pid] = [int(fields["target_cpu"]), 0]
            continue
        nxt = int(fields.get("next_pid", -1))
        if nxt in waiting and waiting[nxt][0] == cpu:
            ahead.append(waiting.pop(nxt)[1])
            continue
        if nxt == 0:
            continue
        for w in waiting.values():
            if w[0] == cpu:
                w[1] += 1
    if not ahead:
        print("wakeups 0")
        return 1
    ahead.sort()
    n = len(ahead)
    print(
        f"wakeups {n} ahead_p50 {ahead[n // 2]} ahead_p90 {ahead[n * 9 // 10]} "
        f"ahead_max {ahead[-1]} ahead_10 {sum(1 for a in ahead if a >= 10)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
