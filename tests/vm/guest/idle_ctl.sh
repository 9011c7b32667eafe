# shellcheck shell=bash
# VM test case for `ctl idle save/load/reset` (issue 13). The TCG VM has no
# cpuidle driver: the states come from a shipped example file, as in idle.sh.
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# save, reset, load round-trip exactly against the pinned map; files for
# other CPUs or states are refused and change nothing.
case_idle_ctl_round_trips() {
	start_sched "$VM_OUT/idle_ctl.sched.log" \
		--idle-states "$VM_ROOT/docs/idle-states/intel-skylake-sp.txt" || return 1
	python3 "$GUEST/idle_ctl.py" "$SCHED" "$PIN_DIR" "$VM_OUT/idle_ctl" ||
		fail "the idle tables did not round-trip (see above)" || return 1
	[ "$(sched_state)" = enabled ] || fail "the scheduler detached" || return 1
	stop_sched
}
