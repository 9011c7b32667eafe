#!/usr/bin/env bash
# The idle-prediction bench (issue 13, "How it is measured"): how often teo,
# seed 003's predictor and this project's per-choice variant pick the right
# idle state, as the seed scores it, on
#   - synthetic traces (bench/idle_traces.py: periodic, bimodal, a pattern
#     that changes half way, alternating, Markov runs, bursts, timers with their
#     sleep length, timers cut short by interrupts), made here, deterministic;
#   - traces recorded in one VM boot under the seed's kinds of load
#     (bench/idle_guest.sh: schbench-like, hackbench, sleeping-ebizzy-like,
#     pgbench-like), with the Intel state table from a file;
# each replayed (`scx_cadence idle replay`, the BPF learner through
# BPF_PROG_TEST_RUN, here on the host) with the Intel and the POWER9 tables,
# for teo, seed 003 and per_choice with a random pick and with the
# heaviest pick (the balanced policy's). The VM part also measures the learner's BPF cost per
# callback. Writes bench/results/<date>-<commit>-idle.md with seed 003's
# own figures beside and a verdict per target of the issue.
#   bench/idle.sh [SECONDS [ROUNDS]]
# SECONDS per recording (default 3); ROUNDS of the cost phases, learner on
# and off alternating in one boot (default 3: under TCG one round's cost
# per call moves by half from boot to boot).
# Needs root on the host for the replays. No assertions: it prints numbers.
set -euo pipefail

seconds=${1:-3}
rounds=${2:-3}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/idle.sh" "$seconds"
check_count "bench/idle.sh" "$rounds"
bench_setup
install_plotting
sched=$ROOT/target/release/scx_cadence

bench_out idle-
mkdir -p "$out/replay"
declare -A tables=(
	[intel]=$ROOT/docs/idle-states/intel-skylake-sp.txt
	[power9]=$ROOT/docs/idle-states/power9.txt
	[juno]=$ROOT/docs/idle-states/juno-r0-a57.txt
)

python3 "$ROOT/bench/idle_traces.py" "$out"
"$ROOT/tests/vm/boot.sh" --cpus 4 --memory 2G --out "$out" -- \
	bash "$ROOT/bench/idle_guest.sh" "$seconds" "${tables[intel]}" "$rounds"

# The balanced policy's knobs with the random pick instead of heaviest.
printf '[idle]\npick = "random"\n' >"$out/random.toml"
for trace in periodic bimodal changing alternating markov bursts timer timer_irq wakeup hackbench sleepy pingpong; do
	for table in intel power9 juno; do
		for pick in random heaviest; do
			policy=balanced
			[ $pick = random ] && policy=$out/random.toml
			"$sched" idle replay "$out/$trace.trace" --idle-states "${tables[$table]}" \
				--policy "$policy" --format json >"$out/replay/$trace.$table.$pick.json"
		done
	done
done

result_file "-idle"
{
	echo "# Idle-state prediction: teo, seed and per_choice, $date"
	echo
	echo "Commit $commit. Each trace replayed through the BPF learner (\`scx_cadence idle replay\`)"
	echo "with each state table (docs/idle-states/), balanced's [idle] knobs (learning_rate 10)."
	echo
	echo "- Synthetic traces: bench/idle_traces.py, 4 CPUs x 4000 periods each, seeded."
	echo "- Recorded traces: one boot of QEMU TCG on one host thread, 4 vCPUs, Debian kernel"
	echo "  $SCX_CADENCE_KERNEL_VERSION, no cpuidle driver, scx_cadence with the Intel table from a file;"
	echo "  ${seconds} s per load. Replayed with the Intel table, each CPU starts from the table it had"
	echo "  learned when the recording began; with POWER9's (7 states, not 4) it starts fresh."
	echo
	python3 -B "$ROOT/bench/summarize_idle.py" "$out"
	echo
	"$PLOT_PYTHON" -B "$ROOT/bench/plot.py" idle "$out" "${result%.md}.png"
	echo "![Idle-state predictions]($(basename "${result%.md}.png"))"
} | publish_result
