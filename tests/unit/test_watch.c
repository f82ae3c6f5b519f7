// SPDX-License-Identifier: GPL-2.0
/* user/analysis/watch.c: growth rate, time to OOM, risk, alerts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/kinds.h"
#include "analysis/sites.h"
#include "analysis/summary.h"
#include "analysis/watch.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define SEC 1000000000ULL
#define T0 (1000 * SEC)

struct fixture {
	struct mt_summary *sum;
	struct mt_sites *sites;
	struct mt_watch *w;
	char *buf;
	size_t len;
	FILE *out;
};

static void setup(struct fixture *x, const struct mt_watch_conf *c)
{
	x->sum = calloc(1, sizeof(*x->sum));
	x->sites = mt_sites_new(64);
	x->w = mt_watch_new(c);
	x->buf = NULL;
	x->len = 0;
	x->out = open_memstream(&x->buf, &x->len);
	assert_non_null(x->sum);
	assert_non_null(x->sites);
	assert_non_null(x->w);
	assert_non_null(x->out);
}

static void teardown(struct fixture *x)
{
	assert_int_equal(fclose(x->out), 0);
	free(x->buf);
	mt_watch_free(x->w);
	mt_sites_free(x->sites);
	mt_summary_free(x->sum);
	free(x->sum);
}

/* what the output holds so far */
static const char *text(struct fixture *x)
{
	assert_int_equal(fflush(x->out), 0);
	return x->buf;
}

/* a caching-allocator event with its running totals, as memtrace counts */
static void c10_totals(struct mt_summary *s, __u32 pid, int dev,
		       __u64 allocated, __u64 reserved)
{
	const struct mt_kind_info *ki = mt_kind(MT_K_C10_REPORT);
	struct mt_event ev = { .pid = pid, .tid = pid };
	struct mt_call r = {
		.ev = &ev,
		.ki = ki,
		.event = ki->event,
		.role = MT_ROLE_ALLOC,
		.size_state = MT_SIZE_KNOWN,
		.size = 512,
		.dev_type = MT_DT_CUDA,
		.dev_index = dev,
		.has_totals = true,
		.allocated = allocated,
		.reserved = reserved,
	};

	mt_summary_event(s, &r);
}

static size_t count(const char *buf, const char *needle)
{
	size_t n = 0;

	for (const char *p = buf; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* the last line starting with prefix, copied */
static const char *last_line(const char *buf, const char *prefix)
{
	static char line[1024];
	const char *p = buf, *found = NULL;
	size_t n;

	for (; (p = strstr(p, prefix)); p++)
		if (p == buf || p[-1] == '\n')
			found = p;
	assert_non_null(found);
	n = strcspn(found, "\n");
	assert_true(n < sizeof(line));
	memcpy(line, found, n);
	line[n] = '\0';
	return line;
}

/* rate=+X UNIT/s in bytes per second */
static double rate_of(const char *line)
{
	const char *p = strstr(line, " rate=");
	char unit[8];
	double v, scale = 1;

	assert_non_null(p);
	assert_int_equal(sscanf(p, " rate=%lf %7[A-Za-z]/s", &v, unit), 2);
	if (!strcmp(unit, "KiB"))
		scale = 1024.0;
	else if (!strcmp(unit, "MiB"))
		scale = (double)MIB;
	else if (!strcmp(unit, "GiB"))
		scale = (double)GIB;
	return v * scale;
}

/* oom_in=[Nh]NNm[NN]s and its kin in seconds */
static double oom_in_of(const char *line)
{
	const char *p = strstr(line, " oom_in=");
	double total = 0;
	char *end;

	assert_non_null(p);
	p += strlen(" oom_in=");
	while (*p >= '0' && *p <= '9') {
		double v = strtod(p, &end);

		switch (*end) {
		case 'd':
			total += v * 86400;
			break;
		case 'h':
			total += v * 3600;
			break;
		case 'm':
			total += v * 60;
			break;
		case 's':
			total += v;
			break;
		default:
			fail_msg("bad duration in %s", line);
		}
		p = end + 1;
	}
	return total;
}

static void assert_near(double got, double want, double rel)
{
	if (got < want * (1 - rel) || got > want * (1 + rel))
		fail_msg("%f is not within %.1f %% of %f", got, 100 * rel,
			 want);
}

/* 1 GiB, growing 100 MiB/s against 80 GiB, a line a second */
static void test_rate_and_oom(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 80 * GIB };
	const double rate = 100.0 * MIB;
	struct fixture x;
	const char *l;

	setup(&x, &c);
	assert_int_equal(mt_watch_device_mem(x.w, 0), 80 * GIB);
	for (int k = 0; k <= 20; k++) {
		__u64 used = GIB + (__u64)(rate * k);

		c10_totals(x.sum, 42, 0, used / 2, used);
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
		/* ticks between the intervals print nothing */
		mt_watch_tick(x.w, T0 + k * SEC + 10000000, x.sum, x.sites,
			      x.out);
		mt_watch_tick(x.w, T0 + k * SEC + 990000000, x.sum, x.sites,
			      x.out);
	}
	assert_int_equal(count(text(&x), "# watch "), 20);
	l = last_line(text(&x), "# watch ");
	assert_non_null(strstr(l, "# watch 20.0s at="));
	assert_non_null(strstr(l, " pid=42 cuda:0 used="));
	assert_non_null(strstr(l, " of 80.0 GiB ("));
	assert_near(rate_of(l), rate, 0.01);
	/* (80 GiB - 1 GiB - 2000 MiB) / 100 MiB/s */
	assert_near(oom_in_of(l), ((double)(79 * GIB) - 20 * rate) / rate,
		    0.01);
	assert_non_null(strstr(l, " confidence=high(r2=1.00,n=21) "));
	/* full within the hour */
	assert_non_null(strstr(l, " risk=medium"));
	assert_null(strstr(text(&x), "ALERT"));
	teardown(&x);
}

/* the fit covers the window only: an old plateau does not slow it */
static void test_window(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 10.0,
				   .device_mem = 80 * GIB };
	struct fixture x;
	const char *l;

	setup(&x, &c);
	for (int k = 0; k <= 40; k++) {
		__u64 used = GIB + (k < 20 ? 0 : (__u64)(k - 20) * 10 * MIB);

		c10_totals(x.sum, 42, 0, used, used);
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	}
	l = last_line(text(&x), "# watch ");
	assert_near(rate_of(l), 10.0 * MIB, 0.01);
	assert_non_null(strstr(l, ",n=11) "));
	teardown(&x);
}

/* without c10, the runtime's and driver's live bytes are summed */
static void test_raw_accounts(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 10 * GIB };
	struct fixture x;
	const char *l;

	setup(&x, &c);
	for (int k = 0; k <= 10; k++) {
		mt_summary_live(x.sum, 9, MT_DT_CUDA, 1, MT_SP_CUDART,
				(__s64)(20 * MIB));
		mt_summary_live(x.sum, 9, MT_DT_CUDA, 1, MT_SP_DRIVER,
				(__s64)(10 * MIB));
		/* mapped ranges repeat the handles' bytes; pinned is host */
		mt_summary_live(x.sum, 9, MT_DT_CUDA, 1, MT_SP_VAMAP,
				(__s64)(100 * MIB));
		mt_summary_live(x.sum, 9, MT_DT_HOST, -1, MT_SP_PINNED,
				(__s64)(100 * MIB));
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	}
	l = last_line(text(&x), "# watch ");
	assert_non_null(strstr(l, " pid=9 cuda:1 used=330 MiB of 10.0 GiB"));
	assert_near(rate_of(l), 30.0 * MIB, 0.01);
	assert_null(strstr(text(&x), " host "));
	teardown(&x);
}

/*
 * CPU tensor memory is watched too, against the host's memory, apart from
 * a CUDA device of unknown index of the same process
 */
static void test_cpu_account(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0, .window = 30.0 };
	struct fixture x;
	char line[512];
	const char *l;

	setup(&x, &c);
	for (int k = 0; k <= 10; k++) {
		mt_summary_live(x.sum, 9, MT_DT_CPU, -1, MT_SP_CPU,
				(__s64)(4 * MIB));
		mt_summary_live(x.sum, 9, MT_DT_CUDA, -1, MT_SP_CUDART,
				(__s64)(1 * MIB));
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	}
	/* the CPU's line first: its account was seen first */
	l = strstr(text(&x), "# watch 10.0s");
	assert_non_null(l);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
	assert_non_null(strstr(line, " pid=9 cpu used=44.0 MiB of "));
	assert_null(strstr(line, " of unknown"));
	assert_near(rate_of(line), 4.0 * MIB, 0.01);
	assert_non_null(
		strstr(text(&x), " pid=9 cuda:? used=11.0 MiB of unknown"));
	/* the note of an unknown size is the CUDA device's, not the CPU's */
	assert_non_null(
		strstr(text(&x), "# watch cuda:?: device size unknown"));
	assert_null(strstr(text(&x), "# watch cpu: device size"));
	teardown(&x);
}

/* a flat series never runs out; its risk follows the share used */
static const char *flat_risk(__u64 used_mib)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 1000 * MIB };
	static char risk[32];
	struct fixture x;
	const char *l;

	setup(&x, &c);
	c10_totals(x.sum, 5, 0, used_mib * MIB, used_mib * MIB);
	for (int k = 0; k <= 3; k++)
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	l = last_line(text(&x), "# watch ");
	assert_non_null(strstr(l, " rate=+0.0 B/s oom_in=never "));
	assert_int_equal(sscanf(strstr(l, " risk="), " risk=%31s", risk), 1);
	teardown(&x);
	return risk;
}

/* growing to OOM in `seconds` at the last of 11 lines, at most 26 % used */
static const char *growing_risk(double seconds)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 100 * GIB };
	double rate = (double)(99 * GIB) / (seconds + 10);
	static char risk[32];
	struct fixture x;
	const char *l;

	setup(&x, &c);
	for (int k = 0; k <= 10; k++) {
		__u64 used = GIB + (__u64)(rate * k);

		c10_totals(x.sum, 5, 0, used, used);
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	}
	l = last_line(text(&x), "# watch ");
	assert_near(oom_in_of(l), seconds, 0.01);
	assert_int_equal(sscanf(strstr(l, " risk="), " risk=%31s", risk), 1);
	teardown(&x);
	return risk;
}

static void test_risk_levels(void **state)
{
	assert_string_equal(flat_risk(690), "low");
	assert_string_equal(flat_risk(700), "medium");
	assert_string_equal(flat_risk(849), "medium");
	assert_string_equal(flat_risk(850), "high");
	assert_string_equal(flat_risk(950), "critical");
	assert_string_equal(growing_risk(30), "critical");
	assert_string_equal(growing_risk(300), "high");
	assert_string_equal(growing_risk(1800), "medium");
	assert_string_equal(growing_risk(7200), "low");
}

/*
 * a zigzag around 30 MiB/s fits badly: its OOM in some 4 minutes would be
 * a high risk, but it is not trusted
 */
static void test_low_confidence(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 10 * GIB };
	struct fixture x;
	const char *l;

	setup(&x, &c);
	for (int k = 0; k <= 10; k++) {
		__u64 used = GIB + (__u64)k * 30 * MIB + (k % 2) * GIB;

		c10_totals(x.sum, 5, 0, used, used);
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	}
	l = last_line(text(&x), "# watch ");
	assert_non_null(strstr(l, " confidence=low("));
	assert_non_null(strstr(l, " risk=low"));
	teardown(&x);
}

/*
 * A one-time rise (an optimizer's state made at its first step) is no
 * growth: flat after it, the rate is 0 where a least-squares line would
 * see 50 MiB/s and an OOM in 20 s; with a steady growth after it, the
 * rate is that growth's.
 */
static void test_warmup(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 4 * GIB };
	struct fixture x;
	const char *l;

	for (int leak = 0; leak <= 1; leak++) {
		setup(&x, &c);
		for (int k = 0; k <= 20; k++) {
			__u64 used = GIB + (k >= 2 ? 2 * GIB : 0) +
				     (__u64)(leak * k) * MIB;

			c10_totals(x.sum, 5, 0, used, used);
			mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
		}
		l = last_line(text(&x), "# watch 20.0s");
		if (leak) {
			assert_near(rate_of(l), 1.0 * MIB, 0.001);
		} else {
			assert_non_null(
				strstr(l, " rate=+0.0 B/s oom_in=never "));
			assert_non_null(strstr(l, " risk=medium"));
		}
		teardown(&x);
	}
}

/* no --device-mem and no index: size unknown, said once */
static void test_unknown_size(void **state)
{
	struct mt_watch_conf c = { .interval = 0.5, .window = 30.0 };
	struct fixture x;
	const char *l;

	setup(&x, &c);
	assert_int_equal(mt_watch_device_mem(x.w, -1), 0);
	c10_totals(x.sum, 5, -1, GIB, GIB);
	for (int k = 0; k <= 4; k++)
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	assert_int_equal(count(text(&x), "device size unknown"), 1);
	l = last_line(text(&x), "# watch 4.0s");
	assert_non_null(strstr(l, " cuda:? used=1.00 GiB of unknown "));
	assert_non_null(strstr(l, " oom_in=unknown "));
	assert_non_null(strstr(l, " risk=unknown"));
	teardown(&x);
}

static struct mt_site *site(struct mt_sites *s, __u32 pid, const char *event,
			    const char *module, const char **frames, int depth)
{
	struct mt_site key = { .pid = pid,
			       .event = event,
			       .module = module,
			       .phase = "forward",
			       .frames = frames,
			       .depth = depth };
	bool is_new;
	struct mt_site *r = mt_sites_get(s, &key, &is_new);

	assert_true(is_new);
	return r;
}

static void test_alert(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 1000 * MIB,
				   .alert_pct = 85 };
	static const __u64 used_mib[] = { 500, 600, 700, 800, 860,
					  900, 800, 870, 880 };
	const char *c10 = mt_kind(MT_K_C10_REPORT)->event;
	const char *cudart = mt_kind(MT_K_CUDA_MALLOC)->event;
	const char *fc_frames[] = { "Net.forward (model.py:12)",
				    "train (train.py:40)" };
	struct mt_site *fc, *embed, *other_pid, *below, *shrinking;
	struct fixture x;
	const char *l, *buf, *first, *second;

	setup(&x, &c);
	fc = site(x.sites, 42, c10, "Net.fc", fc_frames, 2);
	embed = site(x.sites, 42, c10, "Net.embed", NULL, 0);
	other_pid = site(x.sites, 43, c10, "Other.big", NULL, 0);
	below = site(x.sites, 42, cudart, "Net.cudart", NULL, 0);
	shrinking = site(x.sites, 42, c10, "Net.shrink", NULL, 0);
	shrinking->live_bytes = 900 * MIB;
	for (size_t k = 0; k < sizeof(used_mib) / sizeof(used_mib[0]); k++) {
		if (k == 4 || k == 7) {
			/* what grew before the crossings */
			fc->live_bytes += 50 * MIB;
			embed->live_bytes += 10 * MIB;
			other_pid->live_bytes += 500 * MIB;
			below->live_bytes += 100 * MIB;
			shrinking->live_bytes -= 100 * MIB;
		}
		/* reserved well over allocated: fragmentation advice */
		c10_totals(x.sum, 42, 0, used_mib[k] * MIB / 2,
			   used_mib[k] * MIB);
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
		/* every site's mark follows it */
		assert_int_equal(fc->mark_bytes, fc->live_bytes);
		assert_int_equal(other_pid->mark_bytes, other_pid->live_bytes);
	}
	buf = text(&x);
	/* once per crossing upward: at 860 and again at 870 after 800 */
	assert_int_equal(count(buf, "over 85.0 %"), 2);
	first = strstr(buf, "# ALERT 4.0s pid=42 cuda:0 over 85.0 %: ");
	second = strstr(buf, "# ALERT 7.0s pid=42 cuda:0 over 85.0 %: ");
	assert_non_null(first);
	assert_non_null(second);
	assert_non_null(strstr(first, "used=860 MiB of 1000 MiB (86.0 %)"));
	assert_non_null(strstr(
		buf,
		"# ALERT pid=42 cuda:0 growing +50.0 MiB event=c10:alloc module=Net.fc phase=forward frame=Net.forward (model.py:12)\n"
		"# ALERT pid=42 cuda:0 growing +10.0 MiB event=c10:alloc module=Net.embed phase=forward frame=-\n"));
	/* other processes, the runtime under c10, and shrinking sites: no */
	assert_null(strstr(buf, "Other.big"));
	assert_null(strstr(buf, "Net.cudart"));
	assert_null(strstr(buf, "Net.shrink"));
	assert_int_equal(count(buf, "growing +50.0 MiB"), 2);
	assert_non_null(strstr(buf, "advice: reduce the batch size"));
	assert_non_null(strstr(buf, "torch.utils.checkpoint"));
	assert_non_null(strstr(
		buf, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
	/*
	 * the line before it: 86 % used, full in 1.4 s at 100 MiB/s, the
	 * median of the slopes between 500, 600, 700, 800 and 860 MiB
	 */
	l = last_line(buf, "# watch 4.0s");
	assert_non_null(strstr(l, " rate=+100.0 MiB/s oom_in=1.4s "));
	assert_non_null(strstr(l, " risk=critical"));
	teardown(&x);
}

/* with nothing grown, the alert says so; no fragmentation advice */
static void test_alert_no_growth(void **state)
{
	struct mt_watch_conf c = { .interval = 1.0,
				   .window = 30.0,
				   .device_mem = 1000 * MIB,
				   .alert_pct = 50 };
	struct fixture x;

	setup(&x, &c);
	c10_totals(x.sum, 42, 0, 600 * MIB, 600 * MIB);
	for (int k = 0; k <= 3; k++)
		mt_watch_tick(x.w, T0 + k * SEC, x.sum, x.sites, x.out);
	assert_int_equal(count(text(&x), "# ALERT 1.0s pid=42"), 1);
	assert_int_equal(count(text(&x), "over 50.0 %"), 1);
	assert_non_null(strstr(text(&x), "no site grew since the last line"));
	assert_null(strstr(text(&x), "expandable_segments"));
	teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_and_oom),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_raw_accounts),
		cmocka_unit_test(test_cpu_account),
		cmocka_unit_test(test_risk_levels),
		cmocka_unit_test(test_low_confidence),
		cmocka_unit_test(test_warmup),
		cmocka_unit_test(test_unknown_size),
		cmocka_unit_test(test_alert),
		cmocka_unit_test(test_alert_no_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
