# shellcheck shell=bash
# bench/hw/run.sh, the A/B kit for real machines, in the VM: sourced by
# run.sh.

# hw_refused WHAT WANT CMD...: CMD exits 2 with one line containing WANT.
hw_refused() {
	local what=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	echo "$what: rc=$rc $out"
	[ $rc -eq 2 ] || fail "$what: exit code $rc, want 2" || return 1
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$what: expected one line, got: $out" || return 1
	[[ $out == *"$want"* ]] || fail "$what: '$out' does not say '$want'"
}

# Refused in one line in a VM without --dry-run, and for a user without
# root. --dry-run walks every step: each of the four schedulers (EEVDF and
# scx_cadence's presets) runs each of the five workloads once, what the VM
# cannot measure (energy: no RAPL; frequency: no cpufreq) is said with its
# reason, the summary has a row per workload's time, and the kernel is
# back on EEVDF after.
case_hw_kit_dry_run() {
	local kit=$VM_ROOT/bench/hw/run.sh log=$VM_OUT/hw.out dir s w
	hw_refused "in a VM" "virtual machine" "$kit" || return 1
	hw_refused "not root" "needs root" setpriv --reuid 65534 --regid 65534 --clear-groups "$kit" --dry-run || return 1
	SCX_CADENCE_HW_OUT=$VM_OUT "$kit" --dry-run >"$log" 2>&1 || fail "--dry-run failed: $(tail -n 3 "$log")" || return 1
	dir=$(ls -d "$VM_OUT"/hw-*)
	grep -q '^energy: not measured: ' "$log" || fail "no reason for the missing energy: $(head -n 3 "$log")" || return 1
	grep -q '^frequency: not measured: no cpufreq driver' "$log" || fail "no reason for the missing frequency" || return 1
	for s in eevdf scx_cadence_performance scx_cadence_balanced scx_cadence_powersave; do
		for w in hackbench light bursts idle cyclictest; do
			grep -q "^1,$s,${w}_wall_s," "$dir/raw.csv" || fail "no $w run under $s" || return 1
		done
		grep -q "^1,$s,hackbench_time_s,[0-9]" "$dir/raw.csv" || fail "no hackbench time under $s" || return 1
		grep -q "^1,$s,wake_p99_us,[0-9]" "$dir/raw.csv" || fail "no wake-to-run p99 under $s" || return 1
	done
	grep -q '^| hackbench_time_s | [0-9.]* | .*x; ' "$dir/summary.md" ||
		fail "no hackbench row with ratios in the summary: $(grep hackbench "$dir/summary.md")" || return 1
	grep -q 'Dry run' "$dir/summary.md" || fail "the summary does not say it is a dry run" || return 1
	# No cpuidle driver here: each preset's idle table says its learner is off.
	[ "$(grep -c 'the idle learner is off' "$dir/summary.md")" -eq 3 ] ||
		fail "the summary lacks the presets' idle stats: $(grep -A3 'Idle-state' "$dir/summary.md")" || return 1
	[ "$(sched_state)" = disabled ] || fail "sched_ext is $(sched_state) after the kit"
}
