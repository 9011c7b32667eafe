# shellcheck shell=bash
# Sourced by the bench scripts (run.sh, cpufreq.sh, placement.sh), which
# set ROOT and CACHE first.

# check_count SCRIPT VALUE: VALUE must be a positive whole number (a count
# of rounds or seconds); else one line and exit 2.
check_count() {
	case $2 in
	'' | *[!0-9]* | 0)
		echo "$1: '$2' is not a positive whole number" >&2
		exit 2
		;;
	esac
}

# bench_setup: what every bench needs: tests/vm/setup.sh's installs and
# kernel, its environment (BPF_CLANG, the kernel's paths), and the release
# build of scx_cadence.
bench_setup() {
	"$ROOT/tests/vm/setup.sh"
	# shellcheck source=/dev/null
	. "$CACHE/env"
	cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" 2>&1 | tail -n 1
}

# Peer schedulers from crates.io, built the same way as scx_cadence into
# $CACHE/peers (about 6 min, once).
BPFLAND_VERSION=1.1.4
BPFLAND=$CACHE/peers/bin/scx_bpfland

# install_bpfland: builds scx_bpfland@BPFLAND_VERSION unless it is there.
install_bpfland() {
	local have
	have=$("$BPFLAND" --version 2>/dev/null || true)
	if [[ $have != *"$BPFLAND_VERSION"* ]]; then
		echo "bench: cargo install scx_bpfland@$BPFLAND_VERSION (once)"
		cargo install -q --locked "scx_bpfland@$BPFLAND_VERSION" --root "$CACHE/peers"
	fi
}
