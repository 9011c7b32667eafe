# shellcheck shell=bash
# VM test cases for policies, hot-swap, pinned maps and stats (issue 3).
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# 300 swaps while stress-ng loads every CPU: none fails, each is in the BPF
# map when the reply arrives, every CPU's copy catches up, and the scheduler
# never detaches. (It ran 1000 swaps, 226 s under TCG; 300 still make each
# kind of swap, preset, file and field edit, 100 times, and check every
# CPU's copy 30 times.)
case_policy_swap_storm() {
	local n seq0 log=$VM_OUT/storm.sched.log
	n=$(nproc)
	start_sched "$log" || return 1
	seq0=$(enable_seq)
	stress-ng --cpu "$n" --timeout 0 >/dev/null 2>&1 &
	local p_stress=$!
	sleep 1
	# The driver runs at nice -10 so that it, not stress-ng, sets the pace.
	nice -n -10 python3 "$GUEST/swap_storm.py" "$SCHED" 300 "$VM_OUT"
	local rc=$?
	kill $p_stress
	wait $p_stress
	# The scheduler's counters (tasks that waited 1 s, leads cut) for a
	# failure to be read against.
	[ $rc -eq 0 ] || "$SCHED" stats -v
	[ $rc -eq 0 ] || fail "policy swaps failed (see above)" || return 1
	attached_throughout "$seq0" || return 1
	stop_sched
}


# Invalid policies, through every door, are refused with the field named,
# and the policy in force stays: a bad TOML file, a value out of range, an
# unknown key, a wrong type; at start, by ctl switch, ctl set and SIGHUP.
case_policy_invalid() {
	local d=$VM_OUT/policies log=$VM_OUT/invalid.sched.log
	mkdir -p "$d"
	printf '[slice\nmax_us = 4000\n' >"$d/syntax.toml"
	printf '[slice]\nmax_us = 200000\n' >"$d/range.toml"
	printf '[slice]\nmax_us = 4000\nturbo = true\n' >"$d/unknown.toml"
	printf '[placement]\nidle_core_first = "yes"\n' >"$d/type.toml"
	printf '[slice]\nmax_us = 5000\n' >"$d/good.toml"

	# At start: refused before anything is attached.
	local out
	out=$("$SCHED" --policy "$d/range.toml" 2>&1)
	[[ $out == *"slice.max_us = 200000 is out of range: allowed 100..=100000"* ]] ||
		fail "bad --policy: $out" || return 1
	[ "$(sched_state)" = disabled ] || fail "attached with a bad policy" || return 1

	start_sched "$log" --policy "$d/good.toml" || return 1
	expect_refused "bad TOML" "not valid TOML" "$SCHED" ctl switch "$d/syntax.toml" || return 1
	expect_refused "out of range" "slice.max_us = 200000 is out of range: allowed 100..=100000 (microseconds)" \
		"$SCHED" ctl switch "$d/range.toml" || return 1
	expect_refused "unknown key" "unknown key \`slice.turbo\`" "$SCHED" ctl switch "$d/unknown.toml" || return 1
	expect_refused "wrong type" "placement.idle_core_first = \"yes\" has the wrong type: expected true or false" \
		"$SCHED" ctl switch "$d/type.toml" || return 1
	expect_refused "set out of range" "slice.min_us = 10 is out of range" "$SCHED" ctl set slice.min_us=10 || return 1
	expect_refused "set unknown key" "unknown key \`slice.nope\`" "$SCHED" ctl set slice.nope=1 || return 1
	expect_refused "set wrong type" "slice.lag_us = true has the wrong type" "$SCHED" ctl set slice.lag_us=true || return 1
	expect_refused "min above max" "must not exceed slice.max_us = 5000" "$SCHED" ctl set slice.min_us=6000 || return 1
	expect_refused "unknown preset" "unknown policy \`turbo\`" "$SCHED" ctl switch turbo || return 1

	# SIGHUP reloads the file; once the file is broken, the last good policy stays.
	local gen
	printf '[slice]\nmax_us = 6000\n' >"$d/good.toml"
	gen=$(bpf_generation)
	kill -HUP "$SCHED_PID"
	sleep 2
	[ "$(bpf_generation)" = $((gen + 1)) ] || fail "SIGHUP did not reload" || return 1
	"$SCHED" ctl get | grep -q '^max_us = 6000$' || fail "SIGHUP reload not in force" || return 1
	cp "$d/range.toml" "$d/good.toml"
	kill -HUP "$SCHED_PID"
	sleep 2
	[ "$(bpf_generation)" = $((gen + 1)) ] || fail "a broken file was loaded on SIGHUP" || return 1
	grep -q 'SIGHUP: reloading .*good.toml: .*slice.max_us = 200000 is out of range' "$log" ||
		fail "SIGHUP refusal not logged: $(tail -n 2 "$log")" || return 1
	[ "$(sched_state)" = enabled ] && kill -0 "$SCHED_PID" || fail "scheduler lost" || return 1
	stop_sched
}

# Malformed and hostile requests: error replies, the server keeps serving,
# nothing in BPF changes.
case_policy_bad_requests() {
	start_sched "$VM_OUT/badreq.sched.log" || return 1
	python3 "$GUEST/ctl_abuse.py" || fail "bad control requests were not all refused" || return 1
	# The socket is root-only.
	local mode out
	mode=$(stat -c %a /run/scx_cadence/ctl.sock)
	[ "$mode" = 600 ] || fail "ctl.sock has mode $mode" || return 1
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SCHED" ctl get 2>&1)
	[[ $out == *"are you root?"* ]] || fail "non-root ctl: $out" || return 1
	stop_sched
}

# Every pinned map dumps with the field names docs/maps-and-stats.md documents, the
# scheduler is listed by bpftool, and the pins go away on every exit path.
case_pinned_maps() {
	start_sched "$VM_OUT/pins.sched.log" || return 1
	local specs=(
		"policy:generation slice_max_ns slice_min_ns slice_lag_ns idle_core_first freq_max_ratio cpuperf_scale freq_max_mhz cpufreq_mode cpufreq_headroom_pct cpufreq_scale cpufreq_floor_util cpufreq_band cpufreq_iowait_boost cpufreq_interval_ns cpufreq_down_hold_ns place_order idle_predictor idle_pick idle_learning_rate idle_place wakeup_preempt sync_wakeup slice_timer_us place_hold place_move_margin fair_cgroups"
		"policy_state:generation"
		"policy_cpu:seq generation slice_max_ns idle_core_first"
		"cpu_util:clock_pelt lost_idle_time clock_task util_avg runnable_avg freq_scale freq_source cpu_cap freq_ticks freq_clamped freq_errors busy"
		"freq_inject:aperf mperf"
		"cpu_cpufreq:target util issued supp_deadband supp_hysteresis supp_hold supp_rate iowait_boosts hist"
		"util_inject:util"
		"cgroups:cpu_weight weight active contributed parent_id level bw_throttled bw_quota_ns bw_period_ns bw_runtime_ns bw_nr_throttled"
		"idle_states:nr disabled residency_ns exit_latency_ns"
		"idle_table:generation learned nr_states hits intercepts total short_idles weight seed_weight periods"
		"idle_cpu:entry_ns state work_synced work_generation periods lost_exits overtaken record_drops stray_misses scores record_scores miss kernel_miss"
		"idle_ctl:record_gen kernel_indices"
		"place_topo:nr_cpus nr_small nr_big cpu_small small_cpus small_big big_first_small big_nr_small llc_first_big llc_nr_big idle_exit_ns"
		"cpu_stats:select_prev_core select_busy place_prev_small place_idle_big place_idle_small place_near_small place_near_big place_near_llc place_any place_busy enq_pinned enq_idle enq_llc enq_lag_floor enq_wait_cap enq_kick_idle dispatch_cpu dispatch_llc dispatch_steal dispatch_balance dispatch_keep tick_preempt policy_refresh wake_preempt wake_parity wake_sync wake_overtake move_thread move_small move_big move_wake move_requeue move_queue dispatch_defer enq_stay dispatch_rebalance dispatch_make_room dispatch_starved tick_rcu_reader tick_wake_preempt wake_preempt_spent wake_sync_yield wake_parity_kick wake_parity_fired slice_timer_kick slice_timer_rcu yield_forfeit cgroup_untracked"
	)
	# One process for the 190 fields, not two greps each (lib.sh's nap()).
	python3 - "$PIN_DIR" "$VM_OUT" "$VM_ROOT/docs/maps-and-stats.md" "${specs[@]}" <<'PY' || return 1
import subprocess, sys
pin_dir, out, doc_path = sys.argv[1:4]
doc = open(doc_path).read()
bad = []
for spec in sys.argv[4:]:
    name, fields = spec.split(":")
    dump = subprocess.run(["bpftool", "map", "dump", "pinned", f"{pin_dir}/{name}"],
                          capture_output=True, text=True)
    if dump.returncode != 0:
        bad.append(f"bpftool cannot dump {name}: {dump.stderr.strip()}")
        continue
    open(f"{out}/pins.{name}.json", "w").write(dump.stdout)
    for field in fields.split():
        if f'"{field}":' not in dump.stdout:
            bad.append(f"{name} dump has no {field}")
        if f"`{field}`" not in doc:
            bad.append(f"docs/maps-and-stats.md does not document {name}.{field}")
for b in bad:
    print(f"FAIL: {b}")
sys.exit(1 if bad else 0)
PY
	bpftool struct_ops show | grep -q 'cadence_ops *sched_ext_ops' ||
		fail "bpftool struct_ops show: $(bpftool struct_ops show)" || return 1
	stop_sched
	[ ! -e "$PIN_DIR" ] || fail "pins left after SIGINT: $(ls "$PIN_DIR")" || return 1
	[ ! -e /run/scx_cadence/ctl.sock ] || fail "socket left after SIGINT" || return 1

	# The kernel ends the scheduler (SysRq-S): the loader exits, pins removed.
	start_sched "$VM_OUT/pins2.sched.log" || return 1
	echo S >/proc/sysrq-trigger
	wait "$SCHED_PID"
	[ ! -e "$PIN_DIR" ] || fail "pins left after a kernel-side exit" || return 1

	# kill -9 cannot clean up; the next start removes the stale pins.
	start_sched "$VM_OUT/pins3.sched.log" || return 1
	kill -9 "$SCHED_PID"
	wait "$SCHED_PID" 2>/dev/null
	wait_state disabled 10 || fail "state $(sched_state) after kill -9" || return 1
	[ -e "$PIN_DIR/policy" ] || fail "kill -9 left no pins (nothing to test)" || return 1
	local stale
	stale=$(find "$PIN_DIR" -mindepth 1 | wc -l)
	start_sched "$VM_OUT/pins4.sched.log" || return 1
	grep -q "removed $stale stale pins" "$VM_OUT/pins4.sched.log" ||
		fail "the $stale stale pins were not reported: $(grep -i stale "$VM_OUT/pins4.sched.log")" || return 1
	[ "$(bpf_generation)" = 1 ] || fail "pins do not show the new instance" || return 1
	stop_sched

	# A pin directory that is not on bpffs: an error, nothing attached or left.
	local out
	out=$("$SCHED" --pin-dir /tmp/not-bpffs/scx 2>&1)
	[[ $out == *"/tmp/not-bpffs is not on a bpffs mount"* ]] || fail "bad --pin-dir: $out" || return 1
	[ "$(sched_state)" = disabled ] || fail "state $(sched_state) after a failed start" || return 1
}

# A pin directory shared with another tool (issue 11, item 6): start-up
# removes only a stale pin of scx_cadence's own names, the exit only its own
# pins; the other tool's pin and the directory stay.
case_pin_dir_keeps_foreign_pins() {
	local dir=/sys/fs/bpf/shared log=$VM_OUT/pinshared.sched.log
	rm -rf "$dir"
	mkdir -m 0700 "$dir"
	bpftool map create "$dir/other_tool" type array key 4 value 4 entries 1 name other_tool ||
		fail "bpftool map create other_tool" || return 1
	# What a killed scx_cadence leaves: a pin named like one of its maps.
	bpftool map create "$dir/policy" type array key 4 value 4 entries 1 name stale ||
		fail "bpftool map create policy" || return 1
	start_sched "$log" --pin-dir "$dir" || return 1
	[ -e "$dir/other_tool" ] || fail "start-up removed another tool's pin" || return 1
	grep -q "removed 1 stale pins from $dir" "$log" ||
		fail "the stale pin was not reported: $(grep -i stale "$log")" || return 1
	[ "$(PIN_DIR=$dir bpf_generation)" = 1 ] || fail "the pins are not the new instance's" || return 1
	stop_sched
	bpftool map dump pinned "$dir/other_tool" >/dev/null || fail "exit removed another tool's pin" || return 1
	local left
	left=$(find "$dir" -mindepth 1 -printf '%f ')
	[ "$left" = "other_tool " ] || fail "left in $dir after exit: $left" || return 1
	rm -rf "$dir"
}

# A second instance fails clearly and leaves the first one's socket, pins
# and policy alone.
case_second_instance_keeps_control() {
	start_sched "$VM_OUT/second2.sched.log" || return 1
	"$SCHED" ctl switch powersave >/dev/null || fail "ctl switch failed" || return 1
	local out gen
	gen=$(bpf_generation)
	out=$("$SCHED" --policy performance 2>&1)
	[ $? -eq 1 ] && [[ $out == *"already loaded"* ]] || fail "second instance: $out" || return 1
	"$SCHED" ctl get | grep -q '^generation 2 policy powersave$' || fail "ctl lost after the second instance" || return 1
	[ "$(bpf_generation)" = "$gen" ] && [ -e "$PIN_DIR/policy" ] || fail "pins disturbed" || return 1
	stop_sched
}

# Stats: one reading as text (per CPU), JSON and OpenMetrics.
case_stats_formats() {
	start_sched "$VM_OUT/statsfmt.sched.log" || return 1
	hackbench -g 2 -l 50 >/dev/null
	local n text
	n=$(nproc)
	text=$("$SCHED" stats --per-cpu)
	echo "$text"
	[ "$(echo "$text" | wc -l)" -eq $((n + 1)) ] || fail "want 1 + $n lines" || return 1
	# The default line: short, and only the steps of the order in force;
	# -v has every counter.
	text=$("$SCHED" stats)
	echo "$text"
	[ "$(echo "$text" | wc -l)" -eq 1 ] && [ "${#text}" -le 160 ] || fail "the default line is not one short line" || return 1
	case $text in
	"balanced gen 1 | "*" | wake "*" big "*) ;;
	*) fail "the default line lacks the policy or the small-core steps" || return 1 ;;
	esac
	case $text in *llc-core*) fail "the default line shows the core order's steps" || return 1 ;; esac
	"$SCHED" stats -v | grep -q "wake: prev-core [0-9]* llc-core" || fail "stats -v lacks the core order's steps" || return 1
	"$SCHED" stats --format json | python3 -c '
import json, sys
m = json.load(sys.stdin)
assert m["policy"] == "balanced" and m["policy_generation"] == 1, m
assert m["placement_order"] == "small_core", m["placement_order"]
assert len(m["cpus"]) == m["nr_cpus"], m
assert m["total"]["enq_pinned"] == sum(c["enq_pinned"] for c in m["cpus"].values())
# The default small-core order counts its own levels (place_*).
assert m["total"]["place_prev_small"] + m["total"]["place_idle_big"] > 0, m["total"]
assert m["cpufreq"]["cpufreq_issued"] == sum(c["cpufreq_issued"] for c in m["cpu_cpufreq"].values()), m["cpufreq"]
' || fail "bad JSON stats" || return 1
	"$SCHED" stats --format openmetrics >"$VM_OUT/stats.om"
	tail -n 1 "$VM_OUT/stats.om" | grep -qx '# EOF' || fail "OpenMetrics without # EOF" || return 1
	grep -q '^scx_cadence_enq_llc_total{cpu="0"} [0-9]*$' "$VM_OUT/stats.om" || fail "no per-CPU counter" || return 1
	grep -q '^scx_cadence_policy_info{name="balanced"} 1$' "$VM_OUT/stats.om" || fail "no policy info" || return 1
	grep -q '^scx_cadence_cgroup_cpu_weight{cgroup="/"} [0-9]*$' "$VM_OUT/stats.om" || fail "no per-cgroup series" || return 1
	# Under the core order the default line shows its steps instead.
	"$SCHED" ctl set placement.order=core >/dev/null || return 1
	text=$("$SCHED" stats)
	echo "$text"
	case $text in
	"balanced* gen 2 | "*" | wake "*" prev-core "*" llc-core "*) ;; # * marks an edited policy
	*) fail "the default line lacks the core order's steps after the switch" || return 1 ;;
	esac
	case $text in *" big "* | *" near "*) fail "the default line shows the small-core steps under the core order" || return 1 ;; esac
	stop_sched
}
