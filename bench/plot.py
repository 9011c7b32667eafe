#!/usr/bin/env python3
"""Draws the benchmarks' figures as PNGs beside their markdown (matplotlib,
Debian's python3-matplotlib; bench/lib.sh's install_plotting).

    plot.py ratios RAW_CSV PNG TITLE [--all]
        bench/guest.sh's raw CSV (bench/run.sh, bench/wakeup.sh): for each
        of summarize.py's metrics, or with --all every metric of the CSV by
        its own name (bench/hw/run.sh's), each scheduler's ratio to
        EEVDF's median of the same run, its median as a bar and each round's
        value over EEVDF's median as a dot, so the spread shows beside the
        median. Log scale: 0.5x and 2x are as far from 1x.
    plot.py idle OUT_DIR PNG
        bench/idle.sh's replays (summarize_idle.py's input): per trace and
        state table, how teo, seed 003 and per_choice (heaviest pick, the
        presets') split the idle periods into correct, too deep (US) and too
        shallow (OS), as stacked bars.
    plot.py cpufreq PNG TRACE... [--cpu N]
        cpufreq traces (`scx_cadence cpufreq record`, or `cpufreq replay
        --write` for what another policy or band would have done), a panel
        each: for CPU N (default: the one with the most evaluations in the
        first), its util, its frequency ratio, the target in force after
        each step, the requests issued (dots) and the steps at which it went
        idle (ticks at the bottom), over time.
"""

import collections
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

from summarize import BASELINE, METRICS, read_rows  # noqa: E402
from summarize_idle import TABLES, TRACES, load  # noqa: E402

# One colour per scheduler, the same in every figure (matplotlib's tab10).
COLOURS = {
    "scx_cadence": "tab:blue",
    "scx_bpfland": "tab:orange",
    "scx_lavd": "tab:green",
    "scx_floor": "tab:gray",
}


def ratios(raw_path, png, title, every):
    values = collections.defaultdict(list)
    scheds, seen = [], []
    for _round, sched, metric, value in read_rows(raw_path):
        if value:
            values[(sched, metric)].append(float(value))
        if sched != BASELINE and sched not in scheds:
            scheds.append(sched)
        if metric not in seen:
            seen.append(metric)
    metrics = seen if every else [m for m in METRICS if m in seen]
    metrics = [m for m in metrics if values.get((BASELINE, m))]
    metrics = [m for m in metrics if statistics.median(values[(BASELINE, m)]) > 0]
    height = 0.8 / max(len(scheds), 1)
    fig, ax = plt.subplots(figsize=(9, 1.2 + len(metrics) * (0.1 + 0.12 * len(scheds))))
    for j, sched in enumerate(scheds):
        colour = COLOURS.get(sched, f"C{j + 4}")
        for i, metric in enumerate(metrics):
            got = values.get((sched, metric))
            if not got:
                continue
            base = statistics.median(values[(BASELINE, metric)])
            y = i + (j - (len(scheds) - 1) / 2) * height
            ax.barh(y, statistics.median(got) / base, height=height * 0.9, color=colour,
                    alpha=0.45, label=sched if i == 0 else None)
            ax.plot([v / base for v in got], [y] * len(got), "o", color=colour, markersize=3)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(metrics)))
    ax.set_yticklabels(metrics if every else [METRICS[m] for m in metrics], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"ratio to {BASELINE}'s median (bars: median; dots: rounds; lower is better)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=80)


# Predictors in the idle figure, with the replay pick each is read from
# (teo and seed do not depend on the pick).
PREDICTORS = (("teo", "heaviest"), ("seed", "heaviest"), ("per_choice", "heaviest"))


def idle(out, png):
    bars = []
    for trace in TRACES:
        for table in TABLES:
            try:
                rows = {src: load(out, trace, table, pick)[src] for src, pick in PREDICTORS}
            except FileNotFoundError:
                continue
            for src, _ in PREDICTORS:
                r = rows[src]
                bars.append((f"{trace} / {table} / {src}", r.correct_pct(),
                             r.pct(sum(r.us)), r.os_pct()))
    fig, ax = plt.subplots(figsize=(9, 0.3 + 0.18 * len(bars)))
    ys = range(len(bars))
    correct = [b[1] for b in bars]
    us = [b[2] for b in bars]
    over = [b[3] for b in bars]
    ax.barh(ys, correct, color="tab:green", label="correct")
    ax.barh(ys, us, left=correct, color="tab:red", label="too deep (US)")
    ax.barh(ys, over, left=[c + u for c, u in zip(correct, us)], color="tab:orange",
            label="too shallow (OS)")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([b[0] for b in bars], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of idle periods, by seed 003's ideal state")
    ax.set_title("Idle-state predictions (bench/idle.sh)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=80)


def read_trace(path):
    """A trace's steps by CPU, and each CPU's knobs as it first joined."""
    steps = collections.defaultdict(list)
    knobs = {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if "step" in r:
                steps[r["step"]["cpu"]].append(r["step"])
            elif "join" in r:
                knobs.setdefault(r["join"]["cpu"], r["join"]["knobs"])
    if not steps:
        sys.exit(f"plot.py: {path} has no steps")
    return steps, knobs


def cpufreq_panel(ax, path, steps, knobs, cpu):
    mine = steps.get(cpu, [])
    if not mine:
        sys.exit(f"plot.py: {path} has no steps of CPU {cpu}")
    t0 = mine[0]["now_ns"]
    ms = [(s["now_ns"] - t0) / 1e6 for s in mine]
    busy = [(t, s) for t, s in zip(ms, mine) if not s["idle"]]
    ax.plot([t for t, _ in busy], [s["util"] for _, s in busy], ".", color="tab:gray",
            markersize=2, label="util the evaluation saw")
    ax.step(ms, [s["target"] for s in mine], where="post", color="tab:blue", linewidth=1,
            label="target in force")
    issued = [(t, s["target"]) for t, s in zip(ms, mine) if s["verdict"] == "issued"]
    ax.plot([t for t, _ in issued], [v for _, v in issued], "o", color="tab:red", markersize=3,
            label=f"requests ({len(issued)})")
    ax.plot([t for t, _ in busy], [s["freq_scale"] for _, s in busy], "-", color="tab:purple",
            linewidth=0.6, label="frequency ratio (1024 = freq_max)")
    idle = [t for t, s in zip(ms, mine) if s["idle"]]
    ax.plot(idle, [-30] * len(idle), "|", color="tab:green", markersize=6,
            label=f"went idle ({len(idle)})")
    ax.set_ylim(-60, 1080)
    ax.set_ylabel("0..1024")
    k = knobs.get(cpu, {})
    ax.set_title(f"{path.rsplit('/', 1)[-1]}: CPU {cpu}, as it joined: band {k.get('band')}, "
                 f"interval {k.get('interval_ns', 0) / 1e6:g} ms, "
                 f"hold {k.get('down_hold_ns', 0) / 1e6:g} ms", fontsize=9)
    ax.legend(fontsize=7, loc="upper right", ncol=5)


def cpufreq(png, paths, cpu):
    traces = [(p, *read_trace(p)) for p in paths]
    if cpu is None:
        steps = traces[0][1]
        cpu = max(steps, key=lambda c: sum(not s["idle"] for s in steps[c]))
    fig, axes = plt.subplots(len(traces), 1, figsize=(9, 0.6 + 2.9 * len(traces)),
                             squeeze=False, sharex=True)
    for ax, (path, steps, knobs) in zip(axes[:, 0], traces):
        cpufreq_panel(ax, path, steps, knobs, cpu)
    axes[-1, 0].set_xlabel("ms since the CPU's first recorded step")
    fig.tight_layout()
    fig.savefig(png, dpi=80)


def main(argv):
    if len(argv) in (5, 6) and argv[1] == "ratios" and argv[5:] in ([], ["--all"]):
        ratios(argv[2], argv[3], argv[4], argv[5:] == ["--all"])
    elif len(argv) == 4 and argv[1] == "idle":
        idle(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] == "cpufreq":
        args, cpu = argv[3:], None
        if "--cpu" in args:
            at = args.index("--cpu")
            cpu = int(args[at + 1])
            args = args[:at] + args[at + 2:]
        if not args:
            sys.exit(__doc__)
        cpufreq(argv[2], args, cpu)
    else:
        sys.exit(__doc__)


main(sys.argv)
