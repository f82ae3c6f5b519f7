// SPDX-License-Identifier: GPL-2.0
/*
 * user/python/nodetls.c: libtorch_cpu's autograd thread-locals, decoded
 * from Debian's real libraries and compared with what docs/autograd-tls.md
 * found in them (objdump, and live reads of a process that imported each).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "python/nodetls.h"
#include "roots.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct want {
	const char *glob; /* under the roots, or absolute */
	__u64 node_got, node_imm, ctr_got, ctr_imm;
	__u32 seq_nr_off;
};

/* torch 1.13 on this host; 2.6 CPU and CUDA, and 2.14, in the roots */
static const struct want wants[] = {
	{ "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0", 0x7242ba8, 0x2408,
	  0x7242ac8, 0, 0x18 },
	{ "%s/trixie-*/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0",
	  0xfa992b0, 0x2510, 0xfa992b0, 0x130, 0x18 },
	{ "%s/cuda-ca091962cfd0/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0",
	  0xf24c8e8, 0x2510, 0xf24c8e8, 0x130, 0x18 },
	{ "%s/sid-*/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.14.1",
	  0x11e83168, 0x25d0, 0x11e83168, 0x178, 0x10 },
};

static void test_real_libraries(void **state)
{
	const char *roots = roots_dir();
	int libs = 0;

	for (size_t w = 0; w < ARRAY_SIZE(wants); w++) {
		char pat[512];
		glob_t g;

		snprintf(pat, sizeof(pat), wants[w].glob, roots);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			struct mt_node_tls t = { 0 };
			char err[256];
			int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);

			assert_true(fd >= 0);
			assert_int_equal(mt_node_tls_find_fd(fd, g.gl_pathv[i],
							     &t, err,
							     sizeof(err)),
					 0);
			close(fd);
			print_message(
				"%s: node %#llx+%#llx, counter "
				"%#llx+%#llx, sequence_nr_ %#x\n",
				g.gl_pathv[i], (unsigned long long)t.node_got,
				(unsigned long long)t.node_imm,
				(unsigned long long)t.ctr_got,
				(unsigned long long)t.ctr_imm, t.seq_nr_off);
			assert_int_equal(t.node_got, wants[w].node_got);
			assert_int_equal(t.node_imm, wants[w].node_imm);
			assert_int_equal(t.ctr_got, wants[w].ctr_got);
			assert_int_equal(t.ctr_imm, wants[w].ctr_imm);
			assert_int_equal(t.seq_nr_off, wants[w].seq_nr_off);
			libs++;
		}
		globfree(&g);
	}
	roots_skip_if_none(libs);
}

/* a library that is no libtorch_cpu: said, not guessed */
static void test_not_torch(void **state)
{
	struct mt_node_tls t;
	char err[256] = "";
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(mt_node_tls_find_fd(fd, "self", &t, err, sizeof(err)),
			 -ENOEXEC);
	close(fd);
	assert_string_equal(err, "self: no Node::assign_parent()");
}

/* a target's memory: the GOT pairs at 0x1000 (Node) and 0x2000 (counter) */
struct fake {
	__u64 node[2], ctr[2];
};

static int fake_read(void *ctx, __u64 addr, void *buf, size_t len)
{
	const struct fake *f = ctx;

	if (len != 16)
		return -EFAULT;
	if (addr == 0x7f0000001000)
		memcpy(buf, f->node, len);
	else if (addr == 0x7f0000002000)
		memcpy(buf, f->ctr, len);
	else
		return -EFAULT;
	return 0;
}

static void test_place(void **state)
{
	/* general-dynamic counter (1.13): its offset is in the pair */
	struct mt_node_tls t = { .node_got = 0x1000,
				 .node_imm = 0x2408,
				 .ctr_got = 0x2000,
				 .ctr_imm = 0,
				 .seq_nr_off = 0x18 };
	struct fake f = { .node = { 4, 0 }, .ctr = { 4, 0x128 } };
	struct mt_node_tlsconf c;

	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c), 0);
	assert_int_equal(c.modid, 4);
	assert_int_equal(c.node_off, 0x2408);
	assert_int_equal(c.ctr_off, 0x128);
	assert_int_equal(c.seq_nr_off, 0x18);
	/* one pair relocated, not the other: two modules, no answer */
	f.node[0] = 0;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	/* not relocated yet: asked again later */
	f.ctr[0] = 0;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-EAGAIN);
	f.ctr[0] = 4;
	/* a number one read of a Node's first 32 bytes would miss */
	f.node[0] = 4;
	t.seq_nr_off = 0x20;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	t.seq_nr_off = 0x18;
	f.node[0] = 5;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	/* an unreadable target: its error */
	assert_int_equal(mt_node_tls_place(&t, 0, fake_read, &f, &c), -EFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_libraries),
		cmocka_unit_test(test_not_torch),
		cmocka_unit_test(test_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
