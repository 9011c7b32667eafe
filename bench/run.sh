#!/usr/bin/env bash
# Benchmarks EEVDF (the kernel's default), scx_cadence, scx_bpfland,
# scx_lavd and scx_floor (bench/floor: what sched_ext itself costs) side
# by side in one VM boot, alternating them round by round, and writes a
# table of medians and ratios against EEVDF to
# bench/results/<date>-<commit>.md.
#   bench/run.sh [ROUNDS]    (default 5)
# No assertions: under TCG timings move by tens of percent from run to run,
# which is why every scheduler runs in the same boot, interleaved.
set -euo pipefail

rounds=${1:-5}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/run.sh" "$rounds"
bench_setup
install_plotting
build_floor
build_wakelat
install_bpfland
install_lavd
bpfland=$BPFLAND

# scx_cadence before utilization tracking (lib.sh), built once.
build_base

cpus=4
bench_out ""
"$ROOT/tests/vm/boot.sh" --cpus $cpus --memory 2G --out "$out" -- \
	bash "$ROOT/bench/guest.sh" "$rounds" eevdf \
	"scx_cadence=$ROOT/target/release/scx_cadence" \
	"scx_cadence_nolat=$ROOT/target/release/scx_cadence" \
	"scx_cadence_timer=$ROOT/target/release/scx_cadence" \
	"scx_cadence_base=$BASE" \
	"scx_bpfland=$bpfland" \
	"scx_lavd=$LAVD" \
	"scx_floor=$FLOOR"

result_file ""
{
	echo "# scx_cadence benchmarks, $date"
	echo
	echo "Commit $commit, $rounds rounds, schedulers interleaved"
	echo "(order rotated each round) in one boot."
	echo
	describe_machines "$cpus"
	echo "- Peers: scx_bpfland $BPFLAND_VERSION and scx_lavd $LAVD_VERSION from crates.io, default options;"
	echo "  scx_cadence_nolat is this scx_cadence with latency.wakeup_preempt, latency.sync_wakeup and latency.slice_timer_us off;"
	echo "  scx_cadence_timer is this scx_cadence with latency.slice_timer_us = 500 (every preset leaves it off);"
	echo "  scx_cadence_base is scx_cadence at $BASE_COMMIT, before utilization tracking;"
	echo "  scx_floor (bench/floor) is the least a sched_ext scheduler does: what sched_ext itself costs."
	echo
	echo "Medians; in parentheses the ratio to EEVDF's median (lower is better)."
	echo
	python3 "$ROOT/bench/summarize.py" "$out/raw.csv" "$out/bpf.csv"
	echo
	plot_ratios "bench/run.sh at $commit: ratios to EEVDF, $rounds rounds in one boot"
} | publish_result
