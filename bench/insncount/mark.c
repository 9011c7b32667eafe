// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's marker for bench/insncount: executes `xchg %bx,%bx` (66 87 db),
 * an instruction no compiler emits, once, and exits. The QEMU plugin
 * (insncount.c) writes its counts since the last mark when it sees that
 * instruction run. No libc: built -nostdlib -static, it runs in any guest.
 */
void _start(void)
{
	__asm__ volatile("xchg %%bx, %%bx\n\t"
			 "mov $60, %%eax\n\t" /* exit(0) */
			 "xor %%edi, %%edi\n\t"
			 "syscall" ::
				 : "memory");
	__builtin_unreachable();
}
