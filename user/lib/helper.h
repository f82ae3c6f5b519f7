/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A short-lived helper process, for what could take the tool down if it
 * ran inside it: a library of the system loaded with dlopen (a static
 * binary's own C library cannot load the system's: it dies of SIGFPE),
 * a vendor call that may hang, a program of the system. The child writes
 * its answer to a pipe; the parent reads it without blocking, bounded, and
 * kills the child at a deadline. How it ended is one phrase for a reason.
 */
#ifndef __HELPER_H
#define __HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MT_HELPER_OUT 4096 /* bytes of output kept; more ends the child */

struct mt_helper {
	pid_t pid; /* 0: none running */
	int fd; /* the pipe's read end; -1 once at its end */
	unsigned long long deadline_ns; /* CLOCK_MONOTONIC */
	unsigned int timeout_ms;
	char out[MT_HELPER_OUT + 1]; /* what it wrote, NUL-terminated */
	size_t len;
	/* set once it ended */
	bool done, timed_out, overflow;
	int status; /* waitpid's */
};

/*
 * A child that runs fn(fd, arg) and exits with its return value; fn
 * writes its answer to fd (stdin, stdout and stderr are /dev/null; 127:
 * they could not be). The child must not return into the tool: it
 * ends with _exit and flushes nothing of the parent's stdio. 0, or a
 * negative errno (no child: *h is then done, with nothing written).
 */
int mt_helper_run(struct mt_helper *h, int (*fn)(int fd, void *arg), void *arg,
		  unsigned int timeout_ms);

/*
 * A child that execs path with argv (no shell), its stdout and stderr
 * the pipe, stdin /dev/null. Exit status 127: it could not exec.
 */
int mt_helper_exec(struct mt_helper *h, const char *path, char *const argv[],
		   unsigned int timeout_ms);

/*
 * Read what the child wrote, without waiting when wait is false; true
 * once it ended (exited, killed by a signal, or killed here at its
 * deadline or for writing too much), and was reaped.
 */
bool mt_helper_poll(struct mt_helper *h, bool wait);

/* Kill and reap a child still running; its output is left as it is. */
void mt_helper_stop(struct mt_helper *h);

/* true when it ended with exit status 0 */
bool mt_helper_ok(const struct mt_helper *h);

/* true when a signal ended it, not a kill of ours */
bool mt_helper_signaled(const struct mt_helper *h);

/*
 * How it ended, for a reason: "exited with 3", "killed by SIGFPE",
 * "timed out after 10 s", "wrote more than 4096 bytes"
 */
const char *mt_helper_end(const struct mt_helper *h, char *buf, size_t len);

/*
 * true in a statically linked binary (its program has no interpreter):
 * its own C library is then in the process, and a library of the system
 * loaded with dlopen brings the system's too, which crashes where the two
 * differ; a helper process is the safe place for such a load
 */
bool mt_static_binary(void);

/* the path of an executable name on $PATH, in buf; false if none */
bool mt_helper_which(const char *name, char *buf, size_t len);

#endif /* __HELPER_H */
