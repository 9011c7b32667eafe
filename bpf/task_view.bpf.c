/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A readable view of every task's utilization and moves: util_avg,
 * util_est and runnable_avg (util.bpf.c); moves to another small core of
 * the same big core (small) and to another big core (big), and those moves
 * by the path that made them: wake, requeue, queue (migrate.bpf.h). Task
 * storage cannot be listed with bpftool (it has no keys to walk), so this
 * task iterator prints it instead: the loader pins it as <pin-dir>/tasks, and
 * `cat /sys/fs/bpf/scx_cadence/tasks` lists one task per line. It runs only
 * when read; the scheduler's hot paths do not pay for it.
 */
#include "cadence.bpf.h"
#include "pelt.bpf.h"

SEC("iter/task")
int task_util_view(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *p = ctx->task;
	struct task_ctx *tctx;

	if (!p)
		return 0;
	if (ctx->meta->seq_num == 0)
		BPF_SEQ_PRINTF(seq, "%-8s %-5s %-8s %-8s %-12s %-6s %-6s %-6s %-6s %-6s %s\n",
			       "pid", "cpu", "util_avg", "util_est", "runnable_avg", "small", "big",
			       "wake", "requeue", "queue", "comm");
	/* Threads of a process all show; kernel threads outside scx do not. */
	tctx = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	if (!tctx)
		return 0;
	BPF_SEQ_PRINTF(seq, "%-8d %-5d %-8llu %-8u %-12llu %-6u %-6u %-6u %-6u %-6u %s\n", p->pid,
		       tctx->util.cpu, tctx->util.avg.util_avg, pelt_util_est(&tctx->util.avg),
		       tctx->util.avg.runnable_avg, tctx->moves.small, tctx->moves.big,
		       tctx->moves.by_path[CADENCE_MOVE_WAKE],
		       tctx->moves.by_path[CADENCE_MOVE_REQUEUE],
		       tctx->moves.by_path[CADENCE_MOVE_QUEUE], p->comm);
	return 0;
}
