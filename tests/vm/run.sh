#!/usr/bin/env bash
# Builds scx_cadence (release) and runs the VM test cases in two boots of the
# sched_ext kernel (4 vCPUs; 8 vCPUs as 2 cores x 4 threads for placement;
# --kernel runs only the first).
# Prints a line per case and, last, "vm: N passed, N failed".
#   tests/vm/run.sh [--kernel VERSION] [--quick] [-k PATTERN]
#     --kernel VERSION  boot another kernel tests/vm/setup.sh fetched: 6.16,
#                       the oldest the README names (default: Debian
#                       unstable's, 7.x); it runs the core set
#     --quick           the quick set: the shorter core cases and one case
#                       per other area, the VM half of tests/run.sh's 15
#                       minutes
#     -k PATTERN        run only the cases whose name matches PATTERN
# Output of each case is kept under tests/vm/out/<date>/<boot>/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SCX_CADENCE_CACHE:-$ROOT/.cache}
kernel=""
quick=""
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:?--kernel needs a VERSION} && shift 2 ;;
	--quick) quick=1 && shift ;;
	*) break ;;
	esac
done
"$ROOT/tests/vm/setup.sh"
# shellcheck source=/dev/null
. "$CACHE/env"
kernel_opt=${kernel:+--kernel $kernel}

cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" 2>&1 | tail -n 1
# case_hw_kit_dry_run runs bench/hw/run.sh, which times wake-ups with
# scx_wakelat (bench/wakelat): the guest has no cargo, so it is built here.
cargo build --release --locked --manifest-path "$ROOT/bench/wakelat/Cargo.toml" \
	--target-dir "$ROOT/target" 2>&1 | tail -n 1

out=$ROOT/tests/vm/out/$(date +%Y%m%d-%H%M%S)${kernel:+-$kernel}
mkdir -p "$out"

# run_boot NAME "BOOT OPTIONS" CASE_FILE...: the cases of CASE_FILEs in one
# VM booted with BOOT OPTIONS, their output under $out/NAME/.
# Under multi-threaded TCG the guest kernel oopses on an int3 left by live
# code patching (static keys flipped when a sched_ext scheduler attaches), in
# kernel code that is not scx_cadence's; boot.sh therefore runs TCG on one
# thread, where it has not been seen. As a safety net, when the VM dies its
# console is shown and the cases not yet done run again in a fresh boot; a
# case during which the VM dies twice fails.
MAX_BOOTS=3
run_boot() {
	local name=$1 boot_opts=$2 dir=$out/$1 died_in="" boot console current
	shift 2
	mkdir -p "$dir"
	for boot in $(seq $MAX_BOOTS); do
		console=$dir/console.$boot.log
		echo "$name, boot $boot: VM output and kernel console in $console"
		set +e
		# shellcheck disable=SC2086
		"$ROOT/tests/vm/boot.sh" --console $kernel_opt $boot_opts --out "$dir" -- \
			bash "$ROOT/tests/vm/guest/run.sh" "$@" "${FILTER[@]}" >"$console" 2>&1
		set -e
		tail -n 1 "$dir/results" 2>/dev/null | grep -q '^vm: ' && break
		current=$(cat "$dir/current" 2>/dev/null || echo "?")
		echo "the VM died during $current; its console:"
		grep -E 'Oops|BUG|WARNING|panic|RIP|Comm:' "$console" | tail -n 12
		if [ "$current" = "$died_in" ]; then
			echo "FAIL $current: the VM died twice during this case" >>"$dir/results"
		fi
		died_in=$current
	done
	grep -v '^vm: ' "$dir/results" 2>/dev/null || true
	if ! tail -n 1 "$dir/results" 2>/dev/null | grep -q '^vm: '; then
		echo "the VM died $MAX_BOOTS times; giving up"
		echo "FAIL $name: the VM died $MAX_BOOTS times" >>"$dir/results"
	fi
}

FILTER=("$@")
GUEST=$ROOT/tests/vm/guest
# The core set, for another kernel: the same BPF programs loaded by that
# kernel's verifier and attached under load, through exits and hotplug;
# nice weights and nested cgroups, each a kernel interface of its own; hot
# swap and a refused policy. The rest (placement, yield, mixed load, the
# other fairness and wake-up cases: 12 minutes together on 6.16) runs on 7.x
# only, to keep CI within its 90 minutes: it tests the policy, which is the
# same BPF code on both kernels.
core='load|sigint|kill9|hotplug|nice_ratio|fair_cgroup_nested_weights|policy_swap_storm|policy_invalid'
# The quick set, for a contributor's run of about 20 minutes: attach and
# exits, mixed load, hotplug, nice ratio, a pinned queue keeping up, busy
# LLCs, yield, nested cgroups, wake-up preemption, a refused policy,
# injected invariance, the cpufreq deadband and real util, the idle learner
# and PM QoS; and (8 vCPUs) a pinned hog left its CPU and the small-core
# spread under churn. The longest cases (200 hogs, ping-pong pairs, the
# swap storm, cgroup moves) are left to --full.
quick_set='load|mixed_load|sigint|kill9|hotplug|nice_ratio|fair_pinned_queue_keeps_up|fair_busy_llcs_balance|fair_yield_gives_the_cpu_away|fair_cgroup_nested_weights|wakeup_preempts_a_hog|policy_invalid|cpufreq_injected_util_deadband|cpufreq_follows_real_util|util_inject_follows_invariance|idle_learns_from_a_state_file|idle_qos_limits_then_sigint_restores'
quick_place='place_pinned_hog_keeps_its_cpu|place_spread_holds_under_churn'
# Case files, one per area; placement needs 8 vCPUs as 2 cores x 4 threads.
main_files=("$GUEST/base.sh" "$GUEST/fair.sh" "$GUEST/latency.sh" "$GUEST/policy.sh" "$GUEST/util.sh" "$GUEST/cpufreq.sh" "$GUEST/cpufreq_record.sh" "$GUEST/idle.sh" "$GUEST/idle_record.sh" "$GUEST/idle_ctl.sh" "$GUEST/idle_qos.sh" "$GUEST/cgroup.sh" "$GUEST/hw_kit.sh")
user=("${FILTER[@]}")
if [ -n "$quick" ]; then
	# Quoted for the guest's shell, which reads the command boot.sh writes.
	FILTER=(-k "'^case_($quick_set)\$'" "${user[@]}")
	run_boot main "--cpus 4" "${main_files[@]}"
	FILTER=(-k "'^case_($quick_place)\$'" "${user[@]}")
	run_boot place "--cpus 8 --smp 1,2,4" "$GUEST/place.sh"
elif [ -n "$kernel" ]; then
	# The rest runs on 7.x only, to keep CI within its time.
	FILTER=(-k "'^case_($core)\$'" "${user[@]}")
	run_boot main "--cpus 4" "$GUEST/base.sh" "$GUEST/fair.sh" "$GUEST/policy.sh" "$GUEST/cgroup.sh"
else
	run_boot main "--cpus 4" "${main_files[@]}"
	run_boot place "--cpus 8 --smp 1,2,4" "$GUEST/place.sh"
fi

passed=$(cat "$out"/*/results | grep -c '^ok ' || true)
failed=$(cat "$out"/*/results | grep -c '^FAIL ' || true)
if [ "$failed" -gt 0 ]; then
	for dir in "$out"/*/; do
		while read -r log; do
			[ -f "$dir/$log.log" ] || continue
			echo "--- $log.log"
			tail -n 20 "$dir/$log.log"
		done < <(awk '/^FAIL/ { sub(":", "", $2); print $2 }' "$dir/results")
	done
fi
echo "vm: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
