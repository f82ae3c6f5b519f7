// SPDX-License-Identifier: GPL-2.0
/*
 * How a traced process's backward allocations learn their autograd Node
 * (docs/autograd-tls.md): read by the allocation's own probe from
 * libtorch_cpu's thread-locals where user/python/nodetls.c finds them,
 * else, per process, from the two autograd probes (a trap at every Node
 * made and at every Node run). With TLS, a backward event carries its
 * Node's number, and the walked forward allocations the numbers they ran
 * under: the Node's origin (the stack that made it) is found here from
 * those, so that attribution downstream reads ev->node_stack as with the
 * probes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "lib/err.h"
#include "lib/escape.h"
#include "memtrace.h"
#include "memtrace.skel.h"
#include "proc/maps.h"
#include "python/nodeseq.h"
#include "python/nodetls.h"
#include "python/pyproc.h"
#include "trace/autograd.h"
#include "trace/sink.h"
#include "trace/tracer.h"

/*
 * Events of a process, and library loads, at which the GOT pairs are read
 * while its loader has not filled them: past this the probes take over
 */
#define PLACE_TRIES 1024

/*
 * A test's switch (internal, docs/OUTPUT.md): "probes" keeps the probes
 * whatever the finder says, "late-probes" takes them when the TLS is
 * placed, as a library whose GOT never reads right would
 */
#define FORCE_ENV "MEMTRACE_BPF_AUTOGRAD"

struct mt_autograd {
	struct mt_node_tls found; /* from the file */
	char *path; /* libtorch_cpu as the process maps it */
	int tries; /* reads of the GOT pairs so far */
	bool placed; /* BPF reads the TLS */
	struct mt_nodeseq seq; /* (counter, stack) of forward allocations */
};

/*
 * the line that says how t's backward Nodes are named, in the log and in
 * t's record (where a report of it says it again)
 */
static void say(struct mt_tracer *tr, const struct mt_traced *t,
		const char *mode, const char *why)
{
	struct mt_sink *k = mt_tracer_sink(tr, t);
	int pid = t->proc.pid;
	struct mt_esc e = { 0 };

	if (why)
		mt_sink_meta(k, "autograd", "pid=%d mode=%s why=%s", pid, mode,
			     why);
	else
		mt_sink_meta(k, "autograd", "pid=%d mode=%s", pid, mode);
	if (!tr->att.log)
		return;
	if (why)
		fprintf(tr->att.log, "# autograd pid=%d mode=%s why=%s\n", pid,
			mode, mt_esc(&e, why, MT_ESC_TEXT));
	else
		fprintf(tr->att.log, "# autograd pid=%d mode=%s\n", pid, mode);
}

static int read_target(void *ctx, __u64 addr, void *buf, size_t len)
{
	return mt_py_read(ctx, addr, buf, len);
}

/*
 * The load bias of the library t maps at path: from the mapping of its
 * code that holds Node::assign_parent() (the maps keep code only).
 */
static bool bias_in(const struct mt_maps *maps, const char *path,
		    const struct mt_node_tls *f, __u64 *bias)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct mt_mapping *m = &maps->v[i];

		if (m->path && !strcmp(m->path, path) &&
		    f->fn_offset >= m->offset &&
		    f->fn_offset - m->offset < m->end - m->start) {
			*bias = m->start + (f->fn_offset - m->offset) -
				f->fn_vaddr;
			return true;
		}
	}
	return false;
}

/*
 * The same from its maps as they are now, should the scan that attached
 * it have seen only part of it. 0, or -EAGAIN.
 */
static int bias_of(struct mt_traced *t, const char *path,
		   const struct mt_node_tls *f, __u64 *bias)
{
	if (bias_in(&t->proc.maps, path, f, bias))
		return 0;
	if (!mt_maps_read(t->proc.pid, &t->proc.maps) &&
	    bias_in(&t->proc.maps, path, f, bias))
		return 0;
	return -EAGAIN;
}

/* back to the probes for t, late: BPF stops reading its TLS */
static void fall_back(struct mt_tracer *tr, struct mt_traced *t,
		      const char *why)
{
	struct mt_autograd *ag = t->autograd;
	char err[512];
	int ret;

	say(tr, t, "probes", why);
	ret = mt_attach_autograd(&tr->att, &t->proc, ag->path, err,
				 sizeof(err));
	if (ret < 0)
		mt_err("%s", err);
	mt_autograd_forget(tr, t);
}

/*
 * Tell BPF where t's TLS lies, once its loader relocated libtorch_cpu.
 * NULL: done, or to be tried again at a later load or event; else why
 * it cannot be read.
 */
static const char *place(struct mt_tracer *tr, struct mt_traced *t)
{
	struct mt_autograd *ag = t->autograd;
	struct mt_node_tlsconf c;
	__u32 pid = (__u32)t->proc.pid;
	__u64 bias;
	int ret;

	const char *force = getenv(FORCE_ENV);

	if (!ag || ag->placed || !t->py)
		return NULL;
	ret = bias_of(t, ag->path, &ag->found, &bias);
	if (!ret)
		ret = mt_node_tls_place(&ag->found, bias, read_target, t->py,
					&c);
	if (ret == -EAGAIN && ++ag->tries < PLACE_TRIES)
		return NULL;
	if (ret == -EAGAIN)
		return "libtorch_cpu was never seen relocated";
	if (ret == -ENOEXEC)
		return "its GOT pairs name two modules";
	if (ret)
		return "its GOT could not be read";
	if (force && !strcmp(force, "late-probes"))
		return FORCE_ENV "=late-probes";
	ret = bpf_map__update_elem(tr->skel->maps.nodetls, &pid, sizeof(pid),
				   &c, sizeof(c), BPF_ANY);
	if (ret)
		return "no room in BPF's map";
	ag->placed = true;
	say(tr, t, "tls", NULL);
	return NULL;
}

void mt_autograd_place(struct mt_tracer *tr, struct mt_traced *t)
{
	const char *why = place(tr, t);

	if (why)
		fall_back(tr, t, why);
}

/*
 * The libtorch_cpu open as fd decoded into lib, unless lib holds that
 * file already (the same inode, size and time). Returns the decode's
 * result, lib->ret.
 */
static int find(struct mt_autograd_lib *lib, int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st)) {
		lib->known = false;
	} else if (lib->known && lib->id.dev == st.st_dev &&
		   lib->id.inode == st.st_ino && lib->size == st.st_size &&
		   lib->mtime.tv_sec == st.st_mtim.tv_sec &&
		   lib->mtime.tv_nsec == st.st_mtim.tv_nsec) {
		return lib->ret;
	} else {
		lib->known = true;
		lib->id = (struct mt_file_id){ .dev = st.st_dev,
					       .inode = st.st_ino };
		lib->size = st.st_size;
		lib->mtime = st.st_mtim;
	}
	lib->err[0] = '\0';
	lib->ret = mt_node_tls_find_fd(fd, path, &lib->found, lib->err,
				       sizeof(lib->err));
	return lib->ret;
}

/*
 * Why t's backward Nodes are probed, or NULL: read from their TLS, as
 * tr->ag_lib.found says
 */
static const char *probes_why(struct mt_tracer *tr, int fd, const char *path)
{
	const char *force = getenv(FORCE_ENV);

	if (tr->conf->module_log)
		return "--module-log times every Node";
	if (force && !strcmp(force, "probes"))
		return FORCE_ENV "=probes";
	if (find(&tr->ag_lib, fd, path))
		return tr->ag_lib.err;
	return NULL;
}

bool mt_autograd_choose(void *ctx, const struct mt_target *pt, int fd,
			const char *path)
{
	struct mt_tracer *tr = ctx;
	struct mt_traced *t = mt_tracer_find(tr, (__u32)pt->pid);
	const char *why;

	if (!t || tr->conf->no_python)
		return false;
	/* a second mapping of the library: the first one's choice holds */
	if (t->autograd)
		return true;
	why = probes_why(tr, fd, path);
	if (!why) {
		t->autograd = calloc(1, sizeof(*t->autograd));
		if (t->autograd)
			t->autograd->path = strdup(path);
		if (!t->autograd || !t->autograd->path) {
			mt_autograd_forget(tr, t);
			why = "out of memory";
		}
	}
	if (why) {
		say(tr, t, "probes", why);
		return false;
	}
	t->autograd->found = tr->ag_lib.found;
	mt_nodeseq_init(&t->autograd->seq, 0);
	t->autograd->seq.from_start = !t->proc.attached;
	/* -p: its loader relocated it long ago; else at its next loads */
	why = place(tr, t);
	if (!why)
		return true;
	/* the attach about to be done places the probes */
	say(tr, t, "probes", why);
	mt_autograd_forget(tr, t);
	return false;
}

const struct mt_event *mt_autograd_event(struct mt_tracer *tr,
					 struct mt_traced *t,
					 const struct mt_event *ev,
					 struct mt_event *copy)
{
	struct mt_autograd *ag = t ? t->autograd : NULL;

	if (!ag)
		return ev;
	if (!ag->placed) {
		mt_autograd_place(tr, t);
		return ev;
	}
	if ((ev->flags & MT_EV_SEQ_CTR) &&
	    mt_nodeseq_put(&ag->seq, ev->seq_thread, ev->seq, ev->stack_id))
		mt_err("pid %d: out of memory for autograd's numbers",
		       t->proc.pid);
	if (!(ev->flags & MT_EV_SEQ_NODE))
		return ev;
	*copy = *ev;
	copy->node_stack = mt_nodeseq_origin(&ag->seq, ev->seq_thread, ev->seq);
	return copy;
}

void mt_autograd_forget(struct mt_tracer *tr, struct mt_traced *t)
{
	__u32 pid = (__u32)t->proc.pid;
	int ret;

	if (!t->autograd)
		return;
	/* a process given its pid later is not read with t's offsets */
	ret = bpf_map__delete_elem(tr->skel->maps.nodetls, &pid, sizeof(pid),
				   0);
	if (ret && ret != -ENOENT)
		mt_err("pid %d: stop reading its autograd TLS: %s", t->proc.pid,
		       strerror(-ret));
	mt_nodeseq_free(&t->autograd->seq);
	free(t->autograd->path);
	free(t->autograd);
	t->autograd = NULL;
}
