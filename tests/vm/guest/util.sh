# shellcheck shell=bash
# VM test cases for frequency-invariant utilization (issue 4).
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# The VM has no APERF/MPERF and no cpufreq: the source is none, said in one
# line at start and per CPU in the stats, never a silent ratio of 1. A hog
# shows a util near 1024 in the pinned task view and in its CPU's stats.
case_util_source_none_and_views() {
	local log=$VM_OUT/util_none.sched.log
	start_sched "$log" || return 1
	grep -q "frequency source: none, utilization is NOT frequency-invariant" "$log" ||
		fail "no line naming the fallback source: $(grep -i 'frequency' "$log")" || return 1
	local pid
	pid=$(hog 2 0)
	sleep 3
	local util
	util=$(awk -v p="$pid" '$1 == p { print $3 }' "$PIN_DIR/tasks")
	echo "hog util_avg in $PIN_DIR/tasks: $util"
	"$SCHED" stats --format json >"$VM_OUT/util_none.json"
	local rc=$?
	kill "$pid"
	[ -n "$util" ] && [ "$util" -ge 900 ] || fail "a CPU hog's util is '$util', not near 1024" || return 1
	[ $rc -eq 0 ] || fail "stats failed" || return 1
	python3 - "$VM_OUT/util_none.json" <<'PY' || { fail "stats do not report the source and util"; return 1; }
import json, sys
m = json.load(open(sys.argv[1]))
srcs = {c["freq_source"] for c in m["cpu_util"].values()}
print("sources:", srcs, "cpu 2 util:", m["cpu_util"]["2"]["util_avg"], "freq_max_mhz:", m["freq_max_mhz"])
assert srcs == {"none"}, srcs
assert m["cpu_util"]["2"]["util_avg"] >= 700, m["cpu_util"]["2"]
assert m["freq_max_mhz"] == 0
PY
	"$SCHED" stats --format openmetrics | grep -q 'scx_cadence_freq_source_info{cpu="0",source="none"} 1' ||
		fail "OpenMetrics lacks the freq source" || return 1
	stop_sched
}

# Synthetic APERF/MPERF through the test-only inject source drive the real
# BPF formula and PELT clock: util follows the ratio, above freq_max clamps.
case_util_inject_follows_invariance() {
	local log=$VM_OUT/util_inject.sched.log
	start_sched "$log" --test-freq-inject 1000 --freq-max 1000 || return 1
	grep -q "frequency source: inject" "$log" || fail "inject source not reported" || return 1
	python3 "$GUEST/util_inject.py" "$PIN_DIR" "$SCHED" || fail "utilization did not follow the injected frequency" || return 1
	stop_sched
}

# A freq_max this machine cannot have is refused, naming what it can have;
# at start nothing attaches, at run time the policy in force stays.
case_util_bad_freq_max() {
	local out
	out=$("$SCHED" --freq-max 4c 2>&1) && fail "--freq-max 4c started without turbo ratios" && return 1
	echo "$out"
	echo "$out" | grep -q "freq_max \`4c\` is not available on this machine: the choices here are auto" ||
		fail "the refusal does not list the choices" || return 1
	out=$("$SCHED" --freq-max warp 2>&1) && fail "--freq-max warp was accepted" && return 1
	echo "$out" | grep -q "unknown freq_max \`warp\`: expected auto, 1c..255c" ||
		fail "an unknown freq_max does not list the valid ones: $out" || return 1
	[ "$(sched_state)" = disabled ] || fail "something attached" || return 1

	start_sched "$VM_OUT/util_bad.sched.log" --test-freq-inject 1000 || return 1
	out=$("$SCHED" ctl set freq.max=2c 2>&1) && fail "ctl set freq.max=2c was accepted" && return 1
	echo "$out"
	"$SCHED" ctl set freq.max=2000 || fail "ctl set freq.max=2000 was refused" || return 1
	local ratio
	ratio=$(bpftool map dump pinned "$PIN_DIR/policy" | python3 -c \
		'import json,sys; p=json.load(sys.stdin)[0]["value"]["policy"]; print(p["freq_max_ratio"], p["freq_max_mhz"])')
	[ "$ratio" = "2048 2000" ] || fail "policy map holds '$ratio', not '2048 2000'" || return 1
	"$SCHED" freq-max --list | tee "$VM_OUT/freq_list.txt"
	grep -q "In force: freq_max = 2000 " "$VM_OUT/freq_list.txt" ||
		fail "freq-max --list does not show the running choice" || return 1
	stop_sched
}
