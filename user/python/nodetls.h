/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where libtorch_cpu keeps, per thread, the autograd Node the engine
 * evaluates, ATen's sequence counter and the thread's id among those that
 * made Nodes, found by decoding the library's
 * own code (docs/autograd-tls.md), so that an allocation probe can read
 * both from the thread's DTV instead of trapping at every Node.
 */
#ifndef __NODETLS_H
#define __NODETLS_H

#include <stddef.h>
#include <linux/types.h>
#include "memtrace.h" /* struct mt_node_tlsconf: what a probe reads */

/*
 * What the file says, as link-time addresses: each variable is the block
 * of the module whose id is at got[0] of its GOT pair, plus got[1], plus
 * the immediate the code adds (got[1] is 0 for local-dynamic code).
 */
struct mt_node_tls {
	__u64 node_got; /* GOT pair of tls_current_evaluating_node */
	__u64 node_imm;
	__u64 ctr_got; /* GOT pair of at::sequence_number's counter */
	__u64 ctr_imm;
	__u64 tid_got; /* GOT pair of at::RecordFunction's thread id */
	__u64 tid_imm;
	__u32 seq_nr_off; /* Node::sequence_nr_ */
	__u32 thread_id_off; /* Node::thread_id_ */
	/* Node::assign_parent(): its address and file offset, for the bias */
	__u64 fn_vaddr, fn_offset;
};

/*
 * Decode the libtorch_cpu open as fd (name is what messages call it).
 * Returns 0, -ENOEXEC with a message in err when its code is not of a
 * form docs/autograd-tls.md describes (the caller keeps the autograd
 * probes), or -errno with err set.
 */
int mt_node_tls_find_fd(int fd, const char *name, struct mt_node_tls *out,
			char *err, size_t errlen);

/*
 * The probe's view, from the GOT pairs as the target's loader filled them:
 * rd reads len bytes of the target at addr (0, or -errno), and the
 * library is loaded at bias. Returns 0, -EAGAIN while the loader has not
 * filled them (no module id yet), -ENOEXEC when the pairs name
 * different modules or the Node's number or thread id is not where one
 * read of a Node's first MT_NODE_HEAD bytes finds it, or rd's error.
 */
int mt_node_tls_place(const struct mt_node_tls *t, __u64 bias,
		      int (*rd)(void *ctx, __u64 addr, void *buf, size_t len),
		      void *ctx, struct mt_node_tlsconf *c);

#endif /* __NODETLS_H */
