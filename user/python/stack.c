// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "lib/hashing.h"
#include "lib/hashtab.h"
#include "memtrace.h"
#include "python/pyproc.h"
#include "python/stack.h"
#include "analysis/sites.h"

#define MAX_CHAIN 32
#define MT_MAX_ROOTS 64
#define NAME_LEN 256

struct entry {
	__u32 pid;
	__u64 id;
	struct mt_pyresolved *res;
};

struct mt_pystacks {
	int fd;
	struct mt_strpool *pool;
	const struct mt_phase_rules *rules;
	mt_modcode_fn on_modcode;
	void *ctx;
	struct entry *slots;
	size_t cap, count, max;
	__u64 known_modcode[MT_MAX_MODCODE * 4]; /* (pid << 48 ^ code) seen */
	size_t nknown;
	struct {
		__u32 pid;
		__u64 module;
		const char *name; /* interned */
	} roots[MT_MAX_ROOTS]; /* each process's outermost module in forward */
};

static __u64 hash_of(__u32 pid, __u64 id)
{
	return mt_mix64(id ^ ((__u64)pid << 32));
}

/* the table's accessors for lib/hashtab.h: tab is the slot array */
static bool slot_used(const void *tab, size_t i)
{
	return ((const struct entry *)tab)[i].res;
}

/* key: an entry with the pid and stack id looked for */
static bool slot_match(const void *tab, size_t i, const void *key)
{
	const struct entry *e = (const struct entry *)tab + i, *k = key;

	return e->pid == k->pid && e->id == k->id;
}

struct mt_pystacks *mt_pystacks_new(int stacks_fd, size_t max,
				    struct mt_strpool *pool,
				    const struct mt_phase_rules *rules,
				    mt_modcode_fn on_modcode, void *ctx)
{
	struct mt_pystacks *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->fd = stacks_fd;
	ps->pool = pool;
	ps->rules = rules;
	ps->on_modcode = on_modcode;
	ps->ctx = ctx;
	ps->max = max;
	/* the table grows with its stacks: a small one stays in the cache */
	ps->cap = mt_table_cap(max) < MT_HASH_MIN_CAP ? mt_table_cap(max) :
							MT_HASH_MIN_CAP;
	ps->slots = calloc(ps->cap, sizeof(*ps->slots));
	if (!ps->slots) {
		free(ps);
		return NULL;
	}
	return ps;
}

/* twice the slots, up to what max needs: 0, or -1 (full size, or no memory) */
static int grow(struct mt_pystacks *ps)
{
	size_t cap = ps->cap * 2;
	struct entry *slots;

	if (ps->cap >= mt_table_cap(ps->max))
		return -1;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t k = 0; k < ps->cap; k++) {
		const struct entry *e = &ps->slots[k];

		if (e->res)
			slots[mt_probe(slots, cap - 1, hash_of(e->pid, e->id),
				       slot_used, NULL, NULL)] = *e;
	}
	free(ps->slots);
	ps->slots = slots;
	ps->cap = cap;
	return 0;
}

static void clear(struct mt_pystacks *ps)
{
	for (size_t i = 0; i < ps->cap; i++) {
		free(ps->slots[i].res);
		ps->slots[i] = (struct entry){ 0 };
	}
	ps->count = 0;
}

void mt_pystacks_forget(struct mt_pystacks *ps, __u32 pid)
{
	struct entry *slots = calloc(ps->cap, sizeof(*slots));
	size_t n = 0;

	for (int i = 0; i < MT_MAX_ROOTS; i++)
		if (ps->roots[i].pid == pid) {
			ps->roots[i].module = 0;
			ps->roots[i].name = NULL;
		}
	for (size_t i = 0; i < ps->nknown; i++)
		if (ps->known_modcode[i] >> 48 != (__u16)pid)
			ps->known_modcode[n++] = ps->known_modcode[i];
	ps->nknown = n;
	/* no memory for the others' entries: the cache starts over */
	if (!slots) {
		clear(ps);
		return;
	}
	n = 0;
	for (size_t i = 0; i < ps->cap; i++) {
		const struct entry *e = &ps->slots[i];

		if (!e->res)
			continue;
		if (e->pid == pid) {
			free(e->res);
			continue;
		}
		slots[mt_probe(slots, ps->cap - 1, hash_of(e->pid, e->id),
			       slot_used, NULL, NULL)] = *e;
		n++;
	}
	free(ps->slots);
	ps->slots = slots;
	ps->count = n;
}

void mt_pystacks_free(struct mt_pystacks *ps)
{
	if (!ps)
		return;
	clear(ps);
	free(ps->slots);
	free(ps);
}

const char *mt_short_file(const char *file)
{
	static const char *const roots[] = { "/site-packages/",
					     "/dist-packages/" };

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *s = strstr(file, roots[i]);

		if (s)
			return s + strlen(roots[i]);
	}
	return file;
}

const char *mt_phase_of_thread(const char *comm)
{
	/* PyTorch's autograd engine names its device threads so (2.4+) */
	return strncmp(comm, "pt_autograd_", 12) ? NULL : "backward";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

enum phase_rank { PH_OTHER, PH_FORWARD, PH_OPTIMIZER, PH_BACKWARD };

/* what one frame says of the phase; the strongest frame wins */
static enum phase_rank frame_phase(const char *qual, const char *file)
{
	if (ends_with(file, "torch/autograd/__init__.py") &&
	    (!strcmp(qual, "backward") || !strcmp(qual, "grad")))
		return PH_BACKWARD;
	if (!strcmp(qual, "Tensor.backward"))
		return PH_BACKWARD;
	if (strstr(file, "torch/optim/"))
		return PH_OPTIMIZER;
	return PH_OTHER;
}

static void note_modcode(struct mt_pystacks *ps, __u32 pid, __u64 code)
{
	__u64 key = ((__u64)pid << 48) ^ code;

	for (size_t i = 0; i < ps->nknown; i++)
		if (ps->known_modcode[i] == key)
			return;
	if (ps->nknown == sizeof(ps->known_modcode) / sizeof(__u64))
		return;
	ps->known_modcode[ps->nknown++] = key;
	if (ps->on_modcode)
		ps->on_modcode(ps->ctx, pid, code);
}

static int root_slot(struct mt_pystacks *ps, __u32 pid)
{
	for (int i = 0; i < MT_MAX_ROOTS; i++) {
		if (ps->roots[i].pid == pid || !ps->roots[i].pid) {
			ps->roots[i].pid = pid;
			return i;
		}
	}
	return -1;
}

static __u64 *root_of(struct mt_pystacks *ps, __u32 pid)
{
	int i = root_slot(ps, pid);

	return i < 0 ? NULL : &ps->roots[i].module;
}

/* the root's name: --root-name, or its class */
static const char *name_root(struct mt_pystacks *ps, struct mt_py *py,
			     __u32 pid, __u64 module)
{
	int i = root_slot(ps, pid);
	char name[NAME_LEN];

	if (i >= 0 && ps->roots[i].name)
		return ps->roots[i].name;
	if (ps->rules->root_name)
		snprintf(name, sizeof(name), "%s", ps->rules->root_name);
	else if (mt_py_type_name(py, module, name, sizeof(name)))
		snprintf(name, sizeof(name), "?");
	if (i < 0)
		return mt_intern(ps->pool, name);
	ps->roots[i].name = mt_intern(ps->pool, name);
	return ps->roots[i].name;
}

const char *mt_pystacks_root(struct mt_pystacks *ps, __u32 pid)
{
	for (int i = 0; i < MT_MAX_ROOTS && ps->roots[i].pid; i++)
		if (ps->roots[i].pid == pid)
			return ps->roots[i].name;
	return NULL;
}

static void append(char *path, size_t size, size_t *len, const char *name)
{
	int w = snprintf(path + *len, size - *len, "%s%s", *len ? "." : "",
			 name);

	if (w > 0 && (size_t)w < size - *len)
		*len += (size_t)w;
}

/*
 * The module path, as named_modules() spells it, of the innermost of the
 * running modules in chain (outermost first).
 */
static const char *module_name(struct mt_pystacks *ps, struct mt_py *py,
			       __u32 pid, const __u64 *chain, int n,
			       bool forward)
{
	char path[1024], name[NAME_LEN], full[1024 + NAME_LEN + 2];
	__u64 *root = root_of(ps, pid);
	size_t len = 0;
	int from = 0; /* the path is relative to chain[from] */

	if (!n)
		return mt_intern(ps->pool, "-");
	path[0] = '\0';
	if (root && forward && !*root) {
		*root = chain[0];
		name_root(ps, py, pid, chain[0]);
	}
	/* run without its parents (recomputed in backward): from the root */
	if (root && *root && *root != chain[0] &&
	    !mt_py_child_name(py, *root, chain[0], name, sizeof(name)))
		append(path, sizeof(path), &len, name);
	for (int i = 1; i < n; i++) {
		if (mt_py_child_name(py, chain[i - 1], chain[i], name,
				     sizeof(name))) {
			/* not its caller's child: start again from it */
			len = 0;
			path[0] = '\0';
			from = i;
			continue;
		}
		append(path, sizeof(path), &len, name);
	}
	if (len && !from)
		return mt_intern(ps->pool, path);
	/* the root is named by its class, or --root-name */
	if (root && chain[from] == *root)
		snprintf(name, sizeof(name), "%s",
			 name_root(ps, py, pid, chain[from]));
	else if (mt_py_type_name(py, chain[from], name, sizeof(name)))
		snprintf(name, sizeof(name), "?");
	if (!len)
		return mt_intern(ps->pool, name);
	snprintf(full, sizeof(full), "%s.%s", name, path);
	return mt_intern(ps->pool, full);
}

/* an object that is no longer there to read (0 is none) */
static bool unreadable(struct mt_py *py, __u64 addr)
{
	__u64 v;

	return addr && mt_py_read(py, addr, &v, sizeof(v));
}

static struct mt_pyresolved *resolve(struct mt_pystacks *ps, struct mt_py *py,
				     __u32 pid, const struct mt_pystack *st,
				     bool truncated)
{
	char qual[NAME_LEN], file[512], buf[NAME_LEN + 600];
	__u64 chain[MAX_CHAIN];
	enum phase_rank best = PH_OTHER, rank;
	const char *user_phase = NULL;
	struct mt_pyresolved *r;
	int depth = (int)st->depth, nchain = 0, line;

	if (depth > MT_MAX_FRAMES)
		depth = MT_MAX_FRAMES;
	r = calloc(1, sizeof(*r) + (size_t)depth * sizeof(r->frames[0]));
	if (!r)
		return NULL;
	r->depth = depth;
	r->truncated = truncated;
	for (int i = 0; i < depth; i++) {
		const struct mt_pyframe *f = &st->frames[i];
		const char *s;

		if (mt_py_frame(py, f->code, f->instr, qual, sizeof(qual), file,
				sizeof(file), &line)) {
			snprintf(buf, sizeof(buf), "[unknown] (code 0x%llx)",
				 (unsigned long long)f->code);
			r->frames[i] = mt_intern(ps->pool, buf);
			r->unread = true;
			continue;
		}
		snprintf(buf, sizeof(buf), "%s (%s:%d)", qual,
			 mt_short_file(file), line);
		s = mt_intern(ps->pool, buf);
		r->frames[i] = s ? s : "?";
		for (int k = 0; k < ps->rules->nuser && !user_phase; k++)
			if (!strcmp(qual, ps->rules->user[k].qualname))
				user_phase = ps->rules->user[k].name;
		rank = frame_phase(qual, file);
		if (rank > best)
			best = rank;
	}
	/* module frames, outermost first; one module may own two frames */
	for (int i = depth - 1; i >= 0 && nchain < MAX_CHAIN; i--) {
		__u64 self;

		if (!mt_py_is_module_call(py, st->frames[i].code))
			continue;
		self = mt_py_module_self(py, st->frames[i].local0);
		/* the module call's self is gone with the process */
		if (!self && unreadable(py, st->frames[i].local0))
			r->unread = true;
		/* a frame caught before self is stored holds something else */
		if (!self || !mt_py_is_module(py, self))
			continue;
		/*
		 * Only a frame whose self is used joins the stack hash: a
		 * cell's address (torch 2.x _call_impl) changes every call.
		 */
		note_modcode(ps, pid, st->frames[i].code);
		if (!nchain || chain[nchain - 1] != self)
			chain[nchain++] = self;
	}
	if (nchain && best < PH_FORWARD)
		best = PH_FORWARD;
	r->module = module_name(ps, py, pid, chain, nchain, best == PH_FORWARD);
	if (user_phase)
		r->phase = user_phase;
	else
		r->phase = best == PH_BACKWARD	? "backward" :
			   best == PH_OPTIMIZER ? "optimizer" :
			   best == PH_FORWARD	? "forward" :
						  "other";
	if (!r->module)
		r->module = "-";
	r->frames_hash = mt_frames_hash(r->frames, depth);
	return r;
}

const struct mt_pyresolved *mt_pystacks_get(struct mt_pystacks *ps,
					    struct mt_py *py, __u32 pid,
					    __u64 stack_id, bool truncated)
{
	struct entry key = { .pid = pid, .id = stack_id };
	__u64 h = hash_of(pid, stack_id);
	size_t i = mt_probe(ps->slots, ps->cap - 1, h, slot_used, slot_match,
			    &key);
	struct mt_pystack st;
	struct mt_pyresolved *r;

	if (ps->slots[i].res)
		return ps->slots[i].res;
	/* left in the map: BPF finds it there and need not store it again */
	if (bpf_map_lookup_elem(ps->fd, &stack_id, &st))
		return NULL;
	r = resolve(ps, py, pid, &st, truncated);
	if (!r)
		return NULL;
	/* at half load: a larger table, or else a new start */
	if (ps->count >= ps->max || (2 * (ps->count + 1) > ps->cap && grow(ps)))
		clear(ps);
	i = mt_probe(ps->slots, ps->cap - 1, h, slot_used, NULL, NULL);
	ps->slots[i] = (struct entry){ .pid = pid, .id = stack_id, .res = r };
	ps->count++;
	return r;
}
