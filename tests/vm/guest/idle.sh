# shellcheck shell=bash
# VM test cases for the idle-state learner (issue 13). The TCG VM has no
# cpuidle driver: the states come from a shipped example file.
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# The Skylake-SP example: POLL, C1, C1E, C6.
IDLE_STATES=$VM_ROOT/docs/idle-states/intel-skylake-sp.txt

# Idle periods are learned: the pinned table changes, the stats count them.
case_idle_learns_from_a_state_file() {
	start_sched "$VM_OUT/idle_learns.sched.log" --idle-states "$IDLE_STATES" || return 1
	grep -q "idle states" "$VM_OUT/idle_learns.sched.log" ||
		fail "no idle states in the log: $(head -n 5 "$VM_OUT/idle_learns.sched.log")" || return 1
	python3 "$GUEST/idle_learns.py" "$PIN_DIR" || fail "the learner did not learn (see above)" || return 1
	# The same periods in the stats: the seed's table, the short line and
	# OpenMetrics.
	"$SCHED" idle stats | tee "$VM_OUT/idle_stats.txt"
	grep -Eq "^  teo +[0-9]+ +[0-9.]+" "$VM_OUT/idle_stats.txt" &&
		grep -Eq "^  weighted +[0-9]+ +[0-9.]+" "$VM_OUT/idle_stats.txt" ||
		fail "idle stats has no teo and weighted rows" || return 1
	! grep -q "^  kernel" "$VM_OUT/idle_stats.txt" ||
		fail "idle stats scored the kernel's state with a file's indices" || return 1
	"$SCHED" stats | tee "$VM_OUT/idle_brief.txt"
	grep -Eq "idle [0-9.k]+ correct teo [0-9]+% weighted [0-9]+%" "$VM_OUT/idle_brief.txt" ||
		fail "the stats line has no idle part" || return 1
	"$SCHED" stats --format openmetrics >"$VM_OUT/idle.om"
	grep -q '^scx_cadence_idle_predictions_total{source="teo",ideal="residency",miss="0"} [1-9]' "$VM_OUT/idle.om" ||
		fail "OpenMetrics has no correct teo predictions" || return 1
	[ "$(sched_state)" = enabled ] || fail "the scheduler detached" || return 1
	stop_sched
}

# idle.place = shallow: the placement search's input, each CPU's idle
# state's exit latency, follows the CPUs live and stops with idle.place off.
case_idle_place_sees_each_cpu_state() {
	start_sched "$VM_OUT/idle_place.sched.log" --idle-states "$IDLE_STATES" || return 1
	taskset -c 0,2 python3 "$GUEST/idle_place.py" "$PIN_DIR" "$SCHED" ||
		fail "placement does not see the idle states (see above)" || return 1
	[ "$(sched_state)" = enabled ] || fail "the scheduler detached" || return 1
	stop_sched
}
