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

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
rounds=${1:-5}
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
check_count "bench/run.sh" "$rounds"
bench_setup
build_floor
build_wakelat
install_bpfland
install_lavd
bpfland=$BPFLAND

# scx_cadence before utilization tracking (lib.sh), built once.
build_base

cpus=4
out=$ROOT/bench/out/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$ROOT/tests/vm/boot.sh" --cpus $cpus --memory 2G --out "$out" -- \
	bash "$ROOT/bench/guest.sh" "$rounds" eevdf \
	"scx_cadence=$ROOT/target/release/scx_cadence" \
	"scx_cadence_nolat=$ROOT/target/release/scx_cadence" \
	"scx_cadence_timer=$ROOT/target/release/scx_cadence" \
	"scx_cadence_base=$BASE" \
	"scx_bpfland=$bpfland" \
	"scx_lavd=$LAVD" \
	"scx_floor=$FLOOR"

date=$(date +%Y-%m-%d)
# One file per date and commit: a later run never overwrites a recorded one.
result=$ROOT/bench/results/$date-$(git -C "$ROOT" rev-parse --short HEAD).md
{
	echo "# scx_cadence benchmarks, $date"
	echo
	echo "Commit $(git -C "$ROOT" rev-parse --short HEAD), $rounds rounds, schedulers interleaved"
	echo "(order rotated each round) in one boot."
	echo
	echo "- Host: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"
	# shellcheck source=/dev/null # the machine's file, not ours
	echo "  $(free -g | awk '/Mem:/ { print $2 }') GiB, $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)."
	echo "- Guest: QEMU TCG on one host thread (no KVM), $cpus vCPUs, 2 GiB, Debian kernel $SCX_CADENCE_KERNEL_VERSION,"
	echo "  virtme-ng with the host's root file system."
	echo "- Peers: scx_bpfland $BPFLAND_VERSION and scx_lavd $LAVD_VERSION from crates.io, default options;"
	echo "  scx_cadence_nolat is this scx_cadence with latency.wakeup_preempt, latency.sync_wakeup and latency.slice_timer_us off;"
	echo "  scx_cadence_timer is this scx_cadence with latency.slice_timer_us = 500 (every preset leaves it off);"
	echo "  scx_cadence_base is scx_cadence at $BASE_COMMIT, before utilization tracking;"
	echo "  scx_floor (bench/floor) is the least a sched_ext scheduler does: what sched_ext itself costs."
	echo
	echo "Medians; in parentheses the ratio to EEVDF's median (lower is better)."
	echo
	python3 "$ROOT/bench/summarize.py" "$out/raw.csv" "$out/bpf.csv"
} >"$result"
cat "$result"
echo "bench: written to $result"
