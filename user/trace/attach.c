// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "lib/err.h"
#include "lib/escape.h"
#include "lib/grow.h"
#include "trace/attach.h"
#include "proc/elfsym.h"
#include "proc/mapfile.h"
#include "trace/umulti.h"
#include "memtrace.skel.h"

#define MAX_NAMES 64
/* "0": perf uprobes even where uprobe_multi links serve (tests, bench) */
#define MULTI_ENV "MEMTRACE_BPF_UPROBE_MULTI"
_Static_assert(MT_COOKIE_SP(MT_F_SP(MT_PROBE_SP_MAX)) == MT_PROBE_SP_MAX,
	       "a probe point's sp must fit its cookie");

/* the probes that name backward's Nodes, where their TLS cannot */
#define AUTOGRAD_FLAGS (MT_F_EDGE | MT_F_SETNODE)

static bool kind_wanted(const struct mt_attacher *a,
			const struct mt_kind_info *ki)
{
	if (ki->flags & (MT_F_MODCALL | MT_F_NODEEVAL | MT_F_NODEOUT))
		return a->module_log;
	if (ki->flags & MT_F_D2H)
		return a->dry_run;
	if (ki->cpu)
		return !a->no_cpu;
	if (ki->lib == MT_LIB_LDSO)
		return true;
	if (ki->lib == MT_LIB_TORCH_CPU)
		return !a->no_python;
	if (ki->lib == MT_LIB_PYTHON)
		return a->trace_exceptions;
	return !a->no_cuda;
}

/* the index of the file probed for every process, or -1 */
static int global_file(const struct mt_attacher *a, __u64 dev, __u64 inode)
{
	for (size_t i = 0; i < a->ngfiles; i++)
		if (a->gfiles[i].dev == dev && a->gfiles[i].inode == inode)
			return (int)i;
	return -1;
}

static int push_link(struct mt_attacher *a, struct bpf_link *l)
{
	if (a->nlinks == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct bpf_link **v = realloc(a->links, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->links = v;
		a->cap = cap;
	}
	a->links[a->nlinks++] = l;
	return 0;
}

/*
 * The entry program a probe's flags ask for: the probes that make no event
 * of their own, and the exception filter, have theirs; every other probe
 * has mt_enter, which follows the rest of the flags.
 */
static struct bpf_program *entry_prog(const struct memtrace_bpf *skel,
				      __u64 flags)
{
	if (flags & MT_F_MODCALL)
		return skel->progs.mt_module_call;
	if (flags & MT_F_NODEEVAL)
		return skel->progs.mt_node_eval;
	if (flags & MT_F_NODEOUT)
		return skel->progs.mt_node_out;
	if (flags & MT_F_D2H)
		return skel->progs.mt_d2h_filter;
	if (flags & MT_F_SETNODE)
		return skel->progs.mt_set_node;
	if (flags & MT_F_EDGE)
		return skel->progs.mt_node_origin;
	if (flags & MT_F_EXC)
		return skel->progs.mt_exc_filter;
	if (flags & MT_F_SETDEV)
		return skel->progs.mt_set_device;
	return skel->progs.mt_enter;
}

static int attach_one(struct mt_attacher *a, struct bpf_program *prog, int pid,
		      const char *file, __u64 offset, __u64 cookie,
		      bool retprobe)
{
	struct bpf_uprobe_opts opts = { .sz = sizeof(opts),
					.bpf_cookie = cookie,
					.retprobe = retprobe };
	struct bpf_link *l;
	int err;

	/* pid -1: every process that maps the file */
	l = bpf_program__attach_uprobe_opts(prog, a->global ? -1 : pid, file,
					    (size_t)offset, &opts);
	if (!l)
		return -errno;
	err = push_link(a, l);
	if (err)
		bpf_link__destroy(l);
	return err;
}

/* a probe attach_fd places: the entry, and where ret the return too */
struct probe {
	const char *name; /* its symbol, for messages */
	__u64 off, cookie;
	struct bpf_program *entry;
	bool ret; /* mt_exit at its return */
};

/* the probes of p, n of them, each through its own perf uprobe */
static int place_each(struct mt_attacher *a, int pid, const struct probe *p,
		      size_t n, const char *file, const char *path, char *err,
		      size_t errlen)
{
	int ret, probes = 0;

	for (size_t i = 0; i < n; i++) {
		/* the return probe first, so no entry waits for a return */
		if (p[i].ret) {
			ret = attach_one(a, a->skel->progs.mt_exit, pid, file,
					 p[i].off, p[i].cookie, true);
			if (ret)
				goto fail;
			probes++;
		}
		ret = attach_one(a, p[i].entry, pid, file, p[i].off,
				 p[i].cookie, false);
		if (ret)
			goto fail;
		probes++;
		continue;
fail:
		snprintf(err, errlen, "attach %s in %s: %s", p[i].name, path,
			 strerror(-ret));
		return ret;
	}
	return probes;
}

/*
 * One uprobe_multi link of prog on the probes of p it serves: where
 * returns, the returns of those that have one (prog is mt_exit); else the entries
 * whose program prog is. Returns the number of probes placed (0: prog
 * serves none), or -errno with err set: the kernel does not say which
 * offset it refused, so err names the link's first symbol and its count.
 */
static int link_multi(struct mt_attacher *a, int pid, struct bpf_program *prog,
		      bool returns, const struct probe *p, size_t n,
		      const char *file, const char *path, char *err,
		      size_t errlen)
{
	__u64 offs[MAX_NAMES], cookies[MAX_NAMES];
	const char *first = NULL;
	__u32 cnt = 0;
	int fd;

	for (size_t i = 0; i < n; i++) {
		if (returns ? !p[i].ret : p[i].entry != prog)
			continue;
		if (!cnt)
			first = p[i].name;
		offs[cnt] = p[i].off;
		cookies[cnt++] = p[i].cookie;
	}
	if (!cnt)
		return 0;
	/* room for the fd before the link: a link made is never lost */
	fd = mt_grow((void **)&a->mfds, &a->mcap, a->nmfds + 1,
		     sizeof(*a->mfds));
	/* pid 0: every process that maps the file */
	if (!fd)
		fd = mt_umulti_link(bpf_program__fd(prog), file, offs, cookies,
				    cnt, returns, a->global ? 0 : pid);
	if (fd < 0) {
		if (cnt > 1)
			snprintf(err, errlen, "attach %s and %u more in %s: %s",
				 first, cnt - 1, path, strerror(-fd));
		else
			snprintf(err, errlen, "attach %s in %s: %s", first,
				 path, strerror(-fd));
		return fd;
	}
	a->mfds[a->nmfds++] = fd;
	return (int)cnt;
}

/*
 * The probes of p, n of them, through one uprobe_multi link per program:
 * a link's close waits once for the probes' handlers, where each perf
 * uprobe's waits for its own (~0.1 s a probe at the tracer's exit)
 */
static int place_multi(struct mt_attacher *a, int pid, const struct probe *p,
		       size_t n, const char *file, const char *path, char *err,
		       size_t errlen)
{
	/* the returns first, so no entry waits for a return */
	int ret, probes = link_multi(a, pid, a->skel->progs.mt_exit, true, p, n,
				     file, path, err, errlen);

	for (size_t i = 0; i < n && probes >= 0; i++) {
		size_t j = 0;

		/* each entry program once, at its first probe */
		while (j < i && p[j].entry != p[i].entry)
			j++;
		if (j < i)
			continue;
		ret = link_multi(a, pid, p[i].entry, false, p, n, file, path,
				 err, errlen);
		probes = ret < 0 ? ret : probes + ret;
	}
	return probes;
}

/*
 * A kind none of whose names the file has, found through the exported
 * wrapper that jumps to it (the probe table's .wrapper) into *sym. Where the
 * wrapper is there but its code leads nowhere we can follow, one line says
 * so and the kind goes unprobed in this file, while the rest of the trace
 * goes on. Returns 0, or -errno with a message in err.
 */
static int resolve_wrapped(int fd, const char *path,
			   const struct mt_kind_info *ki, struct mt_sym *sym,
			   char *err, size_t errlen)
{
	int ret =
		mt_elf_tail_target_fd(fd, path, ki->wrapper, sym, err, errlen);

	if (ret != -ENOEXEC)
		return ret;
	mt_err("%s: %s not probed, no %s events from it", err, ki->syms[0],
	       ki->event);
	return 0;
}

/*
 * Attach every probe of lib to t in the file open as fd, which messages
 * call path; only: just the kinds with one of these flags (0: all). The
 * symbols are read through fd, and the uprobes are placed through
 * /proc/self/fd/FD: the kernel resolves that to fd's own inode, so what
 * is probed is what was read, whatever is at path now. *autograd (may be
 * NULL) is set when the autograd probes are among them.
 */
static int attach_fd(struct mt_attacher *a, struct mt_target *t,
		     enum mt_lib lib, int fd, const char *path, __u64 only,
		     bool *autograd, char *err, size_t errlen)
{
	const char *names[MAX_NAMES];
	unsigned int kind_of[MAX_NAMES];
	struct mt_sym syms[MAX_NAMES];
	struct probe plan[MAX_NAMES] = { 0 }; /* gcc cannot tell np guards it */
	bool found[MT_K_MAX] = { false };
	char file[64];
	size_t n = 0, np = 0;
	int ret;
	/* backward's Nodes read from libtorch_cpu's TLS: no trap at each */
	bool tls = !only && lib == MT_LIB_TORCH_CPU && a->node_tls &&
		   a->node_tls(a->ctx, t, fd, path);

	ret = mt_mapfile_fd_path(fd, file, sizeof(file));
	if (ret) {
		snprintf(err, errlen, "%s: descriptor path too long", path);
		return ret;
	}
	for (unsigned int k = 1; k < MT_K_MAX; k++) {
		const struct mt_kind_info *ki = mt_kind(k);

		if (ki->lib != lib || !kind_wanted(a, ki) ||
		    (only && !(ki->flags & only)) ||
		    (tls && (ki->flags & AUTOGRAD_FLAGS)))
			continue;
		for (int i = 0; i < MT_MAX_SYMS && ki->syms[i]; i++) {
			names[n] = ki->syms[i];
			kind_of[n++] = k;
		}
	}
	ret = mt_elf_resolve_fd(fd, path, names, n, syms, err, errlen);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (syms[i].vaddr)
			found[kind_of[i]] = true;
	for (size_t i = 0; i < n; i++) {
		const struct mt_kind_info *ki = mt_kind(kind_of[i]);

		/* a kind's first name stands for it */
		if (!ki->wrapper || found[kind_of[i]] ||
		    (i && kind_of[i - 1] == kind_of[i]))
			continue;
		ret = resolve_wrapped(fd, path, ki, &syms[i], err, errlen);
		if (ret)
			return ret;
	}

	for (size_t i = 0; i < n; i++) {
		const struct mt_kind_info *ki = mt_kind(kind_of[i]);
		struct probe *p = &plan[np];
		struct mt_probe_point pt;

		if (!syms[i].vaddr ||
		    (ki->fallback_of && found[ki->fallback_of]))
			continue;
		/* a return probe needs the return address at the stack top */
		pt = mt_elf_probe_point(fd, syms[i].offset, syms[i].size,
					ki->retprobe);
		p->name = names[i];
		p->off = syms[i].offset + pt.off;
		p->cookie = kind_of[i] | ki->flags | mt_kind_sample_flags(ki) |
			    MT_F_SP(pt.sp);
		if (kind_of[i] == MT_K_LOADER && t->spawned)
			p->cookie |= MT_F_STOP;
		/* backward's Node comes with the autograd probes, on with Python */
		if (ki->devsrc == MT_DS_THREAD || !a->no_python)
			p->cookie |= MT_F_TVARS;
		p->entry = entry_prog(a->skel, p->cookie);
		p->ret = ki->retprobe;
		if (autograd && (ki->flags & AUTOGRAD_FLAGS))
			*autograd = true;
		np++;
	}
	if (a->multi)
		return place_multi(a, t->pid, plan, np, file, path, err,
				   errlen);
	return place_each(a, t->pid, plan, np, file, path, err, errlen);
}

int mt_attach_lib(struct mt_attacher *a, struct mt_target *t, enum mt_lib lib,
		  const char *path)
{
	char err[512];
	int fd = mt_mapfile_open_path(path, err, sizeof(err));
	int ret;

	if (fd < 0) {
		mt_err("%s", err);
		return fd;
	}
	ret = attach_fd(a, t, lib, fd, path, 0, NULL, err, sizeof(err));
	close(fd);
	if (ret < 0)
		mt_err("%s", err);
	return ret;
}

/* attach_fd for the file t maps at m, opened through the mapping itself */
static int attach_mapping(struct mt_attacher *a, struct mt_target *t,
			  enum mt_lib lib, const struct mt_mapping *m,
			  __u64 only, bool *autograd, char *err, size_t errlen)
{
	int fd = mt_mapfile_open(t->pid, m, err, errlen);
	int ret;

	if (fd < 0)
		return fd;
	ret = attach_fd(a, t, lib, fd, m->path, only, autograd, err, errlen);
	close(fd);
	return ret;
}

/*
 * The autograd probes on the libtorch_cpu t maps at m; once for all
 * where the file is probed for every process (--children, --all): g, its
 * index there, else -1. Returns the number of probes attached, or -errno
 * with err set.
 */
static int autograd_probes(struct mt_attacher *a, struct mt_target *t,
			   const struct mt_mapping *m, int g, char *err,
			   size_t errlen)
{
	bool on = false;
	int ret;

	if (g >= 0 && a->gautograd[g])
		return 0;
	ret = attach_mapping(a, t, MT_LIB_TORCH_CPU, m, AUTOGRAD_FLAGS, &on,
			     err, errlen);
	if (ret >= 0 && g >= 0)
		a->gautograd[g] = on;
	return ret;
}

/*
 * A process found mapping a libtorch_cpu already probed for every
 * process: its backward Nodes are read from its own TLS where they can
 * be, else the file gets the autograd probes, once for all. 0, or -errno
 * with err set.
 */
static int global_torch(struct mt_attacher *a, struct mt_target *t,
			const struct mt_mapping *m, int g, char *err,
			size_t errlen)
{
	int fd, ret = 0;

	if (a->no_python || !a->node_tls)
		return 0;
	fd = mt_mapfile_open(t->pid, m, err, errlen);
	if (fd < 0)
		return fd;
	if (!a->node_tls(a->ctx, t, fd, m->path))
		ret = autograd_probes(a, t, m, g, err, errlen);
	close(fd);
	return ret < 0 ? ret : 0;
}

int mt_attach_autograd(struct mt_attacher *a, struct mt_target *t,
		       const char *path, char *err, size_t errlen)
{
	for (size_t i = 0; i < t->maps.n; i++) {
		const struct mt_mapping *m = &t->maps.v[i];

		if (m->path && !strcmp(m->path, path))
			return autograd_probes(
				a, t, m,
				a->global ? global_file(a, m->dev, m->inode) :
					    -1,
				err, errlen);
	}
	snprintf(err, errlen, "pid %d no longer maps %s", t->pid, path);
	return -ENOENT;
}

int mt_attach_scan(struct mt_attacher *a, struct mt_target *t, char *err,
		   size_t errlen)
{
	int ret, newlibs = 0;

	ret = mt_maps_read(t->pid, &t->maps);
	if (ret) {
		snprintf(err, errlen, "pid %d: cannot read its maps: %s",
			 t->pid, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < t->maps.n; i++) {
		const struct mt_mapping *m = &t->maps.v[i];
		bool autograd = false;
		int lib, g;

		if (!m->path || m->path[0] != '/')
			continue;
		lib = mt_lib_classify(m->path);
		if (lib < 0 || mt_target_has_file(t, m->dev, m->inode) ||
		    (lib == MT_LIB_PYTHON && !a->trace_exceptions))
			continue;
		g = global_file(a, m->dev, m->inode);
		if (t->nfiles < MT_MAX_FILES && g >= 0) {
			/* its probes are on already, for every process */
			t->files[t->nfiles++] =
				(struct mt_file_id){ .dev = m->dev,
						     .inode = m->inode };
			t->libs |= 1u << lib;
			ret = lib == MT_LIB_TORCH_CPU ?
				      global_torch(a, t, m, g, err, errlen) :
				      0;
			if (ret < 0)
				return ret;
			continue;
		}
		if (t->nfiles == MT_MAX_FILES) {
			snprintf(err, errlen,
				 "pid %d maps more than %d of our "
				 "libraries",
				 t->pid, MT_MAX_FILES);
			return -E2BIG;
		}
		ret = attach_mapping(a, t, (enum mt_lib)lib, m, 0, &autograd,
				     err, errlen);
		if (ret < 0)
			return ret;
		t->files[t->nfiles++] =
			(struct mt_file_id){ .dev = m->dev, .inode = m->inode };
		t->libs |= 1u << lib;
		if (a->global && a->ngfiles < MT_MAX_GLOBAL_FILES) {
			a->gautograd[a->ngfiles] = autograd;
			a->gfiles[a->ngfiles++] = t->files[t->nfiles - 1];
		}
		if (a->log) {
			struct mt_esc e = { 0 };

			fprintf(a->log, "# attach pid=%d lib=%s probes=%d\n",
				t->pid, mt_esc(&e, m->path, MT_ESC_FIELD), ret);
		}
		if (a->on_lib)
			a->on_lib(a->ctx, t, m, ret);
		newlibs++;
	}
	return newlibs;
}

/*
 * a->multi, by the switch and the kernel; -v says which, and why not
 * uprobe_multi links
 */
static void choose_multi(struct mt_attacher *a)
{
	const char *env = getenv(MULTI_ENV);
	char why[128];

	if (env && !strcmp(env, "0")) {
		a->multi = false;
		snprintf(why, sizeof(why), "%s=0", MULTI_ENV);
	} else {
		/* pid 0 (a->global) filters nothing: no pid filter fix needed */
		a->multi = mt_umulti_usable(!a->global, why, sizeof(why));
	}
	if (!a->verbose)
		return;
	if (a->multi)
		fprintf(stderr, "memtrace-bpf: uprobes: uprobe_multi links\n");
	else
		fprintf(stderr, "memtrace-bpf: uprobes: perf links (%s)\n",
			why);
}

int mt_attach_choose_progs(struct mt_attacher *a)
{
	struct bpf_program *p;
	int ret = 0;

	choose_multi(a);
	for (p = bpf_object__next_program(a->skel->obj, NULL); p;
	     p = bpf_object__next_program(a->skel->obj, p)) {
		const char *sec = bpf_program__section_name(p);

		if (ret ||
		    (strncmp(sec, "uprobe", 6) && strncmp(sec, "uretprobe", 9)))
			continue;
		ret = bpf_program__set_autoload(p, false);
		/* a uprobe_multi link takes only a program loaded for one */
		if (!ret && a->multi)
			ret = bpf_program__set_expected_attach_type(
				p, (enum bpf_attach_type)MT_UMULTI_ATTACH_TYPE);
	}
	for (unsigned int k = 1; k < MT_K_MAX && !ret; k++) {
		const struct mt_kind_info *ki = mt_kind(k);

		if (!kind_wanted(a, ki))
			continue;
		ret = bpf_program__set_autoload(entry_prog(a->skel, ki->flags),
						true);
		if (!ret && ki->retprobe)
			ret = bpf_program__set_autoload(a->skel->progs.mt_exit,
							true);
	}
	if (ret)
		mt_err("choose the BPF programs: %s", strerror(-ret));
	return ret;
}

void mt_attach_destroy(struct mt_attacher *a)
{
	for (size_t i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	free(a->links);
	a->links = NULL;
	a->nlinks = a->cap = 0;
	/* the last reference: the close removes the link's probes */
	for (size_t i = 0; i < a->nmfds; i++)
		close(a->mfds[i]);
	free(a->mfds);
	a->mfds = NULL;
	a->nmfds = a->mcap = 0;
}
