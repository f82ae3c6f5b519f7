// SPDX-License-Identifier: GPL-2.0
/* A raw event given its meaning by its kind's entry in the probe table. */
#include "event/kinds.h"

/* c10::DeviceType::CUDA (c10/core/DeviceType.h); CPU is 0 */
#define C10_DEVICE_CUDA 1

static __u64 arg(const struct mt_event *ev, int i)
{
	if (i >= MT_A(0) && i <= MT_A(MT_NARGS - 1))
		return ev->args[i - 1];
	if (i == MT_ARG_OUT)
		return ev->out;
	return (__u64)ev->ret;
}

static bool arg_known(const struct mt_event *ev, int i)
{
	if (i == MT_ARG_NONE)
		return false;
	if (i == MT_ARG_OUT)
		return ev->flags & MT_EV_OUT;
	if (i == MT_ARG_RET)
		return ev->flags & MT_EV_RET;
	return true;
}

static void decode_dev(const struct mt_event *ev, const struct mt_kind_info *ki,
		       int default_dev, struct mt_call *r)
{
	__u64 d;

	r->dev_index = -1;
	switch (ki->devsrc) {
	case MT_DS_NONE:
		r->dev_type = MT_DT_NONE;
		break;
	case MT_DS_HOST:
		r->dev_type = MT_DT_HOST;
		break;
	case MT_DS_CPU:
		r->dev_type = MT_DT_CPU;
		break;
	case MT_DS_THREAD:
		r->dev_type = MT_DT_CUDA;
		r->dev_index =
			ev->dev == MT_DEV_UNKNOWN ? default_dev : ev->dev;
		break;
	case MT_DS_PROP:
		r->dev_type = MT_DT_CUDA;
		r->dev_index = ev->dev;
		break;
	case MT_DS_C10ARG:
		/* c10::Device in the low bytes: DeviceType, then index */
		d = arg(ev, ki->dev_arg);
		r->dev_type =
			(d & 0xff) == C10_DEVICE_CUDA ? MT_DT_CUDA : MT_DT_CPU;
		r->dev_index = (signed char)((d >> 8) & 0xff);
		if (r->dev_type == MT_DT_CPU)
			r->dev_index = -1;
		break;
	}
}

bool mt_decode(const struct mt_event *ev, int default_dev, struct mt_call *r)
{
	const struct mt_kind_info *ki = mt_kind(ev->kind);
	__s64 size;

	if (!ki || !ki->event)
		return false;
	/* each field set once: zeroing the struct first costs more */
	_Static_assert(sizeof(*r) == 128,
		       "mt_decode() sets each field of struct mt_call");
	r->ev = ev;
	r->ki = ki;
	r->event = ki->event;
	r->role = ki->role;
	r->has_ptr = arg_known(ev, ki->ptr_arg);
	r->ptr = r->has_ptr ? arg(ev, ki->ptr_arg) : 0;
	r->size_state = MT_SIZE_NONE;
	r->size = 0;
	if (ki->size_arg != MT_ARG_NONE) {
		r->size_state = MT_SIZE_KNOWN;
		r->size = arg(ev, ki->size_arg);
		size = (__s64)r->size;
		if (ki->signed_size && size < 0) {
			r->role = MT_ROLE_FREE;
			r->event = ki->free_event;
			r->size = (__u64)-size;
		}
	} else if (r->role == MT_ROLE_FREE) {
		r->size_state = MT_SIZE_UNKNOWN; /* until the live table says */
	}
	r->has_stream = ki->stream_arg != MT_ARG_NONE;
	r->stream = r->has_stream ? arg(ev, ki->stream_arg) : 0;
	r->has_handle = ev->kind == MT_K_CU_MEM_MAP;
	r->handle = r->has_handle ? ev->args[3] : 0;
	r->has_totals = ki->allocated_arg != MT_ARG_NONE;
	r->allocated = r->has_totals ? arg(ev, ki->allocated_arg) : 0;
	r->reserved = r->has_totals ? arg(ev, ki->reserved_arg) : 0;
	r->has_ret = ki->errdomain != MT_ERR_NONE && (ev->flags & MT_EV_RET);
	/* cudaError_t / CUresult are 32-bit */
	r->ret = r->has_ret ? (int)ev->ret : 0;
	r->failed = r->ret != 0;
	/* a failed allocation returns no pointer worth showing */
	if (r->failed &&
	    (ki->ptr_arg == MT_ARG_OUT || ki->ptr_arg == MT_ARG_RET))
		r->has_ptr = false;
	decode_dev(ev, ki, default_dev, r);
	return true;
}
