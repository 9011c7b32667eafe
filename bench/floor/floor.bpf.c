/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_floor: the least a sched_ext scheduler can do, for the benchmarks
 * only. A waking task goes to the idle CPU the kernel's built-in search
 * finds (scx_bpf_select_cpu_dfl()) and runs there at once; every other
 * task joins the one global FIFO queue, which the core serves without a
 * dispatch() callback. No fairness, no weights, no placement of its own.
 *
 * What it measures: the cost of sched_ext itself (its callbacks' entry,
 * the global queue, the kicks) on the machine under test, so that
 * bench/run.sh can tell how much of scx_cadence's distance to EEVDF is
 * its own BPF code and how much any sched_ext scheduler pays. It is not a
 * scheduler to run: one CPU-bound task can keep a CPU for a whole slice
 * while others wait.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

s32 BPF_STRUCT_OPS(floor_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);

	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void BPF_STRUCT_OPS(floor_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(floor_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/* clang-format off */
SCX_OPS_DEFINE(floor_ops,
	       .select_cpu = (void *)floor_select_cpu,
	       .enqueue = (void *)floor_enqueue,
	       .exit = (void *)floor_exit,
	       .name = "scx_floor");
/* clang-format on */
