"""Drives the real BPF frequency and PELT code with synthetic APERF/MPERF
(the VM has none): scx_cadence runs with --test-freq-inject 1000
--freq-max 1000, so a ratio of 1024 is "running at 1000 MHz". A periodic
task uses 1/3 of CPU 1's time. With invariance its util must follow the
injected ratio: at ratio 512 (500 MHz) the same wall-clock duty cycle is
half the work, so util halves. Then APERF running at twice MPERF (above
freq_max) must be clamped to 1024 and counted.

Usage: util_inject.py PIN_DIR SCHED"""

import subprocess
import sys
import threading
import time

PIN_DIR = sys.argv[1]
SCHED = sys.argv[2]
CPU = 1
# MPERF counts per injection: any size works; only the APERF/MPERF ratio
# matters to the formula.
MPERF_STEP = 1_000_000


class Injector(threading.Thread):
    """Advances every CPU's freq_inject counters: APERF by ratio x MPERF."""

    def __init__(self):
        super().__init__(daemon=True)
        self.ratio = 1.0
        self.aperf = self.mperf = 0
        self.stop = False
        self.bpftool = subprocess.Popen(
            ["bpftool", "batch", "file", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, bufsize=1,
        )

    def run(self):
        while not self.stop:
            self.aperf += int(MPERF_STEP * self.ratio)
            self.mperf += MPERF_STEP
            raw = self.aperf.to_bytes(8, "little") + self.mperf.to_bytes(8, "little")
            value = " ".join(str(b) for b in raw)
            self.bpftool.stdin.write(
                f"map update pinned {PIN_DIR}/freq_inject key 0 0 0 0 value {value}\n")
            self.bpftool.stdin.flush()
            time.sleep(0.002)


def task_util(pid: int) -> int:
    with open(f"{PIN_DIR}/tasks") as f:
        for line in f:
            cols = line.split()
            if cols and cols[0] == str(pid):
                return int(cols[2])
    raise RuntimeError(f"pid {pid} not in {PIN_DIR}/tasks")


def cpu_util_entry(cpu: int) -> dict:
    import json
    out = subprocess.run(["bpftool", "map", "dump", "pinned", f"{PIN_DIR}/cpu_util"],
                         check=True, capture_output=True, text=True).stdout
    for v in json.loads(out)[0]["values"]:
        if v["cpu"] == cpu:
            return v["value"]
    raise RuntimeError(f"no cpu_util for CPU {cpu}")


def mean_util(pid: int, seconds: float) -> float:
    """Settle for 1 s (30 half-lives), then average samples for @seconds."""
    time.sleep(1.0)
    samples = []
    end = time.time() + seconds
    while time.time() < end:
        samples.append(task_util(pid))
        time.sleep(0.05)
    return sum(samples) / len(samples)


def main() -> int:
    inj = Injector()
    inj.start()
    # 1/3 duty: busy 4 ms, sleep 8 ms, on CPU 1 only.
    task = subprocess.Popen(
        ["taskset", "-c", str(CPU), "python3", "-c",
         "import time\n"
         "while True:\n"
         "    end = time.perf_counter() + 0.004\n"
         "    while time.perf_counter() < end: pass\n"
         "    time.sleep(0.008)\n"])
    failed = False
    try:
        full = mean_util(task.pid, 3.0)
        src = cpu_util_entry(CPU)
        print(f"ratio 1024: task util {full:.0f}, cpu {CPU} freq_scale {src['freq_scale']} "
              f"source {src['freq_source']}")
        if src["freq_source"] != 3 or src["freq_scale"] != 1024:
            print("FAIL: CPU 1 does not read the injected ratio 1024 (source 3)")
            failed = True

        inj.ratio = 0.5
        half = mean_util(task.pid, 3.0)
        src = cpu_util_entry(CPU)
        print(f"ratio 512: task util {half:.0f}, freq_scale {src['freq_scale']}; "
              f"ratio of utils {half / full:.2f} (invariance predicts 0.50)")
        if src["freq_scale"] != 512:
            print("FAIL: the injected 1:2 APERF/MPERF did not give ratio 512")
            failed = True
        # TCG timing is noisy; 0.5 +- 0.15 separates "follows" from "ignores".
        if not 0.35 <= half / full <= 0.65:
            print("FAIL: util did not follow the frequency ratio")
            failed = True

        # freq_max is hot-swappable: at APERF = MPERF (1000 MHz), freq_max
        # 2000 MHz makes the ratio 512; back at 1000 it is 1024 again.
        inj.ratio = 1.0
        for mhz, want in ((2000, 512), (1000, 1024)):
            subprocess.run([SCHED, "ctl", "set", f"freq.max={mhz}"], check=True,
                           stdout=subprocess.DEVNULL)
            time.sleep(0.5)
            got = cpu_util_entry(CPU)["freq_scale"]
            print(f"ctl set freq.max={mhz}: freq_scale {got} (expected {want})")
            if got != want:
                print("FAIL: a hot-swapped freq_max did not change the ratio")
                failed = True

        clamped0 = cpu_util_entry(CPU)["freq_clamped"]
        inj.ratio = 2.0
        time.sleep(1.0)
        src = cpu_util_entry(CPU)
        print(f"ratio 2048: freq_scale {src['freq_scale']}, "
              f"clamped ticks +{src['freq_clamped'] - clamped0}")
        if src["freq_scale"] != 1024 or src["freq_clamped"] <= clamped0:
            print("FAIL: a CPU above freq_max was not clamped to 1024 and counted")
            failed = True
    finally:
        task.kill()
        inj.stop = True
    return 1 if failed else 0


sys.exit(main())
