#!/usr/bin/env bash
# Runs inside the VM for bench/insncount.sh, under the insncount QEMU
# plugin: for each round, every scheduler in turn (the order rotated each
# round) runs hackbench -g 4 -l 200 twice and perf bench sched pipe
# -l 20000 once, each between two marks (bench/insncount/mark.c), so that
# the plugin's counts of each run stand alone. One label per mark goes to
# $VM_OUT/marks.txt:
#   run,NAME,ROUND,WORKLOAD,SWITCHES,SECONDS,IDLE_PCT,RES,CAL,LOC
# (the context switches of /proc/stat; the workload's seconds; the share of
# CPU time idle while it ran; the rescheduling and function-call IPIs and
# local timer interrupts of /proc/interrupts, each an exit from translated
# code under TCG), or other,... for the time between runs. The BPF
# programs' symbols while NAME ran go to ksyms.NAME.ROUND, the kernel's to
# kallsyms.
#   insncount_guest.sh MARK ROUNDS SCHED_NAME=COMMAND...   ("eevdf" needs none)
set -u
mark_bin=$1
rounds=$2
shift 2
scheds=("$@")
marks=$VM_OUT/marks.txt
: >"$marks"
# shellcheck source=tests/vm/guest/lib.sh
. "$VM_ROOT/tests/vm/guest/lib.sh"

# mark LABEL: the plugin writes the counts since the last mark, LABEL's.
mark() {
	echo "$1" >>"$marks"
	"$mark_bin"
}

# cpu_times: context switches, then idle and all jiffies of /proc/stat.
cpu_times() {
	awk '/^cpu / { for (i = 2; i <= NF; i++) all += $i; idle = $5 + $6 }
		/^ctxt/ { ctxt = $2 } END { print ctxt, idle, all }' /proc/stat
}

# irqs: the rescheduling IPIs, function-call IPIs and local timer
# interrupts so far, summed over the CPUs.
irqs() {
	awk '$1 == "RES:" || $1 == "CAL:" || $1 == "LOC:" {
		n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; v[$1] = n }
		END { print v["RES:"], v["CAL:"], v["LOC:"] }' /proc/interrupts
}

# measure WORKLOAD COMMAND...: COMMAND between two marks; its seconds are
# what follows "Time:" (hackbench) or the first word of its last line
# (perf bench -f simple: the seconds of all round trips).
measure() {
	local workload=$1 c0 i0 a0 c1 i1 a1 t r0 f0 l0 r1 f1 l1
	shift
	mark "other,$name,$round"
	read -r r0 f0 l0 < <(irqs)
	read -r c0 i0 a0 < <(cpu_times)
	t=$("$@" 2>/dev/null | awk '/^Time:/ { v = $2; next } NF { v = $1 } END { print v }')
	read -r c1 i1 a1 < <(cpu_times)
	read -r r1 f1 l1 < <(irqs)
	mark "run,$name,$round,$workload,$((c1 - c0)),$t,$(((i1 - i0) * 100 / (a1 - a0 > 0 ? a1 - a0 : 1))),$((r1 - r0)),$((f1 - f0)),$((l1 - l0))"
}

# runs: the runs of one scheduler in one round, and its programs' symbols.
runs() {
	measure hackbench hackbench -g 4 -l 200
	measure hackbench hackbench -g 4 -l 200
	measure pipe perf bench -f simple sched pipe -l 20000
	grep '\[bpf\]' /proc/kallsyms >"$VM_OUT/ksyms.$name.$round"
	jited
}

# jited: this scheduler's programs as JIT-compiled, with where their source
# lines start, for bench/bpf_lines.py; each round, as each load places the
# programs elsewhere.
jited() {
	python3 "$VM_ROOT/bench/insncount/jited_lines.py" >"$VM_OUT/jited.$name.$round.json"
}

cat /proc/kallsyms >"$VM_OUT/kallsyms"
# One of each workload before the first mark: the boot's first pipe run
# paid about 12 M instructions more than the others, zeroing the pages
# that loading perf into the page cache took.
hackbench -g 4 -l 20 >/dev/null 2>&1
perf bench -f simple sched pipe -l 2000 >/dev/null 2>&1
bench_rounds "$rounds" runs "${scheds[@]}"
mark "other,end,0"
echo "bench: done" >&2
