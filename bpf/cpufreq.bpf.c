/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cpufreq hints: each CPU's cpufreq target, chosen by cpufreq_target.bpf.h from
 * its frequency-invariant util and passed to scx_bpf_cpuperf_set().
 *
 * Where and on which CPU. Only from ops.running(), ops.tick() and, for the
 * floor, ops.update_idle() as the CPU goes idle (cpufreq_going_idle()), and only
 * for the CPU the code runs on, when that is also the CPU whose rq the
 * kernel locked for the callback (the task's CPU). The kernel ends the
 * scheduler when scx_bpf_cpuperf_set() targets another CPU than the one
 * whose rq lock is held, and schedutil ignores updates that come from a
 * CPU outside the policy; running() on behalf of a remote CPU (a task's
 * attributes changed from elsewhere while it runs there) is skipped. The
 * target is at most CADENCE_CPUFREQ_MAX by construction, and clamped again at
 * the call, since above 1024 also ends the scheduler.
 *
 * iowait. Nothing here reads p->in_iowait unless the policy's
 * legacy_iowait_boost switch is on; it exists for comparisons only.
 */
#include "cadence.bpf.h"
#include "pelt.bpf.h"

#include "cpufreq_target.bpf.h"

/* HZ of the running kernel, for the legacy boost's one-tick reset. */
extern int CONFIG_HZ __kconfig __weak;

/* The kernel's most common HZ (Debian's), if its config does not say. */
#define CADENCE_DEFAULT_HZ 250

/* Test only: read util from util_inject instead of PELT (--test-util-inject). */
const volatile bool cpufreq_util_inject;

CADENCE_PER_CPU(struct cadence_cpu_cpufreq, cpu_cpufreq);

/* Test only: per-CPU util values, read when cpufreq_util_inject is set. */
CADENCE_PER_CPU(struct cadence_util_inject, util_inject);

/* `cpufreq record`'s switch: see struct cadence_cpufreq_ctl. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct cadence_cpufreq_ctl);
	__uint(max_entries, 1);
} cpufreq_ctl SEC(".maps");

/* Each CPU's part in the recording (struct cadence_cpufreq_record). */
CADENCE_PER_CPU(struct cadence_cpufreq_record, cpufreq_record);

/*
 * `cpufreq record`'s ring buffer: 4 MiB holds about 87,000 steps of 48
 * bytes (40 and the ring buffer's 8-byte header): the recorder reads every
 * 100 ms, so up to about 870,000 steps a second, a 64-CPU machine's ticks
 * at HZ=1000 and 13,000 context switches a second per CPU.
 * Records are submitted without a wake-up: woken per record, the recorder
 * recorded mostly itself (a 0.15 s recording in the VM held 1,460 steps
 * that way, 45 without).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} cpufreq_trace SEC(".maps");

/* TICK_NSEC of the running kernel. */
static __always_inline u64 tick_ns(void)
{
	int hz = CONFIG_HZ > 0 ? CONFIG_HZ : CADENCE_DEFAULT_HZ;

	return 1000000000ULL / hz;
}

/*
 * The util this CPU's target follows: its invariant util_avg, or the
 * running task's util_est if that is higher (a task that ran big before
 * its sleep gets its frequency back at once, as cpu_util() with util_est
 * gives it in the kernel); the injected value in tests.
 */
static __always_inline u32 cpufreq_util(const struct cadence_cpu_util *cu, struct task_ctx *tctx)
{
	struct cadence_util_inject *inj;
	u32 est;
	u64 util;

	if (cpufreq_util_inject) {
		inj = util_inject_here();
		util = inj ? inj->util : 0;
	} else {
		util = cu->avg.util_avg;
		est = pelt_util_est(&tctx->util.avg);
		if (est > util)
			util = est;
	}
	return util > CADENCE_CAP_SCALE ? CADENCE_CAP_SCALE : (u32)util;
}

/* The knobs of @pol that cpufreq_target.bpf.h reads. */
static __always_inline void cpufreq_knobs_of(struct cadence_cpufreq_knobs *k,
					     const struct cadence_policy *pol)
{
	k->mode = pol->cpufreq_mode;
	k->headroom_pct = pol->cpufreq_headroom_pct;
	k->scale = pol->cpufreq_scale;
	k->floor_util = pol->cpufreq_floor_util;
	k->band = pol->cpufreq_band;
	k->iowait_boost = pol->cpufreq_iowait_boost;
	k->interval_ns = pol->cpufreq_interval_ns;
	k->down_hold_ns = pol->cpufreq_down_hold_ns;
}

static __always_inline bool cpufreq_knobs_equal(const struct cadence_cpufreq_knobs *a,
						const struct cadence_cpufreq_knobs *b)
{
	return a->mode == b->mode && a->headroom_pct == b->headroom_pct && a->scale == b->scale &&
	       a->floor_util == b->floor_util && a->band == b->band &&
	       a->iowait_boost == b->iowait_boost && a->interval_ns == b->interval_ns &&
	       a->down_hold_ns == b->down_hold_ns;
}

/*
 * A CPU joins recording @gen at its first step in it, and again at its
 * first step under changed knobs (a policy swap): it writes its state as it
 * stands before the step (@pc, @cpu) and @pol's knobs, so that a replay
 * starts where the CPU stood. Joining a new recording zeroes its counts.
 * Returns the CPU's record, or NULL if the ring buffer had no room: the
 * step is then not recorded (a replay cannot start without its join), the
 * drop is counted, and the next step tries again.
 * Not inlined, and static (a global subprogram may return no pointer): only
 * a recording pays for its stack.
 */
static __noinline struct cadence_cpufreq_record *
cpufreq_record_begin(const struct cadence_cpu_cpufreq *pc, const struct cadence_policy *pol,
		     u32 cpu, u64 gen)
{
	struct cadence_cpufreq_record *rec;
	struct cadence_cpufreq_join *ev;
	struct cadence_cpufreq_knobs k;

	rec = cpufreq_record_here();
	if (!rec)
		return NULL;
	cpufreq_knobs_of(&k, pol);
	if (rec->record_gen == gen && cpufreq_knobs_equal(&rec->knobs, &k))
		return rec;
	if (rec->record_gen != gen) {
		rec->record_gen = gen;
		rec->drops = 0;
		__builtin_memset(rec->n, 0, sizeof(rec->n));
	}
	ev = bpf_ringbuf_reserve(&cpufreq_trace, sizeof(*ev), 0);
	if (!ev) {
		rec->drops++;
		/* No mode has this value: the knobs differ at the next step. */
		rec->knobs.mode = (u32)-1;
		return NULL;
	}
	rec->knobs = k;
	ev->kind = CADENCE_CPUFREQ_EVENT_JOIN;
	ev->cpu = cpu;
	ev->tick_ns = tick_ns();
	ev->knobs = k;
	ev->state = *pc;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	return rec;
}

/*
 * Before a step on this CPU: its record if the step is recorded, that is
 * while `cpufreq record` runs (cpufreq_ctl's generation is odd); NULL
 * otherwise. Outside a recording a step costs this one array lookup.
 */
static __always_inline struct cadence_cpufreq_record *
cpufreq_record_join(const struct cadence_cpu_cpufreq *pc, const struct cadence_policy *pol, u32 cpu)
{
	struct cadence_cpufreq_ctl *ctl;
	u32 zero = 0;
	u64 gen;

	ctl = bpf_map_lookup_elem(&cpufreq_ctl, &zero);
	if (!ctl)
		return NULL;
	gen = READ_ONCE(ctl->record_gen);
	if (!(gen & 1))
		return NULL;
	return cpufreq_record_begin(pc, pol, cpu, gen);
}

/*
 * After a recorded step: count its verdict and write it. @util is what the
 * evaluation saw before any boost (0 going idle), @freq_scale the CPU's
 * frequency ratio (0 if not read).
 */
static __always_inline void cpufreq_record_step(struct cadence_cpufreq_record *rec,
						const struct cadence_cpu_cpufreq *pc, u32 cpu,
						u64 now, u32 util, bool iowait, bool idle,
						u32 verdict, u32 freq_scale)
{
	struct cadence_cpufreq_step_event *ev;

	if (verdict >= CADENCE_CPUFREQ_NR_VERDICTS)
		return;
	rec->n[idle ? CADENCE_CPUFREQ_STEP_IDLE : CADENCE_CPUFREQ_STEP_BUSY][verdict]++;
	ev = bpf_ringbuf_reserve(&cpufreq_trace, sizeof(*ev), 0);
	if (!ev) {
		rec->drops++;
		return;
	}
	ev->kind = CADENCE_CPUFREQ_EVENT_STEP;
	ev->cpu = cpu;
	ev->now = now;
	ev->util = util;
	ev->iowait = iowait;
	ev->idle = idle;
	ev->verdict = verdict;
	ev->target = pc->target;
	ev->freq_scale = freq_scale;
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
}

/* ops.runnable(): remember an iowait wake-up, for the legacy boost only. */
__hidden void cpufreq_runnable(struct task_struct *task, struct task_ctx *tctx,
			       const struct cadence_policy *pol, u64 enq_flags)
{
	/* (Not named p: BPF_CORE_READ_BITFIELD() declares a local p.) */
	if (pol->cpufreq_iowait_boost && (enq_flags & SCX_ENQ_WAKEUP))
		tctx->iowait_wake = BPF_CORE_READ_BITFIELD(task, in_iowait);
}

/*
 * cpufreq_update() (cadence.bpf.h) on @p's own CPU: re-evaluate this CPU's
 * target after its util was brought to @now (@cu). @iowait: the running
 * task just woke from iowait (running()).
 */
__hidden void cpufreq_update_here(struct task_ctx *tctx, const struct cadence_cpu_util *cu,
				  const struct cadence_policy *pol, bool iowait, u64 now)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct cadence_cpufreq_record *rec;
	struct cadence_cpu_cpufreq *pc;
	u32 target, util, verdict;

	pc = cpu_cpufreq_here();
	if (!pc)
		return;
	rec = cpufreq_record_join(pc, pol, cpu);
	util = cpufreq_util(cu, tctx);
	/* TICK_NSEC is a division: only the legacy boost needs it. */
	verdict = cpufreq_evaluate(pc, pol, util, iowait, now,
				   pol->cpufreq_iowait_boost ? tick_ns() : 0);
	if (rec)
		cpufreq_record_step(rec, pc, cpu, now, util, iowait, false, verdict,
				    cu->freq_scale);
	if (verdict != CADENCE_CPUFREQ_ISSUED)
		return;
	target = pc->target;
	if (target > CADENCE_CPUFREQ_MAX)
		target = CADENCE_CPUFREQ_MAX;
	scx_bpf_cpuperf_set(cpu, target);
}

/*
 * ops.update_idle(idle = true): this CPU goes idle and asks for its floor
 * (cpufreq_idle()). update_idle() runs on the CPU with its rq locked.
 */
__hidden void cpufreq_going_idle(s32 cpu, const struct cadence_policy *pol)
{
	struct cadence_cpufreq_record *rec;
	struct cadence_cpu_cpufreq *pc;
	u32 verdict;

	if (cpu != bpf_get_smp_processor_id())
		return;
	pc = cpu_cpufreq_here();
	if (!pc)
		return;
	rec = cpufreq_record_join(pc, pol, cpu);
	verdict = cpufreq_idle(pc, pol);
	if (rec)
		cpufreq_record_step(rec, pc, cpu, scx_bpf_now(), 0, false, true, verdict, 0);
	if (verdict != CADENCE_CPUFREQ_ISSUED)
		return;
	scx_bpf_cpuperf_set(cpu,
			    pc->target > CADENCE_CPUFREQ_MAX ? CADENCE_CPUFREQ_MAX : pc->target);
}

/* ops.dump_cpu(): @cpu's cpufreq state. */
__hidden void cpufreq_dump_cpu(s32 cpu)
{
	struct cadence_cpu_cpufreq *pc;
	u32 zero = 0;

	pc = bpf_map_lookup_percpu_elem(&cpu_cpufreq, &zero, cpu);
	if (pc)
		scx_bpf_dump("  cpufreq target=%u util=%u issued=%llu boost=%u\n", pc->target,
			     pc->util, pc->issued, pc->boost);
}
