#!/usr/bin/env bash
# The test suite, from a fresh Debian 12 machine (run as root): installs
# what it needs (tests/vm/setup.sh), checks formatting and lints, runs the
# host tests (cargo test) and then the VM tests (tests/vm/run.sh).
#   tests/run.sh          the VM cases' quick set on 7.x: about 15 minutes
#                         from a warm cache on a 2-core machine
#   tests/run.sh --full   every VM case on 7.x, then the core set on 6.16:
#                         what CI runs (.ci/run), about an hour
set -euo pipefail
full=""
case ${1:-} in
--full) full=1 ;;
"") ;;
*)
	echo "usage: tests/run.sh [--full]" >&2
	exit 2
	;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
cd "$ROOT"

command -v cargo >/dev/null || {
	echo "tests/run.sh: cargo not found: install Rust >= 1.91 with rustup" >&2
	exit 1
}
tests/vm/setup.sh
# shellcheck source=/dev/null
. "$CACHE/env"

# Everything builds with --release: the VM tests need the release binary
# anyway, so the dependencies compile once, and the 100,000-sequence PELT
# comparison runs in seconds instead of minutes.
echo "== format and lints"
cargo fmt --check
clang-format-19 --dry-run -Werror bpf/*.c bpf/*.h
cargo clippy --release --locked --all-targets -- -D warnings
# The bench's own crates, floor scheduler (bench/floor) and wake-to-run
# tracer (bench/wakelat), in the same target directory; their BPF files
# follow bpf/'s style.
for crate in floor wakelat; do
	manifest=(--manifest-path "bench/$crate/Cargo.toml")
	cargo fmt --check "${manifest[@]}"
	clang-format-19 --style=file:bpf/.clang-format --dry-run -Werror "bench/$crate/$crate.bpf.c"
	cargo clippy --release --locked --all-targets "${manifest[@]}" --target-dir target -- -D warnings
done
# The instruction-count bench's QEMU plugin and guest marker
# (bench/insncount.sh): formatted as bpf/, and they compile.
clang-format-19 --style=file:bpf/.clang-format --dry-run -Werror bench/insncount/*.c
"$BPF_CLANG" -fsyntax-only -Wall -Wextra -Werror bench/insncount/*.c
# Every shell script; -x follows the `# shellcheck source=` paths, which
# are relative to the repository root.
shellcheck -x .ci/run tests/*.sh tests/vm/*.sh tests/vm/guest/*.sh bench/*.sh bench/hw/*.sh

echo "== host tests"
# As root the BPF test programs load; were they to skip (no CAP_BPF), this
# makes that a failure instead (src/bpf_test_progs.rs).
SCX_CADENCE_REQUIRE_BPF=1 cargo test --release --locked
# The wake-to-run tracer's histogram math (bench/wakelat).
cargo test --release --locked --manifest-path bench/wakelat/Cargo.toml --target-dir target

if [ -z "$full" ]; then
	echo "== VM tests, Debian unstable's kernel (7.x): the quick set"
	tests/vm/run.sh --quick
	exit
fi
echo "== VM tests, Debian unstable's kernel (7.x): every case"
tests/vm/run.sh
echo "== VM tests, the oldest kernel named (6.16): the core set"
tests/vm/run.sh --kernel 6.16
