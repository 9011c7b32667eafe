#!/usr/bin/env bash
# Installs or fetches everything the VM tests need, on a fresh Debian 12 machine,
# and caches it under .cache/ (ignored by git) so that a second run is fast:
#   - Debian packages (clang-19, bpftool, qemu, stress-ng, hackbench, perf, ...);
#   - virtme-ng (PyPI) in a private venv;
#   - virtiofsd (crates.io; Debian 12's C virtiofsd does not work with virtme-ng);
#   - the current Debian unstable cloud-amd64 kernel, which has CONFIG_SCHED_CLASS_EXT,
#     fetched through a private apt configuration: the machine's apt sources are never
#     touched.
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

# The sched_ext kernel: Debian unstable's cloud-amd64 flavour, resolved at run time
# (versions roll) and cached by version.
install_kernel() {
	local apt=$CACHE/apt
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	echo "deb http://deb.debian.org/debian unstable main" >"$apt/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache=$apt/cache"
		-o "Dir::State::Status=/dev/null"
		-o "APT::Architecture=amd64"
		-o "APT::Architectures=amd64"
		-o "Debug::NoLocking=1"
		-o "APT::Sandbox::User=root")
	# Refresh the unstable index at most once a day.
	if [ -z "$(find "$apt/lists" -name '*_Packages*' -mtime -1 2>/dev/null)" ]; then
		log "apt-get update (private unstable index)"
		apt-get "${opts[@]}" update -q >/dev/null
	fi
	# linux-image-cloud-amd64 -> linux-image-VER -> linux-binary/base/modules-VER.
	local image
	image=$(apt-cache "${opts[@]}" depends linux-image-cloud-amd64 |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)
	[ -n "$image" ] || {
		echo "setup: cannot resolve linux-image-cloud-amd64 in Debian unstable" >&2
		exit 1
	}
	local ver=${image#linux-image-}
	local kdir=$CACHE/kernel/$ver
	if [ ! -f "$kdir/.complete" ]; then
		log "fetching kernel $ver"
		rm -rf "$kdir" && mkdir -p "$kdir/debs" "$kdir/root"
		# Every linux-*-$ver package the image pulls in (binary, base, modules).
		local pkgs
		pkgs=$(apt-cache "${opts[@]}" depends --recurse --no-recommends \
			--no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
			"$image" | while read -r name; do
			case $name in linux-*-"$ver") echo "$name" ;; esac
		done | sort -u)
		# shellcheck disable=SC2086 # one package name a line, split on purpose
		(cd "$kdir/debs" && apt-get "${opts[@]}" download -q $pkgs >/dev/null)
		for d in "$kdir"/debs/*.deb; do dpkg-deb -x "$d" "$kdir/root"; done
		rm -rf "$kdir/debs"
		# Debian's 7.x packaging keeps vmlinuz, config and System.map in the
		# module directory: usr/lib/modules/$ver/.
		[ -f "$kdir/root/usr/lib/modules/$ver/vmlinuz" ] || {
			echo "setup: no vmlinuz in the packages of $image" >&2
			exit 1
		}
		# virtme-ng's initramfs loads modules with busybox insmod, which cannot
		# read Debian's .ko.xz: store them uncompressed.
		find "$kdir/root/usr/lib/modules/$ver" -name '*.ko.xz' -print0 |
			xargs -0 -r -n 200 xz -d
		depmod -b "$kdir/root/usr" "$ver"
		echo "$ver" >"$kdir/kver"
		touch "$kdir/.complete"
	fi
	local kver
	kver=$(cat "$kdir/kver")
	# libbpf reads the running kernel's Kconfig from /boot/config-$(uname -r); the guest
	# sees the host's root read-only, so the file must be on the host before boot.
	local mods=$kdir/root/usr/lib/modules/$kver
	if ! cmp -s "$mods/config" "/boot/config-$kver"; then
		mkdir -p /boot && cp "$mods/config" "/boot/config-$kver"
	fi
	KERNEL_DIR=$kdir
	KERNEL_VERSION=$kver
}

install_apt
install_vng
install_virtiofsd
install_kernel

cat >"$CACHE/env" <<EOF
# Written by tests/vm/setup.sh.
export PATH="$CACHE/tools/bin:$CACHE/venv/bin:\$PATH"
export BPF_CLANG=clang-19
export SCX_CADENCE_KERNEL="$KERNEL_DIR/root/usr/lib/modules/$KERNEL_VERSION/vmlinuz"
export SCX_CADENCE_KERNEL_VERSION="$KERNEL_VERSION"
export SCX_CADENCE_MODULES="$KERNEL_DIR/root/usr/lib/modules/$KERNEL_VERSION"
EOF
log "ready: kernel $KERNEL_VERSION"
