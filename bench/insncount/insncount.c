// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts the guest's executed instructions, for
 * costs that hardly move with the host's load: under TCG a callback's
 * run_time_ns moves by a third from round to round, its instructions by
 * a few percent (bench/insncount.sh).
 *
 * Counted: every instruction the guest runs, those of user space apart,
 * and those of kernel addresses per translation block start, so that the
 * guest's /proc/kallsyms names where they ran (a BPF program, a kfunc, the
 * scheduler core). Each time the guest runs `xchg %bx,%bx` (bench/insncount/
 * mark.c) the counts since the last such mark are appended to the file
 * given as out=PATH, and start again from zero:
 *
 *   mark N total T user U translated B
 *   VADDR COUNT            (one line per kernel block start that ran)
 *
 * B counts the blocks translated since the last mark: code run for the
 * first time, or again after QEMU threw its translation away (a write to
 * a page of code, a full translation cache), a cost of TCG's own.
 *
 * Single-threaded TCG only (tests/vm/boot.sh's default): the counters are
 * plain adds, as QEMU's inline ops are.
 *
 * QEMU 7.2's plugin API, version 1 (Debian 12's qemu-system-x86); the
 * declarations below are that API's, as its documentation gives them.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* x86-64's kernel half: addresses from here up are the kernel's. */
#define KERNEL_START 0xffff800000000000ULL
/* The marker: xchg %bx,%bx. */
static const uint8_t MARK[] = {0x66, 0x87, 0xdb};
/* Kernel block records are allocated this many at a time, never moved. */
#define CHUNK 65536

struct block {
	uint64_t vaddr;
	uint64_t count;
};

static struct block **chunks;
static size_t nr_chunks, nr_blocks;
static uint64_t total, user, translations;
static uint64_t marks;
static FILE *out;

static struct block *new_block(uint64_t vaddr)
{
	struct block *b;

	if (nr_blocks == nr_chunks * CHUNK) {
		chunks = realloc(chunks, (nr_chunks + 1) * sizeof(*chunks));
		if (!chunks || !(chunks[nr_chunks] = calloc(CHUNK, sizeof(struct block)))) {
			fprintf(stderr, "insncount: out of memory\n");
			abort();
		}
		nr_chunks++;
	}
	b = &chunks[nr_blocks / CHUNK][nr_blocks % CHUNK];
	nr_blocks++;
	b->vaddr = vaddr;
	return b;
}

/* The counts since the last mark, then zero. */
static void dump(unsigned int vcpu, void *udata)
{
	size_t i;

	(void)vcpu;
	(void)udata;
	fprintf(out, "mark %" PRIu64 " total %" PRIu64 " user %" PRIu64 " translated %" PRIu64 "\n",
		++marks, total, user, translations);
	for (i = 0; i < nr_blocks; i++) {
		struct block *b = &chunks[i / CHUNK][i % CHUNK];

		if (b->count)
			fprintf(out, "%" PRIx64 " %" PRIu64 "\n", b->vaddr, b->count);
		b->count = 0;
	}
	fflush(out);
	total = 0;
	user = 0;
	translations = 0;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);

	(void)id;
	translations++;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
	if (vaddr >= KERNEL_START) {
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &new_block(vaddr)->count, n);
		return;
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &user, n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (qemu_plugin_insn_size(insn) == sizeof(MARK) &&
		    !memcmp(qemu_plugin_insn_data(insn), MARK, sizeof(MARK)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, dump, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
	}
}

static void finished(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	fclose(out);
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path) {
		fprintf(stderr, "insncount: give out=PATH\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, finished, NULL);
	return 0;
}
