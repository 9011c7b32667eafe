#!/usr/bin/env bash
# The newcomer's demo (the guest part runs under sh: keep it POSIX): boots the sched_ext kernel in a VM, starts scx_cadence
# with live stats every second, and runs a real workload under it (stress-ng
# CPU/fork/affinity hogs, hackbench, and a sleep/wake-heavy mix). Halfway it
# switches the running scheduler to the powersave policy (no detach: the stats
# line shows the new policy and generation), then stops it with SIGINT so the
# exit reason shows.
#   tests/vm/demo.sh [SECONDS]    (default 20)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
secs=${1:-20}
case $secs in
'' | *[!0-9]*)
	echo "demo.sh: SECONDS must be a whole number, not '$secs'" >&2
	exit 2
	;;
esac

"$ROOT/tests/vm/setup.sh"
# shellcheck source=/dev/null
. "$CACHE/env"
cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" 2>&1 | tail -n 1

out=$ROOT/tests/vm/out/demo
mkdir -p "$out"
exec "$ROOT/tests/vm/boot.sh" ${DEMO_CONSOLE:+--console} --cpus 4 --out "$out" -- "
	$ROOT/target/release/scx_cadence --stats 1 &
	sched=\$!
	for i in \$(seq 50); do [ \"\$(cat /sys/kernel/sched_ext/state)\" = enabled ] && break; sleep 0.2; done
	echo \"== sched_ext: \$(cat /sys/kernel/sched_ext/state), ops: \$(cat /sys/kernel/sched_ext/root/ops)\"
	echo '== workload: stress-ng cpu/fork/affinity + hackbench + sleep/switch for ${secs}s'
	stress-ng --cpu 4 --fork 2 --affinity 1 --sleep 2 --switch 1 --timeout ${secs}s --metrics-brief >stress.log 2>&1 &
	load=\$!
	( sleep $((secs / 2)); echo \"== hot-swap: \$($ROOT/target/release/scx_cadence ctl switch powersave)\" ) &
	end=\$((\$(date +%s) + ${secs}))
	while [ \$(date +%s) -lt \$end ]; do hackbench -g 2 -l 50 >/dev/null; done
	wait \$load && echo '== stress-ng completed' || echo '== stress-ng FAILED'
	kill -INT \$sched
	wait \$sched
	echo \"== scx_cadence exited with \$?; sched_ext is now \$(cat /sys/kernel/sched_ext/state)\"
"
