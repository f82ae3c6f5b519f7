// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/modtree.h"
#include "lib/grow.h"

/* names collected before duplicates go: a name and its prefixes */
#define MAX_NAMES (MT_TREE_MAX * 4)

struct build {
	char **names;
	size_t n, cap;
	struct mt_tree_node *nodes; /* by name, as names */
	size_t *order; /* nodes by parent, then siblings' order */
};

static int add_name(struct build *b, const char *s, size_t len)
{
	if (b->n == MAX_NAMES)
		return -ENOSPC;
	if (mt_grow((void **)&b->names, &b->cap, b->n + 1, sizeof(char *)))
		return -ENOMEM;
	b->names[b->n] = strndup(s, len);
	if (!b->names[b->n])
		return -ENOMEM;
	b->n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the index of name in the sorted names; n when absent */
static size_t find(const struct build *b, const char *name)
{
	char *const *p =
		bsearch(&name, b->names, b->n, sizeof(char *), by_name);

	return p ? (size_t)(p - b->names) : b->n;
}

/* indices into nodes (the context), by parent, then siblings' order */
static int by_parent_then_size(const void *pa, const void *pb, void *nodes)
{
	const struct mt_tree_node *v = nodes;
	const struct mt_tree_node *x = &v[*(const size_t *)pa];
	const struct mt_tree_node *y = &v[*(const size_t *)pb];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	for (int k = 0; k < MT_TREE_VALS; k++)
		if (x->incl[k] != y->incl[k])
			return x->incl[k] > y->incl[k] ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void free_build(struct build *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->names[i]);
	free(b->names);
	free(b->nodes);
	free(b->order);
}

/* every name and every prefix of it before a dot, sorted, once each */
static int collect(struct build *b, const struct mt_tree_in *in, size_t n)
{
	size_t k = 0;
	int ret;

	for (size_t i = 0; i < n; i++) {
		const char *name = in[i].name ? in[i].name : "-";

		for (const char *d = strchr(name, '.'); d;
		     d = strchr(d + 1, '.'))
			if ((ret = add_name(b, name, (size_t)(d - name))))
				return ret;
		if ((ret = add_name(b, name, strlen(name))))
			return ret;
	}
	if (b->n)
		qsort(b->names, b->n, sizeof(char *), by_name);
	for (size_t i = 0; i < b->n; i++) {
		if (k && !strcmp(b->names[k - 1], b->names[i])) {
			free(b->names[i]);
			continue;
		}
		b->names[k++] = b->names[i];
	}
	b->n = k;
	return b->n > MT_TREE_MAX ? -ENOSPC : 0;
}

/* parents, depths and inclusive figures of the nodes (sorted by name) */
static void roll_up(struct build *b)
{
	int max_depth = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct mt_tree_node *x = &b->nodes[i];
		const char *dot = strrchr(x->name, '.');

		x->parent = SIZE_MAX;
		if (dot) {
			char *prefix =
				strndup(x->name, (size_t)(dot - x->name));

			/* no memory for the key: a top-level node */
			if (prefix) {
				size_t p = find(b, prefix);

				x->parent = p < b->n ? p : SIZE_MAX;
				free(prefix);
			}
		}
		memcpy(x->incl, x->self, sizeof(x->incl));
	}
	/* depth: the parent's plus one; parents sort before their children */
	for (size_t i = 0; i < b->n; i++) {
		struct mt_tree_node *x = &b->nodes[i];

		x->depth = x->parent == SIZE_MAX ?
				   0 :
				   b->nodes[x->parent].depth + 1;
		if (x->depth > max_depth)
			max_depth = x->depth;
	}
	/* deepest first, so that a child's inclusive figure is complete */
	for (int d = max_depth; d > 0; d--)
		for (size_t i = 0; i < b->n; i++) {
			struct mt_tree_node *x = &b->nodes[i], *p;

			if (x->depth != d)
				continue;
			p = &b->nodes[x->parent];
			p->nkids++;
			for (int k = 0; k < MT_TREE_VALS; k++)
				p->incl[k] += x->incl[k];
		}
}

/* the nodes depth first into t, siblings in the order of b->order */
static int walk(struct build *b, struct mt_tree *t)
{
	size_t *from = calloc(b->n + 2, sizeof(*from));
	/* the path from the top: node, its place in t, its next child */
	size_t *node = calloc(b->n + 1, sizeof(*node));
	size_t *pos = calloc(b->n + 1, sizeof(*pos));
	size_t *next = calloc(b->n + 1, sizeof(*next));
	size_t top = 0, j = 0;
	int ret = -ENOMEM;

	t->v = calloc(b->n ? b->n : 1, sizeof(*t->v));
	if (!from || !node || !pos || !next || !t->v)
		goto out;
	/* children of node p (the top: p = n) are order[from[p], from[p+1]) */
	for (size_t p = 0; p <= b->n; p++) {
		while (j < b->n) {
			size_t q = b->nodes[b->order[j]].parent;

			if ((q == SIZE_MAX ? b->n : q) != p)
				break;
			j++;
		}
		from[p + 1] = j;
	}
	node[0] = b->n;
	pos[0] = SIZE_MAX;
	next[0] = from[b->n];
	/* each node is placed once: n steps down, n back up */
	while (next[top] < from[node[top] + 1] || top) {
		size_t child;

		if (next[top] == from[node[top] + 1]) {
			top--;
			continue;
		}
		child = b->order[next[top]++];
		t->v[t->n] = b->nodes[child];
		t->v[t->n].parent = pos[top];
		top++;
		node[top] = child;
		pos[top] = t->n++;
		next[top] = from[child];
	}
	ret = 0;
out:
	free(from);
	free(node);
	free(pos);
	free(next);
	return ret;
}

int mt_tree_build(struct mt_tree *t, const struct mt_tree_in *in, size_t n)
{
	struct build b = { 0 };
	int ret;

	memset(t, 0, sizeof(*t));
	ret = collect(&b, in, n);
	if (ret)
		goto fail;
	b.nodes = calloc(b.n ? b.n : 1, sizeof(*b.nodes));
	b.order = calloc(b.n ? b.n : 1, sizeof(*b.order));
	ret = -ENOMEM;
	if (!b.nodes || !b.order)
		goto fail;
	for (size_t i = 0; i < b.n; i++) {
		b.nodes[i].name = b.names[i];
		b.order[i] = i;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = find(&b, in[i].name ? in[i].name : "-");

		for (int v = 0; v < MT_TREE_VALS; v++)
			b.nodes[k].self[v] += in[i].v[v];
	}
	roll_up(&b);
	qsort_r(b.order, b.n, sizeof(*b.order), by_parent_then_size, b.nodes);
	ret = walk(&b, t);
	if (ret)
		goto fail;
	/* the names stay with the tree, the rest goes */
	t->names = b.names;
	t->nnames = b.n;
	free(b.nodes);
	free(b.order);
	return 0;
fail:
	free(t->v);
	t->v = NULL;
	t->n = 0;
	free_build(&b);
	return ret;
}

void mt_tree_free(struct mt_tree *t)
{
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->v);
	memset(t, 0, sizeof(*t));
}
