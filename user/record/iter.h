/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One read loop over a record, shared by report, script and estimate: the
 * file opened, each event decoded and handed to a callback, and the
 * reader's errors and the note of a record cut short said here, once.
 */
#ifndef __ITER_H
#define __ITER_H

#include <stdio.h>
#include "event/kinds.h"
#include "record/record.h"

/* what a callback returns to stop the reading there, quietly */
#define MT_REC_STOP 1

struct mt_rec_iter {
	const char *path;
	FILE *f;
	struct mt_strpool *pool; /* the record's strings */
	struct mt_reader *rd; /* once run: the header lines and end block */
};

/*
 * Each event in the order recorded: it as read, r its decoded call (NULL
 * where mt_decode() makes none). Returns 0 to read on, MT_REC_STOP to
 * stop there, or a negative value after its own mt_err().
 */
typedef int (*mt_rec_fn)(void *ctx, const struct mt_rec_item *it,
			 struct mt_call *r);

/* open the record at path: 0, or negative after mt_err() */
int mt_rec_iter_open(struct mt_rec_iter *it, const char *path);

/*
 * Read the record's header and what comes before its first event (its
 * sites into sites, the caller's), so that it->rd tells how the events
 * are to be read (mt_reader_sample_bytes). 0, or negative after mt_err().
 * mt_rec_iter_run does it if it was not done.
 */
int mt_rec_iter_start(struct mt_rec_iter *it, struct mt_sites *sites);

/*
 * Read the record, its call sites into sites (the caller's), and hand
 * each event to fn. 0 at its end or where fn stopped; negative after
 * mt_err() (a corrupt record), or fn's negative value. A record cut short is read up to its
 * last whole block, with a note on stderr.
 */
int mt_rec_iter_run(struct mt_rec_iter *it, struct mt_sites *sites,
		    mt_rec_fn fn, void *ctx);

/*
 * Free what open and run made (after a failed open too), the strings of
 * the sites read among them: close after whatever still reads those.
 */
void mt_rec_iter_close(struct mt_rec_iter *it);

#endif /* __ITER_H */
