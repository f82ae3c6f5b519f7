// SPDX-License-Identifier: GPL-2.0
/*
 * What one uprobe trap costs on this machine, by the instruction it is
 * placed on (bench/traps.sh attaches empty uprobes to these functions and
 * runs this program under them).
 *
 * Usage: traps FUNCTION CALLS
 *
 * Calls FUNCTION (push, nop5, nop1) CALLS times through a pointer the compiler
 * cannot see through, and prints the nanoseconds a call took, timed in
 * the process. The functions are written in assembly so that the probed
 * instruction is known:
 *
 * - tb_push: endbr64, then push %r14, the instruction memtrace-bpf probes
 *   in c10's reporters (after their endbr64); its own symbol,
 *   tb_push_insn, marks it. The kernel emulates a push. A probe on
 *   tb_push itself lands on the endbr64, which the kernel single-steps
 *   out of line instead.
 * - tb_nop5: a 5-byte nop, which kernels with optimized uprobes (6.18)
 *   turn into a call to a trampoline after its first hit.
 * - tb_nop1: a 1-byte nop, what a USDT probe site (sys/sdt.h) is, such as
 *   PyTorch's pytorch:malloc and pytorch:free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tb_push(void);
void tb_nop5(void);
void tb_nop1(void);

__asm__(".text\n"
	".globl tb_push\n.type tb_push,@function\ntb_push:\n"
	"	endbr64\n"
	".globl tb_push_insn\n.type tb_push_insn,@function\ntb_push_insn:\n"
	"	push %r14\n"
	"	pop %r14\n"
	"	ret\n"
	".size tb_push,.-tb_push\n"
	".size tb_push_insn,.-tb_push_insn\n"
	".globl tb_nop5\n.type tb_nop5,@function\ntb_nop5:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	ret\n"
	".size tb_nop5,.-tb_nop5\n"
	".globl tb_nop1\n.type tb_nop1,@function\ntb_nop1:\n"
	"	nop\n"
	"	ret\n"
	".size tb_nop1,.-tb_nop1\n");

static double now_ns(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t)) {
		perror("clock_gettime");
		exit(1);
	}
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	void (*volatile fn)(void);
	void (*f)(void);
	char *end;
	long n;
	double t;

	if (argc != 3) {
		fprintf(stderr, "usage: traps push|nop5|nop1 CALLS\n");
		return 2;
	}
	n = strtol(argv[2], &end, 10);
	if (*end || n <= 0) {
		fprintf(stderr, "traps: CALLS=%s: a whole number above 0\n",
			argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "push")) {
		fn = tb_push;
	} else if (!strcmp(argv[1], "nop5")) {
		fn = tb_nop5;
	} else if (!strcmp(argv[1], "nop1")) {
		fn = tb_nop1;
	} else {
		fprintf(stderr, "traps: %s: push, nop5 or nop1\n", argv[1]);
		return 2;
	}
	f = fn;
	t = now_ns();
	for (long i = 0; i < n; i++)
		f();
	printf("%.1f\n", (now_ns() - t) / (double)n);
	return 0;
}
