// SPDX-License-Identifier: GPL-2.0
/*
 * --export speedscope: speedscope's file format, "sampled" profiles
 * weighted by bytes, one per memory account (process, device, layer: the
 * layers of one device are the same memory seen at different heights, so
 * they are never added up). A sample is a call site, its stack outermost
 * first: with --folded-prefix the phase and module, then the Python
 * frames, the autograd node, and the allocating call (its library as the
 * file). The weight is what the site allocated, or with --at peak what it
 * had alive when its account peaked.
 *
 * A sampled trace (--sample-bytes) weighs every allocation by its exact
 * size, so that each profile's total is the full trace's: one whose
 * stack was not walked is a sample of its own under its site, the frame
 * "stack not sampled" above its call; the file's name says how the trace
 * was sampled.
 *
 * Memory is bounded by the sites, not the events: weights add up per
 * (account, site, walked or not). --at peak takes, at the end, what the
 * session's peak view (peak.c) found alive at each account's peak, by
 * exact bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "event/format.h"
#include "export/frames.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "export/jsonw.h"
#include "export/export.h"
#include "lib/version.h"
#include "analysis/peak.h"
#include "analysis/sample.h"
#include "analysis/session.h"

#define MAX_ACCOUNTS 256
#define MAX_GROUP_SLOTS (1 << 21) /* (account, site) weights: 48 MiB */
#define MAX_FRAME_SLOTS (1 << 21) /* distinct frames */

/* one memory account, as peak.c keeps them */
struct account {
	__u32 pid;
	__u16 space;
	__u8 dev_type;
	__s8 dev;
	__u64 peak, peak_ts; /* --at peak */
	__u64 unfit; /* bytes no table had room for */
};

/* the weight of a site in an account; acct is index + 1, 0: empty */
struct group {
	const struct mt_site *site;
	__u64 weight;
	__u32 acct;
	bool bare; /* of its allocations whose stack was not walked */
};

enum frame_kind {
	FR_NONE, /* an empty slot */
	FR_PY, /* a "qualname (file:line)" stack line */
	FR_PHASE,
	FR_MODULE,
	FR_NODE,
	FR_CALL, /* the allocating call; b: its caller */
	FR_TRUNC, /* the outer frames cut at --max-depth */
	FR_UNFIT, /* bytes no table had room for */
	FR_BARE, /* MT_SAMPLE_NO_STACK */
};

struct frame {
	enum frame_kind kind;
	const char *a, *b; /* interned */
};

/* hash tables of open addressing, at half load at most */
struct table {
	void *v;
	size_t cap, n;
};

struct speedscope {
	struct mt_jw w;
	bool at_peak, at_time, prefix;
	double at; /* --at SECS */
	int err; /* -ENOMEM: a table could not be made */
	struct account acct[MAX_ACCOUNTS];
	size_t nacct;
	__u64 unfit_events; /* of accounts beyond MAX_ACCOUNTS */
	struct table groups; /* struct group */
	struct table frames; /* __u32 index + 1 into frame_v */
	struct frame *frame_v;
	size_t nframes;
};

static void *open_speedscope(FILE *f, const struct mt_export_conf *c, char *err,
			     size_t errlen)
{
	struct speedscope *x = calloc(1, sizeof(*x));

	if (!x) {
		snprintf(err, errlen, "export speedscope: out of memory");
		return NULL;
	}
	x->groups = (struct table){ .v = calloc(MT_HASH_MIN_CAP,
						sizeof(struct group)),
				    .cap = MT_HASH_MIN_CAP };
	if (!x->groups.v ||
	    mt_jw_open(&x->w, f, "export speedscope", err, errlen)) {
		if (!x->groups.v)
			snprintf(err, errlen,
				 "export speedscope: out of memory");
		free(x->groups.v);
		free(x);
		return NULL;
	}
	x->at_peak = c->at_peak;
	x->at_time = c->at_time;
	x->at = c->at;
	x->prefix = c->folded_prefix;
	return x;
}

static void free_speedscope(struct speedscope *x)
{
	mt_jw_free(&x->w);
	free(x->groups.v);
	free(x->frames.v);
	free(x->frame_v);
	free(x);
}

/* the account of an allocation; NULL beyond MAX_ACCOUNTS */
static struct account *account_get(struct speedscope *x, __u32 pid, __u16 space,
				   __u8 dev_type, __s8 dev)
{
	struct account *a;

	for (size_t i = 0; i < x->nacct; i++) {
		a = &x->acct[i];
		if (a->pid == pid && a->space == space &&
		    a->dev_type == dev_type && a->dev == dev)
			return a;
	}
	if (x->nacct == MAX_ACCOUNTS) {
		x->unfit_events++;
		return NULL;
	}
	a = &x->acct[x->nacct++];
	*a = (struct account){
		.pid = pid, .space = space, .dev_type = dev_type, .dev = dev
	};
	return a;
}

static size_t group_hash(__u32 acct, const struct mt_site *site, bool bare)
{
	return (size_t)mt_mix64((__u64)(uintptr_t)site ^ (__u64)acct << 48 ^
				(__u64)bare << 47);
}

/* the groups' accessors for lib/hashtab.h: tab is the slot array */
static bool group_used(const void *tab, size_t i)
{
	return ((const struct group *)tab)[i].acct;
}

/* key: a group with the acct and site looked for */
static bool group_match(const void *tab, size_t i, const void *key)
{
	const struct group *g = (const struct group *)tab + i, *k = key;

	return g->acct == k->acct && g->site == k->site && g->bare == k->bare;
}

static struct group *group_slot(struct group *v, size_t cap, __u32 acct,
				const struct mt_site *site, bool bare)
{
	struct group k = { .acct = acct, .site = site, .bare = bare };

	return &v[mt_probe(v, cap - 1, group_hash(acct, site, bare), group_used,
			   group_match, &k)];
}

static int groups_grow(struct table *t)
{
	struct group *old = t->v, *v;
	size_t cap = t->cap * 2;

	if (cap > MAX_GROUP_SLOTS)
		return -ENOSPC;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (old[i].acct)
			*group_slot(v, cap, old[i].acct, old[i].site,
				    old[i].bare) = old[i];
	free(old);
	t->v = v;
	t->cap = cap;
	return 0;
}

/* add bytes to (a, site, bare); to a's unfit bytes if full */
static void weigh(struct speedscope *x, struct account *a,
		  const struct mt_site *site, bool bare, __u64 bytes)
{
	__u32 ai = (__u32)(a - x->acct) + 1;
	struct group *g =
		group_slot(x->groups.v, x->groups.cap, ai, site, bare);

	if (!g->acct) {
		int ret = 0;

		if ((x->groups.n + 1) * 2 > x->groups.cap)
			ret = groups_grow(&x->groups);
		if (ret == -ENOMEM)
			x->err = ret;
		if (ret) {
			a->unfit += bytes;
			return;
		}
		g = group_slot(x->groups.v, x->groups.cap, ai, site, bare);
		*g = (struct group){ .acct = ai, .site = site, .bare = bare };
		x->groups.n++;
	}
	g->weight += bytes;
}

static void event_speedscope(void *p, const struct mt_session *s,
			     const struct mt_call *r,
			     const struct mt_site *site)
{
	struct speedscope *x = p;
	struct account *a;

	/* --at is weighed at close, from the peak view or the live table */
	if (x->at_peak || x->at_time || x->err)
		return;
	/* cuMemMap ranges map memory counted at cuMemCreate */
	if (r->ki->space == MT_SP_NONE || r->ki->space == MT_SP_VAMAP)
		return;
	if (r->role != MT_ROLE_ALLOC || r->failed ||
	    r->size_state != MT_SIZE_KNOWN || !r->size)
		return;
	a = account_get(x, r->ev->pid, (__u16)r->ki->space, (__u8)r->dev_type,
			(__s8)r->dev_index);
	if (a)
		weigh(x, a, site, mt_sample_unwalked(s->conf.sample_bytes, r),
		      r->size);
}

/* --at peak: one group alive at its account's peak */
static void weigh_peak(const struct mt_peak_group *g, void *ctx)
{
	struct speedscope *x = ctx;
	struct account *a;

	/* as above: cuMemMap ranges are counted at cuMemCreate */
	if (x->err || g->space == MT_SP_NONE || g->space == MT_SP_VAMAP)
		return;
	a = account_get(x, g->pid, (__u16)g->space, (__u8)g->dev_type,
			(__s8)g->dev);
	if (!a)
		return;
	a->peak = g->peak;
	a->peak_ts = g->peak_ts;
	if (g->unfit) {
		a->unfit += g->exact_bytes + g->bare_bytes;
		return;
	}
	if (g->exact_bytes)
		weigh(x, a, g->site, false, g->exact_bytes);
	if (g->bare_bytes)
		weigh(x, a, g->site, true, g->bare_bytes);
}

/* --at SECS: one allocation alive then (the reading stopped there) */
static void weigh_live(const struct mt_live *e, void *ctx)
{
	struct speedscope *x = ctx;
	struct account *a;

	if (x->err || e->space == MT_SP_NONE || e->space == MT_SP_VAMAP ||
	    !e->size)
		return;
	a = account_get(x, e->pid, e->space, e->dev_type, e->dev);
	if (a)
		weigh(x, a, e->site, mt_live_unsampled(e), e->size);
}

static size_t frame_hash(const struct frame *f)
{
	return (size_t)mt_mix64((__u64)(uintptr_t)f->a * 31 ^
				(__u64)(uintptr_t)f->b ^ (__u64)f->kind << 56);
}

/* tab: a struct mt_index into the frames; key: the frame looked for */
static bool frame_match(const void *tab, size_t i, const void *key)
{
	const struct mt_index *t = tab;
	const struct frame *o = (const struct frame *)t->ents + t->slots[i] - 1;
	const struct frame *f = key;

	return o->kind == f->kind && o->a == f->a && o->b == f->b;
}

static __u32 *frame_slot(__u32 *slots, size_t cap, const struct frame *fv,
			 const struct frame *f)
{
	struct mt_index t = { .slots = slots, .ents = fv };

	return &slots[mt_probe(&t, cap - 1, frame_hash(f), mt_index_used,
			       frame_match, f)];
}

static int frames_grow(struct speedscope *x)
{
	size_t cap = x->frames.cap ? x->frames.cap * 2 : MT_HASH_MIN_CAP;
	struct frame *fv;
	__u32 *slots;

	if (cap > MAX_FRAME_SLOTS)
		return -ENOSPC;
	slots = calloc(cap, sizeof(*slots));
	fv = realloc(x->frame_v, cap / 2 * sizeof(*fv));
	if (!slots || !fv) {
		free(slots);
		if (fv)
			x->frame_v = fv;
		return -ENOMEM;
	}
	x->frame_v = fv;
	for (size_t i = 0; i < x->nframes; i++)
		*frame_slot(slots, cap, fv, &fv[i]) = (__u32)i + 1;
	free(x->frames.v);
	x->frames.v = slots;
	x->frames.cap = cap;
	return 0;
}

/* the index of a frame in shared.frames, made if new; -errno */
static long frame_index(struct speedscope *x, enum frame_kind kind,
			const char *a, const char *b)
{
	const struct frame f = { .kind = kind, .a = a, .b = b };
	__u32 *slot;
	int ret;

	if ((x->nframes + 1) * 2 > x->frames.cap) {
		ret = frames_grow(x);
		if (ret)
			return ret;
	}
	slot = frame_slot(x->frames.v, x->frames.cap, x->frame_v, &f);
	if (!*slot) {
		x->frame_v[x->nframes] = f;
		*slot = (__u32)++x->nframes;
	}
	return (long)*slot - 1;
}

static void put_frame(struct speedscope *x, enum frame_kind kind, const char *a,
		      const char *b)
{
	long i = frame_index(x, kind, a, b);

	if (i < 0) {
		if (!x->err)
			x->err = (int)i;
		return;
	}
	mt_jw_u64(&x->w, (__u64)i);
}

/* one sample: the site's stack, outermost first; bare: none walked */
static void put_sample(struct speedscope *x, const struct mt_site *site,
		       bool bare)
{
	struct mt_jw *w = &x->w;

	mt_jw_open_close(w, '[');
	if (x->prefix && site->phase)
		put_frame(x, FR_PHASE, site->phase, NULL);
	if (x->prefix && site->module && strcmp(site->module, "-"))
		put_frame(x, FR_MODULE, site->module, NULL);
	/* where its Python frames would be */
	if (bare)
		put_frame(x, FR_BARE, NULL, NULL);
	if (site->truncated)
		put_frame(x, FR_TRUNC, NULL, NULL);
	for (int i = site->depth - 1; i >= 0; i--)
		put_frame(x, FR_PY, site->frames[i], NULL);
	if (site->node)
		put_frame(x, FR_NODE, site->node, NULL);
	put_frame(x, FR_CALL, site->event, site->caller);
	mt_jw_open_close(w, ']');
}

static int by_account_then_weight(const void *pa, const void *pb)
{
	const struct group *x = *(const struct group *const *)pa;
	const struct group *y = *(const struct group *const *)pb;
	__u32 ix = x->site ? x->site->id : 0, iy = y->site ? y->site->id : 0;

	if (x->acct != y->acct)
		return x->acct < y->acct ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (ix != iy)
		return ix < iy ? -1 : 1;
	return x->bare - y->bare;
}

static void profile_name(const struct speedscope *x, const struct account *a,
			 __u64 t0, char *buf, size_t len)
{
	char acct[64], b[32];

	mt_format_account(acct, sizeof(acct), (enum mt_dev_type)a->dev_type,
			  a->dev, (enum mt_space)a->space);
	if (x->at_peak)
		snprintf(buf, len, "pid %u %s: live at the peak, %s at %.3f s",
			 a->pid, acct, mt_format_bytes(b, sizeof(b), a->peak),
			 a->peak_ts > t0 ? (double)(a->peak_ts - t0) / 1e9 :
					   0.0);
	else if (x->at_time)
		snprintf(buf, len, "pid %u %s: live at %.3f s", a->pid, acct,
			 x->at);
	else
		snprintf(buf, len, "pid %u %s: bytes allocated", a->pid, acct);
}

/* one profile: v[0..n) are the weighed groups of account a */
static void put_profile(struct speedscope *x, const struct account *a,
			struct group *const *v, size_t n, __u64 t0)
{
	struct mt_jw *w = &x->w;
	__u64 total = a->unfit;
	char name[160];

	for (size_t i = 0; i < n; i++)
		total += v[i]->weight;
	profile_name(x, a, t0, name, sizeof(name));
	mt_jw_open_close(w, '{');
	mt_jw_key_str(w, "type", "sampled");
	mt_jw_key_str(w, "name", name);
	mt_jw_key_str(w, "unit", "bytes");
	mt_jw_key_u64(w, "startValue", 0);
	mt_jw_key_u64(w, "endValue", total);
	mt_jw_str(w, "samples");
	mt_jw_open_close(w, '[');
	for (size_t i = 0; i < n; i++) {
		put_sample(x, v[i]->site, v[i]->bare);
		mt_jw_flush(w);
	}
	if (a->unfit) {
		mt_jw_open_close(w, '[');
		put_frame(x, FR_UNFIT, NULL, NULL);
		mt_jw_open_close(w, ']');
	}
	mt_jw_open_close(w, ']');
	mt_jw_str(w, "weights");
	mt_jw_open_close(w, '[');
	for (size_t i = 0; i < n; i++)
		mt_jw_u64(w, v[i]->weight);
	if (a->unfit)
		mt_jw_u64(w, a->unfit);
	mt_jw_open_close(w, ']');
	mt_jw_open_close(w, '}');
	mt_jw_flush(w);
}

/* the groups that weigh, by account then weight; NULL: none or no memory */
static struct group **weighed(struct speedscope *x, size_t *n)
{
	struct group *g = x->groups.v, **v;

	*n = 0;
	v = malloc((x->groups.n ? x->groups.n : 1) * sizeof(*v));
	if (!v) {
		x->err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < x->groups.cap; i++)
		if (g[i].acct && g[i].weight)
			v[(*n)++] = &g[i];
	qsort(v, *n, sizeof(*v), by_account_then_weight);
	return v;
}

static void put_profiles(struct speedscope *x, __u64 t0)
{
	size_t n, i = 0;
	struct group **v = weighed(x, &n);

	if (!v)
		return;
	mt_jw_str(&x->w, "profiles");
	mt_jw_open_close(&x->w, '[');
	for (__u32 ai = 1; ai <= x->nacct; ai++) {
		size_t first = i;

		while (i < n && v[i]->acct == ai)
			i++;
		if (i > first || x->acct[ai - 1].unfit)
			put_profile(x, &x->acct[ai - 1], v + first, i - first,
				    t0);
	}
	mt_jw_open_close(&x->w, ']');
	free(v);
}

/* "qualname (file:line)" as speedscope's name, file and line */
static void put_py_frame(struct mt_jw *w, const char *s)
{
	struct mt_frame_parts fp;

	/* no line: the whole stack line is the name */
	if (mt_frame_parse(s, &fp) < 1) {
		mt_jw_key_str(w, "name", s);
		return;
	}
	mt_jw_str(w, "name");
	mt_jw_strn(w, fp.name, fp.name_len);
	mt_jw_str(w, "file");
	mt_jw_strn(w, fp.file, fp.file_len);
	mt_jw_key_u64(w, "line", fp.line);
}

static void put_frames(struct speedscope *x)
{
	struct mt_jw *w = &x->w;
	char name[256];

	mt_jw_str(w, "shared");
	mt_jw_open_close(w, '{');
	mt_jw_str(w, "frames");
	mt_jw_open_close(w, '[');
	for (size_t i = 0; i < x->nframes; i++) {
		const struct frame *f = &x->frame_v[i];

		mt_jw_open_close(w, '{');
		switch (f->kind) {
		case FR_PY:
			put_py_frame(w, f->a);
			break;
		case FR_PHASE:
		case FR_MODULE:
		case FR_NODE:
			snprintf(name, sizeof(name), "%s=%s",
				 f->kind == FR_PHASE  ? "phase" :
				 f->kind == FR_MODULE ? "module" :
							"node",
				 f->a);
			mt_jw_key_str(w, "name", name);
			break;
		case FR_CALL:
			mt_jw_key_str(w, "name", f->a ? f->a : "?");
			if (f->b)
				mt_jw_key_str(w, "file", f->b);
			break;
		case FR_TRUNC:
			mt_jw_key_str(w, "name", "[stack truncated]");
			break;
		case FR_BARE:
			mt_jw_key_str(w, "name", "[" MT_SAMPLE_NO_STACK "]");
			break;
		default:
			mt_jw_key_str(w, "name",
				      "[untracked: a table was full]");
			break;
		}
		mt_jw_open_close(w, '}');
		mt_jw_flush(w);
	}
	mt_jw_open_close(w, ']');
	mt_jw_open_close(w, '}');
}

/* the file's name, which speedscope shows: what it weighs, how sampled */
static void file_name(const struct speedscope *x, const struct mt_session *s,
		      char *buf, size_t len)
{
	char note[512];

	snprintf(buf, len, "memtrace-bpf: %s%s%s",
		 x->at_peak ? "bytes live at the peak" :
		 x->at_time ? "bytes live at --at" :
			      "bytes allocated",
		 s->conf.sample_bytes ? "; " : "",
		 mt_export_sample_note(s, note, sizeof(note)));
}

static int close_speedscope(void *p, const struct mt_session *s, char *err,
			    size_t errlen)
{
	struct speedscope *x = p;
	struct mt_jw *w = &x->w;
	char name[640];
	int ret;

	if (x->at_peak && !x->err) {
		ret = mt_peak_foreach(s->peak, s->live, weigh_peak, x);
		if (ret)
			x->err = ret;
	}
	if (x->at_time && !x->err)
		mt_live_foreach(s->live, weigh_live, x);
	mt_jw_open_close(w, '{');
	mt_jw_key_str(w, "$schema",
		      "https://www.speedscope.app/file-format-schema.json");
	file_name(x, s, name, sizeof(name));
	mt_jw_key_str(w, "name", name);
	mt_jw_key_str(w, "exporter", "memtrace-bpf " MT_VERSION);
	mt_jw_key_u64(w, "activeProfileIndex", 0);
	if (!x->err)
		put_profiles(x, s->t0);
	if (!x->err)
		put_frames(x);
	mt_jw_open_close(w, '}');
	mt_jw_flush(w);
	ret = mt_jw_error(w, err, errlen);
	if (!ret && x->err) {
		snprintf(err, errlen, "export speedscope: %s",
			 x->err == -ENOSPC ? "too many distinct frames" :
					     "out of memory");
		ret = x->err;
	}
	free_speedscope(x);
	return ret;
}

const struct mt_exporter mt_export_speedscope = {
	.name = "speedscope",
	.what = "speedscope profiles weighted by bytes, one per device and "
		"layer (--at: live then)",
	.at = MT_EXPORT_AT_TIME | MT_EXPORT_AT_PEAK,
	.open = open_speedscope,
	.event = event_speedscope,
	.close = close_speedscope,
};
