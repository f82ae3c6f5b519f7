// SPDX-License-Identifier: GPL-2.0
/*
 * user/lib/helper.c: a helper process's answer, and each way it can end
 * (exit, a signal, its deadline, too much output) as a phrase.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/helper.h"

static int answer(int fd, void *arg)
{
	dprintf(fd, "dev 0 %s\n", (const char *)arg);
	return 3;
}

static int fpe(int fd, void *arg)
{
	(void)arg;
	dprintf(fd, "at nvmlInit_v2\n");
	raise(SIGFPE);
	return 0;
}

static int hang(int fd, void *arg)
{
	(void)fd, (void)arg;
	for (;;)
		pause();
	return 0;
}

static int flood(int fd, void *arg)
{
	char buf[1000];

	(void)arg;
	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < 100; i++)
		if (write(fd, buf, sizeof(buf)) < 0)
			return 1;
	return 0;
}

/* whether the fd *arg is open in the child */
static int fd_open(int fd, void *arg)
{
	dprintf(fd, "%s\n",
		fcntl(*(int *)arg, F_GETFD) < 0 ? "closed" : "open");
	return 0;
}

/*
 * The tool's files stay out of the child: a pipe it held would keep the
 * reader at the other end (a spawned command's guard) waiting
 */
static void test_files_closed(void **state)
{
	struct mt_helper h;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(mt_helper_run(&h, fd_open, &p[1], 5000), 0);
	assert_true(mt_helper_poll(&h, true));
	assert_true(mt_helper_ok(&h));
	assert_string_equal(h.out, "closed\n");
	assert_int_equal(close(p[0]), 0);
	assert_int_equal(close(p[1]), 0);
}

static void test_answer_and_exit(void **state)
{
	struct mt_helper h;
	char end[64];

	(void)state;
	assert_int_equal(mt_helper_run(&h, answer, "42", 5000), 0);
	assert_true(mt_helper_poll(&h, true));
	assert_string_equal(h.out, "dev 0 42\n");
	assert_false(mt_helper_ok(&h));
	assert_false(mt_helper_signaled(&h));
	assert_string_equal(mt_helper_end(&h, end, sizeof(end)),
			    "exited with 3");
	/* done: polling again changes nothing */
	assert_true(mt_helper_poll(&h, false));
	assert_int_equal(h.fd, -1);
}

static void test_signal(void **state)
{
	struct mt_helper h;
	char end[64];

	(void)state;
	assert_int_equal(mt_helper_run(&h, fpe, NULL, 5000), 0);
	assert_true(mt_helper_poll(&h, true));
	assert_true(mt_helper_signaled(&h));
	assert_string_equal(mt_helper_end(&h, end, sizeof(end)),
			    "killed by SIGFPE");
	/* what it said before it died stays */
	assert_string_equal(h.out, "at nvmlInit_v2\n");
}

static void test_deadline(void **state)
{
	struct mt_helper h;
	char end[64];

	(void)state;
	assert_int_equal(mt_helper_run(&h, hang, NULL, 300), 0);
	/* not waiting: still running */
	assert_false(mt_helper_poll(&h, false));
	assert_true(mt_helper_poll(&h, true));
	assert_true(h.timed_out);
	/* killed here: not a signal of its own */
	assert_false(mt_helper_signaled(&h));
	assert_string_equal(mt_helper_end(&h, end, sizeof(end)),
			    "timed out after 1 s");
}

static void test_overflow(void **state)
{
	struct mt_helper h;
	char end[64];

	(void)state;
	assert_int_equal(mt_helper_run(&h, flood, NULL, 5000), 0);
	assert_true(mt_helper_poll(&h, true));
	assert_false(mt_helper_ok(&h));
	assert_int_equal(h.len, MT_HELPER_OUT);
	assert_string_equal(mt_helper_end(&h, end, sizeof(end)),
			    "wrote more than 4096 bytes");
}

static void test_stop(void **state)
{
	struct mt_helper h;
	pid_t pid;

	(void)state;
	assert_int_equal(mt_helper_run(&h, hang, NULL, 60000), 0);
	pid = h.pid;
	mt_helper_stop(&h);
	assert_true(h.done);
	/* reaped: no such process any more */
	assert_int_equal(kill(pid, 0), -1);
}

static void test_exec(void **state)
{
	char *echo[] = { "echo", "0, 81559", NULL };
	char *none[] = { "none", NULL };
	struct mt_helper h;
	char path[256], end[64];

	(void)state;
	assert_true(mt_helper_which("echo", path, sizeof(path)));
	assert_int_equal(path[0], '/');
	assert_int_equal(mt_helper_exec(&h, path, echo, 5000), 0);
	assert_true(mt_helper_poll(&h, true));
	assert_true(mt_helper_ok(&h));
	assert_string_equal(h.out, "0, 81559\n");
	assert_false(mt_helper_which("memtrace-no-such-program", path,
				     sizeof(path)));
	assert_int_equal(mt_helper_exec(&h, "/nonexistent/none", none, 5000),
			 0);
	assert_true(mt_helper_poll(&h, true));
	assert_string_equal(mt_helper_end(&h, end, sizeof(end)),
			    "exited with 127");
}

static void test_static(void **state)
{
	(void)state;
	/* the unit tests are linked dynamically */
	assert_false(mt_static_binary());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_and_exit),
		cmocka_unit_test(test_files_closed),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_static),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
