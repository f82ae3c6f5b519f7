// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "analysis/kindmap.h"
#include "analysis/lines.h"
#include "analysis/report.h"
#include "analysis/view.h"
#include "record/flight.h"
#include "record/iter.h"
#include "record/replay.h"
#include "lib/err.h"
#include "lib/escape.h"
#include "lib/outfile.h"

struct replay {
	const struct mt_replay_conf *c;
	FILE *out;
	struct mt_rec_iter it;
	struct mt_session *ses;
	size_t meta; /* header lines applied so far */
	__u64 at; /* --at in ns after the first event */
	__u64 first; /* ts of the first event read */
	__u64 last; /* the latest ts read: a late event may come after it */
	bool stopped; /* at --at, before the end */
	/* --kind's first reading: to the end, printing nothing */
	bool first_reading;
};

/* a flight recorder's dump (record/flight.h): why, and what it holds */
static bool dump_key(const char *key)
{
	return !strcmp(key, "dump") || !strcmp(key, "window");
}

/*
 * The header's lines, escaped: their values hold what the target named
 * (its comm and command line, its libraries' paths), kept raw in the record
 */
static void print_meta(const struct replay *rp, bool dump)
{
	const char *key, *value;
	struct mt_esc e;

	for (size_t i = 0; mt_reader_meta(rp->it.rd, i, &key, &value); i++) {
		if (dump_key(key) != dump)
			continue;
		e.used = 0;
		fprintf(rp->out, "# record %s: %s\n",
			mt_esc(&e, key, MT_ESC_FIELD),
			mt_esc(&e, value, MT_ESC_TEXT));
	}
}

/*
 * header lines read since the last look: the ranks for rank=, the
 * processes that ran before they were traced, a dump's window and how
 * its process ended
 */
static void apply_meta(struct replay *rp)
{
	const char *key, *value;

	for (; mt_reader_meta(rp->it.rd, rp->meta, &key, &value); rp->meta++) {
		unsigned long long first, last;
		struct mt_rank r;
		int pid;

		if (!strcmp(key, MT_FLIGHT_SPAN_KEY) &&
		    sscanf(value, "%llu %llu", &first, &last) == 2) {
			mt_session_set_window(rp->ses, first, last);
			continue;
		}
		/* a line of a later version read as none: the rest stands */
		if (!strcmp(key, MT_FLIGHT_ENDED_KEY)) {
			(void)mt_session_set_ended(rp->ses, value);
			continue;
		}
		if (!strcmp(key, MT_REC_ATTACH_KEY) &&
		    sscanf(value, "pid=%d", &pid) == 1 && pid > 0) {
			mt_session_set_attached(rp->ses, (__u32)pid);
			continue;
		}
		if (strcmp(key, "rank") ||
		    sscanf(value, MT_RANK_META, &pid, &r.rank, &r.local_rank,
			   &r.world_size) != 4)
			continue;
		r.known = true;
		mt_session_set_rank(rp->ses, (__u32)pid, &r);
	}
}

/* a process ran execve: what it held goes, as in the live trace */
static void replay_exec(struct replay *rp, const struct mt_rec_item *it)
{
	/* the site names the program it runs now (trace/procs.c) */
	const char *exe = it->site && it->site->detail ? it->site->detail : "?";
	struct mt_exec_freed freed;

	mt_session_exec(rp->ses, it->ev.pid, it->ev.ts, &freed);
	if (!rp->first_reading)
		mt_lines_print_exec(rp->out, it->ev.pid, it->ev.comm, exe,
				    &freed);
}

/* every event up to the end, or up to --at */
static int on_event(void *ctx, const struct mt_rec_item *it, struct mt_call *r)
{
	struct replay *rp = ctx;

	apply_meta(rp);
	if (!rp->first)
		rp->first = it->ev.ts;
	if (!rp->first_reading && rp->c->at >= 0 && it->ev.ts > rp->first &&
	    it->ev.ts - rp->first > rp->at) {
		rp->stopped = true;
		return MT_REC_STOP;
	}
	if (it->ev.ts > rp->last)
		rp->last = it->ev.ts;
	if (r)
		mt_session_event(rp->ses, r, it->site);
	else if (it->ev.kind == MT_K_EXEC)
		replay_exec(rp, it);
	return 0;
}

static int replay(struct replay *rp)
{
	const struct mt_replay_conf *c = rp->c;
	struct mt_summary_end end = { .top_live = c->out.ses.top_live };
	struct mt_output_conf oc = c->out;
	struct mt_rec_end re;
	char err[512];
	int ret;

	/* the export starts after the checks: a refusal leaves no file */
	oc.exp.kind = NULL;
	rp->ses = mt_output_open(&oc, rp->out);
	if (!rp->ses)
		return -1;
	if (mt_rec_iter_start(&rp->it, rp->ses->sites))
		return -1;
	/* first, before what the events print (an OOM's block) */
	print_meta(rp, true);
	/* a sampled record is read as one (analysis/sample.h) */
	rp->ses->conf.sample_bytes = mt_reader_sample_bytes(rp->it.rd);
	if (mt_filter_check_sampled(&c->out.ses.filter,
				    rp->ses->conf.sample_bytes, err,
				    sizeof(err))) {
		mt_err("%s", err);
		return -1;
	}
	if (c->out.exp.kind && mt_export_start(rp->ses, &c->out.exp))
		return -1;
	ret = mt_rec_iter_run(&rp->it, rp->ses->sites, on_event, rp);
	if (ret)
		return ret;
	/* header lines after the last event, or of a record with none */
	apply_meta(rp);
	/* read to the end without passing --at: there is no such moment */
	if (c->at >= 0 && !rp->stopped && rp->at > rp->last - rp->first) {
		mt_err("--at %g is past the end of the trace (%.3f s from its "
		       "first event to its last)",
		       c->at, (double)(rp->last - rp->first) / 1e9);
		return -1;
	}
	/* a filter that named what no event has: say what there is */
	if (rp->ses->filter &&
	    mt_filter_check_seen(rp->ses->filter, rp->ses->sites) < 0)
		return -1;
	/* after the events: a process that came later has its lines mid-file */
	if (c->script)
		return 0;
	print_meta(rp, false);
	/* --at: the report's tables of that moment; '#' lines with --keys */
	if ((c->at >= 0 || c->at_peak) && !c->out.ses.keys) {
		mt_report_print_at(rp->ses, c->at_peak, c->at);
		return 0;
	}
	if (c->at >= 0) {
		fprintf(rp->out, "# at %.6f s into the record:\n", c->at);
		mt_view_now(rp->ses);
		return 0;
	}
	if (c->at_peak) {
		mt_peak_print(rp->ses->peak, rp->ses->live, rp->ses->t0,
			      c->out.ses.top_live, !c->out.ses.no_stack,
			      rp->out);
		return 0;
	}
	if (mt_reader_end(rp->it.rd, &re)) {
		end.seconds = re.seconds;
		end.lost = re.lost;
		end.unseen = re.unseen;
	} else {
		end.seconds = (double)(rp->last - rp->first) / 1e9;
		end.cut_short = mt_reader_truncated(rp->it.rd);
	}
	mt_view_end(rp->ses, &end);
	return 0;
}

/* the record read, the output written: 0, or -1 after mt_err() */
static int replay_file(struct replay *rp, const struct mt_replay_conf *c,
		       char *err, size_t errlen)
{
	int ret;

	if (mt_rec_iter_open(&rp->it, c->input)) {
		mt_rec_iter_close(&rp->it);
		return -1;
	}
	if (c->output) {
		rp->out = mt_create_output_file(c->output, MT_OUT_PRIVATE, err,
						errlen);
		if (!rp->out) {
			mt_err("cannot write %s", err);
			mt_rec_iter_close(&rp->it);
			return -1;
		}
	}
	ret = replay(rp);
	/* the export writes the record's strings: the iterator holds them */
	if (mt_output_close(rp->ses))
		ret = -1;
	mt_rec_iter_close(&rp->it);
	if (rp->out != stdout && fclose(rp->out)) {
		mt_err("write %s: %s", c->output, strerror(errno));
		ret = -1;
	}
	return ret;
}

/*
 * A record's events, a byte each, at most: past it an allocation's kind
 * is not kept and reads as unknown
 */
#define KINDMAP_MAX (256ULL << 20)

/* --kind's first reading: the kinds told, and how many found no room */
struct kinds_told {
	struct mt_kindmap *map;
	__u64 lost;
};

static void told(void *ctx, __u64 seq, enum mt_memkind kind)
{
	struct kinds_told *t = ctx;

	if (mt_kindmap_set(t->map, seq, kind))
		t->lost++;
}

/*
 * --kind: a first reading of the record to its end, in a session of its
 * own that prints nothing, tells each allocation's kind (at its free, or
 * alive at the end) into map for the second reading's filter. 0, or
 * negative after mt_err().
 */
static int read_kinds(const struct mt_replay_conf *c, struct mt_kindmap *map)
{
	struct mt_session_conf sc = c->out.ses;
	struct replay rp = { .c = c, .first_reading = true };
	struct kinds_told t = { .map = map };
	struct mt_session s;
	int ret = -1;

	sc.filter = (struct mt_filter_conf){ 0 };
	sc.print_events = false;
	if (mt_session_init(&s, &sc, NULL)) {
		mt_err("--kind: out of memory");
		mt_session_free(&s);
		return -ENOMEM;
	}
	s.told = told;
	s.told_ctx = &t;
	rp.ses = &s;
	if (!mt_rec_iter_open(&rp.it, c->input) &&
	    !mt_rec_iter_start(&rp.it, s.sites)) {
		s.conf.sample_bytes = mt_reader_sample_bytes(rp.it.rd);
		ret = mt_rec_iter_run(&rp.it, s.sites, on_event, &rp);
	}
	if (!ret)
		mt_session_tell_alive(&s);
	/* kept as unknown, said: the filter's figures lack them */
	if (t.lost)
		mt_err("--kind: %llu allocations past the record's first %llu "
		       "events have no kind kept: they count as unknown",
		       (unsigned long long)t.lost, KINDMAP_MAX);
	mt_rec_iter_close(&rp.it);
	mt_session_free(&s);
	return ret;
}

int mt_replay(const struct mt_replay_conf *c)
{
	struct mt_replay_conf kc = *c;
	struct replay rp = { .c = c,
			     .out = stdout,
			     .at = c->at >= 0 ? (__u64)(c->at * 1e9) : 0 };
	struct mt_kindmap *map = NULL;
	char err[512];
	int ret;

	if (c->out.ses.filter.nkinds) {
		map = mt_kindmap_new(KINDMAP_MAX);
		if (!map) {
			mt_err("--kind: out of memory");
			return -ENOMEM;
		}
		ret = read_kinds(c, map);
		if (ret) {
			mt_kindmap_free(map);
			return ret;
		}
		kc.out.ses.filter.kindmap = map;
		rp.c = &kc;
	}
	ret = replay_file(&rp, c, err, sizeof(err));
	mt_kindmap_free(map);
	return ret;
}
