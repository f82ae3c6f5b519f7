// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "event/format.h"
#include "export/metrics.h"
#include "analysis/session.h"
#include "lib/err.h"
#include "lib/helper.h"
#include "lib/outfile.h"

#define CONTENT_TYPE "text/plain; version=0.0.4"
/*
 * A scraper or two; more only hold memory. No limit per address: every
 * local user has all of 127.0.0.0/8, so one would only let a local peer
 * starve local scrapers. Instead a connection that takes the last free
 * slot ends the oldest one (make_room), so that the next always gets in.
 */
#define MAX_CONNECTIONS 32
/*
 * A connection's whole life, from accept to close: MHD answers each
 * request with "Connection: close", and a scrape's request is one packet,
 * so a client that takes longer is slow on purpose and holds a connection
 * another scraper may need. MHD's own timeout cannot do this: it restarts
 * at each byte received, so a client sending a header line every few
 * seconds would hold its connection for ever.
 */
#define CONNECTION_DEADLINE_NS (5 * 1000000000ULL)
#define MHD_LIB "libmicrohttpd.so.12"
#define PROBE_TIMEOUT_MS 10000

/*
 * libmicrohttpd, loaded when --metrics-addr asks for it: Debian builds it
 * with TLS, whose static libraries cannot all be had, so the static
 * binary could not link it; and a host without it keeps --metrics-file.
 */
struct mhd {
	void *lib;
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_run) *run;
	__typeof__(MHD_create_response_from_buffer) *create_response;
	__typeof__(MHD_add_response_header) *add_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_get_connection_info) *conn_info;
};

/* an open connection and when it must be over */
struct conn {
	bool used;
	bool shut; /* shut down: MHD closes it at its next run */
	bool answered; /* its request came whole: a reply is on its way */
	int fd;
	__u64 deadline_ns;
};

struct mt_metrics {
	struct mhd mhd;
	struct MHD_Daemon *httpd;
	char addr[64]; /* as given, for messages */
	/* what a scrape renders: set only while mt_metrics_poll runs MHD */
	struct mt_session *const *ses;
	size_t n;
	__u64 lost;
	bool serve_failed; /* told once, not on every poll */
	__u64 now_ns; /* of this poll, for the connections' deadlines */
	struct conn conns[MAX_CONNECTIONS];
	/* --metrics-file */
	char *path, *tmp;
	__u64 interval_ns, next_write_ns;
	bool write_failed;
};

/* Prometheus label values: backslash, double quote and newline escaped */
static void put_value(FILE *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(out, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}

static void family(FILE *out, const char *name, const char *type,
		   const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * pid and rank, on every series of a process: rank="" (no label, to
 * Prometheus) when its environment names none, so the set stays constant.
 */
static void proc_labels(FILE *out, const struct mt_session *s, __u32 pid)
{
	const struct mt_proc *p = mt_session_proc(s, pid);

	fprintf(out, "pid=\"%u\",rank=\"", pid);
	if (p && p->rank.known && p->rank.rank >= 0)
		fprintf(out, "%d", p->rank.rank);
	fputc('"', out);
}

enum dev_fig {
	FIG_ALLOCATED,
	FIG_RESERVED,
	FIG_PEAK_ALLOCATED,
	FIG_PEAK_RESERVED,
};

/*
 * The figure of one account, for the accounts the summary prints: c10's
 * own totals on a CUDA device; for the other layers the live bytes traced,
 * which are both what is allocated and what is held from the system.
 */
static bool dev_value(const struct mt_dev_stat *d, enum dev_fig f, __u64 *v)
{
	if (d->space == MT_SP_C10) {
		if (d->type != MT_DT_CUDA)
			return false;
		*v = f == FIG_ALLOCATED	     ? d->allocated :
		     f == FIG_RESERVED	     ? d->reserved :
		     f == FIG_PEAK_ALLOCATED ? d->allocated_peak :
					       d->reserved_peak;
		return true;
	}
	/* a mapping of a physical allocation is no memory of its own */
	if (d->space == MT_SP_VAMAP)
		return false;
	*v = f == FIG_ALLOCATED || f == FIG_RESERVED ? d->cur : d->peak;
	return true;
}

static void dev_family(FILE *out, struct mt_session *const *ses, size_t n,
		       const char *name, enum dev_fig f, const char *help)
{
	char dev[32];
	__u64 v;

	family(out, name, "gauge", help);
	for (size_t i = 0; i < n; i++) {
		const struct mt_summary *sum = &ses[i]->sum;

		for (size_t j = 0; j < sum->ndevs; j++) {
			const struct mt_dev_stat *d = &sum->devs[j];

			if (!dev_value(d, f, &v))
				continue;
			fprintf(out, "%s{", name);
			proc_labels(out, ses[i], d->pid);
			fprintf(out,
				",device=\"%s\",source=\"%s\"} %" PRIu64 "\n",
				mt_format_dev(dev, sizeof(dev), d->type,
					      d->index),
				mt_space_name(d->space), (uint64_t)v);
		}
	}
}

enum proc_fig {
	FIG_ALLOCS,
	FIG_FREES,
	FIG_FAILED,
	FIG_LIVE,
};

static void proc_family(FILE *out, struct mt_session *const *ses, size_t n,
			const char *name, const char *type, enum proc_fig f,
			const char *help)
{
	family(out, name, type, help);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < MT_PROCS; j++) {
			const struct mt_proc *p = &ses[i]->procs[j];
			__u64 v = f == FIG_ALLOCS ? p->allocs :
				  f == FIG_FREES  ? p->frees :
				  f == FIG_FAILED ? p->failed :
						    p->live;

			if (!p->pid)
				continue;
			fprintf(out, "%s{", name);
			proc_labels(out, ses[i], p->pid);
			fprintf(out, "} %" PRIu64 "\n", (uint64_t)v);
		}
	}
}

/*
 * bytes allocated per (process, phase): the module table added up. In a
 * sampled trace (--sample-bytes) an estimate, under a name of its own so
 * that no query reads it as the exact figure.
 */
static void phase_family(FILE *out, struct mt_session *const *ses, size_t n,
			 bool sampled)
{
	const char *name =
		sampled ? "memtrace_phase_allocated_bytes_estimate_total" :
			  "memtrace_phase_allocated_bytes_total";

	family(out, name, "counter",
	       sampled ? "Bytes allocated in each training phase (forward, "
			 "backward, optimizer, ...), over all modules: an "
			 "estimate from the allocations sampled by "
			 "--sample-bytes (memtrace_sample_bytes)." :
			 "Bytes allocated in each training phase (forward, "
			 "backward, optimizer, ...), over all modules.");
	for (size_t i = 0; i < n; i++) {
		const struct mt_summary *sum = &ses[i]->sum;

		for (size_t j = 0; j < sum->nphases; j++) {
			const struct mt_phase_stat *ph = &sum->phases[j];
			__u64 bytes = 0;

			/* interned strings: pointers compare */
			for (size_t k = 0; k < sum->nmods; k++)
				if (sum->mods[k].pid == ph->pid &&
				    sum->mods[k].phase == ph->phase)
					bytes += sum->mods[k].bytes_alloc;
			fprintf(out, "%s{", name);
			proc_labels(out, ses[i], ph->pid);
			fputs(",phase=\"", out);
			put_value(out, ph->phase);
			fprintf(out, "\"} %" PRIu64 "\n", (uint64_t)bytes);
		}
	}
}

/*
 * The bytes alive now by kind of memory (analysis/memkind.h), per
 * PyTorch tensor account, as the session tallies them at each event. What
 * was made in the phase running now is unknown until that phase ends.
 */
static void kind_family(FILE *out, struct mt_session *const *ses, size_t n)
{
	const char *name = "memtrace_kind_bytes";
	char dev[32];

	family(out, name, "gauge",
	       "Bytes alive now by kind of memory (parameters, inputs, "
	       "activations, gradients, optimizer_state, temporaries, "
	       "unknown: what the phase running now made) of PyTorch's "
	       "tensor accounts.");
	for (size_t i = 0; i < n; i++) {
		const struct mt_summary *sum = &ses[i]->sum;

		for (size_t j = 0; j < sum->ndevs; j++) {
			const struct mt_dev_stat *d = &sum->devs[j];
			__u64 bytes[MT_MK_MAX];

			if (!mt_space_is_tensor(d->space))
				continue;
			mt_session_kinds_now(ses[i], d, bytes);
			for (int m = 0; m < MT_MK_MAX; m++) {
				fprintf(out, "%s{", name);
				proc_labels(out, ses[i], d->pid);
				fprintf(out,
					",device=\"%s\",source=\"%s\","
					"kind=\"%s\"} %" PRIu64 "\n",
					mt_format_dev(dev, sizeof(dev), d->type,
						      d->index),
					mt_space_name(d->space),
					mt_memkind_name(m), (uint64_t)bytes[m]);
			}
		}
	}
}

void mt_metrics_write(FILE *out, struct mt_session *const *ses, size_t n,
		      __u64 lost)
{
	dev_family(out, ses, n, "memtrace_allocated_bytes", FIG_ALLOCATED,
		   "Bytes allocated now: the caching allocator's own figure "
		   "for source c10, the live bytes traced for the others.");
	dev_family(out, ses, n, "memtrace_reserved_bytes", FIG_RESERVED,
		   "Bytes held from the device or system now: the caching "
		   "allocator's reserve for source c10, the live bytes "
		   "traced for the others.");
	dev_family(out, ses, n, "memtrace_peak_allocated_bytes",
		   FIG_PEAK_ALLOCATED,
		   "Highest memtrace_allocated_bytes since the trace began.");
	dev_family(out, ses, n, "memtrace_peak_reserved_bytes",
		   FIG_PEAK_RESERVED,
		   "Highest memtrace_reserved_bytes since the trace began.");
	proc_family(out, ses, n, "memtrace_allocations_total", "counter",
		    FIG_ALLOCS, "Allocation calls that succeeded.");
	proc_family(out, ses, n, "memtrace_frees_total", "counter", FIG_FREES,
		    "Free calls that succeeded.");
	proc_family(out, ses, n, "memtrace_failed_allocations_total", "counter",
		    FIG_FAILED,
		    "Allocation calls that failed (out of memory and others).");
	proc_family(out, ses, n, "memtrace_live_allocations", "gauge", FIG_LIVE,
		    "Allocations made and not freed yet.");
	/* one trace's sessions share its --sample-bytes */
	phase_family(out, ses, n, n && ses[0]->conf.sample_bytes);
	kind_family(out, ses, n);
	if (n && ses[0]->conf.sample_bytes) {
		family(out, "memtrace_sample_bytes", "gauge",
		       "--sample-bytes: the mean bytes between allocations "
		       "whose stack is walked; the *_estimate_* series are "
		       "estimates from them.");
		fprintf(out, "memtrace_sample_bytes %" PRIu64 "\n",
			(uint64_t)ses[0]->conf.sample_bytes);
	}
	family(out, "memtrace_lost_events_total", "counter",
	       "Events the kernel side could not pass on (ring buffer full).");
	fprintf(out, "memtrace_lost_events_total %" PRIu64 "\n",
		(uint64_t)lost);
}

/* the text into a malloc'ed buffer, or NULL */
static char *render(struct mt_session *const *ses, size_t n, __u64 lost,
		    size_t *len)
{
	char *buf = NULL;
	FILE *out = open_memstream(&buf, len);

	if (!out)
		return NULL;
	mt_metrics_write(out, ses, n, lost);
	if (ferror(out)) {
		fclose(out);
		free(buf);
		return NULL;
	}
	if (fclose(out)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result reply(const struct mhd *api, struct MHD_Connection *c,
			     unsigned int status, const char *text)
{
	struct MHD_Response *r = api->create_response(
		strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	    api->add_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES) {
		api->destroy_response(r);
		return MHD_NO;
	}
	ret = api->queue_response(c, status, r);
	api->destroy_response(r);
	return ret;
}

/*
 * A connection is ended by a shutdown, not a close: the socket stays
 * MHD's, which sees the stream end at its next run and closes it.
 */
static void end_conn(struct conn *k)
{
	/* a failure (ENOTCONN) means the peer is gone: MHD sees it */
	(void)shutdown(k->fd, SHUT_RDWR);
	k->shut = true;
}

/*
 * MHD takes no connection past MAX_CONNECTIONS (it stops accepting), so
 * the one that takes the last free slot ends the oldest other, unless one
 * is ending already: slow or idle clients cannot keep a scraper out, and a
 * scrape, answered at the next poll, is never the oldest for long.
 */
static void make_room(struct mt_metrics *m, const struct conn *new)
{
	struct conn *oldest = NULL;

	for (size_t i = 0; i < MAX_CONNECTIONS; i++) {
		struct conn *k = &m->conns[i];

		if (!k->used || k->shut)
			return;
		if (k != new &&
		    (!oldest || k->deadline_ns < oldest->deadline_ns))
			oldest = k;
	}
	if (oldest)
		end_conn(oldest);
}

/* each connection gets a slot with its deadline, from start to close */
static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct mt_metrics *m = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *k = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (k)
			k->used = false;
		return;
	}
	ci = m->mhd.conn_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	/* no descriptor to end it by: the cap on connections still holds */
	if (!ci)
		return;
	for (size_t i = 0; i < MAX_CONNECTIONS; i++) {
		k = &m->conns[i];
		if (k->used)
			continue;
		*k = (struct conn){ .used = true,
				    .fd = ci->connect_fd,
				    .deadline_ns = m->now_ns +
						   CONNECTION_DEADLINE_NS };
		*socket_context = k;
		make_room(m, k);
		return;
	}
	/* more than MAX_CONNECTIONS: MHD's limit says it cannot happen */
	(void)shutdown(ci->connect_fd, SHUT_RDWR);
}

/* connections past their deadline are ended */
static void end_late(struct mt_metrics *m)
{
	for (size_t i = 0; i < MAX_CONNECTIONS; i++) {
		struct conn *k = &m->conns[i];

		if (k->used && !k->shut && m->now_ns >= k->deadline_ns)
			end_conn(k);
	}
}

/*
 * Connections whose client closed them before its request came whole.
 * MHD polls edge-triggered (epoll) and takes a short read for an empty
 * socket, so the end of a stream that came with the request's last bytes
 * is not read until the deadline: four such from one address kept every
 * scrape from it out for 5 s. A client that stopped sending with nothing
 * left unread (FIONREAD) will never complete its request: ended at once.
 * One answered may still be reading its reply, after a half close.
 */
static void end_closed(struct mt_metrics *m)
{
	struct pollfd p[MAX_CONNECTIONS];
	struct conn *of[MAX_CONNECTIONS];
	nfds_t n = 0;
	int unread;

	for (size_t i = 0; i < MAX_CONNECTIONS; i++) {
		struct conn *k = &m->conns[i];

		if (!k->used || k->shut || k->answered)
			continue;
		p[n] = (struct pollfd){ .fd = k->fd, .events = POLLRDHUP };
		of[n++] = k;
	}
	if (!n || poll(p, n, 0) <= 0)
		return;
	for (nfds_t i = 0; i < n; i++) {
		if (!(p[i].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		/* unread bytes are MHD's to read first */
		if (!ioctl(p[i].fd, FIONREAD, &unread) && unread > 0)
			continue;
		end_conn(of[i]);
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct mt_metrics *m = cls;
	const struct mhd *api = &m->mhd;
	const union MHD_ConnectionInfo *ci =
		api->conn_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *buf;

	if (ci && ci->socket_context)
		((struct conn *)ci->socket_context)->answered = true;
	if (strcmp(url, "/metrics"))
		return reply(api, c, MHD_HTTP_NOT_FOUND,
			     "not found: try /metrics\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(api, c, MHD_HTTP_METHOD_NOT_ALLOWED,
			     "only GET and HEAD\n");
	buf = render(m->ses, m->n, m->lost, &len);
	if (!buf)
		return reply(api, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     "out of memory\n");
	/* MHD frees buf with the response */
	r = api->create_response(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	if (api->add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE) !=
	    MHD_YES) {
		api->destroy_response(r);
		return MHD_NO;
	}
	ret = api->queue_response(c, MHD_HTTP_OK, r);
	api->destroy_response(r);
	return ret;
}

/*
 * HOST:PORT, HOST "localhost", an IPv4 address, or empty: loopback, since
 * the endpoint has no authentication; every interface must be asked for.
 */
static int parse_addr(const char *addr, struct sockaddr_in *sa, char *err,
		      size_t errlen)
{
	const char *colon = strrchr(addr, ':');
	char host[INET_ADDRSTRLEN + 16];
	unsigned long port;
	char *end;

	*sa = (struct sockaddr_in){ .sin_family = AF_INET };
	if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
		snprintf(err, errlen,
			 "metrics: --metrics-addr %s: expected HOST:PORT",
			 addr);
		return -EINVAL;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535) {
		snprintf(err, errlen,
			 "metrics: --metrics-addr %s: port must be 1 to 65535",
			 addr);
		return -EINVAL;
	}
	sa->sin_port = htons((uint16_t)port);
	if (!host[0] || !strcmp(host, "localhost"))
		sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		snprintf(err, errlen,
			 "metrics: --metrics-addr %s: %s is no IPv4 address",
			 addr, host);
		return -EINVAL;
	}
	return 0;
}

/* our own socket, so that a failed bind says why */
static int listen_on(const struct mt_metrics *m, const struct sockaddr_in *sa,
		     char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1, ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "metrics: socket: %s", strerror(-ret));
		return ret;
	}
	/* a restarted tracer binds again while old connections linger */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, MAX_CONNECTIONS)) {
		ret = -errno;
		snprintf(err, errlen, "metrics: listen on %s: %s", m->addr,
			 strerror(-ret));
		close(fd);
		return ret;
	}
	return fd;
}

/* in a helper process: the load mhd_load is about to do */
static int probe_child(int fd, void *arg)
{
	return dlopen(MHD_LIB, RTLD_NOW | RTLD_LOCAL) ? 0 : 1;
}

/*
 * A static binary's load of the system's library brings the system's
 * glibc beside its own, which crashes where the two differ (SIGFPE, on
 * the GPU host where --watch's NVML did): tried in a helper process
 * first, so that it is a line, not the tracer's end. A load that fails
 * there is left to mhd_load, which says why.
 */
static int probe_load(char *err, size_t errlen)
{
	struct mt_helper h;
	char end[64];
	int ret;

	if (!mt_static_binary())
		return 0;
	ret = mt_helper_run(&h, probe_child, NULL, PROBE_TIMEOUT_MS);
	if (ret) {
		snprintf(err, errlen,
			 "metrics: --metrics-addr: no helper process to try "
			 "loading " MHD_LIB " in: %s",
			 strerror(-ret));
		return ret;
	}
	/* waiting: it has ended when this returns */
	mt_helper_poll(&h, true);
	if (!mt_helper_signaled(&h) && !h.timed_out)
		return 0;
	snprintf(err, errlen,
		 "metrics: --metrics-addr: loading " MHD_LIB " %s in a helper "
		 "process: a static memtrace-bpf (glibc %s) cannot load this "
		 "system's libraries (--metrics-file needs none, or use the "
		 "dynamic build)",
		 mt_helper_end(&h, end, sizeof(end)), gnu_get_libc_version());
	return -ENOEXEC;
}

static int mhd_load(struct mhd *api, char *err, size_t errlen)
{
	int ret = probe_load(err, errlen);

	if (ret)
		return ret;
	api->lib = dlopen(MHD_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!api->lib) {
		snprintf(err, errlen,
			 "metrics: --metrics-addr needs libmicrohttpd "
			 "(apt-get install libmicrohttpd12): %s",
			 dlerror());
		return -ENOENT;
	}
	api->start_daemon = dlsym(api->lib, "MHD_start_daemon");
	api->stop_daemon = dlsym(api->lib, "MHD_stop_daemon");
	api->run = dlsym(api->lib, "MHD_run");
	api->create_response =
		dlsym(api->lib, "MHD_create_response_from_buffer");
	api->add_header = dlsym(api->lib, "MHD_add_response_header");
	api->queue_response = dlsym(api->lib, "MHD_queue_response");
	api->destroy_response = dlsym(api->lib, "MHD_destroy_response");
	api->conn_info = dlsym(api->lib, "MHD_get_connection_info");
	if (!api->start_daemon || !api->stop_daemon || !api->run ||
	    !api->create_response || !api->add_header || !api->queue_response ||
	    !api->destroy_response || !api->conn_info) {
		snprintf(err, errlen,
			 "metrics: " MHD_LIB " lacks a function we use");
		return -ENOENT;
	}
	return 0;
}

static int serve(struct mt_metrics *m, const char *addr, char *err,
		 size_t errlen)
{
	struct sockaddr_in sa;
	int fd, ret;

	ret = mhd_load(&m->mhd, err, errlen);
	if (ret)
		return ret;
	ret = parse_addr(addr, &sa, err, errlen);
	if (ret)
		return ret;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	fd = listen_on(m, &sa, err, errlen);
	if (fd < 0)
		return fd;
	/*
	 * No thread of its own: MHD_run in mt_metrics_poll answers, between
	 * two events, so a scrape reads the session unlocked. epoll: no
	 * FD_SETSIZE limit, and the tracer holds many descriptors.
	 */
	m->httpd = m->mhd.start_daemon(
		MHD_USE_EPOLL, 0, NULL, NULL, on_request, m,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)MAX_CONNECTIONS, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, m, MHD_OPTION_END);
	if (!m->httpd) {
		close(fd); /* still ours: MHD closes it only once started */
		snprintf(err, errlen, "metrics: serve on %s: cannot start",
			 addr);
		return -EIO;
	}
	if (sa.sin_addr.s_addr == htonl(INADDR_ANY))
		mt_err("metrics: %s serves every interface, without "
		       "authentication: anyone who reaches this host reads "
		       "/metrics (give 127.0.0.1:PORT or filter the port)",
		       addr);
	return 0;
}

/*
 * A PATH.tmp left by a tracer killed between its write and its rename is
 * ours to remove, so that the new one is created, not reused: never
 * another user's, nor a link, which mt_create_output then refuses.
 */
static void remove_stale(const char *tmp)
{
	struct stat st;

	if (!lstat(tmp, &st) && S_ISREG(st.st_mode) &&
	    mt_output_ours(st.st_uid) && st.st_nlink == 1)
		(void)unlink(tmp); /* if it fails, the create says why */
}

/*
 * PATH.tmp, renamed over PATH: the textfile collector never reads half.
 * The rename replaces whatever is at PATH, link or not, without writing
 * through it. Readable by all: node_exporter runs as its own user.
 */
static int write_file(struct mt_metrics *m, struct mt_session *const *ses,
		      size_t n, __u64 lost, char *err, size_t errlen)
{
	char why[512];
	int ret = 0;
	FILE *f;

	remove_stale(m->tmp);
	f = mt_create_output_file(m->tmp, MT_OUT_SHARED, why, sizeof(why));
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "metrics: write %s", why);
		return ret;
	}
	mt_metrics_write(f, ses, n, lost);
	if (ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (ret) {
		snprintf(err, errlen, "metrics: write %s: %s", m->tmp,
			 strerror(-ret));
		unlink(m->tmp);
		return ret;
	}
	if (rename(m->tmp, m->path)) {
		ret = -errno;
		snprintf(err, errlen, "metrics: rename %s to %s: %s", m->tmp,
			 m->path, strerror(-ret));
		unlink(m->tmp);
	}
	return ret;
}

static void metrics_free(struct mt_metrics *m)
{
	if (m->httpd)
		m->mhd.stop_daemon(m->httpd); /* closes the listening socket */
	if (m->mhd.lib)
		dlclose(m->mhd.lib);
	free(m->path);
	free(m->tmp);
	free(m);
}

struct mt_metrics *mt_metrics_open(const struct mt_metrics_conf *c, char *err,
				   size_t errlen)
{
	struct mt_metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	if (c->file) {
		m->path = strdup(c->file);
		if (!m->path || asprintf(&m->tmp, "%s.tmp", c->file) < 0) {
			m->tmp = NULL;
			snprintf(err, errlen, "metrics: out of memory");
			metrics_free(m);
			return NULL;
		}
		m->interval_ns = c->file_interval > 0 ?
					 (__u64)(c->file_interval * 1e9) :
					 0;
		/* the file can be written: find out now, not at the first poll */
		if (write_file(m, NULL, 0, 0, err, errlen)) {
			metrics_free(m);
			return NULL;
		}
	}
	if (c->addr && serve(m, c->addr, err, errlen)) {
		metrics_free(m);
		return NULL;
	}
	return m;
}

void mt_metrics_poll(struct mt_metrics *m, __u64 now_ns,
		     struct mt_session *const *ses, size_t n, __u64 lost)
{
	char err[512];
	bool ok;

	if (m->httpd) {
		m->now_ns = now_ns;
		end_late(m);
		end_closed(m);
		m->ses = ses;
		m->n = n;
		m->lost = lost;
		ok = m->mhd.run(m->httpd) == MHD_YES;
		m->ses = NULL;
		m->n = 0;
		if (!ok && !m->serve_failed)
			mt_err("metrics: serving on %s failed", m->addr);
		m->serve_failed = !ok;
	}
	if (!m->path || now_ns < m->next_write_ns)
		return;
	m->next_write_ns = now_ns + m->interval_ns;
	ok = !write_file(m, ses, n, lost, err, sizeof(err));
	/* once per failure, not every second */
	if (!ok && !m->write_failed)
		mt_err("%s", err);
	m->write_failed = !ok;
}

int mt_metrics_close(struct mt_metrics *m, struct mt_session *const *ses,
		     size_t n, __u64 lost)
{
	char err[512];
	int ret = 0;

	if (m->path)
		ret = write_file(m, ses, n, lost, err, sizeof(err));
	if (ret)
		mt_err("%s", err);
	metrics_free(m);
	return ret;
}
