# shellcheck shell=bash
# VM test cases for big-core-aware placement (issue 6), in a VM of 8 vCPUs
# as 2 cores x 4 threads (tests/vm/run.sh boots it with --smp 1,2,4).
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# How long each sample run lasts: the issue asks for at least 10 s.
PLACE_SECONDS=10

# spread_cases LABEL GROUPS: 2, 4 and 6 CPU-bound tasks; 2 and 4 must be
# spread evenly over GROUPS (cpulists joined by /) in at least 90% of the
# samples; 6 is recorded.
spread_cases() {
	local label=$1 smalls=$2 n rc=0
	for n in 2 4 6; do
		local want=0.9
		[ "$n" = 6 ] && want=""
		echo "$label, $n tasks:"
		# The sampler's exit status, not tee's, decides.
		python3 "$GUEST/place_sample.py" "$n" $PLACE_SECONDS "$smalls" $want >"$VM_OUT/place.sample" || rc=1
		tee -a "$VM_OUT/place.$label.jsonl" <"$VM_OUT/place.sample"
	done
	return $rc
}

# A topology file declares one POWER9-like big core: small cores with
# interleaved ids {0,2,4,6} and {1,3,5,7}, which are not QEMU's cores
# (0-3, 4-7). scx_cadence must spread over the declared small cores.
case_place_interleaved_small_cores() {
	local topo=$VM_OUT/power9.topo
	printf 'small 0,2,4,6\nsmall 1,3,5,7\nbig 0-7\nllc 0-7\n' >"$topo"
	"$SCHED" topology --topology "$topo" | tee "$VM_OUT/place.topology.txt"
	start_sched "$VM_OUT/place_p9.sched.log" --topology "$topo" || return 1
	grep -q "8 CPUs in 2 small cores, 1 big cores" "$VM_OUT/place_p9.sched.log" ||
		fail "the topology file was not used: $(head -n 3 "$VM_OUT/place_p9.sched.log")" || return 1
	local seq0 rc
	seq0=$(enable_seq)
	spread_cases interleaved "0,2,4,6/1,3,5,7"
	rc=$?
	"$SCHED" stats | tee "$VM_OUT/place_p9.stats.txt"
	[ $rc -eq 0 ] || fail "tasks were not spread over the small cores (see above)" || return 1
	[ "$(sched_state)" = enabled ] && [ "$(enable_seq)" = "$seq0" ] ||
		fail "the scheduler detached" || return 1
	stop_sched
}

# QEMU's own topology, read from sysfs: two SMT4 cores, 0-3 and 4-7. QEMU
# gives every thread its own L1, so each thread is a small core and each
# SMT4 core a big core; the tasks must spread over the big cores.
case_place_natural_topology() {
	"$SCHED" topology | tee "$VM_OUT/place.natural.txt"
	grep -q "big core 0: CPUs 0-3 (4 small cores)" "$VM_OUT/place.natural.txt" &&
		grep -q "big core 1: CPUs 4-7 (4 small cores)" "$VM_OUT/place.natural.txt" ||
		fail "sysfs does not give QEMU's SMT4 cores as big cores" || return 1
	start_sched "$VM_OUT/place_nat.sched.log" || return 1
	spread_cases natural "0-3/4-7" || fail "tasks were not spread over the cores (see above)" || return 1
	stop_sched
}

# churn_case NAME WHAT [SAMPLER_ARGS...]: four CPU-bound tasks on QEMU's
# SMT4 cores beside 30 forks a second, under a scheduler of its own
# (churn_run).
churn_case() {
	start_sched "$VM_OUT/place_$1.sched.log" || return 1
	churn_run "$@" || return 1
	stop_sched
}

# churn_run NAME WHAT [SAMPLER_ARGS...]: with the scheduler running, four
# CPU-bound tasks on QEMU's SMT4 cores beside 30 forks a second
# (place_sample.py --churn, with SAMPLER_ARGS), sampled for PLACE_SECONDS
# and on until the churn has forked CHURN_MIN_FORKS times; the tasks split
# 2 and 2 in at least 90% of the samples, at most MAX_MOVES (default 5)
# moves across small or big cores per PLACE_SECONDS of them (a longer
# window may hold as many more: with the host's two CPUs shared with 4
# busy loops, the pinned-sleepers case sampled 34.5 s for its 150 forks and
# saw 12 moves, 93% even). NAME names the output file, WHAT the failure.
# The fork count shows that the churn ran, at half the rate asked over
# PLACE_SECONDS: 150 short tasks beside the CPU-bound ones. It is a count
# while sampling, not a rate, because under TCG a fork and exec costs what
# the host gives, and a slow host now samples longer (place_sample.py's
# MIN_FORKS_CAP: at most 8x PLACE_SECONDS). The rate the sampler printed
# before was no floor: counted to the churners' own end, seconds after
# the samples (their Python took that long to start), it took in forks
# that caught up on a freed machine. It read 23.8-30.0 forks a second
# here and in CI, 17.4 in CI at 1870012 and 11.8 in CI at c74217b on a
# host about 3x slower than usual (a floor of 15 failed that run; the split
# held 100%).
CHURN_MIN_FORKS=$((15 * PLACE_SECONDS))
churn_run() {
	local what=$2 out=$VM_OUT/place.$1.json max_moves=${MAX_MOVES:-5}
	shift 2
	python3 "$GUEST/place_sample.py" 4 $PLACE_SECONDS "0-3/4-7" --churn 30 \
		--min-forks $CHURN_MIN_FORKS "$@" >"$out" || fail "the sampler failed" || return 1
	python3 - "$out" "$max_moves" "$CHURN_MIN_FORKS" "$PLACE_SECONDS" <<-'PY' || fail "$what (see above)" || return 1
		import json, sys
		d = json.load(open(sys.argv[1]))
		m = d["cadence_moves"]
		moves = m["small"] + m["big"]
		print(f"even {d['share']:.0%} of {d['samples']} samples {d['distributions']}, "
		      f"moves {moves} {m}, {d['migrations_per_s']} migrations/s, {d['forks_per_s']} forks/s, "
		      f"{d['window_forks']} forks in the {d['window_s']} s sampled")
		want = int(sys.argv[3])
		assert d["window_forks"] >= want, f"fewer than {want} forks while sampling"
		assert d["share"] >= 0.9, "split evenly in less than 90% of the samples"
		limit = int(int(sys.argv[2]) * max(1.0, d["window_s"] / int(sys.argv[4])))
		assert moves <= limit, f"moved across small or big cores more than {limit} times"
	PY
}

# Issue 15: CPU-bound tasks stay spread while short tasks come and go. Four
# CPU-bound tasks on QEMU's SMT4 cores, with short commands forked beside
# them 30 times a second from three shells (place_sample.py --churn): they
# must be split 2 and 2 in at least 90% of the samples, and scx_cadence's
# own counters (the `tasks` iterator) may see them move to another small or
# big core at most 5 times per 10 s of samples (churn_run). Measured
# before the hold counted only lasting load and kept a task preempted by
# the stopper or a short task on its CPU: 10-21 such moves per run, 55-89%
# of samples split evenly.
case_place_spread_holds_under_churn() {
	churn_case churn "the tasks did not stay spread"
}

# Issue 15's hold must also undo an uneven split while short tasks come
# and go: four CPU-bound tasks start pinned 3 and 1 on QEMU's SMT4 cores
# (CPUs 0, 1, 2 and 4) under the churn of the case above, and are let free
# 2 s before the sampling starts (place_sample.py's FROM_SETTLE_S). They
# must be split 2 and 2 in at least 90% of the samples, with at most 5
# moves across small or big cores per 10 s of them, as in the case above.
# Measured before a check of the hold searched again with the short tasks'
# CPUs counted idle: the churn's commands ran on the freer core's idle
# CPUs, the search then kept the task where it was, each such check ended
# the run of 8, and a 3/1 split stayed for the whole run (95% of CI's
# samples at 2d3c33c; here 100%, 0 moves).
case_place_split_undone_under_churn() {
	churn_case split "the split was not undone" --from 0,1,2,4
}

# The churn case with a periodic task pinned to each of the 8 CPUs (every
# 5 ms it runs 0.3 ms, as per-CPU agents and kworkers do): a CPU-bound task
# put back while such a task waits in its CPU's own queue must still hold
# its CPU. When waiting pinned tasks left it no room, it went to the LLC
# queue and to whichever CPU freed first: 11-29 moves in 10 s (5-11 across
# big cores), 5-83% of the samples even, in 4 runs at 5282ded; 31 and 23
# moves, 81% and 89% even, at 88f9304. Since then one CPU-bound task per
# CPU may hold it beside waiting tasks (place.bpf.h, hold_has_room()).
# At most 10 moves per 10 s, not the churn cases' 5: since then this case
# moved them 0-1 times in most runs, but 5 in CI at 313c713 and 7 (92%
# even) in CI at 992a044, mostly by the queue path, a cause not yet
# traced; 10 still fails every run of the bug above by its moves or its
# share.
case_place_spread_holds_beside_pinned_sleepers() {
	local cpu pids=() rc=0
	start_sched "$VM_OUT/place_pinned.sched.log" || return 1
	for cpu in 0 1 2 3 4 5 6 7; do
		taskset -c $cpu python3 "$GUEST/wake_sleeper.py" 100000 5 300 >/dev/null &
		pids+=($!)
	done
	MAX_MOVES=10 churn_run pinned "the tasks did not stay spread beside pinned sleepers" || rc=1
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	[ $rc -eq 0 ] || return 1
	stop_sched
}

# A topology file that names an unknown CPU, overlaps, or has a small core
# spanning two big cores is refused at start with its line; nothing attaches.
case_place_bad_topology_file() {
	local f=$VM_OUT/bad.topo out
	printf 'small 0,2,4,6\nsmall 1,3,5,7\nbig 0-3\nbig 4-7\n' >"$f"
	out=$("$SCHED" --topology "$f" 2>&1) && fail "a spanning small core was accepted" && return 1
	echo "$out"
	[[ $out == *"line 1: small 0,2,4,6 spans more than one big group (lines 3, 4)"* ]] ||
		fail "no line named: $out" || return 1
	printf 'small 0-8\n' >"$f"
	out=$("$SCHED" --topology "$f" 2>&1) && fail "CPU 8 was accepted" && return 1
	[[ $out == *"CPU 8 is not an online CPU of this machine"* ]] || fail "$out" || return 1
	[ "$(sched_state)" = disabled ] || fail "something attached" || return 1
}

# The move counters (issue 15). A CPU-bound task on CPU 0 is moved by its
# affinity to CPU 1 (another small core of big core 0-3: QEMU gives each
# thread its own L1) and then to CPU 4 (big core 4-7). Over that window
# scx_cadence's `tasks` iterator must count one more small and one more
# big move, charged to the paths that made them, as many as the kernel's
# own count of the task's migrations grew (se.nr_migrations in
# /proc/PID/sched; the task moved before the window too, when it was
# placed and pinned), and the stats' totals must hold them.
case_place_moves_are_counted() {
	local pid row0 row1 m0 m1 s0 b0 w0 r0 q0 s1 b1 w1 r1 q1
	start_sched "$VM_OUT/place_moves.sched.log" || return 1
	pid=$(hog 0 0)
	sleep 1
	m0=$(awk '/^se.nr_migrations/ { print $3 }' "/proc/$pid/sched")
	row0=$(awk -v p="$pid" '$1 == p' "$PIN_DIR/tasks")
	taskset -p -c 1 "$pid" >/dev/null
	sleep 1
	taskset -p -c 4 "$pid" >/dev/null
	sleep 1
	m1=$(awk '/^se.nr_migrations/ { print $3 }' "/proc/$pid/sched")
	row1=$(awk -v p="$pid" '$1 == p' "$PIN_DIR/tasks")
	kill "$pid"
	awk 'NR == 1' "$PIN_DIR/tasks"
	printf '%s\n%s\n' "$row0" "$row1"
	echo "kernel: se.nr_migrations $m0 -> $m1"
	# pid cpu util_avg util_est runnable_avg small big wake requeue queue comm
	read -r _ _ _ _ _ s0 b0 w0 r0 q0 _ <<<"$row0"
	read -r _ _ _ _ _ s1 b1 w1 r1 q1 _ <<<"$row1"
	[ $((s1 - s0)) -eq 1 ] && [ $((b1 - b0)) -eq 1 ] ||
		fail "moves: small +$((s1 - s0)) big +$((b1 - b0)), want +1 and +1" || return 1
	[ $((w1 + r1 + q1 - w0 - r0 - q0)) -eq 2 ] ||
		fail "moves by path +$((w1 + r1 + q1 - w0 - r0 - q0)), want +2" || return 1
	[ $((m1 - m0)) -eq 2 ] || fail "the kernel counted $((m1 - m0)) migrations, want 2" || return 1
	"$SCHED" stats --format json | python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]
print({k: t[k] for k in ("move_thread", "move_small", "move_big", "move_wake", "move_requeue", "move_queue")})
assert t["move_small"] >= 1 and t["move_big"] >= 1, "totals miss the moves"
assert t["move_wake"] + t["move_requeue"] + t["move_queue"] == t["move_small"] + t["move_big"], "paths do not add up"
' || fail "the stats totals (see above)" || return 1
	stop_sched
}

# pinned_beside_mover SECONDS: a nice-19 hog pinned to CPU 0, and a nice-0
# hog started on CPU 0 and then allowed every CPU; prints the CPU ticks the
# pinned hog got over SECONDS, from a second after the mover was let go.
pinned_beside_mover() {
	local pinned mover
	pinned=$(hog 0 19)
	mover=$(hog 0 0)
	sleep 1
	taskset -pc "0-$(($(nproc) - 1))" "$mover" >/dev/null
	sleep 1
	echo "mover runs on CPU $(awk '{ print $39 }' "/proc/$mover/stat")" >&2
	ticks_then_kill "$pinned" "$1" "$mover"
}

# A CPU-bound task that shares a CPU with a task pinned there moves to an
# idle CPU, as the fair class's load balancer moves it: a nice-19 hog
# pinned to CPU 0 gets at least 70% of the CPU time it gets under EEVDF in
# the same boot, with 7 CPUs idle beside it. When the unpinned hog stayed
# (issue 47), the pinned one got its weight's share, 15/1039 of CPU 0.
case_place_pinned_hog_keeps_its_cpu() {
	local seconds=15
	eevdf_then_ours "$VM_OUT/place_pinned_hog.sched.log" pinned_beside_mover $seconds || return 1
	echo "pinned nice-19 hog over $seconds s: $EEVDF_OUT ticks under EEVDF, $OURS_OUT under scx_cadence"
	ours_at_least 70 "the pinned hog" && end_attached "$OURS_SEQ"
}
