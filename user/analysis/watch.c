// SPDX-License-Identifier: GPL-2.0
/*
 * --watch: a sample of each (process, CUDA device or the CPU) per interval
 * in a bounded ring, a robust line over the last window of them (Theil and
 * Sen's: a one-time rise is not growth), and the time until that line
 * meets the device's size (the host's memory, for the CPU; a CUDA
 * device's from analysis/gpumem.h, or --device-mem).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "event/format.h"
#include "analysis/gpumem.h"
#include "analysis/session.h"
#include "analysis/watch.h"
#include "lib/escape.h"

#define WATCH_ACCOUNTS 64 /* (process, device) pairs watched */
#define WATCH_SAMPLES 256 /* per pair; older ones leave the fit */
/* the slopes between every two samples of a window */
#define WATCH_SLOPES (WATCH_SAMPLES * (WATCH_SAMPLES - 1) / 2)
#define WATCH_TOP 5 /* growing sites named in an alert */

struct sample {
	double t; /* seconds since the first tick */
	double used; /* bytes */
};

struct growth {
	const struct mt_site *site;
	__u64 bytes;
};

struct account {
	__u32 pid;
	bool cpu; /* CPU tensor memory, else CUDA device index */
	int index; /* -1: not known */
	struct sample ring[WATCH_SAMPLES];
	int head, n; /* next slot written; samples held */
	/* this tick's reading, from the summary */
	bool seen, has_c10;
	__u64 c10_allocated, c10_reserved, raw;
	double used;
	__u64 size;
	bool asking; /* its device's size is being asked for */
	bool above; /* at or over alert_pct: no new alert until it falls */
	bool alert; /* alert this tick */
	struct growth top[WATCH_TOP];
	int ntop;
};

struct mt_watch {
	struct mt_watch_conf conf;
	bool started;
	__u64 start, last; /* ns of the first tick and of the last lines */
	struct account acc[WATCH_ACCOUNTS];
	int nacc;
	int nalerts; /* accounts alerting this tick */
	bool full_said, unknown_said, source_said;
	/* asked from the start: the answer is there when a device comes */
	struct mt_gpumem *gpus;
	const char *why; /* why a device's size is not known */
	__u64 host_mem; /* the host's memory, for CPU accounts; 0: unknown */
	double slopes[WATCH_SLOPES]; /* fit_line's room */
};

struct mt_watch *mt_watch_new(const struct mt_watch_conf *c)
{
	struct mt_watch *w = calloc(1, sizeof(*w));
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	if (!w)
		return NULL;
	w->conf = *c;
	if (pages > 0 && page > 0)
		w->host_mem = (__u64)pages * (__u64)page;
	/* without it each CUDA device's size is unknown, for want of memory */
	if (!c->device_mem)
		w->gpus = mt_gpumem_new();
	if (c->ses && !c->ses->nvsmi) {
		c->ses->nvsmi = mt_nvsmi_new();
		if (!c->ses->nvsmi) {
			mt_watch_free(w);
			return NULL;
		}
	}
	return w;
}

void mt_watch_free(struct mt_watch *w)
{
	if (!w)
		return;
	mt_gpumem_free(w->gpus);
	free(w);
}

/* the size of cuda:index; 0 while asking (*asking) or not known (w->why) */
static __u64 device_mem(struct mt_watch *w, int index, bool *asking)
{
	enum mt_gpumem_state st;
	__u64 bytes = 0;

	*asking = false;
	if (w->conf.device_mem)
		return w->conf.device_mem;
	if (index < 0) {
		w->why = "device index not known";
		return 0;
	}
	if (!w->gpus) {
		w->why = "out of memory";
		return 0;
	}
	st = mt_gpumem_size(w->gpus, index, &bytes);
	*asking = st == MT_GPUMEM_ASKING;
	if (st == MT_GPUMEM_UNKNOWN)
		w->why = mt_gpumem_why(w->gpus);
	return st == MT_GPUMEM_KNOWN ? bytes : 0;
}

__u64 mt_watch_device_mem(struct mt_watch *w, int index)
{
	bool asking;

	return device_mem(w, index, &asking);
}

static struct account *account(struct mt_watch *w, __u32 pid, bool cpu,
			       int index, FILE *out)
{
	struct account *a;

	for (int i = 0; i < w->nacc; i++)
		if (w->acc[i].pid == pid && w->acc[i].cpu == cpu &&
		    w->acc[i].index == index)
			return &w->acc[i];
	if (w->nacc == WATCH_ACCOUNTS) {
		if (!w->full_said)
			fprintf(out,
				"# watch: more than %d process-device pairs, the rest are not watched\n",
				WATCH_ACCOUNTS);
		w->full_said = true;
		return NULL;
	}
	a = &w->acc[w->nacc++];
	a->pid = pid;
	a->cpu = cpu;
	a->index = index;
	return a;
}

/* the memory the account's device has: the host's for the CPU */
static __u64 account_size(struct mt_watch *w, struct account *a)
{
	a->asking = false;
	return a->cpu ? w->host_mem : device_mem(w, a->index, &a->asking);
}

static const char *account_dev(char *buf, size_t len, const struct account *a)
{
	return mt_format_dev(buf, len, a->cpu ? MT_DT_CPU : MT_DT_CUDA,
			     a->index);
}

/*
 * With the caching allocator, its reserved bytes are what the device
 * lends the process; its segments also show in the runtime and driver
 * accounts, which hold what c10 does not see (other libraries' cudaMalloc)
 * or what it took before the attach: the larger of both, never the sum.
 */
static void read_summary(struct mt_watch *w, const struct mt_summary *sum,
			 FILE *out)
{
	for (int i = 0; i < w->nacc; i++) {
		struct account *a = &w->acc[i];

		a->seen = a->has_c10 = false;
		a->c10_allocated = a->c10_reserved = a->raw = 0;
	}
	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];
		bool cpu = d->type == MT_DT_CPU && d->space == MT_SP_CPU;
		struct account *a;

		if (!cpu &&
		    (d->type != MT_DT_CUDA ||
		     (d->space != MT_SP_C10 && d->space != MT_SP_CUDART &&
		      d->space != MT_SP_DRIVER && d->space != MT_SP_HANDLE)))
			continue;
		a = account(w, d->pid, cpu, d->index, out);
		if (!a)
			continue;
		a->seen = true;
		if (d->space == MT_SP_C10) {
			a->has_c10 = true;
			a->c10_allocated = d->allocated;
			a->c10_reserved = d->reserved;
		} else {
			a->raw += d->cur;
		}
	}
	for (int i = 0; i < w->nacc; i++) {
		struct account *a = &w->acc[i];

		a->used = (double)(a->c10_reserved > a->raw ? a->c10_reserved :
							      a->raw);
	}
}

static void add_sample(struct account *a, double t)
{
	a->ring[a->head] = (struct sample){ .t = t, .used = a->used };
	a->head = (a->head + 1) % WATCH_SAMPLES;
	if (a->n < WATCH_SAMPLES)
		a->n++;
}

/* the k-th newest sample, from 0 */
static const struct sample *nth_newest(const struct account *a, int k)
{
	return &a->ring[(a->head - 1 - k + 2 * WATCH_SAMPLES) % WATCH_SAMPLES];
}

struct fit {
	int n;
	bool ok; /* two distinct times at least */
	double rate; /* bytes per second */
	double r2;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* the median of v[0..n), n > 0; v is sorted */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The line through the samples not older than since: its rate the median
 * of the slopes between every two of them (Theil and Sen). A one-time rise
 * (an optimizer's state made at the first step, a cache filled) tilts
 * fewer than half of those slopes, so it is not taken for growth, as a
 * least-squares line would take it; a steady growth tilts them all. r2 is
 * the share of the samples' variance that line explains (0 at worst).
 */
static struct fit fit_line(struct mt_watch *w, const struct account *a,
			   double since)
{
	double my = 0, ssr = 0, sst = 0, mid;
	struct fit f = { 0 };
	size_t ns = 0;

	while (f.n < a->n && nth_newest(a, f.n)->t >= since)
		my += nth_newest(a, f.n++)->used;
	if (f.n < 2)
		return f;
	my /= f.n;
	for (int i = 0; i < f.n; i++)
		for (int j = i + 1; j < f.n; j++) {
			const struct sample *p = nth_newest(a, i),
					    *q = nth_newest(a, j);

			if (p->t != q->t)
				w->slopes[ns++] =
					(p->used - q->used) / (p->t - q->t);
		}
	if (!ns)
		return f;
	f.ok = true;
	f.rate = median(w->slopes, ns);
	for (int k = 0; k < f.n; k++) {
		const struct sample *s = nth_newest(a, k);

		w->slopes[k] = s->used - f.rate * s->t;
	}
	mid = median(w->slopes, (size_t)f.n);
	/* centred sums: bytes are large, their squares lose no precision */
	for (int k = 0; k < f.n; k++) {
		const struct sample *s = nth_newest(a, k);
		double r = s->used - (mid + f.rate * s->t), d = s->used - my;

		ssr += r * r;
		sst += d * d;
	}
	/* a flat series is fitted exactly */
	f.r2 = sst > 0 ? (ssr < sst ? 1 - ssr / sst : 0) : 1.0;
	return f;
}

enum confidence { CONF_NONE, CONF_LOW, CONF_MEDIUM, CONF_HIGH };

static const char *const conf_names[] = { "none", "low", "medium", "high" };

static enum confidence confidence(const struct fit *f)
{
	if (!f->ok)
		return CONF_NONE;
	if (f->r2 >= 0.9 && f->n >= 10)
		return CONF_HIGH;
	if (f->r2 >= 0.6 && f->n >= 5)
		return CONF_MEDIUM;
	return CONF_LOW;
}

/* seconds until the line reaches size; < 0: never (or not known) */
static double time_to_oom(const struct account *a, const struct fit *f)
{
	if (!a->size || !f->ok || f->rate <= 0)
		return -1;
	if (a->used >= (double)a->size)
		return 0;
	return ((double)a->size - a->used) / f->rate;
}

/* a prediction of low confidence does not raise the risk */
static const char *risk(const struct account *a, const struct fit *f)
{
	double pct, tto = time_to_oom(a, f);

	if (!a->size)
		return "unknown";
	pct = 100 * a->used / (double)a->size;
	if (confidence(f) < CONF_MEDIUM)
		tto = -1;
	if (pct >= 95 || (tto >= 0 && tto < 60))
		return "critical";
	if (pct >= 85 || (tto >= 0 && tto < 600))
		return "high";
	if (pct >= 70 || (tto >= 0 && tto < 3600))
		return "medium";
	return "low";
}

static const char *fmt_duration(char *buf, size_t len, double s)
{
	long v;

	if (s >= 1000 * 86400.0) {
		snprintf(buf, len, ">999d");
		return buf;
	}
	v = (long)(s + 0.5);
	/* a minute away, tenths matter */
	if (s < 59.95)
		snprintf(buf, len, "%.1fs", s);
	else if (v < 3600)
		snprintf(buf, len, "%ldm%02lds", v / 60, v % 60);
	else if (v < 86400)
		snprintf(buf, len, "%ldh%02ldm", v / 3600, v / 60 % 60);
	else
		snprintf(buf, len, "%ldd%02ldh", v / 86400, v / 3600 % 24);
	return buf;
}

/* used, of size (pct), rate and oom_in: what a line and an alert share */
static void print_state(const struct account *a, const struct fit *f, FILE *out)
{
	char used[32], size[32], when[32];
	double tto = time_to_oom(a, f), rate = f->rate;
	const char *u = mt_byte_unit(&rate);

	fprintf(out, "used=%s",
		mt_format_bytes(used, sizeof(used),
				(unsigned long long)a->used));
	if (a->size)
		fprintf(out, " of %s (%.1f %%)",
			mt_format_bytes(size, sizeof(size), a->size),
			100 * a->used / (double)a->size);
	else
		fprintf(out, " of unknown");
	if (f->ok)
		fprintf(out, " rate=%+.1f %s/s", rate, u);
	else
		fprintf(out, " rate=?");
	if (!a->size || !f->ok)
		fprintf(out, " oom_in=unknown");
	else if (tto < 0)
		fprintf(out, " oom_in=never");
	else
		fprintf(out, " oom_in=%s",
			fmt_duration(when, sizeof(when), tto));
}

static void print_line(struct mt_watch *w, const struct account *a,
		       const struct fit *f, double t, FILE *out)
{
	char dev[32];

	account_dev(dev, sizeof(dev), a);
	/* a size still asked for may come at the next line */
	if (!a->size && !w->unknown_said && !a->cpu && !a->asking) {
		fprintf(out,
			"# watch %s: device size unknown (%s); --device-mem BYTES gives it\n",
			dev, w->why ? w->why : "?");
		w->unknown_said = true;
	}
	if (a->size && !a->cpu && !w->source_said && w->gpus &&
	    !strcmp(mt_gpumem_source(w->gpus), "nvidia-smi")) {
		fprintf(out, "# watch: device sizes from nvidia-smi (%s)\n",
			mt_gpumem_why(w->gpus));
		w->source_said = true;
	}
	/* at= is on the clock of the event lines' times */
	fprintf(out, "# watch %.1fs at=%.6f pid=%u %s ", t,
		(double)w->start / 1e9 + t, a->pid, dev);
	print_state(a, f, out);
	fprintf(out, " confidence=%s(r2=%.2f,n=%d) risk=%s\n",
		conf_names[confidence(f)], f->r2, f->n, risk(a, f));
}

static void print_alert(const struct mt_watch *w, const struct account *a,
			const struct fit *f, double t, FILE *out)
{
	char dev[32], bytes[32];

	account_dev(dev, sizeof(dev), a);
	fprintf(out, "# ALERT %.1fs pid=%u %s over %.1f %%: ", t, a->pid, dev,
		w->conf.alert_pct);
	print_state(a, f, out);
	fputc('\n', out);
	if (!a->ntop)
		fprintf(out,
			"# ALERT pid=%u %s growing: no site grew since the last line\n",
			a->pid, dev);
	for (int i = 0; i < a->ntop; i++) {
		const struct mt_site *s = a->top[i].site;
		struct mt_esc e = { 0 };

		fprintf(out, "# ALERT pid=%u %s growing +%s event=%s", a->pid,
			dev,
			mt_format_bytes(bytes, sizeof(bytes), a->top[i].bytes),
			mt_esc(&e, s->event ? s->event : "?", MT_ESC_FIELD));
		mt_site_print_module(s, out);
		/* the rest of the line: a frame has blanks */
		fprintf(out, " frame=%s\n",
			mt_esc(&e, s->depth > 0 ? s->frames[0] : "-",
			       MT_ESC_TEXT));
	}
	fprintf(out,
		"# ALERT pid=%u %s advice: reduce the batch size (activations grow with it)\n",
		a->pid, dev);
	fprintf(out,
		"# ALERT pid=%u %s advice: activation checkpointing (torch.utils.checkpoint) recomputes activations in backward instead of keeping them\n",
		a->pid, dev);
	/* a quarter of reserved unused: the cache is fragmented */
	if (a->has_c10 && a->c10_reserved > a->c10_allocated &&
	    a->c10_reserved - a->c10_allocated >= a->c10_reserved / 4) {
		char res[32], alloc[32];

		fprintf(out,
			"# ALERT pid=%u %s advice: reserved %s but allocated %s: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation\n",
			a->pid, dev,
			mt_format_bytes(res, sizeof(res), a->c10_reserved),
			mt_format_bytes(alloc, sizeof(alloc),
					a->c10_allocated));
	}
}

/* the account's memory is counted at the caching allocator or below it */
static bool counts_for(const struct account *a, const char *event)
{
	for (unsigned int k = 0; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);

		if (!ki || !ki->event ||
		    (ki->event != event && strcmp(ki->event, event)))
			continue;
		if (a->cpu)
			return ki->space == MT_SP_CPU;
		if (ki->cpu)
			continue;
		if (a->has_c10)
			return ki->space == MT_SP_C10;
		return ki->space == MT_SP_CUDART || ki->space == MT_SP_DRIVER ||
		       ki->space == MT_SP_HANDLE;
	}
	return false;
}

static void add_growth(struct account *a, const struct mt_site *s, __u64 bytes)
{
	int i;

	if (a->ntop == WATCH_TOP) {
		if (a->top[WATCH_TOP - 1].bytes >= bytes)
			return;
		i = WATCH_TOP - 1;
	} else {
		i = a->ntop++;
	}
	/* insertion into the short list, largest first */
	for (; i > 0 && a->top[i - 1].bytes < bytes; i--)
		a->top[i] = a->top[i - 1];
	a->top[i] = (struct growth){ .site = s, .bytes = bytes };
}

/* growth since the last tick for the alerts, then a new mark */
static void mark_site(struct mt_site *s, void *ctx)
{
	struct mt_watch *w = ctx;

	if (w->nalerts && s->live_bytes > s->mark_bytes && s->event)
		for (int i = 0; i < w->nacc; i++) {
			struct account *a = &w->acc[i];

			if (a->alert && a->pid == s->pid &&
			    counts_for(a, s->event))
				add_growth(a, s, s->live_bytes - s->mark_bytes);
		}
	s->mark_bytes = s->live_bytes;
}

void mt_watch_tick(struct mt_watch *w, __u64 now_ns, struct mt_summary *sum,
		   struct mt_sites *sites, FILE *out)
{
	__u64 interval = (__u64)(w->conf.interval * 1e9);
	bool print = w->started;
	double t;

	/* the sizes' helpers are followed at once, not at the lines' pace */
	if (w->gpus)
		mt_gpumem_poll(w->gpus);
	if (w->conf.ses && w->conf.ses->nvsmi)
		mt_nvsmi_tick(w->conf.ses->nvsmi, now_ns, interval,
			      &w->conf.ses->sum, w->conf.ses->live);
	if (w->started && (now_ns < w->last || now_ns - w->last < interval))
		return;
	if (!w->started) {
		w->started = true;
		w->start = now_ns;
	}
	w->last = now_ns;
	t = (double)(now_ns - w->start) / 1e9;
	read_summary(w, sum, out);
	w->nalerts = 0;
	for (int i = 0; i < w->nacc; i++) {
		struct account *a = &w->acc[i];
		bool over;

		a->alert = false;
		a->ntop = 0;
		if (!a->seen)
			continue;
		a->size = account_size(w, a);
		add_sample(a, t);
		if (!print || w->conf.alert_pct <= 0 || !a->size)
			continue;
		over = 100 * a->used >= w->conf.alert_pct * (double)a->size;
		a->alert = over && !a->above;
		a->above = over;
		w->nalerts += a->alert;
	}
	mt_sites_foreach(sites, mark_site, w);
	if (!print)
		return;
	for (int i = 0; i < w->nacc; i++) {
		const struct account *a = &w->acc[i];
		struct fit f;

		if (!a->seen)
			continue;
		f = fit_line(w, a, w->conf.window > 0 ? t - w->conf.window : 0);
		print_line(w, a, &f, t, out);
		if (a->alert)
			print_alert(w, a, &f, t, out);
	}
}
