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
 *
 * The folder is opened once and every file in it made, renamed and
 * removed relative to that descriptor: a folder swapped for a symbolic
 * link mid-run would otherwise take the next dumps elsewhere, and the caps
 * would "remove" paths that no longer hold them. A dump's name carries the
 * tracer's pid (two recorders on one folder wrote each other's files),
 * is made with O_EXCL, and the dump is written under a hidden name
 * (".NAME.part") given its own only once it is whole, without replacing
 * anything: a writer killed midway, or a full disk, leaves no file that
 * looks like a dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "lib/outfile.h"

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

/*
 * How long the caps keep a dump, by its tag: the lowest goes first. What
 * ended a process (an OOM most of all) says what no later dump can, and
 * the end of a trace or a process is the least news.
 */
static const struct fl_kind {
	const char *tag;
	int keep;
} kinds[] = {
	{ "end", 0 },  { "usage", 1 },	 { "asked", 1 }, { "signal", 2 },
	{ "exit", 2 }, { "oomkill", 3 }, { "oom", 3 },
};

/* a tag not in kinds: kept as asked's */
#define KEEP_OTHER 1

struct fl_dump {
	char *name; /* in the folder */
	__u64 bytes;
	int keep; /* kinds' */
	char tag[16];
};

/* dumps being written at once, at most: one more waits for the oldest */
#define FL_WRITERS 4

/* names tried for a dump when those before were taken */
#define FL_NAME_TRIES 100

/* a dump a child process writes */
struct fl_writer {
	pid_t pid;
	char *name, *why, *tag;
};

struct mt_flight_dir {
	const struct mt_flight_conf *c;
	int dfd; /* the folder, opened once: never looked up by path again */
	struct fl_dump *dumps; /* kept now, oldest first */
	size_t n, cap;
	__u64 total;
	unsigned int begun; /* dumps begun: the number in the next name */
	unsigned int written, failed;
	struct fl_writer writers[FL_WRITERS]; /* the oldest first */
	size_t nwriters;
};

/*
 * A file made and removed in the folder: root passes access(2) on /proc
 * too. 0 or -errno.
 */
static int probe_write(int dfd)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), ".memtrace-flight-%d.probe",
		 (int)getpid());
	fd = openat(dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (close(fd) || unlinkat(dfd, name, 0))
		return -errno;
	return 0;
}

struct mt_flight_dir *mt_flight_dir_open(const struct mt_flight_conf *c,
					 char *err, size_t errlen)
{
	struct mt_flight_dir *d;
	struct stat st;
	int fd, ret;

	fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* a link refused: ENOTDIR (O_DIRECTORY's word for it) or ELOOP */
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP) &&
	    !lstat(c->dir, &st) && S_ISLNK(st.st_mode)) {
		snprintf(err, errlen,
			 "--flight: -o %s is a symbolic link: give the folder "
			 "it leads to (the folder is opened once, not followed "
			 "at each dump)",
			 c->dir);
		return NULL;
	}
	if (fd < 0) {
		snprintf(err, errlen, "--flight: -o %s is no folder (%s)",
			 c->dir, strerror(errno));
		return NULL;
	}
	ret = probe_write(fd);
	if (ret) {
		/* /proc says ENOENT: the errno alone named no cause */
		snprintf(err, errlen,
			 "--flight: cannot write in -o %s: no file can be made "
			 "there (%s); -o DIR wants a folder the dumps can be "
			 "written in",
			 c->dir, strerror(-ret));
		close(fd);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	d->c = c;
	d->dfd = fd;
	return d;
}

unsigned int mt_flight_dir_dumps(const struct mt_flight_dir *d)
{
	return d->written;
}

unsigned int mt_flight_dir_failed(const struct mt_flight_dir *d)
{
	return d->failed;
}

void mt_flight_dir_close(struct mt_flight_dir *d)
{
	if (!d)
		return;
	mt_flight_dir_reap(d, true);
	for (size_t i = 0; i < d->n; i++)
		free(d->dumps[i].name);
	free(d->dumps);
	if (close(d->dfd))
		mt_err("flight: close -o %s: %s", d->c->dir, strerror(errno));
	free(d);
}

static int keep_of(const char *tag)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].tag, tag))
			return kinds[i].keep;
	return KEEP_OTHER;
}

/* the dump the caps remove first: of the kind kept least, the oldest */
static size_t victim(const struct mt_flight_dir *d)
{
	size_t v = 0;

	for (size_t i = 1; i < d->n; i++)
		if (d->dumps[i].keep < d->dumps[v].keep)
			v = i;
	return v;
}

/* dumps go, as victim() picks them, while there are more than the caps */
static void enforce_caps(struct mt_flight_dir *d)
{
	const struct mt_flight_conf *c = d->c;

	while (d->n > 1 && (d->n > c->max_dumps || d->total > c->max_total)) {
		size_t v = victim(d);
		struct fl_dump *o = &d->dumps[v];

		if (unlinkat(d->dfd, o->name, 0) && errno != ENOENT)
			mt_err("flight: remove %s/%s: %s", c->dir, o->name,
			       strerror(errno));
		else
			mt_err("flight: removed %s/%s, the oldest %s dump "
			       "(end dumps go first, oom last): %zu dumps and "
			       "%llu bytes are over --flight-dumps %u or "
			       "--flight-total %llu",
			       c->dir, o->name, o->tag, d->n,
			       (unsigned long long)d->total, c->max_dumps,
			       (unsigned long long)c->max_total);
		d->total -= o->bytes;
		free(o->name);
		memmove(o, o + 1, (--d->n - v) * sizeof(*d->dumps));
	}
}

static int dir_add(struct mt_flight_dir *d, const char *name, const char *tag,
		   __u64 bytes)
{
	struct fl_dump *o;

	if (mt_grow((void **)&d->dumps, &d->cap, d->n + 1, sizeof(*d->dumps)))
		return -ENOMEM;
	o = &d->dumps[d->n];
	o->name = strdup(name);
	if (!o->name)
		return -ENOMEM;
	o->bytes = bytes;
	o->keep = keep_of(tag);
	snprintf(o->tag, sizeof(o->tag), "%s", tag);
	d->n++;
	d->total += bytes;
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

/*
 * An allocation's key: its address in its memory space. Not its device:
 * CUDA's addresses are unique over devices (unified addressing), and a
 * free may come from a thread whose device is not known (cuda:?).
 */
static __u64 key_of(const struct mt_call *r)
{
	__u64 k = r->ptr ^ ((__u64)r->ki->space << 56);

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

/* the hidden name a dump is written under until it is whole */
static int part_name(const char *name, char *buf, size_t len)
{
	return snprintf(buf, len, ".%s.part", name) >= (int)len ?
		       -ENAMETOOLONG :
		       0;
}

/*
 * A new dump's name in the folder, in name: time, this tracer's pid, the
 * dump's number in this run (names sort as the dumps came), pid, rank,
 * tag; and its file under the hidden name, made new (O_EXCL). A name
 * taken, whole or being written (by another tracer, an earlier run), is
 * passed for the next number. The file's descriptor, or -errno.
 */
static int dump_create(struct mt_flight_dir *d, const struct mt_flight *f,
		       const char *tag, const struct mt_rank *rank, char *name,
		       size_t len)
{
	time_t now = time(NULL);
	char stamp[32], part[4096], shown[8192];
	struct stat st;
	struct tm tm;
	int fd = -EEXIST;

	if (!gmtime_r(&now, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm))
		return -EINVAL;
	for (int i = 0; i < FL_NAME_TRIES && fd == -EEXIST; i++) {
		if (snprintf(name, len,
			     "flight-%s-by%d-%04u-pid%d-rank%d-%s.mtb", stamp,
			     (int)getpid(), ++d->begun, f->pid,
			     rank && rank->known ? rank->rank : 0,
			     tag) >= (int)len ||
		    part_name(name, part, sizeof(part)))
			return -ENAMETOOLONG;
		if (!fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (errno != ENOENT)
			return -errno;
		snprintf(shown, sizeof(shown), "%s/%s", d->c->dir, part);
		fd = mt_create_new_at(d->dfd, part, MT_OUT_PRIVATE, shown);
	}
	return fd;
}

/* a partial dump goes: it says nothing true. Said when it cannot. */
static void drop_part(const struct mt_flight_dir *d, const char *part)
{
	if (unlinkat(d->dfd, part, 0) && errno != ENOENT)
		mt_err("flight: remove the partial dump %s/%s: %s", d->c->dir,
		       part, strerror(errno));
}

/*
 * The whole dump from its hidden name to its own, never over a file of
 * that name: renameat2's RENAME_NOREPLACE, or where the file system has
 * none (NFS) a link, which fails as well on a name taken. 0 or -errno.
 */
static int publish(int dfd, const char *part, const char *name)
{
	if (!renameat2(dfd, part, dfd, name, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL || linkat(dfd, part, dfd, name, 0))
		return -errno;
	return unlinkat(dfd, part, 0) ? -errno : 0;
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
 * Write the dump of f into fd, its file under the hidden name of name,
 * then give it that name. 0, or -errno after a line on stderr (a partial
 * file removed).
 */
static int write_dump(const struct mt_flight *f, int fd, const char *name,
		      const char *why, __u64 lost)
{
	const struct mt_flight_dir *d = f->dir;
	const struct fl_pin **pins = NULL;
	struct mt_recorder *w;
	char err[8448], window[512], part[4096], shown[4352];
	struct mt_rec_end end = { 0 };
	__u64 first = 0, last = 0;
	size_t np = 0;
	int ret = 0, cret;

	/* dump_create made this name: it fits */
	(void)part_name(name, part, sizeof(part));
	if (f->npins && !(pins = malloc(f->npins * sizeof(*pins)))) {
		mt_err("flight: dump %s/%s: out of memory; the next trigger "
		       "dumps again",
		       d->c->dir, name);
		(void)close(fd);
		drop_part(d, part);
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
	snprintf(shown, sizeof(shown), "%s/%s", d->c->dir, name);
	w = mt_recorder_open_fd(fd, shown, err, sizeof(err));
	if (!w) {
		free(pins);
		drop_part(d, part);
		mt_err("flight: %s: the partial dump removed; the next "
		       "trigger dumps again",
		       err);
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
	if (!ret && f->n) {
		char span[64];

		snprintf(span, sizeof(span), "%llu %llu",
			 (unsigned long long)ent(f, 0)->ev.ts,
			 (unsigned long long)last);
		ret = mt_recorder_meta(w, MT_FLIGHT_SPAN_KEY, span);
	}
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
		drop_part(d, part);
		mt_err("flight: write %s/%s: %s: the partial dump removed; the "
		       "next trigger dumps again",
		       d->c->dir, name, strerror(-ret));
		return ret;
	}
	ret = publish(d->dfd, part, name);
	if (ret)
		mt_err("flight: name %s/%s: %s: the dump stays at %s/%s",
		       d->c->dir, name, strerror(-ret), d->c->dir, part);
	return ret;
}

/*
 * The dump of name written (status: its writer's, as waitpid says it; -1:
 * none to wait for) or not: said, and counted in the caps
 */
static void dump_done(struct mt_flight_dir *d, const char *name,
		      const char *tag, const char *why, int status)
{
	char part[4096];
	struct stat st;

	if (status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status)) {
		if (fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW))
			st.st_size = 0;
		d->written++;
		mt_err("flight: dumped %s/%s: %s", d->c->dir, name, why);
		if (dir_add(d, name, tag, (__u64)st.st_size))
			mt_err("flight: out of memory: %s/%s is not counted "
			       "in the caps",
			       d->c->dir, name);
		return;
	}
	d->failed++;
	/* a writer that exited said why; one killed could not */
	if (status >= 0 && WIFEXITED(status))
		return;
	if (!part_name(name, part, sizeof(part)))
		drop_part(d, part);
	if (status >= 0 && WIFSIGNALED(status))
		mt_err("flight: the writer of %s/%s was killed by SIG%s: its "
		       "partial dump removed; the next trigger dumps again",
		       d->c->dir, name, sigabbrev_np(WTERMSIG(status)));
	else
		mt_err("flight: the writer of %s/%s could not be waited for: "
		       "its partial dump removed; the next trigger dumps "
		       "again",
		       d->c->dir, name);
}

static void writer_free(struct fl_writer *k)
{
	free(k->name);
	free(k->why);
	free(k->tag);
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
		dump_done(d, k->name, k->tag, k->why,
			  got == k->pid ? status : -1);
		writer_free(k);
		memmove(d->writers, d->writers + 1,
			--d->nwriters * sizeof(*d->writers));
	}
}

int mt_flight_dump(struct mt_flight *f, const char *tag, const char *why,
		   const struct mt_rank *rank, __u64 lost)
{
	struct mt_flight_dir *d = f->dir;
	struct fl_writer *k;
	char name[1024];
	int fd, ret;

	/* FL_WRITERS being written: this one waits for them */
	mt_flight_dir_reap(d, d->nwriters == FL_WRITERS);
	fd = dump_create(d, f, tag, rank, name, sizeof(name));
	if (fd < 0) {
		d->failed++;
		mt_err("flight: no file for a dump in %s: %s; the next trigger "
		       "dumps again",
		       d->c->dir, strerror(-fd));
		return fd;
	}
	k = &d->writers[d->nwriters];
	*k = (struct fl_writer){ .name = strdup(name),
				 .why = strdup(why),
				 .tag = strdup(tag) };
	k->pid = k->name && k->why && k->tag ? fork() : -1;
	if (k->pid == 0)
		_exit(write_dump(f, fd, name, why, lost) ? 1 : 0);
	if (k->pid > 0) {
		d->nwriters++;
		/* the child's copy is the one that writes */
		if (close(fd))
			mt_err("flight: close %s/%s: %s", d->c->dir, name,
			       strerror(errno));
		return 0;
	}
	/* no child: written here, the events wait meanwhile */
	writer_free(k);
	ret = write_dump(f, fd, name, why, lost);
	dump_done(d, name, tag, why, ret ? W_EXITCODE(1, 0) : 0);
	return ret;
}
