// SPDX-License-Identifier: GPL-2.0
/*
 * The contexts the record's writer and reader code events against
 * (record/coder.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "record/coder.h"

int mt_rec_coder_init(struct coder *c)
{
	c->s = calloc(1, sizeof(*c->s));
	if (!c->s)
		return -ENOMEM;
	c->n = c->cap = 1;
	return 0;
}

/* room for the context of one more site */
int mt_rec_coder_add_site(struct coder *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap * 2;
		struct site_ctx *s = realloc(c->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->s = s;
		c->cap = cap;
	}
	memset(&c->s[c->n++], 0, sizeof(c->s[0]));
	return 0;
}
