// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include "analysis/keys.h"
#include "analysis/ops.h"
#include "event/format.h"
#include "lib/escape.h"

/* a process's highest and current memory over its devices' accounts */
static void proc_memory(const struct mt_summary *sum, __u32 pid, __u64 *peak,
			__u64 *cur)
{
	*peak = *cur = 0;
	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];
		__u64 p = d->space == MT_SP_C10 ? d->allocated_peak : d->peak;
		__u64 c = d->space == MT_SP_C10 ? d->allocated : d->cur;

		if (d->pid != pid || d->space == MT_SP_VAMAP)
			continue;
		if (p > *peak)
			*peak = p;
		if (c > *cur)
			*cur = c;
	}
}

static int by_rank(const void *a, const void *b)
{
	const struct mt_proc *x = *(const struct mt_proc *const *)a;
	const struct mt_proc *y = *(const struct mt_proc *const *)b;

	return x->rank.rank - y->rank.rank;
}

/* one line per rank, each peak against the median: the odd one shows */
static void print_ranks(struct mt_session *s)
{
	const struct mt_proc *v[MT_PROCS];
	__u64 peaks[MT_PROCS], median, cur;
	size_t n = 0;

	for (size_t i = 0; i < MT_PROCS; i++)
		if (s->procs[i].pid && s->procs[i].rank.known)
			v[n++] = &s->procs[i];
	if (!n)
		return;
	qsort(v, n, sizeof(v[0]), by_rank);
	for (size_t i = 0; i < n; i++)
		proc_memory(&s->sum, v[i]->pid, &peaks[i], &cur);
	median = peaks[n / 2];
	for (size_t i = 0; i < n; i++) {
		double dev =
			median ? 100.0 * ((double)peaks[i] - (double)median) /
					 (double)median :
				 0.0;

		proc_memory(&s->sum, v[i]->pid, &peaks[i], &cur);
		fprintf(s->out,
			"# rank rank=%d pid=%u peak=%" PRIu64
			" current=%" PRIu64
			" peak_vs_median=%+.1f%% allocs=%" PRIu64
			" failed=%" PRIu64 " live=%" PRIu64 " leaks=%zu\n",
			v[i]->rank.rank, v[i]->pid, (uint64_t)peaks[i],
			(uint64_t)cur, dev, (uint64_t)v[i]->allocs,
			(uint64_t)v[i]->failed, (uint64_t)v[i]->live,
			mt_leaks_count(s->leaks, v[i]->pid));
	}
}

/* how a dump's processes ended (mt_session_set_ended), as key=value */
static void print_ended(const struct mt_session *s)
{
	static const char *const how[] = {
		[MT_END_EXIT] = "exit",
		[MT_END_SIGNAL] = "signal",
		[MT_END_OOMKILL] = "oomkill",
	};
	struct mt_esc e = { 0 };

	for (size_t i = 0; i < s->nended; i++) {
		const struct mt_ended *d = &s->ended[i];

		e.used = 0;
		fprintf(s->out, "# ended pid=%u how=%s code=%d raised=%s\n",
			d->pid, how[d->how], d->code,
			mt_esc(&e, d->raised[0] ? d->raised : "-",
			       MT_ESC_FIELD));
	}
}

static void print_kinds(const struct mt_peak_kinds *k, void *ctx)
{
	FILE *out = ctx;
	char dev[16];

	if (!mt_space_is_tensor(k->space))
		return;
	fprintf(out, "# kinds pid=%u dev=%s space=%s peak=%" PRIu64, k->pid,
		mt_format_dev(dev, sizeof(dev), k->dev_type, k->dev),
		mt_space_name(k->space), (uint64_t)k->peak);
	for (int i = 0; i < MT_MK_MAX; i++)
		fprintf(out, " %s=%" PRIu64, mt_memkind_name(i),
			(uint64_t)k->bytes[i]);
	fputc('\n', out);
}

/*
 * --sample-bytes: the '# sample' line, which says what the sampling left
 * exact and what it made estimates (nothing in a full trace)
 */
static void print_sample(const struct mt_session *s)
{
	if (!s->conf.sample_bytes)
		return;
	fprintf(s->out,
		"# sample bytes=%" PRIu64 " allocs=%" PRIu64 " sampled=%" PRIu64
		" estimates=module,phase,peak_groups,leak,op,frag_phase "
		"exact=summary,event,device,failed,live,oom,frag,rank\n",
		(uint64_t)s->conf.sample_bytes, (uint64_t)s->sample_allocs,
		(uint64_t)s->sample_walked);
}

void mt_keys_print(struct mt_session *s, const struct mt_summary_end *end)
{
	bool stacks = !s->conf.no_stack;

	mt_summary_print(&s->sum, s->live, end,
			 &(struct mt_summary_cal){ mt_session_alloc_cal, s },
			 s->out);
	print_sample(s);
	mt_filter_print(s->filter, s->out);
	print_ranks(s);
	mt_oom_print(s->oom, s->out);
	print_ended(s);
	mt_peak_print(s->peak, s->live, s->t0, s->conf.top_live, stacks,
		      s->out);
	if (mt_peak_foreach_kinds(s->peak, s->live, mt_session_kind_alive, s,
				  print_kinds, s->out))
		fprintf(s->out, "# kinds: out of memory\n");
	mt_leaks_print(s->leaks, s->live, stacks, s->out);
	mt_frag_print(s->frag, s->live, s->t0, s->out);
	if (s->nvsmi)
		mt_nvsmi_print(s->nvsmi, s->t0, mt_session_rank_of, s, s->out);
	mt_ops_print(s, s->conf.top_ops, s->out);
}
