# shellcheck shell=bash
# Sourced by the host side of every bench (run.sh, wakeup.sh, cpufreq.sh,
# placement.sh, idle.sh, pipe_cost.sh, ab.sh): the checkout, the cache, the
# builds and the result file they share.

# The checkout this file is in, and the cache of downloads and builds
# (tests/vm/setup.sh's; SCX_CADENCE_CACHE moves it).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}

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
	# The commit just built: the tree may move on while the VM runs.
	built_commit=$(git -C "$ROOT" rev-parse --short HEAD)
}

# bench_out NAME: a new output folder bench/out/NAME<date-time> in $out, for
# the VM's logs and the raw figures (ignored by git).
bench_out() {
	out=$ROOT/bench/out/$1$(date +%Y%m%d-%H%M%S)
	mkdir -p "$out"
}

# result_file SUFFIX: $result, bench/results/<date>-<commit>SUFFIX.md, one
# file per date and commit so that a later run never overwrites a recorded
# one; $date and $commit (the one bench_setup() built) for its text.
result_file() {
	date=$(date +%Y-%m-%d)
	commit=$built_commit
	result=$ROOT/bench/results/$date-$commit$1.md
}

# describe_machines CPUS: the result file's lines on the host and on a guest
# of CPUS vCPUs and 2 GiB (tests/vm/boot.sh --memory 2G), as markdown items.
describe_machines() {
	echo "- Host: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"
	# shellcheck source=/dev/null # the machine's file, not ours
	echo "  $(free -g | awk '/Mem:/ { print $2 }') GiB, $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)."
	echo "- Guest: QEMU TCG on one host thread (no KVM), $1 vCPUs, 2 GiB, Debian kernel $SCX_CADENCE_KERNEL_VERSION,"
	echo "  virtme-ng with the host's root file system."
}

# Debian's own Python, which python3-matplotlib installs into: bench/plot.py
# runs on it, not on the venv first on PATH (tests/vm/setup.sh's, for
# virtme-ng).
PLOT_PYTHON=/usr/bin/python3

# install_plotting: Debian's matplotlib for bench/plot.py, once (the tests
# do not need it).
install_plotting() {
	"$PLOT_PYTHON" -c 'import matplotlib' 2>/dev/null && return 0
	echo "bench: apt-get install python3-matplotlib (once)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null 2>&1 || {
		apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null
	}
}

# plot_ratios TITLE [--all]: bench/plot.py's figure of $out/raw.csv beside
# $result (the same name, .png), and the markdown line that shows it.
# --all: every metric of the CSV, not only summarize.py's.
plot_ratios() {
	local png=${result%.md}.png
	"$PLOT_PYTHON" "$ROOT/bench/plot.py" ratios "$out/raw.csv" "$png" "$@"
	echo "![$1]($(basename "$png"))"
}

# publish_result: writes its input to $result and shows it.
publish_result() {
	cat >"$result"
	cat "$result"
	echo "bench: written to $result"
}

# resolve_commits SCRIPT COMMIT...: $commits, each COMMIT as a short hash;
# one that is not a commit here is named, and SCRIPT exits 2.
resolve_commits() {
	local script=$1 c short
	shift
	commits=()
	for c in "$@"; do
		short=$(git -C "$ROOT" rev-parse -q --verify --short=7 "$c^{commit}") || {
			echo "$script: '$c' is not a commit of this repository" >&2
			exit 2
		}
		commits+=("$short")
	done
}

# add_commit_sched COMMIT: builds scx_cadence at COMMIT (build_commit,
# into .cache/ab-<commit>), writes $out/cadence_<commit>.sh, which runs it
# with the Intel idle-state file where that build has the idle learner
# (before it the option is refused), and appends cadence_<commit>=<that
# wrapper> to $scheds. The guests give the file to the scx_cadence names
# only, and boot.sh hands the guest one line split on spaces: a wrapper
# adds it.
add_commit_sched() {
	local bin=$CACHE/ab-$1/target/release/scx_cadence states=""
	build_commit "$1" "$CACHE/ab-$1"
	if "$bin" --help | grep -- --idle-states >/dev/null; then
		states="--idle-states $ROOT/docs/idle-states/intel-skylake-sp.txt"
	fi
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$bin" "$states" >"$out/cadence_$1.sh"
	chmod +x "$out/cadence_$1.sh"
	scheds+=("cadence_$1=$out/cadence_$1.sh")
}

# build_commit COMMIT DIR: builds scx_cadence as it was at COMMIT into DIR
# (its source from git archive into DIR/src, the build in DIR/target),
# unless it is there: an older build to run beside this one.
build_commit() {
	if [ -x "$2/target/release/scx_cadence" ]; then
		return 0
	fi
	echo "bench: building scx_cadence at $1 (once)"
	rm -rf "$2/src" && mkdir -p "$2/src"
	git -C "$ROOT" archive "$1" | tar -x -C "$2/src"
	cargo build -q --release --locked --manifest-path "$2/src/Cargo.toml" --target-dir "$2/target"
}

# scx_cadence as it was before utilization tracking (issue 4): the same
# scheduler without PELT, frequency reads or update_idle(), so that a table
# shows what tracking costs per callback (run.sh, pipe_cost.sh).
BASE_COMMIT=2226738
# shellcheck disable=SC2034 # used by the scripts that source this one
BASE=$CACHE/base-$BASE_COMMIT/target/release/scx_cadence

# build_base: builds the base at BASE_COMMIT unless it is there (once).
build_base() {
	build_commit "$BASE_COMMIT" "$CACHE/base-$BASE_COMMIT"
}

# build_floor: builds scx_floor (bench/floor/floor.bpf.c), the least a
# sched_ext scheduler does, into scx_cadence's target directory, whose
# dependencies it shares (seconds after bench_setup).
# shellcheck disable=SC2034 # used by the scripts that source this one
FLOOR=$ROOT/target/release/scx_floor
build_floor() {
	cargo build --release --locked --manifest-path "$ROOT/bench/floor/Cargo.toml" \
		--target-dir "$ROOT/target" 2>&1 | tail -n 1
}

# build_wakelat: builds scx_wakelat (bench/wakelat/wakelat.bpf.c), the
# wake-to-run tracer guest.sh runs beside cyclictest, into scx_cadence's
# target directory like build_floor.
build_wakelat() {
	cargo build --release --locked --manifest-path "$ROOT/bench/wakelat/Cargo.toml" \
		--target-dir "$ROOT/target" 2>&1 | tail -n 1
}

# Peer schedulers from crates.io, built the same way as scx_cadence into
# $CACHE/peers (about 6 min, once).
BPFLAND_VERSION=1.1.4
# shellcheck disable=SC2034 # used by the scripts that source this one
BPFLAND=$CACHE/peers/bin/scx_bpfland

# scx_lavd, the latency-criticality peer (issue 14), of the same scx
# release as scx_bpfland.
LAVD_VERSION=1.1.4
# shellcheck disable=SC2034 # used by the scripts that source this one
LAVD=$CACHE/peers/bin/scx_lavd

# install_peer NAME VERSION: builds NAME@VERSION into $CACHE/peers unless
# that version is there.
install_peer() {
	local have
	have=$("$CACHE/peers/bin/$1" --version 2>/dev/null || true)
	if [[ $have != *"$2"* ]]; then
		echo "bench: cargo install $1@$2 (once)"
		cargo install -q --locked "$1@$2" --root "$CACHE/peers"
	fi
}

# install_bpfland: builds scx_bpfland@BPFLAND_VERSION unless it is there.
install_bpfland() {
	install_peer scx_bpfland "$BPFLAND_VERSION"
}

# install_lavd: builds scx_lavd@LAVD_VERSION unless it is there.
install_lavd() {
	install_peer scx_lavd "$LAVD_VERSION"
}
