#!/usr/bin/env bash
# Builds scx_cadence (release) and runs the VM test cases in one boot of the
# sched_ext kernel. Prints a line per case and, last, "vm: N passed, N failed".
#   tests/vm/run.sh [-k PATTERN]    (PATTERN: run only the cases matching it)
# Output of each case is kept under tests/vm/out/<date>/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
"$ROOT/tests/vm/setup.sh"
# shellcheck source=/dev/null
. "$CACHE/env"

cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" 2>&1 | tail -n 1

# Case files, one per area, each run in a VM with the topology it needs.
CASES=("$ROOT/tests/vm/guest/base.sh")

out=$ROOT/tests/vm/out/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
set +e
"$ROOT/tests/vm/boot.sh" --cpus 4 --out "$out" -- \
	bash "$ROOT/tests/vm/guest/run.sh" "${CASES[@]}" "$@"
set -e

# Judge from what the guest wrote, not from the VM's exit code: a guest that
# died half-way leaves no tally.
if ! tail -n 1 "$out/results" 2>/dev/null | grep -q '^vm: '; then
	echo "the VM died before the cases finished; see $out"
	echo "vm: 0 passed, 1 failed"
	exit 1
fi
if grep -q '^FAIL' "$out/results"; then
	for log in $(grep '^FAIL' "$out/results" | awk '{ sub(":", "", $2); print $2 }'); do
		echo "--- $log.log"
		tail -n 20 "$out/$log.log"
	done
	tail -n 1 "$out/results"
	exit 1
fi
