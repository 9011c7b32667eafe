#!/usr/bin/env bash
# Runs inside the benchmark VM (see bench/run.sh). For each round, every
# scheduler in turn (the order rotates each round, so no scheduler always runs
# first or last) runs the same workloads; one CSV line per measurement goes to
# $VM_OUT/raw.csv:  round,scheduler,metric,value
#   guest.sh ROUNDS SCHED_NAME=COMMAND...   ("eevdf" needs no command)
set -u
rounds=$1
shift
scheds=("$@")
raw=$VM_OUT/raw.csv
bpf=$VM_OUT/bpf.csv
: >"$raw"
: >"$bpf"
nproc=$(nproc)

# wait_state STATE SECONDS, from the VM tests' helpers.
# shellcheck source=tests/vm/guest/lib.sh
. "$VM_ROOT/tests/vm/guest/lib.sh"
record() { echo "$round,$name,$1,$2" >>"$raw"; }

# Per-callback BPF cost of the attached scheduler: run_time_ns and run_cnt of
# each struct_ops program and of the tracing programs beside them (the idle
# learner's tp_btf/cpu_idle); kernel.bpf_stats_enabled=1 makes the kernel count.
bpf_cost() {
	bpftool -j prog show | python3 "$VM_ROOT/bench/bpf_cost.py" "$name" >>"$bpf"
}

sysctl -qw kernel.bpf_stats_enabled=1
for round in $(seq "$rounds"); do
	n=${#scheds[@]}
	for i in $(seq 0 $((n - 1))); do
		spec=${scheds[$(((i + round) % n))]}
		name=${spec%%=*}
		cmd=${spec#*=}
		# The guest has no cpuidle driver: the Intel table from a file turns
		# the idle learner (tp_btf/cpu_idle) on, as cpuidle would, so its
		# cost is in the table beside update_idle's. (Here, not in run.sh:
		# boot.sh hands the guest its command as one line, split on spaces.)
		[ "$name" = scx_cadence ] && cmd="$cmd --idle-states $VM_ROOT/docs/idle-states/intel-skylake-sp.txt"
		pid=""
		if [ "$name" != eevdf ]; then
			$cmd >"$VM_OUT/$name.$round.log" 2>&1 &
			pid=$!
			wait_state enabled 20 || {
				echo "$name did not attach in round $round" >&2
				kill -9 $pid
				continue
			}
		fi
		echo "round $round: $name" >&2

		# hackbench: 4 groups of 20 senders and 20 receivers over sockets,
		# 200 messages each; seconds, lower is better.
		t=$(hackbench -g 4 -l 200 | awk '/^Time:/ { print $2 }')
		record hackbench_s "$t"

		# perf bench sched pipe: two tasks ping-ponging through pipes;
		# microseconds per round trip, lower is better.
		t=$(perf bench -f simple sched pipe -l 20000 2>/dev/null | awk 'NF { v = $1 } END { print v }')
		record pipe_s "$t"

		# cyclictest at normal priority (SCHED_OTHER, so sched_ext schedules
		# it) with every CPU busy: wake-up latency in microseconds.
		stress-ng --cpu "$nproc" --timeout 12s >/dev/null 2>&1 &
		load=$!
		sleep 1
		cyclictest --policy=other -t "$nproc" -i 1000 -D 8 -q -m 2>/dev/null |
			awk '/Avg:/ { for (i = 1; i <= NF; i++) { if ($i == "Avg:") s += $(i + 1); if ($i == "Max:" && $(i + 1) > m) m = $(i + 1) } n++ }
			     END { if (n) printf "%.1f %d\n", s / n, m }' >"$VM_OUT/cyc"
		wait $load
		read -r avg max <"$VM_OUT/cyc"
		record cyclictest_avg_us "$avg"
		record cyclictest_max_us "$max"

		if [ -n "$pid" ]; then
			bpf_cost
			kill -INT $pid
			wait $pid
			wait_state disabled 20 || echo "$name did not detach in round $round" >&2
		fi
	done
done
echo "bench: done" >&2
