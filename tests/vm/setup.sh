#!/usr/bin/env bash
# Installs or fetches everything the VM tests need, on a fresh Debian 12 machine,
# and caches it under .cache/ (ignored by git) so that a second run is fast:
#   - Debian packages (clang-19, bpftool, qemu, stress-ng, hackbench, perf, ...);
#   - virtme-ng (PyPI) in a private venv;
#   - virtiofsd (crates.io; Debian 12's C virtiofsd does not work with virtme-ng);
#   - two sched_ext kernels (CONFIG_SCHED_CLASS_EXT): the current Debian unstable
#     cloud-amd64 kernel, and the newest 6.16 cloud kernel of trixie-backports, the
#     oldest the VM cases run on; fetched through private apt configurations: the
#     machine's apt sources are never touched.
# Prints nothing but progress; on success writes .cache/env, sourced by the other scripts.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
mkdir -p "$CACHE"

log() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages the build, the VM and the workloads need.
APT_PACKAGES=(clang-19 llvm-19 libelf-dev zlib1g-dev pkg-config bpftool
	qemu-system-x86 kmod stress-ng rt-tests linux-perf libcap-ng-dev
	libseccomp-dev python3-venv busybox-static procps util-linux xz-utils
	# udevd: virtme-ng-init needs it to find the virtio-serial ports that carry
	# the guest command's stdout, stderr and exit code back to the host.
	udev clang-format-19
	# tests/run.sh's lint step.
	shellcheck)

install_apt() {
	local missing=()
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || {
		echo "setup: need root to install: ${missing[*]}" >&2
		exit 1
	}
	log "apt-get install ${missing[*]}"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

# virtme-ng, pinned, in a venv of our own so that the system Python stays untouched.
VIRTME_NG_VERSION=1.42
install_vng() {
	local venv=$CACHE/venv
	local have
	have=$("$venv/bin/pip" show virtme-ng 2>/dev/null || true)
	if [ -x "$venv/bin/vng" ] && [[ $have == *"Version: $VIRTME_NG_VERSION"* ]]; then
		return 0
	fi
	log "pip install virtme-ng==$VIRTME_NG_VERSION"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q "virtme-ng==$VIRTME_NG_VERSION"
}

# virtiofsd from crates.io (the Rust one; virtme-ng needs it for --rwdir and the root fs).
VIRTIOFSD_VERSION=1.14.0
install_virtiofsd() {
	local bin=$CACHE/tools/bin/virtiofsd
	local have
	have=$("$bin" --version 2>/dev/null || true)
	if [[ $have == *"$VIRTIOFSD_VERSION"* ]]; then
		return 0
	fi
	log "cargo install virtiofsd@$VIRTIOFSD_VERSION (a few minutes, once)"
	cargo install -q --locked "virtiofsd@$VIRTIOFSD_VERSION" --root "$CACHE/tools"
}

# The private apt configuration named NAME for one sources.list LINE: the
# machine's own sources, lists and dpkg status are never touched. Fills
# APT_OPTS; refreshes the index at most once a day.
private_apt() {
	local name=$1 line=$2
	local apt=$CACHE/apt/$name
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	echo "$line" >"$apt/sources.list"
	APT_OPTS=(-o "Dir::Etc::SourceList=$apt/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache=$apt/cache"
		-o "Dir::State::Status=/dev/null"
		-o "APT::Architecture=amd64"
		-o "APT::Architectures=amd64"
		-o "Debug::NoLocking=1"
		-o "APT::Sandbox::User=root")
	if [ -z "$(find "$apt/lists" -name '*_Packages*' -mtime -1 2>/dev/null)" ]; then
		log "apt-get update (private $name index)"
		apt-get "${APT_OPTS[@]}" update -q >/dev/null
	fi
}

# fetch_kernel IMAGE: unpacks the package IMAGE (linux-image-VER) and every
# linux-*-VER package it pulls in (Debian's 7.x packaging splits binary, base
# and modules; 6.x packs them in one) into .cache/kernel/VER/root, with
# vmlinuz and config in usr/lib/modules/VER/ either way, and cached by
# version. Sets KERNEL_DIR and KERNEL_VERSION. Needs APT_OPTS (private_apt).
fetch_kernel() {
	local image=$1
	local ver=${image#linux-image-}
	local kdir=$CACHE/kernel/$ver
	local mods=$kdir/root/usr/lib/modules/$ver
	if [ ! -f "$kdir/.complete" ]; then
		log "fetching kernel $ver"
		rm -rf "$kdir" && mkdir -p "$kdir/debs" "$kdir/root"
		local pkgs f
		pkgs=$(apt-cache "${APT_OPTS[@]}" depends --recurse --no-recommends \
			--no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
			"$image" | while read -r name; do
			case $name in linux-*-"$ver") echo "$name" ;; esac
		done | sort -u)
		# shellcheck disable=SC2086 # one package name a line, split on purpose
		(cd "$kdir/debs" && apt-get "${APT_OPTS[@]}" download -q $pkgs >/dev/null)
		for d in "$kdir"/debs/*.deb; do dpkg-deb -x "$d" "$kdir/root"; done
		rm -rf "$kdir/debs"
		# 6.x packages keep vmlinuz and config under /boot.
		for f in vmlinuz config; do
			[ -f "$mods/$f" ] || [ ! -f "$kdir/root/boot/$f-$ver" ] ||
				cp "$kdir/root/boot/$f-$ver" "$mods/$f"
		done
		if [ ! -f "$mods/vmlinuz" ] || [ ! -f "$mods/config" ]; then
			echo "setup: no vmlinuz or config in the packages of $image" >&2
			exit 1
		fi
		grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$mods/config" || {
			echo "setup: $image has no CONFIG_SCHED_CLASS_EXT" >&2
			exit 1
		}
		# virtme-ng's initramfs loads modules with busybox insmod, which cannot
		# read Debian's .ko.xz: store them uncompressed.
		find "$mods" -name '*.ko.xz' -print0 | xargs -0 -r -n 200 xz -d
		depmod -b "$kdir/root/usr" "$ver"
		touch "$kdir/.complete"
	fi
	# libbpf reads the running kernel's Kconfig from /boot/config-$(uname -r); the guest
	# sees the host's root read-only, so the file must be on the host before boot.
	if ! cmp -s "$mods/config" "/boot/config-$ver"; then
		mkdir -p /boot && cp "$mods/config" "/boot/config-$ver"
	fi
	KERNEL_DIR=$kdir
	KERNEL_VERSION=$ver
}

# kernel_env FILE: the exports that point the VM scripts at the kernel
# fetch_kernel just set.
kernel_env() {
	{
		echo "export SCX_CADENCE_KERNEL=\"$KERNEL_DIR/root/usr/lib/modules/$KERNEL_VERSION/vmlinuz\""
		echo "export SCX_CADENCE_KERNEL_VERSION=\"$KERNEL_VERSION\""
		echo "export SCX_CADENCE_MODULES=\"$KERNEL_DIR/root/usr/lib/modules/$KERNEL_VERSION\""
	} >"$1"
}

# The default sched_ext kernel: Debian unstable's cloud-amd64 flavour,
# resolved at run time (versions roll: linux-image-cloud-amd64 ->
# linux-image-VER).
install_kernel() {
	private_apt unstable "deb http://deb.debian.org/debian unstable main"
	local image
	image=$(apt-cache "${APT_OPTS[@]}" depends linux-image-cloud-amd64 |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)
	[ -n "$image" ] || {
		echo "setup: cannot resolve linux-image-cloud-amd64 in Debian unstable" >&2
		exit 1
	}
	fetch_kernel "$image"
	kernel_env "$CACHE/env.kernel"
}

# The oldest kernel the VM cases run on (README, "Requirements"): the newest
# linux-image-$OLDEST_KERNEL.N+deb13-cloud-amd64 of Debian trixie-backports,
# whose cloud kernels have CONFIG_SCHED_CLASS_EXT (trixie's own 6.12 do not).
# tests/vm/run.sh --kernel $OLDEST_KERNEL boots it.
OLDEST_KERNEL=6.16
install_oldest_kernel() {
	private_apt trixie-backports "deb http://deb.debian.org/debian trixie-backports main"
	local image
	image=$(apt-cache "${APT_OPTS[@]}" pkgnames "linux-image-$OLDEST_KERNEL." |
		grep -E "^linux-image-${OLDEST_KERNEL/./\\.}\.[0-9]+\+deb13-cloud-amd64\$" |
		sort -V | tail -n1)
	[ -n "$image" ] || {
		echo "setup: no linux-image-$OLDEST_KERNEL.*-cloud-amd64 in Debian trixie-backports" >&2
		exit 1
	}
	fetch_kernel "$image"
	kernel_env "$CACHE/env.kernel-$OLDEST_KERNEL"
}

install_apt
install_vng
install_virtiofsd
install_oldest_kernel
oldest=$KERNEL_VERSION
install_kernel

# The tools and the default kernel; tests/vm/run.sh --kernel $OLDEST_KERNEL
# sources env.kernel-$OLDEST_KERNEL after this file.
{
	echo "# Written by tests/vm/setup.sh."
	echo "export PATH=\"$CACHE/tools/bin:$CACHE/venv/bin:\$PATH\""
	echo "export BPF_CLANG=clang-19"
	cat "$CACHE/env.kernel"
} >"$CACHE/env"
log "ready: kernel $KERNEL_VERSION (and $oldest)"
