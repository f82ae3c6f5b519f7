// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/err.h"
#include "proc/runas.h"
#include "proc/target.h"

/* a spawned command that could not run exits as the shell's would */
#define EXIT_CANNOT_RUN 127
/* how often the guard reads the hold counts */
#define GUARD_TICK_MS 100

static int pidfd_open_(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* "what: strerror(errno)" said; returns -errno */
static int sys_fail(const char *what)
{
	int e = errno;

	mt_err("%s: %s", what, strerror(e));
	return -e;
}

/*
 * The command is stopped (SIGSTOP, from BPF) at each library it loads until
 * its probes are attached, and we continue it then. Were we killed between
 * the two (the OOM killer, timeout -s KILL), nothing would continue it, and
 * a job would hang for good because of its debugging tool. So a small child
 * of ours, the guard, waits for its end of a pipe to close, which the kernel
 * does when we exit, however we exit, and then continues the command. It
 * ignores the signals a terminal sends a whole process group, so that it
 * outlives our own orderly end; it holds nothing else of ours.
 *
 * A tracer that is stopped (kill -STOP, a debugger) or hung does not exit,
 * and the command would wait for it as long. So the guard also reads the
 * hold counts that BPF and we keep (struct mt_hold, in the BPF object's
 * memory, which the fork shares), and continues a stop that we have not
 * continued within MT_HOLD_MAX_MS of its first sight. Until we catch up,
 * BPF stops the command no more, so one stall of ours costs the command
 * one wait, not one a library.
 */

/* by pidfd (dup'ed to 1): a pid reused since cannot be signalled by mistake */
static void guard_continue(void)
{
	syscall(SYS_pidfd_send_signal, 1, SIGCONT, NULL, 0);
}

static void guard(int wait_fd, int pid, struct mt_hold *hold)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct pollfd p = { .fd = 0, .events = POLLIN };
	int pidfd = pidfd_open_(pid), timeout = GUARD_TICK_MS, n;
	__u64 done = 0, seen = 0, since = 0, stops, now;

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	prctl(PR_SET_NAME, "memtrace-guard");
	/* the command's gate above all: it must see our exit too */
	if (dup2(wait_fd, 0) < 0 || (pidfd >= 0 && dup2(pidfd, 1) < 0))
		_exit(1);
	close_range(2, ~0U, 0);
	for (;;) {
		/* the pipe is never written: readable means we are gone */
		n = poll(&p, 1, timeout);
		if (n > 0 || (n < 0 && errno != EINTR))
			break;
		timeout = GUARD_TICK_MS;
		stops = __atomic_load_n(&hold->stops, __ATOMIC_ACQUIRE);
		if (pidfd < 0 || stops == done ||
		    stops == __atomic_load_n(&hold->resumed, __ATOMIC_ACQUIRE))
			continue;
		now = mt_now_ns() / 1000000;
		if (stops != seen) {
			seen = stops;
			since = now;
		}
		if (now - since < MT_HOLD_MAX_MS) {
			timeout = (int)(since + MT_HOLD_MAX_MS - now);
			continue;
		}
		guard_continue();
		done = stops;
		__atomic_fetch_add(&hold->released, 1, __ATOMIC_RELEASE);
	}
	if (pidfd >= 0)
		guard_continue();
	_exit(0);
}

static int spawn_guard(struct mt_target *t)
{
	int p[2], pid, ret;

	if (pipe2(p, O_CLOEXEC))
		return sys_fail("pipe");
	pid = fork();
	if (pid < 0) {
		ret = sys_fail("fork");
		close(p[0]);
		close(p[1]);
		return ret;
	}
	if (pid == 0)
		guard(p[0], t->pid, t->hold);
	close(p[0]);
	t->guard_fd = p[1];
	t->guard_pid = pid;
	return 0;
}

static void read_comm(struct mt_target *t)
{
	char path[64], comm[sizeof(t->comm)];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", t->pid);
	strcpy(t->comm, "?");
	f = fopen(path, "re");
	if (!f)
		return;
	/* the name, then a newline: a name may hold one of its own */
	n = fread(comm, 1, sizeof(comm), f);
	if (n && comm[n - 1] == '\n')
		n--;
	if (n == sizeof(t->comm))
		n--;
	if (n) {
		memcpy(t->comm, comm, n);
		t->comm[n] = '\0';
	}
	fclose(f);
}

/*
 * What pid is, from /proc/PID/status: its process (Tgid) and whether it is
 * a kernel thread (no VmSize line: it has no user memory). Returns false if
 * the file cannot be read (no such pid).
 */
static bool read_status(int pid, int *tgid, bool *kthread)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	*tgid = pid;
	*kthread = true;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Tgid:", 5))
			*tgid = atoi(line + 5);
		else if (!strncmp(line, "VmSize:", 7))
			*kthread = false;
	}
	fclose(f);
	return true;
}

int mt_target_open(struct mt_target *t, int pid, char *err, size_t errlen)
{
	int ret, tgid;
	bool kthread;

	*t = (struct mt_target){ .pid = pid, .pidfd = -1, .guard_fd = -1 };
	/* a thread id or a kernel thread: say what to trace instead */
	if (read_status(pid, &tgid, &kthread)) {
		if (tgid != pid) {
			snprintf(err, errlen,
				 "%d is a thread of process %d: trace -p %d",
				 pid, tgid, tgid);
			return -ESRCH;
		}
		if (kthread) {
			read_comm(t);
			snprintf(err, errlen,
				 "pid %d (%s) is a kernel thread: it has no "
				 "libraries to trace",
				 pid, t->comm);
			return -EINVAL;
		}
	}
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0) {
		ret = -errno;
		if (errno == ESRCH)
			snprintf(err, errlen,
				 "no such process: %d (check the pid with ps)",
				 pid);
		else
			snprintf(err, errlen, "pid %d: pidfd_open: %s", pid,
				 strerror(errno));
		return ret;
	}
	read_comm(t);
	ret = mt_maps_read(pid, &t->maps);
	if (ret) {
		snprintf(err, errlen, "pid %d: cannot read /proc/%d/maps: %s",
			 pid, pid, strerror(-ret));
		return ret;
	}
	return 0;
}

int mt_target_spawn(struct mt_target *t, char **argv,
		    const struct mt_run_as *as, struct mt_hold *hold,
		    int gate[2])
{
	int go[2], fail[2], pid;
	char c;

	*t = (struct mt_target){
		.pidfd = -1, .spawned = true, .guard_fd = -1, .hold = hold
	};
	if (pipe2(go, O_CLOEXEC) || pipe2(fail, O_CLOEXEC))
		return sys_fail("pipe");
	pid = fork();
	if (pid < 0)
		return sys_fail("fork");
	if (pid == 0) {
		/* wait until the probes are on, then become the command */
		close(go[1]);
		close(fail[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(EXIT_CANNOT_RUN);
		errno = -mt_run_as_become(as);
		if (!errno)
			execvp(argv[0], argv);
		/* fail[1] closes on a successful exec: a byte means failure */
		c = (char)errno;
		if (write(fail[1], &c, 1) != 1)
			_exit(EXIT_CANNOT_RUN);
		_exit(EXIT_CANNOT_RUN);
	}
	close(go[0]);
	close(fail[1]);
	t->pid = pid;
	gate[0] = go[1];
	gate[1] = fail[0];
	snprintf(t->comm, sizeof(t->comm), "%s", mt_basename(argv[0]));
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0)
		return sys_fail("pidfd_open");
	return spawn_guard(t);
}

int mt_target_start(struct mt_target *t, int gate[2], char **argv)
{
	ssize_t n;
	char c = 0;
	int e = 0;

	if (write(gate[0], &c, 1) != 1)
		e = errno;
	close(gate[0]);
	if (!e) {
		do {
			n = read(gate[1], &c, 1);
		} while (n < 0 && errno == EINTR);
		if (n == 1)
			e = c;
	}
	close(gate[1]);
	if (e) {
		mt_err("cannot run '%s': %s", argv[0], strerror(e));
		mt_target_poll_exit(t);
		return -e;
	}
	return 0;
}

int mt_target_resume(struct mt_target *t, bool *late)
{
	/*
	 * Stopped, the command cannot stop again before our SIGCONT, so this
	 * one continues every stop counted so far; said before it is sent,
	 * so that BPF holds the next load, however soon it comes.
	 */
	__atomic_store_n(&t->hold->resumed,
			 __atomic_load_n(&t->hold->stops, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	*late = __atomic_load_n(&t->hold->released, __ATOMIC_ACQUIRE) != 0;
	if (kill(t->pid, SIGCONT))
		return -errno;
	return 0;
}

bool mt_target_poll_exit(struct mt_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	if (t->exited)
		return true;
	if (t->pidfd >= 0 && poll(&p, 1, 0) == 1) {
		t->exited = true;
		if (t->spawned && waitpid(t->pid, &t->status, 0) == t->pid)
			t->has_status = true;
	}
	return t->exited;
}

void mt_target_close(struct mt_target *t)
{
	int status;

	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	/* the guard continues the command (again: harmless) and exits */
	if (t->guard_fd >= 0) {
		close(t->guard_fd);
		waitpid(t->guard_pid, &status, 0);
	}
	t->guard_fd = -1;
	mt_maps_free(&t->maps);
}

bool mt_target_has_file(const struct mt_target *t, __u64 dev, __u64 inode)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i].dev == dev && t->files[i].inode == inode)
			return true;
	return false;
}
