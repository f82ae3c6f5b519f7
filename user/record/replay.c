// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/record.h"
#include "record/replay.h"
#include "lib/err.h"

#define MAX_STRINGS (1 << 20)

struct replay {
	const struct mt_replay_conf *c;
	FILE *in, *out;
	struct mt_strpool *pool;
	struct mt_session *ses;
	struct mt_reader *rd;
};

static void print_meta(const struct replay *rp)
{
	const char *key, *value;

	for (size_t i = 0; mt_reader_meta(rp->rd, i, &key, &value); i++)
		fprintf(rp->out, "# record %s: %s\n", key, value);
}

/* header lines read since the last look: the ranks for rank= */
static void apply_meta(struct replay *rp, size_t *next)
{
	const char *key, *value;

	for (; mt_reader_meta(rp->rd, *next, &key, &value); (*next)++) {
		struct mt_rank r;
		int pid;

		if (strcmp(key, "rank") ||
		    sscanf(value, MT_RANK_META, &pid, &r.rank, &r.local_rank,
			   &r.world_size) != 4)
			continue;
		r.known = true;
		mt_session_set_rank(rp->ses, (__u32)pid, &r);
	}
}

/* every event up to the end, or up to --at; 0 or 2 */
static int read_events(struct replay *rp, __u64 *first, __u64 *last)
{
	__u64 at = rp->c->at >= 0 ? (__u64)(rp->c->at * 1e9) : 0;
	struct mt_rec_item it;
	char err[512];
	struct mt_call r;
	size_t meta = 0;
	int ret;

	while ((ret = mt_reader_next(rp->rd, &it, err, sizeof(err))) == 1) {
		apply_meta(rp, &meta);
		if (!*first)
			*first = it.ev.ts;
		if (rp->c->at >= 0 && it.ev.ts - *first > at)
			return 0;
		*last = it.ev.ts;
		if (mt_decode(&it.ev, it.default_dev0 ? 0 : -1, &r))
			mt_session_event(rp->ses, &r, it.site);
	}
	if (ret < 0) {
		mt_err("%s: %s", rp->c->input, err);
		return 2;
	}
	if (mt_reader_truncated(rp->rd))
		mt_err("%s: cut short (was the recorder "
		       "killed?): read up to its last whole block",
		       rp->c->input);
	return 0;
}

static int replay(struct replay *rp)
{
	const struct mt_replay_conf *c = rp->c;
	struct mt_summary_end end = { .top_live = c->out.ses.top_live };
	struct mt_rec_end re;
	__u64 first = 0, last = 0;
	char err[512];
	int ret;

	rp->pool = mt_strpool_new(MAX_STRINGS);
	if (!rp->pool) {
		mt_err("out of memory");
		return 2;
	}
	rp->ses = mt_output_open(&c->out, rp->out, err, sizeof(err));
	if (!rp->ses) {
		mt_err("%s", err);
		return 2;
	}
	rp->rd = mt_reader_open(rp->in, rp->pool, rp->ses->sites, err,
				sizeof(err));
	if (!rp->rd) {
		mt_err("%s: %s", c->input, err);
		return 2;
	}
	ret = read_events(rp, &first, &last);
	if (ret)
		return ret;
	/* after the events: a process that came later has its lines mid-file */
	if (c->script)
		return 0;
	print_meta(rp);
	if (c->at >= 0) {
		fprintf(rp->out, "# at %.6f s into the record:\n",
			(double)(last - first) / 1e9);
		mt_session_view_now(rp->ses);
		return 0;
	}
	if (mt_reader_end(rp->rd, &re)) {
		end.seconds = re.seconds;
		end.lost = re.lost;
		end.stacks_lost = re.stacks_lost;
	} else {
		end.seconds = (double)(last - first) / 1e9;
	}
	mt_session_end(rp->ses, &end);
	return 0;
}

int mt_replay(const struct mt_replay_conf *c)
{
	struct replay rp = { .c = c, .out = stdout };
	char err[512];
	int ret;

	rp.in = fopen(c->input, "re");
	if (!rp.in) {
		mt_err("cannot read %s: %s", c->input, strerror(errno));
		return 2;
	}
	if (c->output) {
		rp.out = fopen(c->output, "we");
		if (!rp.out) {
			mt_err("cannot write %s: %s", c->output,
			       strerror(errno));
			fclose(rp.in);
			return 2;
		}
	}
	ret = replay(&rp);
	mt_reader_close(rp.rd);
	if (mt_output_close(rp.ses, err, sizeof(err))) {
		mt_err("export: %s", err);
		ret = 2;
	}
	mt_strpool_free(rp.pool);
	fclose(rp.in);
	if (rp.out != stdout && fclose(rp.out)) {
		mt_err("write %s: %s", c->output, strerror(errno));
		ret = 2;
	}
	return ret;
}
