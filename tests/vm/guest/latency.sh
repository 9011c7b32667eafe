# shellcheck shell=bash
# VM test cases for wake-up latency (issue 14): wake-up preemption and sync
# wake-ups, each switched off live through the policy. Counted by the
# scheduler's own counters, never timed (TCG timings are noise); the waits
# are printed for the log. Needs 4 vCPUs.
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# total COUNTER [CPU]: a cpu_stats counter summed over all CPUs, or CPU's own.
total() {
	local at="['total']['$1']"
	[ $# -gt 1 ] && at="['cpus']['$2']['$1']"
	"$SCHED" stats --format json | python3 -c "import json,sys; print(json.load(sys.stdin)$at)"
}

# A task that sleeps 10 ms and runs 0.2 ms, pinned with a hog to CPU 1,
# wakes 300 times. With latency.wakeup_preempt on (balanced), its wake-ups
# find the hog's deadline later than its own and preempt it: wake_preempt
# grows by at least half the wake-ups. Others fall to run-to-parity, when
# the hog's slice began less than slice.min_us before (wake_parity; alone
# on its CPU, the hog gets a new slice at each slice end): each of those
# arms a timer for the rest of the minimum, which asks again when it ends
# (wake_parity_fired) and kicks CPU 1 if the wake-up still preempts
# (wake_parity_kick). At least one wake-up must be held back and the timer
# fire at least once. Kicks are printed, not required: a hold the hog's
# own slice end or a tick resolves first kicks nothing, and under
# single-thread TCG the tick often comes first (82 kicks for 93 holds, 54
# for 62, 8 for 16 in three runs; 0 for 13 at 8906b96, which failed the
# case when it required a kick).
# Switched off live, the same run preempts nothing and kicks nothing, and
# the task waits for the hog's slice.
case_wakeup_preempts_a_hog() {
	local log=$VM_OUT/wake_preempt.sched.log seq0 hog p0 p1 pb p2 h0 h1 k0 k1 kb k2 f0 f1 on off
	start_sched "$log" || return 1
	seq0=$(enable_seq)
	hog=$(hog 1 0)
	sleep 1
	p0=$(total wake_preempt)
	h0=$(total wake_parity)
	k0=$(total wake_parity_kick)
	f0=$(total wake_parity_fired)
	on=$(taskset -c 1 python3 "$GUEST/wake_sleeper.py" 300 10 200) || fail "the sleeper failed" || return 1
	p1=$(total wake_preempt)
	h1=$(total wake_parity)
	k1=$(total wake_parity_kick)
	f1=$(total wake_parity_fired)
	"$SCHED" ctl set latency.wakeup_preempt=false >/dev/null || fail "ctl set refused" || return 1
	# Every CPU takes the change at its next tick; the wake-ups of the
	# commands themselves, before it, may have preempted.
	sleep 0.5
	pb=$(total wake_preempt)
	kb=$(total wake_parity_kick)
	off=$(taskset -c 1 python3 "$GUEST/wake_sleeper.py" 300 10 200) || fail "the sleeper failed" || return 1
	p2=$(total wake_preempt)
	k2=$(total wake_parity_kick)
	kill "$hog"
	echo "preempt on:  $on, wake_preempt +$((p1 - p0)), parity +$((h1 - h0)), parity timers fired +$((f1 - f0)), parity kicks +$((k1 - k0))"
	echo "preempt off: $off, wake_preempt +$((p2 - pb)), parity kicks +$((k2 - kb))"
	[ $((p1 - p0)) -ge 150 ] || fail "only $((p1 - p0)) preemptions for 300 wake-ups" || return 1
	[ $((h1 - h0)) -ge 1 ] || fail "no wake-up was held back by run-to-parity" || return 1
	[ $((f1 - f0)) -ge 1 ] ||
		fail "no parity timer fired for $((h1 - h0)) wake-ups held back" || return 1
	[ $((p2 - pb)) -eq 0 ] || fail "$((p2 - pb)) preemptions with latency.wakeup_preempt off" || return 1
	[ $((k2 - kb)) -eq 0 ] || fail "$((k2 - kb)) parity kicks with latency.wakeup_preempt off" || return 1
	end_attached "$seq0"
}

# parity_setup LOG NICE: scx_cadence with a 20 ms minimum slice (slices up
# to 100 ms, far above the test VM's late timers) and a hog of NICE pinned
# to CPU 1, a second on; sets the caller's seq0 and hog.
parity_setup() {
	start_sched "$1" --set slice.max_us=100000 --set slice.min_us=20000 || return 1
	seq0=$(enable_seq)
	hog=$(hog 1 "$2")
	sleep 1
}

# Run-to-parity counts the run a preemption cut short. A sleeper pinned
# with a hog to CPU 1 wakes in pairs, 120 times: it sleeps 10 ms, runs
# 1 ms, sleeps 2 ms and runs 1 ms again. The minimum slice is 20 ms here
# (slices up to 100 ms), far above the test VM's late timers (TCG), so
# that where each wake-up falls is not left to timing. The hog's request
# goes on across the sleeper's preemptions until its runs add up to its
# slice (50-100 ms here, a few pairs): 20 ms into it, neither wake-up of
# a pair is held back, as fair.c protects a request up to its deadline
# (set_protect_slice()), not anew at each resume. Only early in a request
# is a wake-up held, about once or twice a request. Counted from each
# resume, both wake-ups of every pair came within 20 ms of the hog's
# resume and were held back (wake_parity): 417 more holds than with the
# hog alone, against 43 and 53 now, when measured.
# The counter is the whole machine's: CPU 1's kernel threads are held back
# too when they wake early in one of the hog's requests (some 10 a
# second). So the same time with the hog alone is counted after, and the
# pairs may add fewer holds than the pairs; and the pairs' wake-ups must
# preempt at least once a pair (367 and 363 preemptions against 28).
case_parity_counts_runs_cut_short() {
	local log=$VM_OUT/parity_credit.sched.log seq0 hog p0 p1 h0 h1 h2 t0 t1 ms out pairs=120 held
	parity_setup "$log" 0 || return 1
	p0=$(total wake_preempt)
	h0=$(total wake_parity)
	t0=$(date +%s%N)
	out=$(taskset -c 1 python3 "$GUEST/wake_sleeper.py" $pairs 10 1000 2) || {
		kill "$hog"
		fail "the sleeper failed"
		return 1
	}
	t1=$(date +%s%N)
	p1=$(total wake_preempt)
	h1=$(total wake_parity)
	# The same time again, in ms, with the hog alone.
	ms=$(((t1 - t0) / 1000000))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	h2=$(total wake_parity)
	kill "$hog"
	held=$(((h1 - h0) - (h2 - h1)))
	echo "$pairs pairs: $out, wake_preempt +$((p1 - p0)), wake_parity +$((h1 - h0))," \
		"then +$((h2 - h1)) with the hog alone"
	[ "$held" -lt $pairs ] ||
		fail "$held more wake-ups held back by run-to-parity with $pairs pairs than without" ||
		return 1
	[ $((p1 - p0)) -ge $pairs ] ||
		fail "only $((p1 - p0)) preemptions for $((2 * pairs)) wake-ups" || return 1
	end_attached "$seq0"
}

# Run-to-parity protects only a running task within its share and its
# slice, as fair.c's __pick_eevdf() asks protect_slice() only of an
# eligible curr, and update_deadline() ends a request at its deadline. A
# nice-19 hog pinned to CPU 1 gets 1.46 ms slices (slices up to 100 ms,
# scaled by weight 15/1024), far below the 20 ms minimum set here, and
# runs on past each one until the tick (4 ms at HZ=250) refills it. A
# sleeper pinned beside it, waking 150 times 10 ms apart, lands mostly in
# that used-up part and preempts at once (wake_preempt). Protecting every
# running task for its minimum, as before b31e503, held nearly every
# wake-up back instead: the hog's requests, renewed at each tick, never
# reach 20 ms. Wake-ups early in a request are still held (wake_parity).
# Measured: 329 and 341 preemptions (the counter is the whole machine's)
# and 11 and 12 holds, the sleeper waiting 17 and 6 us a run; with
# 9627714's verdict, 8 and 13 preemptions, 333 and 331 holds, 1.2-1.3 ms.
case_parity_spares_a_hog_done_with_its_slice() {
	local log=$VM_OUT/parity_done.sched.log seq0 hog p0 p1 h0 h1 out wakes=150
	parity_setup "$log" 19 || return 1
	p0=$(total wake_preempt)
	h0=$(total wake_parity)
	out=$(taskset -c 1 python3 "$GUEST/wake_sleeper.py" $wakes 10 200) || {
		kill "$hog"
		fail "the sleeper failed"
		return 1
	}
	p1=$(total wake_preempt)
	h1=$(total wake_parity)
	kill "$hog"
	echo "$wakes wake-ups beside a nice-19 hog: $out, wake_preempt +$((p1 - p0))," \
		"wake_parity +$((h1 - h0))"
	[ $((p1 - p0)) -ge $((wakes / 4)) ] ||
		fail "only $((p1 - p0)) preemptions for $wakes wake-ups: a hog done with its slice was protected" ||
		return 1
	end_attached "$seq0"
}

# nonvoluntary PID...: the involuntary context switches of PIDs, summed.
nonvoluntary() {
	local pid n=0
	for pid in "$@"; do
		n=$((n + $(awk '/^nonvoluntary_ctxt_switches/ { print $2 }' "/proc/$pid/status")))
	done
	echo "$n"
}

# slice_ends_over SECONDS PID...: how much slice_timer_kick, the PIDs'
# involuntary switches and tick_preempt grow over SECONDS.
slice_ends_over() {
	local secs=$1 k0 s0 t0
	shift
	k0=$(total slice_timer_kick)
	s0=$(nonvoluntary "$@")
	t0=$(total tick_preempt)
	sleep "$secs"
	echo "$(($(total slice_timer_kick) - k0)) $(($(nonvoluntary "$@") - s0)) $(($(total tick_preempt) - t0))"
}

# Two hogs pinned to CPU 1 take turns for 3 s. Each slice is 1.5 ms
# (slice.max_us over the two tasks that want the CPU), above the
# latency.slice_timer_us of 500 us set here (balanced leaves it off), and
# without the timer it ends at the next tick, 4 ms at HZ=250. With the
# timer, the slices that end while the other hog waits are ended by it:
# slice_timer_kick must grow by at least half the hogs' involuntary
# switches. Switched off live (latency.slice_timer_us=0), the same run
# kicks nothing. A kick, like a tick's cut, leaves the choice to
# dispatch(), which often gives the running hog another slice (its next
# deadline against the waiting one's, fixed when it was queued): kicks
# outnumber switches, and the tick's cuts (tick_preempt, all CPUs)
# outnumber them with the timer off. The switches are not compared
# between the two runs: that would time them. The counts are printed for
# the log.
case_slice_timer_ends_slices() {
	local log=$VM_OUT/slice_timer.sched.log seq0 h1 h2 kon son ton koff soff toff
	start_sched "$log" --set latency.slice_timer_us=500 || return 1
	seq0=$(enable_seq)
	h1=$(hog 1 0)
	h2=$(hog 1 0)
	sleep 1
	read -r kon son ton <<<"$(slice_ends_over 3 "$h1" "$h2")"
	"$SCHED" ctl set latency.slice_timer_us=0 >/dev/null || fail "ctl set refused" || return 1
	# Every CPU takes the change at its next tick; a timer set before it
	# may still fire once.
	sleep 0.5
	read -r koff soff toff <<<"$(slice_ends_over 3 "$h1" "$h2")"
	kill "$h1" "$h2"
	echo "timer on:  $son switches, slice_timer_kick +$kon, tick_preempt +$ton"
	echo "timer off: $soff switches, slice_timer_kick +$koff, tick_preempt +$toff"
	[ "$son" -gt 0 ] && [ "$soff" -gt 0 ] || fail "the two hogs did not switch" || return 1
	[ $((2 * kon)) -ge "$son" ] || fail "the timer ended $kon of $son slices" || return 1
	[ "$koff" -eq 0 ] || fail "$koff timed slice ends with latency.slice_timer_us=0" || return 1
	end_attached "$seq0"
}

# cyclictest's shape: a sleeper pinned to each CPU (300 wake-ups each,
# every 10 ms) beside 4 unpinned hogs that keep every CPU busy. A pinned
# sleeper's wake-up runs on its own CPU, where it should take over from
# the hog at once (it is eligible; the hog has the later deadline or has
# run past its share). Before wake-ups preempted their own CPU directly
# and a hog past its share counted as preemptible, fewer than half of
# these wake-ups preempted: some waited in their CPU's queue behind older
# heads of the LLC queue, others met a hog whose deadline, fixed when its
# slice began, had fallen behind the frontier. wake_preempt must now grow
# by at least 80% of the 1200 wake-ups. Some of the hogs met have the
# earlier deadline but have run past their share or used up their slice
# (EEVDF's update_deadline() would have rescheduled them): those
# preemptions (wake_preempt_spent) must number at least 1% of the
# wake-ups, which shows the rule fires and is counted. Counted: 588-724.
# It does not tell a stale running-task record apart: with 4aa397e
# reverted, 157 and 335 in the same boot; the verdict's host tests pin
# the rule itself.
case_pinned_sleepers_preempt_busy_cpus() {
	local log=$VM_OUT/wake_pinned.sched.log load p0 p1 s0 s1 cpu pids=() out
	start_sched "$log" || return 1
	stress-ng --cpu 4 --timeout 120s >/dev/null 2>&1 &
	load=$!
	sleep 1
	p0=$(total wake_preempt)
	s0=$(total wake_preempt_spent)
	for cpu in 0 1 2 3; do
		taskset -c $cpu python3 "$GUEST/wake_sleeper.py" 300 10 200 >"$VM_OUT/wake_pinned.$cpu" &
		pids+=($!)
	done
	wait "${pids[@]}" || fail "a sleeper failed" || return 1
	p1=$(total wake_preempt)
	s1=$(total wake_preempt_spent)
	kill $load
	wait $load 2>/dev/null
	out=$(cat "$VM_OUT"/wake_pinned.? | tr '\n' ';')
	echo "pinned sleepers: wake_preempt +$((p1 - p0)) (spent +$((s1 - s0))) for 1200 wake-ups, tick $(total tick_wake_preempt); $out"
	[ $((p1 - p0)) -ge 960 ] || fail "only $((p1 - p0)) preemptions for 1200 wake-ups" || return 1
	[ $((s1 - s0)) -ge 12 ] || fail "only $((s1 - s0)) preemptions of a hog past its share or slice" || return 1
	stop_sched
}

# A sleeper pinned to CPU 3 (sleeps 10 ms, runs 0.2 ms) on an otherwise
# quiet machine: its timer wakes it on CPU 3 with CPU 3 idle and nothing
# queued there, so enqueue() puts it on CPU 3's local DSQ at once
# (queue_direct_idle(): enq_idle grows on CPU 3) and CPU 3 runs it without
# a dispatch() that could only take it. CPU 3's kworkers wake the same way;
# a wake-up that finds CPU 3 busy or a task queued for it still goes
# through a dispatch() (dispatch_cpu), but fewer than half as many as went
# straight. Before, every such wake-up did: at 845be8a enq_idle +0 and
# dispatch_cpu +1051-1074 in two runs; with it +876-1125 and +168-189 in
# four (7.2 and 6.16).
case_pinned_sleepers_wake_idle_cpus_directly() {
	local log=$VM_OUT/wake_idle.sched.log i0 i1 d0 d1 out
	start_sched "$log" || return 1
	sleep 1
	i0=$(total enq_idle 3)
	d0=$(total dispatch_cpu 3)
	out=$(taskset -c 3 python3 "$GUEST/wake_sleeper.py" 300 10 200) ||
		fail "the sleeper failed" || return 1
	i1=$(total enq_idle 3)
	d1=$(total dispatch_cpu 3)
	echo "pinned sleeper on an idle CPU: enq_idle +$((i1 - i0)), dispatch_cpu +$((d1 - d0)) for 300 wake-ups; $out"
	[ $((i1 - i0)) -ge 240 ] || fail "only $((i1 - i0)) of 300 wake-ups went straight to idle CPU 3" || return 1
	[ $((d1 - d0)) -lt $(((i1 - i0) / 2)) ] ||
		fail "$((d1 - d0)) dispatches from CPU 3's own DSQ against $((i1 - i0)) wake-ups sent straight" || return 1
	stop_sched
}

# perf bench sched pipe while 4 hogs keep every CPU busy: two tasks
# ping-pong through pipes, each write a sync wake-up of a reader whose
# waker then sleeps in read. No CPU is idle, so with latency.sync_wakeup on
# the wake-ups go to the waker's CPU (wake_sync grows); switched off live,
# none does.
case_sync_wakeups_follow_the_waker() {
	local log=$VM_OUT/wake_sync.sched.log s0 s1 sb s2 load
	start_sched "$log" || return 1
	stress-ng --cpu 4 --timeout 120s >/dev/null 2>&1 &
	load=$!
	sleep 1
	s0=$(total wake_sync)
	perf bench -f simple sched pipe -l 1000 >/dev/null 2>&1 || fail "perf bench failed" || return 1
	s1=$(total wake_sync)
	"$SCHED" ctl set latency.sync_wakeup=false >/dev/null || fail "ctl set refused" || return 1
	sleep 0.5
	sb=$(total wake_sync)
	perf bench -f simple sched pipe -l 1000 >/dev/null 2>&1 || fail "perf bench failed" || return 1
	s2=$(total wake_sync)
	kill $load
	wait $load 2>/dev/null
	echo "sync on: wake_sync +$((s1 - s0)) for 2000 wake-ups; off: +$((s2 - sb))"
	[ $((s1 - s0)) -ge 500 ] || fail "only $((s1 - s0)) sync placements for 2000 wake-ups" || return 1
	[ $((s2 - sb)) -eq 0 ] || fail "$((s2 - sb)) sync placements with latency.sync_wakeup off" || return 1
	stop_sched
}

# hackbench beside 4 hogs: its wake-ups are sync ones (socket writes) and
# most find no idle CPU. Those that find the waker's CPU taken as well are
# queued and preempt nobody, as the waker is about to free a CPU: with
# latency.sync_wakeup on, wake_sync_yield grows and such wake-ups preempt
# fewer hogs than the same run with it switched off live, where they
# preempt as any wake-up does and wake_sync_yield stays still.
case_sync_wakeups_without_a_cpu_preempt_nobody() {
	local log=$VM_OUT/wake_sync_yield.sched.log y0 y1 yb y2 p0 p1 pb p2 load
	start_sched "$log" || return 1
	stress-ng --cpu 4 --timeout 300s >/dev/null 2>&1 &
	load=$!
	sleep 1
	y0=$(total wake_sync_yield)
	p0=$(total wake_preempt)
	hackbench -g 2 -l 50 >/dev/null || fail "hackbench failed" || return 1
	y1=$(total wake_sync_yield)
	p1=$(total wake_preempt)
	"$SCHED" ctl set latency.sync_wakeup=false >/dev/null || fail "ctl set refused" || return 1
	sleep 0.5
	yb=$(total wake_sync_yield)
	pb=$(total wake_preempt)
	hackbench -g 2 -l 50 >/dev/null || fail "hackbench failed" || return 1
	y2=$(total wake_sync_yield)
	p2=$(total wake_preempt)
	kill $load
	wait $load 2>/dev/null
	echo "sync on: wake_sync_yield +$((y1 - y0)), wake_preempt +$((p1 - p0)); off: wake_sync_yield +$((y2 - yb)), wake_preempt +$((p2 - pb))"
	[ $((y1 - y0)) -ge 100 ] || fail "only $((y1 - y0)) sync wake-ups left to their waker" || return 1
	[ $((y2 - yb)) -eq 0 ] || fail "$((y2 - yb)) sync wake-ups left to their waker with latency.sync_wakeup off" || return 1
	[ $((p1 - p0)) -lt $((p2 - pb)) ] || fail "as many preemptions with sync wake-ups honoured as without" || return 1
	stop_sched
}
