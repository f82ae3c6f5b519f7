/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python stacks recorded by the BPF frame walk, given names: each frame as
 * "qualname (file:line)", the nn.Module running and the training phase.
 */
#ifndef __PYSTACK_H
#define __PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "lib/strpool.h"

struct mt_py;

#define MT_MAX_USER_PHASES 8

struct mt_user_phase {
	const char *name; /* printed as phase=NAME */
	const char *qualname; /* a frame with this qualname selects it */
};

struct mt_phase_rules {
	const char *root_name; /* NULL: the root module's class name */
	struct mt_user_phase user[MT_MAX_USER_PHASES];
	int nuser;
};

/* a resolved stack; strings are interned and live as long as the pool */
struct mt_pyresolved {
	const char *phase;
	const char *module; /* "-" when no module runs */
	bool truncated;
	/*
	 * part of it could not be read from the process when it was named
	 * (the process had exited, or the code was freed): frames say
	 * [unknown], and its module and phase may be missing
	 */
	bool unread;
	int depth;
	__u64 frames_hash; /* mt_frames_hash() of frames */
	const char *frames[]; /* innermost first */
};

struct mt_pystacks;

/* told of each code object found to call an nn.Module, once per process */
typedef void (*mt_modcode_fn)(void *ctx, __u32 pid, __u64 code);

/*
 * stacks_fd is the BPF map of stacks by id; resolved stacks are cached,
 * at most max of them (the cache starts over when full).
 */
struct mt_pystacks *mt_pystacks_new(int stacks_fd, size_t max,
				    struct mt_strpool *pool,
				    const struct mt_phase_rules *rules,
				    mt_modcode_fn on_modcode, void *ctx);
void mt_pystacks_free(struct mt_pystacks *ps);

/*
 * The stack with this id of process pid, resolved with py's reader. NULL if
 * the BPF map no longer holds it (counted in *lost by the caller).
 */
const struct mt_pyresolved *mt_pystacks_get(struct mt_pystacks *ps,
					    struct mt_py *py, __u32 pid,
					    __u64 stack_id, bool truncated);

/*
 * Process pid ran execve: the stacks resolved for it, the code objects
 * found to call modules and its root module belonged to its old image.
 */
void mt_pystacks_forget(struct mt_pystacks *ps, __u32 pid);

/* the name given to process pid's root module (NULL: none seen yet) */
const char *mt_pystacks_root(struct mt_pystacks *ps, __u32 pid);

/* phase of a thread that runs no Python, from its name */
const char *mt_phase_of_thread(const char *comm);

/* co_filename shortened for reading: the part after site/dist-packages */
const char *mt_short_file(const char *file);

#endif /* __PYSTACK_H */
