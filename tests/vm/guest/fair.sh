# shellcheck shell=bash
# VM test cases for fairness across queues (issue 11, item 1): tasks in a
# queue that does not move the vtime frontier (a CPU's own queue of pinned
# tasks, a second LLC) must not fall behind it. Needs 4 vCPUs.
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# Longest a short task may wait after a wake-up. Far above the few slices it
# should wait (3 ms each in the balanced policy, plus a 4 ms tick of overrun,
# plus TCG noise), and far below what a stale frontier costs it: the time it
# slept, up to 30 s here.
FAIR_MAX_WAIT_MS=1000

# attached_since SEQ: the scheduler is still enabled, never re-attached.
attached_since() {
	[ "$(sched_state)" = enabled ] && [ "$(enable_seq)" = "$1" ] &&
		kill -0 "$SCHED_PID" 2>/dev/null
}

# Two hogs pinned to CPU 0 next to three unpinned ones on 4 CPUs: the pinned
# hogs get half a CPU each while the LLC queue moves the frontier a whole
# CPU's worth. A short task pinned to CPU 0 sleeps 1, 2, 4, 8, 15 and 30 s;
# after every sleep it runs within FAIR_MAX_WAIT_MS, and the scheduler stays
# attached for the whole minute (the kernel's watchdog ends it after 30 s of
# a runnable task not running).
case_fair_pinned_queue_keeps_up() {
	local log=$VM_OUT/fair_pinned.sched.log seq0 probe pinned free
	start_sched "$log" || return 1
	seq0=$(enable_seq)
	taskset -c 0 python3 "$GUEST/fair_wait.py" 1 2 4 8 15 30 >"$VM_OUT/fair_pinned.waits" &
	probe=$!
	taskset -c 0 stress-ng --cpu 2 --timeout 75s >/dev/null 2>&1 &
	pinned=$!
	stress-ng --cpu 3 --timeout 75s >/dev/null 2>&1 &
	free=$!
	wait $probe
	local rc=$?
	kill $pinned $free 2>/dev/null
	wait $pinned $free 2>/dev/null
	cat "$VM_OUT/fair_pinned.waits"
	"$SCHED" stats -v | grep -o 'enq:[^|]*'
	attached_since "$seq0" || fail "the scheduler did not stay attached: $(grep -i -m2 'exit\|stall' "$log")" || return 1
	[ $rc -eq 0 ] || fail "the probe failed (rc $rc)" || return 1
	[ "$(wc -l <"$VM_OUT/fair_pinned.waits")" -eq 6 ] || fail "the probe woke up fewer than 6 times" || return 1
	awk -v max=$FAIR_MAX_WAIT_MS '$5 > max { bad = bad " " $2 "s:" $5 "ms" }
		END { if (bad != "") { print "FAIL: waits over " max " ms after sleeps of" bad; exit 1 } }' \
		"$VM_OUT/fair_pinned.waits" || return 1
	local bad
	bad=$(kernel_complaints)
	[ -z "$bad" ] || fail "dmesg: $(echo "$bad" | head -n 3)" || return 1
	stop_sched
}

# Two LLCs of two CPUs each, declared by a topology file. Six hogs start on
# the first LLC and two on the second, then all are allowed everywhere.
# Stealing between LLCs only when a CPU idles leaves them uneven for good
# (before the fix: 5:3 in every sample, after short tasks stole one); busy
# LLCs must balance to 4:4, half a CPU each: Jain index of their CPU times at
# least 0.95, and an even split in at least 75% of the samples.
case_fair_busy_llcs_balance() {
	local topo=$VM_OUT/two_llcs.topo log=$VM_OUT/fair_llcs.sched.log seq0 rc
	printf 'small 0\nsmall 1\nsmall 2\nsmall 3\nllc 0-1\nllc 2-3\n' >"$topo"
	start_sched "$log" --topology "$topo" || return 1
	grep -q '2 LLCs' "$log" || fail "the topology file was not used: $(head -n 3 "$log")" || return 1
	seq0=$(enable_seq)
	python3 "$GUEST/fair_llcs.py" 0-1 2-3 6 2 15
	rc=$?
	"$SCHED" stats -v | grep -o 'dsp:[^|]*'
	attached_since "$seq0" || fail "the scheduler did not stay attached" || return 1
	[ $rc -eq 0 ] || fail "busy LLCs did not balance (see above)" || return 1
	stop_sched
}

# Weights hold within a queue whatever other queues do: hogs pinned to CPU 1
# at nice 0 and nice 5 share it in the kernel's ratio 1024/335 = 3.057
# (within 10%, as case_nice_ratio) while three nice-19 hogs run on the other
# CPUs. A nice-19 task alone on a CPU advances its vtime 68 times faster
# than real time; with one frontier for all queues it would drag that
# frontier ahead, hold the pinned pair at the lag bound, and make them take
# turns 1:1.
case_fair_pinned_weights_beside_other_queues() {
	start_sched "$VM_OUT/fair_weights.sched.log" || return 1
	local others rc
	nice -n 19 stress-ng --cpu 3 --timeout 40s >/dev/null 2>&1 &
	others=$!
	nice_pair_ratio 1
	rc=$?
	kill "$others"
	wait "$others" 2>/dev/null
	[ $rc -eq 0 ] || return 1
	stop_sched
}

# One nice-19 task among 200 nice-0 hogs while processes fork and exit
# (issue 14's starvation case). Its fair share is 15/(200 x 1024) of the
# machine: one tick of overrun (4 ms at HZ=250) puts it 4 ms x 1024/15 =
# 273 ms of virtual time ahead, which the frontier covers in 13.7 s at
# 4 CPUs x 1024/(200 x 1024) per ns; with the frontier held still by the
# forked tasks (they start at it and exit before passing it) it waited 32 s
# and the kernel ended the scheduler. The lead is capped at what the
# frontier covers in CADENCE_MAX_WAIT_NS (1 s), so it must run again within
# FAIR_PROGRESS_GAP_MS, five times that; the scheduler stays attached.
FAIR_PROGRESS_GAP_MS=5000
case_fair_nice19_progresses_under_200_hogs() {
	local log=$VM_OUT/fair_progress.sched.log seq0 hogs forks rc out gap
	start_sched "$log" || return 1
	seq0=$(enable_seq)
	stress-ng --cpu 200 --cpu-method loop --timeout 70s >/dev/null 2>&1 &
	hogs=$!
	stress-ng --fork 2 --timeout 70s >/dev/null 2>&1 &
	forks=$!
	sleep 5
	out=$(python3 "$GUEST/fair_progress.py" 40 19)
	rc=$?
	kill $hogs $forks 2>/dev/null
	wait $hogs $forks 2>/dev/null
	echo "nice 19 under 200 hogs: $out"
	"$SCHED" stats -v | grep -o 'enq:[^|]*'
	attached_since "$seq0" || fail "the scheduler did not stay attached: $(grep -i -m2 'exit\|stall' "$log")" || return 1
	[ $rc -eq 0 ] || fail "the probe failed (rc $rc)" || return 1
	gap=$(echo "$out" | awk '{ print $6 }')
	[ "$gap" -le $FAIR_PROGRESS_GAP_MS ] ||
		fail "the nice-19 task went ${gap} ms without running (at most $FAIR_PROGRESS_GAP_MS)" || return 1
	end_attached "$seq0"
}

# yield_beside_hog SECONDS: a task calling sched_yield() in a loop and a
# hog, both pinned to CPU 1; prints the hog's CPU ticks over SECONDS.
yield_beside_hog() {
	local yielder h
	yielder=$(taskset -c 1 python3 -c 'import os
while True: os.sched_yield()' >/dev/null 2>&1 & echo $!)
	h=$(hog 1 0)
	sleep 1
	ticks_then_kill "$h" "$1" "$yielder"
}

# sched_yield() gives the CPU away: a task yielding in a loop beside a hog
# of the same weight on one CPU leaves the hog at least half of it, and at
# least 90% of what EEVDF leaves it in the same boot: fair.c's
# yield_task_fair() ends the yielder's request, so the hog runs whole
# slices between yields. When a yield only ended the slice (issue 47), the
# yielder was charged the few microseconds it ran and came back first by
# deadline as often as the hog.
case_fair_yield_gives_the_cpu_away() {
	local seconds=10
	eevdf_then_ours "$VM_OUT/fair_yield.sched.log" yield_beside_hog $seconds || return 1
	echo "the hog beside a yielder got $OURS_OUT of $((seconds * 100)) ticks (EEVDF: $EEVDF_OUT)"
	[ $((OURS_OUT * 2)) -ge $((seconds * 100)) ] ||
		fail "the hog got $OURS_OUT ticks of $((seconds * 100)): the yielder kept the CPU" || return 1
	ours_at_least 90 "the hog" && end_attached "$OURS_SEQ"
}

# pingpong_worst_wait SECONDS: as many unpinned pipe ping-pong pairs as
# CPUs (perf bench sched pipe, threads), and an unpinned task that sleeps
# 50 ms 20 times a second for SECONDS; prints the task's longest wait after
# a wake-up (run_delay, fair_wait.py), in ms.
pingpong_worst_wait() {
	local pairs=() n
	for ((n = 0; n < $(nproc); n++)); do
		timeout $(($1 + 30)) perf bench sched pipe -T -l 1000000000 >/dev/null 2>&1 &
		pairs+=($!)
	done
	sleep 1
	# shellcheck disable=SC2046 # one argument a sleep, split on purpose
	python3 "$GUEST/fair_wait.py" $(yes 0.05 | head -n $(($1 * 20))) >"$VM_OUT/pingpong.waits"
	kill "${pairs[@]}" 2>/dev/null
	wait "${pairs[@]}" 2>/dev/null
	awk '$5 > max { max = $5 } END { print max + 0 }' "$VM_OUT/pingpong.waits"
}

# Sync ping-pong pairs on every CPU must not shut out a third task: a
# sync wake-up that runs the wakee on the waker's CPU at once keeps that
# CPU from dispatch(), where the LLC queue's head would be taken, and a
# pair that bounces for ever keeps it so. The unpinned sleeper's worst
# wait stays within twice EEVDF's in the same boot, or 1 s if that is
# more, with the scheduler attached and no stall in dmesg.
case_pingpong_pairs_leave_room() {
	local seconds=15 eevdf ours bound
	eevdf_then_ours "$VM_OUT/pingpong.sched.log" pingpong_worst_wait $seconds || return 1
	eevdf=$EEVDF_OUT ours=$OURS_OUT
	bound=$(awk -v e="$eevdf" 'BEGIN { b = 2 * e; print (b > 1000 ? b : 1000) }')
	echo "worst wait of the sleeper beside $(nproc) pairs: EEVDF $eevdf ms, scx_cadence $ours ms (bound $bound ms)"
	"$SCHED" stats -v | grep -o 'wake:[^|]*'
	awk -v o="$ours" -v b="$bound" 'BEGIN { exit !(o <= b) }' ||
		fail "the sleeper waited $ours ms, over $bound ms" || return 1
	end_attached "$OURS_SEQ"
}
