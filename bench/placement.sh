#!/usr/bin/env bash
# The placement bench (issue 6): in one boot of an 8-vCPU VM shaped as 2
# cores x 4 threads, how evenly EEVDF, scx_cadence and scx_bpfland spread
# 2, 4 and 6 CPU-bound tasks (a) over the interleaved small cores of a
# POWER9-like big core that a topology file declares to scx_cadence
# ({0,2,4,6} and {1,3,5,7}), and (b) over QEMU's own SMT4 cores; each quiet
# and with short commands forked beside them 30 times a second (issue 15),
# with the CPU-bound tasks' migrations per second. Writes
# bench/results/<date>-<commit>-placement.md.
#   bench/placement.sh [SECONDS]    (per run; default 10)
set -euo pipefail

seconds=${1:-10}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/placement.sh" "$seconds"
bench_setup
install_bpfland

bench_out "placement-"
"$ROOT/tests/vm/boot.sh" --cpus 8 --smp 1,2,4 --memory 2G --out "$out" -- \
	bash "$ROOT/bench/placement_guest.sh" "$seconds" eevdf \
	"scx_cadence=$ROOT/target/release/scx_cadence" "scx_bpfland=$BPFLAND"

result_file "-placement"
{
	echo "# Placement over small cores: EEVDF, scx_cadence, scx_bpfland, $date"
	echo
	echo "Commit $commit, one boot, ${seconds} s per run, 100 ms samples; churn runs fork"
	echo "awk, sleep and cat (busybox) 30 times a second from 3 processes beside the tasks."
	echo
	echo "- Guest: QEMU TCG on one host thread, 8 vCPUs as 1 socket x 2 cores x 4 threads,"
	echo "  Debian kernel $SCX_CADENCE_KERNEL_VERSION. Peers: scx_bpfland $BPFLAND_VERSION, default options."
	echo "- interleaved: scx_cadence is given a topology file declaring one big core of two"
	echo "  small cores {0,2,4,6} and {1,3,5,7} (POWER9's interleaving); the others see QEMU's"
	echo "  cores 0-3 and 4-7, which are not those small cores."
	echo "- natural: everyone reads QEMU's topology; the groups are its SMT4 cores 0-3 and 4-7"
	echo "  (QEMU gives each thread its own L1, so to scx_cadence these are big cores)."
	echo
	python3 "$ROOT/bench/summarize_placement.py" "$out/placement.jsonl"
} | publish_result
