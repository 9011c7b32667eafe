#!/usr/bin/env bash
# Runs inside the VM (see bench/pipe_cost.sh). Each round, each scheduler in
# turn (the order rotated) runs one `perf bench sched pipe -l 20000`; the
# programs' run_time_ns and run_cnt are read before and after it
# (bench/bpf_cost.py). One CSV line per program that ran, and one for the
# run itself, to $VM_OUT/pipe.csv:
#   round,scheduler,program,run_time_ns,run_cnt,seconds,switches,round_trips
#   pipe_guest.sh ROUNDS SCHED_NAME=COMMAND...   ("eevdf" needs no command)
set -u
rounds=$1
shift
scheds=("$@")
csv=$VM_OUT/pipe.csv
: >"$csv"
# shellcheck source=tests/vm/guest/lib.sh
. "$VM_ROOT/tests/vm/guest/lib.sh"

# The round trips of one run.
LOOPS=20000

# programs FILE: each program's counters now, as bench/bpf_cost.py prints them.
programs() {
	bpftool -j prog show | python3 "$VM_ROOT/bench/bpf_cost.py" x >"$1"
}

switches() {
	awk '/^ctxt/ { print $2 }' /proc/stat
}

# pipe_run: one run under $name in $round, its programs' counters around it.
pipe_run() {
	local s0 s1 t
	programs "$VM_OUT/before"
	s0=$(switches)
	t=$(perf bench -f simple sched pipe -l $LOOPS 2>/dev/null | awk 'NF { v = $1 } END { print v }')
	s1=$(switches)
	programs "$VM_OUT/after"
	python3 "$VM_ROOT/bench/pipe_cost.py" --delta "$VM_OUT/before" "$VM_OUT/after" |
		sed "s/^/$round,$name,/; s/\$/,$t,$((s1 - s0)),$LOOPS/" >>"$csv"
}

sysctl -qw kernel.bpf_stats_enabled=1
bench_rounds "$rounds" pipe_run "${scheds[@]}"
echo "pipe_cost: done" >&2
