// SPDX-License-Identifier: GPL-2.0
/*
 * The window is a ring of events, kept in blocks of MT_FLIGHT_BLOCK: a
 * block is mapped as the window needs one and unmapped once its events
 * have all left, so that the window holds memory for the events it holds
 * now (not the most it ever held), and growing copies nothing (a copy of a
 * large window kept the tracer from the BPF ring buffer long enough for
 * it to drop events). An allocation whose event leaves the ring while it
 * is still alive is copied aside ("pinned"): it was alive when the window
 * began, however old. A pinned allocation freed later stays until its
 * free leaves the window too, so that a dump holds the allocation of
 * every free it holds. A table of the live allocations, by address and
 * memory space, says which are alive and where their event is.
 *
 * A dump is written by a child process, forked with the window as it is:
 * the tracer goes on reading events while the child encodes them (written
 * in the tracer, a large window kept it from the BPF ring buffer long
 * enough for it to drop events). The copy costs only the pages the tracer
 * writes meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "record/flight.h"
#include "record/record.h"
#include "lib/err.h"
#include "lib/grow.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"

enum what { FL_OTHER, FL_ALLOC, FL_FREE };

/* an event of the window */
struct fl_ent {
	struct mt_event ev;
	const struct mt_site *site;
	__u64 key; /* the allocation it makes or frees; 0: none */
	__u32 victim; /* a free of a pinned allocation: its pin + 1 */
	__u8 what;
	bool default0;
};

/* an allocation older than the window, alive when it began */
struct fl_pin {
	struct mt_event ev;
	const struct mt_site *site;
	bool default0;
	bool used;
};

/* a live allocation: where its event is */
struct fl_live {
	__u64 key; /* 0: an empty slot */
	__u64 seq; /* its event's number */
	__u32 pin; /* its pin + 1; 0: its event is in the ring */
};

struct fl_meta {
	char *key, *value;
};

struct mt_flight {
	struct mt_flight_dir *dir;
	int pid;
	struct fl_ent **blk; /* the ring's blocks, the oldest first */
	size_t nblk, blk_cap;
	struct fl_ent *spare_blk; /* one block given back, kept for reuse */
	size_t max; /* events the window holds at most */
	size_t head; /* where the oldest event is in blk[0] */
	size_t n; /* events in the window */
	__u64 seq0; /* the number of the oldest event */
	struct fl_live *live;
	size_t live_cap, live_n;
	struct fl_pin *pins;
	size_t pins_cap, npins;
	__u32 *spare; /* pins free for reuse, + 1 */
	size_t spare_cap, nspare;
	struct fl_meta meta[MT_FLIGHT_MAX_META];
	size_t nmeta;
	__u64 cut; /* events the memory cap pushed out inside the window */
	__u64 unpinned; /* old allocations not kept: past the pin cap */
	bool no_memory; /* an event not kept for want of memory */
};

struct fl_dump {
	char *path;
	__u64 bytes;
};

/* dumps being written at once, at most: one more waits for the oldest */
#define FL_WRITERS 4

/* a dump a child process writes */
struct fl_writer {
	pid_t pid;
	char *path, *why;
};

struct mt_flight_dir {
	const struct mt_flight_conf *c;
	struct fl_dump *dumps; /* kept now, oldest first */
	size_t n, cap;
	__u64 total;
	unsigned int begun; /* dumps begun: the number in the next name */
	unsigned int written;
	bool stopped; /* a write failed: no more dumps */
	struct fl_writer writers[FL_WRITERS]; /* the oldest first */
	size_t nwriters;
};

struct mt_flight_dir *mt_flight_dir_open(const struct mt_flight_conf *c,
					 char *err, size_t errlen)
{
	struct mt_flight_dir *d;
	char probe[4096];
	struct stat st;
	int fd;

	if (stat(c->dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--flight: -o %s is no folder (%s)",
			 c->dir, errno ? strerror(errno) : "not a directory");
		return NULL;
	}
	/* a file made and removed: root passes access(2) on /proc too */
	if (snprintf(probe, sizeof(probe), "%s/.memtrace-flight-XXXXXX",
		     c->dir) >= (int)sizeof(probe)) {
		snprintf(err, errlen, "--flight: -o %s: name too long", c->dir);
		return NULL;
	}
	fd = mkstemp(probe);
	if (fd < 0) {
		/* /proc says ENOENT: the errno alone named no cause */
		snprintf(err, errlen,
			 "--flight: cannot write in -o %s: no file can be made "
			 "there (%s); -o DIR wants a folder the dumps can be "
			 "written in",
			 c->dir, strerror(errno));
		return NULL;
	}
	close(fd);
	unlink(probe);
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->c = c;
	return d;
}

unsigned int mt_flight_dir_dumps(const struct mt_flight_dir *d)
{
	return d->written;
}

bool mt_flight_dir_failed(const struct mt_flight_dir *d)
{
	return d->stopped;
}

void mt_flight_dir_close(struct mt_flight_dir *d)
{
	if (!d)
		return;
	mt_flight_dir_reap(d, true);
	for (size_t i = 0; i < d->n; i++)
		free(d->dumps[i].path);
	free(d->dumps);
	free(d);
}

/* the oldest dumps go while the folder holds more than its caps allow */
static void enforce_caps(struct mt_flight_dir *d)
{
	const struct mt_flight_conf *c = d->c;

	while (d->n > 1 && (d->n > c->max_dumps || d->total > c->max_total)) {
		struct fl_dump *o = &d->dumps[0];

		if (unlink(o->path) && errno != ENOENT)
			mt_err("flight: remove %s: %s", o->path,
			       strerror(errno));
		else
			mt_err("flight: removed %s, the oldest dump: %zu "
			       "dumps and %llu bytes are over --flight-dumps "
			       "%u or --flight-total %llu",
			       o->path, d->n, (unsigned long long)d->total,
			       c->max_dumps, (unsigned long long)c->max_total);
		d->total -= o->bytes;
		free(o->path);
		memmove(d->dumps, d->dumps + 1, --d->n * sizeof(*d->dumps));
	}
}

static int dir_add(struct mt_flight_dir *d, const char *path, __u64 bytes)
{
	if (mt_grow((void **)&d->dumps, &d->cap, d->n + 1, sizeof(*d->dumps)))
		return -ENOMEM;
	d->dumps[d->n].path = strdup(path);
	if (!d->dumps[d->n].path)
		return -ENOMEM;
	d->dumps[d->n++].bytes = bytes;
	d->total += bytes;
	d->written++;
	enforce_caps(d);
	return 0;
}

#define BLK_BYTES (MT_FLIGHT_BLOCK * sizeof(struct fl_ent))

/* a block of the ring, straight from the kernel: given back, it is gone */
static struct fl_ent *blk_map(void)
{
	void *b = mmap(NULL, BLK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return b == MAP_FAILED ? NULL : b;
}

static void blk_unmap(struct fl_ent *b)
{
	if (b)
		munmap(b, BLK_BYTES);
}

/* the window's i-th event, the oldest 0 */
static struct fl_ent *ent(const struct mt_flight *f, size_t i)
{
	size_t pos = f->head + i;

	return &f->blk[pos / MT_FLIGHT_BLOCK][pos % MT_FLIGHT_BLOCK];
}

struct mt_flight *mt_flight_new(struct mt_flight_dir *d, int pid)
{
	struct mt_flight *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->dir = d;
	f->pid = pid;
	f->max = d->c->window_bytes / sizeof(struct fl_ent);
	if (f->max < 1024)
		f->max = 1024;
	return f;
}

void mt_flight_free(struct mt_flight *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nmeta; i++) {
		free(f->meta[i].key);
		free(f->meta[i].value);
	}
	for (size_t i = 0; i < f->nblk; i++)
		blk_unmap(f->blk[i]);
	free(f->blk);
	blk_unmap(f->spare_blk);
	free(f->live);
	free(f->pins);
	free(f->spare);
	free(f);
}

void mt_flight_meta(struct mt_flight *f, const char *key, const char *value)
{
	char *k, *v;

	if (f->nmeta == MT_FLIGHT_MAX_META)
		return;
	k = strdup(key);
	v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		return;
	}
	f->meta[f->nmeta].key = k;
	f->meta[f->nmeta].value = v;
	f->nmeta++;
}

/* the live table, for lib/hashtab.h: tab is the slot array */
static bool live_used(const void *tab, size_t i)
{
	return ((const struct fl_live *)tab)[i].key;
}

static bool live_match(const void *tab, size_t i, const void *key)
{
	return ((const struct fl_live *)tab)[i].key == *(const __u64 *)key;
}

static __u64 live_hash(const void *tab, size_t i)
{
	return mt_mix64(((const struct fl_live *)tab)[i].key);
}

static void live_move(void *tab, size_t to, size_t from)
{
	struct fl_live *s = tab;

	s[to] = s[from];
	s[from].key = 0;
}

/* the slot of key, or the empty one where it would go */
static size_t live_slot(const struct mt_flight *f, __u64 key)
{
	return mt_probe(f->live, f->live_cap - 1, mt_mix64(key), live_used,
			live_match, &key);
}

/* room for one more live allocation: at most half full. 0 or -ENOMEM */
static int live_room(struct mt_flight *f)
{
	struct fl_live *old = f->live, *s;
	size_t cap = f->live_cap ? f->live_cap * 2 : MT_HASH_MIN_CAP;

	if (2 * (f->live_n + 1) <= f->live_cap)
		return 0;
	s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	f->live = s;
	f->live_cap = cap;
	for (size_t i = 0; old && i < cap / 2; i++)
		if (old[i].key)
			s[live_slot(f, old[i].key)] = old[i];
	free(old);
	return 0;
}

static void live_delete(struct mt_flight *f, size_t i)
{
	f->live[i].key = 0;
	f->live_n--;
	mt_backshift(f->live, f->live_cap - 1, i, live_used, live_hash,
		     live_move);
}

static void unpin(struct mt_flight *f, __u32 pin)
{
	f->pins[pin - 1].used = false;
	if (!mt_grow((void **)&f->spare, &f->spare_cap, f->nspare + 1,
		     sizeof(*f->spare)))
		f->spare[f->nspare++] = pin;
}

/* e's allocation outlives e's leaving the window: keep a copy. Its pin. */
static __u32 pin(struct mt_flight *f, const struct fl_ent *e)
{
	__u32 p;

	if (f->nspare) {
		p = f->spare[--f->nspare];
	} else {
		if (f->npins == MT_FLIGHT_MAX_PINNED ||
		    mt_grow((void **)&f->pins, &f->pins_cap, f->npins + 1,
			    sizeof(*f->pins)))
			return 0;
		p = (__u32)++f->npins;
	}
	f->pins[p - 1] = (struct fl_pin){ e->ev, e->site, e->default0, true };
	return p;
}

/* the oldest event leaves the window */
static void evict(struct mt_flight *f)
{
	struct fl_ent *e = ent(f, 0);
	size_t i;

	if (e->what == FL_ALLOC && f->live_cap) {
		i = live_slot(f, e->key);
		if (i < f->live_cap && f->live[i].key == e->key &&
		    f->live[i].seq == f->seq0 && !f->live[i].pin) {
			f->live[i].pin = pin(f, e);
			/* not kept: the dump will lack it; forget it */
			if (!f->live[i].pin) {
				f->unpinned++;
				live_delete(f, i);
			}
		}
	}
	if (e->what == FL_FREE && e->victim)
		unpin(f, e->victim);
	f->n--;
	f->seq0++;
	/* its block's last event: the block goes (one kept for the next) */
	if (++f->head == MT_FLIGHT_BLOCK) {
		if (f->spare_blk)
			blk_unmap(f->blk[0]);
		else
			f->spare_blk = f->blk[0];
		memmove(f->blk, f->blk + 1, --f->nblk * sizeof(*f->blk));
		f->head = 0;
	}
}

/* room for one more event at the ring's end: a block. 0 or -ENOMEM */
static int ring_room(struct mt_flight *f)
{
	struct fl_ent *b;

	if ((f->head + f->n) / MT_FLIGHT_BLOCK < f->nblk)
		return 0;
	if (mt_grow((void **)&f->blk, &f->blk_cap, f->nblk + 1,
		    sizeof(*f->blk)))
		return -ENOMEM;
	b = f->spare_blk ? f->spare_blk : blk_map();
	if (!b)
		return -ENOMEM;
	f->spare_blk = NULL;
	f->blk[f->nblk++] = b;
	return 0;
}

/* an allocation's key: its address, with its memory space and device */
static __u64 key_of(const struct mt_call *r)
{
	__u64 k = r->ptr ^ ((__u64)r->ki->space << 56) ^
		  ((__u64)(r->dev_index + 1) << 48);

	return k ? k : 1;
}

/* a new allocation at key (an old one there, never seen freed, goes) */
static void note_alloc(struct mt_flight *f, __u64 key, __u64 seq)
{
	size_t i;

	if (live_room(f)) {
		f->no_memory = true;
		return;
	}
	i = live_slot(f, key);
	if (f->live[i].key == key && f->live[i].pin)
		unpin(f, f->live[i].pin);
	else if (f->live[i].key != key)
		f->live_n++;
	f->live[i] = (struct fl_live){ key, seq, 0 };
}

/* a free of key: the pin it ends, + 1 (0: none) */
static __u32 note_free(struct mt_flight *f, __u64 key)
{
	__u32 pin;
	size_t i;

	if (!f->live_cap)
		return 0;
	i = live_slot(f, key);
	if (i >= f->live_cap || f->live[i].key != key)
		return 0;
	pin = f->live[i].pin;
	live_delete(f, i);
	return pin;
}

/* ev into the ring, the oldest leaving it as they must; NULL: no memory */
static struct fl_ent *push(struct mt_flight *f, const struct mt_event *ev,
			   bool default0, const struct mt_site *site)
{
	const struct mt_flight_conf *c = f->dir->c;
	struct fl_ent *e;

	/* out of the window by age; by the memory cap, counted */
	while (f->n && c->window_ns && ent(f, 0)->ev.ts + c->window_ns < ev->ts)
		evict(f);
	if (f->n == f->max) {
		if (c->window_ns)
			f->cut++;
		evict(f);
	}
	if (ring_room(f)) {
		f->no_memory = true;
		return NULL;
	}
	e = ent(f, f->n);
	*e = (struct fl_ent){ .ev = *ev, .site = site, .default0 = default0 };
	return e;
}

void mt_flight_event(struct mt_flight *f, const struct mt_event *ev,
		     bool default0, const struct mt_call *r,
		     const struct mt_site *site)
{
	struct fl_ent *e = push(f, ev, default0, site);
	__u64 seq = f->seq0 + f->n;

	if (!e)
		return;
	if (r->has_ptr && !r->failed && r->role == MT_ROLE_ALLOC) {
		e->what = FL_ALLOC;
		e->key = key_of(r);
		note_alloc(f, e->key, seq);
	} else if (r->has_ptr && r->role == MT_ROLE_FREE) {
		e->what = FL_FREE;
		e->key = key_of(r);
		e->victim = note_free(f, e->key);
	}
	f->n++;
}

void mt_flight_exec(struct mt_flight *f, const struct mt_event *ev,
		    const struct mt_site *site)
{
	/*
	 * Every allocation of the old image is freed: those whose event is
	 * in the window by the exec, which a dump replays after them; those
	 * kept from before the window go now, so that no dump shows them
	 * alive (nor, while the exec is in the window, alive at its start)
	 */
	for (size_t i = 0; i < f->live_cap; i++)
		if (f->live[i].key && f->live[i].pin)
			unpin(f, f->live[i].pin);
	if (f->live_cap)
		memset(f->live, 0, f->live_cap * sizeof(*f->live));
	f->live_n = 0;
	if (push(f, ev, false, site))
		f->n++;
}

size_t mt_flight_events(const struct mt_flight *f)
{
	return f->n;
}

size_t mt_flight_pinned(const struct mt_flight *f)
{
	return f->npins - f->nspare;
}

size_t mt_flight_mem(const struct mt_flight *f)
{
	return (f->nblk + (f->spare_blk != NULL)) * BLK_BYTES;
}

size_t mt_flight_event_bytes(void)
{
	return sizeof(struct fl_ent);
}

static int by_ts(const void *pa, const void *pb)
{
	const struct fl_pin *a = *(const struct fl_pin *const *)pa;
	const struct fl_pin *b = *(const struct fl_pin *const *)pb;

	return (a->ev.ts > b->ev.ts) - (a->ev.ts < b->ev.ts);
}

/*
 * A new file's name in the folder: time, the dump's number in this run
 * (names sort as the dumps came), pid, rank, tag. 0 or -errno.
 */
static int dump_path(const struct mt_flight *f, const char *tag,
		     const struct mt_rank *rank, char *path, size_t len)
{
	time_t now = time(NULL);
	char stamp[32];
	struct tm tm;
	struct stat st;

	if (!gmtime_r(&now, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm))
		return -EINVAL;
	if (snprintf(path, len, "%s/flight-%s-%04u-pid%d-rank%d-%s.mtb",
		     f->dir->c->dir, stamp, f->dir->begun + 1, f->pid,
		     rank && rank->known ? rank->rank : 0, tag) >= (int)len)
		return -ENAMETOOLONG;
	/* an earlier run's dump of the same second and number stays */
	if (!lstat(path, &st) || errno != ENOENT)
		return -EEXIST;
	return 0;
}

/* the window, in words, for the dump's first lines */
static void describe_window(const struct mt_flight *f, size_t pinned,
			    __u64 first, __u64 last, char *buf, size_t len)
{
	const struct mt_flight_conf *c = f->dir->c;
	int n;

	if (c->window_ns)
		n = snprintf(buf, len, "the last %.3f s of events (--flight)",
			     (double)c->window_ns / 1e9);
	else
		n = snprintf(buf, len,
			     "the last %llu bytes of events' memory (--flight)",
			     (unsigned long long)c->window_bytes);
	if (n < 0 || (size_t)n >= len)
		return;
	snprintf(buf + n, len - (size_t)n,
		 ": %zu events from %llu.%06llu to %llu.%06llu s (as the "
		 "event lines' times), and %zu allocations older than it "
		 "still alive at its start%s%s",
		 f->n, (unsigned long long)(first / 1000000000ULL),
		 (unsigned long long)(first % 1000000000ULL / 1000),
		 (unsigned long long)(last / 1000000000ULL),
		 (unsigned long long)(last % 1000000000ULL / 1000), pinned,
		 f->cut ? "; its memory cap cut it shorter (events pushed "
			  "out before their time)" :
			  "",
		 f->unpinned || f->no_memory ?
			 "; some allocations or events were not kept "
			 "(memory): figures may be low" :
			 "");
}

/*
 * Write the dump of f at path: 0, or -errno after a line on stderr (a
 * partial file removed)
 */
static int write_dump(const struct mt_flight *f, const char *path,
		      const char *why, __u64 lost)
{
	const struct mt_flight_dir *d = f->dir;
	const struct fl_pin **pins = NULL;
	struct mt_recorder *w;
	char err[4352], window[512];
	struct mt_rec_end end = { 0 };
	__u64 first = 0, last = 0;
	size_t np = 0;
	int ret = 0, cret;

	if (f->npins && !(pins = malloc(f->npins * sizeof(*pins)))) {
		mt_err("flight: dump %s: out of memory", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->npins; i++)
		if (f->pins[i].used)
			pins[np++] = &f->pins[i];
	if (np)
		qsort(pins, np, sizeof(*pins), by_ts);
	if (f->n)
		last = ent(f, f->n - 1)->ev.ts;
	first = np ? pins[0]->ev.ts : f->n ? ent(f, 0)->ev.ts : 0;
	describe_window(f, np, f->n ? ent(f, 0)->ev.ts : 0, last, window,
			sizeof(window));
	w = mt_recorder_open(path, err, sizeof(err));
	if (!w) {
		free(pins);
		mt_err("flight: %s: no more dumps", err);
		return -EIO;
	}
	/* how every event is to be read: before the first */
	if (d->c->sample_bytes) {
		char v[32];

		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)d->c->sample_bytes);
		ret = mt_recorder_meta(w, MT_REC_SAMPLE_KEY, v);
	}
	if (!ret)
		ret = mt_recorder_meta(w, "dump", why);
	if (!ret)
		ret = mt_recorder_meta(w, "window", window);
	for (size_t i = 0; !ret && i < f->nmeta; i++)
		ret = mt_recorder_meta(w, f->meta[i].key, f->meta[i].value);
	for (size_t i = 0; !ret && i < np; i++)
		ret = mt_recorder_event(w, &pins[i]->ev, pins[i]->default0,
					pins[i]->site);
	for (size_t i = 0; !ret && i < f->n; i++) {
		const struct fl_ent *e = ent(f, i);

		ret = mt_recorder_event(w, &e->ev, e->default0, e->site);
	}
	free(pins);
	end.seconds = last > first ? (double)(last - first) / 1e9 : 0;
	end.lost = lost;
	cret = mt_recorder_close(w, &end);
	if (!ret)
		ret = cret;
	if (ret) {
		/* a partial dump says nothing true: it goes */
		unlink(path);
		mt_err("flight: write %s: %s: the partial dump removed, no "
		       "more dumps",
		       path, strerror(-ret));
		return -EIO;
	}
	return 0;
}

/* a dump written (ok) or not: said, and counted in the caps */
static void dump_done(struct mt_flight_dir *d, const char *path,
		      const char *why, bool ok)
{
	struct stat st;

	if (!ok) {
		d->stopped = true;
		return;
	}
	if (stat(path, &st))
		st.st_size = 0;
	mt_err("flight: dumped %s: %s", path, why);
	if (dir_add(d, path, (__u64)st.st_size))
		mt_err("flight: out of memory: %s is not counted in the caps",
		       path);
}

void mt_flight_dir_reap(struct mt_flight_dir *d, bool wait)
{
	/* in the order they began: the caps remove the oldest first */
	while (d->nwriters) {
		struct fl_writer *k = &d->writers[0];
		int status = 0;
		pid_t got = waitpid(k->pid, &status, wait ? 0 : WNOHANG);

		if (got == 0)
			return;
		if (got < 0 && errno == EINTR)
			continue;
		/* a child that cannot be waited for wrote nothing known */
		dump_done(d, k->path, k->why,
			  got == k->pid && WIFEXITED(status) &&
				  !WEXITSTATUS(status));
		free(k->path);
		free(k->why);
		memmove(d->writers, d->writers + 1,
			--d->nwriters * sizeof(*d->writers));
	}
}

int mt_flight_dump(struct mt_flight *f, const char *tag, const char *why,
		   const struct mt_rank *rank, __u64 lost)
{
	struct mt_flight_dir *d = f->dir;
	struct fl_writer *k;
	char path[4096];
	int ret;

	/* FL_WRITERS being written: this one waits for them */
	mt_flight_dir_reap(d, d->nwriters == FL_WRITERS);
	if (d->stopped)
		return -EIO;
	ret = dump_path(f, tag, rank, path, sizeof(path));
	if (ret) {
		mt_err("flight: no name for a dump in %s: %s", d->c->dir,
		       strerror(-ret));
		return ret;
	}
	d->begun++;
	k = &d->writers[d->nwriters];
	k->path = strdup(path);
	k->why = strdup(why);
	k->pid = k->path && k->why ? fork() : -1;
	if (k->pid == 0)
		_exit(write_dump(f, path, why, lost) ? 1 : 0);
	if (k->pid > 0) {
		d->nwriters++;
		return 0;
	}
	/* no child: written here, the events wait meanwhile */
	free(k->path);
	free(k->why);
	ret = write_dump(f, path, why, lost);
	dump_done(d, path, why, !ret);
	return ret;
}
