// SPDX-License-Identifier: GPL-2.0
/*
 * Seed records for fuzz_record, made by the writer itself so that they
 * follow the format as it is: seeds DIR writes DIR/<name>.mtb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/record.h"

static const char *const frames[] = { "train.py:88 step", "model.py:41 forward",
				      "linear.py:114 forward" };

static struct mt_site *site(struct mt_strpool *p, struct mt_sites *s, int i)
{
	const char *fr[3];
	struct mt_site key = {
		.pid = 4121 + (__u32)(i % 2),
		.event = mt_intern(p, i % 3 ? "c10:alloc" : "c10:free"),
		.caller = mt_intern(p, "libtorch_cuda.so"),
		.phase = i % 4 ? mt_intern(p, "forward") : NULL,
		.module = mt_intern(p, "model.fc1"),
		.recompute = i == 2,
		.truncated = i == 3,
		.depth = i % 4,
		.frames = fr,
	};
	bool is_new;

	for (int d = 0; d < 3; d++)
		fr[d] = mt_intern(p, frames[d]);
	return mt_sites_get(s, &key, &is_new);
}

/* nevents over nblocks blocks, the end block if ended */
static int seed(const char *dir, const char *name, int nevents, int nblocks,
		bool ended)
{
	struct mt_strpool *pool = mt_strpool_new(64);
	struct mt_sites *sites = mt_sites_new(4); /* and the overflow site */
	struct mt_rec_end end = { .seconds = 1.5, .lost = 2 };
	struct mt_recorder *w;
	char path[4096], err[256];
	int ret = 0, closed;
	__u64 cut;

	if (!pool || !sites) {
		fprintf(stderr, "seeds: out of memory\n");
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s.mtb", dir, name);
	w = mt_recorder_open(path, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "seeds: %s\n", err);
		ret = -EIO;
		goto out;
	}
	ret = mt_recorder_meta(w, "tool", "memtrace-bpf 0.1.0");
	if (!ret)
		ret = mt_recorder_meta(w, "target", "pid=4121 comm=python3");
	for (int i = 0; !ret && i < nevents; i++) {
		struct mt_event ev = {
			.ts = 1000000 + (__u64)i * 2500,
			.args = { 0x7f0000001000 + (__u64)(i % 5) * 4096, 4096,
				  (__u64)i * 4096, 1 << 20, 1 },
			.ret = i % 7 ? 0 : -2,
			.pid = 4121,
			.tid = 4121 + (__u32)(i % 2),
			.cpu = (__u32)(i % 3),
			.kind = MT_K_C10_REPORT,
			.flags = MT_EV_PY,
			.dev = i % 9 ? 0 : MT_DEV_UNKNOWN,
		};

		snprintf(ev.comm, sizeof(ev.comm), "%s",
			 i % 2 ? "pt_autograd_0" : "python3");
		ret = mt_recorder_event(w, &ev, i % 5 == 0,
					i % 6 ? site(pool, sites, i % 6) :
						NULL);
		if (!ret && nblocks && i % (nevents / nblocks + 1) == 0)
			ret = mt_recorder_flush(w);
	}
	/* killed after its last flush: the end block is cut off again */
	if (!ended && !ret)
		ret = mt_recorder_flush(w);
	cut = mt_recorder_bytes(w);
	closed = mt_recorder_close(w, &end);
	if (!ret)
		ret = closed;
	if (!ret && !ended && truncate(path, (off_t)cut))
		ret = -errno;
	if (ret)
		fprintf(stderr, "seeds: %s: %s\n", path, strerror(-ret));
out:
	mt_sites_free(sites);
	mt_strpool_free(pool);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds DIR\n");
		return 2;
	}
	if (seed(argv[1], "empty", 0, 0, true) ||
	    seed(argv[1], "one", 1, 0, true) ||
	    seed(argv[1], "small", 40, 3, true) ||
	    seed(argv[1], "killed", 40, 4, false) ||
	    seed(argv[1], "larger", 400, 8, true))
		return 1;
	return 0;
}
