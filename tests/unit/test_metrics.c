// SPDX-License-Identifier: GPL-2.0
/* user/export/metrics.c: the Prometheus text, its file and its HTTP endpoint. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "event/kinds.h"
#include "export/metrics.h"
#include "harness.h"

#define MIB (1ULL << 20)
#define GPU_PID 4242
#define CPU_PID 777

/* interned strings: one pointer each */
static const char PH_FWD[] = "forward";
static const char PH_BWD[] = "back\"ward"; /* a quote to escape */
static const char MOD_FC[] = "Net.fc";
static const char MOD_HEAD[] = "Net.head";

struct fixture {
	struct harness h;
	FILE *devnull; /* the session's own lines (an OOM block) */
	char *text;
	size_t len;
	char dir[64];
};

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[128];

	snprintf(path, sizeof(path), "%s/m.prom", f->dir);
	unlink(path);
	rmdir(f->dir);
	harness_free(&f->h);
	if (f->devnull)
		fclose(f->devnull);
	free(f->text);
	free(f);
	return 0;
}

static int setup(void **state)
{
	const struct mt_session_conf c = {
		.no_stack = true,
		.max_live = 1 << 12,
		.max_sites = 256,
		.top_live = 10,
		.top_ops = 10,
		.leak = { .age_steps = 2, .age_seconds = 10 },
	};
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	f->devnull = fopen("/dev/null", "w");
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_metrics.XXXXXX");
	if (!f->devnull || !mkdtemp(f->dir) ||
	    harness_init(&f->h, &c, f->devnull)) {
		teardown(state);
		return -1;
	}
	return 0;
}

/* one raw event of kind, decoded and fed to the session */
static void feed(struct fixture *f, __u32 pid, unsigned int kind,
		 const __u64 *args, __u64 out, __s64 ret, const char *phase,
		 const char *module)
{
	struct mt_event ev = { .pid = pid,
			       .kind = (__u16)kind,
			       .flags = MT_EV_OUT,
			       .out = out,
			       .ret = ret,
			       .dev = 0 };
	struct mt_site key = { .pid = pid, .phase = phase, .module = module };
	struct mt_call r;

	memcpy(ev.args, args, sizeof(ev.args));
	harness_decode(&f->h, &ev, &r);
	key.event = r.event;
	mt_session_event(&f->h.s, &r, harness_site(&f->h, &key));
}

/* c10's report: size < 0 frees; totals after it; on cuda:0 */
static void c10(struct fixture *f, __u64 ptr, __s64 size, __u64 allocated,
		__u64 reserved, const char *phase)
{
	const __u64 a[MT_NARGS] = { ptr, (__u64)size, allocated, reserved, 1 };

	feed(f, GPU_PID, MT_K_C10_REPORT, a, 0, 0, phase, MOD_FC);
}

/*
 * GPU_PID (rank 3): c10 blocks on cuda:0 and the cudaMalloc under them,
 * one failing; CPU_PID (no rank): CPU tensors only.
 */
static void workload(struct fixture *f)
{
	const struct mt_rank rank = {
		.known = true, .rank = 3, .local_rank = 3, .world_size = 8
	};
	const __u64 malloc1[MT_NARGS] = { 0, 20 * MIB };
	const __u64 malloc2[MT_NARGS] = { 0, 1024 * MIB };
	const __u64 cpu1[MT_NARGS] = { 0, 0x5000, 4096 };
	const __u64 cpu2[MT_NARGS] = { 0, 0x6000, 1000 };
	const __u64 cpufree[MT_NARGS] = { 0, 0x5000 };

	mt_session_set_rank(&f->h.s, GPU_PID, &rank);
	feed(f, GPU_PID, MT_K_CUDA_MALLOC, malloc1, 0x7f0000000000, 0, NULL,
	     NULL);
	/* cudaErrorMemoryAllocation */
	feed(f, GPU_PID, MT_K_CUDA_MALLOC, malloc2, 0, 2, NULL, NULL);
	c10(f, 0x7f0000000000, 4 * MIB, 4 * MIB, 20 * MIB, PH_FWD);
	c10(f, 0x7f0000400000, 8 * MIB, 12 * MIB, 20 * MIB, PH_FWD);
	c10(f, 0x7f0000000000, -(__s64)(4 * MIB), 8 * MIB, 20 * MIB, PH_BWD);
	c10(f, 0x7f0000c00000, 2 * MIB, 10 * MIB, 20 * MIB, PH_BWD);
	feed(f, CPU_PID, MT_K_CPU_NEW, cpu1, 0, 0, PH_FWD, MOD_HEAD);
	feed(f, CPU_PID, MT_K_CPU_NEW, cpu2, 0, 0, PH_FWD, MOD_HEAD);
	feed(f, CPU_PID, MT_K_CPU_DELETE, cpufree, 0, 0, PH_FWD, MOD_HEAD);
}

static const char *render(struct fixture *f, __u64 lost)
{
	struct mt_session *const ses[] = { &f->h.s };
	FILE *out;

	free(f->text);
	f->text = NULL;
	out = open_memstream(&f->text, &f->len);
	assert_non_null(out);
	mt_metrics_write(out, ses, 1, lost);
	assert_int_equal(fclose(out), 0);
	return f->text;
}

/* the whole line, newline included, is in text */
static void has_line(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (strncmp(text, want + 1, strlen(want + 1)) && !strstr(text, want))
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

/* promtool, where installed, accepts text */
static void promtool_check(const char *text)
{
	FILE *p;
	int st;

	if (system("command -v promtool >/dev/null 2>&1")) {
		print_message("promtool not installed: not run\n");
		return;
	}
	p = popen("promtool check metrics", "w");
	assert_non_null(p);
	assert_int_equal(fputs(text, p) >= 0, 1);
	st = pclose(p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_families_and_values(void **state)
{
	struct fixture *f = *state;
	const char *t;

	workload(f);
	t = render(f, 17);
	/* c10's own figures on the GPU, the traced live bytes elsewhere */
	has_line(t, "# TYPE memtrace_allocated_bytes gauge");
	has_line(t, "memtrace_allocated_bytes{pid=\"4242\",rank=\"3\","
		    "device=\"cuda:0\",source=\"c10\"} 10485760");
	has_line(t, "memtrace_reserved_bytes{pid=\"4242\",rank=\"3\","
		    "device=\"cuda:0\",source=\"c10\"} 20971520");
	has_line(t, "memtrace_peak_allocated_bytes{pid=\"4242\",rank=\"3\","
		    "device=\"cuda:0\",source=\"c10\"} 12582912");
	has_line(t, "memtrace_peak_reserved_bytes{pid=\"4242\",rank=\"3\","
		    "device=\"cuda:0\",source=\"c10\"} 20971520");
	has_line(t, "memtrace_allocated_bytes{pid=\"4242\",rank=\"3\","
		    "device=\"cuda:0\",source=\"cudart\"} 20971520");
	has_line(t, "memtrace_allocated_bytes{pid=\"777\",rank=\"\","
		    "device=\"cpu\",source=\"cpu\"} 1000");
	has_line(t, "memtrace_reserved_bytes{pid=\"777\",rank=\"\","
		    "device=\"cpu\",source=\"cpu\"} 1000");
	has_line(t, "memtrace_peak_allocated_bytes{pid=\"777\",rank=\"\","
		    "device=\"cpu\",source=\"cpu\"} 5096");
	/* per process: the calls, the failed one apart */
	has_line(t, "# TYPE memtrace_allocations_total counter");
	has_line(t, "memtrace_allocations_total{pid=\"4242\",rank=\"3\"} 4");
	has_line(t, "memtrace_frees_total{pid=\"4242\",rank=\"3\"} 1");
	has_line(t, "memtrace_failed_allocations_total{pid=\"4242\","
		    "rank=\"3\"} 1");
	has_line(t, "memtrace_live_allocations{pid=\"4242\",rank=\"3\"} 3");
	has_line(t, "# TYPE memtrace_live_allocations gauge");
	has_line(t, "memtrace_allocations_total{pid=\"777\",rank=\"\"} 2");
	has_line(t, "memtrace_frees_total{pid=\"777\",rank=\"\"} 1");
	has_line(t, "memtrace_live_allocations{pid=\"777\",rank=\"\"} 1");
	/* bytes per phase, the label value escaped */
	has_line(t, "# TYPE memtrace_phase_allocated_bytes_total counter");
	has_line(t, "memtrace_phase_allocated_bytes_total{pid=\"4242\","
		    "rank=\"3\",phase=\"forward\"} 12582912");
	has_line(t, "memtrace_phase_allocated_bytes_total{pid=\"4242\","
		    "rank=\"3\",phase=\"back\\\"ward\"} 2097152");
	has_line(t, "memtrace_phase_allocated_bytes_total{pid=\"777\","
		    "rank=\"\",phase=\"forward\"} 5096");
	has_line(t, "# TYPE memtrace_lost_events_total counter");
	has_line(t, "memtrace_lost_events_total 17");
	promtool_check(t);
}

/*
 * --sample-bytes: the bytes per phase are estimates, under a name of their
 * own, beside R; the other figures are the same
 */
static void test_sampled(void **state)
{
	struct fixture *f = *state;
	const char *t;

	f->h.s.conf.sample_bytes = 524288;
	workload(f);
	t = render(f, 0);
	has_line(t, "memtrace_allocations_total{pid=\"4242\",rank=\"3\"} 4");
	has_line(t, "# TYPE memtrace_phase_allocated_bytes_estimate_total "
		    "counter");
	has_line(t, "# TYPE memtrace_sample_bytes gauge");
	has_line(t, "memtrace_sample_bytes 524288");
	assert_null(strstr(t, "memtrace_phase_allocated_bytes_total"));
	promtool_check(t);
}

static void test_empty(void **state)
{
	struct fixture *f = *state;
	const char *t = render(f, 0);

	/* the families are there, without samples but the lost count */
	has_line(t, "# HELP memtrace_allocated_bytes Bytes allocated now: the "
		    "caching allocator's own figure for source c10, the live "
		    "bytes traced for the others.");
	has_line(t, "memtrace_lost_events_total 0");
	assert_null(strstr(t, "pid=\""));
	promtool_check(t);
}

static char *slurp(const char *path)
{
	FILE *in = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!in)
		return NULL;
	n = getdelim(&buf, &cap, '\0', in);
	fclose(in);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void test_file(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	char path[128], tmp[160], err[256];
	struct mt_metrics_conf c = { .file = path, .file_interval = 1.0 };
	struct mt_metrics *m;
	char *text;

	snprintf(path, sizeof(path), "%s/m.prom", f->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	m = mt_metrics_open(&c, err, sizeof(err));
	assert_non_null(m);
	/* written at once: the path is known to work */
	text = slurp(path);
	assert_non_null(text);
	assert_null(strstr(text, "pid=\""));
	free(text);

	workload(f);
	mt_metrics_poll(m, 5000000000ULL, ses, 1, 3);
	text = slurp(path);
	assert_non_null(text);
	has_line(text, "memtrace_allocations_total{pid=\"777\",rank=\"\"} 2");
	has_line(text, "memtrace_lost_events_total 3");
	free(text);
	assert_int_equal(access(tmp, F_OK), -1);

	/* not due before the interval, then the last figures at close */
	mt_metrics_poll(m, 5500000000ULL, ses, 1, 4);
	text = slurp(path);
	assert_non_null(text);
	has_line(text, "memtrace_lost_events_total 3");
	free(text);
	assert_int_equal(mt_metrics_close(m, ses, 1, 5), 0);
	text = slurp(path);
	assert_non_null(text);
	has_line(text, "memtrace_lost_events_total 5");
	promtool_check(text);
	free(text);
}

static void test_file_unwritable(void **state)
{
	struct mt_metrics_conf c = { .file = "/nonexistent/dir/m.prom",
				     .file_interval = 1.0 };
	char err[256];

	(void)state;
	assert_null(mt_metrics_open(&c, err, sizeof(err)));
	assert_string_equal(err, "metrics: write /nonexistent/dir/m.prom.tmp: "
				 "No such file or directory");
}

static void test_bad_addr(void **state)
{
	struct mt_metrics_conf c = { 0 };
	char err[256];

	(void)state;
	c.addr = "127.0.0.1";
	assert_null(mt_metrics_open(&c, err, sizeof(err)));
	assert_string_equal(err, "metrics: --metrics-addr 127.0.0.1: expected "
				 "HOST:PORT");
	c.addr = "127.0.0.1:99999";
	assert_null(mt_metrics_open(&c, err, sizeof(err)));
	assert_string_equal(err, "metrics: --metrics-addr 127.0.0.1:99999: "
				 "port must be 1 to 65535");
	c.addr = "example.org:9400";
	assert_null(mt_metrics_open(&c, err, sizeof(err)));
	assert_string_equal(err, "metrics: --metrics-addr example.org:9400: "
				 "example.org is no IPv4 address");
}

/* a port free on loopback now, and a socket listening on it if busy */
static int free_port(int *busy)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	if (busy) {
		assert_int_equal(listen(fd, 1), 0);
		*busy = fd;
	} else {
		close(fd);
	}
	return ntohs(sa.sin_port);
}

static void test_addr_in_use(void **state)
{
	struct mt_metrics_conf c = { 0 };
	char addr[64], want[128], err[256];
	int busy, port = free_port(&busy);

	(void)state;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(want, sizeof(want),
		 "metrics: listen on %s: Address already in use", addr);
	c.addr = addr;
	assert_null(mt_metrics_open(&c, err, sizeof(err)));
	assert_string_equal(err, want);
	close(busy);
}

/*
 * One request on a fresh connection, answered by polling m from this
 * thread (MHD has none): the whole response.
 */
static char *request(struct mt_metrics *m, struct mt_session *const *ses,
		     int port, const char *req)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char *buf = calloc(1, 1 << 16);
	size_t len = 0;
	ssize_t n;

	assert_true(fd >= 0);
	assert_non_null(buf);
	/* the listening socket's backlog takes it before MHD looks */
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	for (int i = 0; i < 2000; i++) {
		mt_metrics_poll(m, 0, ses, 1, 9);
		n = read(fd, buf + len, (1 << 16) - 1 - len);
		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
		else if (errno != EAGAIN)
			fail_msg("read: %s", strerror(errno));
		else
			usleep(1000);
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static void test_http(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	struct mt_metrics_conf c = { 0 };
	char addr[64], err[256];
	int port = free_port(NULL);
	struct mt_metrics *m;
	char *resp, *body;

	snprintf(addr, sizeof(addr), "localhost:%d", port);
	c.addr = addr;
	m = mt_metrics_open(&c, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	workload(f);

	resp = request(m, ses, port,
		       "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
	assert_non_null(strstr(resp, " 200 OK\r\n"));
	assert_non_null(strstr(
		resp, "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
	body = strstr(resp, "\r\n\r\n");
	assert_non_null(body);
	has_line(body + 3, "memtrace_allocations_total{pid=\"4242\","
			   "rank=\"3\"} 4");
	has_line(body + 3, "memtrace_lost_events_total 9");
	promtool_check(body + 4);
	free(resp);

	resp = request(m, ses, port, "GET / HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(resp, " 404 Not Found\r\n"));
	free(resp);
	resp = request(m, ses, port, "POST /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(resp, " 405 "));
	free(resp);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
}

/* a connection from SRC (an address of loopback) to PORT, or -errno */
static int dial(const char *src, const char *dst, int port)
{
	struct sockaddr_in from = { .sin_family = AF_INET };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET, dst, &to.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

static void say(int fd, const char *text)
{
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* whether the server ended fd's connection, polling m at now_ns meanwhile */
static bool ended(struct mt_metrics *m, struct mt_session *const *ses, int fd,
		  __u64 now_ns)
{
	char buf[4096];
	ssize_t n;

	for (int i = 0; i < 50; i++) {
		mt_metrics_poll(m, now_ns, ses, 1, 0);
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0 && errno != EAGAIN)
			fail_msg("read: %s", strerror(errno));
		usleep(1000);
	}
	return false;
}

static struct mt_metrics *serve_at(const char *host, int port)
{
	struct mt_metrics_conf c = { 0 };
	char addr[64], err[256];
	struct mt_metrics *m;

	snprintf(addr, sizeof(addr), "%s:%d", host, port);
	c.addr = addr;
	m = mt_metrics_open(&c, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	return m;
}

/*
 * A client sending a header line now and then is ended 5 s after it
 * connected, however often it sends: the deadline is the request's, not
 * MHD's idle timeout, which each byte restarts.
 */
static void test_slow_client(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	int port = free_port(NULL);
	struct mt_metrics *m = serve_at("127.0.0.1", port);
	const __u64 s = 1000000000ULL;
	int fd = dial("127.0.0.1", "127.0.0.1", port);
	char *resp;

	assert_true(fd >= 0);
	say(fd, "GET /metrics HTTP/1.1\r\n");
	assert_false(ended(m, ses, fd, 100 * s));
	for (__u64 t = 101; t < 105; t++) {
		say(fd, "X-Slow: 1\r\n");
		assert_false(ended(m, ses, fd, t * s));
	}
	assert_true(ended(m, ses, fd, 105 * s + 1));
	close(fd);
	/* one that sends its request in time is answered */
	resp = request(m, ses, port, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(resp, " 200 OK\r\n"));
	free(resp);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
}

/*
 * Our own TCP sockets in CLOSE_WAIT: their client has closed them and we
 * have not, so they still hold a connection slot.
 */
static int close_waits(void)
{
	struct tcp_info ti;
	socklen_t len;
	int n = 0;

	for (int fd = 3; fd < 1024; fd++) {
		len = sizeof(ti);
		if (!getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) &&
		    ti.tcpi_state == TCP_CLOSE_WAIT)
			n++;
	}
	return n;
}

/*
 * A client that sends part of a request and closes: its end of stream
 * comes with its bytes, and MHD, polling edge-triggered, read the bytes
 * and not the end, so the connection stayed to its deadline (four from
 * one address kept that address out for 5 s). Now ended at once.
 */
static void test_closed_half_request(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	int port = free_port(NULL), fd;
	struct mt_metrics *m = serve_at("127.0.0.1", port);
	char *resp;

	for (int i = 0; i < 4; i++) {
		fd = dial("127.0.0.1", "127.0.0.1", port);
		assert_true(fd >= 0);
		say(fd, "GET /metrics HTTP/1.1\r\n");
		close(fd);
	}
	/* accepted, read, found closed and ended: a few polls, no time */
	for (int i = 0; i < 50 && close_waits(); i++) {
		mt_metrics_poll(m, 0, ses, 1, 0);
		usleep(1000);
	}
	assert_int_equal(close_waits(), 0);
	resp = request(m, ses, port, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(resp, " 200 OK\r\n"));
	free(resp);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
}

/*
 * The connection that takes the last free slot ends the oldest, so that
 * clients holding every slot never keep the next one out: no cap per
 * address, which a local peer owning all of 127.0.0.0/8 would pass.
 */
static void test_full_ends_oldest(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	int port = free_port(NULL), fds[32];
	struct mt_metrics *m = serve_at("127.0.0.1", port);
	char *resp;

	for (int i = 0; i < 32; i++) {
		fds[i] = dial("127.0.0.1", "127.0.0.1", port);
		assert_true(fds[i] >= 0);
		say(fds[i], "GET /metrics HTTP/1.1\r\n");
		/* a millisecond apart: the first is the oldest */
		mt_metrics_poll(m, (__u64)i * 1000000, ses, 1, 0);
	}
	assert_true(ended(m, ses, fds[0], 32000000));
	for (int i = 1; i < 32; i++)
		assert_false(ended(m, ses, fds[i], 32000000));
	/* a scrape gets in and is answered, ending the next oldest */
	resp = request(m, ses, port, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(resp, " 200 OK\r\n"));
	free(resp);
	assert_true(ended(m, ses, fds[1], 32000000));
	for (int i = 0; i < 32; i++)
		close(fds[i]);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
}

/* no host: loopback only; 0.0.0.0: every interface, asked for */
static void test_default_loopback(void **state)
{
	struct fixture *f = *state;
	struct mt_session *const ses[] = { &f->h.s };
	int port = free_port(NULL), fd;
	struct mt_metrics *m = serve_at("", port);

	assert_int_equal(dial("127.0.0.1", "127.0.0.2", port), -ECONNREFUSED);
	fd = dial("127.0.0.1", "127.0.0.1", port);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
	port = free_port(NULL);
	m = serve_at("0.0.0.0", port);
	fd = dial("127.0.0.1", "127.0.0.2", port);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mt_metrics_close(m, ses, 1, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_families_and_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sampled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file, setup, teardown),
		cmocka_unit_test(test_file_unwritable),
		cmocka_unit_test(test_bad_addr),
		cmocka_unit_test(test_addr_in_use),
		cmocka_unit_test_setup_teardown(test_http, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_client, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_closed_half_request, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_full_ends_oldest, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_default_loopback, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
