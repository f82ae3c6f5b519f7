// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "event/cudaerr.h"
#include "event/format.h"
#include "lib/escape.h"

struct out {
	char *buf;
	size_t len, pos;
	bool overflow;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o,
						      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->pos)
		o->overflow = true;
	else
		o->pos += (size_t)n;
}

const char *mt_format_dev(char *buf, size_t len, enum mt_dev_type type,
			  int index)
{
	switch (type) {
	case MT_DT_CUDA:
		if (index < 0)
			snprintf(buf, len, "cuda:?");
		else
			snprintf(buf, len, "cuda:%d", index);
		break;
	case MT_DT_HOST:
		snprintf(buf, len, "host");
		break;
	case MT_DT_CPU:
		snprintf(buf, len, "cpu");
		break;
	default:
		snprintf(buf, len, "-");
		break;
	}
	return buf;
}

const char *mt_format_account(char *buf, size_t len, enum mt_dev_type type,
			      int index, enum mt_space space)
{
	char dev[32];

	mt_format_dev(dev, sizeof(dev), type, index);
	if (space == MT_SP_CPU)
		snprintf(buf, len, "%s", dev);
	else
		snprintf(buf, len, "%s %s", dev, mt_space_name(space));
	return buf;
}

const char *mt_byte_unit(double *v)
{
	static const char *const units[] = { "B",   "KiB", "MiB",
					     "GiB", "TiB", "PiB" };
	int u = 0;

	while ((*v >= 1024 || *v <= -1024) && u < 5) {
		*v /= 1024;
		u++;
	}
	return units[u];
}

const char *mt_format_bytes(char *buf, size_t len, unsigned long long bytes)
{
	double v = (double)bytes;
	const char *u = mt_byte_unit(&v);

	/* three significant digits are what a reader compares at a glance */
	if (bytes < 1024)
		snprintf(buf, len, "%llu B", bytes);
	else if (v >= 99.95)
		snprintf(buf, len, "%.0f %s", v, u);
	else if (v >= 9.995)
		snprintf(buf, len, "%.1f %s", v, u);
	else
		snprintf(buf, len, "%.2f %s", v, u);
	return buf;
}

const char *mt_format_comm(char *buf, size_t len, const char *comm)
{
	char c[MT_COMM_LEN + 1];
	size_t i;

	/* one token: the line is split on spaces by its readers */
	for (i = 0; i < MT_COMM_LEN && comm[i]; i++)
		c[i] = (comm[i] == ' ' || comm[i] == '\t') ? '_' : comm[i];
	c[i] = '\0';
	mt_escape(buf, len, i ? c : "?", MT_ESC_FIELD);
	return buf;
}

/* " key=value", the value escaped: the target's name stays one field */
static void put_field(struct out *o, const char *key, const char *value)
{
	size_t n;

	put(o, " %s=", key);
	if (o->overflow)
		return;
	n = mt_escape(o->buf + o->pos, o->len - o->pos, value, MT_ESC_FIELD);
	if (n >= o->len - o->pos)
		o->overflow = true;
	else
		o->pos += n;
}

int mt_format_event(char *buf, size_t len, const struct mt_call *r,
		    const char *caller, const struct mt_attrib *a)
{
	const struct mt_event *ev = r->ev;
	struct out o = { .buf = buf, .len = len };
	char dev[32], comm[MT_FORMAT_COMM_LEN];

	put(&o, "%s", mt_format_comm(comm, sizeof(comm), ev->comm));
	put(&o, " %u/%u [%03u] %" PRIu64 ".%06" PRIu64 ": %s:", ev->pid,
	    ev->tid, ev->cpu, (uint64_t)(ev->ts / 1000000000ULL),
	    (uint64_t)(ev->ts % 1000000000ULL / 1000), r->event);
	if (r->has_ptr)
		put(&o, " %s=0x%" PRIx64, r->ki->handle ? "handle" : "ptr",
		    (uint64_t)r->ptr);
	if (r->size_state == MT_SIZE_KNOWN)
		put(&o, " size=%" PRIu64, (uint64_t)r->size);
	else if (r->size_state == MT_SIZE_UNKNOWN)
		put(&o, " size=?");
	if (r->dev_type != MT_DT_NONE)
		put(&o, " dev=%s",
		    mt_format_dev(dev, sizeof(dev), r->dev_type, r->dev_index));
	if (r->has_ret) {
		put(&o, " ret=%d", r->ret);
		if (r->failed) {
			const char *name =
				mt_cuda_err_name(r->ki->errdomain, r->ret);

			put(&o, " err=%s", name ? name : "unknown");
		}
	}
	if (r->has_totals)
		put(&o, " allocated=%" PRIu64 " reserved=%" PRIu64,
		    (uint64_t)r->allocated, (uint64_t)r->reserved);
	if (r->has_stream)
		put(&o, " stream=0x%" PRIx64, (uint64_t)r->stream);
	if (r->has_handle)
		put(&o, " handle=0x%" PRIx64, (uint64_t)r->handle);
	if (a && a->detail)
		put_field(&o, "type", a->detail);
	put_field(&o, "caller", caller ? caller : "?");
	if (a && a->phase)
		put_field(&o, "phase", a->phase);
	if (a && a->module)
		put_field(&o, "module", a->module);
	if (a && a->node)
		put_field(&o, "node", a->node);
	if (a && a->rank >= 0)
		put(&o, " rank=%d", a->rank);
	put(&o, "\n");
	return o.overflow ? -1 : (int)o.pos;
}
