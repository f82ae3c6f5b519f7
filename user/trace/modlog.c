// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/modlog.h"
#include "proc/rank.h"
#include "lib/outfile.h"

#define MAX_RECORDS 8192
#define MAX_DEPTH 32
#define MIB (1024.0 * 1024.0)

enum stage {
	PRE_FORWARD,
	POST_FORWARD,
	PRE_BACKWARD,
	POST_BACKWARD,
	PRE_STEP,
	POST_STEP,
};

static const char *const stage_names[] = {
	"pre_forward",	 "post_forward", "pre_backward",
	"post_backward", "pre_step",	 "post_step",
};

struct record {
	char module[256];
	enum stage stage;
	__u64 ts, allocated, reserved, max_allocated, max_reserved;
};

struct mt_modlog {
	FILE *f;
	bool with_time;
	unsigned long step;
	bool backward_seen; /* since the last step: zero_grad is no step */
	const char *phase; /* of the last event */
	char module[512]; /* of the last event, from the root */
	const char *root; /* the root module's name */
	__u64 allocated, reserved, max_allocated, max_reserved;
	struct record *recs; /* this step's, in order */
	size_t nrecs;
	unsigned long dropped;
};

struct mt_modlog *mt_modlog_open(const char *pattern, int pid, bool with_time,
				 char *err, size_t errlen)
{
	struct mt_modlog *ml;
	struct mt_rank rank;
	char path[4096], why[512];

	mt_rank_read(pid, &rank); /* no environ to read: rank 0 */
	if (mt_path_expand(pattern, pid, &rank, path, sizeof(path))) {
		snprintf(err, errlen, "--module-log %s: name too long",
			 pattern);
		return NULL;
	}
	ml = calloc(1, sizeof(*ml));
	if (ml)
		ml->recs = calloc(MAX_RECORDS, sizeof(*ml->recs));
	if (!ml || !ml->recs) {
		free(ml);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ml->f = mt_create_output_file(path, MT_OUT_PRIVATE, why, sizeof(why));
	if (!ml->f) {
		snprintf(err, errlen, "cannot write %s", why);
		free(ml->recs);
		free(ml);
		return NULL;
	}
	ml->with_time = with_time;
	return ml;
}

/*
 * Keep the first pre record and the last post record of each module and
 * stage within a step: a module run several times in a step gets one of
 * each, spanning all its runs.
 */
static void record(struct mt_modlog *ml, const char *module, enum stage st,
		   __u64 ts)
{
	bool post =
		st == POST_FORWARD || st == POST_BACKWARD || st == POST_STEP;
	struct record *r = NULL;

	for (size_t i = 0; i < ml->nrecs; i++) {
		if (ml->recs[i].stage == st &&
		    !strcmp(ml->recs[i].module, module)) {
			if (!post)
				return;
			r = &ml->recs[i];
			break;
		}
	}
	if (!r) {
		if (ml->nrecs == MAX_RECORDS) {
			ml->dropped++;
			return;
		}
		r = &ml->recs[ml->nrecs++];
		snprintf(r->module, sizeof(r->module), "%s", module);
		r->stage = st;
	}
	r->ts = ts;
	r->allocated = ml->allocated;
	r->reserved = ml->reserved;
	r->max_allocated = ml->max_allocated;
	r->max_reserved = ml->max_reserved;
}

static void flush_step(struct mt_modlog *ml)
{
	size_t rootlen = ml->root ? strlen(ml->root) : 0;

	for (size_t i = 0; i < ml->nrecs; i++) {
		const struct record *r = &ml->recs[i];
		const char *name = r->module;

		/* named as named_modules() does: from under the root */
		if (rootlen && !strncmp(name, ml->root, rootlen) &&
		    name[rootlen] == '.')
			name += rootlen + 1;
		fprintf(ml->f,
			"step=%lu module=%s stage=%s allocated=%.3f "
			"reserved=%.3f max_allocated=%.3f max_reserved=%.3f",
			ml->step, name, stage_names[r->stage],
			r->allocated / MIB, r->reserved / MIB,
			r->max_allocated / MIB, r->max_reserved / MIB);
		if (ml->with_time)
			fprintf(ml->f, " time=%llu.%06llu",
				(unsigned long long)(r->ts / 1000000000ULL),
				(unsigned long long)(r->ts % 1000000000ULL /
						     1000));
		fputc('\n', ml->f);
	}
	ml->nrecs = 0;
}

/* "a.b.c" -> its prefixes a, a.b, a.b.c; returns how many */
static int prefixes(const char *module, char out[][256], int max)
{
	int n = 0;

	if (!strcmp(module, "-"))
		return 0;
	for (const char *p = module; n < max; p++) {
		if (*p == '.' || !*p) {
			size_t l = (size_t)(p - module);

			if (l >= 256)
				break;
			memcpy(out[n], module, l);
			out[n++][l] = '\0';
		}
		if (!*p)
			break;
	}
	return n;
}

static bool has_prefix(char pre[][256], int n, const char *m)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(pre[i], m))
			return true;
	return false;
}

/* modules left and entered between two module paths of one stage pair */
static void transition(struct mt_modlog *ml, const char *from, const char *to,
		       enum stage pre, __u64 ts)
{
	char a[MAX_DEPTH][256], b[MAX_DEPTH][256];
	int na = from ? prefixes(from, a, MAX_DEPTH) : 0;
	int nb = to ? prefixes(to, b, MAX_DEPTH) : 0;

	for (int i = na - 1; i >= 0; i--)
		if (!has_prefix(b, nb, a[i]))
			record(ml, a[i], pre + 1, ts);
	for (int i = 0; i < nb; i++)
		if (!has_prefix(a, na, b[i]))
			record(ml, b[i], pre, ts);
}

static const char *in_phase(const char *phase, const char *module,
			    const char *want)
{
	return phase && !strcmp(phase, want) ? module : NULL;
}

void mt_modlog_event(struct mt_modlog *ml, __u64 ts, const char *phase,
		     const char *module, const char *root, __u64 allocated,
		     __u64 reserved)
{
	bool was_opt = ml->phase && !strcmp(ml->phase, "optimizer");
	bool is_opt = !strcmp(phase, "optimizer");
	char path[sizeof(ml->module)];

	if (root)
		ml->root = root;
	/* the root holds every module: its path heads all the others */
	if (root && strcmp(module, "-") && strcmp(module, root))
		snprintf(path, sizeof(path), "%s.%s", root, module);
	else
		snprintf(path, sizeof(path), "%s", module);
	if (ml->phase != phase || strcmp(ml->module, path)) {
		transition(ml, in_phase(ml->phase, ml->module, "forward"),
			   in_phase(phase, path, "forward"), PRE_FORWARD, ts);
		transition(ml, in_phase(ml->phase, ml->module, "backward"),
			   in_phase(phase, path, "backward"), PRE_BACKWARD, ts);
		/* an optimizer phase after a backward is the step */
		if (was_opt && !is_opt && ml->backward_seen) {
			record(ml, "optimizer", POST_STEP, ts);
			flush_step(ml);
			ml->step++;
			ml->backward_seen = false;
		}
		if (is_opt && !was_opt && ml->backward_seen)
			record(ml, "optimizer", PRE_STEP, ts);
		if (!strcmp(phase, "backward"))
			ml->backward_seen = true;
	}
	ml->phase = phase;
	snprintf(ml->module, sizeof(ml->module), "%s", path);
	ml->allocated = allocated;
	ml->reserved = reserved;
	if (allocated > ml->max_allocated)
		ml->max_allocated = allocated;
	if (reserved > ml->max_reserved)
		ml->max_reserved = reserved;
}

int mt_modlog_close(struct mt_modlog *ml)
{
	int ret = 0;

	if (!ml)
		return 0;
	flush_step(ml);
	if (ml->dropped)
		fprintf(ml->f, "# dropped=%lu records over %d in a step\n",
			ml->dropped, MAX_RECORDS);
	if (fclose(ml->f))
		ret = -errno;
	free(ml->recs);
	free(ml);
	return ret;
}
