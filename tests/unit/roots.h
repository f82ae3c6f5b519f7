/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unit tests that read real PyTorch libraries: the host's and those
 * of the Debian roots scripts/debian-root.sh builds (MT_ROOTS, else its
 * cache). A machine with none of them skips such a test, saying so. The
 * test includes this file after cmocka.h.
 */
#ifndef MT_TEST_ROOTS_H
#define MT_TEST_ROOTS_H

#include <stdlib.h>

/* the folder of the Debian roots */
static inline const char *roots_dir(void)
{
	const char *roots = getenv("MT_ROOTS");

	return roots ? roots : "/var/cache/memtrace-bpf/roots";
}

/* libs libraries were read: none is a skip, said, not a pass */
static inline void roots_skip_if_none(int libs)
{
	if (libs)
		return;
	print_message("skipped: no PyTorch installed or in %s\n", roots_dir());
	skip();
}

#endif /* MT_TEST_ROOTS_H */
