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
	__u64 node_got, node_imm, ctr_got, ctr_imm, tid_got, tid_imm;
	__u32 seq_nr_off, thread_id_off;
};

/* torch 1.13 on this host; 2.6 CPU and CUDA, and 2.14, in the roots */
static const struct want wants[] = {
	{ "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0", 0x7242ba8, 0x2408,
	  0x7242ac8, 0, 0x7242b38, 0, 0x18, 0x30 },
	{ "%s/trixie-*/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0",
	  0xfa992b0, 0x2510, 0xfa992b0, 0x130, 0xfa992b0, 0x2210, 0x18, 0x30 },
	{ "%s/cuda-ca091962cfd0/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0",
	  0xf24c8e8, 0x2510, 0xf24c8e8, 0x130, 0xf24c8e8, 0x2210, 0x18, 0x30 },
	{ "%s/sid-*/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.14.1",
	  0x11e83168, 0x25d0, 0x11e83168, 0x178, 0x11e83168, 0x2260, 0x10,
	  0x28 },
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
			print_message("%s: node %#llx+%#llx, counter "
				      "%#llx+%#llx, thread id %#llx+%#llx, "
				      "sequence_nr_ %#x, thread_id_ %#x\n",
				      g.gl_pathv[i],
				      (unsigned long long)t.node_got,
				      (unsigned long long)t.node_imm,
				      (unsigned long long)t.ctr_got,
				      (unsigned long long)t.ctr_imm,
				      (unsigned long long)t.tid_got,
				      (unsigned long long)t.tid_imm,
				      t.seq_nr_off, t.thread_id_off);
			assert_int_equal(t.node_got, wants[w].node_got);
			assert_int_equal(t.node_imm, wants[w].node_imm);
			assert_int_equal(t.ctr_got, wants[w].ctr_got);
			assert_int_equal(t.ctr_imm, wants[w].ctr_imm);
			assert_int_equal(t.tid_got, wants[w].tid_got);
			assert_int_equal(t.tid_imm, wants[w].tid_imm);
			assert_int_equal(t.seq_nr_off, wants[w].seq_nr_off);
			assert_int_equal(t.thread_id_off,
					 wants[w].thread_id_off);
			libs++;
		}
		globfree(&g);
	}
	roots_skip_if_none(libs);
}

/*
 * tests/fuzz/nodetls_seed.S, built by make: the same shapes in a small
 * library (1.13's Node layout, local-dynamic TLS throughout), decoded on
 * any machine
 */
static void test_seed(void **state)
{
	const char *path = ".output/nodetls_seed.so";
	struct mt_node_tls t = { 0 };
	char err[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(mt_node_tls_find_fd(fd, path, &t, err, sizeof(err)),
			 0);
	close(fd);
	/* one GOT pair for the module; the variables 8 bytes apart */
	assert_true(t.node_got != 0);
	assert_int_equal(t.ctr_got, t.node_got);
	assert_int_equal(t.tid_got, t.node_got);
	assert_int_equal(t.node_imm, 0);
	assert_int_equal(t.ctr_imm, 8);
	assert_int_equal(t.tid_imm, 16);
	assert_int_equal(t.seq_nr_off, 0x18);
	assert_int_equal(t.thread_id_off, 0x30);
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

/*
 * a target's memory: the GOT pairs at 0x1000 (Node), 0x2000 (counter) and
 * 0x3000 (thread id)
 */
struct fake {
	__u64 node[2], ctr[2], tid[2];
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
	else if (addr == 0x7f0000003000)
		memcpy(buf, f->tid, len);
	else
		return -EFAULT;
	return 0;
}

static void test_place(void **state)
{
	/* general-dynamic counter and id (1.13): their offsets in the pairs */
	struct mt_node_tls t = { .node_got = 0x1000,
				 .node_imm = 0x2408,
				 .ctr_got = 0x2000,
				 .ctr_imm = 0,
				 .tid_got = 0x3000,
				 .tid_imm = 0,
				 .seq_nr_off = 0x18,
				 .thread_id_off = 0x30 };
	struct fake f = { .node = { 4, 0 },
			  .ctr = { 4, 0x128 },
			  .tid = { 4, 0x2210 } };
	struct mt_node_tlsconf c;

	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c), 0);
	assert_int_equal(c.modid, 4);
	assert_int_equal(c.node_off, 0x2408);
	assert_int_equal(c.ctr_off, 0x128);
	assert_int_equal(c.tid_off, 0x2210);
	assert_int_equal(c.seq_nr_off, 0x18);
	assert_int_equal(c.thread_id_off, 0x30);
	/* one pair relocated, not the others: two modules, no answer */
	f.node[0] = 0;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	/* not relocated yet: asked again later */
	f.ctr[0] = 0;
	f.tid[0] = 0;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-EAGAIN);
	f.ctr[0] = 4;
	f.tid[0] = 4;
	/* fields one read of a Node's head would miss */
	f.node[0] = 4;
	t.seq_nr_off = MT_NODE_HEAD;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	t.seq_nr_off = 0x18;
	t.thread_id_off = 0x2c;
	assert_int_equal(
		mt_node_tls_place(&t, 0x7f0000000000, fake_read, &f, &c),
		-ENOEXEC);
	t.thread_id_off = 0x30;
	f.tid[0] = 5;
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
		cmocka_unit_test(test_seed),
		cmocka_unit_test(test_not_torch),
		cmocka_unit_test(test_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
