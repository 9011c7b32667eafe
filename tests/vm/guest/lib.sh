# shellcheck shell=bash
# Helpers for the test cases that run inside the VM (sourced, not executed).
# Expects VM_ROOT and VM_OUT from boot.sh.

SCHED=${SCHED:-$VM_ROOT/target/release/scx_cadence}
SCX=/sys/kernel/sched_ext
# Where scx_cadence pins its maps (its --pin-dir default).
PIN_DIR=/sys/fs/bpf/scx_cadence
# shellcheck disable=SC2034 # used by the case files sourced after this one
GUEST=$VM_ROOT/tests/vm/guest

sched_state() { cat $SCX/state; }
enable_seq() { cat $SCX/enable_seq; }

# wait_state STATE SECONDS: poll until sched_ext is in STATE.
wait_state() {
	local want=$1 deadline=$((SECONDS + $2))
	while [ $SECONDS -lt "$deadline" ]; do
		[ "$(sched_state)" = "$want" ] && return 0
		sleep 0.2
	done
	[ "$(sched_state)" = "$want" ]
}

# fail MSG: report why the current case failed (the runner prints it).
fail() {
	echo "FAIL: $*"
	return 1
}

# How long one load and attach of the scheduler may take, s: a bound for
# liveness, not for speed. Loading with --idle-states takes 17-21 s under
# TCG, most of it in the verifier (bench/out/attach1, e137558 and e302d8c
# alike); 30 s was once too little in CI. A load without it took 6.5-7.1 s
# on a quiet host and 17-20 s when the host ran about 3x slower (the
# fresh-clone CI at c74217b, where the hotplug cases' 20 s bound passed by
# 0.2 s and their 30 s one for two loads failed). 60 s leaves room.
ATTACH_BOUND_S=60

# start_sched LOG [ARGS...]: start scx_cadence in the background, logging to
# LOG, and wait until the kernel reports it enabled. Sets SCHED_PID.
start_sched() {
	local log=$1
	shift
	"$SCHED" "$@" >"$log" 2>&1 &
	SCHED_PID=$!
	if ! wait_state enabled "$ATTACH_BOUND_S"; then
		fail "scx_cadence did not attach within $ATTACH_BOUND_S s: $(tail -n 3 "$log" | tr '\n' ' ')"
		return 1
	fi
	case $(cat $SCX/root/ops) in
	scx_cadence*) ;;
	*) fail "root/ops is '$(cat $SCX/root/ops)', not scx_cadence" && return 1 ;;
	esac
}

# stop_sched: SIGINT and wait; returns the loader's exit code.
stop_sched() {
	kill -INT "$SCHED_PID" 2>/dev/null
	wait "$SCHED_PID"
}

# nap SECONDS: sleep without starting a process. Under TCG with every vCPU
# busy, each fork and exec of a small tool (sleep, grep) took 0.35-0.85 s
# in the guest, under EEVDF and scx_cadence alike (20 of each, measured),
# so a loop that runs one per step spends its time there, not in the step.
# read -t on a FIFO that nobody writes times out after SECONDS; the FIFO is
# opened once per shell, read-write so that the open does not block.
nap() {
	if [ -z "${NAP_FD:-}" ]; then
		local fifo
		fifo=$(mktemp -u)
		mkfifo "$fifo"
		exec {NAP_FD}<>"$fifo"
		rm -f "$fifo"
	fi
	read -r -t "$1" -u "$NAP_FD" _ || true
}

# cpu_ticks PID: user + system time of PID, in clock ticks (/proc/PID/stat).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# ticks_during PID SECONDS: the CPU ticks PID gets over the next SECONDS.
ticks_during() {
	local t0
	t0=$(cpu_ticks "$1")
	sleep "$2"
	echo $(($(cpu_ticks "$1") - t0))
}

# eevdf_then_ours LOG CMD...: runs CMD under EEVDF, then starts
# scx_cadence (its output in LOG) and runs CMD again, for a case that holds
# scx_cadence to what the kernel's default gives in the same boot. Sets
# EEVDF_OUT and OURS_OUT to CMD's two outputs, and OURS_SEQ to the attach
# sequence for end_attached().
# shellcheck disable=SC2034 # the three are read by the cases
eevdf_then_ours() {
	local log=$1
	shift
	EEVDF_OUT=$("$@")
	start_sched "$log" || return 1
	OURS_SEQ=$(enable_seq)
	OURS_OUT=$("$@")
}

# ours_at_least PCT WHAT: after eevdf_then_ours(), scx_cadence's count is
# at least PCT% of EEVDF's; else the case fails, naming WHAT got it.
ours_at_least() {
	[ $((OURS_OUT * 100)) -ge $((EEVDF_OUT * $1)) ] ||
		fail "$2 got $OURS_OUT ticks, under $1% of EEVDF's $EEVDF_OUT" || return 1
}

# ticks_then_kill PID SECONDS PID...: the CPU ticks PID gets over the next
# SECONDS; then PID and the other PIDs are killed.
ticks_then_kill() {
	local pid=$1 seconds=$2 ticks
	shift 2
	ticks=$(ticks_during "$pid" "$seconds")
	kill "$pid" "$@"
	echo "$ticks"
}

# How long a bench run waits for a scheduler to attach: scx_lavd's
# verification takes longer than 20 s under single-thread TCG.
BENCH_ATTACH_S=120

# bench_attach LOG WHAT CMD...: starts the scheduler CMD for a bench run,
# its output in LOG, and waits for it to attach; sets BENCH_PID, BENCH_LOG
# and BENCH_SEQ (its enable_seq). If it does not attach, it is killed,
# WHAT (the scheduler and round) is named on stderr, and bench_attach fails.
bench_attach() {
	local log=$1 what=$2
	shift 2
	"$@" >"$log" 2>&1 &
	BENCH_PID=$!
	BENCH_LOG=$log
	if wait_state enabled "$BENCH_ATTACH_S"; then
		BENCH_SEQ=$(enable_seq)
		return 0
	fi
	echo "$what did not attach" >&2
	kill -9 "$BENCH_PID"
	return 1
}

# bench_detach WHAT ROUND NAME: stops the scheduler bench_attach() started
# and waits for the kernel to detach it. If the kernel had ejected it
# before (a stall, an error: the runs went on under EEVDF), says so on
# stderr and adds "ROUND,NAME,why" to $VM_OUT/ejected.csv, whose runs the
# summaries leave out (bench/ejected.py).
bench_detach() {
	local why=""
	if [ "$(sched_state)" != enabled ] || [ "$(enable_seq)" != "$BENCH_SEQ" ] ||
		! kill -0 "$BENCH_PID" 2>/dev/null; then
		why=$(grep -a -m1 -E 'EXIT: |Error: ' "$BENCH_LOG" | tr -d ',\r')
		why=${why:-no reason in its log}
	fi
	kill -INT "$BENCH_PID" 2>/dev/null
	wait "$BENCH_PID"
	wait_state disabled 20 || echo "$1 did not detach" >&2
	if [ -n "$why" ]; then
		echo "$1: the kernel ejected it during its runs: $why" >&2
		echo "$2,$3,$why" >>"$VM_OUT/ejected.csv"
	fi
	return 0
}

# bench_rounds ROUNDS BODY SCHED_NAME=COMMAND...: ROUNDS rounds in which
# every scheduler in turn, in an order rotated each round so that none
# always runs first or last, is attached (bench_attach; "eevdf" is the
# kernel's own, no command; this tree's scx_cadence gets the Intel idle
# table, as cpuidle would give the learner one), and BODY runs with
# $round and $name set; then it is detached. One that does not attach is
# skipped.
bench_rounds() {
	local rounds=$1 body=$2 n i spec cmd pid
	shift 2
	n=$#
	for round in $(seq "$rounds"); do
		for i in $(seq 0 $((n - 1))); do
			spec=${*:$(((i + round) % n + 1)):1}
			name=${spec%%=*}
			cmd=${spec#*=}
			[ "$name" = scx_cadence ] &&
				cmd="$cmd --idle-states $VM_ROOT/docs/idle-states/intel-skylake-sp.txt"
			pid=""
			if [ "$name" != eevdf ]; then
				# shellcheck disable=SC2086 # a command line, split on spaces
				bench_attach "$VM_OUT/$name.$round.log" "$name in round $round" $cmd || continue
				pid=$BENCH_PID
			fi
			echo "round $round: $name" >&2
			"$body"
			[ -z "$pid" ] || bench_detach "$name in round $round" "$round" "$name"
		done
	done
}

# kernel_complaints: lines of dmesg that mean the kernel was unhappy, since
# the case began (run.sh logs "$CASE_MARK NAME" first; a case run without
# run.sh reads all of dmesg). One stall is then one failed case, not every
# case after it.
kernel_complaints() {
	dmesg | awk -v mark="${CASE_MARK:-}" 'mark != "" && index($0, mark) { n = 0; next } { line[n++] = $0 }
		END { for (i = 0; i < n; i++) print line[i] }' | grep -E 'stall|BUG:|WARNING:' || true
}

# attached_throughout SEQ0: still attached, never re-enabled since SEQ0, the
# loader alive, and nothing in dmesg: every scx_bpf_cpuperf_set() was
# accepted (an invalid one ends the scheduler).
attached_throughout() {
	[ "$(sched_state)" = enabled ] && [ "$(enable_seq)" = "$1" ] ||
		fail "the scheduler detached" || return 1
	kill -0 "$SCHED_PID" || fail "the loader exited" || return 1
	local bad
	bad=$(kernel_complaints)
	[ -z "$bad" ] || fail "dmesg: $(echo "$bad" | head -n 3)" || return 1
}

# end_attached SEQ0: the scheduler is still the one attached at SEQ0
# (enable_seq) and the kernel logged no stall, BUG or WARNING; then stop it.
end_attached() {
	[ "$(sched_state)" = enabled ] && [ "$(enable_seq)" = "$1" ] ||
		fail "the scheduler did not stay attached" || return 1
	local bad
	bad=$(kernel_complaints)
	[ -z "$bad" ] || fail "dmesg: $(echo "$bad" | head -n 3)" || return 1
	stop_sched
}

# hog CPU NICE: a busy loop pinned to CPU at NICE, in the background; prints its PID.
hog() {
	nice -n "$2" taskset -c "$1" sh -c 'while :; do :; done' >/dev/null 2>&1 &
	echo $!
}

# bpf_generation: the generation in the pinned policy_state map.
bpf_generation() {
	bpftool map dump pinned $PIN_DIR/policy_state | python3 -c \
		'import json,sys; print(json.load(sys.stdin)[0]["value"]["generation"])'
}

# expect_refused WHAT MESSAGE CMD...: CMD exits 1 with one line containing
# MESSAGE, and the BPF policy generation does not move.
expect_refused() {
	local what=$1 want=$2 gen out rc
	shift 2
	gen=$(bpf_generation)
	out=$("$@" 2>&1)
	rc=$?
	echo "$what: rc=$rc $out"
	[ $rc -eq 1 ] || fail "$what: exit code $rc, want 1" || return 1
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$what: expected one line, got: $out" || return 1
	[[ $out == *"$want"* ]] || fail "$what: '$out' does not say '$want'" || return 1
	[ "$(bpf_generation)" = "$gen" ] || fail "$what: the BPF policy changed" || return 1
}

# nice_pair_ratio CPU: hogs at nice 0 and nice 5 pinned to CPU share it in
# the kernel's weight ratio 1024/335 = 3.057, within 10%, over 20 s of CPU
# ticks; prints the verdict.
nice_pair_ratio() {
	local a b a0 b0 a1 b1 verdict
	a=$(hog "$1" 0)
	b=$(hog "$1" 5)
	sleep 2
	a0=$(cpu_ticks "$a") b0=$(cpu_ticks "$b")
	sleep 20
	a1=$(cpu_ticks "$a") b1=$(cpu_ticks "$b")
	kill "$a" "$b"
	verdict=$(awk -v a=$((a1 - a0)) -v b=$((b1 - b0)) 'BEGIN {
		want = 1024 / 335
		if (b <= 0) { print "FAIL nice-5 hog got no CPU time"; exit }
		r = a / b
		printf "%s ratio %.3f (nice0 %d ticks, nice5 %d ticks), want %.3f +-10%%\n",
			(r > want * 0.9 && r < want * 1.1) ? "ok" : "FAIL", r, a, b, want
	}')
	echo "$verdict"
	case $verdict in ok*) ;; *) return 1 ;; esac
}
