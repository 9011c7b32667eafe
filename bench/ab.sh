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
commits=()
for c in "$@"; do
	short=$(git -C "$ROOT" rev-parse -q --verify --short=7 "$c^{commit}") || {
		echo "bench/ab.sh: '$c' is not a commit of this repository" >&2
		exit 2
	}
	commits+=("$short")
done
bench_setup
install_bpfland

bench_out "ab-"
scheds=(eevdf)
for c in "${commits[@]}"; do
	build_commit "$c" "$CACHE/ab-$c"
	bin=$CACHE/ab-$c/target/release/scx_cadence
	# guest.sh gives the idle-state file only to the scx_cadence names, and
	# boot.sh hands it one line split on spaces: a wrapper adds it here, for
	# builds that have the idle learner (before it, the option is refused).
	states=""
	if "$bin" --help | grep -- --idle-states >/dev/null; then
		states="--idle-states $ROOT/docs/idle-states/intel-skylake-sp.txt"
	fi
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$bin" "$states" >"$out/cadence_$c.sh"
	chmod +x "$out/cadence_$c.sh"
	scheds+=("cadence_$c=$out/cadence_$c.sh")
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
