/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A slice that ends while others wait, ended on time.
 *
 * sched_ext notices a used-up p->scx.slice only at the tick
 * (task_tick_scx()), and so did this scheduler's own slice rule
 * (cadence_tick()): under load, where cpu_slice() shrinks slices toward
 * slice.min_us, a task ran to the next tick instead, 4 ms at HZ=250 and
 * 10-30 ms in the test VM's TCG. The fair class ends its slices with an
 * hrtimer where HRTICK is on (hrtick_start_fair()), as in the test
 * kernel. Beside steady hackbench, those long runs were most of
 * cyclictest's wait (docs/benchmarks.md, "A slice end on time").
 *
 * So when a task starts running (or is refilled) while others wait for its
 * CPU, a timer pinned to that CPU is set for the end of its slice, but no
 * earlier than latency.slice_timer_us after it began: the floor bounds the
 * switches a second it can add. When it fires, if that task still runs
 * and others still wait, the CPU is kicked with SCX_KICK_PREEMPT and its
 * dispatch() decides what runs next, as at a slice end the tick found.
 *
 * The timer is armed lazily: at most one is pending per CPU, and when it
 * fires early for the run now on the CPU (another task started since), it
 * is moved to that run's end. Set at every switch, even a timer of 3 ms
 * that seldom fired slowed hackbench in the test VM (0.76x EEVDF's time
 * against 0.67x); armed this way, the timers a second are bounded by the
 * floor, not by the switch rate.
 *
 * As at the tick, a task inside an RCU read-side critical section is not
 * cut (rcu_reader.bpf.h): the timer runs in softirq on that CPU, at an
 * interrupt's exit or a local_bh_enable() of the running task, so that
 * task is the current one, and any read lock it holds leaves the slice to
 * the tick, which refills it. Softirqs pushed to ksoftirqd run with
 * ksoftirqd current, whose run is not the one the timer was set for.
 */
#ifndef __CADENCE_SLICE_TIMER_BPF_H
#define __CADENCE_SLICE_TIMER_BPF_H

/*
 * A timer that finds its run's end this close (ns) kicks instead of
 * re-arming: scx_bpf_now() outside the runqueue lock reads sched_clock,
 * which may trail the hrtimer's clock by a few microseconds.
 */
#define CADENCE_SLICE_TIMER_SLACK_NS 20000ULL

/* A slice at least this long (ns) is not timed: SCX_SLICE_INF and kin. */
#define CADENCE_SLICE_TIMER_MAX_NS 1000000000ULL

struct slice_timer {
	struct bpf_timer timer;
	/* The run on this CPU, as its last start wrote it: start and timed end (ns). */
	u64 run_start;
	u64 run_end;
	/* When the pending timer fires (ns), while @armed. */
	u64 expires;
	/* 1 while the timer is pending. */
	u32 armed;
	/* 1 once the timer is set up (slice_timer_set()). */
	u32 ready;
};

/* By CPU: the timer that ends its running task's slice. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct slice_timer);
	__uint(max_entries, CADENCE_MAX_CPUS);
} slice_timers SEC(".maps");

static int slice_timer_fired(void *map, int *key, struct slice_timer *t);

/*
 * Fire @t at @at, on this CPU (@now < @at). Set up on first use, from a
 * non-sleepable callback, for the reason parity_timer_arm() gives.
 */
static __always_inline void slice_timer_set(struct slice_timer *t, u64 now, u64 at)
{
	if (!t->ready) {
		if (!CADENCE_TIMER_SETUP(t, slice_timers, slice_timer_fired))
			return;
		t->ready = 1;
	}
	t->armed = !bpf_timer_start(&t->timer, at - now, BPF_F_TIMER_CPU_PIN);
	t->expires = at;
}

/*
 * On CPU *@key, in softirq: end the run @t was set for if others still
 * wait, or wait for the end of the run that has replaced it.
 */
static int slice_timer_fired(void *map, int *key, struct slice_timer *t)
{
	const struct task_struct *curr;
	const struct cpu_run *r;
	s32 cpu = *key;
	u64 now;

	t->armed = 0;
	/* Pinned, it fires where it was set unless that CPU went offline. */
	if (bpf_timers_stopped || cpu != (s32)bpf_get_smp_processor_id())
		return 0;
	r = &cpu_runs[cpu_index(cpu)];
	if (!r->active || r->run_start != t->run_start || !nr_waiting(cpu))
		return 0;
	now = scx_bpf_now();
	if ((s64)(t->run_end - now) > (s64)CADENCE_SLICE_TIMER_SLACK_NS) {
		slice_timer_set(t, now, t->run_end);
		return 0;
	}
	curr = bpf_get_current_task_btf();
	if (in_rcu_read_section(curr, CADENCE_RCU_LOCKS_TIMER)) {
		stat_inc(slice_timer_rcu);
		return 0;
	}
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	stat_inc(slice_timer_kick);
	return 0;
}

/*
 * A run of @slice_ns began on @cpu, this CPU, at @run_start: record its
 * timed end, and if others wait, set the timer for it unless one is
 * pending for no later (a later one, left by a longer run that ended
 * early, is pulled in).
 */
static __always_inline void slice_timer_start(const struct cadence_policy *pol, s32 cpu,
					      u64 run_start, u64 slice_ns, u64 now)
{
	u64 floor = (u64)pol->slice_timer_us * 1000;
	struct slice_timer *t;
	u32 key = cpu;

	if (!bpf_timers_on || !floor || slice_ns >= CADENCE_SLICE_TIMER_MAX_NS)
		return;
	t = bpf_map_lookup_elem(&slice_timers, &key);
	if (!t)
		return;
	t->run_start = run_start;
	t->run_end = run_start + (slice_ns > floor ? slice_ns : floor);
	if (!nr_waiting(cpu) || (s64)(t->run_end - now) <= 0)
		return;
	if (t->armed && (s64)(t->expires - t->run_end) <= (s64)CADENCE_SLICE_TIMER_SLACK_NS)
		return;
	slice_timer_set(t, now, t->run_end);
}

#endif /* __CADENCE_SLICE_TIMER_BPF_H */
