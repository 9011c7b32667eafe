"""The tick inputs of recorded idle periods against the kernel's own events.

  idle_tick.py interrupt CPU PERIOD_NS SECS   interrupt CPU's idle loop
  idle_tick.py check TRACE FTRACE TICK_NS     hold a trace against ftrace

interrupt opens a cpu-clock perf event on CPU (no task, no ring buffer):
its hrtimer, pinned to CPU, fires every PERIOD_NS for SECS seconds and
wakes no task, so an idle CPU handles it and goes back to idle without
leaving the idle loop. With PERIOD_NS above a tick, the tick is stopped at
each such entry after the first, the case the kernel calls "stopped"
below; nothing else in the VM gives it reliably (a wake-up of a task
leaves the loop).

check:

TRACE is an `idle record` trace; FTRACE the text of /sys/kernel/tracing/trace
over the same seconds, with trace_clock mono (the clock of
bpf_ktime_get_ns()) and the events power:cpu_idle, timer:tick_stop,
timer:hrtimer_expire_entry and sched:sched_switch, and the function
tick_nohz_idle_exit where it can be traced. For each recorded period of
CPUs 1-3 matched to an ftrace idle entry of its CPU (within 50 us), the
kernel's answers, worked out from its events alone:

- woke: the tick's handler (tick_nohz_handler) ran on the CPU after the
  period's entry and before its next one, still in the idle loop, which is
  when the kernel sets got_idle_tick (halting with interrupts on, as
  default_idle_call() does, the handler runs before the exit event);
- stopped: the CPU's tick was stopped (a tick_stop event with success=1)
  after it last entered idle (a switch to its swapper, or its last
  tick_nohz_idle_exit) and before the previous period's exit, so it was
  stopped when this period's state was chosen.

The recording must give the kernel's answer on at least 97% of the matched
periods for each input, see both answers for each on some periods, and
carry TICK_NS on every period.
"""

import ctypes
import json
import os
import re
import sys
import time

# An event ("name: fields") or a traced function ("name <-caller").
EVENT = re.compile(r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): (\w+)(?::| <-) ?(.*)")
ENDLESS = 2**63 - 1
CPUS = (1, 2, 3)
# x86-64's perf_event_open syscall number; PERF_TYPE_SOFTWARE and
# PERF_COUNT_SW_CPU_CLOCK (include/uapi/linux/perf_event.h).
SYS_PERF_EVENT_OPEN, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK = 298, 1, 0


class PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to its flags word (PERF_ATTR_SIZE_VER0 is
    64 bytes with the union that follows); all flags 0: enabled at open."""
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


def interrupt(cpu, period_ns, secs):
    attr = PerfEventAttr(type=PERF_TYPE_SOFTWARE, size=ctypes.sizeof(PerfEventAttr),
                         config=PERF_COUNT_SW_CPU_CLOCK, sample_period=period_ns)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(SYS_PERF_EVENT_OPEN, ctypes.byref(attr), -1, cpu, -1, 0)
    if fd < 0:
        sys.exit(f"perf_event_open(cpu-clock on CPU {cpu}): {os.strerror(ctypes.get_errno())}")
    time.sleep(secs)
    os.close(fd)


def kernel_periods(path):
    """Per CPU: [(entry_ns, woke, stopped)] from the ftrace text."""
    out = {c: [] for c in CPUS}
    state = {c: {"stopped_since_visit": False, "stop_pending": False, "open": None,
                 "last": None} for c in CPUS}
    for line in open(path):
        m = EVENT.search(line)
        if not m:
            continue
        cpu, sec, frac, name, rest = int(m[1]), int(m[2]), m[3], m[4], m[5]
        if cpu not in out:
            continue
        t = sec * 10**9 + int(frac.ljust(9, "0"))
        st = state[cpu]
        if name == "cpu_idle":
            if "state=4294967295" in rest:
                st["open"] = None
                continue
            # An entry: the previous period's stops now count for this one.
            stopped = st["stopped_since_visit"]
            if st["stop_pending"]:
                st["stopped_since_visit"] = True
                st["stop_pending"] = False
            st["open"] = [t, False, stopped]
            out[cpu].append(st["open"])
            st["last"] = st["open"]
        elif name == "hrtimer_expire_entry" and "function=tick_nohz_handler" in rest:
            if st["last"] is not None:
                st["last"][1] = True
        elif name == "tick_stop" and "success=1" in rest:
            st["stop_pending"] = True
        elif (name == "sched_switch" and re.search(r"next_pid=0\b", rest)) or name == "tick_nohz_idle_exit":
            st["stopped_since_visit"] = False
            st["stop_pending"] = False
            st["last"] = None
    return out


def check(trace, ftrace, tick_ns):
    recorded = [json.loads(l)["period"] for l in open(trace) if l.startswith('{"period"')]
    kernel = kernel_periods(ftrace)
    bad = []
    wrong_tick = sum(1 for p in recorded if p.get("tick", {}).get("tick_ns") != tick_ns)
    if wrong_tick:
        bad.append(f"{wrong_tick} of {len(recorded)} periods without tick_ns {tick_ns}")
    agree = {"woke": [0, 0], "stopped": [0, 0]}
    seen = {"woke": set(), "stopped": set()}
    matched = 0
    stopped_by_cpu = {}
    for cpu in CPUS:
        ks = kernel[cpu]
        j = 0
        for p in (p for p in recorded if p["cpu"] == cpu):
            while j < len(ks) and ks[j][0] < p["start_ns"] - 50_000:
                j += 1
            if j == len(ks) or abs(ks[j][0] - p["start_ns"]) > 50_000:
                continue
            matched += 1
            _, woke, stopped = ks[j]
            for name, truth in (("woke", woke), ("stopped", stopped)):
                ours = p["tick"][name]
                agree[name][0] += ours == truth
                agree[name][1] += 1
                seen[name].add(truth)
            stopped_by_cpu[cpu] = stopped_by_cpu.get(cpu, 0) + stopped
            j += 1
    print(f"recorded {len(recorded)} periods of CPUs 1-3 and others, matched {matched} to ftrace")
    print("entered with the tick stopped, by the kernel's events: " +
          ", ".join(f"CPU {c} {stopped_by_cpu.get(c, 0)}" for c in CPUS))
    if matched < 500:
        bad.append(f"only {matched} periods matched")
    for name, (ok, n) in agree.items():
        share = ok / n if n else 0
        print(f"{name}: the kernel's answer on {ok} of {n} ({100 * share:.1f}%), kernel saw {sorted(seen[name])}")
        if share < 0.97:
            bad.append(f"{name} agrees on {100 * share:.1f}%")
        if seen[name] != {False, True}:
            bad.append(f"{name}: the kernel's answer was always {sorted(seen[name])}")
    if bad:
        print("FAIL: " + "; ".join(bad))
        sys.exit(1)


if len(sys.argv) == 5 and sys.argv[1] == "interrupt":
    interrupt(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
elif len(sys.argv) == 5 and sys.argv[1] == "check":
    check(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    sys.exit(__doc__)
