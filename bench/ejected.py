"""The runs a bench's guest saw the kernel eject the scheduler from
(tests/vm/guest/lib.sh, bench_detach): a stall or an error ends a sched_ext
scheduler, the rest of its runs in that round go on under EEVDF, and a
summary that kept them would credit EEVDF's numbers to it. The guest writes
"ROUND,NAME,why" lines to ejected.csv beside the bench's other output; the
summaries leave those runs out and say so."""

import os


def load(directory):
    """{(name, round): why}, both as strings, from DIRECTORY/ejected.csv."""
    out = {}
    path = os.path.join(directory, "ejected.csv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    rnd, name, why = line.rstrip("\n").split(",", 2)
                    out[(name, rnd)] = why
    return out


def note(ejected):
    """One line per ejected run of @ejected, for the summary."""
    for (name, rnd), why in sorted(ejected.items()):
        print(f"Left out: {name} in round {rnd}, which the kernel ejected ({why}).")
    if ejected:
        print()
