#!/usr/bin/env bash
# Where a pipe round trip's time goes: `perf bench sched pipe -l 20000`
# under EEVDF, scx_cadence (this tree), scx_cadence_base (before
# utilization tracking, as in run.sh), scx_floor, scx_bpfland and scx_lavd,
# in one VM boot, the order rotated each round; for each sched_ext scheduler
# the BPF time of each program per round trip and per context switch
# (run_time_ns and run_cnt read around the run); with each COMMIT's build
# beside them (built once into .cache/ab-<commit>, as bench/ab.sh does).
# Prints the table; no result file.
#   bench/pipe_cost.sh [ROUNDS [COMMIT...]]    (default 3 rounds)
set -euo pipefail

rounds=${1:-3}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/pipe_cost.sh" "$rounds"
shift || true
resolve_commits "bench/pipe_cost.sh" "$@"
bench_setup
build_floor
install_bpfland
install_lavd
build_base

bench_out "pipe-"
scheds=(eevdf "scx_cadence=$ROOT/target/release/scx_cadence")
for c in "${commits[@]}"; do
	add_commit_sched "$c"
done
scheds+=("scx_cadence_base=$BASE" "scx_floor=$FLOOR" "scx_bpfland=$BPFLAND" "scx_lavd=$LAVD")
"$ROOT/tests/vm/boot.sh" --cpus 4 --memory 2G --out "$out" -- \
	bash "$ROOT/bench/pipe_guest.sh" "$rounds" "${scheds[@]}"
python3 "$ROOT/bench/pipe_cost.py" "$out/pipe.csv" | tee "$out/summary.md"
echo "bench/pipe_cost.sh: written to $out/summary.md"
