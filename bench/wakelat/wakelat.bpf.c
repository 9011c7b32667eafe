/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wakelat: how long each waking task of one name waits before it runs, for
 * the benchmarks only (bench/guest.sh). Tracing programs, loaded beside any
 * scheduler, EEVDF or a sched_ext one, so that all are measured alike.
 *
 * A wake-up is timed from the kernel's sched_waking event (try_to_wake_up()
 * has found the task asleep and is about to choose its CPU: the scheduler's
 * whole part comes after it) to the sched_switch that runs the task. This
 * leaves out what happens before the wake-up, such as a timer's late
 * delivery under TCG, and counts what a latency-sensitive thread waits
 * for the scheduler: placement, queueing, preemption.
 *
 * A task switched out while a wake-up of it is pending (it was preempted,
 * or the wake-up found it still on its CPU and nothing was switched) drops
 * that wake-up: its next switch-in is a preemption's end, not a wake-up's.
 */
/* Not scx/common.bpf.h: its sched_ext probe program would not load where
 * the kernel has no sched_ext, and this runs under EEVDF too. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

/* The start of the names of the tasks to follow (comm, e.g. "cyclictest"),
 * and how many of its bytes to compare; set by the loader. */
const volatile char comm_prefix[TASK_COMM_LEN];
const volatile u32 comm_len;

/*
 * The delays' histogram, log-linear: a delay under 32 ns has a bucket of
 * its own; from 32 ns on, each power of two [2^e, 2^(e+1)) has 32 buckets,
 * so a bucket is at most 1/32 of its lower bound wide (3.1%). e runs from
 * 5 to 63: 59 such groups after the first 32 buckets.
 */
#define WAKELAT_SUB_BITS   5
#define WAKELAT_NR_BUCKETS (60 << WAKELAT_SUB_BITS)

struct wakelat_totals {
	u64 max_ns; /* the longest delay seen on this CPU */
	u64 lost;   /* wake-ups not timed: the pending map was full */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Pending wake-ups: far more than the followed threads can have. */
	__uint(max_entries, 4096);
	__type(key, u32);   /* thread id */
	__type(value, u64); /* sched_waking's time, ns */
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WAKELAT_NR_BUCKETS);
	__type(key, u32);
	__type(value, u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct wakelat_totals);
} totals SEC(".maps");

static bool followed(const struct task_struct *p)
{
	u32 i;

	for (i = 0; i < TASK_COMM_LEN && i < comm_len; i++)
		if (p->comm[i] != comm_prefix[i])
			return false;
	return true;
}

/* The index of v's highest set bit; v > 0. */
static u32 highest_bit(u64 v)
{
	u32 e = 0;

	if (v >> 32) {
		v >>= 32;
		e += 32;
	}
	if (v >> 16) {
		v >>= 16;
		e += 16;
	}
	if (v >> 8) {
		v >>= 8;
		e += 8;
	}
	if (v >> 4) {
		v >>= 4;
		e += 4;
	}
	if (v >> 2) {
		v >>= 2;
		e += 2;
	}
	if (v >> 1)
		e += 1;
	return e;
}

/* The bucket of a delay of ns nanoseconds (src/main.rs's bucket_bounds()
 * gives its range). */
static u32 bucket(u64 ns)
{
	u32 e;

	if (ns < (1 << WAKELAT_SUB_BITS))
		return ns;
	e = highest_bit(ns);
	return ((e - WAKELAT_SUB_BITS + 1) << WAKELAT_SUB_BITS) |
	       ((ns >> (e - WAKELAT_SUB_BITS)) & ((1 << WAKELAT_SUB_BITS) - 1));
}

SEC("tp_btf/sched_waking")
int BPF_PROG(wakelat_waking, struct task_struct *p)
{
	u64 now = bpf_ktime_get_ns();
	u32 pid = p->pid, zero = 0;
	struct wakelat_totals *t;

	if (!followed(p))
		return 0;
	if (bpf_map_update_elem(&pending, &pid, &now, BPF_ANY)) {
		t = bpf_map_lookup_elem(&totals, &zero);
		if (t)
			t->lost++;
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wakelat_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	u32 prev_pid = prev->pid, next_pid = next->pid, zero = 0, idx;
	struct wakelat_totals *t;
	u64 *since, delay, *count;

	if (followed(prev))
		bpf_map_delete_elem(&pending, &prev_pid);
	if (!followed(next))
		return 0;
	since = bpf_map_lookup_elem(&pending, &next_pid);
	if (!since)
		return 0;
	delay = bpf_ktime_get_ns() - *since;
	bpf_map_delete_elem(&pending, &next_pid);
	idx = bucket(delay);
	count = bpf_map_lookup_elem(&hist, &idx);
	if (count)
		(*count)++;
	t = bpf_map_lookup_elem(&totals, &zero);
	if (t && delay > t->max_ns)
		t->max_ns = delay;
	return 0;
}
