# shellcheck shell=bash
# VM test cases for idle.qos = "learned" (issue 13, item 4): the per-CPU PM
# QoS resume-latency limits the loader writes from the learned tables, and
# the originals coming back on every exit. The TCG VM has no cpuidle
# driver: the states come from the shipped Skylake-SP file, as in idle.sh.
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

QOS_STATES=$VM_ROOT/docs/idle-states/intel-skylake-sp.txt
# The file stands in for this machine's states: without this the loader
# writes no limits from a file's states (idle.file_is_this_machine).
QOS_FILE_OK=(--set idle.file_is_this_machine=true)
QOS_SAVED=/run/scx_cadence/pm_qos_saved
# The CPU the sleeper runs on.
QOS_CPU=1

# What the rule (src/idle/qos_rule.rs) can ask for with that file, by hand:
# POLL 0, C1 2, C1E 10, C6 133 us of exit latency. The limit is the allowed
# state's latency + 1 us, each next state being at least 2 us above it:
# POLL 1, C1 3, C1E 11; C6 allowed is no limit (the original stays).
QOS_LIMITS="1 3 11"

qos_file() { cat "/sys/devices/system/cpu/cpu$1/power/pm_qos_resume_latency_us"; }

# qos_originals OUT: distinctive originals (777 us on every CPU but CPU 3,
# which keeps "no constraint", 0), as qos_files.py prints them, into OUT.
qos_originals() {
	local f
	for f in /sys/devices/system/cpu/cpu[0-9]*/power/pm_qos_resume_latency_us; do
		case $f in */cpu3/*) echo 0 >"$f" ;; *) echo 777 >"$f" ;; esac
	done
	python3 "$GUEST/qos_files.py" >"$1"
	cat "$1"
}

# qos_another_writer VALUE ORIG: another writer (a tuning daemon) sets
# QOS_CPU's file to VALUE, which is that CPU's original in ORIG from then on.
qos_another_writer() {
	echo "$1" >"/sys/devices/system/cpu/cpu$QOS_CPU/power/pm_qos_resume_latency_us"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); d[sys.argv[2]] = sys.argv[3]; json.dump(d, open(sys.argv[1], "w"))' "$2" "$QOS_CPU" "$1"
}

# qos_sleeper: python sleeping 100 us at a time on QOS_CPU, in the
# background (idle periods mostly below C6's 600 us residency, even with
# TCG's late timers); prints its PID.
qos_sleeper() {
	taskset -c "$QOS_CPU" python3 -c "import time
while True:
    time.sleep(0.0001)" >/dev/null 2>&1 &
	echo $!
}

# qos_wait_limit SECS: wait until QOS_CPU's file holds one of QOS_LIMITS.
qos_wait_limit() {
	local deadline=$((SECONDS + $1)) v
	while [ $SECONDS -lt "$deadline" ]; do
		v=$(qos_file "$QOS_CPU")
		[[ " $QOS_LIMITS " == *" $v "* ]] && echo "cpu$QOS_CPU: $v us" && return 0
		sleep 0.5
	done
	fail "cpu$QOS_CPU's limit is '$(qos_file "$QOS_CPU")', none of $QOS_LIMITS after $1 s: $(python3 "$GUEST/qos_files.py")"
}

# qos_values_ok ORIG: every CPU holds its original or one of QOS_LIMITS (a
# CPU whose original is tighter keeps it).
qos_values_ok() {
	local cpu v o bad=""
	for cpu in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$1"); do
		v=$(qos_file "$cpu")
		o=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$cpu")
		[ "$v" = "$o" ] && continue
		if [[ " $QOS_LIMITS " == *" $v "* ]] && { [ "$o" = 0 ] || [ "$v" -lt "$o" ]; }; then
			continue
		fi
		bad="$bad cpu$cpu=$v (was $o)"
	done
	echo "limits: $(python3 "$GUEST/qos_files.py")"
	[ -z "$bad" ] || fail "values neither original nor a limit from the file:$bad"
}

# Limits from the file under short sleeps; SIGINT restores the originals.
case_idle_qos_limits_then_sigint_restores() {
	local orig=$VM_OUT/qos_sigint.orig.json sleeper rc deadline
	qos_originals "$orig"
	start_sched "$VM_OUT/qos_sigint.sched.log" --idle-states "$QOS_STATES" --policy powersave "${QOS_FILE_OK[@]}" || return 1
	sleeper=$(qos_sleeper)
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	qos_values_ok "$orig" || { kill "$sleeper"; return 1; }
	[ -s "$QOS_SAVED" ] && cat "$QOS_SAVED" || fail "no $QOS_SAVED while limits are set" || { kill "$sleeper"; return 1; }
	# The limits follow the last few periods (teo's bins keep 7/8 a
	# period), so under TCG's uneven wake-ups one may come and go: the
	# count must show one while the sleeper runs.
	deadline=$((SECONDS + 60))
	until "$SCHED" idle stats >"$VM_OUT/qos_idle_stats.txt" &&
		grep -Eq "PM QoS limits on [1-9][0-9]* CPUs" "$VM_OUT/qos_idle_stats.txt"; do
		[ $SECONDS -lt $deadline ] || break
		sleep 0.5
	done
	head -n 1 "$VM_OUT/qos_idle_stats.txt"
	grep -Eq "PM QoS limits on [1-9][0-9]* CPUs" "$VM_OUT/qos_idle_stats.txt" ||
		fail "idle stats does not count the limited CPUs" || { kill "$sleeper"; return 1; }
	kill "$sleeper"
	stop_sched
	rc=$?
	[ $rc -eq 0 ] || fail "scx_cadence exited $rc on SIGINT" || return 1
	python3 "$GUEST/qos_files.py" --expect-original "$orig" || fail "SIGINT did not restore" || return 1
	[ ! -e "$QOS_SAVED" ] || fail "$QOS_SAVED left after a clean exit: $(cat "$QOS_SAVED")"
}

# kill -9 leaves the limits and the saved originals; the next start puts
# the originals back before it attaches, even with idle.qos off, but not
# over a value another writer set after the kill (issue 50).
case_idle_qos_kill_9_restored_at_next_start() {
	local orig=$VM_OUT/qos_kill.orig.json sleeper
	qos_originals "$orig"
	start_sched "$VM_OUT/qos_kill.sched.log" --idle-states "$QOS_STATES" --policy powersave "${QOS_FILE_OK[@]}" || return 1
	sleeper=$(qos_sleeper)
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	# At once: the limit seen is the one the kill leaves.
	kill -KILL "$SCHED_PID"
	kill "$sleeper"
	wait "$SCHED_PID" 2>/dev/null
	wait_state disabled 30 || fail "sched_ext still $(sched_state) after kill -9" || return 1
	[ -s "$QOS_SAVED" ] || fail "no $QOS_SAVED after kill -9" || return 1
	cat "$QOS_SAVED"
	! python3 "$GUEST/qos_files.py" --expect-original "$orig" >/dev/null ||
		fail "kill -9 left no limit to restore" || return 1
	grep -q "^$QOS_CPU " "$QOS_SAVED" || fail "cpu$QOS_CPU, limited, is not saved" || return 1
	# Another writer, after the kill: its value is the CPU's from now on.
	qos_another_writer 555 "$orig"
	start_sched "$VM_OUT/qos_kill.restart.log" --idle-states "$QOS_STATES" --policy balanced || return 1
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "the next start did not restore what kill -9 left, or restored over another writer's value" || return 1
	[ ! -e "$QOS_SAVED" ] || fail "$QOS_SAVED left after the restore: $(cat "$QOS_SAVED")" || return 1
	stop_sched
}

# Hot swaps: idle.qos = learned writes nothing from a file's states until
# idle.file_is_this_machine vouches for the file, and says why once; off
# restores at once (when ctl returns), learned sets limits again. A value
# another writer puts in a CPU's file stays through SIGINT, which restores
# the other CPUs.
case_idle_qos_hot_swap() {
	local orig=$VM_OUT/qos_swap.orig.json log=$VM_OUT/qos_swap.sched.log sleeper
	qos_originals "$orig"
	start_sched "$log" --idle-states "$QOS_STATES" --policy balanced || return 1
	sleeper=$(qos_sleeper)
	sleep 3
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "idle.qos = off wrote limits" || { kill "$sleeper"; return 1; }
	"$SCHED" ctl set idle.qos=learned || { kill "$sleeper"; return 1; }
	sleep 3
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "limits written from a states file without idle.file_is_this_machine" || { kill "$sleeper"; return 1; }
	grep -q "idle.file_is_this_machine is false" "$log" ||
		fail "the log does not say why no limits are written" || { kill "$sleeper"; return 1; }
	"$SCHED" ctl set idle.file_is_this_machine=true || { kill "$sleeper"; return 1; }
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	"$SCHED" ctl set idle.qos=off || { kill "$sleeper"; return 1; }
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "the swap to idle.qos = off did not restore" || { kill "$sleeper"; return 1; }
	[ ! -e "$QOS_SAVED" ] || fail "$QOS_SAVED left after the swap to off" || { kill "$sleeper"; return 1; }
	"$SCHED" ctl set idle.qos=learned || { kill "$sleeper"; return 1; }
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	# Another writer: its value is the CPU's from now on.
	qos_another_writer 555 "$orig"
	sleep 2
	kill "$sleeper"
	stop_sched || fail "scx_cadence exited $? on SIGINT" || return 1
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "SIGINT did not restore, or restored over another writer's value"
}

# The kernel ends the scheduler (SysRq-S): the loader exits and restores.
case_idle_qos_kernel_exit_restores() {
	local orig=$VM_OUT/qos_sysrq.orig.json sleeper
	qos_originals "$orig"
	start_sched "$VM_OUT/qos_sysrq.sched.log" --idle-states "$QOS_STATES" --policy powersave "${QOS_FILE_OK[@]}" || return 1
	sleeper=$(qos_sleeper)
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	echo S >/proc/sysrq-trigger
	wait "$SCHED_PID"
	kill "$sleeper"
	python3 "$GUEST/qos_files.py" --expect-original "$orig" ||
		fail "a kernel-side exit did not restore" || return 1
	[ ! -e "$QOS_SAVED" ] || fail "$QOS_SAVED left after a kernel-side exit: $(cat "$QOS_SAVED")"
}

# Bad input: a second instance is refused before it touches the files; the
# first's saved originals stay, and it restores them on SIGINT.
case_idle_qos_second_instance_leaves_them() {
	local orig=$VM_OUT/qos_second.orig.json sleeper saved now out
	qos_originals "$orig"
	start_sched "$VM_OUT/qos_second.sched.log" --idle-states "$QOS_STATES" --policy powersave "${QOS_FILE_OK[@]}" || return 1
	sleeper=$(qos_sleeper)
	qos_wait_limit 60 || { kill "$sleeper"; return 1; }
	saved=$(cat "$QOS_SAVED")
	out=$("$SCHED" --idle-states "$QOS_STATES" --policy powersave "${QOS_FILE_OK[@]}" 2>&1)
	echo "second: $out"
	# Refused by the preflight (a scheduler is loaded) or, racing it, by
	# the instance lock; either way before the QoS files.
	[[ $out == *"already loaded"* || $out == *"another scx_cadence is running"* ]] ||
		fail "second instance: $out" || { kill "$sleeper"; return 1; }
	# While learned is in force the first keeps every CPU's line: it adds
	# a line for a CPU it limits for the first time and appends to a line
	# the values it writes (CPU ORIGINAL OURS...), so the first two fields
	# of a line never change. A second instance that restored "leftovers"
	# would have removed lines.
	now=$(cat "$QOS_SAVED" 2>/dev/null)
	echo "saved before: $saved; after: $now"
	[ -z "$(comm -23 <(echo "$saved" | cut -d' ' -f1,2 | sort) <(echo "$now" | cut -d' ' -f1,2 | sort))" ] ||
		fail "the second instance took lines from $QOS_SAVED: '$saved' -> '$now'" || { kill "$sleeper"; return 1; }
	kill "$sleeper"
	stop_sched || fail "scx_cadence exited $? on SIGINT" || return 1
	python3 "$GUEST/qos_files.py" --expect-original "$orig" || fail "SIGINT did not restore"
}
