#!/usr/bin/env python3
"""What a waking task waited for, from the kernel's sched_wakeup and
sched_switch trace events: how long each wake-up took to run, whether its
CPU ran any other task first, and how long the task running when it woke
had run by then (under slice.min_us, run-to-parity may have held the
wake-up back).

    bench/wake_waits.py COMM < trace

(a text trace of those two events, as /sys/kernel/tracing/trace prints it;
docs/benchmarks.md, "A held-back wake-up decided when the minimum ends").

For each wake-up of a task named COMM, a line per range of waits:

    wait LO-HI ms: n N, direct D (held at most 250 us in: H%), switches first S

direct: wake-ups whose CPU switched to nothing else before the woken task
(it waited for the running task alone); H: of those, the share whose
running task had run under 250 us (balanced's slice.min_us) when the task
woke; switches first: the rest, by how many tasks ran first (5: 5 or
more). Then the share of all the wait time spent in direct waits of over
2 ms, and in the rest's. Timestamps are the trace's: under TCG a vCPU
waiting for its turn shows as time too.
"""
import sys

from sched_trace import events

# Balanced's slice.min_us: a running task younger than this holds a wake-up.
PARITY_S = 250e-6
# Ranges of waits reported, in seconds.
RANGES = [(0, 0.0005), (0.0005, 0.002), (0.002, 0.005), (0.005, 0.01), (0.01, float("inf"))]
# Waits at least this long are the tail the totals split.
LONG_S = 0.002


def waits(comm, lines):
    """(wait s, tasks run first, running task's run at the wake-up s) per wake-up."""
    pending, started, out = {}, {}, []
    for cpu, ts, event, fields in events(lines):
        if event == "sched_wakeup":
            if fields.get("comm") == comm:
                target = int(fields["target_cpu"])
                pending[fields["pid"]] = [ts, target, 0, ts - started.get(target, ts)]
            continue
        started[cpu] = ts
        for pid, w in list(pending.items()):
            if w[1] != cpu:
                continue
            if fields["next_pid"] == pid:
                out.append((ts - w[0], w[2], w[3]))
                del pending[pid]
            else:
                w[2] += 1
    return out


def main():
    found = waits(sys.argv[1], sys.stdin)
    if not found:
        sys.exit(f"no wake-up of {sys.argv[1]} traced")
    for lo, hi in RANGES:
        sel = [w for w in found if lo <= w[0] < hi]
        if not sel:
            continue
        direct = [w for w in sel if w[1] == 0]
        held = 100 * sum(w[2] < PARITY_S for w in direct) / len(direct) if direct else 0
        first = {}
        for w in sel:
            if w[1]:
                first[min(w[1], 5)] = first.get(min(w[1], 5), 0) + 1
        print(f"wait {lo * 1e3:.1f}-{hi * 1e3:.1f} ms: n {len(sel)}, direct {len(direct)} "
              f"(held at most 250 us in: {held:.0f}%), switches first {sorted(first.items())}")
    total = sum(w[0] for w in found)
    direct_long = sum(w[0] for w in found if w[1] == 0 and w[0] >= LONG_S)
    other_long = sum(w[0] for w in found if w[1] and w[0] >= LONG_S)
    print(f"wake-ups {len(found)}; of the wait time, direct waits over 2 ms {100 * direct_long / total:.0f}%, "
          f"the others over 2 ms {100 * other_long / total:.0f}%")


if __name__ == "__main__":
    main()
