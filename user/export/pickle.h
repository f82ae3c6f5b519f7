/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A streaming writer of Python pickles, protocol 2, for the memory snapshot
 * PyTorch's memory_viz reads: dicts, lists, str, int, bool, None and memo
 * references, written to the FILE as they come, with no tree in memory.
 * Only opcodes memory_viz's own JS unpickler knows are used.
 */
#ifndef __PICKLE_H
#define __PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#define MT_PK_DEPTH 16 /* nesting of open dicts and lists */

struct mt_pickle {
	FILE *f;
	int depth;
	unsigned int n[MT_PK_DEPTH]; /* values since the container's MARK */
	bool dict[MT_PK_DEPTH];
	__u32 memo; /* the next memo index */
	bool bad; /* a write failed */
	bool misuse; /* nesting too deep, end without open, key alone */
};

/* the header (PROTO 2) */
void mt_pk_start(struct mt_pickle *p, FILE *f);

/* open a dict (then key, value, key, value...) or a list; mt_pk_end */
void mt_pk_dict(struct mt_pickle *p);
void mt_pk_list(struct mt_pickle *p);
void mt_pk_end(struct mt_pickle *p);

void mt_pk_str(struct mt_pickle *p, const char *s);
void mt_pk_strn(struct mt_pickle *p, const char *s, size_t n);
void mt_pk_int(struct mt_pickle *p, __s64 v);
void mt_pk_uint(struct mt_pickle *p, __u64 v);
void mt_pk_bool(struct mt_pickle *p, bool v);
void mt_pk_none(struct mt_pickle *p);

/* remember the value just written (after its mt_pk_end); its memo index */
__u32 mt_pk_put(struct mt_pickle *p);
/* the value remembered at index i, again (the same object when loaded) */
void mt_pk_get(struct mt_pickle *p, __u32 i);

/* STOP; 0, -EIO if a write failed, -EINVAL if the nesting was wrong */
int mt_pk_finish(struct mt_pickle *p);

#endif /* __PICKLE_H */
