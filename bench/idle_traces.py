#!/usr/bin/env python3
"""Writes the synthetic idle traces of bench/idle.sh in the format
`scx_cadence idle replay` reads (docs/idle.md, src/idle/trace.rs): one
`{"period": ...}` JSON line per idle period, no table record, so every CPU
starts from a fresh table. Deterministic: one seeded generator per trace.

    idle_traces.py DIR        writes DIR/<family>.trace for each family below:
                              periodic, bimodal, changing (no timer known),
                              alternating, markov, bursts (patterns, no
                              timer known),
                              timer, timer_irq (a timer ends or bounds each
                              period, and its sleep length is given)

The durations are chosen against the two state tables the bench replays
with (docs/idle-states/), target residencies:
  Intel Skylake-SP: POLL 0, C1 2 us, C1E 20 us, C6 600 us
  POWER9:           snooze 0, stop0_lite 10 us, stop0 20, stop1 50,
                    stop2 100, stop4 10000, stop5 20000
Each duration below says which state is ideal for it in each table (the
deepest whose residency it lasts); none sits within its jitter of a
residency, so the ideal of a mode never flips with the noise. The bench
also replays them with the Juno table (WFI 1 us, cpu-sleep-0 2000 us,
cluster-sleep-0 2500 us) for the energy proxy: there every mode up to
1500 us is WFI and every one from 15000 us cluster-sleep-0; none falls in
cpu-sleep-0's 2000-2500 us, which only timer_irq's cut-short periods and
the recorded traces can reach.

Every period of the first six families has sleep_length_ns = ENDLESS (no
timer known: a non-timer wake-up, the case seed 003 is about; the VM's
recordings held it too until they read the time to the next timer event,
91870bc). In timer and timer_irq a timer is due at sleep_length_ns from the
period's start and the period ends at it (plus a wake-up delay) unless an
interrupt comes first: teo's hits, its timer path and its sleep-length
cap run there. Every period has kernel_state -1 (no cpuidle driver) and a
random u32 for the random picks, from the trace's own generator.
"""

import json
import os
import random
import sys

# src/idle/reference.rs ENDLESS: i64::MAX, no sleep length known.
ENDLESS = 2**63 - 1
# Periods per CPU: enough for teo's bins (decay 7/8 a period) and the
# weights (learning rate 10%) to settle many
# times over, and for a changing pattern to leave 2000 periods after it.
PERIODS = 4000
# Each duration is drawn within +-10% of its mode: real periods jitter, and
# +-10% keeps every mode below clear of the residencies above.
JITTER = 0.10
# Busy time between two idle periods; the predictors ignore it, it only
# moves start_ns forward.
BUSY_NS = 50_000
US = 1000

# Modes (us) and their ideal state, Intel / POWER9:
#   5      C1    / snooze      (2 < 5 < 10)
#   35     C1E   / stop0       (20 < 35 < 50)
#   300    C1E   / stop2       (100 < 300 < 600)
#   1500   C6    / stop2       (600 < 1500 < 10000)
#   15000  C6    / stop4       (10000 < 15000 < 20000)
#   40000  C6    / stop5       (20000 < 40000)

# periodic: each CPU one mode for the whole trace, a fixed sleep interval
# such as a timer-driven poller's; the easy case, where any predictor that
# learns at all is right nearly always.
PERIODIC = [35, 300, 1500, 15000]

# bimodal: each period independently short or long, with a share of short
# ones per CPU: a wake-up from a busy peer or from a far-off event. The two
# modes of each pair are different states in both tables: C1 / C6 and
# snooze / stop2; C1 / C6 and snooze / stop4; C1E / C6 and stop0 / stop5;
# C1 / C1E and snooze / stop2. Independent draws have no pattern to learn:
# the best any predictor can do is the more common mode (max(p, 1 - p)).
BIMODAL = [(5, 1500, 0.5), (5, 15000, 0.7), (35, 40000, 0.3), (5, 300, 0.9)]

# changing: the first half one pattern, the second another, per CPU; tests
# how fast each predictor unlearns (teo's bins decay by 7/8 a period; the
# weights move by the learning rate, within the seed's bounds).
#   CPU 0: long (C6 / stop4) then short (C1 / snooze)
#   CPU 1: short then long, the other way round
#   CPU 2: bimodal 70% short then 30% short (the majority flips)
#   CPU 3: C1E / stop2 then C6 / stop5
CHANGING = [
    ((15000, 15000, 1.0), (5, 5, 1.0)),
    ((5, 5, 1.0), (1500, 1500, 1.0)),
    ((5, 15000, 0.7), (5, 15000, 0.3)),
    ((300, 300, 1.0), (40000, 40000, 1.0)),
]


# alternating: short and long strictly in turn, on every CPU: the pattern
# a matrix row kept per state can learn and a per-state histogram (teo's
# bins) cannot; the pairs are different states in both tables:
# C1 / C1E-or-C6 and snooze / stop0..stop2.
ALTERNATING = [(15, 900), (5, 1500), (35, 300), (5, 40000)]

# markov: short or long in runs: after each period the mode stays with
# probability STAY, so the last period predicts the next with that
# probability (the best any predictor can do), while each mode is half the
# periods. (short us, long us, STAY)
MARKOV = [(5, 1500, 0.9), (35, 15000, 0.9), (5, 300, 0.75), (15, 900, 0.95)]

# bursts: runs of short periods, each run 1..2N-1 long (N on average), then
# one long period: a device or a producer that delivers work in bursts with
# quiet gaps between them. Short modes C1 / snooze (5 us), C1E / stop0
# (35 us), C1 / stop0_lite (15 us); long ones as above. (short us, N, long us)
BURSTS = [(5, 8, 1500), (35, 4, 15000), (5, 16, 300), (15, 6, 40000)]

# timer: a periodic timer (cyclictest-like) of this many us on each CPU; the
# CPU wakes for it after a delay of 1..TIMER_DELAY_US us.
TIMER = [35, 300, 1500, 15000]
TIMER_DELAY_US = 5

# timer_irq: a timer of T us, and with probability P an interrupt first, at
# a uniformly random point of the first FRACTION of the wait (a device or a
# peer CPU's wake-up). (T us, P)
TIMER_IRQ = [(1500, 0.3), (15000, 0.5), (300, 0.7), (40000, 0.9)]
TIMER_IRQ_FRACTION = 0.5


def duration_ns(rng, us):
    return int(us * US * rng.uniform(1 - JITTER, 1 + JITTER))


def mode_of(rng, short, long, p_short):
    """Short with probability @p_short, else long (us)."""
    return short if rng.random() < p_short else long


def markov(short, long, stay):
    """A mode function: the mode kept with probability @stay."""
    last = [short]

    def mode(rng, i):
        if i > 0 and rng.random() >= stay:
            last[0] = long if last[0] == short else short
        return last[0]

    return mode


def bursts(short, n, long):
    """A mode function: runs of @short (1..2n-1 of them), each followed by
    one @long."""
    left = [0]

    def mode(rng, i):
        if left[0] == 0:
            left[0] = rng.randint(1, 2 * n - 1)
            return long if i > 0 else short
        left[0] -= 1
        return short

    return mode


def timer_period(rng, timer_us, p_irq):
    """(duration, sleep length) in ns: a timer @timer_us away, woken after
    it by 1..TIMER_DELAY_US us, or with probability @p_irq by an interrupt
    in the first TIMER_IRQ_FRACTION of the wait."""
    sleep = timer_us * US
    if rng.random() < p_irq:
        return int(sleep * TIMER_IRQ_FRACTION * rng.random()) + 1, sleep
    return sleep + rng.randint(1, TIMER_DELAY_US) * US, sleep


def periods(rng, cpu, mode):
    """One CPU's period records; mode(rng, i) gives period i's mode in us,
    or (duration ns, sleep length ns) for a timer family."""
    start = 1_000_000 * (cpu + 1)
    for i in range(PERIODS):
        m = mode(rng, i)
        d, sleep = m if isinstance(m, tuple) else (duration_ns(rng, m), ENDLESS)
        yield {
            "period": {
                "cpu": cpu,
                "start_ns": start,
                "duration_ns": d,
                "sleep_length_ns": sleep,
                "kernel_state": -1,
                "rand": rng.getrandbits(32),
            }
        }
        start += d + BUSY_NS


def generate(seed, modes):
    """Every CPU's periods, CPU after CPU, from one generator seeded @seed."""
    rng = random.Random(seed)
    for cpu, mode in enumerate(modes):
        yield from periods(rng, cpu, mode)


def traces():
    """(name, records) of each trace; one seed per trace, so that changing
    one trace leaves the others as they were."""
    yield "periodic", generate(1, [lambda rng, i, m=m: m for m in PERIODIC])
    yield "bimodal", generate(2, [lambda rng, i, b=b: mode_of(rng, *b) for b in BIMODAL])
    half = PERIODS // 2
    yield "changing", generate(
        3,
        [
            lambda rng, i, c=c: mode_of(rng, *(c[0] if i < half else c[1]))
            for c in CHANGING
        ],
    )
    yield "alternating", generate(
        4, [lambda rng, i, a=a: duration_us_of_turn(a, i) for a in ALTERNATING]
    )
    yield "markov", generate(5, [markov(*m) for m in MARKOV])
    yield "bursts", generate(8, [bursts(*b) for b in BURSTS])
    yield "timer", generate(6, [lambda rng, i, t=t: timer_period(rng, t, 0.0) for t in TIMER])
    yield "timer_irq", generate(
        7, [lambda rng, i, t=t: timer_period(rng, *t) for t in TIMER_IRQ]
    )


def duration_us_of_turn(pair, i):
    """Period @i of a strictly alternating @pair: short, long, short, ..."""
    return pair[i % 2]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, records in traces():
        path = os.path.join(out_dir, f"{name}.trace")
        n = 0
        with open(path, "w") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
                n += 1
        print(f"{path}: {n} periods on {len(PERIODIC)} CPUs")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: idle_traces.py DIR")
    main(sys.argv[1])
