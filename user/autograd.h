/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Backward to module: which nn.Module was running when each autograd Node
 * was made (forward), so that memory a Node's backward takes is put to
 * that module; and a Node's class name from its vtable.
 */
#ifndef __AUTOGRAD_H
#define __AUTOGRAD_H

#include <stddef.h>
#include <linux/types.h>
#include "strpool.h"

struct mt_py;
struct mt_nodes;

/* at most max Nodes remembered; the table starts over when full */
struct mt_nodes *mt_nodes_new(size_t max);
void mt_nodes_free(struct mt_nodes *n);

/* Node node of process pid was made while module (interned) ran */
void mt_nodes_put(struct mt_nodes *n, __u32 pid, __u64 node,
		  const char *module);

/* the module that made node, or NULL */
const char *mt_nodes_module(const struct mt_nodes *n, __u32 pid, __u64 node);

/*
 * The class of a C++ object whose vtable pointer is vt, read from the
 * target's RTTI ("AddmmBackward0"), interned in pool; NULL if unreadable.
 */
const char *mt_node_class(struct mt_nodes *n, struct mt_py *py, __u64 vt,
			  struct mt_strpool *pool);

/* The innermost name of an Itanium-mangled type name: N5torch3FooE -> Foo */
int mt_demangle_last(const char *mangled, char *out, size_t len);

#endif /* __AUTOGRAD_H */
