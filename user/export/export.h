/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exports: the events written in the formats of the viewers people already
 * use (PyTorch's memory_viz, Perfetto, speedscope, flame graphs, JSON
 * lines, an SVG plot). An exporter sees every event after the session
 * counted it, live or from a record, and writes its file at the end.
 */
#ifndef __EXPORT_H
#define __EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "event/kinds.h"
#include "analysis/sites.h"

struct mt_session;

struct mt_export_conf {
	const char *kind; /* --export */
	const char *path; /* -o */
	bool at_peak; /* --at peak: what was alive at the peak */
	/*
	 * --at SECS: what was alive at seconds at, which is what is alive
	 * when the close comes (report stops reading there)
	 */
	bool at_time;
	double at;
	bool folded_prefix; /* --folded-prefix: module, phase outermost */
};

/* the --at an exporter can honour (struct mt_exporter's at) */
#define MT_EXPORT_AT_TIME 1u /* --at SECS */
#define MT_EXPORT_AT_PEAK 2u /* --at peak */

struct mt_exporter {
	const char *name;
	const char *what; /* a few words for --help */
	unsigned int at; /* MT_EXPORT_AT_*: the others are refused */
	/* state for one export into f (opened "w"); NULL and err on failure */
	void *(*open)(FILE *f, const struct mt_export_conf *c, char *err,
		      size_t errlen);
	/* each event, after the session counted it (r->size is complete) */
	void (*event)(void *x, const struct mt_session *s,
		      const struct mt_call *r, const struct mt_site *site);
	/* the end: write what remains, free x; 0, or -errno and err filled */
	int (*close)(void *x, const struct mt_session *s, char *err,
		     size_t errlen);
};

extern const struct mt_exporter mt_export_memviz, mt_export_perfetto,
	mt_export_speedscope, mt_export_folded, mt_export_json, mt_export_svg;

/* by name; NULL if there is none */
const struct mt_exporter *mt_exporter_find(const char *name);

/*
 * What an export of a sampled trace says of it in its own metadata: that
 * stacks were sampled, how many and at what rate, what stays exact; buf,
 * "" in a full trace
 */
const char *mt_export_sample_note(const struct mt_session *s, char *buf,
				  size_t len);

/* "memviz, perfetto, ...": for messages */
const char *mt_export_names(void);

/*
 * Open c->path and start exporting s's events into it, as s's observer
 * (s has none yet): 0, or -errno after mt_err()
 */
int mt_export_start(struct mt_session *s, const struct mt_export_conf *c);

/*
 * finish the export s has (none: 0): 0, or -errno after mt_err()
 * ("export: " and why; a partial file removed)
 */
int mt_export_finish(struct mt_session *s);

#endif /* __EXPORT_H */
