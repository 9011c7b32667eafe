#!/usr/bin/env python3
"""Where a pipe round trip's time goes (bench/pipe_cost.sh).

    pipe_cost.py --delta BEFORE AFTER
        BEFORE and AFTER are bench/bpf_cost.py's lines (LABEL,NAME,
        RUN_TIME_NS,RUN_CNT) read around one run; prints NAME,NS,CALLS for
        each program that ran in between, after a line "(run),0,0" that
        stands for the run itself (EEVDF has no program).
    pipe_cost.py PIPE_CSV
        bench/pipe_guest.sh's CSV; prints, per scheduler, the medians over
        the rounds of the time a round trip took, of the context switches
        and of the BPF time in it, and the BPF time per context switch; then
        each program's calls and BPF time per round trip and per switch.
        Rounds the kernel ejected a scheduler in are left out
        (bench/ejected.py).
"""

import collections
import os
import statistics
import sys

import ejected

RUN = "(run)"


def read_counters(path):
    out = {}
    with open(path) as f:
        for line in f:
            _label, name, ns, cnt = line.strip().split(",")
            out[name] = (int(ns), int(cnt))
    return out


def delta(before_path, after_path):
    before = read_counters(before_path)
    print(f"{RUN},0,0")
    for name, (ns, cnt) in sorted(read_counters(after_path).items()):
        ns0, cnt0 = before.get(name, (0, 0))
        if cnt > cnt0:
            print(f"{name},{ns - ns0},{cnt - cnt0}")


def summarize(path):
    runs = collections.defaultdict(dict)  # (sched, round) -> {program: (ns, calls)}
    meta = {}  # (sched, round) -> (seconds, switches, round trips)
    lost = ejected.load(os.path.dirname(path))
    ejected.note(lost)
    with open(path) as f:
        for line in f:
            rnd, sched, prog, ns, cnt, secs, switches, trips = line.strip().split(",")
            if (sched, rnd) in lost:
                continue
            key = (sched, int(rnd))
            if not secs:
                continue  # perf bench printed nothing: a lost run
            meta[key] = (float(secs), int(switches), int(trips))
            if prog != RUN:
                runs[key][prog] = (int(ns), int(cnt))
    scheds = sorted({s for s, _ in meta}, key=lambda s: (s != "eevdf", s))
    print("Medians over the rounds, per round trip, under the VM's TCG:")
    print()
    # Per context switch too (issue 51): a scheduler that switches more per
    # round trip pays its callbacks more often.
    print("| scheduler | rounds | round trip (us) | switches | BPF time (us) | BPF ns per switch |")
    print("|---|---|---|---|---|---|")
    for s in scheds:
        keys = [k for k in meta if k[0] == s]
        rt = [meta[k][0] / meta[k][2] * 1e6 for k in keys]
        sw = [meta[k][1] / meta[k][2] for k in keys]
        bpf = [sum(ns for ns, _ in runs[k].values()) / meta[k][2] / 1000 for k in keys]
        per_switch = [sum(ns for ns, _ in runs[k].values()) / max(meta[k][1], 1) for k in keys]
        print(f"| {s} | {len(keys)} | {statistics.median(rt):.1f} | "
              f"{statistics.median(sw):.2f} | {statistics.median(bpf):.2f} | "
              f"{statistics.median(per_switch):.0f} |")
    print()
    print("| scheduler | program | calls per round trip | BPF time per round trip (us) | ns per switch |")
    print("|---|---|---|---|---|")
    for s in scheds:
        keys = [k for k in meta if k[0] == s]
        progs = sorted({p for k in keys for p in runs[k]})
        for p in progs:
            calls = [runs[k].get(p, (0, 0))[1] / meta[k][2] for k in keys]
            ns = [runs[k].get(p, (0, 0))[0] / meta[k][2] / 1000 for k in keys]
            per_switch = [runs[k].get(p, (0, 0))[0] / max(meta[k][1], 1) for k in keys]
            print(f"| {s} | {p} | {statistics.median(calls):.2f} | {statistics.median(ns):.2f} | "
                  f"{statistics.median(per_switch):.0f} |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--delta":
        delta(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        summarize(sys.argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
