// SPDX-License-Identifier: GPL-2.0
/*
 * BPF knows a thread's CUDA device from the thread's cudaSetDevice calls.
 * A thread that set it before the attach (-p) sets none after, and its
 * runtime and driver calls said cuda:?. Its device cannot have changed
 * since (a change is a cudaSetDevice, which BPF would have seen), and the
 * caching allocator tells it: c10 allocates on the thread's current
 * device (CUDAAllocator::allocate asks the runtime for it), and reports
 * each allocation, and each OOM, with that device. A segment's cudaMalloc
 * is followed at once, on the same thread, by the report of the block it
 * was made for.
 *
 * So a thread's device is learned from its first such report, and the
 * allocation calls of a thread not learned yet wait for it, with every
 * event behind them, so that the order stays the time order. A thread
 * whose device does not come within HOLD_NS of later events (a ctypes
 * caller, with no caching allocator) goes on as cuda:? and is not waited
 * for again; neither is any thread once HELD_MAX events wait, or the
 * threads table is full.
 */
#include <stdlib.h>
#include "event/devlearn.h"
#include "event/kinds.h"
#include "lib/hashing.h"
#include "lib/hashtab.h"

/* how far the events pushed may run ahead of the oldest one waiting */
#define HOLD_NS (200 * 1000000ULL)
/* events waiting at most (~2.6 MB) */
#define HELD_MAX 16384u
/* threads known at most (half the table's slots) */
#define THREAD_SLOTS 4096u

/* a thread's state: a device >= 0, learned; or */
#define NOT_LEARNED (-2) /* gave up: not waited for again */

struct thread_slot {
	__u64 key; /* pid << 32 | tid; 0: empty (no pid 0 is traced) */
	int dev;
};

struct mt_devlearn {
	struct mt_devlearn_ops ops;
	void *ctx;
	struct thread_slot *threads; /* THREAD_SLOTS */
	size_t nthreads;
	struct mt_event *held; /* a ring of HELD_MAX, made when first needed */
	size_t head, n;
};

static __u64 key_of(__u32 pid, __u32 tid)
{
	return (__u64)pid << 32 | tid;
}

static bool slot_used(const void *tab, size_t i)
{
	return ((const struct thread_slot *)tab)[i].key;
}

static bool slot_match(const void *tab, size_t i, const void *key)
{
	return ((const struct thread_slot *)tab)[i].key == *(const __u64 *)key;
}

static __u64 slot_hash(const void *tab, size_t i)
{
	return mt_mix64(((const struct thread_slot *)tab)[i].key);
}

static void slot_move(void *tab, size_t to, size_t from)
{
	struct thread_slot *s = tab;

	s[to] = s[from];
	s[from].key = 0;
}

/* the slot of the event's thread, or the empty one where it would go */
static struct thread_slot *thread_of(struct mt_devlearn *d,
				     const struct mt_event *ev)
{
	__u64 key = key_of(ev->pid, ev->tid);

	return &d->threads[mt_probe(d->threads, THREAD_SLOTS - 1, mt_mix64(key),
				    slot_used, slot_match, &key)];
}

/* the thread's state set: false when the table has no room for it */
static bool set_thread(struct mt_devlearn *d, const struct mt_event *ev,
		       int dev)
{
	struct thread_slot *s = thread_of(d, ev);

	if (!s->key) {
		if (2 * (d->nthreads + 1) > THREAD_SLOTS)
			return false;
		s->key = key_of(ev->pid, ev->tid);
		d->nthreads++;
	}
	s->dev = dev;
	return true;
}

/* a process ended or exec'd: its threads, and their devices, are gone */
static void forget_process(struct mt_devlearn *d, __u32 pid)
{
	for (size_t i = 0; i < THREAD_SLOTS;) {
		if (!d->threads[i].key || d->threads[i].key >> 32 != pid) {
			i++;
			continue;
		}
		/* what moves back into slot i is looked at again */
		d->threads[i].key = 0;
		d->nthreads--;
		mt_backshift(d->threads, THREAD_SLOTS - 1, i, slot_used,
			     slot_hash, slot_move);
	}
}

/* the device a c10 report names, the thread's current one; -1: none */
static int reported_device(const struct mt_event *ev)
{
	struct mt_call r;

	if (!mt_decode(ev, -1, &r))
		return -1;
	/* a free's block may be another device's */
	if (r.role != MT_ROLE_ALLOC && r.role != MT_ROLE_OOM)
		return -1;
	return r.dev_type == MT_DT_CUDA ? r.dev_index : -1;
}

/* whether ev is an allocation of a thread whose device is to be learned */
static bool waits(struct mt_devlearn *d, const struct mt_event *ev)
{
	const struct mt_kind_info *ki = mt_kind(ev->kind);

	if (!ki || ki->devsrc != MT_DS_THREAD || ki->role != MT_ROLE_ALLOC ||
	    ev->dev != MT_DEV_UNKNOWN || thread_of(d, ev)->key)
		return false;
	/* no room to note the thread: it would be waited for at each call */
	if (2 * (d->nthreads + 1) > THREAD_SLOTS)
		return false;
	return !d->ops.from_start(d->ctx, ev->pid);
}

/* ev on, with the device its thread is known to have */
static void hand_on(struct mt_devlearn *d, const struct mt_event *ev)
{
	const struct mt_kind_info *ki = mt_kind(ev->kind);
	const struct thread_slot *s;
	struct mt_event copy;

	if (ki && ki->devsrc == MT_DS_THREAD && ev->dev == MT_DEV_UNKNOWN) {
		s = thread_of(d, ev);
		if (s->key && s->dev >= 0) {
			copy = *ev;
			copy.dev = s->dev;
			ev = &copy;
		}
	}
	d->ops.event(d->ctx, ev);
	if (ev->kind == MT_K_EXIT || ev->kind == MT_K_EXEC)
		forget_process(d, ev->pid);
}

static struct mt_event *held_at(struct mt_devlearn *d, size_t i)
{
	return &d->held[(d->head + i) % HELD_MAX];
}

/*
 * Hand on the events waiting, up to the first allocation whose thread is
 * still to be learned and may still be: its thread's device did not come,
 * upto is less than HOLD_NS after it and fewer than HELD_MAX wait.
 */
static void drain(struct mt_devlearn *d, __u64 upto)
{
	while (d->n) {
		struct mt_event *ev = held_at(d, 0);

		if (waits(d, ev)) {
			if (d->n < HELD_MAX && upto < ev->ts + HOLD_NS)
				return;
			/* its device never came: cuda:?, and not waited again */
			set_thread(d, ev, NOT_LEARNED);
		}
		hand_on(d, ev);
		d->head = (d->head + 1) % HELD_MAX;
		d->n--;
	}
}

struct mt_devlearn *mt_devlearn_new(const struct mt_devlearn_ops *ops,
				    void *ctx)
{
	struct mt_devlearn *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->threads = calloc(THREAD_SLOTS, sizeof(*d->threads));
	if (!d->threads) {
		free(d);
		return NULL;
	}
	d->ops = *ops;
	d->ctx = ctx;
	return d;
}

void mt_devlearn_free(struct mt_devlearn *d)
{
	if (!d)
		return;
	free(d->held);
	free(d->threads);
	free(d);
}

void mt_devlearn_push(struct mt_devlearn *d, const struct mt_event *ev)
{
	const struct mt_kind_info *ki = mt_kind(ev->kind);
	int dev;

	/*
	 * Learned as it comes, so that the allocation waiting before it
	 * takes it. Only where BPF did not know the device: one it knows is
	 * on the thread's own events.
	 */
	if (ki && ki->devsrc == MT_DS_C10ARG && ev->dev == MT_DEV_UNKNOWN) {
		dev = reported_device(ev);
		if (dev >= 0)
			set_thread(d, ev, dev);
	}
	if (!d->n && !waits(d, ev)) {
		hand_on(d, ev);
		return;
	}
	if (!d->held) {
		d->held = malloc(HELD_MAX * sizeof(*d->held));
		/* no memory to wait in: cuda:? as before */
		if (!d->held) {
			set_thread(d, ev, NOT_LEARNED);
			hand_on(d, ev);
			return;
		}
	}
	/* full: the oldest waiting is given up (drain() says so) */
	if (d->n == HELD_MAX)
		drain(d, ev->ts);
	*held_at(d, d->n++) = *ev;
	drain(d, ev->ts);
}

void mt_devlearn_upto(struct mt_devlearn *d, __u64 upto)
{
	drain(d, upto);
}

size_t mt_devlearn_held(const struct mt_devlearn *d)
{
	return d->n;
}
