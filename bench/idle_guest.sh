#!/usr/bin/env bash
# Runs inside the idle bench VM (see bench/idle.sh). scx_cadence runs with
# the Intel state table from a file (the TCG guest has no cpuidle driver),
# and under each load:
#   1. record: `idle record` for SECONDS into $VM_OUT/LOAD.trace (and what
#      the scheduler scored live, LOAD.live.json);
#   2. learner: the same loads, not recorded, under the balanced policy
#      (predictor per_choice), a fresh scheduler; then the BPF cost per
#      callback of its programs;
#   3. off: the same under idle.predictor = off (the tracepoint returns at
#      once), for the cost of the tracepoint without the learner.
# 2 and 3 alternate for ROUNDS rounds, so that the host's noise falls on
# both alike. Costs go to $VM_OUT/bpf.csv as LABEL.ROUND,PROGRAM,
# RUN_TIME_NS,RUN_CNT.
#   idle_guest.sh SECONDS STATES_FILE ROUNDS
set -u
seconds=$1
states=$2
rounds=$3
bpf=$VM_OUT/bpf.csv
: >"$bpf"

# start_sched, stop_sched, fail, $SCHED, from the VM tests' helpers.
# shellcheck source=tests/vm/guest/lib.sh
. "$VM_ROOT/tests/vm/guest/lib.sh"

# The loads, as seed 003's (bench/idle_load.py says how each stands in):
# schbench-like wake-ups, hackbench (the guest's own rt-tests hackbench, as
# bench/run.sh runs it), "sleeping ebizzy"-like and pgbench-like.
LOADS="wakeup hackbench sleepy pingpong"

# load NAME SECONDS: runs one load for about SECONDS, in the foreground.
load() {
	local end=$((SECONDS + $2))
	case $1 in
	hackbench)
		# 2 groups of 20 senders and 20 receivers over sockets, in short
		# runs until the time is up (about a second each under TCG; the
		# last may run past the time by as much).
		while [ $SECONDS -lt $end ]; do
			hackbench -g 2 -l 50 >/dev/null || return 1
		done
		;;
	*) python3 "$VM_ROOT/bench/idle_load.py" "$1" "$2" ;;
	esac
}

sysctl -qw kernel.bpf_stats_enabled=1
status=0

# 1. record: the load starts a second before the recording and ends after.
start_sched "$VM_OUT/record.sched.log" --idle-states "$states" || exit 1
for l in $LOADS; do
	load "$l" $((seconds + 2)) &
	lpid=$!
	sleep 1
	"$SCHED" idle record --seconds "$seconds" --format json "$VM_OUT/$l.trace" \
		>"$VM_OUT/$l.live.json" || {
		fail "idle record under $l: $(cat "$VM_OUT/$l.live.json")"
		status=1
	}
	wait $lpid || {
		fail "the $l load failed"
		status=1
	}
	echo "recorded $l: $(wc -l <"$VM_OUT/$l.trace") lines" >&2
done
stop_sched || status=1

# 2. and 3.: the BPF cost of each program over the same loads.
for round in $(seq 1 "$rounds"); do
	for phase in learner off; do
		args=(--idle-states "$states")
		[ $phase = off ] && args+=(--set idle.predictor=off)
		start_sched "$VM_OUT/$phase.sched.log" "${args[@]}" || exit 1
		for l in $LOADS; do
			load "$l" "$seconds" || {
				fail "the $l load failed under $phase"
				status=1
			}
		done
		bpftool -j prog show | python3 "$VM_ROOT/bench/bpf_cost.py" "$phase.$round" >>"$bpf"
		stop_sched || status=1
		echo "costs under $phase, round $round: done" >&2
	done
done
echo "bench: done" >&2
exit $status
