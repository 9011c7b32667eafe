#!/usr/bin/env python3
"""Where a scheduler's BPF instructions go, by source line: the insncount
plugin's counts per translated block (bench/insncount.sh) laid over the
programs' JIT-compiled code and its line table, which the guest dumped
(bench/insncount/jited_lines.py).

    bpf_lines.py DIR [NAME [WORKLOAD [TOP]]]

NAME defaults to scx_cadence, WORKLOAD to hackbench, TOP to 40. Prints, per
context switch over NAME's WORKLOAD runs in DIR: the instructions of each
source line (an inlined function's lines under their own file), then of
each file, with the share of the BPF count that the attribution covered;
then the calls each program makes to helpers, kfuncs and its own global
functions, by callee and by the line that calls. A helper's or kfunc's
own instructions are the kernel's (bench/insncount.py's table of kernel
symbols): a call costs its site little and its callee much. The source
text beside each line is read from bpf/ as it is now: for another
build's run, only the file and line number hold.

How: QEMU translates a block from its first instruction to the first that
may leave it (a jump, a call, a return); the plugin counts, per block
start, the block's instructions times its runs. Each block start is found
in the objdump disassembly of its program's image, walked to that end, and
its runs (count / length) credited to each instruction in it, so that a
block that spans lines splits exactly. A block start that is not an
instruction boundary of the dump is counted as not covered.
"""

import bisect
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import insncount

INSN = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(\S+)(?:\s+0x([0-9a-f]+))?")
# Instructions after which TCG ends a block on x86-64.
ENDS = ("j", "call", "ret", "int3", "ud2", "hlt", "syscall", "sysret", "iret", "loop")


def disassemble(image, start):
    """[(address, ends a block, call target or None)] of x86-64 code @image
    loaded at @start."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(image)
        f.flush()
        out = subprocess.run(
            ["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
             "--adjust-vma=%#x" % start, f.name],
            check=True, capture_output=True, text=True).stdout
    insns = []
    for line in out.splitlines():
        m = INSN.match(line)
        if m:
            call = int(m.group(3), 16) if m.group(2) == "call" and m.group(3) else None
            insns.append((int(m.group(1), 16), m.group(2).startswith(ENDS), call))
    return insns


def load_programs(path):
    """{function start: (sorted insn addresses, ends flags, call targets,
    line table, length)}."""
    funcs = {}
    with open(path) as f:
        for line in f:
            p = json.loads(line)
            image = bytes.fromhex(p["image"])
            lines = sorted((a, "%s:%d" % (fn, ln)) for a, fn, ln in p["lines"])
            off = 0
            for start, length in zip(p["ksyms"], p["lens"]):
                insns = disassemble(image[off:off + length], start)
                off += length
                mine = [(a, s) for a, s in lines if start <= a < start + length]
                funcs[start] = ([i[0] for i in insns], [i[1] for i in insns],
                                [i[2] for i in insns],
                                ([a for a, _ in mine], [s for _, s in mine]), length)
    return funcs


def source_text(root, where):
    fn, ln = where.rsplit(":", 1)
    try:
        with open(os.path.join(root, "bpf", fn)) as f:
            return f.read().splitlines()[int(ln) - 1].strip()
    except (OSError, IndexError):
        return ""


def line_of(laddrs, lnames, addr):
    li = bisect.bisect_right(laddrs, addr) - 1
    return lnames[li] if li >= 0 else "?"


def main(d, name="scx_cadence", workload="hackbench", top=40):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    kernel = insncount.read_symbols(d + "/kallsyms")
    blocks = insncount.read_marks(d + "/insns.txt")
    labels = [line.strip() for line in open(d + "/marks.txt")]
    by_line = collections.Counter()
    # Calls by (callee, source line of the call): a helper or kfunc by its
    # kernel symbol, a BPF-to-BPF call by its program's.
    by_call = collections.Counter()
    switches = bpf_total = uncovered = 0
    # Each round loaded the programs anew, elsewhere: its own code and symbols.
    rounds = {}
    for label, (_, _, counts, _) in zip(labels, blocks):
        f = label.split(",")
        if f[0] != "run" or f[1] != name or f[3] != workload:
            continue
        if f[2] not in rounds:
            funcs = load_programs("%s/jited.%s.%s.json" % (d, name, f[2]))
            rounds[f[2]] = (funcs, sorted(funcs),
                            insncount.read_symbols("%s/ksyms.%s.%s" % (d, name, f[2])))
        funcs, starts, ksyms = rounds[f[2]]
        switches += max(1, int(f[4]))
        for vaddr, n in counts.items():
            i = bisect.bisect_right(starts, vaddr) - 1
            if i < 0 or vaddr >= starts[i] + funcs[starts[i]][4]:
                continue
            bpf_total += n
            addrs, ends, calls, (laddrs, lnames), _ = funcs[starts[i]]
            k = bisect.bisect_left(addrs, vaddr)
            if k == len(addrs) or addrs[k] != vaddr:
                uncovered += n
                continue
            j = k
            while j < len(addrs) - 1 and not ends[j]:
                j += 1
            runs = n / (j - k + 1)
            for a in addrs[k:j + 1]:
                by_line[line_of(laddrs, lnames, a)] += runs
            if calls[j] is not None:
                callee = insncount.attribute({calls[j]: 1}, kernel, ksyms)
                callee = next(iter(callee[0] or callee[1]))
                by_call[(callee, line_of(laddrs, lnames, addrs[j]))] += runs
    if not switches:
        sys.exit("bpf_lines.py: no %s run of %s in %s" % (workload, name, d))
    print("## %s, %s: BPF instructions per context switch by source line" % (name, workload))
    print()
    print("%d switches; %.0f BPF instructions per switch in its programs' images, "
          "%.1f%% of them at a block start found in the disassembly." % (
              switches, bpf_total / switches, 100 * (1 - uncovered / max(bpf_total, 1))))
    print()
    print("| per switch | line | source |")
    print("|---|---|---|")
    for where, n in by_line.most_common(top):
        print("| %.1f | %s | `%s` |" % (n / switches, where, source_text(root, where)))
    by_file = collections.Counter()
    for where, n in by_line.items():
        by_file[where.rsplit(":", 1)[0]] += n
    print()
    print("| per switch | file |")
    print("|---|---|")
    for fn, n in by_file.most_common():
        print("| %.1f | %s |" % (n / switches, fn))
    by_callee = collections.Counter()
    for (callee, _), n in by_call.items():
        by_callee[callee] += n
    print()
    print("Calls per context switch, by callee (helpers and kfuncs by their kernel "
          "symbol), and the lines that make them:")
    print()
    print("| per switch | callee | per switch | line |")
    print("|---|---|---|---|")
    for callee, n in by_callee.most_common(top):
        sites = sorted(((m, w) for (c, w), m in by_call.items() if c == callee), reverse=True)
        for k, (m, where) in enumerate(sites[:4]):
            print("| %s | %s | %.2f | %s |" % (
                "%.2f" % (n / switches) if not k else "", callee if not k else "",
                m / switches, where))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], *sys.argv[2:4], *[int(a) for a in sys.argv[4:5]])
