# shellcheck shell=bash
# VM test cases for `cpufreq record` and `cpufreq replay` (issue 52, item 2).
# Sourced by run.sh after lib.sh; each case_* runs in its own shell.

# duty CPU BUSY_MS SLEEP_MS SECS: python busy BUSY_MS then asleep SLEEP_MS
# in turn on CPU, for SECS seconds, in the background; its PID in DUTY.
duty() {
	taskset -c "$1" python3 -c "import time
end = time.time() + $4
while time.time() < end:
    t = time.perf_counter() + $2 / 1000
    while time.perf_counter() < t: pass
    time.sleep($3 / 1000)" >/dev/null 2>&1 &
	DUTY=$!
}

# What `cpufreq record` printed, the live counts of the recorded steps by
# verdict, is what `cpufreq replay` of its trace gives under the recorded
# knobs, and every step's verdict and target are the recorded ones, across
# a policy change in the middle of the recording (each CPU joins again
# under the new band). Steps under load and going idle, no record dropped.
# The band sweep has a row per band and policy; with band 0 nothing is
# suppressed by hysteresis, and in performance mode (always 1024) the target
# is never above util's and each CPU asks at most once per join.
case_cpufreq_record_then_replay_gives_the_live_counts() {
	local trace=$VM_OUT/cpufreq.trace seq0 hog_pid
	start_sched "$VM_OUT/cpufreq_record.sched.log" --set cpufreq.band=64 || return 1
	seq0=$(enable_seq)
	duty 1 30 20 8
	hog_pid=$(hog 2 0)
	sleep 1
	"$SCHED" cpufreq record --seconds 4 --format json "$trace" >"$VM_OUT/cpufreq_record.live.json" &
	local rec=$!
	sleep 2
	kill "$hog_pid"
	"$SCHED" ctl set cpufreq.band=16 >/dev/null || fail "ctl set failed" || return 1
	wait "$rec" || fail "cpufreq record failed: $(cat "$VM_OUT/cpufreq_record.live.json")" || return 1
	wait "$DUTY"
	"$SCHED" cpufreq replay "$trace" --format json >"$VM_OUT/cpufreq_replay.json" ||
		fail "cpufreq replay failed: $(cat "$VM_OUT/cpufreq_replay.json")" || return 1
	printf '[cpufreq]\nmode = "performance"\n' >"$VM_OUT/performance_mode.toml"
	local sweep=(--policy recorded --policy "$VM_OUT/performance_mode.toml" --band 0..128:32)
	"$SCHED" cpufreq replay "$trace" "${sweep[@]}" || fail "the band sweep failed" || return 1
	"$SCHED" cpufreq replay "$trace" "${sweep[@]}" --format json >"$VM_OUT/cpufreq_sweep.json" ||
		fail "the band sweep failed" || return 1
	python3 - "$VM_OUT/cpufreq_record.live.json" "$VM_OUT/cpufreq_replay.json" "$trace" \
		"$VM_OUT/cpufreq_sweep.json" <<'PY' ||
import json, sys
live = json.load(open(sys.argv[1]))
replay = json.load(open(sys.argv[2]))
lines = [json.loads(l) for l in open(sys.argv[3])]
sweep = json.load(open(sys.argv[4]))["rows"]
bad = []
joins = [l["join"] for l in lines if "join" in l]
steps = [l["step"] for l in lines if "step" in l]
rec = replay["recorded"]
print(f"live: {live['steps']} steps, {live['joins']} joins of CPUs {live['cpus']}, drops {live['drops']}")
print(f"live busy {live['busy']}\nlive idle {live['idle']}")
print(f"replay busy {rec['busy']}\nreplay idle {rec['idle']}; {rec['same_as_recorded']} of {rec['steps']} as recorded")
if live["drops"] != 0:
    bad.append(f"{live['drops']} records dropped")
if len(steps) != live["steps"] or rec["steps"] != live["steps"]:
    bad.append(f"{len(steps)} step lines, replay {rec['steps']}, live {live['steps']}")
if rec["same_as_recorded"] != rec["steps"]:
    bad.append(f"{rec['steps'] - rec['same_as_recorded']} steps decided otherwise")
if rec["busy"] != live["busy"] or rec["idle"] != live["idle"]:
    bad.append("replay and live counts differ")
busy = sum(live["busy"].values())
if busy < 500 or live["busy"]["issued"] < 10 or sum(live["idle"].values()) < 10:
    bad.append(f"too little recorded: busy {live['busy']}, idle {live['idle']}")
for cpu in (1, 2):
    bands = [j["knobs"]["band"] for j in joins if j["cpu"] == cpu]
    if bands[:1] != [64] or 16 not in bands:
        bad.append(f"CPU {cpu} joined with bands {bands}, want 64 then 16")
if len(sweep) != 10:
    bad.append(f"{len(sweep)} sweep rows, want 2 policies x 5 bands")
for r in sweep:
    name = f"{r['policy']} band {r['band']}"
    if r["band"] == 0 and r["busy"]["hysteresis"] != 0:
        bad.append(f"{name}: {r['busy']['hysteresis']} hysteresis suppressions")
    # Performance mode asks for 1024 always: never above util's, nothing
    # to suppress but the rate limit, and at most one request per join.
    if r["policy"] != "recorded" and (r["above_ns"] != 0 or r["busy"]["hysteresis"]
                                      or r["busy"]["hold"] or r["issued"] > len(joins)):
        bad.append(f"{name}: above {r['above_ns']} ns, busy {r['busy']}, issued {r['issued']}")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
PY
		fail "replay and live differ (see above)" || return 1
	attached_throughout "$seq0" || return 1
	stop_sched
}

# A recording while another (idle or cpufreq) runs, and a FILE that cannot
# be written, are refused in one line and leave the recording in progress
# going; no scheduler is refused too.
case_cpufreq_record_refusals() {
	local out rc first
	start_sched "$VM_OUT/cpufreq_refused.sched.log" || return 1
	"$SCHED" cpufreq record --seconds 5 --format json "$VM_OUT/first.trace" \
		>"$VM_OUT/cpufreq_first.json" &
	first=$!
	sleep 2
	out=$("$SCHED" cpufreq record --seconds 1 "$VM_OUT/second.trace" 2>&1)
	rc=$?
	echo "second: rc=$rc $out"
	[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ $out == *"another recording"*"is in progress"* ]] ||
		fail "a second recording was not refused: rc=$rc $out" || return 1
	[ ! -e "$VM_OUT/second.trace" ] || fail "the refused recording wrote its file" || return 1
	out=$("$SCHED" idle record --seconds 1 "$VM_OUT/idle.trace" 2>&1)
	rc=$?
	echo "idle record meanwhile: rc=$rc $out"
	[ $rc -eq 1 ] && [[ $out == *"another recording"*"is in progress"* ]] ||
		fail "an idle recording was not refused: rc=$rc $out" || return 1
	[ ! -e "$VM_OUT/idle.trace" ] || fail "the refused idle recording wrote its file" || return 1
	wait "$first" || fail "the first recording failed: $(cat "$VM_OUT/cpufreq_first.json")" || return 1
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["steps"] > 0 and d["drops"] == 0, d' \
		"$VM_OUT/cpufreq_first.json" || fail "the first recording recorded nothing" || return 1
	out=$("$SCHED" cpufreq record --seconds 1 /nonexistent/dir/trace 2>&1)
	rc=$?
	echo "unwritable: rc=$rc $out"
	[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ $out == *"cannot write /nonexistent/dir/trace"* ]] ||
		fail "an unwritable FILE was not refused: rc=$rc $out" || return 1
	stop_sched
	out=$("$SCHED" cpufreq record --seconds 1 "$VM_OUT/none.trace" 2>&1)
	rc=$?
	echo "no scheduler: rc=$rc $out"
	[ $rc -eq 1 ] && [[ $out == *"no scheduler is running"* ]] ||
		fail "no scheduler was not refused: rc=$rc $out" || return 1
}
