#!/usr/bin/env bash
# Runs inside the benchmark VM (see bench/run.sh). For each round, every
# scheduler in turn (the order rotates each round, so no scheduler always runs
# first or last) runs the same workloads; one CSV line per measurement goes to
# $VM_OUT/raw.csv:  round,scheduler,metric,value
#   guest.sh ROUNDS [--latency] SCHED_NAME=COMMAND...   ("eevdf" needs no command)
# --latency: only the cyclictest runs beside each load, each with the
# wake-to-run delays of its threads (bench/wakeup.sh).
set -u
rounds=$1
shift
latency_only=""
if [ "${1:-}" = --latency ]; then
	latency_only=1
	shift
fi
scheds=("$@")
# scx_wakelat (bench/wakelat), built by bench/lib.sh's build_wakelat.
WAKELAT=$VM_ROOT/target/release/scx_wakelat
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

# cg_workloads on|off: with "on", this shell, and so every workload it
# starts, moves into a cgroup two levels below the root (bench/work, cpu
# controller on, weights at their default), as a service under systemd's
# slices runs; with "off", back to the root. The scheduler started before
# stays in the root.
CG_BENCH=/sys/fs/cgroup/bench
cg_workloads() {
	if [ "$1" = on ]; then
		mkdir -p "$CG_BENCH/work"
		echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
		echo +cpu >"$CG_BENCH/cgroup.subtree_control"
		echo $$ >"$CG_BENCH/work/cgroup.procs"
	else
		echo $$ >/sys/fs/cgroup/cgroup.procs
	fi
}

# threads PID: how many threads PID has (0 once it has exited).
threads() {
	local tasks=("/proc/$1/task/"*)
	if [ -e "${tasks[0]}" ]; then echo "${#tasks[@]}"; else echo 0; fi
}

# beside PREFIX COMMAND...: cyclictest, one thread per CPU, every 1 ms for
# 8 s, while COMMAND runs as a load; its histogram read by cyclic_hist.py
# records PREFIX_{avg,max,p50,p99,p999}_us. The histogram spans 20 ms: a
# wake-up later than that counts as 20 ms. Beside it, scx_wakelat times
# each wake-up of a cyclictest thread from the kernel's sched_waking to the
# switch that runs it: PREFIX_wake_{p50,p99,p999,max}_us, the scheduler's
# part of the wait without the timer's late delivery under TCG (the main
# thread's few wake-ups are among them).
#
# cyclictest starts first, and the load once cyclictest's measuring
# threads exist; the load runs until cyclictest exits, then is stopped
# (timeout forwards SIGTERM to its process group; 120 s bounds it if
# cyclictest never ends). Started the other way round, beside hackbench,
# cyclictest's measuring threads under EEVDF (and scx_floor, in the one
# run traced) first ran when hackbench ended (beside 60 s and 120 s
# loads cyclictest ended only after them), so the fixed 11 s load used
# until then left them a mostly idle machine (docs/benchmarks.md, "What
# cyclictest beside steady hackbench measured"). The load's own start
# (hackbench forks 80 tasks) falls in the first moments of the 8 s.
beside() {
	local prefix=$1 cyc load avg max p50 p99 p999 deadline=$((SECONDS + 60)) tracer="" _k n
	shift
	if [ -x "$WAKELAT" ]; then
		"$WAKELAT" cyclictest >"$VM_OUT/wakelat.out" 2>"$VM_OUT/wakelat.err" &
		tracer=$!
		# It follows wake-ups once its programs are attached.
		while ! grep -q following "$VM_OUT/wakelat.err" && kill -0 "$tracer" 2>/dev/null; do sleep 0.1; done
	fi
	cyclictest --policy=other -t "$nproc" -i 1000 -D 8 -q -m -h 20000 >"$VM_OUT/cyc.raw" 2>/dev/null &
	cyc=$!
	# Its main thread and nproc measuring threads, within 60 s.
	while [ "$(threads "$cyc")" -le "$nproc" ] && [ $SECONDS -lt $deadline ] && kill -0 "$cyc" 2>/dev/null; do
		sleep 0.1
	done
	timeout 120 "$@" >/dev/null 2>&1 &
	load=$!
	wait "$cyc"
	kill -0 "$load" 2>/dev/null ||
		echo "round $round: $name: the load of $prefix ended before cyclictest did" >&2
	kill -TERM "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	if [ -n "$tracer" ]; then
		kill -TERM "$tracer"
		wait "$tracer"
		# n N p50_us A p99_us B p999_us C max_us D lost L
		read -r _k n _k p50 _k p99 _k p999 _k max _k _ <"$VM_OUT/wakelat.out" && [ "$n" -gt 0 ] && {
			record "${prefix}_wake_n" "$n"
			record "${prefix}_wake_p50_us" "$p50"
			record "${prefix}_wake_p99_us" "$p99"
			record "${prefix}_wake_p999_us" "$p999"
			record "${prefix}_wake_max_us" "$max"
		}
	fi
	python3 "$VM_ROOT/bench/cyclic_hist.py" <"$VM_OUT/cyc.raw" >"$VM_OUT/cyc"
	read -r avg max p50 p99 p999 <"$VM_OUT/cyc" || return 0
	record "${prefix}_avg_us" "$avg"
	record "${prefix}_max_us" "$max"
	record "${prefix}_p50_us" "$p50"
	record "${prefix}_p99_us" "$p99"
	record "${prefix}_p999_us" "$p999"
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
		case $name in
		scx_cadence | scx_cadence_again | scx_cadence_cg | scx_cadence_nolat | scx_cadence_timer)
			cmd="$cmd --idle-states $VM_ROOT/docs/idle-states/intel-skylake-sp.txt"
			;;
		esac
		# The same binary with issue 14's wake-up preemption, sync
		# wake-ups and slice timer off, so the table shows what they
		# change in one boot.
		[ "$name" = scx_cadence_nolat ] &&
			cmd="$cmd --set latency.wakeup_preempt=false --set latency.sync_wakeup=false --set latency.slice_timer_us=0"
		# ... and with the slice timer on, which every preset leaves off.
		[ "$name" = scx_cadence_timer ] &&
			cmd="$cmd --set latency.slice_timer_us=500"
		pid=""
		if [ "$name" != eevdf ]; then
			# shellcheck disable=SC2086 # a command line, split on spaces
			bench_attach "$VM_OUT/$name.$round.log" "$name in round $round" $cmd || continue
			pid=$BENCH_PID
		fi
		echo "round $round: $name" >&2
		# ..._cg: every workload in a cgroup (cg_workloads()), so that the
		# BPF cost per callback includes the cgroup weights' walk.
		case $name in *_cg) cg_workloads on ;; esac

		if [ -z "$latency_only" ]; then
			# hackbench: 4 groups of 20 senders and 20 receivers over
			# sockets, 200 messages each; seconds, lower is better.
			t=$(hackbench -g 4 -l 200 | awk '/^Time:/ { print $2 }')
			record hackbench_s "$t"

			# perf bench sched pipe: two tasks ping-ponging through
			# pipes; microseconds per round trip, lower is better.
			t=$(perf bench -f simple sched pipe -l 20000 2>/dev/null | awk 'NF { v = $1 } END { print v }')
			record pipe_s "$t"
		fi

		# cyclictest at normal priority (SCHED_OTHER, so sched_ext schedules
		# it): wake-up latency in microseconds, with every CPU busy ...
		beside cyclictest stress-ng --cpu "$nproc"
		# ... and while hackbench runs, back to back (short sleepers and
		# wakers competing with it, not only CPU hogs).
		beside cyclictest_hackbench bash -c 'while :; do hackbench -g 2 -l 100; done'
		# ... and beside one steady hackbench run that outlasts it (no
		# restarts, in whose start and end EEVDF has long waits too): 80
		# tasks passing messages for the whole measurement (a loop count
		# no scheduler here finishes in 120 s).
		beside cyclictest_hackbench_steady hackbench -g 2 -l 10000000
		# ... and beside a pipe ping-pong pair that outlasts it (two tasks
		# waking each other, which sleep often but briefly).
		[ -z "$latency_only" ] || beside cyclictest_pipe perf bench sched pipe -l 1000000000

		case $name in *_cg) cg_workloads off ;; esac
		if [ -n "$pid" ]; then
			bpf_cost
			bench_detach "$name in round $round" "$round" "$name"
		fi
	done
done
echo "bench: done" >&2
