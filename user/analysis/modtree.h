/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module tree: nn.Module names as named_modules() gives them
 * (encoder.layers.0.self_attn) rolled up to their parents (encoder.layers.0,
 * encoder.layers, encoder), each node with its own figures (self) and its
 * own plus its descendants' (inclusive), so that a parent's inclusive
 * figure is its self plus its children's inclusive ones.
 */
#ifndef __MODTREE_H
#define __MODTREE_H

#include <stddef.h>
#include <linux/types.h>

#define MT_TREE_VALS 4 /* figures per module */
#define MT_TREE_MAX 16384 /* nodes, parents made for the names included */

/* a module's own figures; names need not be unique (they are added) */
struct mt_tree_in {
	const char *name;
	__u64 v[MT_TREE_VALS];
};

struct mt_tree_node {
	const char *name; /* the full name, owned by the tree */
	int depth; /* 0: a top-level module (no dot in its name) */
	size_t parent; /* index in the tree; SIZE_MAX at the top */
	size_t nkids;
	__u64 self[MT_TREE_VALS], incl[MT_TREE_VALS];
};

/* depth first: each node followed by its subtree, before its next sibling */
struct mt_tree {
	struct mt_tree_node *v;
	size_t n;
	char **names; /* what the nodes' names point into */
	size_t nnames;
};

/*
 * The tree of n modules, siblings by inclusive v[0] then v[1] ...
 * largest first, then by name. 0, -ENOMEM, or -ENOSPC past MT_TREE_MAX
 * nodes (t is then empty).
 */
int mt_tree_build(struct mt_tree *t, const struct mt_tree_in *in, size_t n);
void mt_tree_free(struct mt_tree *t);

#endif /* __MODTREE_H */
