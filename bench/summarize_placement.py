"""Tables of the placement bench (bench/placement.sh): per case, churn rate
and number of tasks, each scheduler's share of samples with the tasks spread
evenly over the case's groups (with the distribution seen most often) and
the CPU-bound tasks' migrations per second; then scx_cadence's own count of
those tasks' moves by the path that made them.

    summarize_placement.py PLACEMENT_JSONL"""

import json
import os
import sys

import ejected

# The case names the round in bench/placement_guest.sh's ejected.csv.
lost = ejected.load(os.path.dirname(sys.argv[1]))
ejected.note(lost)
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = [r for r in runs if (r["sched"], r["case"]) not in lost]
for r in runs:
    r.setdefault("churn", 0.0)
scheds = list(dict.fromkeys(r["sched"] for r in runs))
keys = list(dict.fromkeys((r["case"], r["churn"]) for r in runs))


def label(case, churn):
    return f"{case}, {churn:.0f} forks/s" if churn else f"{case}, quiet"


def find(case, churn, n, sched):
    return next((r for r in runs if (r["case"], r["churn"], r["tasks"], r["sched"])
                 == (case, churn, n, sched)), None)


print("Share of samples with the tasks spread evenly over the two groups (per group")
print("N/2 rounded down or up), in parentheses the per-group counts seen most often;")
print("then the CPU-bound tasks' migrations per second (se.nr_migrations, all of them).")
print()
print("| case | tasks | " + " | ".join(scheds) + " |")
print("|---|---|" + "---|" * len(scheds))
for case, churn in keys:
    for n in sorted({r["tasks"] for r in runs if (r["case"], r["churn"]) == (case, churn)}):
        cells = []
        for s in scheds:
            r = find(case, churn, n, s)
            if r is None:
                cells.append("-")
                continue
            top = max(r["distributions"].items(), key=lambda kv: kv[1])[0]
            mig = r.get("migrations_per_s")
            mig = f", {mig:.1f} migr/s" if mig is not None else ""
            cells.append(f"{r['share']:.0%} (mostly {top}){mig}")
        print(f"| {label(case, churn)} | {n} | " + " | ".join(cells) + " |")
print()
forks = [r["forks_per_s"] for r in runs if r.get("forks_per_s")]
if forks:
    print(f"Forks per second achieved in the churn runs: {min(forks):.1f} to {max(forks):.1f}.")
    print()
print("The targets (issues 6 and 15) for scx_cadence: quiet, at least 98% even; with churn,")
print("at least EEVDF's share for 2 and 4 tasks and at most EEVDF's migrations per second.")

moved = [r for r in runs if r.get("cadence_moves")]
if moved:
    print()
    print("scx_cadence's own count of the CPU-bound tasks' moves over each run: to another")
    print("small core of the same big core, to another big core, and those by the path that")
    print("made them (wake-up placement; an enqueue without wake-up sent to an idle CPU;")
    print("taken from a queue by another CPU).")
    print()
    print("| case | tasks | small | big | wake | requeue | queue |")
    print("|---|---|---|---|---|---|---|")
    for r in moved:
        m = r["cadence_moves"]
        print(f"| {label(r['case'], r['churn'])} | {r['tasks']} | {m['small']} | {m['big']} | "
              f"{m['wake']} | {m['requeue']} | {m['queue']} |")
