// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "python/autograd.h"
#include "lib/hashing.h"
#include "python/pyproc.h"

#define MAX_CLASSES 4096

struct class_slot {
	__u64 vt;
	const char *name;
};

struct mt_nodes {
	struct class_slot classes[MAX_CLASSES]; /* direct-mapped cache */
};

struct mt_nodes *mt_nodes_new(void)
{
	return calloc(1, sizeof(struct mt_nodes));
}

void mt_nodes_free(struct mt_nodes *n)
{
	free(n);
}

int mt_demangle_last(const char *s, char *out, size_t len)
{
	const char *last = NULL;
	size_t lastlen = 0;
	bool nested = *s == 'N';

	if (nested)
		s++;
	/* <length><identifier> components, up to the closing E */
	while (isdigit((unsigned char)*s)) {
		char *end;
		unsigned long l = strtoul(s, &end, 10);

		if (!l || strnlen(end, l) < l)
			return -EINVAL;
		last = end;
		lastlen = l;
		s = end + l;
		if (!nested)
			break;
	}
	if (!last || (nested && *s != 'E') || lastlen >= len)
		return -EINVAL;
	memcpy(out, last, lastlen);
	out[lastlen] = '\0';
	return 0;
}

const char *mt_node_class(struct mt_nodes *n, struct mt_py *py, __u64 vt,
			  struct mt_strpool *pool)
{
	struct class_slot *c = &n->classes[mt_mix64(vt) % MAX_CLASSES];
	char mangled[256], name[256];
	__u64 ti, nameptr;
	size_t want;

	if (!vt)
		return NULL;
	if (c->vt == vt)
		return c->name;
	/* Itanium ABI: vt[-1] is the type_info, whose second word the name */
	if (mt_py_read(py, vt - 8, &ti, sizeof(ti)) ||
	    mt_py_read(py, ti + 8, &nameptr, sizeof(nameptr)))
		return NULL;
	/* the name may end just before an unmapped page: stop at the page */
	want = 4096 - (nameptr & 4095);
	if (want > sizeof(mangled) - 1)
		want = sizeof(mangled) - 1;
	if (mt_py_read(py, nameptr, mangled, want))
		return NULL;
	mangled[want] = '\0';
	if (mt_demangle_last(mangled, name, sizeof(name)))
		return NULL;
	c->vt = vt;
	c->name = mt_intern(pool, name);
	return c->name;
}
