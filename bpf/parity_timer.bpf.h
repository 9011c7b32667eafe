/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end of a run-to-parity hold, on time.
 *
 * A waking task that should preempt a running one, but finds that task
 * still inside its first slice.min_us (CADENCE_PREEMPT_PARITY, see
 * deadline.bpf.h), is queued. Before, only the tick decided again
 * (waiting_preempts()), and a tick is a whole tick away: 4 ms at HZ=250,
 * and in the test VM's single-thread TCG often 5-10 ms. Traced beside
 * steady hackbench (bench/out, ptr18: 30 s, 4 pinned cyclictest threads),
 * 43% of the threads' wait time was in waits of over 2 ms in which the CPU
 * ran no other task between the wake-up and the thread's run, and in 57-68%
 * of those the running task had run under 250 us when the thread woke: it
 * waited for the tick, not behind anybody.
 *
 * So the wake-up (or a tick that finds one still held back) also arms a
 * timer of the CPU whose task holds it back, for the rest of that task's
 * minimum slice. When it fires, the tick's question is asked then
 * (waiting_preempts()): if a task waiting for that CPU should now preempt
 * its running one, the CPU is kicked with SCX_KICK_PREEMPT and its
 * dispatch() takes the waiting task. The fair class re-decides at its next
 * update_curr(): a tick, or another event on that runqueue; only its
 * HRTICK feature, off by default, times a slice's end.
 */
#ifndef __CADENCE_PARITY_TIMER_BPF_H
#define __CADENCE_PARITY_TIMER_BPF_H

/* include/uapi/linux/time.h; a define there, so not in vmlinux.h. */
#define CADENCE_CLOCK_MONOTONIC 1

struct parity_timer {
	struct bpf_timer timer;
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
 * preempts. If the CPU has switched meanwhile to a task that holds the
 * waiting one back in turn (it has just started), wait for that one's
 * minimum: each re-arming follows a new start on the CPU (a switch or a
 * slice refilled), so it ends.
 */
static int parity_timer_fired(void *map, int *key, struct parity_timer *t)
{
	struct cadence_policy pol;
	s32 cpu = *key;
	u64 held_ns;

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
 * plus the minimum.
 */
static __always_inline void parity_timer_arm(s32 cpu, u64 delay_ns)
{
	u32 key = cpu;
	struct parity_timer *t = bpf_map_lookup_elem(&parity_timers, &key);

	if (t)
		bpf_timer_start(&t->timer, delay_ns, 0);
}

/* Set up every possible CPU's timer (init(), sleepable). */
static __always_inline s32 parity_timers_init(void)
{
	u32 nr = scx_bpf_nr_cpu_ids(), i;
	struct parity_timer *t;
	s32 err;

	bpf_for (i, 0, nr) {
		if (i >= CADENCE_MAX_CPUS)
			break;
		t = bpf_map_lookup_elem(&parity_timers, &i);
		if (!t)
			return -ENOENT;
		err = bpf_timer_init(&t->timer, &parity_timers, CADENCE_CLOCK_MONOTONIC);
		if (err)
			return err;
		err = bpf_timer_set_callback(&t->timer, parity_timer_fired);
		if (err)
			return err;
	}
	return 0;
}

#endif /* __CADENCE_PARITY_TIMER_BPF_H */
