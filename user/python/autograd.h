/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The class of an autograd Node ("AddmmBackward0"), from the C++ RTTI its
 * vtable points to, cached by vtable. (Which module made a Node is kept by
 * the BPF side: the stack it was made in.)
 */
#ifndef __AUTOGRAD_H
#define __AUTOGRAD_H

#include <stddef.h>
#include <linux/types.h>
#include "lib/strpool.h"

struct mt_py;
struct mt_nodes;

struct mt_nodes *mt_nodes_new(void);
void mt_nodes_free(struct mt_nodes *n);

/*
 * The class of a C++ object whose vtable pointer is vt, read from the
 * target's RTTI ("AddmmBackward0"), interned in pool; NULL if unreadable.
 */
const char *mt_node_class(struct mt_nodes *n, struct mt_py *py, __u64 vt,
			  struct mt_strpool *pool);

/* The innermost name of an Itanium-mangled type name: N5torch3FooE -> Foo */
int mt_demangle_last(const char *mangled, char *out, size_t len);

#endif /* __AUTOGRAD_H */
