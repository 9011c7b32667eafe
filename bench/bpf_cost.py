#!/usr/bin/env python3
"""Reads `bpftool -j prog show` on stdin and prints, per program that ran,
one CSV line LABEL,NAME,RUN_TIME_NS,RUN_CNT (kernel.bpf_stats_enabled=1
makes the kernel count): the struct_ops callbacks and the tracing programs
loaded beside them (scx_cadence's tp_btf/cpu_idle, the idle learner).

    bpftool -j prog show | bpf_cost.py LABEL
"""

import json
import sys

TYPES = ("struct_ops", "tracing")

for p in json.load(sys.stdin):
    if p.get("type") in TYPES and p.get("run_cnt"):
        print("%s,%s,%d,%d" % (sys.argv[1], p["name"], p["run_time_ns"], p["run_cnt"]))
