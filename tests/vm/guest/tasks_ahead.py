#!/usr/bin/env python3
"""How many tasks a CPU ran between a task's wake-up and its run: the order
a scheduler serves a waking task in, read from the kernel's own
sched_wakeup and sched_switch trace events, not from any clock.

    tasks_ahead.py COMM < trace

For each wake-up of a task named COMM (sched_wakeup, on target_cpu), counts the
sched_switch events on that CPU that switched to another task before the
woken one ran. Prints

    wakeups N ahead_p50 A ahead_p90 B ahead_max C ahead_10_pct D

ahead_10_pct: the percentage of wake-ups that waited behind 10 or more
tasks. A wake-up whose run was not traced (the trace ended) is left out.
"""
import re
import sys

EVENT = re.compile(r"\[(\d+)\].*?: (sched_wakeup|sched_switch): (.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def main():
    comm = sys.argv[1]
    # pid -> (cpu it was woken on, tasks run there since)
    waiting = {}
    ahead = []
    for line in sys.stdin:
        m = EVENT.search(line)
        if not m:
            continue
        cpu, event, rest = int(m.group(1)), m.group(2), m.group(3)
        fields = dict(FIELD.findall(rest))
        if event == "sched_wakeup":
            if fields.get("comm") == comm:
                waiting[int(fields["pid"])] = [int(fields["target_cpu"]), 0]
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
    many = sum(1 for a in ahead if a >= 10)
    print(
        f"wakeups {n} ahead_p50 {ahead[n // 2]} ahead_p90 {ahead[n * 9 // 10]} "
        f"ahead_max {ahead[-1]} ahead_10_pct {100 * many // n}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
