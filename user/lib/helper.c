// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/helper.h"

#define REAP_STEP_NS 10000000ULL /* a child past its output's end: 10 ms */

/* the pipe, its read end not blocking the parent; 0 or -errno */
static int open_pipe(struct mt_helper *h, int fds[2], unsigned int timeout_ms)
{
	*h = (struct mt_helper){ .fd = -1, .timeout_ms = timeout_ms };
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK)) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	return 0;
}

/* after fork: the parent's side, or the failed fork undone */
static int forked(struct mt_helper *h, pid_t pid, int fds[2])
{
	int err = pid < 0 ? -errno : 0;

	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		h->done = true;
		return err;
	}
	h->pid = pid;
	h->fd = fds[0];
	h->deadline_ns = mt_now_ns() + h->timeout_ms * 1000000ULL;
	return 0;
}

/*
 * In the child: a crash ends it, as a crash of the library does where
 * nothing catches it (the tool's own handlers, or a test framework's,
 * would run in the child); nothing the parent blocked stays blocked
 */
static void default_signals(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		/* SIGKILL, SIGSTOP and the real-time ones glibc keeps fail */
		sigaction(sig, &dfl, NULL);
	if (!sigemptyset(&none))
		sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * The start both kinds of helper share: the pipe, the fork, and in the
 * child the default signals. Returns 0 in the child, 1 in the parent (h
 * set up), or -errno with h done.
 */
static int start(struct mt_helper *h, int fds[2], unsigned int timeout_ms)
{
	int ret = open_pipe(h, fds, timeout_ms);
	pid_t pid;

	if (ret) {
		h->done = true;
		return ret;
	}
	pid = fork();
	if (pid == 0) {
		default_signals();
		return 0;
	}
	ret = forked(h, pid, fds);
	return ret ? ret : 1;
}

int mt_helper_run(struct mt_helper *h, int (*fn)(int fd, void *arg), void *arg,
		  unsigned int timeout_ms)
{
	int fds[2], ret = start(h, fds, timeout_ms), null;

	if (ret)
		return ret < 0 ? ret : 0;
	close(fds[0]);
	/*
	 * What a library says on its own (NVML's warnings) must not land in
	 * the trace: fn answers through the pipe alone
	 */
	null = open("/dev/null", O_RDWR);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(null, 2) < 0 || dup2(fds[1], 3) < 0)
		_exit(127);
	/*
	 * The tool's other files stay out: a pipe the child held open would
	 * keep the process at its other end waiting for its end (a spawned
	 * command's guard waits for the tracer's), as long as fn hangs
	 */
	close_range(4, ~0U, 0);
	_exit(fn(3, arg) & 0xff);
}

int mt_helper_exec(struct mt_helper *h, const char *path, char *const argv[],
		   unsigned int timeout_ms)
{
	int fds[2], ret = start(h, fds, timeout_ms), null;

	if (ret)
		return ret < 0 ? ret : 0;
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 ||
	    dup2(fds[1], 2) < 0)
		_exit(127);
	/*
	 * The tool's own files (BPF objects, outputs) are no business of the
	 * program's; a kernel without close_range (before 5.9) lets them
	 * through to a program that ends at once
	 */
	close_range(3, ~0U, 0);
	execv(path, argv);
	_exit(127);
}

static void reap(struct mt_helper *h, int options)
{
	pid_t got;

	do
		got = waitpid(h->pid, &h->status, options);
	while (got < 0 && errno == EINTR);
	if (got == 0)
		return;
	/* an error (ECHILD: reaped by someone else) ends it too, unknown */
	if (got < 0)
		h->status = -1;
	h->pid = 0;
	h->done = true;
}

static void kill_child(struct mt_helper *h)
{
	/* an unreaped child of ours: only a bug makes this fail */
	if (kill(h->pid, SIGKILL)) {
		h->status = -1;
		h->pid = 0;
		h->done = true;
		return;
	}
	reap(h, 0);
}

static void close_out(struct mt_helper *h)
{
	close(h->fd);
	h->fd = -1;
}

/* what the pipe holds now; more than MT_HELPER_OUT sets overflow */
static void drain(struct mt_helper *h)
{
	char extra[64];
	ssize_t n;

	while (h->fd >= 0 && !h->overflow) {
		if (h->len < MT_HELPER_OUT)
			n = read(h->fd, h->out + h->len,
				 MT_HELPER_OUT - h->len);
		else
			n = read(h->fd, extra, sizeof(extra));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			close_out(h);
		else if (h->len == MT_HELPER_OUT)
			h->overflow = true;
		else
			h->len += (size_t)n;
	}
	h->out[h->len] = '\0';
}

/* the output, to its end, its overflow or the deadline */
static void wait_output(struct mt_helper *h)
{
	while (h->fd >= 0 && !h->overflow) {
		unsigned long long now = mt_now_ns();
		struct pollfd p = { .fd = h->fd, .events = POLLIN };

		if (now >= h->deadline_ns)
			return;
		int ms = (int)((h->deadline_ns - now + 999999) / 1000000);

		if (poll(&p, 1, ms) < 0 && errno != EINTR) {
			close_out(h);
			return;
		}
		drain(h);
	}
}

bool mt_helper_poll(struct mt_helper *h, bool wait)
{
	const struct timespec step = { .tv_nsec = REAP_STEP_NS };

	if (h->done)
		return true;
	if (wait)
		wait_output(h);
	else
		drain(h);
	if (h->overflow)
		kill_child(h);
	/* its output ended: it exits, or runs on to its deadline */
	while (!h->done) {
		if (h->fd < 0) {
			reap(h, WNOHANG);
			if (h->done)
				break;
		}
		if (mt_now_ns() >= h->deadline_ns) {
			h->timed_out = true;
			kill_child(h);
			break;
		}
		if (!wait)
			return false;
		nanosleep(&step, NULL);
	}
	if (h->fd >= 0)
		close_out(h);
	return true;
}

void mt_helper_stop(struct mt_helper *h)
{
	if (h->pid > 0)
		kill_child(h);
	if (h->fd >= 0)
		close_out(h);
	h->done = true;
}

bool mt_helper_ok(const struct mt_helper *h)
{
	return h->done && !h->timed_out && !h->overflow && h->status >= 0 &&
	       WIFEXITED(h->status) && !WEXITSTATUS(h->status);
}

bool mt_helper_signaled(const struct mt_helper *h)
{
	return h->done && !h->timed_out && !h->overflow && h->status >= 0 &&
	       WIFSIGNALED(h->status);
}

const char *mt_helper_end(const struct mt_helper *h, char *buf, size_t len)
{
	const char *sig;

	if (h->timed_out)
		snprintf(buf, len, "timed out after %u s",
			 (h->timeout_ms + 999) / 1000);
	else if (h->overflow)
		snprintf(buf, len, "wrote more than %d bytes", MT_HELPER_OUT);
	else if (!h->done)
		snprintf(buf, len, "still running");
	else if (h->status < 0)
		snprintf(buf, len, "could not be waited for");
	else if (WIFSIGNALED(h->status)) {
		sig = sigabbrev_np(WTERMSIG(h->status));
		if (sig)
			snprintf(buf, len, "killed by SIG%s", sig);
		else
			snprintf(buf, len, "killed by signal %d",
				 WTERMSIG(h->status));
	} else
		snprintf(buf, len, "exited with %d", WEXITSTATUS(h->status));
	return buf;
}

bool mt_helper_which(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;
	int n;

	if (!path || !*path)
		return false;
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		/* an empty entry is the current directory: not for root */
		if (end == p || *p != '/')
			continue;
		n = snprintf(buf, len, "%.*s/%s", (int)(end - p), p, name);
		if (n > 0 && (size_t)n < len && !access(buf, X_OK))
			return true;
	}
	return false;
}

bool mt_static_binary(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM);

	/* no program headers to look at: taken for the usual, dynamic */
	if (!ph)
		return false;
	for (unsigned long i = 0; i < n; i++)
		if (ph[i].p_type == PT_INTERP)
			return false;
	return true;
}
