// SPDX-License-Identifier: GPL-2.0
/*
 * NVML's used memory per process and device, against what the trace
 * holds there. NVML is asked in a helper process (analysis/gpumem.h), one
 * at a time, every --watch interval; the trace's parts are read as it is
 * asked and as it answers: where both agree, nothing the trace saw moved
 * while NVML read, and the parts are those of NVML's moment. The sample
 * kept is the one where NVML's figure was highest, as nvidia-smi's peak
 * is what a reader compares.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/frag.h"
#include "analysis/gpumem.h"
#include "analysis/nvsmi.h"
#include "event/format.h"
#include "lib/escape.h"

#define NVSMI_KEPT 64 /* (process, device) pairs reconciled */
#define NVSMI_PROCS 256 /* NVML's entries of one sample */

static const char *const lib_names[MT_NL_MAX] = {
	[MT_NL_NCCL] = "nccl",	 [MT_NL_CUBLAS] = "cublas",
	[MT_NL_CUDNN] = "cudnn", [MT_NL_EXTENSION] = "extensions",
	[MT_NL_OTHER] = "other",
};

const char *mt_nvsmi_lib_name(enum mt_nvsmi_lib lib)
{
	return lib < MT_NL_MAX ? lib_names[lib] : "?";
}

enum mt_nvsmi_lib mt_nvsmi_library(const char *caller)
{
	/* the first prefix that matches: libcublas before libcu */
	static const struct {
		const char *prefix;
		enum mt_nvsmi_lib lib;
	} known[] = {
		{ "libnccl", MT_NL_NCCL },   { "libcublas", MT_NL_CUBLAS },
		{ "libcudnn", MT_NL_CUDNN }, { "libtorch", MT_NL_OTHER },
		{ "libc10", MT_NL_OTHER },   { "libcaffe2", MT_NL_OTHER },
		{ "libcu", MT_NL_OTHER },    { "libnv", MT_NL_OTHER },
	};

	if (!caller)
		return MT_NL_OTHER;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncmp(caller, known[i].prefix, strlen(known[i].prefix)))
			return known[i].lib;
	/* ctypes calls through libffi; an extension is a library of its own */
	return MT_NL_EXTENSION;
}

__u64 mt_nvsmi_outside(const struct mt_nvsmi_parts *p)
{
	__u64 sum = p->vmm;

	for (int i = 0; i < MT_NL_MAX; i++)
		sum += p->lib[i];
	return sum;
}

struct snap {
	struct mt_nvsmi_acct *v;
	int n;
	/* per account: the allocator's ranges and handles, and c10's totals */
	__u64 ours[MT_NVSMI_ACCTS];
	bool c10[MT_NVSMI_ACCTS];
};

static int acct_index(struct snap *s, __u32 pid, int dev)
{
	if (dev < 0)
		return -1;
	for (int i = 0; i < s->n; i++)
		if (s->v[i].pid == pid && s->v[i].dev == dev)
			return i;
	if (s->n == MT_NVSMI_ACCTS)
		return -1;
	s->v[s->n] = (struct mt_nvsmi_acct){ .pid = pid, .dev = dev };
	return s->n++;
}

static void add_range(const struct mt_live *e, bool ours, void *ctx)
{
	struct snap *s = ctx;
	int i;

	/* a mapping shows a handle's memory, which the handle counts */
	if (e->dev_type != MT_DT_CUDA || e->space == MT_SP_VAMAP)
		return;
	i = acct_index(s, e->pid, e->dev);
	if (i < 0)
		return;
	if (ours)
		s->ours[i] += e->size;
	else
		s->v[i].p.lib[mt_nvsmi_library(e->caller)] += e->size;
}

static void add_handle_pinned(const struct mt_live *e, void *ctx)
{
	struct snap *s = ctx;
	int i;

	if (e->space == MT_SP_PINNED) {
		for (i = 0; i < s->n; i++)
			if (s->v[i].pid == e->pid)
				s->v[i].p.pinned_host += e->size;
		return;
	}
	if (e->space != MT_SP_HANDLE || e->dev_type != MT_DT_CUDA)
		return;
	i = acct_index(s, e->pid, e->dev);
	if (i < 0)
		return;
	if (mt_caller_is_allocator(e->caller))
		s->ours[i] += e->size;
	else
		s->v[i].p.vmm += e->size;
}

int mt_nvsmi_snapshot(const struct mt_summary *sum,
		      const struct mt_livetable *live, struct mt_nvsmi_acct *v)
{
	struct snap s = { .v = v };
	int ret;

	/* a device the process used, even if all it held there went */
	for (size_t k = 0; k < sum->ndevs; k++) {
		const struct mt_dev_stat *d = &sum->devs[k];
		int i;

		if (d->type != MT_DT_CUDA || d->space == MT_SP_PINNED)
			continue;
		i = acct_index(&s, d->pid, d->index);
		if (i >= 0 && d->space == MT_SP_C10) {
			s.c10[i] = true;
			v[i].p.reserved = d->reserved;
		}
	}
	ret = mt_frag_ranges(live, add_range, &s);
	if (ret)
		return ret;
	mt_live_foreach(live, add_handle_pinned, &s);
	/* without c10's totals (no caching allocator) its ranges are all */
	for (int i = 0; i < s.n; i++)
		if (!s.c10[i])
			v[i].p.reserved = s.ours[i];
	return s.n;
}

struct kept {
	__u32 pid;
	int dev;
	__u64 used, ts, samples;
	struct mt_nvsmi_parts p;
	bool settled, foreign;
};

struct mt_nvsmi {
	struct mt_helper h;
	bool asking, asked, gave_up;
	__u64 asked_ts;
	struct mt_nvsmi_acct before[MT_NVSMI_ACCTS], after[MT_NVSMI_ACCTS];
	int nbefore;
	struct mt_gpuproc procs[NVSMI_PROCS];
	struct kept kept[NVSMI_KEPT];
	int nkept;
	__u64 unkept; /* samples of pairs beyond NVSMI_KEPT */
	char why[512]; /* why NVML gave no answer, or not all of it */
};

struct mt_nvsmi *mt_nvsmi_new(void)
{
	return calloc(1, sizeof(struct mt_nvsmi));
}

void mt_nvsmi_free(struct mt_nvsmi *n)
{
	if (!n)
		return;
	if (n->asking)
		mt_helper_stop(&n->h);
	free(n);
}

void mt_nvsmi_offer(struct mt_nvsmi *n, __u32 pid, int dev, __u64 used,
		    __u64 ts, const struct mt_nvsmi_parts *p, bool settled,
		    bool foreign)
{
	struct kept *k = NULL;

	for (int i = 0; i < n->nkept && !k; i++)
		if (n->kept[i].pid == pid && n->kept[i].dev == dev)
			k = &n->kept[i];
	if (!k && n->nkept == NVSMI_KEPT) {
		n->unkept++;
		return;
	}
	if (!k) {
		k = &n->kept[n->nkept++];
		*k = (struct kept){ .pid = pid, .dev = dev };
	}
	/* the latest of equal figures: the trace had longest to see it */
	if (k->samples++ &&
	    (k->settled > settled || (k->settled == settled && k->used > used)))
		return;
	k->used = used;
	k->ts = ts;
	k->p = *p;
	k->settled = settled;
	k->foreign = foreign;
}

static const struct mt_nvsmi_acct *find(const struct mt_nvsmi_acct *v, int n,
					__u32 pid, int dev)
{
	for (int i = 0; i < n; i++)
		if (v[i].pid == pid && (dev < 0 || v[i].dev == dev))
			return &v[i];
	return NULL;
}

/* NVML's answer: each traced process's figure, with the parts */
static void take(struct mt_nvsmi *n, const struct mt_summary *sum,
		 const struct mt_livetable *live)
{
	int np = mt_gpumem_procs_read(&n->h, n->procs, NVSMI_PROCS, n->why,
				      sizeof(n->why));
	int na;

	/* an NVML that failed once would fail at every tick */
	if (np < 0) {
		n->gave_up = true;
		return;
	}
	na = mt_nvsmi_snapshot(sum, live, n->after);
	if (na < 0)
		return;
	for (int i = 0; i < np; i++) {
		const struct mt_gpuproc *g = &n->procs[i];
		const struct mt_nvsmi_acct *a, *b, *any;
		struct mt_nvsmi_parts p = { 0 };

		/* a process the trace holds nothing of is not traced */
		any = find(n->after, na, g->pid, -1);
		if (!any)
			continue;
		a = find(n->after, na, g->pid, g->index);
		b = find(n->before, n->nbefore, g->pid, g->index);
		if (a)
			p = a->p;
		else
			p.pinned_host = any->p.pinned_host;
		mt_nvsmi_offer(n, g->pid, g->index, g->used, n->asked_ts, &p,
			       a && b ? !memcmp(&a->p, &b->p, sizeof(p)) :
					!a && !b,
			       !a);
	}
}

void mt_nvsmi_tick(struct mt_nvsmi *n, __u64 now_ns, __u64 interval_ns,
		   const struct mt_summary *sum,
		   const struct mt_livetable *live)
{
	int ret;

	if (n->asking) {
		if (mt_helper_poll(&n->h, false)) {
			n->asking = false;
			take(n, sum, live);
		}
		return;
	}
	if (n->gave_up || (n->asked && now_ns >= n->asked_ts &&
			   now_ns - n->asked_ts < interval_ns))
		return;
	/* nothing on a CUDA device yet: no process of ours to ask about */
	n->nbefore = mt_nvsmi_snapshot(sum, live, n->before);
	if (n->nbefore <= 0)
		return;
	n->asked = true;
	n->asked_ts = now_ns;
	ret = mt_gpumem_procs_start(&n->h);
	if (ret) {
		snprintf(n->why, sizeof(n->why), "NVML: fork: %s",
			 strerror(-ret));
		n->gave_up = true;
		return;
	}
	n->asking = true;
}

static long long unexplained(const struct kept *k)
{
	return (long long)k->used - (long long)k->p.reserved -
	       (long long)mt_nvsmi_outside(&k->p);
}

void mt_nvsmi_print(const struct mt_nvsmi *n, __u64 t0, mt_nvsmi_rank_fn rank,
		    const void *rctx, FILE *out)
{
	char dev[16];

	if (!n->asked && !n->nkept)
		return;
	if (!n->nkept) {
		struct mt_esc e = { 0 };

		fprintf(out, "# nvidia_smi none (%s)\n",
			mt_esc(&e,
			       *n->why ? n->why :
					 "NVML listed no traced process",
			       MT_ESC_TEXT));
		return;
	}
	for (int i = 0; i < n->nkept; i++) {
		const struct kept *k = &n->kept[i];
		int r = rank(k->pid, rctx);

		fprintf(out,
			"# nvidia_smi pid=%u dev=%s used=%" PRIu64
			" reserved=%" PRIu64 " outside=%" PRIu64,
			k->pid,
			mt_format_dev(dev, sizeof(dev), MT_DT_CUDA, k->dev),
			(uint64_t)k->used, (uint64_t)k->p.reserved,
			(uint64_t)mt_nvsmi_outside(&k->p));
		for (int l = 0; l < MT_NL_MAX; l++)
			fprintf(out, " %s=%" PRIu64, lib_names[l],
				(uint64_t)k->p.lib[l]);
		fprintf(out,
			" vmm=%" PRIu64 " pinned_host=%" PRIu64
			" unexplained=%lld at=+%.3fs samples=%" PRIu64
			" settled=%d foreign=%d",
			(uint64_t)k->p.vmm, (uint64_t)k->p.pinned_host,
			unexplained(k),
			k->ts > t0 ? (double)(k->ts - t0) / 1e9 : 0.0,
			(uint64_t)k->samples, k->settled, k->foreign);
		if (r >= 0)
			fprintf(out, " rank=%d", r);
		fputc('\n', out);
	}
	if (n->unkept)
		fprintf(out,
			"# nvidia_smi untracked_samples=%" PRIu64
			" (more than %d process-device pairs)\n",
			(uint64_t)n->unkept, NVSMI_KEPT);
}

/* " <name> <size>," for a part that holds something */
static size_t part(char *buf, size_t len, size_t at, const char *name,
		   __u64 bytes)
{
	char b[32];
	int w;

	if (!bytes || at >= len)
		return at;
	w = snprintf(buf + at, len - at, " %s %s,", name,
		     mt_format_bytes(b, sizeof(b), bytes));
	return w > 0 ? at + (size_t)w : at;
}

void mt_nvsmi_lines(const struct mt_nvsmi *n, mt_nvsmi_rank_fn rank,
		    const void *rctx,
		    void (*fn)(const char *text, bool foreign, void *ctx),
		    void *ctx)
{
	char text[512], who[48], dev[16], used[32], rest[32];

	for (int i = 0; i < n->nkept; i++) {
		const struct kept *k = &n->kept[i];
		long long u = unexplained(k);
		int r = rank(k->pid, rctx);
		size_t at;

		if (r >= 0)
			snprintf(who, sizeof(who), "rank %d (pid %u)", r,
				 k->pid);
		else
			snprintf(who, sizeof(who), "pid %u", k->pid);
		mt_format_dev(dev, sizeof(dev), MT_DT_CUDA, k->dev);
		mt_format_bytes(used, sizeof(used), k->used);
		if (k->foreign) {
			snprintf(
				text, sizeof(text),
				"%s holds %s on %s, a device it allocated nothing on: a context of its own there (a CUDA call before torch.cuda.set_device)",
				who, used, dev);
			fn(text, true, ctx);
			continue;
		}
		at = (size_t)snprintf(text, sizeof(text), "%s %s: %s =", who,
				      dev, used);
		at = part(text, sizeof(text), at, "reserved", k->p.reserved);
		for (int l = 0; l < MT_NL_MAX; l++)
			at = part(text, sizeof(text), at, lib_names[l],
				  k->p.lib[l]);
		at = part(text, sizeof(text), at, "vmm", k->p.vmm);
		mt_format_bytes(rest, sizeof(rest), (__u64)(u < 0 ? -u : u));
		if (at < sizeof(text))
			snprintf(
				text + at, sizeof(text) - at,
				" unexplained %s%s (the context and module images)%s",
				u < 0 ? "-" : "", rest,
				k->settled ?
					"" :
					"; the trace's figures moved while NVML read");
		fn(text, false, ctx);
	}
}
