/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The binary record of `memtrace-bpf record` (docs/FORMAT.md): a file
 * header, then checksummed blocks of metadata, strings, call sites and
 * events, each readable on its own once the ones before it are read. A
 * record cut short (the writer killed) reads up to its last whole block.
 */
#ifndef __RECORD_H
#define __RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "memtrace.h"
#include "event/unseen.h"
#include "analysis/sites.h"
#include "lib/strpool.h"

/* 2: the META key sample_bytes (--sample-bytes); 1 is read as unsampled */
#define MT_REC_VERSION 2

/* the META key of a sampled record's R, before its first event */
#define MT_REC_SAMPLE_KEY "sample_bytes"
/* the META key of a process that ran before it was traced: pid=<pid> */
#define MT_REC_ATTACH_KEY "attach"

/* what the end block holds: the run's own figures */
struct mt_rec_end {
	double seconds;
	__u64 lost; /* events the kernel side could not record */
	struct mt_unseen unseen;
};

struct mt_recorder;

/*
 * Create path (truncating it). NULL and err filled on failure. The record
 * writer's and reader's errors are buffers: the flight recorder words a
 * failed dump its own way, and the unit and fuzz tests read the text.
 */
struct mt_recorder *mt_recorder_open(const char *path, char *err,
				     size_t errlen);
/*
 * The same into fd, a new file opened for writing, which it owns from
 * now on (closed on failure too); path names it in err
 */
struct mt_recorder *mt_recorder_open_fd(int fd, const char *path, char *err,
					size_t errlen);

/*
 * A key=value of the header (tool version, target pid/comm/cmdline,
 * Python and PyTorch versions, a library attached and its probes); may
 * come at any time, kept in order. Returns 0 or -errno.
 */
int mt_recorder_meta(struct mt_recorder *w, const char *key, const char *value);

/*
 * One event and the site that made it (sites are defined the first time
 * they are used; their strings too). default_dev0: the target was traced
 * from its start (mt_decode's default_dev 0 rather than -1).
 */
int mt_recorder_event(struct mt_recorder *w, const struct mt_event *ev,
		      bool default_dev0, const struct mt_site *site);

/* write what is pending as whole blocks (call it often: at each poll) */
int mt_recorder_flush(struct mt_recorder *w);

/* bytes written so far and events recorded */
__u64 mt_recorder_bytes(const struct mt_recorder *w);
__u64 mt_recorder_events(const struct mt_recorder *w);

/* flush, write the end block and close; 0 or -errno (w freed anyway) */
int mt_recorder_close(struct mt_recorder *w, const struct mt_rec_end *end);

/* an event read back */
struct mt_rec_item {
	struct mt_event ev; /* the fields the record keeps; others zero */
	bool default_dev0;
	struct mt_site *site; /* in the reader's sites table */
};

struct mt_reader;

/*
 * Read a record from f (not closed by the reader). Strings go into pool,
 * sites into sites (both the caller's, outliving the reader). NULL and
 * err filled ("not a memtrace-bpf record", "version 7 is newer than
 * this memtrace-bpf reads", ...).
 */
struct mt_reader *mt_reader_open(FILE *f, struct mt_strpool *pool,
				 struct mt_sites *sites, char *err,
				 size_t errlen);

/*
 * The next event: 1, and *it filled; 0 at the end of the record; -1 and
 * err filled ("block 12 at byte 40960: checksum mismatch") for a corrupt
 * one. A record cut short ends (0) at its last whole block, with
 * mt_reader_truncated() true.
 */
int mt_reader_next(struct mt_reader *r, struct mt_rec_item *it, char *err,
		   size_t errlen);

bool mt_reader_truncated(const struct mt_reader *r);

/*
 * The record's --sample-bytes R (analysis/sample.h), known from its open:
 * 0 for a full trace
 */
__u64 mt_reader_sample_bytes(const struct mt_reader *r);

/* the end block, once mt_reader_next returned 0; false if there was none */
bool mt_reader_end(const struct mt_reader *r, struct mt_rec_end *end);

/* header key=values in the order written; false past the last */
bool mt_reader_meta(const struct mt_reader *r, size_t i, const char **key,
		    const char **value);

void mt_reader_close(struct mt_reader *r);

#endif /* __RECORD_H */
