#!/usr/bin/env bash
# Instructions, not time: the guest's executed instructions per hackbench
# run and per pipe round trip, counted by a QEMU TCG plugin
# (bench/insncount/insncount.c), in all, in the kernel, and in each BPF
# program, per context switch; for EEVDF, this tree's scx_cadence, each
# COMMIT's build (built once into .cache/ab-<commit>, as bench/ab.sh does)
# and scx_bpfland, in one VM boot, the order rotated each round.
# Under TCG a callback's run_time_ns moves by a third from round to round
# with the host's load; its instruction count does not, so two builds'
# costs compare here without a same-build spread (docs/benchmarks.md).
#   bench/insncount.sh [ROUNDS [COMMIT...]]    (default 2 rounds)
# The tables stay in bench/out/insncount-<date>/summary.md (ignored).
set -euo pipefail

rounds=${1:-2}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/insncount.sh" "$rounds"
shift || true
commits=()
for c in "$@"; do
	short=$(git -C "$ROOT" rev-parse -q --verify --short=7 "$c^{commit}") || {
		echo "bench/insncount.sh: '$c' is not a commit of this repository" >&2
		exit 2
	}
	commits+=("$short")
done
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
# A command with options goes to the guest as a wrapper script: boot.sh
# hands the guest its command line split on spaces. scx_cadence gets the
# Intel idle table, as in bench/guest.sh, so the idle learner's cost counts.
wrap() {
	local bin=$1 opts=""
	if "$bin" --help | grep -- --idle-states >/dev/null; then
		opts="--idle-states $ROOT/docs/idle-states/intel-skylake-sp.txt"
	fi
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$bin" "$opts" >"$out/$2.sh"
	chmod +x "$out/$2.sh"
	echo "$2=$out/$2.sh"
}
scheds=(eevdf "$(wrap "$ROOT/target/release/scx_cadence" scx_cadence)")
for c in "${commits[@]}"; do
	build_commit "$c" "$CACHE/ab-$c"
	scheds+=("$(wrap "$CACHE/ab-$c/target/release/scx_cadence" "cadence_$c")")
done
scheds+=("scx_bpfland=$BPFLAND")

"$ROOT/tests/vm/boot.sh" --cpus 4 --memory 2G --out "$out" \
	--plugin "$tools/libinsncount.so,out=$out/insns.txt" -- \
	bash "$ROOT/bench/insncount_guest.sh" "$tools/mark" "$rounds" "${scheds[@]}"
python3 "$ROOT/bench/insncount.py" "$out" | tee "$out/summary.md"
echo "bench/insncount.sh: written to $out/summary.md"
