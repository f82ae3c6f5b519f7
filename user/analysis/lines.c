// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <stdint.h>
#include "analysis/lines.h"
#include "event/format.h"
#include "lib/escape.h"

static void print_event(const struct mt_session *s, const struct mt_call *r,
			const struct mt_site *site)
{
	const struct mt_proc *p = mt_session_proc(s, r->ev->pid);
	struct mt_attrib a = {
		.rank = p && p->rank.known ? p->rank.rank : -1,
		.phase = site->phase,
		.module = site->module,
		.node = site->node,
		.detail = site->detail,
		.recompute = site->recompute,
	};
	/* the longest names the target can give, each escaped (4 bytes a byte) */
	char line[16384];
	int n;

	if (s->conf.min_size &&
	    (r->size_state != MT_SIZE_KNOWN || r->size < s->conf.min_size))
		return;
	n = mt_format_event(line, sizeof(line), r, site->caller, &a);
	if (n > 0)
		fwrite(line, 1, (size_t)n, s->out);
	if (s->conf.no_stack)
		return;
	mt_site_print_stack(site, "\t", s->out);
}

/* an mt_session_observer's event: the OOM analysis's lines, then r's */
static void on_event(void *ctx, const struct mt_session *s,
		     const struct mt_call *r, const struct mt_site *site)
{
	const struct mt_proc *p = mt_session_proc(s, r->ev->pid);
	struct mt_oom_state st = {
		.sum = &s->sum,
		.sites = s->sites,
		.live = p ? p->live : 0,
		.t0 = s->t0,
		.stacks = !s->conf.no_stack,
	};

	(void)ctx;
	mt_oom_print_event(s->oom, r, site, &st, s->out);
	if (s->conf.print_events)
		print_event(s, r, site);
}

int mt_lines_observe(struct mt_session *s)
{
	return mt_session_observe(
		s, &(struct mt_session_observer){ .event = on_event });
}

void mt_lines_print_exec(FILE *out, __u32 pid, const char *comm,
			 const char *exe, const struct mt_exec_freed *freed)
{
	char c[MT_FORMAT_COMM_LEN];
	struct mt_esc e = { 0 };

	fprintf(out,
		"# exec pid=%u: now %s (%s): what it held before is freed: "
		"allocs=%" PRIu64 " bytes=%" PRIu64 "\n",
		pid, mt_format_comm(c, sizeof(c), comm),
		mt_esc(&e, exe, MT_ESC_FIELD), (uint64_t)freed->allocs,
		(uint64_t)freed->bytes);
}
