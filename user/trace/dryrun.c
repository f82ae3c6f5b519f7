// SPDX-License-Identifier: GPL-2.0
/*
 * A dry run is a -q -- COMMAND trace with the CUDA stand-in put in front
 * of the command (dryrun/standin.h): PyTorch's real caching allocator
 * makes every decision on a device of the size asked for, no kernel runs,
 * and the report's figures are what the GPU would hold. What it cannot
 * know is any value a kernel computes: each copy from the device to the
 * host (loss.item(), .cpu(), the count nonzero() reads) is counted with
 * its line, since a shape or a branch that depends on it is the
 * stand-in's, not the GPU's.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "dryrun/cudnn_model.h"
#include "dryrun/standin.h"
#include "event/format.h"
#include "lib/err.h"
#include "lib/escape.h"
#include "python/stack.h"
#include "trace/feature.h"
#include "trace/tracer.h"

#define MAX_LINES 32 /* lines of host reads kept, the first seen */
#define SHOWN_LINES 5 /* and printed, the most frequent */
#define CMD_SHOWN 1024 /* bytes of the command line shown */

struct mt_dryrun {
	struct mt_dryrun_libs libs;
	/* the trace's output, held so that the verdict comes first */
	FILE *out, *held;
	char *held_buf;
	size_t held_len;
	bool ours; /* the stand-in's runtime was attached */
	char other[PATH_MAX]; /* another libcudart the command loaded */
	struct read_line {
		const char *line; /* interned: the pointer is the key */
		__u64 count;
	} lines[MAX_LINES];
	size_t nlines;
	__u64 reads, unplaced; /* host reads; those of no line kept */
};

/* where the trace prints: its own lines and its session's */
static void set_out(struct mt_tracer *tr, FILE *f)
{
	tr->out = f;
	tr->sink.out = f;
	tr->sink.ses->out = f;
}

/*
 * The stand-in put where the command will load it, as tr->conf->dryrun
 * asks, and the trace's output held; its probes of the host's reads on
 */
static int dryrun_open(struct mt_tracer *tr, unsigned int slot, void **st)
{
	const struct mt_dryrun_conf *c = tr->conf->dryrun;
	struct mt_dryrun *dr;

	if (!c)
		return 0;
	dr = calloc(1, sizeof(*dr));
	if (!dr) {
		mt_err("out of memory");
		return -1;
	}
	if (mt_dryrun_prepare(&c->dev, c->devices, tr->conf->run_as != NULL,
			      &dr->libs)) {
		free(dr);
		return -1;
	}
	dr->held = open_memstream(&dr->held_buf, &dr->held_len);
	if (!dr->held) {
		mt_err("estimate --dry-run: hold the output: %s",
		       strerror(errno));
		mt_dryrun_cleanup(&dr->libs);
		free(dr);
		return -1;
	}
	dr->out = tr->out;
	set_out(tr, dr->held);
	tr->att.dry_run = true;
	*st = dr;
	return 0;
}

/* the trace's output back where it was, and what was held written there */
static void release_out(struct mt_tracer *tr, struct mt_dryrun *dr)
{
	if (!dr->held)
		return;
	set_out(tr, dr->out);
	if (fclose(dr->held))
		mt_err("estimate --dry-run: hold the output: %s",
		       strerror(errno));
	else if (dr->held_len &&
		 fwrite(dr->held_buf, 1, dr->held_len, dr->out) != dr->held_len)
		mt_err("estimate --dry-run: write: %s", strerror(errno));
	free(dr->held_buf);
	dr->held = NULL;
}

/*
 * A library attached: which CUDA runtime the command loaded, ours told by
 * the file's identity, not its name
 */
static void dryrun_lib(void *st, struct mt_tracer *tr, struct mt_traced *t,
		       const struct mt_mapping *m, int probes)
{
	struct mt_dryrun *dr = st;
	const char *base = strrchr(m->path, '/');

	base = base ? base + 1 : m->path;
	if (strncmp(base, "libcudart.so", 12))
		return;
	if (mt_dryrun_ours(&dr->libs, m->dev, m->inode))
		dr->ours = true;
	else
		snprintf(dr->other, sizeof(dr->other), "%s", m->path);
}

/*
 * Just before the command starts: the stand-in is still the files written
 * (mt_dryrun_verify). 0, or -1 after mt_err().
 */
static int dryrun_start(void *st, struct mt_tracer *tr)
{
	const struct mt_dryrun *dr = st;
	char err[PATH_MAX + 128];

	if (!mt_dryrun_verify(&dr->libs, err, sizeof(err)))
		return 0;
	mt_err("estimate --dry-run: %s", err);
	return -1;
}

/* the line that asked: the innermost frame outside torch's own code */
static const char *asking_line(const struct mt_pyresolved *pr)
{
	for (int i = 0; i < pr->depth; i++)
		if (!strstr(pr->frames[i], "(torch/"))
			return pr->frames[i];
	return pr->depth ? pr->frames[0] : NULL;
}

/* an MT_K_HOST_READ event: the host read device memory */
static void dryrun_read(void *st, struct mt_tracer *tr,
			const struct mt_event *ev)
{
	struct mt_dryrun *dr = st;
	struct mt_traced *t = mt_tracer_find(tr, ev->pid);
	const struct mt_pyresolved *pr = NULL;
	const char *line = NULL;
	size_t i;

	if (!t)
		return;
	dr->reads++;
	if (t->py && (ev->flags & MT_EV_PY))
		pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->stack_id,
				     ev->flags & MT_EV_PY_TRUNC);
	/* backward, on an engine thread: the line whose forward made it */
	if (!pr && t->py && ev->node_stack)
		pr = mt_pystacks_get(tr->stacks, t->py, ev->pid, ev->node_stack,
				     false);
	if (pr)
		line = asking_line(pr);
	for (i = 0; line && i < dr->nlines; i++)
		if (dr->lines[i].line == line)
			break;
	if (!line || i == MAX_LINES) {
		dr->unplaced++;
		return;
	}
	if (i == dr->nlines)
		dr->lines[dr->nlines++] = (struct read_line){ line, 0 };
	dr->lines[i].count++;
}

static int by_count(const void *pa, const void *pb)
{
	const struct read_line *a = pa, *b = pb;

	return (a->count < b->count) - (a->count > b->count);
}

/* the command as typed, cut at CMD_SHOWN bytes, into buf */
static const char *command_line(const struct mt_trace_conf *c, char *buf,
				size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (char **w = c->command; w && *w && n + 4 < len; w++) {
		int k = snprintf(buf + n, len - n, "%s%s", n ? " " : "", *w);

		if (k < 0 || (size_t)k >= len - n) {
			snprintf(buf + len - 4, 4, "...");
			break;
		}
		n += (size_t)k;
	}
	return buf;
}

/*
 * How the command ended, into buf: "" when it exited 0 (or was not seen
 * to end), else "exit 1" or "killed by SIGSEGV"
 */
static const char *command_failure(const struct mt_tracer *tr, char *buf,
				   size_t len)
{
	const struct mt_traced *t = &tr->targets[0];

	buf[0] = '\0';
	if (!tr->ntargets || !t->proc.spawned || !t->proc.has_status)
		return buf;
	if (WIFEXITED(t->proc.status) && WEXITSTATUS(t->proc.status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(t->proc.status));
	else if (WIFSIGNALED(t->proc.status))
		snprintf(buf, len, "killed by SIG%s",
			 sigabbrev_np(WTERMSIG(t->proc.status)) ?: "?");
	return buf;
}

/*
 * no CUDA memory seen: say why, as far as the libraries loaded tell.
 * -1: it is an error, said.
 */
static int not_served(const struct mt_tracer *tr, const struct mt_dryrun *dr)
{
	char buf[CMD_SHOWN];
	const char *cmd = command_line(tr->conf, buf, sizeof(buf));

	char failed[64];

	if (dr->other[0])
		mt_err("estimate --dry-run: %s loaded the CUDA runtime %s, "
		       "not the stand-in's libcudart.so.12: its torch is no "
		       "CUDA 12 build, or finds its runtime ahead of "
		       "LD_LIBRARY_PATH (docs/memtrace-bpf-estimate.md)",
		       cmd, dr->other);
	else if (command_failure(tr, failed, sizeof(failed))[0])
		mt_err("estimate --dry-run: %s failed (%s; its own output "
		       "says why) before it allocated CUDA memory: nothing "
		       "to estimate",
		       cmd, failed);
	else if (!dr->ours)
		mt_err("estimate --dry-run: %s loaded no CUDA runtime: it is "
		       "no CUDA PyTorch program (a CPU-only torch, or none)",
		       cmd);
	else
		mt_err("estimate --dry-run: %s allocated no CUDA memory "
		       "through PyTorch's caching allocator: nothing to "
		       "estimate",
		       cmd);
	return -1;
}

static void print_reads(struct mt_dryrun *dr, FILE *out)
{
	size_t shown = dr->nlines < SHOWN_LINES ? dr->nlines : SHOWN_LINES;
	__u64 rest = dr->reads;

	if (!dr->reads) {
		fprintf(out, "Host reads none: no device memory was copied to "
			     "the host\n");
		return;
	}
	qsort(dr->lines, dr->nlines, sizeof(dr->lines[0]), by_count);
	fprintf(out,
		"Host reads %llu copies of device memory to the host: a dry "
		"run computes no value, so a shape, loop or branch that "
		"depends on one is the stand-in's, not the GPU's\n",
		(unsigned long long)dr->reads);
	for (size_t i = 0; i < shown; i++) {
		struct mt_esc e = { 0 };

		fprintf(out, "%11s%llu at %s\n", "",
			(unsigned long long)dr->lines[i].count,
			mt_esc(&e, dr->lines[i].line, MT_ESC_TEXT));
		rest -= dr->lines[i].count;
	}
	if (rest)
		fprintf(out, "%11s%llu elsewhere\n", "",
			(unsigned long long)rest);
}

/* each device's peaks, for people and as a '#' line for scripts */
/* a CUDA device's caching-allocator account: what a dry run reports */
static bool is_device(const struct mt_dev_stat *d)
{
	return d->type == MT_DT_CUDA && d->space == MT_SP_C10;
}

static void print_devices(const struct mt_summary *sum,
			  const struct mt_dryrun_conf *c, FILE *out)
{
	char dev[16], a[32], r[32];
	size_t n = 0;

	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];

		if (!is_device(d))
			continue;
		mt_format_dev(dev, sizeof(dev), d->type, d->index);
		fprintf(out, "%-10s %s peak allocated %s, peak reserved %s\n",
			n ? "" : "Device", dev,
			mt_format_bytes(a, sizeof(a), d->allocated_peak),
			mt_format_bytes(r, sizeof(r), d->reserved_peak));
		n++;
	}
	for (size_t i = 0; i < sum->ndevs; i++) {
		const struct mt_dev_stat *d = &sum->devs[i];

		if (!is_device(d))
			continue;
		mt_format_dev(dev, sizeof(dev), d->type, d->index);
		fprintf(out,
			"# dryrun pid=%u dev=%s peak_allocated=%llu "
			"peak_reserved=%llu device_mem=%llu\n",
			d->pid, dev, (unsigned long long)d->allocated_peak,
			(unsigned long long)d->reserved_peak, c->dev.mem);
	}
}

/* whether the caching allocator of any CUDA device was seen */
static bool any_device(const struct mt_summary *sum)
{
	for (size_t i = 0; i < sum->ndevs; i++)
		if (is_device(&sum->devs[i]))
			return true;
	return false;
}

/* the verdict, the first line: fits, does not fit, or the run failed */
static enum mt_verdict print_verdict(const struct mt_oom_counts *oom,
				     const char *failed, FILE *out)
{
	if (oom->failures) {
		fprintf(out,
			"Fits       no: %llu allocations failed for want of "
			"memory, after %llu retries of the allocator (OOMs "
			"below)\n",
			(unsigned long long)oom->failures,
			(unsigned long long)oom->retries);
		return MT_VERDICT_NO;
	}
	if (failed[0]) {
		fprintf(out,
			"Fits       unknown: the command failed (%s; its own "
			"output says why) before it ran out of memory or "
			"ended: the figures below are up to the failure\n",
			failed);
		return MT_VERDICT_UNKNOWN;
	}
	fprintf(out, "Fits       yes: no allocation failed, and the command "
		     "ended with exit 0\n");
	return MT_VERDICT_OK;
}

static int dryrun_end(struct mt_tracer *tr, struct mt_dryrun *dr, bool ran)
{
	const struct mt_dryrun_conf *c = tr->conf->dryrun;
	const struct mt_session *ses = tr->sink.ses;
	struct mt_oom_counts oom;
	char mem[32], cmd[CMD_SHOWN], failed[64];
	FILE *out = dr->out;
	struct mt_esc e = { 0 };
	int ret;

	mt_dryrun_cleanup(&dr->libs);
	/* cut short: what it saw is no answer to whether the job fits */
	if (ran && tr->end_signal) {
		mt_err("estimate --dry-run: the trace was ended by SIG%s "
		       "before %s ended: no estimate",
		       sigabbrev_np(tr->end_signal),
		       command_line(tr->conf, cmd, sizeof(cmd)));
		release_out(tr, dr);
		free(dr);
		return -1;
	}
	/* another runtime alone: it served what was seen, not the stand-in */
	if (!ran || !any_device(&ses->sum) || (dr->other[0] && !dr->ours)) {
		ret = ran ? not_served(tr, dr) : 0;
		release_out(tr, dr);
		free(dr);
		return ret;
	}
	mt_oom_counts(ses->oom, &oom);
	tr->verdict = print_verdict(
		&oom, command_failure(tr, failed, sizeof(failed)), out);
	fprintf(out,
		"memtrace-bpf estimate --dry-run: %s on %u stand-in %s (%s, "
		"compute capability %u.%u, %u multiprocessors): PyTorch's own "
		"caching allocator decided, no kernel ran\n",
		mt_esc(&e, command_line(tr->conf, cmd, sizeof(cmd)),
		       MT_ESC_TEXT),
		c->devices, c->dev.name ? c->dev.name : "device",
		mt_format_bytes(mem, sizeof(mem), c->dev.mem), c->dev.cc_major,
		c->dev.cc_minor, c->dev.sms);
	print_devices(&ses->sum, c, out);
	print_reads(dr, out);
	/*
	 * cuDNN is loaded by every CUDA PyTorch and the trace does not see
	 * its calls, so whether the job used it is not known here: the
	 * assumption is stated for every dry run.
	 */
	fprintf(out,
		"# dry run: cuDNN workspaces modelled: %s; a GPU's engine may "
		"ask for more or less\n",
		MT_CUDNN_RULE);
	fprintf(out, "Not counted the CUDA context and the libraries' own "
		     "memory, outside PyTorch's allocator (some hundreds of "
		     "MiB on a GPU)\n\n");
	release_out(tr, dr);
	free(dr);
	return 0;
}

/*
 * The stand-in removed, and the dry run's own lines, before the report:
 * the verdict first, then the device, each device's peaks, what the host
 * read, and what the trace printed meanwhile (its OOM blocks), held until
 * then (a trace that never ran: nothing to say). The verdict in
 * tr->verdict: MT_VERDICT_OK when it fits, MT_VERDICT_NO when the device
 * ran out of memory, MT_VERDICT_UNKNOWN when the command failed otherwise
 * (its figures are up to the failure). -1 after mt_err() when the command
 * was no CUDA PyTorch program the stand-in served or the trace was cut
 * short (then no summary follows); else 0.
 */
static int dryrun_close(void *st, struct mt_tracer *tr)
{
	int ret = dryrun_end(tr, st, tr->ran);

	tr->no_summary |= ret < 0;
	return ret;
}

static const __u32 dryrun_kinds[] = { MT_K_HOST_READ, MT_K_NONE };

const struct mt_feature mt_dryrun_feature = {
	.name = "dryrun",
	.open = dryrun_open,
	.start = dryrun_start,
	.kinds = dryrun_kinds,
	.on_probe = dryrun_read,
	.on_lib = dryrun_lib,
	.close = dryrun_close,
};
