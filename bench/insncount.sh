#!/usr/bin/env bash
# Instructions, not time: the guest's executed instructions per hackbench
# run and per pipe round trip, counted by a QEMU TCG plugin
# (bench/insncount/insncount.c), in all, in the kernel, and in each BPF
# program, per context switch; for EEVDF, this tree's scx_cadence, each
# COMMIT's build (built once into .cache/ab-<commit>, as bench/ab.sh does)
# and scx_bpfland, in one VM boot, the order rotated each round.
# Under TCG a callback's run_time_ns moves by a third from round to round
# with the host's load; its instruction count hardly does, so two builds'
# costs compare here without a same-build spread (docs/benchmarks.md).
# Run it on a quiet host all the same: the guest's tick follows the wall
# clock, and a slower guest takes more ticks, preemptions and switches for
# the same work (a build beside it: +25% switches).
#   bench/insncount.sh [ROUNDS [COMMIT...]]    (default 2 rounds)
# The tables stay in bench/out/insncount-<date>/summary.md (ignored).
set -euo pipefail

rounds=${1:-2}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/insncount.sh" "$rounds"
shift || true
resolve_commits "bench/insncount.sh" "$@"
bench_setup
install_bpfland

# The plugin and the guest's marker, from bench/insncount/ (seconds).
tools=$ROOT/target/insncount
mkdir -p "$tools"
"$BPF_CLANG" -shared -fPIC -O2 -Wall -Wextra -Werror -o "$tools/libinsncount.so" \
	"$ROOT/bench/insncount/insncount.c"
"$BPF_CLANG" -O2 -static -nostdlib -fno-stack-protector -o "$tools/mark" \
	"$ROOT/bench/insncount/mark.c"

bench_out "insncount-"
scheds=(eevdf "scx_cadence=$ROOT/target/release/scx_cadence")
for c in "${commits[@]}"; do
	add_commit_sched "$c"
done
scheds+=("scx_bpfland=$BPFLAND")

"$ROOT/tests/vm/boot.sh" --cpus 4 --memory 2G --out "$out" \
	--plugin "$tools/libinsncount.so,out=$out/insns.txt" -- \
	bash "$ROOT/bench/insncount_guest.sh" "$tools/mark" "$rounds" "${scheds[@]}"
python3 "$ROOT/bench/insncount.py" "$out" | tee "$out/summary.md"
echo "bench/insncount.sh: written to $out/summary.md"
