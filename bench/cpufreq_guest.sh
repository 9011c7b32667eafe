#!/usr/bin/env bash
# Runs inside the cpufreq bench VM (see bench/cpufreq.sh). For each round,
# scx_cadence runs the same sleep/wake-heavy workload under each policy in
# turn (order rotated per round), with the same injected frequency model,
# and the growth of its cpufreq counters goes to $VM_OUT/cpufreq.csv:
#   round,policy,seconds,issued,deadband,hysteresis,hold,rate
#   cpufreq_guest.sh ROUNDS SCHED NAME=KEY=VALUE,KEY=VALUE...
set -u
rounds=$1 sched=$2
shift 2
policies=("$@")
csv=$VM_OUT/cpufreq.csv
pin=/sys/fs/bpf/scx_cadence
: >"$csv"

# wait_state STATE SECONDS, from the VM tests' helpers.
# shellcheck source=tests/vm/guest/lib.sh
. "$VM_ROOT/tests/vm/guest/lib.sh"

# The cumulative cpufreq counters of the running scx_cadence, summed over CPUs.
counters() {
	"$sched" stats --format json | python3 -c '
import json, sys
p = json.load(sys.stdin)["cpufreq"]
print(p["cpufreq_issued"], p["cpufreq_supp_deadband"], p["cpufreq_supp_hysteresis"],
      p["cpufreq_supp_hold"], p["cpufreq_supp_rate"])'
}

# freq_max 1000 MHz over an MPERF rate of 1000 MHz; fmin 400 MHz for the
# floor (the VM has no cpufreq to say it).
for round in $(seq "$rounds"); do
	n=${#policies[@]}
	for i in $(seq 0 $((n - 1))); do
		spec=${policies[$(((i + round) % n))]}
		name=${spec%%=*}
		sets=()
		IFS=, read -ra assignments <<<"${spec#*=}"
		for a in "${assignments[@]}"; do sets+=(--set "$a"); done
		bench_attach "$VM_OUT/$name.$round.log" "$name in round $round" "$sched" \
			--test-freq-inject 1000 --freq-max 1000 --set cpufreq.min_mhz=400 "${sets[@]}" ||
			continue
		python3 "$VM_ROOT/bench/freq_model.py" $pin &
		model=$!
		sleep 1
		read -r i0 d0 h0 o0 r0 < <(counters)
		t0=$(date +%s.%N)
		# Sleep/wake heavy: hackbench's socket ping-pong, then tasks that
		# sleep 1 ms at a time (stress-ng's sleep stressor), on every CPU.
		hackbench -g 2 -l 300 >/dev/null
		stress-ng --sleep 4 --sleep-max 64 --timeout 5s >/dev/null 2>&1
		t1=$(date +%s.%N)
		read -r i1 d1 h1 o1 r1 < <(counters)
		echo "$round,$name,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'),$((i1 - i0)),$((d1 - d0)),$((h1 - h0)),$((o1 - o0)),$((r1 - r0))" >>"$csv"
		echo "round $round: $name: $((i1 - i0)) requests" >&2
		kill $model
		bench_detach "$name in round $round" "$round" "$name"
	done
done
echo "bench: done" >&2
