/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's probe for the APERF/MPERF source (src/freq/probe.rs): one
 * sched_ext callback that makes the call freq_ratio.bpf.h makes from
 * ops.tick(), bpf_perf_event_read_value() on a perf event array. Loading
 * this object, never attaching it, asks the running kernel's verifier
 * whether sched_ext programs may call the helper. bpf_base_func_proto()
 * offers it to them since ae0a457f5d33 ("bpf: make perf_event_read_output
 * accessible from BPF core when available", March 2025); on a kernel that
 * refuses it the loader takes cpuperf before the scheduler is loaded.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

/* Never filled: the verifier checks the call, nothing runs it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
	__uint(max_entries, 1);
} probe_events SEC(".maps");

void BPF_STRUCT_OPS(aperf_probe_tick, struct task_struct *p)
{
	struct bpf_perf_event_value v;

	bpf_perf_event_read_value(&probe_events, BPF_F_CURRENT_CPU, &v, sizeof(v));
}

/* Loaded, never attached: a name the scheduler itself does not use. */
SEC(".struct_ops.link")
struct sched_ext_ops aperf_probe_ops = {
	.tick = (void *)aperf_probe_tick,
	.name = "cadence_probe",
};
