"""Drives the scheduler's power:cpu_idle_miss program (the TCG VM has no
cpuidle driver, so the kernel never fires it) through BPF_PROG_TEST_RUN,
as cpuidle_enter_state() would: on the CPU that just left idle, before it
idles again. Pinned to one CPU, each round sleeps 3 ms (the CPU idles; the
wake-up ends the period) and then runs the program with one of five
verdicts: "above", "below", none, and two the program must not take: one
of another CPU and one about another state than the one entered.

  idle_miss.py inject CPU OUT.json    run the rounds, write what was done
  idle_miss.py check OUT.json TRACE   hold the trace `idle record` wrote
                                      against it

check passes when every verdict taken is on the period that ended just
before it (the CPU's last period ending before the injection, the next
one starting after), no other period of the CPU has one, and each of
those periods is in the state default_idle_call() reports (1)."""

import ctypes
import json
import os
import subprocess
import sys
import time

# enum bpf_cmd (include/uapi/linux/bpf.h) and x86-64's bpf syscall number.
BPF_PROG_TEST_RUN, BPF_PROG_GET_FD_BY_ID, SYS_BPF = 10, 13, 321
# The state default_idle_call() reports to the tracepoints.
DEFAULT_IDLE_STATE = 1
ROUNDS = 60
SLEEP_S = 0.003


class GetFdById(ctypes.Structure):
    _fields_ = [("prog_id", ctypes.c_uint32), ("next_id", ctypes.c_uint32),
                ("open_flags", ctypes.c_uint32)]


class TestRun(ctypes.Structure):
    """union bpf_attr's `test` member, up to cpu."""
    _fields_ = [("prog_fd", ctypes.c_uint32), ("retval", ctypes.c_uint32),
                ("data_size_in", ctypes.c_uint32), ("data_size_out", ctypes.c_uint32),
                ("data_in", ctypes.c_uint64), ("data_out", ctypes.c_uint64),
                ("repeat", ctypes.c_uint32), ("duration", ctypes.c_uint32),
                ("ctx_size_in", ctypes.c_uint32), ("ctx_size_out", ctypes.c_uint32),
                ("ctx_in", ctypes.c_uint64), ("ctx_out", ctypes.c_uint64),
                ("flags", ctypes.c_uint32), ("cpu", ctypes.c_uint32)]


libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    r = libc.syscall(SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        raise OSError(ctypes.get_errno(), f"bpf({cmd}): {os.strerror(ctypes.get_errno())}")
    return r


def miss_prog_fd():
    """The loaded cadence_cpu_idle_miss (a raw tracepoint program; the
    kernel keeps 15 characters of its name)."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True,
                                      capture_output=True, text=True).stdout)
    ids = [p["id"] for p in progs
           if p.get("type") == "raw_tracepoint" and p.get("name", "").startswith("cadence_cpu_idl")]
    if len(ids) != 1:
        sys.exit(f"want one cadence_cpu_idle_miss program, found {ids}")
    return bpf(BPF_PROG_GET_FD_BY_ID, GetFdById(prog_id=ids[0]))


def inject(cpu, out):
    fd = miss_prog_fd()
    os.sched_setaffinity(0, {cpu})
    # What each round does: (verdict recorded, cpu_id, state, below).
    kinds = [("above", cpu, DEFAULT_IDLE_STATE, 0), ("below", cpu, DEFAULT_IDLE_STATE, 1),
             None, ("stray", 0 if cpu else 1, DEFAULT_IDLE_STATE, 1),
             ("stray", cpu, DEFAULT_IDLE_STATE + 2, 1)]
    done = []
    for i in range(ROUNDS):
        time.sleep(SLEEP_S)
        at = time.monotonic_ns()
        kind = kinds[i % len(kinds)]
        if kind is None:
            done.append({"at": at, "verdict": None})
            continue
        args = (ctypes.c_uint64 * 3)(kind[1], kind[2], kind[3])
        bpf(BPF_PROG_TEST_RUN, TestRun(prog_fd=fd, ctx_in=ctypes.addressof(args),
                                       ctx_size_in=ctypes.sizeof(args)))
        done.append({"at": at, "verdict": kind[0]})
    json.dump({"cpu": cpu, "rounds": done}, open(out, "w"))
    print(f"{ROUNDS} rounds on CPU {cpu}")


def check(out, trace):
    done = json.load(open(out))
    cpu, rounds = done["cpu"], done["rounds"]
    periods = sorted((json.loads(l)["period"] for l in open(trace) if l.startswith('{"period"')),
                     key=lambda p: p["start_ns"])
    mine = [p for p in periods if p["cpu"] == cpu]
    bad, want = [], {}
    for r in rounds:
        ended = [i for i, p in enumerate(mine) if p["start_ns"] + p["duration_ns"] <= r["at"]]
        if not ended or ended[-1] + 1 >= len(mine):
            bad.append(f"no recorded period of CPU {cpu} around {r['at']}")
            continue
        i = ended[-1]
        if mine[i + 1]["start_ns"] <= r["at"]:
            bad.append(f"CPU {cpu} idled at {mine[i + 1]['start_ns']}, before the round at {r['at']}")
        if r["verdict"] in ("above", "below"):
            want[i] = r["verdict"]
    got = {i: p["kernel_miss"] for i, p in enumerate(mine) if "kernel_miss" in p}
    print(f"CPU {cpu}: {len(mine)} periods; verdicts injected on {len(want)}, recorded on {len(got)}; "
          f"{sum(1 for r in rounds if r['verdict'] == 'stray')} stray")
    if got != want:
        missing = {i: v for i, v in want.items() if got.get(i) != v}
        extra = {i: v for i, v in got.items() if want.get(i) != v}
        bad.append(f"verdicts not where injected: missing {missing}, elsewhere {extra}")
    states = {mine[i]["kernel_state"] for i in want}
    if states - {DEFAULT_IDLE_STATE}:
        bad.append(f"judged periods in states {states}, want {DEFAULT_IDLE_STATE}")
    if bad:
        print("FAIL: " + "; ".join(bad[:5]))
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "inject":
        inject(int(sys.argv[2]), sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3])
