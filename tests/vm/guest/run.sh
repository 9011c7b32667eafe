#!/usr/bin/env bash
# Runs test cases inside the VM: every function named case_* in the given
# files, each in its own shell with a time limit, one after the other.
# Prints "ok NAME (Ns)" or "FAIL NAME: why (Ns)" per case, N its seconds in
# the guest, keeps each case's output in
# $VM_OUT/NAME.log, and writes the tally to $VM_OUT/results. Cases that
# already have a line in $VM_OUT/results (from an earlier boot whose VM died)
# are not run again; the case under way is named in $VM_OUT/current.
#   run.sh FILE... [-k PATTERN]   (PATTERN: run only cases whose name matches
#                                  it, an extended regular expression)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
pattern=""
files=()
while [ $# -gt 0 ]; do
	case $1 in
	-k) pattern=$2 && shift 2 ;;
	*) files+=("$1") && shift ;;
	esac
done

# Longest a case may take: a bound for a case that hangs, not for speed.
# The mixed-load case needs about a minute under TCG; the policy swap storm
# ran past 300 s (900 swaps in 263 s) on a host about 3x slower than usual,
# in the fresh-clone CI at c74217b.
CASE_TIMEOUT=${CASE_TIMEOUT:-600}
# What each case's first line in the kernel log starts with.
export CASE_MARK="cadence-vm: case"

touch "$VM_OUT/results"
sed -i '/^vm: /d' "$VM_OUT/results"
passed=$(grep -c '^ok ' "$VM_OUT/results")
failed=$(grep -c '^FAIL ' "$VM_OUT/results")
for f in "${files[@]}"; do
	for name in $(bash -c ". '$f'; declare -F" | awk '$3 ~ /^case_/ { print $3 }'); do
		[ -n "$pattern" ] && ! [[ $name =~ $pattern ]] && continue
		grep -qE "^(ok|FAIL) $name( |:|\$)" "$VM_OUT/results" && continue
		echo "$name" >"$VM_OUT/current"
		sync
		# Where this case's kernel log begins (lib.sh, kernel_complaints()).
		echo "$CASE_MARK $name" >/dev/kmsg
		log=$VM_OUT/$name.log
		start=$SECONDS
		timeout -k 10 "$CASE_TIMEOUT" bash -c ". '$HERE/lib.sh'; . '$f'; set -u; $name" >"$log" 2>&1
		rc=$?
		# Leave no scheduler behind for the next case.
		pkill -INT -x scx_cadence 2>/dev/null && sleep 2
		pkill -KILL -x scx_cadence 2>/dev/null
		took="($((SECONDS - start))s)"
		if [ $rc -eq 0 ]; then
			passed=$((passed + 1))
			echo "ok $name $took" | tee -a "$VM_OUT/results"
		else
			failed=$((failed + 1))
			[ $rc -eq 124 ] && echo "FAIL: timed out after ${CASE_TIMEOUT}s" >>"$log"
			echo "FAIL $name: $(grep -m1 '^FAIL' "$log" || tail -n 1 "$log") $took" | tee -a "$VM_OUT/results"
		fi
	done
done
rm -f "$VM_OUT/current"
echo "vm: $passed passed, $failed failed" | tee -a "$VM_OUT/results"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
