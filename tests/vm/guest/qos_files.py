#!/usr/bin/env python3
"""Every CPU's PM QoS resume-latency limit, as the kernel shows it (issue 13,
item 4: the values scx_cadence replaces must come back on every exit).

    qos_files.py                         prints {"0": "0", "1": "n/a", ...}
    qos_files.py --expect-original FILE  compares with a JSON printed earlier;
                                         exits 1 naming every difference

Values are the raw text of /sys/devices/system/cpu/cpuN/power/
pm_qos_resume_latency_us, trimmed: "0" is no constraint, "n/a" a 0 us limit
(drivers/base/power/sysfs.c). A CPU without the file is left out, so a file
that appears or disappears is a difference too.
"""

import glob
import json
import os
import re
import sys

CPU_DIR = "/sys/devices/system/cpu"


def read_all() -> dict:
    out = {}
    for path in glob.glob(f"{CPU_DIR}/cpu*/power/pm_qos_resume_latency_us"):
        m = re.fullmatch(rf"{CPU_DIR}/cpu(\d+)/power/pm_qos_resume_latency_us", path)
        if m:
            with open(path) as f:
                out[m.group(1)] = f.read().strip()
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def main() -> int:
    args = sys.argv[1:]
    now = read_all()
    if not args:
        print(json.dumps(now))
        return 0
    if len(args) != 2 or args[0] != "--expect-original":
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[1]) as f:
        before = json.load(f)
    diffs = [
        f"cpu{cpu}: {before.get(cpu, '(no file)')!r} before, {now.get(cpu, '(no file)')!r} now"
        for cpu in sorted(set(before) | set(now), key=int)
        if before.get(cpu) != now.get(cpu)
    ]
    if diffs:
        print(
            f"pm_qos_resume_latency_us not restored ({os.path.basename(args[1])}): "
            + "; ".join(diffs)
        )
        return 1
    print(f"pm_qos_resume_latency_us: all {len(now)} CPUs as before")
    return 0


if __name__ == "__main__":
    sys.exit(main())
