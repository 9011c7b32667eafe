#!/usr/bin/env bash
# Wake-to-run delays where the scheduler decides them (issue 51): EEVDF,
# scx_cadence, scx_bpfland and scx_lavd in one VM boot, interleaved round
# by round, each running cyclictest (a thread per CPU, every 1 ms, 8 s)
# beside four loads: a CPU hog per CPU, hackbench back to back, one steady
# hackbench, and a pipe ping-pong pair. bench/wakelat times each wake-up of
# a cyclictest thread from sched_waking to the switch that runs it, which
# leaves out the timer's late delivery under TCG; cyclictest's own figures
# are printed beside. Writes the table of medians and ratios to EEVDF to
# bench/results/<date>-<commit>-wakeup.md.
#   bench/wakeup.sh [ROUNDS]    (default 5)
# No assertions: timings under TCG move from run to run, which is why all
# four run in the same boot, interleaved.
set -euo pipefail

rounds=${1:-5}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/wakeup.sh" "$rounds"
bench_setup
install_plotting
build_wakelat
install_bpfland
install_lavd

cpus=4
bench_out "wakeup-"
"$ROOT/tests/vm/boot.sh" --cpus $cpus --memory 2G --out "$out" -- \
	bash "$ROOT/bench/guest.sh" "$rounds" --latency eevdf \
	"scx_cadence=$ROOT/target/release/scx_cadence" \
	"scx_bpfland=$BPFLAND" \
	"scx_lavd=$LAVD"

result_file "-wakeup"
{
	echo "# Wake-to-run delays, $date"
	echo
	echo "Commit $commit, $rounds rounds, schedulers interleaved"
	echo "(order rotated each round) in one boot (bench/wakeup.sh)."
	echo
	describe_machines "$cpus"
	echo "- Peers: scx_bpfland $BPFLAND_VERSION and scx_lavd $LAVD_VERSION from crates.io, default options;"
	echo "  scx_cadence runs with the Intel idle-state table (docs/idle-states), so its idle learner is on."
	echo "- wake-to-run: from sched_waking to the sched_switch that runs a cyclictest thread"
	echo "  (bench/wakelat; percentiles are histogram bucket tops, at most 3.1% high)."
	echo
	echo "Medians of the rounds; in parentheses the ratio to EEVDF's median (lower is better)."
	echo
	python3 "$ROOT/bench/summarize.py" "$out/raw.csv" "$out/bpf.csv"
	echo
	plot_ratios "bench/wakeup.sh at $commit: ratios to EEVDF, $rounds rounds in one boot"
} | publish_result
