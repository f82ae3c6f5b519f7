// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "metrics.h"
#include "session.h"

struct mt_metrics {
	struct mt_metrics_conf conf;
};

struct mt_metrics *mt_metrics_open(const struct mt_metrics_conf *c, char *err,
				   size_t errlen)
{
	snprintf(err, errlen, "metrics: not built yet");
	return NULL;
}

void mt_metrics_poll(struct mt_metrics *m, __u64 now_ns,
		     struct mt_session *const *ses, size_t n, __u64 lost)
{
}

int mt_metrics_close(struct mt_metrics *m, struct mt_session *const *ses,
		     size_t n, __u64 lost, char *err, size_t errlen)
{
	free(m);
	return 0;
}

void mt_metrics_write(FILE *out, struct mt_session *const *ses, size_t n,
		      __u64 lost)
{
}
