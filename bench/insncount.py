#!/usr/bin/env python3
"""Reads what bench/insncount/insncount.c (the QEMU plugin) wrote and what
the guest recorded beside it (bench/insncount_guest.sh), and prints, per
workload and scheduler, the guest's instructions per run: in all, in the
kernel, and in BPF programs by name, per context switch. Instruction
counts hardly move with the host's load, as TCG's timings do, so two
builds' costs compare within one boot without the same-build spread that
run_time_ns needs (a busy host still adds ticks and switches:
bench/insncount.sh).

    insncount.py DIR

DIR holds insns.txt (the plugin's counts, one block per mark), marks.txt
(one label per mark, in order), kallsyms (the kernel's, at boot),
ksyms.NAME.ROUND (the BPF programs' symbols while NAME ran in ROUND) and,
if the kernel ejected a scheduler, ejected.csv (bench/ejected.py).
"""

import bisect
import collections
import statistics
import sys

import ejected


def read_marks(path):
    """The plugin's blocks: [(total, user, {vaddr: count}, translated)], in
    mark order."""
    blocks = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[0] == "mark":
                blocks.append((int(w[3]), int(w[5]), collections.Counter(), int(w[7])))
            else:
                blocks[-1][2][int(w[0], 16)] += int(w[1])
    return blocks


def read_symbols(path):
    """(sorted starts, names) of the text symbols of a kallsyms file."""
    syms = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[1] in "tT":
                syms.append((int(w[0], 16), w[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def bpf_name(sym):
    """bpf_prog_<tag>_<name> -> <name>; other [bpf] symbols as they are."""
    parts = sym.split("_", 3)
    if sym.startswith("bpf_prog_") and len(parts) == 4:
        return parts[3]
    return sym


def attribute(counts, kernel, bpf):
    """Counts by BPF program name, and the kernel's rest, by symbol."""
    by_bpf = collections.Counter()
    by_kernel = collections.Counter()
    for vaddr, n in counts.items():
        i = bisect.bisect_right(bpf[0], vaddr) - 1
        # A BPF image is far smaller than this: past it, the kernel's.
        if i >= 0 and vaddr - bpf[0][i] < 1 << 16:
            by_bpf[bpf_name(bpf[1][i])] += n
            continue
        j = bisect.bisect_right(kernel[0], vaddr) - 1
        by_kernel[kernel[1][j] if j >= 0 else "?"] += n
    return by_bpf, by_kernel


def median(xs):
    return statistics.median(xs) if xs else 0


def main(d):
    blocks = read_marks(d + "/insns.txt")
    labels = [line.strip() for line in open(d + "/marks.txt")]
    kernel = read_symbols(d + "/kallsyms")
    ksyms = {}
    # runs[workload][scheduler]: (total, user, switches, result, idle %,
    # BPF by program, kernel by symbol, IPIs, timer interrupts, blocks
    # translated) per run.
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    lost = ejected.load(d)
    ejected.note(lost)
    for label, (total, user, counts, translated) in zip(labels, blocks):
        f = label.split(",")
        if f[0] != "run":
            continue
        name, rnd, workload = f[1], f[2], f[3]
        if (name, rnd) in lost:
            continue
        switches, result, idle = max(1, int(f[4])), float(f[5] or "nan"), int(f[6])
        ipis, ticks = int(f[7]) + int(f[8]), int(f[9])
        key = (name, rnd)
        if key not in ksyms:
            try:
                ksyms[key] = read_symbols("%s/ksyms.%s.%s" % (d, name, rnd))
            except FileNotFoundError:
                ksyms[key] = ([], [])
        by_bpf, by_kernel = attribute(counts, kernel, ksyms[key])
        runs[workload][name].append(
            (total, user, switches, result, idle, by_bpf, by_kernel, ipis, ticks, translated)
        )

    for workload, by_name in runs.items():
        unit = "s" if workload == "hackbench" else "s for 20000 round trips"
        print("## %s (medians of each scheduler's runs)" % workload)
        print()
        print("| scheduler | runs | Minsn per run | kernel | BPF | BPF insn per switch "
              "| switches | IPIs | timer irqs | translated | idle %% | %s |" % unit)
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, rs in by_name.items():
            bpf = [sum(r[5].values()) for r in rs]
            print("| %s | %d | %.1f | %.1f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |" % (
                name, len(rs),
                median([r[0] for r in rs]) / 1e6,
                median([r[0] - r[1] for r in rs]) / 1e6,
                median(bpf) / 1e6,
                median([b / r[2] for b, r in zip(bpf, rs)]),
                median([r[2] for r in rs]),
                median([r[7] for r in rs]),
                median([r[8] for r in rs]),
                median([r[9] for r in rs]),
                median([r[4] for r in rs]),
                median([r[3] for r in rs])))
        print()
        names = [n for n in by_name if any(r[5] for r in by_name[n])]
        progs = sorted({p for n in names for r in by_name[n] for p in r[5]})
        print("BPF instructions per context switch, by program (BPF-to-BPF callees "
              "apart; bpf__sched_ext_ops_* are the struct_ops trampolines):")
        print()
        print("| program | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for p in progs:
            vals = [median([r[5][p] / r[2] for r in by_name[n]]) for n in names]
            if max(vals) >= 1:
                print("| %s | %s |" % (p, " | ".join("%.0f" % v for v in vals)))
        print()
        print("Kernel instructions per context switch, the 10 largest symbols:")
        print()
        ks = collections.Counter()
        for rs in by_name.values():
            for r in rs:
                ks.update({k: v / r[2] for k, v in r[6].items()})
        print("| symbol | " + " | ".join(by_name) + " |")
        print("|---" * (len(by_name) + 1) + "|")
        for k, _ in ks.most_common(10):
            vals = [median([r[6][k] / r[2] for r in by_name[n]]) for n in by_name]
            print("| %s | %s |" % (k, " | ".join("%.0f" % v for v in vals)))
        print()


if __name__ == "__main__":
    main(sys.argv[1])
