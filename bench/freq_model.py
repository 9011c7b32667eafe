"""The injected frequency model of the cpufreq bench: every CPU's APERF/MPERF
(the freq_inject map of scx_cadence started with --test-freq-inject) runs
at freq_max for 200 ms, then at half of it for 200 ms, and so on, as a CPU
whose governor or firmware moves it between two P-states would. The same
square wave is fed to every policy in the bench.

    freq_model.py PIN_DIR    (runs until killed)"""

import subprocess
import sys
import time

PIN_DIR = sys.argv[1]
# MPERF counts per update: only the APERF/MPERF ratio matters.
MPERF_STEP = 1_000_000
# Half a period of the square wave, seconds.
HALF_PERIOD_S = 0.2

bpftool = subprocess.Popen(["bpftool", "batch", "file", "-"], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, text=True, bufsize=1)
aperf = mperf = 0
start = time.monotonic()
while True:
    ratio = 1.0 if int((time.monotonic() - start) / HALF_PERIOD_S) % 2 == 0 else 0.5
    aperf += int(MPERF_STEP * ratio)
    mperf += MPERF_STEP
    raw = aperf.to_bytes(8, "little") + mperf.to_bytes(8, "little")
    bpftool.stdin.write(f"map update pinned {PIN_DIR}/freq_inject key 0 0 0 0 value "
                        + " ".join(str(b) for b in raw) + "\n")
    bpftool.stdin.flush()
    time.sleep(0.002)
