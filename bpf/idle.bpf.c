/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The idle learner's glue: the maps, the power:cpu_idle tracepoint that
 * feeds it, and the recording of idle periods. The learning itself is
 * idle_learn.bpf.c.
 *
 * sched_ext cannot choose a C-state; the kernel's cpuidle governor does.
 * What this sees is every hardware idle entry: tp_btf/cpu_idle fires on the
 * idling CPU with the state index at entry and (u32)-1 at exit, from
 * cpuidle_enter_state() and, without a cpuidle driver, from
 * default_idle_call() with state 1. The exit only notes when the period
 * ended, since it is on the path of the wake-up that ended it (the CPU's
 * next task waits for it); the next entry, as the CPU has nothing to run,
 * scores the period and learns from it, then makes the predictions for
 * the new one from the CPU's table. A period is so learned from one idle
 * entry late, before any prediction that could use it: the predictions
 * are the same as if the exit had learned. Only a recording that ends, or
 * a predictor turned off, between a period's exit and the next entry
 * misses that period.
 * Only the CPU itself and the loader write its table, each whole and under
 * the table's spin lock (the loader with BPF_F_LOCK, to load or reset it),
 * so every reader, `ctl idle save` included, sees one whole table. The
 * learning runs on a per-CPU copy outside the lock (the verifier allows no
 * function calls under it, and the learner's loops live in global
 * functions). The copy stays current from one period to the next, so it
 * is taken again only after a loader write, and goes back to the table at
 * most every CADENCE_IDLE_PUBLISH_NS, only if the loader did not write the
 * table meanwhile (its generation). Readers of the table (`ctl idle
 * save`, the PM QoS rule, bpftool) see it that much late; a recording
 * starts from the CPU's own copy, which is never late.
 *
 * Where the kernel calls tick_nohz_get_sleep_length() (its menu and teo
 * governors do, before choosing), an fexit program keeps the result for
 * the next entry: teo's sleep length. Where nobody asks (no cpuidle
 * driver, or a governor that does not), the time to the CPU's next timer
 * event at the entry stands in (next_timer_event()).
 */
#include "cadence.bpf.h"

#include "idle_learn.bpf.h"

/* Each CPU's states, written by the loader before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_idle_states);
	__uint(max_entries, CADENCE_MAX_CPUS);
} idle_states SEC(".maps");

/* What each CPU learned (key: CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_idle_table);
	__uint(max_entries, CADENCE_MAX_CPUS);
} idle_table SEC(".maps");

CADENCE_PER_CPU(struct cadence_idle_cpu, idle_cpu);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_idle_ctl);
	__uint(max_entries, 1);
} idle_ctl SEC(".maps");

/*
 * `idle record`'s ring buffer: 4 MiB holds about 43,000 periods of 88
 * bytes (96 with the ring buffer's header), most of a second of them on a
 * busy 64-CPU machine (1,000 a second each), against the 100 ms between
 * two reads of the recorder. Submitted without a wake-up, as
 * cpufreq_trace's records (cpufreq.bpf.c): a recorder woken per period
 * makes periods of its own (15,000-20,000 of 5 s of the VM case's
 * sleepers, against 5,265 without).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} idle_trace SEC(".maps");

/*
 * The last sleep length this CPU's governor asked for and the time to its
 * next clock event it was given with it (delta_next), until its next entry.
 */
struct cadence_sleep_length {
	u64 ns;
	u64 next_event_ns;
	bool fresh;
};

CADENCE_PER_CPU(struct cadence_sleep_length, idle_sleep_length);

/*
 * How often a CPU writes its learning back to its `idle_table` entry. The
 * write-back (the lock and a 320-byte copy) was 40% of the learner's cost
 * when done at every exit: bench/idle.sh measured the tracepoint program at
 * a median 1.47x update_idle plus the bare tracepoint with it, 1.12x
 * without it. 50 ms keeps what readers see within a twentieth of a second
 * of what the CPU learned (the PM QoS rule reads every 250 ms).
 */
#define CADENCE_IDLE_PUBLISH_NS 50000000ULL

/*
 * Each CPU's tick device (kernel/time/tick-common.c). Weak: a kernel whose
 * BTF lacks per-CPU variables still loads the scheduler, with endless
 * sleep lengths where no governor asks.
 */
extern struct tick_device tick_cpu_device __ksym __weak;

/* KTIME_MAX (include/linux/ktime.h): a device programmed for nothing. */
#define CADENCE_KTIME_MAX 0x7fffffffffffffffLL

/*
 * Each CPU's tick state (kernel/time/tick-sched.c, static: its BTF and
 * kallsyms entries are what resolve it). Weak, as tick_cpu_device: without
 * it the tick is taken as running and never waking the CPU.
 */
extern struct tick_sched tick_cpu_sched __ksym __weak;

/* Each CPU's cpuidle device (drivers/cpuidle/cpuidle.c), NULL without a driver. */
extern struct cpuidle_device *cpuidle_devices __ksym __weak;

/*
 * TS_FLAG_STOPPED (kernel/time/tick-sched.h, BIT(1) in tick_sched.flags
 * since Linux 6.9): the idle tick is stopped.
 */
#define CADENCE_TS_FLAG_STOPPED (1UL << 1)

/*
 * This CPU's next clock event, absolute (ktime_t, CLOCK_MONOTONIC ns, the
 * clock of bpf_ktime_get_ns()): in one-shot mode its clock event device is
 * programmed for the earliest of its timers, hrtimers and the tick (if the
 * idle loop kept it) included, so a CPU no interrupt wakes sleeps until
 * then. Endless without a tick device, with one programmed for nothing
 * (KTIME_MAX: one-shot stopped, or shut down), and in periodic mode, where
 * next_event is not kept up (tick_handle_periodic()).
 */
static __always_inline u64 next_clock_event(void)
{
	struct clock_event_device *dev;
	struct tick_device *td;
	s64 next;

	if (!bpf_ksym_exists(&tick_cpu_device))
		return CADENCE_IDLE_ENDLESS;
	td = bpf_this_cpu_ptr(&tick_cpu_device);
	dev = td->evtdev;
	if (!dev || dev->state_use_accessors == CLOCK_EVT_STATE_PERIODIC)
		return CADENCE_IDLE_ENDLESS;
	next = dev->next_event;
	return next == CADENCE_KTIME_MAX || next < 0 ? CADENCE_IDLE_ENDLESS : next;
}

/*
 * The time from @now to @event (next_clock_event()). That is
 * tick_nohz_get_sleep_length()'s @delta_next. Its result can be later:
 * worked out before the tick is stopped, it is the next timer past the
 * tick; and it can be earlier: it counts global timers that timer
 * migration may hand to another CPU.
 */
static __always_inline u64 time_to(u64 event, u64 now)
{
	if (event == CADENCE_IDLE_ENDLESS)
		return CADENCE_IDLE_ENDLESS;
	return event > now ? event - now : 0;
}

/*
 * struct hrtimer before is_queued (22f011be7aaa, 2026): HRTIMER_STATE_ENQUEUED
 * is bit 0 of @state.
 */
struct hrtimer___state {
	u8 state;
} __attribute__((preserve_access_index));

/*
 * When this CPU's tick timer is due, CADENCE_IDLE_ENDLESS if it is not
 * queued: a stopped tick's timer is armed for the next timer event or
 * cancelled, and a cancelled one keeps its old expiry. The timer runs in
 * the interrupt that ends the period whenever it is due by then, the
 * device's next event or not: then the kernel counts a tick wake-up.
 */
static __always_inline u64 tick_due(void)
{
	struct tick_sched *ts;
	struct hrtimer *timer;
	bool queued;

	if (!bpf_ksym_exists(&tick_cpu_sched))
		return CADENCE_IDLE_ENDLESS;
	ts = bpf_this_cpu_ptr(&tick_cpu_sched);
	timer = &ts->sched_timer;
	if (bpf_core_field_exists(timer->is_queued))
		queued = BPF_CORE_READ(timer, is_queued);
	else
		queued = BPF_CORE_READ((struct hrtimer___state *)timer, state) & 1;
	return queued ? (u64)BPF_CORE_READ(timer, node.expires) : CADENCE_IDLE_ENDLESS;
}

/* Whether this CPU's tick is stopped now. */
static __always_inline bool tick_stopped_now(void)
{
	struct tick_sched *ts;

	if (!bpf_ksym_exists(&tick_cpu_sched))
		return false;
	ts = bpf_this_cpu_ptr(&tick_cpu_sched);
	return ts->flags & CADENCE_TS_FLAG_STOPPED;
}

/*
 * Whether this CPU's polling state gave up at its time limit in the period
 * that just ended: poll_idle() clears poll_time_limit as it starts and sets
 * it as it gives up, before the exit tracepoint.
 */
static __always_inline bool poll_gave_up(void)
{
	struct cpuidle_device **devp, *dev = NULL;

	if (!bpf_ksym_exists(&cpuidle_devices))
		return false;
	devp = bpf_this_cpu_ptr(&cpuidle_devices);
	if (bpf_probe_read_kernel(&dev, sizeof(dev), devp) || !dev)
		return false;
	return BPF_CORE_READ_BITFIELD_PROBED(dev, poll_time_limit);
}

/*
 * The sleep length a governor asked for since the last entry, else the
 * time to the next clock event; into @tick, the time to the next clock
 * event as teo saw it at selection.
 */
static __always_inline u64 take_sleep_length(u64 now, u64 event, struct cadence_idle_tick *tick)
{
	struct cadence_sleep_length *sl = idle_sleep_length_here();

	if (sl && sl->fresh) {
		sl->fresh = false;
		tick->next_event_ns = sl->next_event_ns;
		return sl->ns;
	}
	tick->next_event_ns = time_to(event, now);
	return tick->next_event_ns;
}

/*
 * Make this CPU's working copy current: copy its table only if the loader
 * wrote it since (or the copy was never taken). The generation is read
 * without the lock first: a write racing with that read is caught under
 * the lock, at the copy or at the write-back (idle_learn_ended()).
 */
static __always_inline void idle_sync_work(struct cadence_idle_cpu *c, struct cadence_idle_table *t)
{
	if (c->work_synced && READ_ONCE(t->generation) == c->work_generation)
		return;
	bpf_spin_lock(&t->lock);
	c->work = t->learned;
	c->work_generation = t->generation;
	bpf_spin_unlock(&t->lock);
	c->work_synced = 1;
}

/* The acting prediction of @e under @pol. */
static __always_inline u32 idle_acting(const struct cadence_policy *pol,
				       const struct cadence_idle_entry *e)
{
	switch (pol->idle_predictor) {
	case CADENCE_IDLE_PREDICTOR_PER_CHOICE:
		return e->per_choice;
	case CADENCE_IDLE_PREDICTOR_SEED:
		return e->seed;
	default:
		return e->teo;
	}
}

/*
 * Follow the loader's recording generation: joining a recording writes
 * this CPU's table to the ring buffer (so a replay starts where the CPU
 * stood) and zeroes the recording's scores. True while recording.
 */
static __always_inline bool idle_follow_record(struct cadence_idle_cpu *c,
					       const struct cadence_idle_ctl *ctl, u32 cpu)
{
	struct cadence_idle_table_event *ev;
	u64 gen = READ_ONCE(ctl->record_gen);

	if (c->record_gen == gen)
		return gen & 1;
	c->record_gen = gen;
	if (!(gen & 1))
		return false;
	/*
	 * By source: the BPF backend inlines no memset over 1 KiB, and the
	 * barrier keeps clang from merging the memsets into one.
	 */
#pragma unroll
	for (u32 src = 0; src < CADENCE_IDLE_SOURCES; src++) {
		__builtin_memset(c->record_scores.n[src], 0, sizeof(c->record_scores.n[src]));
		barrier();
	}
	__builtin_memset(c->record_scores.miss, 0, sizeof(c->record_scores.miss));
	ev = bpf_ringbuf_reserve(&idle_trace, sizeof(*ev), 0);
	if (!ev) {
		c->record_drops++;
		return true;
	}
	ev->kind = CADENCE_IDLE_EVENT_TABLE;
	ev->cpu = cpu;
	/* The CPU's own copy, current (idle_sync_work()): the table may lag. */
	ev->table = c->work;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	return true;
}

/*
 * Score the period that ended last and learn from it, at the entry after
 * it (@now), before the predictions for the next: under @pol, into @c's
 * working copy of @t.
 */
static __always_inline void idle_learn_ended(struct cadence_idle_cpu *c,
					     struct cadence_idle_table *t,
					     const struct cadence_idle_states *s,
					     const struct cadence_idle_ctl *ctl,
					     const struct cadence_policy *pol, u32 cpu, u64 now)
{
	struct cadence_idle_ideals ideals;
	struct cadence_idle_period *ev;
	u64 start = c->ended_start_ns, duration = c->ended_ns - c->ended_start_ns;

	c->ended_ns = 0;
	idle_learn(&c->work, s, pol, &c->entry, duration, &ideals);
	if (now - c->published_ns >= CADENCE_IDLE_PUBLISH_NS) {
		c->published_ns = now;
		bpf_spin_lock(&t->lock);
		if (t->generation == c->work_generation)
			t->learned = c->work;
		else
			c->work_synced = 0;
		bpf_spin_unlock(&t->lock);
		if (!c->work_synced)
			c->overtaken++;
	}

	idle_score(&c->scores, s, &c->entry, &ideals, ctl->kernel_indices);
	c->periods++;
	/* Recorded if the recording it began in (idle_follow_record()) still runs. */
	if (c->record_gen != READ_ONCE(ctl->record_gen) || !(c->record_gen & 1))
		return;

	idle_score(&c->record_scores, s, &c->entry, &ideals, ctl->kernel_indices);
	ev = bpf_ringbuf_reserve(&idle_trace, sizeof(*ev), 0);
	if (!ev) {
		c->record_drops++;
		return;
	}
	ev->kind = CADENCE_IDLE_EVENT_PERIOD;
	ev->cpu = cpu;
	ev->start_ns = start;
	ev->duration_ns = duration;
	ev->sleep_length_ns = c->entry.sleep_length_ns;
	ev->kernel_state = c->entry.kernel;
	ev->rand = c->entry.rand;
	ev->tick = c->entry.tick;
	ev->latency_req_ns = c->entry.latency_req_ns;
	ev->kernel_miss = c->entry.kernel_miss;
	ev->__pad = 0;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
}

static __always_inline void idle_enter(u32 cpu, s32 kernel_state, u64 now)
{
	struct cadence_idle_states *s = bpf_map_lookup_elem(&idle_states, &cpu);
	struct cadence_idle_table *t = bpf_map_lookup_elem(&idle_table, &cpu);
	struct cadence_idle_cpu *c = idle_cpu_here();
	struct cadence_idle_tick tick = {};
	u64 event = next_clock_event();
	u64 sleep_length = take_sleep_length(now, event, &tick);
	const struct cadence_policy *pol;
	struct cadence_idle_entry e;
	u32 rand, zero = 0, acting;
	struct cadence_idle_ctl *ctl = bpf_map_lookup_elem(&idle_ctl, &zero);
	bool kernel_known;

	if (!s || !t || !c || !ctl || !s->nr)
		return;
	pol = policy_in_force();
	if (!pol)
		return;
	kernel_known = ctl->kernel_indices && kernel_state >= 0 && (u32)kernel_state < s->nr;
	if (pol->idle_predictor == CADENCE_IDLE_PREDICTOR_OFF) {
		/* Nothing learned while off, not even the period before. */
		c->ended_ns = 0;
		/* No prediction, but placement can still rank by the kernel's state. */
		if (pol->idle_place != CADENCE_IDLE_PLACE_OFF && kernel_known)
			place_note_idle_exit(cpu, s->exit_latency_ns[st(kernel_state)]);
		return;
	}
	if (c->entry_ns)
		c->lost_exits++;
	idle_sync_work(c, t);
	/* Before idle_follow_record(): it began outside a recording joined now. */
	if (c->ended_ns)
		idle_learn_ended(c, t, s, ctl, pol, cpu, now);
	/* The seed's draw, and the per-choice pick's if random; a recording keeps it. */
	idle_follow_record(c, ctl, cpu);
	rand = bpf_get_prandom_u32();
	tick.tick_ns = ctl->tick_ns;
	/*
	 * Stopped as the last period ended and still: between a selection and
	 * its entry the tick is only ever stopped, so a tick running now ran
	 * at selection, whatever restarted it unseen (docs/idle.md).
	 */
	tick.stopped = c->tick_stopped && tick_stopped_now();
	idle_predict(&c->work, s, pol, sleep_length, &tick, s->latency_req_ns, rand, kernel_state,
		     kernel_known, &e);

	c->entry = e;
	/* The tick as this period runs under it: stopped or kept, as the kernel decided. */
	c->tick_due_ns = tick_due();
	c->entered_polls = kernel_known && (s->polling & (1U << (kernel_state & 31)));
	acting = kernel_known ? (u32)kernel_state : idle_acting(pol, &e);
	if (acting < CADENCE_IDLE_MAX_STATES) {
		WRITE_ONCE(c->state, acting);
		if (pol->idle_place != CADENCE_IDLE_PLACE_OFF)
			place_note_idle_exit(cpu, s->exit_latency_ns[st(acting)]);
	}
	/*
	 * The period starts as this program ends, as cpuidle_enter_state()'s
	 * clock starts after the tracepoint: the period is then the time the
	 * kernel's own verdict measures, without the learning above.
	 */
	c->entry_ns = bpf_ktime_get_ns();
}

/*
 * The period ends (@now): the CPU is awake for placement; the learning
 * waits for its next entry (idle_learn_ended()). How it ended is read now:
 * whether the tick was due (its interrupt, pending or the one that woke
 * the CPU, runs before the kernel's governor asks, as
 * tick_nohz_idle_got_tick() would then say), whether a poll gave up, and
 * whether the tick is stopped, as it will be at the next selection unless
 * the CPU leaves idle first (idle_visit_starts()).
 */
static __always_inline void idle_exit(u64 now)
{
	struct cadence_idle_cpu *c = idle_cpu_here();

	if (!c || !c->entry_ns)
		return;
	WRITE_ONCE(c->state, -1);
	c->ended_start_ns = c->entry_ns;
	c->ended_ns = now;
	c->entry_ns = 0;
	c->entry.tick.woke = now >= c->tick_due_ns;
	c->entry.tick.poll_limit = c->entered_polls && poll_gave_up();
	c->tick_stopped = tick_stopped_now();
}

/*
 * @cpu starts idling: it left idle last with its tick restarted
 * (tick_nohz_idle_exit()), so the tick runs at its first selection.
 */
__hidden void idle_visit_starts(s32 cpu)
{
	struct cadence_idle_cpu *c;
	u32 zero = 0;

	c = bpf_map_lookup_percpu_elem(&idle_cpu, &zero, cpu);
	if (c)
		c->tick_stopped = 0;
}

/* TP_PROTO(unsigned int state, unsigned int cpu_id), include/trace/events/power.h */
SEC("tp_btf/cpu_idle")
int BPF_PROG(cadence_cpu_idle, unsigned int state, unsigned int cpu_id)
{
	u32 cpu = bpf_get_smp_processor_id();
	u64 now = bpf_ktime_get_ns();

	if (state == (u32)-1) {
		place_note_idle_exit(cpu, 0);
		idle_exit(now);
	} else
		idle_enter(cpu, state, now);
	return 0;
}

/*
 * The kernel's verdict on the period that just ended, for the cross-check
 * of the ideal (docs/idle.md): cpuidle_enter_state() fires it on the idle
 * CPU after the exit (with interrupts on but for a coupled state), before
 * the idle loop can enter again, so the period it judges is the one
 * waiting for the next entry. Without a cpuidle driver nothing fires it
 * (the test VM drives this program through BPF_PROG_TEST_RUN). A raw
 * tracepoint, not tp_btf: that is the kind BPF_PROG_TEST_RUN runs.
 * TP_PROTO(unsigned int cpu_id, unsigned int state, bool below),
 * include/trace/events/power.h.
 */
SEC("raw_tp/cpu_idle_miss")
int BPF_PROG(cadence_cpu_idle_miss, unsigned int cpu_id, unsigned int state, bool below)
{
	struct cadence_idle_cpu *c = idle_cpu_here();

	/* No period learned from here or in progress: the learner is off; not counted. */
	if (!c || (!c->ended_ns && !c->entry_ns))
		return 0;
	/*
	 * Another CPU's, during a period, or about a state the tracepoint did
	 * not report (a driver that entered another than it was asked for).
	 */
	if (cpu_id != bpf_get_smp_processor_id() || !c->ended_ns || c->entry.kernel != (s32)state) {
		c->stray_misses++;
		return 0;
	}
	c->entry.kernel_miss = below ? CADENCE_IDLE_MISS_BELOW : CADENCE_IDLE_MISS_ABOVE;
	return 0;
}

/* The governor's sleep length: ktime_t tick_nohz_get_sleep_length(ktime_t *delta_next). */
SEC("fexit/tick_nohz_get_sleep_length")
int BPF_PROG(cadence_sleep_length, ktime_t *delta_next, ktime_t ret)
{
	struct cadence_sleep_length *sl = idle_sleep_length_here();
	ktime_t next = 0;

	if (sl) {
		sl->ns = ret > 0 ? ret : 0;
		/* delta_next: a pointer to a scalar, read through the helper. */
		if (bpf_probe_read_kernel(&next, sizeof(next), delta_next))
			next = CADENCE_KTIME_MAX;
		sl->next_event_ns = next > 0 ? next : 0;
		sl->fresh = true;
	}
	return 0;
}
