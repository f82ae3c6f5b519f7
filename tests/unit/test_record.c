// SPDX-License-Identifier: GPL-2.0
/* user/record/record.c: the binary record, written, read back, cut and damaged. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "record/record.h"

#define NAME_MAX_STRINGS 4096
#define NAME_MAX_SITES 4096

/* a temporary file name, removed by the test that made it */
static void tmp_path(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/test_record.XXXXXX", dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(fclose(f), 0);
	*len = (size_t)n;
	return p;
}

/* the writer's side: sites made the way the tracer makes them */
struct wside {
	struct mt_strpool *pool;
	struct mt_sites *sites;
};

static struct wside wside_new(size_t max_sites)
{
	struct wside s = {
		.pool = mt_strpool_new(NAME_MAX_STRINGS),
		.sites = mt_sites_new(max_sites),
	};

	assert_non_null(s.pool);
	assert_non_null(s.sites);
	return s;
}

static void wside_free(struct wside *s)
{
	mt_sites_free(s->sites);
	mt_strpool_free(s->pool);
}

static const char *in(struct mt_strpool *p, const char *s)
{
	const char *r = s ? mt_intern(p, s) : NULL;

	assert_true(!s || r);
	return r;
}

static struct mt_site *site_of(struct wside *ws, __u32 pid, const char *event,
			       const char *phase, const char *module, int depth,
			       const char *const *frames)
{
	const char *fr[MT_MAX_FRAMES];
	struct mt_site key = {
		.pid = pid,
		.event = in(ws->pool, event),
		.caller = in(ws->pool, "libtorch_cuda.so"),
		.phase = in(ws->pool, phase),
		.module = in(ws->pool, module),
		.node = in(ws->pool, phase && !strcmp(phase, "backward") ?
					     "MmBackward0" :
					     NULL),
		.recompute = depth == 3,
		.truncated = depth == MT_MAX_FRAMES,
		.depth = depth,
		.frames = fr,
	};
	bool is_new;

	for (int i = 0; i < depth; i++)
		fr[i] = in(ws->pool, frames[i % 4]);
	return mt_sites_get(ws->sites, &key, &is_new);
}

/* varied events: every kept field moves, some backwards */
static void make_event(unsigned int i, struct mt_event *ev, bool *dd0)
{
	static const char *const comms[] = { "python3", "pt_autograd_0", "",
					     "a-fifteen-char-" };

	memset(ev, 0, sizeof(*ev));
	ev->ts = 1000000000ULL + i * 1500ULL - (i % 7 == 3 ? 2000 : 0);
	for (int a = 0; a < MT_NARGS; a++)
		ev->args[a] = (i % 5 == (unsigned int)a) ?
				      0x7f0000000000ULL + i * 512ULL :
				      (__u64)a * 1000 + (i % 3);
	ev->args[4] = i % 11 ? ev->args[4] : UINT64_MAX - i;
	ev->out = i % 4 ? 0 : 0x7fab00001000ULL + i;
	ev->ret = i % 9 ? 0 : -(__s64)i - 1;
	ev->caller = 0xdeadbeef; /* not kept */
	ev->pid = 4121 + (i % 13 == 0);
	ev->tid = ev->pid + (i % 3);
	ev->cpu = i % 6;
	ev->kind = (__u16)(1 + i % (MT_K_MAX - 1));
	ev->flags = (__u16)(i % 8 ? MT_EV_PY : MT_EV_RET | MT_EV_OUT);
	ev->dev = i % 10 == 0 ? MT_DEV_UNKNOWN : (__s32)(i % 2);
	strcpy(ev->comm, comms[i % 4]);
	ev->stack_id = 77; /* not kept */
	ev->node = 1;
	ev->node_vt = 2;
	ev->node_stack = 3;
	*dd0 = i % 17 < 8;
}

static void check_event(const struct mt_rec_item *it, const struct mt_event *w,
			bool dd0)
{
	const struct mt_event *r = &it->ev;

	assert_int_equal(r->ts, w->ts);
	for (int a = 0; a < MT_NARGS; a++)
		assert_int_equal(r->args[a], w->args[a]);
	assert_int_equal(r->out, w->out);
	assert_int_equal(r->ret, w->ret);
	assert_int_equal(r->pid, w->pid);
	assert_int_equal(r->tid, w->tid);
	assert_int_equal(r->cpu, w->cpu);
	assert_int_equal(r->kind, w->kind);
	assert_int_equal(r->flags, w->flags);
	assert_int_equal(r->dev, w->dev);
	assert_memory_equal(r->comm, w->comm, MT_COMM_LEN);
	assert_int_equal(it->default_dev0, dd0);
	/* what the record does not keep reads as zero */
	assert_int_equal(r->caller, 0);
	assert_int_equal(r->stack_id, 0);
	assert_int_equal(r->node, 0);
	assert_int_equal(r->node_vt, 0);
	assert_int_equal(r->node_stack, 0);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* a read site equals the written one, its strings from the reader's pool */
static void check_site(const struct mt_site *r, const struct mt_site *w,
		       struct mt_strpool *rpool)
{
	if (!w) {
		assert_null(r);
		return;
	}
	assert_non_null(r);
	assert_int_equal(r->pid, w->pid);
	assert_true(same_str(r->event, w->event));
	assert_true(same_str(r->caller, w->caller));
	assert_true(same_str(r->phase, w->phase));
	assert_true(same_str(r->module, w->module));
	assert_true(same_str(r->node, w->node));
	assert_true(!r->event || r->event == mt_intern(rpool, r->event));
	assert_int_equal(r->recompute, w->recompute);
	assert_int_equal(r->truncated, w->truncated);
	assert_int_equal(r->depth, w->depth);
	for (int i = 0; i < w->depth; i++) {
		assert_true(same_str(r->frames[i], w->frames[i]));
		assert_true(!r->frames[i] ||
			    r->frames[i] == mt_intern(rpool, r->frames[i]));
	}
}

#define RT_EVENTS 3000

static const char *const frames[] = { "train.py:88 step", "model.py:41 forward",
				      NULL, "linear.py:114 forward" };

/*
 * A record of nevents events over several flushes at path, sites[] the
 * site of each. ws's sites table holds 6 (wside_new(6)), so the later
 * sites share its overflow site (id 0); every 19th event has no site.
 */
static void write_record(char *path, size_t len, struct wside *ws,
			 struct mt_site **sites, unsigned int nevents)
{
	/* stacks_lost: a 6-byte varint, and the most 12.5 s can lose */
	struct mt_rec_end end = { .seconds = 12.5,
				  .lost = 3,
				  .unseen = { .children = 3,
					      .first_child = 4242,
					      .stacks_lost = 612500000000ULL,
					      .stacks_early = 24,
					      .nodes = 9,
					      .node_bytes = 15ULL << 30 } };
	struct mt_recorder *w;
	struct mt_site *pool[9];
	char err[256];

	tmp_path(path, len);
	w = mt_recorder_open(path, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(mt_recorder_bytes(w), 16);
	assert_int_equal(mt_recorder_meta(w, "tool", "memtrace-bpf 0.1.0"), 0);
	assert_int_equal(mt_recorder_meta(w, "target",
					  "pid=4121 comm=python3 cmdline="
					  "python3 train.py --lr 3e-4"),
			 0);
	assert_int_equal(mt_recorder_meta(w, "empty", ""), 0);
	pool[0] = site_of(ws, 4121, "c10:alloc", "forward", "model.fc1", 2,
			  frames);
	pool[1] = site_of(ws, 4121, "c10:free", "backward", NULL, 3, frames);
	pool[2] = site_of(ws, 4121, "cudart:cudaMalloc", NULL, NULL, 0, frames);
	pool[3] = site_of(ws, 4122, "c10:alloc", "optimizer", "model",
			  MT_MAX_FRAMES, frames);
	pool[4] = site_of(ws, 4122, NULL, NULL, NULL, 1, frames);
	pool[5] = site_of(ws, 4121, "c10:cpu_alloc", "forward", "model.fc2", 4,
			  frames);
	pool[6] = site_of(ws, 4121, "c10:cpu_free", "forward", "x", 4, frames);
	pool[7] = site_of(ws, 4121, "c10:oom", "forward", "y", 4, frames);
	pool[8] = NULL;
	assert_int_equal(pool[6]->id, 0); /* the overflow site */
	assert_ptr_equal(pool[7], pool[6]);
	for (unsigned int i = 0; i < nevents; i++) {
		struct mt_event ev;
		bool dd0;

		make_event(i, &ev, &dd0);
		/* a repeating pattern, then a jump: predicted and not */
		sites[i] = i % 19 == 0 ? NULL : pool[(i * 7 / 5 + i / 100) % 8];
		assert_int_equal(mt_recorder_event(w, &ev, dd0, sites[i]), 0);
		/* several blocks of events, whatever their number */
		if (i % (nevents / 6) == nevents / 6 - 1)
			assert_int_equal(mt_recorder_flush(w), 0);
		if (i == nevents / 3)
			assert_int_equal(mt_recorder_meta(w, "lib",
							  "libc10.so probes=4"),
					 0);
	}
	assert_int_equal(mt_recorder_events(w), nevents);
	assert_int_equal(mt_recorder_close(w, &end), 0);
}

struct rside {
	struct mt_strpool *pool;
	struct mt_sites *sites;
	struct mt_reader *r;
	char err[256];
};

static bool rside_open(struct rside *rs, FILE *f)
{
	rs->pool = mt_strpool_new(NAME_MAX_STRINGS);
	rs->sites = mt_sites_new(NAME_MAX_SITES);
	assert_non_null(rs->pool);
	assert_non_null(rs->sites);
	rs->err[0] = '\0';
	rs->r = mt_reader_open(f, rs->pool, rs->sites, rs->err,
			       sizeof(rs->err));
	if (!rs->r)
		assert_true(rs->err[0]);
	return rs->r;
}

static void rside_close(struct rside *rs)
{
	mt_reader_close(rs->r);
	mt_sites_free(rs->sites);
	mt_strpool_free(rs->pool);
}

static void test_round_trip(void **state)
{
	static struct mt_site *sites[RT_EVENTS];
	struct mt_site *seen[RT_EVENTS] = { 0 };
	struct wside ws = wside_new(6);
	struct mt_rec_item it;
	struct mt_rec_end end;
	const char *k, *v;
	struct rside rs;
	char path[256];
	unsigned int n = 0;
	FILE *f;
	int ret;

	write_record(path, sizeof(path), &ws, sites, RT_EVENTS);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_true(rside_open(&rs, f));
	/* the metadata before the first event is there at once */
	assert_true(mt_reader_meta(rs.r, 0, &k, &v));
	assert_string_equal(k, "tool");
	assert_string_equal(v, "memtrace-bpf 0.1.0");
	assert_true(mt_reader_meta(rs.r, 1, &k, &v));
	assert_string_equal(k, "target");
	assert_string_equal(v, "pid=4121 comm=python3 cmdline="
			       "python3 train.py --lr 3e-4");
	assert_true(mt_reader_meta(rs.r, 2, &k, &v));
	assert_string_equal(v, "");
	assert_false(mt_reader_meta(rs.r, 3, &k, &v));
	assert_false(mt_reader_end(rs.r, &end));

	while ((ret = mt_reader_next(rs.r, &it, rs.err, sizeof(rs.err))) == 1) {
		struct mt_event ev;
		bool dd0;

		assert_true(n < RT_EVENTS);
		make_event(n, &ev, &dd0);
		check_event(&it, &ev, dd0);
		check_site(it.site, sites[n], rs.pool);
		/* one written site, one read site */
		for (unsigned int j = 0; j < n; j++)
			if (sites[j] == sites[n]) {
				assert_ptr_equal(seen[j], it.site);
				break;
			}
		seen[n++] = it.site;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(n, RT_EVENTS);
	assert_false(mt_reader_truncated(rs.r));
	assert_int_equal(mt_reader_next(rs.r, &it, rs.err, sizeof(rs.err)), 0);
	assert_true(mt_reader_end(rs.r, &end));
	assert_true(end.seconds == 12.5);
	assert_int_equal(end.lost, 3);
	assert_int_equal(end.unseen.stacks_lost, 612500000000ULL);
	assert_int_equal(end.unseen.stacks_early, 24);
	assert_int_equal(end.unseen.nodes, 9);
	assert_int_equal(end.unseen.node_bytes, 15ULL << 30);
	assert_int_equal(end.unseen.children, 3);
	assert_int_equal(end.unseen.first_child, 4242);
	/* metadata that came later, in order */
	assert_true(mt_reader_meta(rs.r, 3, &k, &v));
	assert_string_equal(k, "lib");
	assert_string_equal(v, "libc10.so probes=4");
	assert_false(mt_reader_meta(rs.r, 4, &k, &v));
	rside_close(&rs);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(unlink(path), 0);
	wside_free(&ws);
}

/* read data of len bytes to its end: events read, and the outcome */
static int read_all(const unsigned char *data, size_t len, unsigned int *n,
		    bool check, struct mt_site **sites, char *err,
		    size_t errlen)
{
	FILE *f = fmemopen((void *)data, len, "rb");
	struct mt_rec_item it;
	struct mt_rec_end end;
	struct rside rs;
	int ret = -2;

	assert_non_null(f);
	*n = 0;
	if (rside_open(&rs, f)) {
		while ((ret = mt_reader_next(rs.r, &it, rs.err,
					     sizeof(rs.err))) == 1) {
			struct mt_event ev;
			bool dd0;

			if (check) {
				make_event(*n, &ev, &dd0);
				check_event(&it, &ev, dd0);
				if (sites)
					check_site(it.site, sites[*n], rs.pool);
			}
			(*n)++;
		}
		/* the end, or the error, stays */
		assert_int_equal(
			mt_reader_next(rs.r, &it, rs.err, sizeof(rs.err)), ret);
		/* cut short, or whole with its end block */
		if (ret == 0)
			assert_int_equal(mt_reader_truncated(rs.r),
					 !mt_reader_end(rs.r, &end));
	}
	snprintf(err, errlen, "%s", rs.err);
	rside_close(&rs);
	assert_int_equal(fclose(f), 0);
	return ret;
}

#define SMALL_EVENTS 300

static void test_truncated_anywhere(void **state)
{
	static struct mt_site *sites[SMALL_EVENTS];
	struct wside ws = wside_new(6);
	unsigned int n, last = 0, full;
	unsigned char *data;
	char path[256], err[256];
	size_t len;

	write_record(path, sizeof(path), &ws, sites, SMALL_EVENTS);
	data = slurp(path, &len);
	assert_int_equal(
		read_all(data, len, &full, true, sites, err, sizeof(err)), 0);
	assert_int_equal(full, SMALL_EVENTS);
	for (size_t cut = 0; cut < len; cut++) {
		int ret =
			read_all(data, cut, &n, true, sites, err, sizeof(err));

		/* an error only when not even the header is whole */
		if (ret == -2) {
			assert_true(cut < 16);
			continue;
		}
		/* a prefix, growing with the cut, never an error */
		assert_int_equal(ret, 0);
		assert_true(n >= last && n <= full);
		last = n;
	}
	/* the whole blocks before the end were all read */
	assert_true(last > SMALL_EVENTS / 2);
	free(data);
	assert_int_equal(unlink(path), 0);
	wside_free(&ws);
}

#define KILL_FLUSHED 250

/* a writer killed with SIGKILL: what it flushed is there, and nothing else */
static void test_killed_writer(void **state)
{
	char path[256], err[256];
	unsigned char *data;
	unsigned int n;
	size_t len;
	int status;
	pid_t pid;

	tmp_path(path, sizeof(path));
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct mt_recorder *w =
			mt_recorder_open(path, err, sizeof(err));

		for (unsigned int i = 0; w && i < KILL_FLUSHED + 40; i++) {
			struct mt_event ev;
			bool dd0;

			make_event(i, &ev, &dd0);
			if (mt_recorder_event(w, &ev, dd0, NULL) ||
			    (i % 50 == 49 && mt_recorder_flush(w)))
				_exit(1);
		}
		/* 40 events pending, never flushed */
		raise(SIGKILL);
		_exit(1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	data = slurp(path, &len);
	/* read_all checks each event and that it reads as cut short */
	assert_int_equal(read_all(data, len, &n, true, NULL, err, sizeof(err)),
			 0);
	assert_int_equal(n, KILL_FLUSHED);
	free(data);
	assert_int_equal(unlink(path), 0);
}

static void test_bit_flips(void **state)
{
	static struct mt_site *sites[SMALL_EVENTS];
	struct wside ws = wside_new(6);
	unsigned int n, full, opens = 0;
	unsigned char *data;
	char path[256], err[256];
	size_t len;

	write_record(path, sizeof(path), &ws, sites, SMALL_EVENTS);
	data = slurp(path, &len);
	assert_int_equal(
		read_all(data, len, &full, false, sites, err, sizeof(err)), 0);
	/* every bit of the first 600 bytes, then one in 13 */
	for (size_t at = 0; at < len; at += at < 600 ? 1 : 13) {
		for (int bit = 0; bit < 8; bit++) {
			int ret;

			data[at] ^= (unsigned char)(1u << bit);
			ret = read_all(data, len, &n, false, sites, err,
				       sizeof(err));
			data[at] ^= (unsigned char)(1u << bit);
			/* caught: at open, or as an error after a prefix */
			assert_true(ret == -1 || ret == -2);
			assert_true(n <= full);
			if (at >= 16)
				assert_memory_equal(err, "block ", 6);
			else
				opens += ret == -2;
		}
	}
	assert_int_equal(opens, 16 * 8);
	free(data);
	assert_int_equal(unlink(path), 0);
	wside_free(&ws);
}

/* a record made by hand, for what the writer never writes */
struct raw {
	unsigned char p[4096];
	size_t len;
};

static void raw_header(struct raw *r, unsigned int version)
{
	memcpy(r->p, "MTBPFREC", 8);
	r->p[8] = (unsigned char)version;
	r->p[9] = (unsigned char)(version >> 8);
	r->p[10] = r->p[11] = 0;
	{
		__u32 c = (__u32)crc32(0, r->p, 12);

		for (int i = 0; i < 4; i++)
			r->p[12 + i] = (unsigned char)(c >> (8 * i));
	}
	r->len = 16;
}

static void put32(unsigned char *p, __u32 v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* a block with good checksums around payload (len: what it claims) */
static void raw_block(struct raw *r, int type, const char *payload, size_t plen,
		      __u32 claimed)
{
	unsigned char *h = r->p + r->len;

	assert_true(r->len + 13 + plen <= sizeof(r->p));
	h[0] = (unsigned char)type;
	put32(h + 1, claimed);
	put32(h + 5,
	      (__u32)crc32(0, (const unsigned char *)payload, (uInt)plen));
	put32(h + 9, (__u32)crc32(0, h, 9));
	memcpy(h + 13, payload, plen);
	r->len += 13 + plen;
}

static int raw_read(const struct raw *r, char *err, size_t errlen)
{
	unsigned int n;

	return read_all(r->p, r->len, &n, false, NULL, err, errlen);
}

#define BLOCK(r, type, lit) \
	raw_block(r, type, lit, sizeof(lit) - 1, sizeof(lit) - 1)

static void expect_corrupt(const struct raw *r, const char *why)
{
	char err[256];
	int ret = raw_read(r, err, sizeof(err));

	/* at open when no event comes before it */
	assert_true(ret == -1 || ret == -2);
	if (!strstr(err, why))
		fail_msg("\"%s\" does not say \"%s\"", err, why);
}

static void test_bad_files(void **state)
{
	struct raw r;
	char err[256];

	/* not ours, or not this version */
	memcpy(r.p, "#!/bin/sh\necho hello\n", 21);
	r.len = 21;
	assert_int_equal(raw_read(&r, err, sizeof(err)), -2);
	assert_string_equal(err, "not a memtrace-bpf record");
	r.len = 0;
	assert_int_equal(raw_read(&r, err, sizeof(err)), -2);
	assert_non_null(strstr(err, "not a memtrace-bpf record"));
	raw_header(&r, 7);
	assert_int_equal(raw_read(&r, err, sizeof(err)), -2);
	assert_string_equal(err, "version 7 is newer than this memtrace-bpf "
				 "reads (2)");
	raw_header(&r, 0);
	assert_int_equal(raw_read(&r, err, sizeof(err)), -2);
	assert_string_equal(err, "corrupt header");

	/* a header alone: cut short before any block */
	raw_header(&r, 1);
	assert_int_equal(raw_read(&r, err, sizeof(err)), 0);

	/* blocks whose checksums hold but whose contents do not */
	raw_header(&r, 1);
	BLOCK(&r, 9, "\x01");
	expect_corrupt(&r, "block 1 at byte 16: unknown block type 9");
	raw_header(&r, 1);
	raw_block(&r, 2, "", 0, 16u << 20 | 1);
	expect_corrupt(&r, "over the limit");
	raw_header(&r, 1);
	BLOCK(&r, 2,
	      "\x01\x03"
	      "a\0b");
	expect_corrupt(&r, "bad string 1");
	raw_header(&r, 1);
	BLOCK(&r, 2,
	      "\x02\x01"
	      "a");
	expect_corrupt(&r, "bad string 2");
	raw_header(&r, 1);
	BLOCK(&r, 2,
	      "\x01\x01"
	      "ab");
	expect_corrupt(&r, "1 bytes after its last item");
	/* a site naming string 2 when only 1 is known */
	raw_header(&r, 1);
	BLOCK(&r, 2,
	      "\x01\x01"
	      "a");
	BLOCK(&r, 3, "\x01\x05\x01\x02\x00\x00\x00\x00\x00");
	expect_corrupt(&r, "block 2 at byte 32: bad site 1");
	/* deeper than MT_MAX_FRAMES */
	raw_header(&r, 1);
	BLOCK(&r, 3, "\x01\x05\x00\x00\x00\x00\x00\x00\x41");
	expect_corrupt(&r, "bad site 1");
	raw_header(&r, 1);
	BLOCK(&r, 3, "\x01\x05\x00\x00\x00\x00\x00\x04\x00");
	expect_corrupt(&r, "bad site 1");
	/* an event at site 1 when there is none; then a good one, then junk */
	raw_header(&r, 1);
	BLOCK(&r, 4, "\x01\x01\x02\x01");
	expect_corrupt(&r, "event 0: bad coding");
	raw_header(&r, 1);
	BLOCK(&r, 4, "\x01\x00\x02\x07");
	expect_corrupt(&r, "1 bytes after its last event");
	raw_header(&r, 1);
	BLOCK(&r, 4, "\x00");
	expect_corrupt(&r, "bad event count");
	/* a comm must fit struct mt_event */
	raw_header(&r, 1);
	BLOCK(&r, 2,
	      "\x01\x10"
	      "sixteen-chars-xx");
	BLOCK(&r, 4, "\x01\x80\x10\x02\x01");
	expect_corrupt(&r, "event 0: comm of 16 bytes");
	/* a 16-bit kind */
	raw_header(&r, 1);
	BLOCK(&r, 4, "\x01\x80\x20\x02\x80\x80\x08");
	expect_corrupt(&r, "bad coding");
	/* an end of the first records (no unseen stacks or Nodes), more */
	raw_header(&r, 1);
	BLOCK(&r, 5,
	      "\x01"
	      "\0\0\0\0\0\0\0\0"
	      "\x00\x00");
	assert_int_equal(raw_read(&r, err, sizeof(err)), 0);
	BLOCK(&r, 1, "\x00");
	expect_corrupt(&r, "block 2 at byte 40: data after the end block");
	raw_header(&r, 1);
	BLOCK(&r, 5,
	      "\x01"
	      "\0\0\0\0\0\0\0\0"
	      "\x00");
	expect_corrupt(&r, "bad end block");
	/* the unseen counts begun, not ended */
	raw_header(&r, 1);
	BLOCK(&r, 5,
	      "\x01"
	      "\0\0\0\0\0\0\0\0"
	      "\x00\x00\x05\x01");
	expect_corrupt(&r, "bad end block");
	/* a varint of more than 64 bits */
	raw_header(&r, 1);
	BLOCK(&r, 4, "\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02");
	expect_corrupt(&r, "bad coding");
}

/*
 * A record of n events at the time stamps ts, ended with end (NULL: cut
 * short), read back: the outcome, err filled on an error, the events read
 */
static int read_timed(const __u64 *ts, unsigned int n,
		      const struct mt_rec_end *end, unsigned int *nread,
		      char *err, size_t errlen)
{
	char path[256];
	struct mt_recorder *w;
	unsigned char *data;
	size_t len;
	__u64 cut;
	int ret;

	tmp_path(path, sizeof(path));
	w = mt_recorder_open(path, err, errlen);
	assert_non_null(w);
	for (unsigned int i = 0; i < n; i++) {
		struct mt_event ev;
		bool dd0;

		make_event(i, &ev, &dd0);
		ev.ts = ts[i];
		assert_int_equal(mt_recorder_event(w, &ev, dd0, NULL), 0);
	}
	assert_int_equal(mt_recorder_flush(w), 0);
	cut = mt_recorder_bytes(w);
	assert_int_equal(
		mt_recorder_close(w, end ? end : &(struct mt_rec_end){ 0 }), 0);
	if (!end)
		assert_int_equal(truncate(path, (off_t)cut), 0);
	data = slurp(path, &len);
	err[0] = '\0';
	ret = read_all(data, len, nread, false, NULL, err, errlen);
	free(data);
	assert_int_equal(unlink(path), 0);
	return ret;
}

static void expect_senseless(const __u64 *ts, unsigned int n,
			     const struct mt_rec_end *end, const char *why)
{
	char err[256];
	unsigned int nread;

	assert_int_equal(read_timed(ts, n, end, &nread, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("\"%s\" does not say \"%s\"", err, why);
}

#define SEC 1000000000ULL

/*
 * Well-formed records whose figures cannot be: refused with one line
 * instead of a NaN or negative duration, a count of 2^64 - 1 events lost,
 * or a peak centuries into a trace of seconds
 */
static void test_senseless(void **state)
{
	const __u64 t0 = 9000 * SEC;
	const __u64 ok[] = { t0, t0 + SEC, t0 + 3 * SEC };
	/* a peak at 13835058055.486 s */
	const __u64 far[] = { t0, t0 + 13835058055486000000ULL, t0 + SEC };
	/* an event stamped 400 million s (12.7 years) before the first */
	const __u64 back[] = { 500000000 * SEC, 500000001 * SEC,
			       100000000 * SEC };
	/* an attach of up to ten minutes before the clock started */
	const __u64 slow[] = { t0, t0 + 590 * SEC, t0 + 593 * SEC };
	struct mt_rec_end end = { .seconds = 3.445 };
	unsigned int nread;
	char err[256];

	/* what a real trace can hold */
	assert_int_equal(read_timed(ok, 3, &end, &nread, err, sizeof(err)), 0);
	assert_int_equal(nread, 3);
	assert_int_equal(read_timed(slow, 3, &end, &nread, err, sizeof(err)),
			 0);
	end.lost = end.unseen.stacks_lost = (__u64)((3.445 + 600) * 1e9);
	assert_int_equal(read_timed(ok, 3, &end, &nread, err, sizeof(err)), 0);
	end.seconds = 0;
	end.lost = end.unseen.stacks_lost = 0;
	assert_int_equal(read_timed(ok, 3, &end, &nread, err, sizeof(err)), 0);

	/* durations that are none */
	end.seconds = NAN;
	expect_senseless(ok, 3, &end, "end block: nan s traced is no duration");
	end.seconds = -5;
	expect_senseless(ok, 3, &end, "end block: -5 s traced is no duration");
	end.seconds = INFINITY;
	expect_senseless(ok, 3, &end, "end block: inf s traced is no duration");
	end.seconds = 4e8;
	expect_senseless(ok, 3, &end, "is no duration");

	/* more lost than one a nanosecond */
	end.seconds = 3.445;
	end.lost = UINT64_MAX;
	expect_senseless(ok, 3, &end,
			 "end block: 18446744073709551615 events lost, 0 + 0 "
			 "without their stack, 0 without their forward in "
			 "3.445 s traced: more than one a nanosecond");
	end.lost = 0;
	end.unseen.stacks_lost = (__u64)(3.445 * 1e9 + 601e9);
	expect_senseless(ok, 3, &end, "more than one a nanosecond");
	end.unseen.stacks_lost = 0;
	end.unseen.stacks_early = UINT64_MAX;
	expect_senseless(ok, 3, &end, "0 + 18446744073709551615 without");
	end.unseen.stacks_early = 0;
	end.unseen.nodes = (__u64)(3.445 * 1e9 + 601e9);
	expect_senseless(ok, 3, &end, "more than one a nanosecond");
	end.unseen.nodes = 0;

	/* events far apart: refused at the event, ended or not */
	expect_senseless(far, 3, &end,
			 "event 1: its time stamp is 13835058055 s from "
			 "another's, more than a trace can span");
	expect_senseless(far, 3, NULL, "more than a trace can span");
	expect_senseless(back, 3, NULL,
			 "event 2: its time stamp is 400000001 s from "
			 "another's");
	/* closer, but more than the end block's seconds and an attach */
	end.seconds = 3.445;
	{
		const __u64 late[] = { t0, t0 + 700 * SEC };

		expect_senseless(late, 2, &end,
				 "end block: 3.445 s traced, but the events "
				 "span 700.000 s");
		/* cut short, the events are all there is to go by */
		assert_int_equal(
			read_timed(late, 2, NULL, &nread, err, sizeof(err)), 0);
		assert_int_equal(nread, 2);
	}
}

/* the record's --sample-bytes R as the reader gives it at its open; 0: none */
static __u64 raw_sample_bytes(const struct raw *r, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)r->p, r->len, "rb");
	struct rside rs;
	__u64 v = 0;

	assert_non_null(f);
	if (rside_open(&rs, f))
		v = mt_reader_sample_bytes(rs.r);
	snprintf(err, errlen, "%s", rs.err);
	rside_close(&rs);
	assert_int_equal(fclose(f), 0);
	return v;
}

static void test_sample_key(void **state)
{
	struct raw r;
	char err[256];

	/* a version 1 record, and one of 2 without the key: full traces */
	raw_header(&r, 1);
	BLOCK(&r, 1, "\x01\x04tool\x01x");
	assert_int_equal(raw_sample_bytes(&r, err, sizeof(err)), 0);
	raw_header(&r, 2);
	assert_int_equal(raw_sample_bytes(&r, err, sizeof(err)), 0);
	/* sample_bytes=524288, before the first event */
	raw_header(&r, 2);
	BLOCK(&r, 1,
	      "\x01\x0csample_bytes\x06"
	      "524288");
	BLOCK(&r, 4, "\x01\x00\x02");
	assert_int_equal(raw_sample_bytes(&r, err, sizeof(err)), 524288);
	/* not a number of bytes, 0, or past MT_SAMPLE_MAX */
	raw_header(&r, 2);
	BLOCK(&r, 1,
	      "\x01\x0csample_bytes\x03"
	      "12k");
	expect_corrupt(&r, "bad sample_bytes '12k'");
	raw_header(&r, 2);
	BLOCK(&r, 1,
	      "\x01\x0csample_bytes\x01"
	      "0");
	expect_corrupt(&r, "bad sample_bytes '0'");
	raw_header(&r, 2);
	BLOCK(&r, 1,
	      "\x01\x0csample_bytes\x10"
	      "1125899906842625");
	expect_corrupt(&r, "bad sample_bytes");
	/* after an event it would change how the ones read were read */
	raw_header(&r, 2);
	BLOCK(&r, 4, "\x01\x00\x02");
	BLOCK(&r, 1,
	      "\x01\x0csample_bytes\x01"
	      "1");
	expect_corrupt(&r, "sample_bytes after the first event or twice");
}

static void test_reader_pool_full(void **state)
{
	static struct mt_site *sites[SMALL_EVENTS];
	struct wside ws = wside_new(6);
	struct mt_strpool *pool = mt_strpool_new(3);
	struct mt_sites *rsites = mt_sites_new(16);
	struct mt_reader *r;
	char path[256], err[256];
	FILE *f;

	write_record(path, sizeof(path), &ws, sites, SMALL_EVENTS);
	f = fopen(path, "rb");
	assert_non_null(f);
	/* the strings come before the first event */
	r = mt_reader_open(f, pool, rsites, err, sizeof(err));
	assert_null(r);
	assert_string_equal(err, "block 2 at byte 125: no room for string 4 "
				 "(string pool full or out of memory)");
	mt_sites_free(rsites);
	mt_strpool_free(pool);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(unlink(path), 0);
	wside_free(&ws);
}

static void test_writer(void **state)
{
	struct mt_site key = { .depth = MT_MAX_FRAMES + 1 };
	struct mt_rec_end end = { 0 };
	struct mt_recorder *w;
	struct mt_event ev;
	char path[256], err[256];
	__u64 bytes;
	char *big;
	bool dd0;

	w = mt_recorder_open("/nonexistent/dir/x.mtb", err, sizeof(err));
	assert_null(w);
	assert_string_equal(err, "cannot create /nonexistent/dir/x.mtb: "
				 "No such file or directory");
	if (!access("/dev/full", W_OK)) {
		w = mt_recorder_open("/dev/full", err, sizeof(err));
		assert_null(w);
		assert_string_equal(err, "write /dev/full: No space left on "
					 "device");
	}

	tmp_path(path, sizeof(path));
	w = mt_recorder_open(path, err, sizeof(err));
	assert_non_null(w);
	/* nothing pending, nothing written: the 10 ms poll costs nothing */
	assert_int_equal(mt_recorder_flush(w), 0);
	assert_int_equal(mt_recorder_bytes(w), 16);
	assert_int_equal(mt_recorder_meta(w, NULL, "x"), -EINVAL);
	big = malloc(65538);
	assert_non_null(big);
	memset(big, 'x', 65537);
	big[65537] = '\0';
	assert_int_equal(mt_recorder_meta(w, "cmdline", big), -E2BIG);
	big[65536] = '\0';
	assert_int_equal(mt_recorder_meta(w, "cmdline", big), 0);
	free(big);
	/* a site too deep is refused; the writer goes on */
	make_event(1, &ev, &dd0);
	assert_int_equal(mt_recorder_event(w, &ev, dd0, &key), -EINVAL);
	assert_int_equal(mt_recorder_events(w), 0);
	/* events pile up to 64 KiB, then go out on their own */
	bytes = mt_recorder_bytes(w);
	for (unsigned int i = 0; mt_recorder_bytes(w) == bytes; i++) {
		make_event(i, &ev, &dd0);
		assert_int_equal(mt_recorder_event(w, &ev, dd0, NULL), 0);
		assert_true(i < 100000);
	}
	assert_true(mt_recorder_bytes(w) > 64 * 1024);
	assert_int_equal(mt_recorder_close(w, &end), 0);
	assert_int_equal(unlink(path), 0);
}

/* xorshift64: the same pseudo-random trace on every run */
static __u64 rnd(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#define STEPS 560
#define FWD 48
#define OPT 16

/*
 * A training loop as the tracer sees it: each step, FWD activations
 * allocated in forward on the main thread and freed in backward on the
 * autograd thread, FWD gradients, OPT optimizer temporaries, 8 CPU
 * tensors; the caching allocator gives the same blocks back most steps.
 */
static void test_bytes_per_event(void **state)
{
	struct wside ws = wside_new(1024);
	struct mt_site *fwd[FWD], *bwd[FWD], *grad[FWD], *opt[OPT], *cpu[2];
	const char *fr[40];
	__u64 seed = 0x9e3779b97f4a7c15ULL, ts = 5000000000ULL;
	__u64 allocated = 0, reserved = 2ULL << 30;
	__u64 size[FWD], base[FWD];
	struct mt_rec_end end = { 0 };
	struct mt_recorder *w;
	char path[256], err[256], name[64];
	unsigned int n = 0;
	size_t len;
	unsigned char *data;
	struct mt_event ev = { .pid = 4121, .kind = MT_K_C10_REPORT };

	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "model.py:%d layer%d.forward",
			 100 + i * 7, i);
		fr[i] = in(ws.pool, name);
	}
	for (int i = 0; i < FWD; i++) {
		const char *f[24];
		int depth = 12 + i % 8;

		for (int d = 0; d < depth; d++)
			f[d] = fr[(i + d * 3) % 40];
		snprintf(name, sizeof(name), "model.layers.%d", i / 4);
		fwd[i] = site_of(&ws, 4121, "c10:alloc", "forward", name, depth,
				 f);
		bwd[i] = site_of(&ws, 4121, "c10:free", "backward", name,
				 depth / 2, f);
		grad[i] = site_of(&ws, 4121, "c10:alloc", "backward", name,
				  depth / 2 + 1, f);
		size[i] = (__u64)(1 + i % 5) << (18 + i % 4);
		base[i] = 0x7f3a00000000ULL + (__u64)i * (64ULL << 20);
	}
	for (int i = 0; i < OPT; i++)
		opt[i] = site_of(&ws, 4121, "c10:alloc", "optimizer", "model",
				 3 + i % 3, fr);
	cpu[0] = site_of(&ws, 4121, "c10:cpu_alloc", NULL, NULL, 6, fr + 10);
	cpu[1] = site_of(&ws, 4121, "c10:cpu_free", NULL, NULL, 6, fr + 10);

	tmp_path(path, sizeof(path));
	w = mt_recorder_open(path, err, sizeof(err));
	assert_non_null(w);
	assert_int_equal(mt_recorder_meta(w, "tool", "memtrace-bpf 0.1.0"), 0);

#define EMIT(site_, kind_, tid_, comm_, a0, a1, a2, a3, a4)                   \
	do {                                                                  \
		ts += 2000 + rnd(&seed) % 60000;                              \
		ev.ts = ts;                                                   \
		ev.kind = kind_;                                              \
		ev.tid = tid_;                                                \
		ev.cpu = rnd(&seed) % 100 ? (tid_ == 4121 ? 3 : 9) :          \
					    rnd(&seed) % 16;                  \
		ev.flags = MT_EV_PY;                                          \
		snprintf(ev.comm, sizeof(ev.comm), "%s", comm_);              \
		ev.args[0] = a0;                                              \
		ev.args[1] = a1;                                              \
		ev.args[2] = a2;                                              \
		ev.args[3] = a3;                                              \
		ev.args[4] = a4;                                              \
		assert_int_equal(mt_recorder_event(w, &ev, false, site_), 0); \
		n++;                                                          \
	} while (0)

	for (int step = 0; step < STEPS; step++) {
		__u64 ptr[FWD];

		for (int i = 0; i < FWD; i++) {
			/* mostly the block of last step, sometimes another */
			ptr[i] =
				base[i] +
				(rnd(&seed) % 20 ? 0 : (rnd(&seed) % 64) * 512);
			allocated += size[i];
			EMIT(fwd[i], MT_K_C10_REPORT, 4121, "python3", ptr[i],
			     size[i], allocated, reserved, 0x0001);
		}
		for (int i = FWD - 1; i >= 0; i--) {
			allocated -= size[i];
			EMIT(bwd[i], MT_K_C10_REPORT, 4180, "pt_autograd_0",
			     ptr[i], 0 - size[i], allocated, reserved, 0x0001);
			allocated += size[i] / 2;
			EMIT(grad[i], MT_K_C10_REPORT, 4180, "pt_autograd_0",
			     base[i] + (32ULL << 20), size[i] / 2, allocated,
			     reserved, 0x0001);
		}
		for (int i = 0; i < OPT; i++)
			EMIT(opt[i], MT_K_C10_REPORT, 4121, "python3",
			     base[i] + (48ULL << 20), 4096, allocated + 4096,
			     reserved, 0x0001);
		for (int i = 0; i < 4; i++) {
			__u64 p = 0x5600000000ULL + (rnd(&seed) % 4096) * 4096;

			EMIT(cpu[0], MT_K_CPU_NEW, 4121, "python3",
			     0x55aa00001000ULL, p, 4096 * (i + 1), p >> 3, 7);
			EMIT(cpu[1], MT_K_CPU_DELETE, 4121, "python3",
			     0x55aa00001000ULL, p, 0, p >> 5, 7);
		}
		for (int i = 0; i < FWD; i++)
			allocated -= size[i] / 2;
		if (step % 20 == 0)
			assert_int_equal(mt_recorder_flush(w), 0);
	}
#undef EMIT
	assert_int_equal(mt_recorder_close(w, &end), 0);
	data = slurp(path, &len);
	print_message("record: %u events, %zu bytes, %.2f bytes/event "
		      "(struct mt_event: %zu)\n",
		      n, len, (double)len / n, sizeof(struct mt_event));
	{
		unsigned int m;

		assert_int_equal(
			read_all(data, len, &m, false, NULL, err, sizeof(err)),
			0);
		assert_int_equal(m, n);
	}
	free(data);
	assert_int_equal(unlink(path), 0);
	wside_free(&ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated_anywhere),
		cmocka_unit_test(test_killed_writer),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_senseless),
		cmocka_unit_test(test_sample_key),
		cmocka_unit_test(test_reader_pool_full),
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_bytes_per_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
