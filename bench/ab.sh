#!/usr/bin/env bash
# Compares scx_cadence builds in one VM boot: EEVDF, scx_cadence as it was at
# each COMMIT (built once into .cache/ab-<commit>), this tree's release build
# twice (scx_cadence, scx_cadence_again), once more with the workloads in a
# cgroup (scx_cadence_cg) and scx_bpfland, interleaved round
# by round as in bench/run.sh, and prints the same table of medians, ratios
# to EEVDF and BPF cost per callback. For telling a code change from
# boot-to-boot spread, which under TCG is larger than most changes: two
# bench/run.sh files from different boots do not show which.
#   bench/ab.sh ROUNDS COMMIT...
# The table stays in bench/out/ab-<date>/summary.md (ignored); no result file.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ $# -lt 2 ]; then
	echo "usage: bench/ab.sh ROUNDS COMMIT..." >&2
	exit 2
fi
rounds=$1
shift
check_count "bench/ab.sh" "$rounds"
resolve_commits "bench/ab.sh" "$@"
bench_setup
install_bpfland

bench_out "ab-"
scheds=(eevdf)
for c in "${commits[@]}"; do
	add_commit_sched "$c"
done
# This tree's build runs twice, under two names: the gap between their two
# columns is how far one binary's medians differ from themselves in this
# boot, the least a change must move a row by to show (docs/benchmarks.md,
# "The same build twice in one boot").
# And once more with every workload in a cgroup (bench/guest.sh,
# cg_workloads()): the cost per callback with cgroup weights at work.
scheds+=("scx_cadence=$ROOT/target/release/scx_cadence"
	"scx_cadence_again=$ROOT/target/release/scx_cadence"
	"scx_cadence_cg=$ROOT/target/release/scx_cadence" "scx_bpfland=$BPFLAND")

"$ROOT/tests/vm/boot.sh" --cpus 4 --memory 2G --out "$out" -- \
	bash "$ROOT/bench/guest.sh" "$rounds" "${scheds[@]}"
python3 "$ROOT/bench/summarize.py" "$out/raw.csv" "$out/bpf.csv" | tee "$out/summary.md"
echo "bench/ab.sh: written to $out/summary.md"
