// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdint.h>
#include "analysis/sample.h"
#include "event/kinds.h"

double mt_sample_weight(__u64 size, __u64 rate)
{
	double p;

	if (!rate || !size)
		return 1.0;
	/* expm1: exact where s/R is tiny and 1 - exp() would cancel */
	p = -expm1(-(double)size / (double)rate);
	return p > 0 ? 1.0 / p : 1.0;
}

bool mt_sample_unwalked(__u64 rate, const struct mt_call *r)
{
	if (!rate)
		return false;
	if (r->role == MT_ROLE_FREE)
		return true;
	return r->role == MT_ROLE_ALLOC && !(r->ev->flags & MT_EV_SAMPLED);
}

__u64 mt_sample_scale(__u64 size, double weight)
{
	return (__u64)llround((double)size * weight);
}

void mt_sample_cal_init(struct mt_sample_cal *c, __u64 exact, __u64 walked,
			double est)
{
	double said = est - (double)walked;

	*c = (struct mt_sample_cal){ 0 };
	/* more walked than exact: tables out of step; nothing to share */
	if (exact <= walked)
		return;
	c->left = exact - walked;
	/*
	 * a weight is 1 or more: what est says of the unwalked is >= 0; no
	 * more of them than there are, and never more than it says
	 */
	c->scale = 1.0;
	if (said > (double)c->left)
		c->scale = (double)c->left / said;
}

void mt_sample_cal_none(struct mt_sample_cal *c)
{
	/* what est says of the unwalked, as it is, with no count to keep to */
	*c = (struct mt_sample_cal){ .scale = 1.0, .left = UINT64_MAX };
}

double mt_sample_cal_count(const struct mt_sample_cal *c, __u64 walked,
			   double est)
{
	double said = est - (double)walked;

	return (double)walked + (said > 0 ? said * c->scale : 0);
}

__u64 mt_sample_cal_next(struct mt_sample_cal *c, __u64 walked, double est)
{
	double said = est - (double)walked;
	__u64 upto, add;

	if (said > 0)
		c->sum += said * c->scale;
	/* the sum may pass left by a rounding error: never what is shared */
	upto = c->sum < (double)c->left ? (__u64)llround(c->sum) : c->left;
	add = upto > c->given ? upto - c->given : 0;
	c->given += add;
	return walked + add;
}

/* the exponential quantile at the middle of slice i of n */
static double quantile(size_t i, size_t n)
{
	return -log(((double)i + 0.5) / (double)n);
}

void mt_sample_gaps(__u64 *v, size_t n, __u64 rate)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += quantile(i, n);
	/* the midpoints' mean falls short of 1 by a little: scaled to it */
	for (size_t i = 0; i < n; i++) {
		double g = quantile(i, n) * (double)rate * (double)n / sum;

		v[i] = g < 1 ? 1 : (__u64)llround(g);
	}
}
