#!/usr/bin/env bash
# Boots the sched_ext kernel under QEMU (TCG) with the host's root file system
# read-only, runs one command inside, and returns its output and exit code.
#
#   tests/vm/boot.sh [--cpus N] [--smp S,C,T] [--memory SIZE] [--out DIR] [--plugin SPEC] -- CMD...
#
#   --cpus N       vCPUs (default 4)
#   --smp S,C,T    topology: sockets, cores per socket, threads per core
#                  (S*C*T must equal N), e.g. --cpus 8 --smp 1,2,4
#   --memory SIZE  guest memory (default 2G)
#   --out DIR      a host directory the guest may write (default tests/vm/out);
#                  the command starts in it, and it is exported as $VM_OUT
#   --console      also print the kernel console (boot log, oopses)
#   --kernel V     boot kernel V of those tests/vm/setup.sh fetched (6.16);
#                  default: Debian unstable's
#   --plugin SPEC  a QEMU TCG plugin, -plugin SPEC (bench/insncount.sh);
#                  single-threaded TCG only
#   --mttcg        multi-threaded TCG (one host thread per vCPU); the default
#                  is one host thread for all vCPUs, see below
#
# Inside, bpffs is mounted on /sys/fs/bpf and $VM_ROOT is the repository.
# Runs tests/vm/setup.sh first if the kernel and tools are not cached yet.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}

cpus=4 smp="" memory=2G out=$ROOT/tests/vm/out verbose=() tcg_thread=single kernel="" plugin=""
while [ $# -gt 0 ]; do
	case $1 in
	--cpus) cpus=$2 && shift 2 ;;
	--smp) smp=$2 && shift 2 ;;
	--memory) memory=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--console) verbose=(-v) && shift ;;
	--mttcg) tcg_thread=multi && shift ;;
	--kernel) kernel=$2 && shift 2 ;;
	--plugin) plugin=$2 && shift 2 ;;
	--) shift && break ;;
	*)
		echo "boot.sh: unknown option $1" >&2
		exit 2
		;;
	esac
done
[ $# -gt 0 ] || {
	echo "boot.sh: no command given (usage: boot.sh [options] -- CMD...)" >&2
	exit 2
}

[ -f "$CACHE/env" ] || "$ROOT/tests/vm/setup.sh"
# shellcheck source=/dev/null
. "$CACHE/env"
if [ -n "$kernel" ]; then
	[ -f "$CACHE/env.kernel-$kernel" ] || {
		echo "boot.sh: no kernel $kernel fetched (tests/vm/setup.sh fetches 6.16)" >&2
		exit 2
	}
	# shellcheck source=/dev/null
	. "$CACHE/env.kernel-$kernel"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Single-threaded TCG by default: with one host thread per vCPU, the 7.2
# guest oopses on a stale int3 in __schedule within a few sched_ext attaches
# under load (any scheduler: scx_bpfland too), because live code patching of
# static keys races across TCG threads. With one thread: 30 of 30 attaches
# under load survived, against a crash on the first or second with MTTCG.
qemu="-accel tcg,thread=$tcg_thread"
[ -z "$plugin" ] || qemu="$qemu -plugin $plugin"
if [ -n "$smp" ]; then
	IFS=, read -r sockets cores threads <<<"$smp"
	[ $((sockets * cores * threads)) -eq "$cpus" ] || {
		echo "boot.sh: --smp $smp does not make $cpus CPUs" >&2
		exit 2
	}
	qemu="$qemu -smp $cpus,sockets=$sockets,dies=1,cores=$cores,threads=$threads"
fi

# KVM's CPU model here lacks instructions the 7.x kernel needs: use TCG.
# The guest runs CMD with sh, after these lines (not "cd && CMD": a CMD whose
# first line ends in & would take the cd into its background subshell). The
# script goes in a file: virtme-ng passes the command on the kernel command
# line, which the kernel cuts at 2048 bytes, and a cut script never starts.
guest_script=$(mktemp "$out/.guest.XXXXXX.sh")
trap 'rm -f "$guest_script"' EXIT
cat >"$guest_script" <<EOF
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
export VM_ROOT='$ROOT' VM_OUT='$out'
cd '$out' || exit 1
$*
EOF
# QEMU writes the guest's stdout, stderr and console through "file" chardevs
# that reopen /proc/self/fd/1 and /proc/self/fd/2 with O_TRUNC, each with its
# own file offset: when both are one regular file (`>log 2>&1`), the first
# open erases what was there and the streams overwrite each other (a stats
# line cut by "[WARN] ...", or "[[WARN]" in the demo). Pipes have no offset:
# hand vng a pipe for each and let cat append to ours. The pipeline waits for
# both cats, and pipefail keeps vng's exit code.
#
# tsc=nowatchdog: the guest's TSC is not checked by the clocksource watchdog.
# On 7.2 that watchdog also checks TSC skew between CPUs by a handshake in
# which both CPUs spin with interrupts off (kernel/time/clocksource.c,
# watchdog_check_skew()). Under TCG all vCPUs derive the TSC from one host
# clock, so there is nothing to find; and its 50 us timeout is read only
# every 5000 PAUSEs, while single-thread TCG hands the host thread to the
# next vCPU at each PAUSE, so a remote vCPU with interrupts off holds the
# checking one for about a minute. In CI at fd7a028 CPU 0 sat in it from
# about 143 s to 206 s (at least 42 s: NMI backtrace at 164 s, "Watchdog
# remote CPU 5 read timed out" at 206 s), on top of a task that held
# tasklist_lock's internal wait_lock behind a writer (likely busybox on CPU
# 6; what that writer waited for is unknown), while CPU 5 spun with
# interrupts off in write_lock_irq() for that wait_lock and could not
# answer. RCU reported both CPUs stalled; sched_ext aborted scx_cadence at
# 164 s but could only finish disabling it at 206.6 s, and the late watchdog
# marked the TSC unstable. This removes the amplifier, not the writer's
# delay. RCU's stall detector and the sched_ext watchdog stay on.
{ vng "${verbose[@]}" -r "$SCX_CADENCE_KERNEL" --disable-kvm --cpus "$cpus" --memory "$memory" \
	--append tsc=nowatchdog \
	--rwdir="$out" --qemu-opts="$qemu" -- sh "$guest_script" 2>&1 >&3 3>&- | cat >&2 3>&-; } 3>&1 | cat
