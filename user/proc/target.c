// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proc/target.h"

/* a spawned command that could not run exits as the shell's would */
#define EXIT_CANNOT_RUN 127

static int pidfd_open_(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void read_comm(struct mt_target *t)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", t->pid);
	strcpy(t->comm, "?");
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(t->comm, sizeof(t->comm), f))
		t->comm[strcspn(t->comm, "\n")] = '\0';
	fclose(f);
}

int mt_target_open(struct mt_target *t, int pid, char *err, size_t errlen)
{
	int ret;

	*t = (struct mt_target){ .pid = pid, .pidfd = -1 };
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

int mt_target_spawn(struct mt_target *t, char **argv, int gate[2], char *err,
		    size_t errlen)
{
	int go[2], fail[2], pid, e;
	char c;

	*t = (struct mt_target){ .pidfd = -1, .spawned = true };
	if (pipe2(go, O_CLOEXEC) || pipe2(fail, O_CLOEXEC)) {
		e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(e));
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		/* wait until the probes are on, then become the command */
		close(go[1]);
		close(fail[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(EXIT_CANNOT_RUN);
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
	if (t->pidfd < 0) {
		e = errno;
		snprintf(err, errlen, "pidfd_open: %s", strerror(e));
		return -e;
	}
	return 0;
}

int mt_target_start(struct mt_target *t, int gate[2], char **argv, char *err,
		    size_t errlen)
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
		snprintf(err, errlen, "cannot run '%s': %s", argv[0],
			 strerror(e));
		mt_target_poll_exit(t);
		return -e;
	}
	return 0;
}

bool mt_target_poll_exit(struct mt_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
	int status;

	if (t->exited)
		return true;
	if (t->pidfd >= 0 && poll(&p, 1, 0) == 1) {
		t->exited = true;
		if (t->spawned)
			waitpid(t->pid, &status, 0);
	}
	return t->exited;
}

void mt_target_close(struct mt_target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	mt_maps_free(&t->maps);
}

bool mt_target_has_file(const struct mt_target *t, __u64 dev, __u64 inode)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i].dev == dev && t->files[i].inode == inode)
			return true;
	return false;
}
