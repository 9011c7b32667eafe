#!/usr/bin/env bash
# The cpufreq deadband bench (issue 5): how many cpufreq requests scx_cadence
# issues with the deadband off, with each of its stages alone, and with the
# balanced preset's whole deadband, for the same sleep/wake-heavy workload
# and the same injected frequency model, in one VM boot, policies
# interleaved. Writes bench/results/<date>-<commit>-cpufreq.md.
#   bench/cpufreq.sh [ROUNDS]    (default 5)
set -euo pipefail

rounds=${1:-5}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check_count "bench/cpufreq.sh" "$rounds"
bench_setup

# Each policy: NAME=balanced with these comma-separated assignments (no
# spaces: boot.sh hands the guest its command as one line).
OFF="cpufreq.floor=false,cpufreq.band=0,cpufreq.interval_us=0,cpufreq.down_hold_us=0"
policies=(
	"off=$OFF"
	"floor_only=$OFF,cpufreq.floor=true"
	"band_only=$OFF,cpufreq.band=32"
	"hold_only=$OFF,cpufreq.down_hold_us=8000"
	"rate_only=$OFF,cpufreq.interval_us=2000"
	"balanced=cpufreq.mode=util"
)

cpus=4
bench_out "cpufreq-"
"$ROOT/tests/vm/boot.sh" --cpus $cpus --memory 2G --out "$out" -- \
	bash "$ROOT/bench/cpufreq_guest.sh" "$rounds" "$ROOT/target/release/scx_cadence" "${policies[@]}"

result_file "-cpufreq"
{
	echo "# scx_cadence cpufreq requests with and without the deadband, $date"
	echo
	echo "Commit $commit, $rounds rounds, policies interleaved (order rotated each round) in one boot."
	echo
	describe_machines "$cpus"
	echo "- Frequency model (bench/freq_model.py, injected through --test-freq-inject 1000):"
	echo "  every CPU at freq_max (1000 MHz) for 200 ms, then at 500 MHz for 200 ms, repeated."
	echo "  fmin for the floor: 400 MHz (cpufreq.min_mhz; the VM has no cpufreq)."
	echo "- Workload: \`hackbench -g 2 -l 300\`, then \`stress-ng --sleep 4 --sleep-max 64 --timeout 5s\`."
	echo "- Policies: balanced with the deadband off (\`$OFF\`), each stage alone,"
	echo "  and balanced itself (floor, band 32, interval 2 ms, hold 8 ms)."
	echo
	python3 "$ROOT/bench/summarize_cpufreq.py" "$out/cpufreq.csv"
} | publish_result
