"""idle.place = shallow sees each CPU's idle state (issue 13, item 4).
scx_cadence runs with --idle-states from the Skylake-SP file and the
balanced policy (predictor per_choice, idle.place shallow). While a sleeper
makes idle periods on CPU 1 and a spinner keeps CPU 3 busy, this samples the
pinned place_topo map's idle_exit_ns, the per-CPU input the placement
search ranks idle CPUs by, and checks what a user reading it with bpftool
would expect:

- every value is the exit latency of one of the file's states, in ns
  (POLL 0, C1 2 us, C1E 10 us, C6 133 us);
- CPU 1, idle between its sleeps, shows a state deeper than POLL;
- CPU 3 never idles, so it never shows one;
- after `ctl set idle.place=off`, nothing new is written: CPU 1, which
  wakes every 2 ms and is cleared at each exit, reads 0 from then on.

Polls with generous counts (TCG is slow), asserts no timing.
Usage: idle_place.py PIN_DIR SCHED"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from policy_maps import _Bpftool  # noqa: E402

PIN_DIR, SCHED = sys.argv[1], sys.argv[2]
SLEEPER_CPU, SPINNER_CPU = 1, 3
# docs/idle-states/intel-skylake-sp.txt's exit latencies, us -> ns.
FILE_EXIT_NS = {0, 2_000, 10_000, 133_000}
SAMPLES = 15
bpftool = _Bpftool()


def exit_ns() -> list:
    return bpftool.dump(f"{PIN_DIR}/place_topo")[0]["value"]["idle_exit_ns"]


def sample(n: int) -> list:
    out = []
    for _ in range(n):
        out.append(exit_ns())
        time.sleep(0.1)
    return out


sleeper = subprocess.Popen(
    ["taskset", "-c", str(SLEEPER_CPU), "python3", "-c",
     "import time\nwhile True: time.sleep(0.002)"])
# It says when it spins: before, its Python starts up, which waits on the
# file system with CPU 3 idle (a CI run sampled C6 there 1 s after the
# start, and 0 from the next sample on).
started = time.monotonic()
spinner = subprocess.Popen(
    ["taskset", "-c", str(SPINNER_CPU), "python3", "-c",
     "print('spinning', flush=True)\nwhile True: pass"],
    stdout=subprocess.PIPE, text=True)
failures = []
try:
    spinner.stdout.readline()
    print(f"the spinner spins {time.monotonic() - started:.2f} s after its start")
    time.sleep(1)
    shallow = sample(SAMPLES)
    nr_cpus = os.cpu_count()
    seen = sorted({v for s in shallow for v in s[:nr_cpus]})
    print(f"idle.place shallow: values seen {seen}; CPU {SLEEPER_CPU}: "
          f"{[s[SLEEPER_CPU] for s in shallow]}; CPU {SPINNER_CPU}: "
          f"{[s[SPINNER_CPU] for s in shallow]}")
    if not set(seen) <= FILE_EXIT_NS:
        failures.append(f"values {seen} are not all exit latencies of the file")
    if not any(s[SLEEPER_CPU] > 0 for s in shallow):
        failures.append(f"CPU {SLEEPER_CPU} never showed a state deeper than POLL")
    if any(s[SPINNER_CPU] for s in shallow):
        failures.append(f"busy CPU {SPINNER_CPU} showed an idle state")
    if any(v for s in shallow for v in s[nr_cpus:]):
        failures.append(f"a CPU beyond the {nr_cpus} present showed a state")

    subprocess.run([SCHED, "ctl", "set", "idle.place=off"], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    off = sample(SAMPLES)
    print(f"idle.place off: CPU {SLEEPER_CPU}: {[s[SLEEPER_CPU] for s in off]}")
    if any(s[SLEEPER_CPU] for s in off):
        failures.append(f"CPU {SLEEPER_CPU} still noted a state with idle.place off")
finally:
    sleeper.kill()
    spinner.kill()

for f in failures:
    print(f"FAIL: {f}")
sys.exit(1 if failures else 0)
