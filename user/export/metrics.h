/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fleet metrics in the Prometheus text format: served on --metrics-addr
 * (libmicrohttpd, run from the trace loop, so a scrape reads the figures
 * between two events) and written to --metrics-file for node_exporter's
 * textfile collector (a temporary file renamed over it).
 */
#ifndef __METRICS_H
#define __METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct mt_session;

struct mt_metrics_conf {
	const char *addr; /* HOST:PORT, or NULL */
	const char *file; /* textfile path, or NULL */
	double file_interval; /* seconds between rewrites of the file */
};

struct mt_metrics;

/*
 * NULL and err filled when the address or file cannot be used (a buffer:
 * the unit test reads the message)
 */
struct mt_metrics *mt_metrics_open(const struct mt_metrics_conf *c, char *err,
				   size_t errlen);

/*
 * Answer waiting scrapes and rewrite the file when due; call it from the
 * trace loop, at least every 10 ms. lost: events the kernel side lost.
 */
void mt_metrics_poll(struct mt_metrics *m, __u64 now_ns,
		     struct mt_session *const *ses, size_t n, __u64 lost);

/* write the file a last time, stop serving, free: 0, or -errno after mt_err() */
int mt_metrics_close(struct mt_metrics *m, struct mt_session *const *ses,
		     size_t n, __u64 lost);

/* the metrics text of these sessions */
void mt_metrics_write(FILE *out, struct mt_session *const *ses, size_t n,
		      __u64 lost);

#endif /* __METRICS_H */
