// SPDX-License-Identifier: GPL-2.0
/*
 * The features of the live trace (feature.h), and each step of the trace
 * handed to them. The order of the list is the order of their calls: the
 * flight recorder's dumps are taken before top gives the terminal back,
 * and a dry run's verdict is printed after top and the metrics are done.
 */
#include "trace/feature.h"
#include "trace/tracer.h"

extern const struct mt_feature mt_flight_feature;
extern const struct mt_feature mt_watch_feature;
extern const struct mt_feature mt_top_feature;
extern const struct mt_feature mt_metrics_feature;
extern const struct mt_feature mt_dryrun_feature;
extern const struct mt_feature mt_modlog_feature;

static const struct mt_feature *const features[] = {
	&mt_flight_feature,  &mt_watch_feature,	 &mt_top_feature,
	&mt_metrics_feature, &mt_dryrun_feature, &mt_modlog_feature,
};

#define NFEATURES (sizeof(features) / sizeof(features[0]))
_Static_assert(NFEATURES <= MT_MAX_FEATURES, "MT_MAX_FEATURES too small");

/* feature i, if its open turned it on (made it a state); else NULL */
static const struct mt_feature *on(const struct mt_tracer *tr, unsigned int i)
{
	return tr->feat[i] ? features[i] : NULL;
}

int mt_features_open(struct mt_tracer *tr)
{
	for (unsigned int i = 0; i < NFEATURES; i++)
		if (features[i]->open(tr, i, &tr->feat[i]))
			return -1;
	return 0;
}

int mt_features_found(struct mt_tracer *tr)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->found && f->found(tr->feat[i], tr))
			return -1;
	}
	return 0;
}

int mt_features_start(struct mt_tracer *tr)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->start && f->start(tr->feat[i], tr))
			return -1;
	}
	return 0;
}

/* whether feature f takes events of kind whole */
static bool takes(const struct mt_feature *f, __u32 kind)
{
	for (const __u32 *k = f->kinds; k && *k != MT_K_NONE; k++)
		if (*k == kind)
			return true;
	return false;
}

bool mt_features_probe(struct mt_tracer *tr, const struct mt_event *ev)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		if (!takes(features[i], ev->kind))
			continue;
		/* a feature that is off has no event of its probes to take */
		if (tr->feat[i])
			features[i]->on_probe(tr->feat[i], tr, ev);
		return true;
	}
	return false;
}

void mt_features_event(struct mt_tracer *tr, struct mt_traced *t,
		       const struct mt_event *ev, bool default0,
		       const struct mt_call *r, const struct mt_site *site)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->on_event)
			f->on_event(tr->feat[i], tr, t, ev, default0, r, site);
	}
}

void mt_features_exec(struct mt_tracer *tr, struct mt_traced *t,
		      const struct mt_event *ev, const struct mt_site *site)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->on_exec)
			f->on_exec(tr->feat[i], tr, t, ev, site);
	}
}

void mt_features_lib(struct mt_tracer *tr, struct mt_traced *t,
		     const struct mt_mapping *m, int probes)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->on_lib)
			f->on_lib(tr->feat[i], tr, t, m, probes);
	}
}

void mt_features_exit(struct mt_tracer *tr, struct mt_traced *t)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->on_exit)
			f->on_exit(tr->feat[i], tr, t);
	}
}

bool mt_features_tick(struct mt_tracer *tr, __u64 now)
{
	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (f && f->tick && f->tick(tr->feat[i], tr, now))
			return true;
	}
	return false;
}

int mt_features_close(struct mt_tracer *tr)
{
	int ret = 0;

	for (unsigned int i = 0; i < NFEATURES; i++) {
		const struct mt_feature *f = on(tr, i);

		if (!f)
			continue;
		if (f->close && f->close(tr->feat[i], tr) < 0)
			ret = -1;
		tr->feat[i] = NULL;
	}
	return ret;
}
