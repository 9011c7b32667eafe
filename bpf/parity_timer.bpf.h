/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end of a run-to-parity hold, on time.
 *
 * A waking task that should preempt a running one, but finds that task
 * still inside the first slice.min_us of its request (CADENCE_PREEMPT_PARITY,
 * see deadline.bpf.h), is queued. Before, only the tick decided again
 * (waiting_preempts()), up to a tick later: 4 ms at HZ=250, and in the
 * test VM's single-thread TCG often 5-10 ms. Traced beside steady
 * hackbench (bench/out, ptr18: 4 pinned cyclictest threads), 43% of the
 * threads' wait time was in waits of over 2 ms in which the CPU ran no
 * other task between the wake-up and the thread's run, and in 57-68% of
 * those the running task had started under 250 us before the thread woke
 * (docs/benchmarks.md).
 *
 * So the wake-up (or a tick that finds one still held back) also arms a
 * timer for the rest of that task's minimum slice. When it fires, the
 * tick's question is asked then (waiting_preempts()): if a task waiting
 * for that CPU should now preempt its running one, the CPU is kicked with
 * SCX_KICK_PREEMPT, and its dispatch() decides what runs next, as at a
 * slice end. The fair class ends its own run-to-parity protection at its
 * next update_curr(), not by a timer of its own.
 *
 * The timer runs in softirq (a BPF timer is a soft hrtimer) on the CPU that
 * armed it last, not necessarily the one it is for: that one is kicked.
 * PREEMPT_RT kernels refuse BPF timers, so there the loader turns this off
 * (bpf_timers_on, timers.bpf.h) and held wake-ups wait for the tick as before.
 */
#ifndef __CADENCE_PARITY_TIMER_BPF_H
#define __CADENCE_PARITY_TIMER_BPF_H

struct parity_timer {
	struct bpf_timer timer;
	/* 1 once the timer is set up (parity_timer_arm()). */
	u32 ready;
};

/* By CPU: the timer that re-decides the wake-ups its task held back. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct parity_timer);
	__uint(max_entries, CADENCE_MAX_CPUS);
} parity_timers SEC(".maps");

static __noinline bool waiting_preempts(const struct cadence_policy *pol, s32 cpu, u64 now,
					u64 *held_ns);

/*
 * At the end of a hold on CPU *@key: kick it if a waiting task now
 * preempts. If a task waiting there is still held back by run-to-parity
 * (the CPU has started another task since, or refilled a slice), wait for
 * that task's minimum. Each wait is the whole rest of a minimum, so this
 * ends once the CPU runs one task for slice.min_us.
 */
static int parity_timer_fired(void *map, int *key, struct parity_timer *t)
{
	struct cadence_policy pol;
	s32 cpu = *key;
	u64 held_ns;

	if (bpf_timers_stopped)
		return 0;
	stat_inc(wake_parity_fired);
	policy_snapshot(&pol);
	if (waiting_preempts(&pol, cpu, scx_bpf_now(), &held_ns)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		stat_inc(wake_parity_kick);
	} else if (held_ns) {
		bpf_timer_start(&t->timer, held_ns, 0);
	}
	return 0;
}

/*
 * Ask again whether a waiting task preempts @cpu's task in @delay_ns, when
 * that task has run its minimum slice. Re-arming moves a pending timer:
 * every wake-up held back by one task asks for the same instant, its start
 * plus the minimum. The timer is set up on first use, from this
 * non-sleepable context: set up in the sleepable init(), it would be
 * verified as sleepable by kernels without the verifier's fix of October
 * 2025, which then refuse the DSQ iterator that kernels before 6.19 peek
 * with (__COMPAT_scx_bpf_dsq_peek()).
 */
static __always_inline void parity_timer_arm(s32 cpu, u64 delay_ns)
{
	u32 key = cpu;
	struct parity_timer *t;

	if (!bpf_timers_on)
		return;
	t = bpf_map_lookup_elem(&parity_timers, &key);
	if (!t)
		return;
	if (!t->ready) {
		if (!CADENCE_TIMER_SETUP(t, parity_timers, parity_timer_fired))
			return;
		t->ready = 1;
	}
	bpf_timer_start(&t->timer, delay_ns, 0);
}

#endif /* __CADENCE_PARITY_TIMER_BPF_H */
