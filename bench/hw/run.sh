#!/usr/bin/env bash
# The A/B kit for a real sched_ext machine (issue 52): does scx_cadence save
# energy without costing performance here? EEVDF with the machine's own
# cpufreq governor against scx_cadence with each preset, rounds interleaved
# (the order rotated each round), on five workloads: hackbench, a light
# periodic load, compile-like bursts of short processes, an idle period, and
# cyclictest beside a steady hackbench. Around each workload
# (bench/hw/meter.py): package and core energy (RAPL), average frequency,
# C-state residency and the kernel's cpuidle above/below counts; the
# workload's own time; beside cyclictest, wake-to-run delays (bench/wakelat).
# Writes bench/results/<date>-<commit>-hw.md (medians, ratios to EEVDF with
# their spread over the rounds, and what could not be measured), the raw
# CSV and a PNG beside it.
#   bench/hw/run.sh [--dry-run] [ROUNDS]     (default 5)
# Needs root, hackbench and cyclictest (rt-tests), stress-ng and python3,
# and a kernel with sched_ext; builds scx_cadence and scx_wakelat if they
# are not built (cargo, clang >= 19: BPF_CLANG). Refuses, in one line, to
# run without root, and in a virtual machine unless --dry-run: there it
# walks every step once, with short workloads and one round, and says what
# it could not measure and why (the VM case case_hw_kit_dry_run runs it so).
set -euo pipefail

HW=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# ROOT, the count check, the result file and the figure, as the VM benches
# have them (nothing of their VM setup runs here).
# shellcheck source=bench/lib.sh
. "$HW/../lib.sh"
dry=""
if [ "${1:-}" = --dry-run ]; then
	dry=1
	shift
fi
rounds=${1:-5}
check_count "bench/hw/run.sh" "$rounds"
if [ "$(id -u)" -ne 0 ]; then
	echo "bench/hw/run.sh: needs root (sched_ext, RAPL's energy counters, cpuidle)" >&2
	exit 2
fi
# A virtual machine's energy, frequency and idle states say nothing of the
# hardware under it.
virt=$(systemd-detect-virt --vm 2>/dev/null) || virt=""
[ "$virt" = none ] && virt=""
if [ -z "$virt" ] && grep -qw hypervisor /proc/cpuinfo; then
	virt="a hypervisor, by the cpuinfo flag"
fi
if [ -n "$virt" ] && [ -z "$dry" ]; then
	echo "bench/hw/run.sh: this is a virtual machine ($virt), whose energy and frequency say nothing of hardware; --dry-run walks the steps" >&2
	exit 2
fi
if [ ! -d /sys/kernel/sched_ext ]; then
	echo "bench/hw/run.sh: this kernel has no sched_ext (/sys/kernel/sched_ext)" >&2
	exit 2
fi
for tool in hackbench cyclictest stress-ng python3; do
	command -v "$tool" >/dev/null || {
		echo "bench/hw/run.sh: $tool is missing (Debian: apt-get install rt-tests stress-ng python3)" >&2
		exit 2
	}
done
[ -n "$dry" ] && rounds=1

SCHED=$ROOT/target/release/scx_cadence
WAKELAT=$ROOT/target/release/scx_wakelat
if [ ! -x "$SCHED" ] || [ ! -x "$WAKELAT" ]; then
	echo "bench/hw/run.sh: building scx_cadence and scx_wakelat (cargo build --release)"
	export BPF_CLANG=${BPF_CLANG:-$(command -v clang-19 || echo clang)}
	cargo build -q --release --locked --manifest-path "$ROOT/Cargo.toml"
	cargo build -q --release --locked --manifest-path "$ROOT/bench/wakelat/Cargo.toml" --target-dir "$ROOT/target"
fi
# The commit the result file names (result_file()): the tree's as the run
# starts, which may move on while it runs.
built_commit=$(git -C "$ROOT" rev-parse --short HEAD)

# SCX_CADENCE_HW_OUT: where the run's folder goes (the VM case's is
# writable; the checkout may not be).
out=${SCX_CADENCE_HW_OUT:-$ROOT/bench/out}/hw-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
raw=$out/raw.csv
: >"$raw"
n=$(nproc)
meter() { python3 "$HW/meter.py" "$@"; }
meter sources | tee "$out/sources.txt"

# The workloads' sizes, each `size DRY REAL`: a real run of each takes
# seconds to a minute on a laptop; --dry-run only checks that every step
# works.
size() { if [ -n "$dry" ]; then echo "$1"; else echo "$2"; fi; }
# hackbench: groups of 20 senders and 20 receivers, messages each.
HACK_ARGS=(-g "$(size 2 8)" -l "$(size 50 2000)")
# Light periodic load: a stress-ng worker per CPU busy 10% of each 100 ms, s.
LIGHT_S=$(size 2 30)
# Compile-like: bursts of 2 short processes per CPU, each a fixed loop.
BURSTS=$(size 1 8)
BURST_LOOPS=$(size 20000 3000000)
# An idle period, s: what the machine spends doing nothing.
IDLE_S=$(size 2 30)
# cyclictest, a thread per CPU every 1 ms beside one steady hackbench, s.
CYC_S=$(size 2 20)

# The schedulers: EEVDF with whatever governor the machine runs, and
# scx_cadence with each preset.
SCHEDS=(eevdf scx_cadence_performance scx_cadence_balanced scx_cadence_powersave)

# measure WORKLOAD CMD...: CMD run between two meter snapshots, with the
# frequency sampler running; its metrics (and its own wall time) recorded.
measure() {
	local w=$1 sampler
	shift
	rm -f "$out/freq"
	meter sample_freq "$out/freq" &
	sampler=$!
	meter snap "$out/before.json"
	"$@"
	meter snap "$out/after.json"
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	meter diff "$out/before.json" "$out/after.json" "$out/freq" "$w" | while IFS=, read -r m v; do
		record "$m" "$v"
	done
}
record() { echo "$round,$name,$1,$2" >>"$raw"; }

# The workloads, each a command measure() runs.
run_hackbench() {
	local t
	t=$(hackbench "${HACK_ARGS[@]}" 2>&1 | awk '/^Time:/ { print $2 }')
	record hackbench_time_s "$t"
}
run_light() {
	stress-ng --cpu "$n" --cpu-load 10 --cpu-method int64 --timeout "${LIGHT_S}s" >/dev/null 2>&1
}
run_bursts() {
	local b i start=$EPOCHREALTIME pids
	for b in $(seq "$BURSTS"); do
		pids=()
		for i in $(seq $((2 * n))); do
			python3 -c "for _ in range($BURST_LOOPS): pass" &
			pids+=($!)
		done
		# These alone: a bare `wait` would wait for the scheduler too.
		wait "${pids[@]}"
	done
	record bursts_time_s "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')"
}
run_idle() { sleep "$IDLE_S"; }
run_cyclictest() {
	local load tracer _k wn p50 p99 p999 max
	"$WAKELAT" cyclictest >"$out/wakelat.out" 2>"$out/wakelat.err" &
	tracer=$!
	while ! grep -q following "$out/wakelat.err" && kill -0 "$tracer" 2>/dev/null; do sleep 0.1; done
	hackbench -g 2 -l 100000000 >/dev/null 2>&1 &
	load=$!
	cyclictest --policy=other -t "$n" -i 1000 -D "$CYC_S" -q -m -h 20000 >"$out/cyc.raw" 2>/dev/null
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null || true
	kill -TERM "$tracer"
	wait "$tracer" || true
	read -r _ max p50 p99 p999 < <(python3 "$ROOT/bench/cyclic_hist.py" <"$out/cyc.raw") || true
	record cyclictest_p50_us "${p50:-}"
	record cyclictest_p99_us "${p99:-}"
	record cyclictest_p999_us "${p999:-}"
	record cyclictest_max_us "${max:-}"
	# n N p50_us A p99_us B p999_us C max_us D lost L
	read -r _k wn _k p50 _k p99 _k p999 _k max _k _ <"$out/wakelat.out" || true
	if [ "${wn:-0}" -gt 0 ]; then
		record wake_p50_us "$p50"
		record wake_p99_us "$p99"
		record wake_p999_us "$p999"
		record wake_max_us "$max"
	fi
}

# The sched_ext state helpers (wait_state) of the VM tests.
export VM_ROOT=$ROOT VM_OUT=$out
# shellcheck source=tests/vm/guest/lib.sh
. "$ROOT/tests/vm/guest/lib.sh"

if [ "$(sched_state)" != disabled ]; then
	echo "bench/hw/run.sh: a sched_ext scheduler is already loaded ($(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)); stop it first" >&2
	exit 2
fi

# Interrupted or failed, the kit stops the scheduler it started: the
# machine goes back to EEVDF.
pid=""
stop_started() {
	[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	return 0
}
trap stop_started EXIT

for round in $(seq "$rounds"); do
	k=${#SCHEDS[@]}
	for i in $(seq 0 $((k - 1))); do
		name=${SCHEDS[$(((i + round) % k))]}
		pid=""
		if [ "$name" != eevdf ]; then
			"$SCHED" --policy "${name#scx_cadence_}" >"$out/$name.$round.log" 2>&1 &
			pid=$!
			wait_state enabled 120 || {
				echo "bench/hw/run.sh: $name did not attach: $(tail -n 1 "$out/$name.$round.log")" >&2
				exit 1
			}
		fi
		echo "round $round: $name"
		for w in hackbench light bursts idle cyclictest; do
			measure "$w" "run_$w"
		done
		if [ -n "$pid" ]; then
			# The idle learner's table over this round, with the kernel's
			# own verdicts (cpu_idle_miss) against the ideal where its
			# cpuidle driver judged; the last round's goes in the summary.
			"$SCHED" idle stats >"$out/$name.idle.txt" 2>&1 || true
			kill -INT "$pid"
			wait "$pid" || {
				pid=""
				echo "bench/hw/run.sh: $name exited with an error: $(tail -n 1 "$out/$name.$round.log")" >&2
				exit 1
			}
			pid=""
		fi
	done
done

result_file "-hw"
[ -n "$dry" ] && result=$out/summary.md
cp "$raw" "${result%.md}.csv"
{
	echo "# scx_cadence on this machine against EEVDF, $date"
	echo
	[ -n "$dry" ] && echo "**Dry run** ($virt): one round of shortened workloads; not a measurement." && echo
	echo "Commit $commit; rounds: $rounds; schedulers interleaved (order rotated each round)."
	echo
	echo "- Machine: $n CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r)."
	sed 's/^/- /' "$out/sources.txt"
	governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)
	[ "$governor" = schedutil ] ||
		echo "- The cpufreq governor is $governor: scx_cadence's frequency hints reach the hardware only through schedutil, so here its rows differ from EEVDF's by scheduling alone."
	echo "- Workloads: \`hackbench ${HACK_ARGS[*]}\`; stress-ng, a worker per CPU at 10% for ${LIGHT_S} s;"
	echo "  bursts: $BURSTS, each $((2 * n)) Python loops of $BURST_LOOPS; ${IDLE_S} s idle; cyclictest"
	echo "  (a thread per CPU, 1 ms) for ${CYC_S} s beside a steady \`hackbench -g 2\`."
	echo
	python3 "$HW/summarize.py" "$raw"
	echo
	echo "### Idle-state predictions (\`scx_cadence idle stats\`, last round)"
	echo
	echo "The \`kernel\` row is the machine's cpuidle governor; \`k.above\` and \`k.below\` its periods the kernel itself called a miss (power:cpu_idle_miss), the check of the ideal the other rows are scored against."
	for s in "${SCHEDS[@]}"; do
		[ -e "$out/$s.idle.txt" ] || continue
		printf '\n%s:\n\n```\n' "$s"
		cat "$out/$s.idle.txt"
		printf '```\n'
	done
	echo
	if "$PLOT_PYTHON" -c 'import matplotlib' 2>/dev/null; then
		# Its own metrics: some share summarize.py's names, not their loads.
		plot_ratios "scx_cadence's presets against EEVDF on $(hostname)" --all
	else
		echo "(no PNG: matplotlib is not installed; Debian: apt-get install python3-matplotlib)"
	fi
} | publish_result
echo "bench/hw/run.sh: the raw figures in ${result%.md}.csv"
