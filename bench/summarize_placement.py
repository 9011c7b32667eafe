"""Table of the placement bench (bench/placement.sh): per case and number
of tasks, each scheduler's share of samples with the tasks spread evenly
over the case's groups, and the distribution seen most often.

    summarize_placement.py PLACEMENT_JSONL"""

import json
import sys

runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
scheds = list(dict.fromkeys(r["sched"] for r in runs))
print("| case | tasks | " + " | ".join(scheds) + " |")
print("|---|---|" + "---|" * len(scheds))
for case in dict.fromkeys(r["case"] for r in runs):
    for n in sorted({r["tasks"] for r in runs if r["case"] == case}):
        cells = []
        for s in scheds:
            r = next((r for r in runs if (r["case"], r["tasks"], r["sched"]) == (case, n, s)), None)
            if r is None:
                cells.append("-")
                continue
            top = max(r["distributions"].items(), key=lambda kv: kv[1])[0]
            cells.append(f"{r['share']:.0%} (mostly {top})")
        print(f"| {case} | {n} | " + " | ".join(cells) + " |")
print()
print("Share of samples with the tasks spread evenly over the two groups (per group")
print("N/2 rounded down or up); in parentheses the per-group counts seen most often.")
print("The issue's target for scx_cadence: at least 90% for 2 and 4 tasks.")
