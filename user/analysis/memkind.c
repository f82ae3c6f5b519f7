// SPDX-License-Identifier: GPL-2.0
/* The kind of memory an allocation is (memkind.h says how it is told). */
#include <string.h>
#include "analysis/memkind.h"

static const struct {
	const char *name, *remedy;
} kinds[MT_MK_MAX] = {
	[MT_MK_PARAMETERS] = { "parameters",
			       "lower precision, FSDP or a smaller model" },
	[MT_MK_INPUTS] = { "inputs", "a smaller batch" },
	[MT_MK_ACTIVATIONS] = { "activations",
				"activation checkpointing or a smaller batch" },
	[MT_MK_GRADIENTS] = { "gradients", "sharded gradients (ZeRO-2, FSDP)" },
	[MT_MK_OPTIMIZER] = { "optimizer_state",
			      "a sharded optimizer (ZeRO, FSDP)" },
	[MT_MK_TEMPORARIES] = { "temporaries",
				"a smaller batch, fused or in-place ops" },
	[MT_MK_UNKNOWN] = { "unknown", NULL },
};

static bool is(const char *phase, const char *name)
{
	return phase && !strcmp(phase, name);
}

void mt_memkind_tick(struct mt_memkind_clock *c, const char *phase, __u32 step)
{
	if (!is(phase, "forward") && !is(phase, "backward") &&
	    !is(phase, "optimizer"))
		return;
	if (c->instance && is(c->phase, phase) && c->step == step)
		return;
	c->instance++;
	c->phase = phase;
	c->step = step;
}

enum mt_memkind mt_memkind_settled(const char *phase, __u32 born,
				   bool from_start)
{
	if (!phase)
		return MT_MK_UNKNOWN;
	if (is(phase, "forward"))
		return MT_MK_ACTIVATIONS;
	if (is(phase, "backward"))
		return MT_MK_GRADIENTS;
	if (is(phase, "optimizer"))
		return MT_MK_OPTIMIZER;
	/*
	 * Outside the phases, before the first one: the model's (unless made
	 * before we came). Made later, between phases: a batch
	 */
	if (born)
		return MT_MK_INPUTS;
	return from_start ? MT_MK_PARAMETERS : MT_MK_UNKNOWN;
}

enum mt_memkind mt_memkind_of(const char *phase, __u32 born,
			      const struct mt_memkind_clock *c, bool alive,
			      bool from_start)
{
	if (!phase)
		return MT_MK_UNKNOWN;
	/* its phase had not ended when the trace did: it cannot be told */
	if (born == c->instance)
		return alive ? MT_MK_UNKNOWN : MT_MK_TEMPORARIES;
	/*
	 * Made before the first phase and freed before the second step: the
	 * first batch, which the next batch frees, not the model, which lives
	 * on to the process's exit at least (a run of one step: no telling
	 * them apart)
	 */
	if (!born && !alive && !c->step &&
	    mt_memkind_settled(phase, born, true) == MT_MK_PARAMETERS)
		return MT_MK_INPUTS;
	return mt_memkind_settled(phase, born, from_start);
}

int mt_memkind_by_size(const __u64 bytes[MT_MK_MAX], int order[MT_MK_MAX],
		       __u64 *sum)
{
	int n = 0;

	*sum = 0;
	for (int k = 0; k < MT_MK_MAX; k++) {
		int i = n;

		*sum += bytes[k];
		if (!bytes[k])
			continue;
		/* equal bytes keep the kinds' order */
		for (; i > 0 && bytes[order[i - 1]] < bytes[k]; i--)
			order[i] = order[i - 1];
		order[i] = k;
		n++;
	}
	return n;
}

const char *mt_memkind_name(enum mt_memkind k)
{
	return k < MT_MK_MAX ? kinds[k].name : "unknown";
}

const char *mt_memkind_remedy(enum mt_memkind k)
{
	return k < MT_MK_MAX ? kinds[k].remedy : NULL;
}
