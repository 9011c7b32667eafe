#!/usr/bin/env python3
"""What bench/hw/run.sh measures around each workload, from the machine's own
counters: energy from RAPL, average frequency, C-state residency and the
kernel's cpuidle above/below counts.

    meter.py sources               what this machine offers, one line each:
                                   "<measure>: <source>" or
                                   "<measure>: not measured: <why>"
    meter.py snap FILE             the counters now, as JSON, into FILE
    meter.py diff BEFORE AFTER SAMPLES PREFIX
                                   one "metric,value" line per measure over
                                   the interval (metric names start with
                                   PREFIX); SAMPLES is the frequency
                                   sampler's file (sample_freq), "-" if none
    meter.py sample_freq FILE      appends every CPU's current frequency,
                                   kHz, every 200 ms, until killed

Energy: the powercap sysfs zones of the intel_rapl driver (package and, where
the part has one, core), each counter read with its wrap
(max_energy_range_uj). Frequency: cpufreq's scaling_cur_freq, sampled (the
driver's idea of the current frequency; on intel_pstate the last
APERF/MPERF-based reading). C-states: each cpuidle state's time and usage,
above and below (Documentation/admin-guide/pm/cpuidle.rst), summed over the
CPUs; residency is a state's time over the interval times the CPUs.
"""
import glob
import json
import os
import re
import sys
import time

# METER_SYS: another sysfs root, a fake tree with known counters
# (tests/hw_meter.rs).
SYS = os.environ.get("METER_SYS", "/sys")
POWERCAP = os.path.join(SYS, "class/powercap")
CPU = os.path.join(SYS, "devices/system/cpu")
# How often sample_freq reads the frequencies: 5 times a second, little next
# to any workload here (each lasts seconds).
SAMPLE_S = 0.2


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def rapl_zones():
    """{label: zone dir} for the package zones and their core subzones."""
    zones = {}
    for z in sorted(glob.glob(os.path.join(POWERCAP, "intel-rapl:*"))):
        name = read(os.path.join(z, "name"), "")
        base = os.path.basename(z)
        if base.count(":") == 1 and name.startswith("package"):
            zones[f"pkg{base.split(':')[1]}"] = z
        elif name == "core":
            zones[f"core{base.split(':')[1]}"] = z
    return {k: v for k, v in zones.items() if read(os.path.join(v, "energy_uj")) is not None}


def cpus():
    return sorted(int(os.path.basename(d)[3:]) for d in glob.glob(os.path.join(CPU, "cpu[0-9]*")))


def idle_states(cpu):
    return sorted(glob.glob(os.path.join(CPU, f"cpu{cpu}", "cpuidle", "state[0-9]*")))


def sources():
    zones = rapl_zones()
    if zones:
        print("energy: RAPL through powercap: " + ", ".join(
            f"{k} ({read(os.path.join(v, 'name'))})" for k, v in zones.items()))
    elif os.path.isdir(POWERCAP):
        print("energy: not measured: no readable intel-rapl zone in /sys/class/powercap "
              "(no RAPL on this CPU or no intel_rapl driver; energy_uj is root-only)")
    else:
        print("energy: not measured: no /sys/class/powercap (a kernel without powercap)")
    if read(os.path.join(CPU, "cpu0", "cpufreq", "scaling_cur_freq")) is not None:
        print(f"frequency: cpufreq scaling_cur_freq, every {SAMPLE_S} s "
              f"(driver {read(os.path.join(CPU, 'cpu0', 'cpufreq', 'scaling_driver'))}, "
              f"governor {read(os.path.join(CPU, 'cpu0', 'cpufreq', 'scaling_governor'))})")
    else:
        print("frequency: not measured: no cpufreq driver (/sys/devices/system/cpu/cpu0/cpufreq)")
    states = idle_states(0)
    if states:
        names = [read(os.path.join(s, "name"), "?") for s in states]
        driver = read(os.path.join(CPU, "cpuidle", "current_driver"), "?")
        print(f"C-states: cpuidle time, usage, above, below of {', '.join(names)} (driver {driver})")
    else:
        print("C-states: not measured: no cpuidle states (/sys/devices/system/cpu/cpu0/cpuidle); "
              "the kernel idles without a cpuidle driver")


def snap(path):
    out = {"t": time.monotonic(), "energy": {}, "idle": {}}
    for label, z in rapl_zones().items():
        out["energy"][label] = [int(read(os.path.join(z, "energy_uj"))),
                                int(read(os.path.join(z, "max_energy_range_uj"), "0"))]
    for cpu in cpus():
        for s in idle_states(cpu):
            name = read(os.path.join(s, "name"), os.path.basename(s))
            got = out["idle"].setdefault(name, {"time_us": 0, "usage": 0, "above": 0, "below": 0})
            for key, f in (("time_us", "time"), ("usage", "usage"), ("above", "above"),
                           ("below", "below")):
                got[key] += int(read(os.path.join(s, f), "0"))
    with open(path, "w") as f:
        json.dump(out, f)


def diff(before_path, after_path, samples_path, prefix):
    with open(before_path) as f:
        a = json.load(f)
    with open(after_path) as f:
        b = json.load(f)
    seconds = b["t"] - a["t"]
    print(f"{prefix}_wall_s,{seconds:.3f}")
    for label, (e1, wrap) in b["energy"].items():
        e0 = a["energy"].get(label, [e1, wrap])[0]
        delta = e1 - e0 if e1 >= e0 else e1 + wrap - e0
        print(f"{prefix}_energy_{label}_j,{delta / 1e6:.3f}")
    ncpu = len(cpus())
    for name, got in b["idle"].items():
        was = a["idle"].get(name, got)
        share = 100.0 * (got["time_us"] - was["time_us"]) / (seconds * 1e6 * ncpu)
        print(f"{prefix}_residency_{re.sub(r'[^A-Za-z0-9]+', '_', name)}_pct,{share:.2f}")
    if b["idle"]:
        for key in ("above", "below", "usage"):
            n = sum(v[key] - a["idle"].get(k, v)[key] for k, v in b["idle"].items())
            print(f"{prefix}_idle_{key},{n}")
    if samples_path != "-" and os.path.exists(samples_path):
        khz = [float(x) for line in open(samples_path) for x in line.split()]
        if khz:
            print(f"{prefix}_avg_mhz,{sum(khz) / len(khz) / 1000:.0f}")


def sample_freq(path):
    files = [os.path.join(CPU, f"cpu{c}", "cpufreq", "scaling_cur_freq") for c in cpus()]
    files = [f for f in files if os.path.exists(f)]
    if not files:
        return
    while True:
        with open(path, "a") as out:
            out.write(" ".join(read(f, "0") for f in files) + "\n")
        time.sleep(SAMPLE_S)


def main(argv):
    if argv[1:2] == ["sources"]:
        sources()
    elif len(argv) == 3 and argv[1] == "snap":
        snap(argv[2])
    elif len(argv) == 6 and argv[1] == "diff":
        diff(*argv[2:6])
    elif len(argv) == 3 and argv[1] == "sample_freq":
        sample_freq(argv[2])
    else:
        sys.exit(__doc__)


main(sys.argv)
