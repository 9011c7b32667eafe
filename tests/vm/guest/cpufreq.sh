# shellcheck shell=bash
# VM test cases for cpufreq hints without iowait, with a deadband (issue 5).
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# hogs: a busy loop pinned to every CPU; prints their PIDs.
hogs() {
	local cpu
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		hog "$cpu" 0
	done
}

# deadband_policy FILE DOWN_HOLD_US: a policy with every deadband stage on,
# for injected util at freq_max 1000 MHz.
deadband_policy() {
	cat >"$1" <<-EOF
		[freq]
		max = 1000
		[cpufreq]
		# fmin 400 of freq_max 1000 MHz: floor at util 410.
		min_mhz = 400
		floor = true
		band = 32
		interval_us = 1000
		down_hold_us = $2
	EOF
}

# Injected util drives the real BPF target and deadband code in the
# running kernel: exact request counts per CPU for each stage of the
# deadband, a hot-swap of the deadband under load, and both fixed targets.
case_cpufreq_injected_util_deadband() {
	local policy=$VM_OUT/deadband.toml log=$VM_OUT/cpufreq_inject.sched.log
	deadband_policy "$policy" 100000
	start_sched "$log" --test-freq-inject 1000 --test-util-inject --policy "$policy" || return 1
	local seq0 pids
	seq0=$(enable_seq)
	pids=$(hogs)
	nice -n -10 python3 "$GUEST/cpufreq_inject.py" "$PIN_DIR" "$SCHED"
	local rc=$?
	# shellcheck disable=SC2086 # a list of PIDs, split on purpose
	kill $pids
	[ $rc -eq 0 ] || fail "the deadband did not do what the policy says (see above)" || return 1
	attached_throughout "$seq0" || return 1
	"$SCHED" stats | tee "$VM_OUT/cpufreq_stats.txt"
	grep -q "cpufreq 0 req " "$VM_OUT/cpufreq_stats.txt" ||
		fail "the stats line does not show the targets" || return 1
	"$SCHED" stats --format openmetrics | grep -q 'scx_cadence_cpufreq_supp_deadband_total{cpu="0"}' ||
		fail "OpenMetrics lacks the deadband counters" || return 1
	stop_sched
}

# Without injection: PELT util drives the target. With the deadband off
# every evaluation either issues or finds its target already in force, so
# the target a CPU holds is exactly min(1024, util x headroom / 125) of the
# util its last evaluation saw; checked live at headroom 125 (schedutil's,
# util passed through) and 250 (twice util), on a hog's CPU and on the CPU
# of a task that sleeps two thirds of the time.
case_cpufreq_follows_real_util() {
	local log=$VM_OUT/cpufreq_real.sched.log
	start_sched "$log" --set cpufreq.floor=false --set cpufreq.band=0 \
		--set cpufreq.down_hold_us=0 --set cpufreq.interval_us=0 || return 1
	local seq0 hog_pid duty_pid rc
	seq0=$(enable_seq)
	hog_pid=$(hog 2 0)
	taskset -c 1 python3 -c '
import time
while True:
    end = time.perf_counter() + 0.004
    while time.perf_counter() < end: pass
    time.sleep(0.008)' &
	duty_pid=$!
	sleep 2
	taskset -c 3 python3 "$GUEST/cpufreq_follows.py" "$PIN_DIR" "$SCHED" "$duty_pid"
	rc=$?
	kill "$hog_pid" "$duty_pid"
	[ $rc -eq 0 ] || fail "targets do not follow util (see above)" || return 1
	attached_throughout "$seq0" || return 1
	stop_sched
}

# iowait_reads LOOPDEV SECONDS: direct reads from a loop device, each of
# which waits in io_schedule(), so the reader wakes from iowait each time.
iowait_reads() {
	timeout "$2" dd if="$1" of=/dev/null bs=4k iflag=direct 2>/dev/null
	true
}

# iowait never raises a target unless the legacy switch asks for it; with
# it, schedutil's boost is emulated and counted.
case_cpufreq_iowait_only_with_legacy_boost() {
	modprobe loop 2>/dev/null
	local img=$VM_OUT/loop.img dev
	truncate -s 64M "$img"
	dev=$(losetup -f --show "$img") || fail "no loop device: $(losetup -f 2>&1)" || return 1
	local boosts log=$VM_OUT/cpufreq_iowait.sched.log seq0
	start_sched "$log" || { losetup -d "$dev"; return 1; }
	seq0=$(enable_seq)
	iowait_reads "$dev" 3
	boosts=$("$SCHED" stats --format json | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["cpufreq"]["cpufreq_iowait_boosts"])')
	echo "legacy_iowait_boost=false: $boosts boosted evaluations"
	[ "$boosts" = 0 ] || fail "iowait boosted a target with the switch off" || return 1
	"$SCHED" ctl set cpufreq.legacy_iowait_boost=true >/dev/null || return 1
	iowait_reads "$dev" 3
	boosts=$("$SCHED" stats --format json | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["cpufreq"]["cpufreq_iowait_boosts"])')
	echo "legacy_iowait_boost=true: $boosts boosted evaluations"
	losetup -d "$dev"
	[ "$boosts" -gt 0 ] || fail "the legacy boost never fired on iowait wake-ups" || return 1
	attached_throughout "$seq0" || return 1
	stop_sched
}

# Out-of-range band, interval and headroom are refused at start and by
# ctl, and the policy in force stays.
case_cpufreq_bad_values() {
	local out
	out=$("$SCHED" --set cpufreq.band=300 2>&1) && fail "band 300 started" && return 1
	echo "$out" | grep -q "cpufreq.band = 300 is out of range: allowed 0..=256" ||
		fail "no clear refusal: $out" || return 1
	[ "$(sched_state)" = disabled ] || fail "something attached" || return 1
	start_sched "$VM_OUT/cpufreq_bad.sched.log" || return 1
	expect_refused "band" "cpufreq.band = 1000 is out of range" \
		"$SCHED" ctl set cpufreq.band=1000 || return 1
	expect_refused "interval" "cpufreq.interval_us = 2000000 is out of range" \
		"$SCHED" ctl set cpufreq.interval_us=2000000 || return 1
	expect_refused "headroom" "cpufreq.headroom_pct = 50 is out of range" \
		"$SCHED" ctl set cpufreq.headroom_pct=50 || return 1
	expect_refused "mode" 'cpufreq.mode = "fast" is not allowed' \
		"$SCHED" ctl set cpufreq.mode=fast || return 1
	local band
	band=$(bpftool map dump pinned "$PIN_DIR/policy" | python3 -c \
		'import json,sys; print(json.load(sys.stdin)[0]["value"]["policy"]["cpufreq_band"])')
	[ "$band" = 32 ] || fail "the policy map's band is $band, not balanced's 32" || return 1
	stop_sched
}

# The VM has no cpufreq driver, so no request can take effect: the loader
# says so in one line at start, and every stats format shows it.
case_cpufreq_no_driver_said_once() {
	local log=$VM_OUT/cpufreq_none.sched.log
	start_sched "$log" || return 1
	local n
	n=$(grep -c "cpufreq: no cpufreq driver, hints not applied" "$log")
	[ "$n" = 1 ] || fail "$n start-up lines about cpufreq, not 1: $(grep -i cpufreq "$log")" || return 1
	"$SCHED" stats -v | grep -q "(cpufreq: no cpufreq driver, hints not applied)" ||
		fail "the text stats do not say the hints are not applied" || return 1
	"$SCHED" stats --format json | python3 -c '
import json, sys
m = json.load(sys.stdin)
assert m["cpufreq_driver"] == "cpufreq: no cpufreq driver, hints not applied", m.get("cpufreq_driver")
assert m["cpufreq_hint_cpus"] == 0, m["cpufreq_hint_cpus"]
' || fail "the JSON stats lack the cpufreq state" || return 1
	"$SCHED" stats --format openmetrics | grep -q '^scx_cadence_cpufreq_info{state="cpufreq: no cpufreq driver, hints not applied"} 1$' ||
		fail "OpenMetrics lacks the cpufreq state" || return 1
	stop_sched
}

# A CPU that goes idle asks for the floor at once (issue 11, item 3): with
# util injected high everywhere only idle entry can lower a target, and the
# down hold (the longest allowed) cannot be what lowered it. Performance
# mode keeps 1024 through idle. The stats show the new counter.
case_cpufreq_idle_drops_target() {
	local policy=$VM_OUT/idle.toml log=$VM_OUT/cpufreq_idle.sched.log
	deadband_policy "$policy" 1000000
	start_sched "$log" --test-freq-inject 1000 --test-util-inject --policy "$policy" || return 1
	local seq0
	seq0=$(enable_seq)
	taskset -c 0 python3 "$GUEST/cpufreq_idle.py" "$PIN_DIR" "$SCHED" ||
		fail "an idle CPU kept its target (see above)" || return 1
	attached_throughout "$seq0" || return 1
	"$SCHED" stats -v | tee "$VM_OUT/cpufreq_idle_stats.txt"
	grep -qE "rate [0-9]+ idle [1-9]" "$VM_OUT/cpufreq_idle_stats.txt" ||
		fail "the stats line does not show idle requests" || return 1
	"$SCHED" stats --format json | python3 -c \
		'import json,sys; n = json.load(sys.stdin)["cpufreq"]["cpufreq_idle_floor"]; print("cpufreq_idle_floor", n); assert n > 0' ||
		fail "JSON stats lack cpufreq_idle_floor" || return 1
	"$SCHED" stats --format openmetrics | grep -q 'scx_cadence_cpufreq_idle_floor_total{cpu="1"} [1-9]' ||
		fail "OpenMetrics lacks the idle counter" || return 1
	stop_sched
}
