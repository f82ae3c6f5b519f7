/* SPDX-License-Identifier: GPL-2.0 */
/* Finding a target's libraries and attaching our probes to them. */
#ifndef __ATTACH_H
#define __ATTACH_H

#include <stdbool.h>
#include <stdio.h>
#include "event/kinds.h"
#include "proc/target.h"

#define MT_MAX_GLOBAL_FILES 256

struct memtrace_bpf;
struct bpf_link;

struct mt_attacher {
	struct memtrace_bpf *skel;
	struct bpf_link **links; /* perf uprobes, one a probe */
	size_t nlinks, cap;
	/*
	 * multi (chosen by mt_attach_choose_progs): the probes go on through
	 * uprobe_multi links, one per program, file and entry or return,
	 * whose fds mfds holds (trace/umulti.h)
	 */
	bool multi;
	int *mfds;
	size_t nmfds, mcap;
	bool verbose; /* -v: say which of the two the probes use */
	bool no_cpu, no_cuda;
	bool no_python; /* the autograd probes serve the attribution only */
	bool trace_exceptions; /* probe CPython's _PyErr_SetObject */
	bool module_log; /* probe module calls and Node evaluations */
	bool dry_run; /* probe the host's reads of device memory */
	/*
	 * --children, --all: probe whole library files, for every process
	 * mapping them; each file once, whichever process showed it first.
	 */
	bool global;
	struct mt_file_id gfiles[MT_MAX_GLOBAL_FILES];
	/* the file's autograd probes are on, for every process */
	bool gautograd[MT_MAX_GLOBAL_FILES];
	size_t ngfiles;
	FILE *log; /* "# attach" lines; NULL for none */
	/* told of each library attached (a record keeps them); may be NULL */
	void (*on_lib)(void *ctx, const struct mt_target *t,
		       const struct mt_mapping *m, int probes);
	/*
	 * libtorch_cpu, open as fd, is about to be attached for t, or t maps
	 * one probed for every process already: true when backward's Nodes
	 * are read from t's threads' TLS instead of probed (the autograd
	 * probes then stay off); may be NULL
	 */
	bool (*node_tls)(void *ctx, const struct mt_target *t, int fd,
			 const char *path);
	void *ctx;
};

/*
 * Attach every probe of lib to t, for the file at path in our own root: the
 * loader, before the command we start runs it. The libraries a process maps
 * are attached by mt_attach_scan, through the mappings themselves. Returns
 * the number of probes attached, or -errno after mt_err().
 */
int mt_attach_lib(struct mt_attacher *a, struct mt_target *t, enum mt_lib lib,
		  const char *path);

/*
 * Read t's maps and attach to each of our libraries not yet attached, each
 * opened once through /proc/PID/map_files/ and checked against its mapping
 * (proc/mapfile.h), in a container or chroot too. Returns the number of
 * libraries newly attached, or -errno with why in err: a buffer, as a
 * process found exiting (ESRCH) or gone is passed over without a word.
 * A libtorch_cpu probed already for every process (--children, --all) is
 * still shown to node_tls for each process that maps it.
 */
int mt_attach_scan(struct mt_attacher *a, struct mt_target *t, char *err,
		   size_t errlen);

/*
 * The autograd probes that node_tls left off, on the libtorch_cpu t maps
 * at path (its TLS could not be read after all); where that file is
 * probed for every process, once for all. Returns the number of probes
 * attached (0: on already), or -errno with err set.
 */
int mt_attach_autograd(struct mt_attacher *a, struct mt_target *t,
		       const char *path, char *err, size_t errlen);

/*
 * Before the skeleton's load: load only the uprobe programs that a kind
 * the options want attaches (the filters of options not asked for were
 * 0.2 s of the verifier's work at each start), and choose a->multi, for
 * which they are loaded otherwise. MEMTRACE_BPF_UPROBE_MULTI=0 in the
 * environment keeps the perf uprobes (an internal switch, for tests and
 * benchmarks). Returns 0, or -errno after mt_err().
 */
int mt_attach_choose_progs(struct mt_attacher *a);

void mt_attach_destroy(struct mt_attacher *a);

#endif /* __ATTACH_H */
