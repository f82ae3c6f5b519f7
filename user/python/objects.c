// SPDX-License-Identifier: GPL-2.0
/*
 * The target's objects read from outside (process_vm_readv): code objects
 * and their lines, strings, dicts and instance dicts, nn.Module children,
 * type names, and the frames of a thread.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "python/layout.h"
#include "python/line.h"
#include "python/objects.h"
#include "python/pyproc.h"

#define READ_MAX (1u << 20)
#define LINETABLE_MAX (1u << 20)
/* mt_py_warm: the threads and frames a call reads, at most */
#define WARM_THREADS 64
#define WARM_FRAMES 128
/* the line tables a process's code cache keeps, at most, in bytes */
#define CODE_TABLES_BUDGET (1u << 20)
#define DICT_MAX_ENTRIES (1 << 16)
#define LIST_MAX 4096 /* thread states or frames followed */

/* how far under a running module its running child may sit, and how many
 * modules a search may open */
#define CHILD_DEPTH 4
#define CHILD_BUDGET 256

/* Returns 0, -EFAULT for a short read, or process_vm_readv's -errno. */
int mt_py_read_mem(const struct mt_py *py, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr,
				.iov_len = len };
	ssize_t n;

	if (!addr || len > READ_MAX || addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(py->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EFAULT;
}

int mt_py_read(const struct mt_py *py, __u64 addr, void *buf, size_t len)
{
	/* callers only need to know that the bytes are not there */
	return mt_py_read_mem(py, addr, buf, len) ? -EFAULT : 0;
}

/* Append code point cp as UTF-8 if it fits with a NUL after it. */
static bool put_utf8(char *out, size_t cap, size_t *n, __u32 cp)
{
	char b[4];
	size_t k;

	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd; /* a lone surrogate has no UTF-8 */
	if (cp < 0x80) {
		b[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	} else if (cp < 0x110000) {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		k = 4;
	} else {
		return put_utf8(out, cap, n, 0xfffd);
	}
	if (*n + k >= cap)
		return false;
	memcpy(out + *n, b, k);
	*n += k;
	return true;
}

/* Copy a UTF-8 string into len bytes, cut at a character boundary. */
static void copy_utf8(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (!len)
		return;
	if (n >= len) {
		n = len - 1;
		/* back off over continuation bytes to the start of a char */
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * The str object at addr as UTF-8 into out (cap bytes with the NUL; at most
 * MT_PY_NAME_MAX are read). Compact strings only: every identifier and file
 * name CPython makes is one. Returns 0, -EINVAL (not a compact str) or
 * -EFAULT.
 */
static int rd_str(const struct mt_py *py, __u64 addr, char *out, size_t cap)
{
	__u8 hdr[40], data[MT_PY_NAME_MAX * 4];
	__u64 len, off;
	__u32 state, kind;
	size_t n = 0, chars;
	int ret;

	if (!cap)
		return -EINVAL;
	out[0] = '\0';
	/* 40 bytes: within the smallest str object of every version */
	ret = mt_py_read(py, addr, hdr, sizeof(hdr));
	if (ret)
		return ret;
	if (get_u64(hdr, OB_TYPE) != py->unicode_type)
		return -EINVAL;
	len = get_u64(hdr, STR_LENGTH);
	memcpy(&state, hdr + STR_STATE, sizeof(state));
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1))
		return -EINVAL; /* legacy, not compact */
	if ((state >> 6) & 1) {
		kind = 1;
		off = py->lay->str_ascii_data;
	} else {
		off = py->lay->str_compact_data;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	if (cap > MT_PY_NAME_MAX)
		cap = MT_PY_NAME_MAX;
	/* each char takes at least one output byte */
	chars = len < cap - 1 ? (size_t)len : cap - 1;
	if (!chars)
		return 0;
	ret = mt_py_read(py, addr + off, data, chars * kind);
	if (ret)
		return ret;
	for (size_t i = 0; i < chars; i++) {
		__u32 cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			__u16 c;

			memcpy(&c, data + 2 * i, sizeof(c));
			cp = c;
		} else {
			memcpy(&cp, data + 4 * i, sizeof(cp));
		}
		if (!put_utf8(out, cap, &n, cp))
			break;
	}
	out[n] = '\0';
	return 0;
}

/* A NUL-terminated C string (tp_name), read page by page. */
int mt_py_read_cstr(const struct mt_py *py, __u64 addr, char *out, size_t cap)
{
	/* one byte more than is kept: copy_utf8 needs it to cut well */
	char s[MT_PY_NAME_MAX + 1];
	size_t n = 0;

	while (n < MT_PY_NAME_MAX) {
		/* never read across a page we may not be able to read */
		size_t chunk = 4096 - ((addr + n) & 4095);
		int ret;

		if (chunk > MT_PY_NAME_MAX - n)
			chunk = MT_PY_NAME_MAX - n;
		ret = mt_py_read(py, addr + n, s + n, chunk);
		if (ret)
			return ret;
		if (memchr(s + n, '\0', chunk))
			break;
		n += chunk;
	}
	s[MT_PY_NAME_MAX] = '\0';
	copy_utf8(out, cap < MT_PY_NAME_MAX ? cap : MT_PY_NAME_MAX, s);
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

/* ---- code objects ---- */

static void code_fp_read(const struct mt_py *py, const __u8 *hdr,
			 struct code_fp *fp)
{
	const struct layout *lay = py->lay;

	memset(fp, 0, sizeof(*fp));
	fp->type = get_u64(hdr, OB_TYPE);
	fp->filename = get_u64(hdr, lay->co_filename);
	fp->name = get_u64(hdr, lay->co_name);
	fp->qualname = get_u64(hdr, lay->co_qualname);
	fp->linetable = get_u64(hdr, lay->co_linetable);
	fp->argcount = get_s32(hdr, lay->co_argcount);
	fp->flags = get_s32(hdr, lay->co_flags);
	fp->firstlineno = get_s32(hdr, lay->co_firstlineno);
}

/*
 * co_linetable at addr into a new buffer (*tab, *len; the caller frees
 * it), at most max bytes. Returns 0, -EFAULT or -ENOMEM.
 */
static int table_read(const struct mt_py *py, __u64 addr, size_t max,
		      __u8 **tab, size_t *len)
{
	__u8 hdr[BYTES_DATA];
	__u64 size;
	int ret;

	*tab = NULL;
	ret = mt_py_read(py, addr, hdr, sizeof(hdr));
	if (ret)
		return ret;
	size = get_u64(hdr, BYTES_SIZE);
	if (get_u64(hdr, OB_TYPE) != py->bytes_type || size > max)
		return -EFAULT;
	/* malloc(0) may give NULL: one byte more */
	*tab = malloc(size + 1);
	if (!*tab)
		return -ENOMEM;
	ret = mt_py_read(py, addr + BYTES_DATA, *tab, size);
	if (ret) {
		free(*tab);
		*tab = NULL;
		return ret;
	}
	*len = size;
	return 0;
}

static void code_clear(struct mt_py *py, struct code_entry *e)
{
	if (e->table)
		py->table_bytes -= e->table_len;
	free(e->table);
	memset(e, 0, sizeof(*e));
}

/* e filled anew from code's header fp; e is left as it was on failure */
static int code_fill(struct mt_py *py, __u64 code, const struct code_fp *fp,
		     struct code_entry *e)
{
	struct code_entry n = { 0 };
	char name[MT_PY_NAME_MAX];
	int ret;

	if (fp->type != py->code_type)
		return -EINVAL;
	ret = rd_str(py, fp->qualname, n.qualname, sizeof(n.qualname));
	if (!ret)
		ret = rd_str(py, fp->filename, n.file, sizeof(n.file));
	if (ret)
		return ret == -EINVAL ? -EFAULT : ret;
	if (ends_with(n.file, "torch/nn/modules/module.py") &&
	    !rd_str(py, fp->name, name, sizeof(name)))
		n.module_call = !strcmp(name, "_call_impl") ||
				!strcmp(name, "_wrapped_call_impl");
	/*
	 * a long table, one unreadable now, or one past the process's
	 * budget is read at each line asked instead
	 */
	if (py->table_bytes < CODE_TABLES_BUDGET &&
	    table_read(py, fp->linetable, CODE_TABLE_KEEP, &n.table,
		       &n.table_len) == -ENOMEM)
		return -ENOMEM;
	n.code = code;
	n.fp = *fp;
	code_clear(py, e);
	*e = n;
	py->table_bytes += n.table ? n.table_len : 0;
	return 0;
}

static size_t code_set(__u64 code)
{
	/* objects are 16-byte aligned; fold the high bits in */
	__u64 h = (code >> 4) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 56) % CODE_SETS;
}

/*
 * The cache entry of code, filled or refreshed as needed. An entry whose
 * address no longer holds a code object (freed, the target gone) is kept:
 * the events that name it were made while it lived. One that holds
 * another code object now is refilled.
 */
static int code_get(struct mt_py *py, __u64 code, struct code_entry **out)
{
	struct code_entry *set = &py->codes[code_set(code) * CODE_WAYS];
	struct code_entry *e = NULL, *victim = &set[0];
	__u8 hdr[CODE_HDR];
	struct code_fp fp;
	int ret;

	for (size_t i = 0; i < CODE_WAYS; i++) {
		if (set[i].code == code && code) {
			e = &set[i];
			break;
		}
		if (set[i].used < victim->used)
			victim = &set[i];
	}
	ret = mt_py_read(py, code, hdr, sizeof(hdr));
	if (ret && !e)
		return ret;
	if (!ret) {
		code_fp_read(py, hdr, &fp);
		if (!e || memcmp(&fp, &e->fp, sizeof(fp))) {
			ret = code_fill(py, code, &fp, e ? e : victim);
			if (ret && !e)
				return ret;
			if (!e)
				e = victim;
		}
	}
	e->used = ++py->tick;
	*out = e;
	return 0;
}

void mt_py_forget_codes(struct mt_py *py)
{
	for (size_t i = 0; i < CODE_SETS * CODE_WAYS; i++)
		code_clear(py, &py->codes[i]);
}

/* Line of instruction offset addrq, from the code's co_linetable. */
static int code_line(const struct mt_py *py, const struct code_entry *e,
		     __s64 addrq, int *line)
{
	const __u8 *tab = e->table;
	size_t size = e->table_len;
	__u8 *read = NULL;
	int ret;

	if (!tab) {
		ret = table_read(py, e->fp.linetable, LINETABLE_MAX, &read,
				 &size);
		if (ret)
			return ret;
		tab = read;
	}
	if (py->lay->minor == 10)
		*line = mt_pyline_310(tab, size, e->fp.firstlineno, addrq);
	else
		*line = mt_pyline_311(tab, size, e->fp.firstlineno, addrq);
	free(read);
	return 0;
}

int mt_py_frame(struct mt_py *py, __u64 code, __u64 instr, char *qualname,
		size_t qlen, char *file, size_t flen, int *line)
{
	struct code_entry *e;
	__s64 addrq;
	int ret;

	ret = code_get(py, code, &e);
	if (ret)
		return ret;
	copy_utf8(qualname, qlen, e->qualname);
	copy_utf8(file, flen, e->file);
	if (py->lay->minor == 10)
		addrq = 2 * (__s64)(__s32)(__u32)instr; /* an index of u16s */
	else
		addrq = (__s64)(instr - (code + py->lay->co_adaptive));
	*line = -1;
	/* one unit before the start is a frame not yet begun; less is junk */
	if (addrq < -2)
		return 0;
	for (unsigned int i = 0; i < e->nlines; i++) {
		if (e->lines[i].addrq == addrq) {
			*line = e->lines[i].line;
			return 0;
		}
	}
	/* unreadable now (the target exited?): no line, nothing to keep */
	if (code_line(py, e, addrq, line))
		return 0;
	e->lines[e->next_line].addrq = addrq;
	e->lines[e->next_line].line = *line;
	e->next_line = (e->next_line + 1) % CODE_LINES;
	if (e->nlines < CODE_LINES)
		e->nlines++;
	return 0;
}

bool mt_py_is_module_call(struct mt_py *py, __u64 code)
{
	struct code_entry *e;

	return !code_get(py, code, &e) && e->module_call;
}

/*
 * A cell is made by each call and freed as the call returns, and frames
 * are named after the event, when the call may be over: its memory then
 * holds another call's cell (another module) or another object. Only a
 * self the frame holds itself is still what it was at the event.
 */
__u64 mt_py_module_self(struct mt_py *py, __u64 local0)
{
	__u64 type;

	if (!local0 || rd_u64(py, local0 + OB_TYPE, &type) ||
	    type == py->cell_type)
		return 0;
	return local0;
}

/* ---- dicts ---- */

/*
 * A dict's entries: its keys object, and for a split table the array its
 * values are in (values[i] belongs to entry i); values 0 for a combined one.
 */
struct dview {
	__u64 keys, values;
};

/* the entries of a keys object: where they are, how many, how wide */
struct dentries {
	__u64 addr;
	__s64 n;
	size_t size, key_off, value_off;
};

static int dict_entries(const struct mt_py *py, __u64 keys, struct dentries *de)
{
	__u8 hdr[48];
	int ret;

	ret = mt_py_read(py, keys, hdr, sizeof(hdr));
	if (ret)
		return ret;
	if (py->lay->minor == 10) {
		__u64 size = get_u64(hdr, 8);
		size_t width = size <= 0xff	  ? 1 :
			       size <= 0xffff	  ? 2 :
			       size <= 0xffffffff ? 4 :
						    8;

		if (size > DICT_MAX_ENTRIES * 2)
			return -EFAULT;
		de->n = (__s64)get_u64(hdr, 32);
		de->addr = keys + 40 + size * width;
		de->size = 24; /* hash, key, value */
		de->key_off = 8;
		de->value_off = 16;
	} else {
		__u8 log2_index_bytes = hdr[9], kind = hdr[10];

		if (log2_index_bytes > 24 || kind > 2)
			return -EFAULT;
		de->n = (__s64)get_u64(hdr, 24);
		de->addr = keys + 32 + (1ULL << log2_index_bytes);
		/* GENERAL keeps the hash; UNICODE and SPLIT do not */
		de->size = kind == 0 ? 24 : 16;
		de->key_off = kind == 0 ? 8 : 0;
		de->value_off = de->key_off + 8;
	}
	if (de->n < 0 || de->n > DICT_MAX_ENTRIES)
		return -EFAULT;
	return 0;
}

typedef bool (*dict_match_fn)(struct mt_py *py, __u64 key, __u64 value,
			      const void *ctx);

/*
 * The first entry for which match() holds: its key and value. Returns 0,
 * -ENOENT or -EFAULT.
 */
static int dict_find(struct mt_py *py, const struct dview *dv,
		     dict_match_fn match, const void *ctx, __u64 *key,
		     __u64 *value)
{
	enum { CHUNK = 64 };
	__u8 ent[CHUNK * 24];
	__u64 vals[CHUNK];
	struct dentries de;
	int ret;

	ret = dict_entries(py, dv->keys, &de);
	if (ret)
		return ret;
	for (__s64 base = 0; base < de.n; base += CHUNK) {
		size_t n = de.n - base < CHUNK ? (size_t)(de.n - base) : CHUNK;

		ret = mt_py_read(py, de.addr + base * de.size, ent,
				 n * de.size);
		if (!ret && dv->values)
			ret = mt_py_read(py, dv->values + base * 8, vals,
					 n * 8);
		if (ret)
			return ret;
		for (size_t i = 0; i < n; i++) {
			__u64 k = get_u64(ent, i * de.size + de.key_off);
			__u64 v = dv->values ?
					  vals[i] :
					  get_u64(ent,
						  i * de.size + de.value_off);

			/* deleted entries have no key, absent split ones no value */
			if (!k || !v || !match(py, k, v, ctx))
				continue;
			*key = k;
			*value = v;
			return 0;
		}
	}
	return -ENOENT;
}

/* The entries of the dict object at dict, which must be a dict. */
static int dict_view(const struct mt_py *py, __u64 dict, struct dview *dv)
{
	__u8 hdr[48];
	__u64 flags;
	int ret;

	ret = mt_py_read(py, dict, hdr, sizeof(hdr));
	if (!ret)
		ret = rd_u64(py, get_u64(hdr, OB_TYPE) + TP_FLAGS, &flags);
	if (ret)
		return ret;
	if (!(flags & TPF_DICT_SUBCLASS))
		return -ENOENT;
	dv->keys = get_u64(hdr, DICT_KEYS);
	dv->values = get_u64(hdr, DICT_VALUES);
	/* 3.13+ put a capacity/size/embedded/valid header before values[] */
	if (dv->values && py->lay->minor >= 13)
		dv->values += 8;
	return 0;
}

/* The shared keys of a heap type's instances, for their split values. */
static int cached_keys(const struct mt_py *py, __u64 type, __u64 *keys)
{
	int ret = rd_u64(py, type + py->lay->ht_cached_keys, keys);

	if (!ret && !*keys)
		ret = -ENOENT;
	return ret;
}

/* The instance __dict__ of obj, wherever this version keeps it. */
static int instance_dict(const struct mt_py *py, __u64 obj, struct dview *dv)
{
	__u8 type[TYPE_HDR];
	__u64 tp, flags, w;
	__s64 dictoffset;
	unsigned int minor = py->lay->minor;
	int ret;

	ret = rd_u64(py, obj + OB_TYPE, &tp);
	if (!ret)
		ret = mt_py_read(py, tp, type, sizeof(type));
	if (ret)
		return ret;
	flags = get_u64(type, TP_FLAGS);
	dictoffset = (__s64)get_u64(type, TP_DICTOFFSET);
	if (minor >= 11 && (flags & TPF_MANAGED_DICT)) {
		/* the dict (or 3.11's values) pointers sit before the object */
		ret = rd_u64(py, obj - 24, &w);
		if (ret)
			return ret;
		if (minor == 12 && (w & 1)) {
			/* 3.12 tags a values pointer: stored as values - 1 */
			dv->values = w + 1;
			return cached_keys(py, tp, &dv->keys);
		}
		if (w)
			return dict_view(py, w, dv);
		if (minor == 11) {
			ret = rd_u64(py, obj - 32, &dv->values);
			if (!ret && !dv->values)
				ret = -ENOENT;
			return ret ? ret : cached_keys(py, tp, &dv->keys);
		}
		if (minor >= 13 && (flags & TPF_INLINE_VALUES)) {
			__u64 vals = obj + get_u64(type, TP_BASICSIZE);
			__u8 valid;

			/* 3.13+ values live after the object's fixed part */
			ret = mt_py_read(py, vals + 3, &valid, 1);
			if (ret)
				return ret;
			if (!valid)
				return -ENOENT;
			dv->values = vals + 8;
			return cached_keys(py, tp, &dv->keys);
		}
		return -ENOENT;
	}
	if (dictoffset <= 0)
		return -ENOENT; /* none, or after a variable-size part */
	ret = rd_u64(py, obj + dictoffset, &w);
	if (!ret && !w)
		ret = -ENOENT;
	return ret ? ret : dict_view(py, w, dv);
}

static bool str_is(const struct mt_py *py, __u64 str, const char *want)
{
	char s[MT_PY_NAME_MAX];

	return !rd_str(py, str, s, sizeof(s)) && !strcmp(s, want);
}

static bool key_is_modules(struct mt_py *py, __u64 key, __u64 value,
			   const void *ctx)
{
	/* attribute names are interned: one "_modules" object for all */
	if (py->modules_key)
		return key == py->modules_key;
	if (!str_is(py, key, "_modules"))
		return false;
	py->modules_key = key;
	return true;
}

static size_t child_slot(__u64 parent, __u64 child)
{
	__u64 h = ((parent >> 4) ^ (child >> 4) * 31) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 56) % CHILD_SLOTS;
}

/* a module's _modules dict */
static int modules_of(struct mt_py *py, __u64 module, struct dview *dv)
{
	__u64 key, modules;
	int ret;

	ret = instance_dict(py, module, dv);
	if (!ret)
		ret = dict_find(py, dv, key_is_modules, NULL, &key, &modules);
	if (!ret)
		ret = dict_view(py, modules, dv);
	return ret;
}

bool mt_py_is_module(struct mt_py *py, __u64 obj)
{
	struct dview dv;

	return obj && !modules_of(py, obj, &dv);
}

/*
 * Search for a module under another through modules that are not running
 * (a ModuleList or Sequential iterated, not called), depth first.
 */
struct path_search {
	__u64 target;
	int depth, budget;
	char path[MT_PY_NAME_MAX];
};

static bool path_step(struct mt_py *py, __u64 key, __u64 value,
		      const void *ctx);

static int search_under(struct mt_py *py, __u64 module, struct path_search *ps)
{
	struct dview dv;
	__u64 key, value;
	int ret;

	if (ps->budget-- <= 0)
		return -ENOENT;
	ret = modules_of(py, module, &dv);
	if (!ret)
		ret = dict_find(py, &dv, path_step, ps, &key, &value);
	return ret;
}

/* dict_find's test, which descends: true once the target is found */
static bool path_step(struct mt_py *py, __u64 key, __u64 value, const void *ctx)
{
	struct path_search *ps = (struct path_search *)ctx;
	size_t len = strlen(ps->path);
	char name[MT_PY_NAME_MAX];

	if (rd_str(py, key, name, sizeof(name)) ||
	    len + strlen(name) + 2 > sizeof(ps->path))
		return false;
	/* room checked above: dot, name and NUL fit */
	if (len)
		ps->path[len] = '.';
	memcpy(ps->path + len + (len ? 1 : 0), name, strlen(name) + 1);
	if (value == ps->target)
		return true;
	if (ps->depth > 1) {
		ps->depth--;
		if (!search_under(py, value, ps)) {
			ps->depth++;
			return true;
		}
		ps->depth++;
	}
	ps->path[len] = '\0';
	return false;
}

int mt_py_child_name(struct mt_py *py, __u64 parent, __u64 child, char *name,
		     size_t len)
{
	struct child_entry *ce = &py->children[child_slot(parent, child)];
	struct path_search ps = { .target = child,
				  .depth = CHILD_DEPTH,
				  .budget = CHILD_BUDGET };
	int ret;

	if (ce->parent == parent && ce->child == child && parent) {
		copy_utf8(name, len, ce->name);
		return 0;
	}
	ret = search_under(py, parent, &ps);
	if (ret) {
		ce->parent = 0;
		return ret == -EINVAL ? -ENOENT : ret;
	}
	snprintf(ce->name, sizeof(ce->name), "%s", ps.path);
	ce->parent = parent;
	ce->child = child;
	copy_utf8(name, len, ce->name);
	return 0;
}

int mt_py_type_name(struct mt_py *py, __u64 obj, char *name, size_t len)
{
	__u64 tp;
	int ret;

	ret = rd_u64(py, obj + OB_TYPE, &tp);
	return ret ? ret : mt_py_class_name(py, tp, name, len);
}

int mt_py_class_name(struct mt_py *py, __u64 tp, char *name, size_t len)
{
	char s[MT_PY_NAME_MAX];
	__u8 type[TP_FLAGS + 8];
	const char *dot;
	int ret;

	ret = mt_py_read(py, tp, type, sizeof(type));
	if (!ret)
		ret = mt_py_read_cstr(py, get_u64(type, TP_NAME), s, sizeof(s));
	if (ret)
		return ret;
	/* static types are named "module.Name"; heap types just "Name" */
	dot = strrchr(s, '.');
	if (dot && !(get_u64(type, TP_FLAGS) & TPF_HEAPTYPE))
		copy_utf8(name, len, dot + 1);
	else
		copy_utf8(name, len, s);
	return 0;
}

/* ---- threads ---- */

static int read_frame(const struct mt_py *py, __u64 f, struct mt_pyframe *fr)
{
	const struct layout *lay = py->lay;
	int ret;

	ret = rd_u64(py, f + lay->f_code, &fr->code);
	if (!ret)
		ret = rd_u64(py, f + lay->f_instr, &fr->instr);
	if (!ret)
		ret = rd_u64(py, f + lay->f_localsplus, &fr->local0);
	/* as the BPF walker does: 3.14+ tag the references */
	fr->code &= py->conf.ref_mask;
	fr->local0 &= py->conf.ref_mask;
	return ret;
}

/* the frames of thread state ts, innermost first, shims skipped */
static int frames_of(const struct mt_py *py, __u64 ts,
		     struct mt_pyframe *frames, size_t max)
{
	const struct layout *lay = py->lay;
	size_t n = 0;
	__u64 f;
	int ret, i;

	ret = rd_u64(py, ts + lay->ts_frame, &f);
	if (!ret && lay->cframe_cur >= 0 && f)
		ret = rd_u64(py, f + lay->cframe_cur, &f);
	for (i = 0; !ret && f && n < max && i < LIST_MAX; i++) {
		bool shim = false;
		__u8 owner;

		if (lay->owner_cstack_min) {
			ret = mt_py_read(py, f + lay->f_owner, &owner, 1);
			shim = owner >= lay->owner_cstack_min;
		}
		if (!ret && !shim) {
			ret = read_frame(py, f, &frames[n]);
			n += !ret;
		}
		if (!ret)
			ret = rd_u64(py, f + lay->f_back, &f);
	}
	return ret ? ret : (int)n;
}

/* times a walk over the thread states starts again from the head */
#define THREAD_RESTARTS 4

int py_threads_first(const struct mt_py *py, struct py_threads *w)
{
	int ret;

	w->ts = 0;
	w->restarts = 0;
	ret = rd_u64(py, py->runtime + py->lay->rt_interp_head, &w->interp);
	if (!ret)
		ret = rd_u64(py, w->interp + py->lay->is_threads_head, &w->ts);
	return ret;
}

/* a thread state's links, read together */
struct ts_links {
	__u64 prev, next, interp;
};

static_assert(TS_PREV == offsetof(struct ts_links, prev) &&
		      TS_NEXT == offsetof(struct ts_links, next) &&
		      TS_INTERP == offsetof(struct ts_links, interp),
	      "prev, next, interp");

/*
 * A state freed and made again for a new thread is filled (its interp
 * too) before it is linked at the head, and reads meanwhile as the list's
 * end: the next state must point back at the one left, and the end is
 * the end only where the last state is still linked from its prev (or
 * from the head).
 */
int py_threads_next(const struct mt_py *py, struct py_threads *w)
{
	struct ts_links cur, next;
	__u64 back;

	if (!mt_py_read(py, w->ts, &cur, sizeof(cur)) &&
	    cur.interp == w->interp) {
		if (cur.next &&
		    !mt_py_read(py, cur.next, &next, sizeof(next)) &&
		    next.prev == w->ts && next.interp == w->interp) {
			w->ts = cur.next;
			return 0;
		}
		if (!cur.next &&
		    !rd_u64(py,
			    cur.prev ? cur.prev + TS_NEXT :
				       w->interp + py->lay->is_threads_head,
			    &back) &&
		    back == w->ts) {
			w->ts = 0;
			return 0;
		}
	}
	if (++w->restarts > THREAD_RESTARTS)
		return -ESTALE;
	return rd_u64(py, w->interp + py->lay->is_threads_head, &w->ts);
}

int mt_py_thread_frames(struct mt_py *py, __u64 thread_id,
			struct mt_pyframe *frames, size_t max, __u64 *tstate)
{
	struct py_threads w;
	__u64 id = 0;
	int ret, i;

	ret = py_threads_first(py, &w);
	for (i = 0; !ret && w.ts && i < LIST_MAX; i++) {
		ret = rd_u64(py, w.ts + py->lay->ts_thread_id, &id);
		if (ret || id == thread_id)
			break;
		ret = py_threads_next(py, &w);
	}
	if (ret)
		return ret;
	if (!w.ts || id != thread_id)
		return -ESRCH;
	*tstate = w.ts;
	return frames_of(py, w.ts, frames, max);
}

void mt_py_warm(struct mt_py *py)
{
	struct mt_pyframe frames[WARM_FRAMES];
	struct code_entry *e;
	struct py_threads w;
	int n, i;

	if (py_threads_first(py, &w))
		return;
	for (i = 0; w.ts && i < WARM_THREADS; i++) {
		n = frames_of(py, w.ts, frames, WARM_FRAMES);
		for (int k = 0; k < n; k++)
			code_get(py, frames[k].code, &e);
		if (py_threads_next(py, &w))
			return;
	}
}
