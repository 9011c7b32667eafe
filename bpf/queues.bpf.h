/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The queues: which DSQ a task goes into, and which one a CPU takes its next
 * task from. enqueue() queues a task in its LLC's queue, or in one CPU's own
 * queue when it may run only there or holds its CPU; dispatch() weighs the
 * heads of a CPU's two queues, a busier LLC's head, a starved head and the
 * task it ran (main.bpf.c's design comment says in which order). A sync
 * wake-up is sent to its waker's own queue when that queue or the LLC's
 * has waited long (select_cpu()).
 */
#ifndef __CADENCE_QUEUES_BPF_H
#define __CADENCE_QUEUES_BPF_H

/*
 * Mark @p's sync wake-up for enqueue() to queue in the waker's CPU's own
 * queue, beside the task waiting there; false if @p has no context. Not
 * inlined: its frame would add to select_cpu()'s, whose call chain down
 * the small-core search is at the verifier's 512-byte stack limit.
 */
static __noinline bool mark_sync_wake(struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return false;
	tctx->sync_wake = true;
	return true;
}

/*
 * Mark @p's sync wake-up, which found no CPU, to preempt nobody (enqueue(),
 * latency.bpf.h). Not inlined, as mark_sync_wake().
 */
static __noinline void mark_sync_no_preempt(struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		tctx->sync_no_preempt = true;
}

/*
 * Whether the head of @cpu's LLC queue has waited longer than @wait_ns. A
 * sync wake-up then joins @cpu's own queue, where dispatch() weighs it
 * against that head (own_head_first()), not the local queue, which the
 * kernel runs without asking dispatch(): a pair waking each other there
 * keeps the CPU from dispatch() for as long as it bounces, and only a
 * preemption that lands between a wake-up and the waker's sleep breaks the
 * chain. Not inlined: select_cpu()'s stack, as mark_sync_wake().
 */
static __noinline bool llc_head_waited(s32 cpu, u64 wait_ns)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(llc_dsq(cpu_llc_id(cpu)));
	struct task_ctx *hctx = head ? lookup_task_ctx(head) : NULL;

	return hctx && (s64)(scx_bpf_now() - hctx->queued_at) > (s64)wait_ns;
}

/*
 * A CPU may have gone idle since the search for @p (or a claim was lost)
 * while @p waits in an LLC queue: wake one @p may use, without claiming it,
 * or @p waits for a busy CPU's slice to end while that one sleeps. The woken
 * CPU takes from its LLC's queue or steals, nearest LLC first, as any CPU
 * about to idle does: not always @p, but one waiting task runs.
 */
static __always_inline bool kick_idle_for(const struct task_struct *p)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	u32 cpu = bpf_cpumask_any_and_distribute(idle, p->cpus_ptr);

	scx_bpf_put_idle_cpumask(idle);
	if (cpu >= scx_bpf_nr_cpu_ids())
		return false;
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(enq_kick_idle);
	return true;
}

/*
 * A key just behind that of the last task waiting in @dsq that does not
 * hold that CPU in its LLC queue's frame (task_ctx.hold_queued), or @key
 * if that is later or there is none. Tasks holding the CPU are ordered
 * among themselves by deadline, as they would be in the LLC queue: behind
 * them as well, a hog of a cgroup of cpu.weight 1000 put back by a short
 * task went behind the held hog of a cgroup of 100 beside it, which then
 * ran first whatever its deadline; the 1000 got 85.5-86.0% of the CPU time
 * where the hold off gives 90.8-90.9% (a hog per CPU each, 4 CPUs,
 * diagnostic boots), and with this 89.7-90.8%. Such tasks are at most two per
 * CPU (hold_has_room()), so the walk is short.
 */
static __always_inline u64 key_behind_tail(u64 dsq, u64 key)
{
	struct task_ctx *tctx;
	struct task_struct *p;

	bpf_for_each (scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		tctx = lookup_task_ctx(p);
		if (tctx && tctx->hold_queued)
			continue;
		if (!vtime_before(p->scx.dsq_vtime, key))
			key = p->scx.dsq_vtime + 1;
		break;
	}
	return key;
}

/*
 * @tctx's task, with its deadline set, goes into @dsq now: note when, and
 * its deadline in the frame of its CPU's LLC queue (task_ctx.llc_deadline);
 * returns its key in @dsq. That is its deadline moved into @dsq's frame
 * (they differ for a task holding its CPU: task_ctx.hold_queued). A
 * CPU-bound task holding its CPU (task_ctx.held) goes behind the tasks
 * already waiting there (but other held ones, key_behind_tail()), as they
 * waited for that CPU before it was put back:
 * ordered by deadline among them, a CPU-bound task put back ran before the
 * pinned periodic thread it had kept waiting (cyclictest under CPU hogs).
 * Not inlined: enqueue()'s stack, as mark_sync_wake().
 */
static __noinline u64 note_queued(struct task_ctx *tctx, u64 dsq)
{
	u64 key;

	if (!tctx)
		return 0;
	key = tctx->deadline;
	if (dsq != tctx->queue)
		key += frontier(dsq) - frontier(tctx->queue);
	if (tctx->held)
		key = key_behind_tail(dsq, key);
	tctx->queued_at = scx_bpf_now();
	tctx->llc_deadline = key;
	if (dsq < CADENCE_MAX_CPUS)
		tctx->llc_deadline += frontier(llc_dsq(cpu_llc_id(dsq))) - frontier(dsq);
	return key;
}

/*
 * What queueing @p in @dsq for a slice of @slice_ns records: its deadline,
 * its place (note_queued()), and that running() takes it as from @dsq.
 * Returns its key in @dsq.
 */
static __always_inline u64 note_queue_entry(struct task_struct *p, struct task_ctx *tctx, u64 dsq,
					    u64 slice_ns)
{
	u64 key;

	tctx->deadline = task_deadline(p, tctx, slice_ns);
	key = note_queued(tctx, dsq);
	tctx->queued = true;
	moves_placed(&tctx->moves, CADENCE_MOVE_QUEUE);
	return key;
}

/*
 * Queue @p in @dsq, keyed by its virtual deadline for a slice of @slice_ns;
 * a waking task that goes ahead of the queue's head counts as an overtake.
 */
static __always_inline void queue_task(struct task_struct *p, struct task_ctx *tctx, u64 dsq,
				       u64 slice_ns, u64 enq_flags)
{
	struct task_struct *head;
	u64 key;

	key = note_queue_entry(p, tctx, dsq, slice_ns);
	if (enq_flags & SCX_ENQ_WAKEUP) {
		head = __COMPAT_scx_bpf_dsq_peek(dsq);
		if (head && vtime_before(key, head->scx.dsq_vtime))
			stat_inc(wake_overtake);
	}
	scx_bpf_dsq_insert_vtime(p, dsq, slice_ns, key, enq_flags);
}

/*
 * A wake-up for @cpu, the CPU whose runqueue @p is enqueued on, while @cpu is
 * idle and nothing waits for it (@waiting, nr_waiting(), 0: its own DSQ @dsq
 * and its LLC's empty): @p
 * goes to @cpu's local DSQ at once, the idle CPU claimed, as select_cpu()
 * sends a task to the idle CPU it found, and no dispatch() runs on the
 * wake-up's path. That is for the wake-ups select_cpu() does not place: a
 * task pinned to one CPU (the kernel calls select_cpu() only for tasks that
 * may run on several), and a sync wake-up sent to its waker's CPU that finds
 * the waker gone and the queue there emptied. With one LLC the dispatch a
 * kick would run could only have taken @p; with several it might first have
 * taken a busier LLC's head (dispatch_balance), which now waits for that
 * CPU's next dispatch: @p may run nowhere else. No kick: the insert itself
 * reschedules the idle task (dispatch_enqueue() in kernel/sched/ext.c;
 * local_dsq_post_enq() from 7.0: ext ranks above idle), and a kick from here,
 * under @cpu's runqueue lock, would only queue an irq_work that finds the CPU
 * busy. The bookkeeping is queue_task()'s (note_queue_entry()), so that
 * running() finds @p as if taken from @dsq: @dsq's frontier follows it.
 */
static __always_inline bool queue_direct_idle(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					      u64 dsq, u64 waiting, u64 slice_ns, u64 enq_flags)
{
	if (!(enq_flags & SCX_ENQ_WAKEUP) || waiting || !scx_bpf_test_and_clear_cpu_idle(cpu))
		return false;
	note_queue_entry(p, tctx, dsq, slice_ns);
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns, enq_flags);
	stat_inc(enq_idle);
	return true;
}

/*
 * Queue @p in @cpu's own DSQ, to wait for that CPU alone (a pinned task, or
 * one holding its CPU), its vtime in the frame of queue @frame (that DSQ;
 * for a task holding its CPU, its LLC's: task_ctx.hold_queued), and kick
 * @cpu if it is idle. The kick matters for a
 * task enqueued with SCX_ENQ_LAST: it was its CPU's last one and that CPU
 * is going idle, and only a kick makes an idle CPU look at its own queue
 * again (without one, held tasks waited there 22 s, until the kernel saw
 * an RCU stall). A waking @p that should run at once preempts @cpu's
 * task instead (preempt_on_prev()), or goes to an idle @cpu at once
 * (queue_direct_idle()): true then, and @p is in no queue of ours.
 */
static __always_inline bool queue_on_cpu(const struct cadence_policy *pol, struct task_struct *p,
					 struct task_ctx *tctx, s32 cpu, u64 frame, u64 enq_flags)
{
	u64 dsq = cpu_dsq(cpu), waiting = nr_waiting(cpu);
	u64 slice_ns = task_slice_waiting(pol, p, waiting);

	if (vtime_for_queue(pol, p, tctx, frame))
		stat_inc(enq_lag_floor);
	if (preempt_on_prev(pol, p, tctx, slice_ns, enq_flags))
		return true;
	if (queue_direct_idle(p, tctx, cpu, dsq, waiting, slice_ns, enq_flags))
		return true;
	queue_task(p, tctx, dsq, slice_ns, enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return false;
}

/* A queue a CPU may take its next task from, and its head. */
struct queue_head {
	u64 dsq_id;
	/* The head's deadline, in this queue's frame. */
	u64 deadline;
	/* Its place in the order of the two queues (its times 0 if unknown). */
	struct cadence_queue_head_order order;
	/* When it became runnable, jiffies (the kernel's watchdog clock). */
	unsigned long runnable_at;
	/* The head itself (RCU-protected for this callback), NULL if none. */
	struct task_struct *task;
	bool present;
};

/*
 * What dispatch_queues() leaves to the end of dispatch(): when it began,
 * and, with prev first in its own queue, prev's next slice and the queue
 * whose head runs here if prev leaves.
 */
struct dispatch_end {
	u64 now;
	u64 pslice;
	u64 next_dsq;
};

static __always_inline void peek_head(struct queue_head *q, u64 dsq_id)
{
	struct task_struct *p = __COMPAT_scx_bpf_dsq_peek(dsq_id);
	struct task_ctx *tctx = p ? lookup_task_ctx(p) : NULL;

	q->dsq_id = dsq_id;
	q->task = p;
	q->present = p != NULL;
	q->deadline = p ? p->scx.dsq_vtime : 0;
	q->order.queued_at = tctx ? tctx->queued_at : 0;
	q->order.llc_deadline = tctx ? tctx->llc_deadline : 0;
	q->order.rel_deadline = (s64)(q->deadline - frontier(dsq_id));
	q->order.llc_frame = tctx && tctx->hold_queued;
	q->runnable_at = p ? p->scx.runnable_at : 0;
}

/*
 * Move the first task of @dsq this CPU may run here; true if a task was
 * moved. Its queue's frontier follows it when it starts running
 * (cadence_running()).
 */
static __always_inline bool take_from(u64 dsq)
{
	return scx_bpf_dsq_move_to_local(dsq, 0);
}

/* take_from() one of the two queues @cpu serves, counted by which. */
static __always_inline bool take_queue(u64 dsq, s32 cpu)
{
	if (!take_from(dsq))
		return false;
	if (dsq == cpu_dsq(cpu))
		stat_inc(dispatch_cpu);
	else
		stat_inc(dispatch_llc);
	return true;
}

static __always_inline bool take_head(const struct queue_head *q, s32 cpu)
{
	return q->present && take_queue(q->dsq_id, cpu);
}

/*
 * Of the two queues this CPU serves, the one @pctx's task was last queued
 * in, with the other in @other. A task last queued elsewhere (it ran on an
 * idle CPU since, or moved here) is moved into the frame of this CPU's LLC
 * queue, where it would be queued, and counts as in that queue.
 */
static __always_inline struct queue_head *home_queue(const struct task_struct *prev,
						     struct task_ctx *pctx, struct queue_head *own,
						     struct queue_head *llc,
						     struct queue_head **other)
{
	if (pctx->queue == own->dsq_id) {
		*other = llc;
		return own;
	}
	rebase_vtime(prev, pctx, llc->dsq_id);
	*other = own;
	return llc;
}

/*
 * Longest the head of an LLC's queue is left to an idle CPU while a busy
 * one runs on: 2 jiffies (8 ms at HZ=250). A kicked idle CPU takes it
 * within microseconds; a head still there two ticks later found none that
 * could (claimed meanwhile, or not in its affinity), and the busy CPUs take
 * it again at their next slice end, so deferring holds no task back longer.
 */
#define CADENCE_DEFER_JIFFIES 2

/*
 * Whether a busy CPU whose task would yield to the head of its LLC's queue
 * @q should let it run on instead, because an idle CPU that may run the
 * head was kicked to take it. Without this, a short task queued for a
 * moment (no idle CPU could be claimed when it woke) is taken by the first
 * busy CPU whose slice ends, and that CPU's long-running task is queued and
 * moves to the idle CPU: short tasks coming and going moved CPU-bound tasks
 * between big cores (issue 15: moves by the "requeue" and "queue" paths).
 */
static __always_inline bool defer_head_to_idle(const struct queue_head *q)
{
	if (!q->task || (long)(bpf_jiffies64() - q->runnable_at) >= CADENCE_DEFER_JIFFIES)
		return false;
	return kick_idle_for(q->task);
}

/*
 * Longest a task waits in a CPU's own queue before it runs ahead of that
 * queue's order: 250 jiffies, 1 s at Debian's HZ=250 (0.25 s at HZ=1000,
 * 2.5 s at HZ=100), jiffies as the kernel's watchdog counts. The lead bound
 * (fair.bpf.h, max_wait_reach()) keeps waits near 1 s only for a queue its
 * CPUs serve full time; a CPU serves its own queue only between turns of
 * its LLC's, and under stress-ng's affinity churn beside 700 runnable
 * tasks, pinned tasks ahead of their queue's frontier waited over 8 s (the
 * fair class's longest wait in the same load: 1.5 s).
 */
#define CADENCE_STARVE_JIFFIES 250
/*
 * Tasks of a CPU's own queue looked at for one that waited too long, from
 * the back, where the tasks furthest ahead of the queue's frontier wait for
 * it to drift to them: own queues hold pinned tasks, sync wake-ups and
 * tasks holding their CPU (at most one CPU-bound), rarely more than a few.
 */
#define CADENCE_STARVE_SCAN 32
/*
 * The same for an LLC's queue, which holds every runnable task of the LLC
 * under overload: 268 when khugepaged (nice 19) starved in the mixed-load
 * case, 700 under stress-ng's affinity churn. The lead bound keeps waits
 * near 1 s only while the queue's weight stays what it was when a task was
 * queued: khugepaged, queued beside about 30 tasks, waited 10-15 s once
 * hackbench and stress-ng made them 270 (mixed-load case, CI at 9931e5a).
 * Looked at from the back, as the own queue: a task waiting long was
 * queued far ahead of the frontier.
 */
#define CADENCE_STARVE_SCAN_LLC 1024
/*
 * Jiffies between two looks at an LLC's queue for a starved task: 25, a
 * tenth of CADENCE_STARVE_JIFFIES (100 ms at HZ=250), so that a starved
 * task waits there little past that bound, while a look (up to twice
 * CADENCE_STARVE_SCAN_LLC steps of the DSQ iterator) is taken by one CPU of
 * the LLC ten times a second, not at every dispatch.
 */
#define CADENCE_STARVE_LLC_EVERY 25
/*
 * Jiffies to the next look after one that found a starved task: 1, so that
 * others that starved with it, or one that the looking CPU may not run,
 * are taken within a few ticks, each by one look.
 */
#define CADENCE_STARVE_LLC_AGAIN 1

/* When each LLC's queue is next looked at for a starved task, jiffies. */
static u64 llc_starve_look_at[CADENCE_MAX_LLCS];
/*
 * The jiffy in which each CPU last looked at its own queue for a starved
 * task: once a jiffy, 1/250 of CADENCE_STARVE_JIFFIES at any HZ, not at
 * every dispatch. A look is a lookup of the DSQ by id and, if it holds
 * tasks, a walk: 0.85 looks and 2 iterator steps a hackbench switch when
 * every dispatch looked (bench/bpf_lines.py), about 3 dispatches a jiffy
 * on each CPU. Written only by its CPU's dispatch().
 */
static u64 cpu_starve_looked[CADENCE_MAX_CPUS];

/* What take_starved() found. */
enum starved_found {
	STARVED_NONE,
	/* One starved, but not one this CPU may run. */
	STARVED_ELSEWHERE,
	STARVED_TAKEN,
};

/*
 * Take the task that has waited longest in @dsq, of the last @scan queued
 * there that may run on @cpu, if it waited CADENCE_STARVE_JIFFIES or
 * longer. The longest-waiting one, not the first found: under overload in
 * QEMU a whole LLC queue of 400 tasks waits over 1 s, and taking the first
 * found from the back served the queue backwards, and its head waited 8 s.
 * The task runs out of the queue's order, so the queue's frontier does not
 * follow it (cadence_running()): the tasks before it keep their lag. It is
 * moved from a second walk, checked again there: an affinity change
 * between the walks requeues it, and a move to a CPU it may not use ends
 * the scheduler. Global, not static: the verifier checks it once, with
 * @scan unknown, so its loops converge in a few steps; static, they were
 * walked step by step for each caller's constant, and 1024 steps kept the
 * scheduler from attaching within a minute under TCG.
 */
__noinline int take_starved(u64 dsq, s32 cpu, u32 scan)
{
	u64 now = bpf_jiffies64(), waited, longest = 0, since = 0;
	int found = STARVED_NONE;
	struct task_ctx *tctx;
	struct task_struct *p;
	u32 seen = 0, at = 0;
	s32 pid = -1;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return STARVED_NONE;
	bpf_for_each (scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		if (++seen > scan)
			break;
		waited = now - p->scx.runnable_at;
		if ((s64)waited < CADENCE_STARVE_JIFFIES)
			continue;
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
			found = STARVED_ELSEWHERE;
			continue;
		}
		if (waited > longest) {
			longest = waited;
			since = p->scx.runnable_at;
			pid = p->pid;
			at = seen;
		}
	}
	if (pid < 0)
		return found;
	seen = 0;
	bpf_for_each (scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		if (++seen > at)
			break;
		if (p->pid != pid)
			continue;
		if (p->scx.runnable_at != since || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr) ||
		    !scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return STARVED_ELSEWHERE;
		tctx = lookup_task_ctx(p);
		if (tctx)
			tctx->queued = false;
		return STARVED_TAKEN;
	}
	return STARVED_ELSEWHERE;
}

/*
 * take_starved() from @cpu's own queue, at its first dispatch in a jiffy,
 * or from its LLC's, if no CPU of the LLC looked there in the last
 * CADENCE_STARVE_LLC_EVERY jiffies (the CPU that moves the next look's time
 * takes this one); true if a task was taken. Not inlined: its locals would
 * grow dispatch()'s frame, which is on the call chain down
 * dispatch_queues().
 */
static __noinline bool take_any_starved(s32 cpu)
{
	u32 llc = cpu_llc_id(cpu);
	u64 *look_at = &llc_starve_look_at[llc_index(llc)];
	u64 *looked = &cpu_starve_looked[cpu_index(cpu)];
	u64 now = bpf_jiffies64(), at = *look_at;
	int found;

	if (*looked != now) {
		*looked = now;
		if (take_starved(cpu_dsq(cpu), cpu, CADENCE_STARVE_SCAN) == STARVED_TAKEN) {
			stat_inc(dispatch_starved);
			return true;
		}
	}
	if ((s64)(now - at) < 0 ||
	    __sync_val_compare_and_swap(look_at, at, now + CADENCE_STARVE_LLC_EVERY) != at)
		return false;
	found = take_starved(llc_dsq(llc), cpu, CADENCE_STARVE_SCAN_LLC);
	/* Others may be starved too, or this one not for this CPU: look again soon. */
	if (found != STARVED_NONE)
		__sync_val_compare_and_swap(look_at, now + CADENCE_STARVE_LLC_EVERY,
					    now + CADENCE_STARVE_LLC_AGAIN);
	if (found != STARVED_TAKEN)
		return false;
	stat_inc(dispatch_starved_llc);
	return true;
}

/*
 * The head of @cpu's own queue, @own, holds this CPU in its LLC queue's
 * frame (task_ctx.hold_queued), and @llc, the LLC queue's head, goes
 * before it at @now: if @llc is lasting work of like util per weight (it
 * would not displace the held task lightly, displaces_lightly()), the held
 * task goes back to the LLC queue by its deadline, where every CPU of the
 * LLC sees it, as a task displaced by such a head is queued there
 * (note_displaced()). Held, it waited a whole slice for this CPU while the
 * others, not seeing it, took later LLC heads: a cgroup of cpu.weight 1000
 * beside one of 100 (a hog per CPU each) got 82-84% where EEVDF gives 91%;
 * 86-87% sent back (diagnostic boots, 4 CPUs).
 * Short heads leave it held, so churn still does not move CPU-bound tasks.
 * A CPU-bound held task was compared by its key behind the own queue's
 * tail (note_queued()): if its own deadline is before @llc's, it runs here
 * now instead, as it would come first in the LLC queue (true). Moved, an
 * idle CPU is kicked to take it. The held task waits in this CPU's DSQ
 * and was last enqueued on this CPU, whose runqueue lock dispatch()
 * holds: its task_ctx is this CPU's to change. Not inlined:
 * dispatch_queues()'s stack.
 */
static __noinline bool unhold_behind(s32 cpu, const struct queue_head *own,
				     const struct queue_head *llc, u64 now)
{
	struct task_ctx *tctx, *hctx;
	struct task_struct *p;
	u64 deadline;

	if (!own || !llc || !own->order.llc_frame || !own->task || !llc->task)
		return false;
	tctx = lookup_task_ctx(own->task);
	hctx = lookup_task_ctx(llc->task);
	if (!tctx || !hctx || !tctx->hold_queued || displaces_lightly(hctx, tctx, now))
		return false;
	bpf_for_each (scx_dsq, p, cpu_dsq(cpu), 0) {
		if (p->pid != own->task->pid)
			break;
		deadline = task_deadline(p, tctx, p->scx.slice);
		if (vtime_before(deadline, llc->deadline))
			return true;
		scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, deadline);
		if (scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, tctx->queue, 0)) {
			hold_release(tctx);
			tctx->hold_queued = false;
			tctx->deadline = deadline;
			tctx->llc_deadline = deadline;
			stat_inc(dispatch_unhold);
			kick_idle_for(p);
		}
		break;
	}
	return false;
}

/*
 * @prev (@pctx) gives up its CPU to the head of @q at @now: with
 * placement.hold, if that head is short (it woke less than
 * CADENCE_LASTING_NS ago, or has less than half prev's util), prev waits
 * for this CPU rather than move to whichever frees first (enqueue()), as a
 * preempted task waits on its runqueue in the fair class. Between lasting
 * tasks of like util prev is queued as before, so CPU-bound tasks still
 * take turns on every CPU of the LLC.
 */
static __always_inline void note_displaced(const struct cadence_policy *pol, struct task_ctx *pctx,
					   const struct queue_head *q, u64 now)
{
	struct task_ctx *hctx;

	if (!pctx || !pol->place_hold || !q->task)
		return;
	hctx = lookup_task_ctx(q->task);
	pctx->stay_home = hctx && displaces_lightly(hctx, pctx, now);
}

/*
 * Let @prev run another slice of @slice_ns on @cpu, with the deadline of
 * that slice (EEVDF's update_deadline() when a slice is used up).
 */
static __always_inline void keep_running(const struct cadence_policy *pol, struct task_struct *prev,
					 struct task_ctx *pctx, s32 cpu, u64 slice_ns, u64 now)
{
	scx_bpf_task_set_slice(prev, slice_ns);
	pctx->run_start = now;
	/* A new slice in full: a new request, whose minimum counts afresh. */
	pctx->granted = slice_ns;
	pctx->parity_ran = 0;
	/* Kept since it yielded (nothing else could run here): that yield is spent. */
	pctx->yielded = false;
	pctx->deadline = task_deadline(prev, pctx, slice_ns);
	run_record(cpu, prev, pctx, now);
	slice_timer_start(pol, cpu, now, slice_ns, now);
	stat_inc(dispatch_keep);
}

/*
 * dispatch() on @cpu at end->now, all but its end: true if it took a task
 * or kept prev (@pctx, if prev is queued); false if prev is first in its
 * own queue and nothing may run here before it, with end->pslice and
 * end->next_dsq set for the caller, which decides whether prev moves
 * (hold_rebalance()) or runs on. Not inlined: the caller's frame, not
 * this one's, is on the call chain down the placement search, which the
 * verifier counts against 512 bytes.
 */
static __noinline bool dispatch_queues(s32 cpu, struct task_struct *prev, struct task_ctx *pctx,
				       const struct cadence_policy *pol, struct dispatch_end *end)
{
	u64 now = end->now;
	u32 llc = cpu_llc_id(cpu), i;
	struct queue_head own_head, llc_head, far_head;
	struct queue_head *own_q = &own_head, *llc_q = &llc_head, *far_q = &far_head;
	struct queue_head *first, *second, *home = NULL, *other = NULL;
	u64 pslice = 0, pdeadline = 0;
	bool prev_first = false;
	s32 busier;

	peek_head(own_q, cpu_dsq(cpu));
	peek_head(llc_q, llc_dsq(llc));

	/*
	 * Another LLC has more waiting per CPU: take its head if it was
	 * queued before both local heads (prev then queues here).
	 */
	if (nr_llcs > 1) {
		busier = llc_to_balance(llc);
		if (busier >= 0) {
			peek_head(far_q, llc_dsq(busier));
			if (far_q->present &&
			    (!own_q->present || head_queued_first(&far_q->order, &own_q->order)) &&
			    (!llc_q->present || head_queued_first(&far_q->order, &llc_q->order)) &&
			    take_from(far_q->dsq_id)) {
				stat_inc(dispatch_balance);
				return true;
			}
		}
	}

	if (pctx) {
		home = home_queue(prev, pctx, own_q, llc_q, &other);
		/* Woken onto an idle CPU, it was never queued: bound it now. */
		bound_lag(pol, prev, pctx, false);
		/* The deadline of prev's next slice, were it queued now. */
		pslice = task_slice(pol, prev, cpu);
		pdeadline = task_deadline(prev, pctx, pslice);
	}
	if (pctx && home && other) {
		/* One that yielded goes behind whatever waits (cadence_yield()). */
		prev_first = !home->present ||
			     (!pctx->yielded && !vtime_before(home->deadline, pdeadline));
		/*
		 * prev would yield to the LLC queue's head alone (it is behind
		 * that head in its own queue, or first there with the head in
		 * the other queue): if an idle CPU can take the head, prev runs
		 * on.
		 */
		if (pol->place_hold && llc_q->present &&
		    (home == llc_q ? !prev_first && !own_q->present : prev_first) &&
		    defer_head_to_idle(llc_q)) {
			keep_running(pol, prev, pctx, cpu, pslice, now);
			if (prev_first)
				advance_frontier(pctx->queue, pctx->vtime);
			stat_inc(dispatch_defer);
			return true;
		}
	}
	if (pctx && home && other && prev_first) {
		/*
		 * prev is still first in its own queue: it runs on unless a
		 * task waits in the other queue, which then goes first (prev
		 * has not waited at all), not the head prev is ahead of. That
		 * head displaces prev like any other: most often a per-CPU
		 * kworker woken in this CPU's own queue, and without the hold
		 * the CPU-bound task it displaced went to the LLC queue and
		 * to whichever CPU freed first (traced in the bench's churn
		 * runs: most of the moves by the queue path). But a task
		 * holding this CPU with its vtime in the LLC queue's frame
		 * (task_ctx.hold_queued), prev's too, goes first by deadline
		 * alone, as in the LLC queue: going first at every slice end,
		 * the light tasks of a cgroup of cpu.weight 100 held beside
		 * the hogs of one of 1000 ran a slice in three or four on
		 * their CPU, and the 1000 got 74% where EEVDF gives 91%.
		 */
		if ((other != own_q || !own_q->order.llc_frame ||
		     vtime_before(own_q->order.llc_deadline, pdeadline)) &&
		    take_head(other, cpu)) {
			note_displaced(pol, pctx, other, now);
			return true;
		}
		/*
		 * A pinned CPU-bound task waits behind prev, which may run on
		 * an idle CPU: the pinned one runs, and prev, enqueued, leaves.
		 */
		if (home == own_q && make_room_for_pinned(prev, cpu) && take_head(own_q, cpu)) {
			stat_inc(dispatch_make_room);
			return true;
		}
		/*
		 * The rest is the caller's (cadence_dispatch()). If prev
		 * leaves, the earlier head runs next: a held head prev went
		 * before may wait in the other queue (above).
		 */
		end->next_dsq =
			own_q->present && (!llc_q->present ||
					   own_head_first(&own_q->order, &llc_q->order, now))
				? own_q->dsq_id
				: llc_q->dsq_id;
		end->pslice = pslice;
		return false;
	}

	if (own_q->present &&
	    (!llc_q->present || own_head_first(&own_q->order, &llc_q->order, now))) {
		first = own_q;
		second = llc_q;
	} else if (own_q->present && llc_q->present && unhold_behind(cpu, own_q, llc_q, now)) {
		first = own_q;
		second = llc_q;
	} else {
		first = llc_q;
		second = own_q;
	}
	if (take_head(first, cpu)) {
		note_displaced(pol, pctx, first, now);
		return true;
	}
	if (take_head(second, cpu)) {
		note_displaced(pol, pctx, second, now);
		return true;
	}

	/* Idle otherwise: pull from the other LLCs, nearest index first. */
	bpf_for (i, 1, nr_llcs) {
		if (take_from(llc_dsq((llc + i) % nr_llcs))) {
			stat_inc(dispatch_steal);
			return true;
		}
	}

	/* The queued heads cannot run here: prev goes on. */
	if (pctx)
		keep_running(pol, prev, pctx, cpu, pslice, now);
	return true;
}

#endif /* __CADENCE_QUEUES_BPF_H */
