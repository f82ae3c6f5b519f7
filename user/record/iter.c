// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include "lib/err.h"
#include "lib/limits.h"
#include "record/iter.h"

int mt_rec_iter_open(struct mt_rec_iter *it, const char *path)
{
	*it = (struct mt_rec_iter){ .path = path };
	it->f = fopen(path, "re");
	if (!it->f) {
		int e = errno;

		mt_err("cannot read %s: %s", path, strerror(e));
		return -e;
	}
	it->pool = mt_strpool_new(MT_MAX_STRINGS);
	if (!it->pool) {
		mt_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

int mt_rec_iter_start(struct mt_rec_iter *it, struct mt_sites *sites)
{
	char err[512];

	it->rd = mt_reader_open(it->f, it->pool, sites, err, sizeof(err));
	if (!it->rd) {
		mt_err("%s: %s", it->path, err);
		return -1;
	}
	return 0;
}

int mt_rec_iter_run(struct mt_rec_iter *it, struct mt_sites *sites,
		    mt_rec_fn fn, void *ctx)
{
	struct mt_rec_item item;
	char err[512];
	struct mt_call r;
	int ret;

	if (!it->rd && mt_rec_iter_start(it, sites))
		return -1;
	while ((ret = mt_reader_next(it->rd, &item, err, sizeof(err))) == 1) {
		bool decoded =
			mt_decode(&item.ev, item.default_dev0 ? 0 : -1, &r);
		bool is_new;

		/*
		 * The format lets an event name no site (id 0); our writer
		 * never does, a crafted record may. Such an event counts
		 * on a site of its own: its process and call, nothing else.
		 */
		if (decoded && !item.site)
			item.site = mt_sites_get(
				sites,
				&(struct mt_site){ .pid = item.ev.pid,
						   .event = r.event },
				&is_new);

		ret = fn(ctx, &item, decoded ? &r : NULL);
		if (ret == MT_REC_STOP)
			return 0;
		if (ret < 0)
			return ret;
	}
	if (ret < 0) {
		mt_err("%s: %s", it->path, err);
		return -1;
	}
	if (mt_reader_truncated(it->rd))
		mt_err("%s: cut short (its recorder killed, or its disk "
		       "full): read up to its last whole block",
		       it->path);
	return 0;
}

void mt_rec_iter_close(struct mt_rec_iter *it)
{
	mt_reader_close(it->rd);
	mt_strpool_free(it->pool);
	if (it->f)
		fclose(it->f);
	*it = (struct mt_rec_iter){ 0 };
}
