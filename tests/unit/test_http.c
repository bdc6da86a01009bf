/*
 * test_http.c: the route table over libmicrohttpd and the libcurl client,
 * talking over real loopback sockets: captures, query, JSON bodies, the
 * error shape for 404/405/413, the filter, long-poll timeouts, Server-Sent
 * Events, the message a person sees when nothing listens, and deferred
 * replies: answered on a wake, at their deadline, freed when the client
 * goes away, and many of them waiting on a bounded number of threads.
 *
 * test_http_plain.c runs every test here again as suite http_plain, with
 * the client's own plain HTTP/1.1 path on (drv_http_client_plain): the
 * same requests must get the same answers and errors.
 */
#ifndef HTTP_PLAIN
#define HTTP_PLAIN false
#endif
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "drover/clock.h"
#include "drover/http.h"

static int h_echo(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	const char *q = drv_http_req_query(req, "q");
	json_t *body = NULL;
	size_t len;

	(void)ctx;
	drv_http_req_body(req, &len);
	if (len) {
		body = drv_http_req_json(req, resp);
		if (!body)
			return 0;
	}
	drv_http_resp_json(resp, 201,
			   json_pack("{s:s?,s:s?,s:s?,s:o?,s:s?}", "id", drv_http_req_param(req, 0),
				     "q", q, "ct", drv_http_req_header(req, "content-type"), "body",
				     body, "user", (const char *)drv_http_req_user(req)));
	return 0;
}

/* A "*" route under a prefix pattern: which method and path came. */
static int h_tree(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)ctx;
	drv_http_resp_json(resp, 200, json_pack("{s:s,s:s}", "method", drv_http_req_method(req),
						"path", drv_http_req_path(req)));
	return 0;
}

static int h_fail(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)req;
	(void)resp;
	(void)ctx;
	return DRV_EIO;
}

static int h_slow(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	usleep(400 * 1000);
	drv_http_resp_bytes(resp, 200, "text/plain", "late", 4);
	return 0;
}

struct sse_state {
	int n;
};

static ssize_t sse_fn(void *cls, char *buf, size_t max)
{
	struct sse_state *s = cls;

	if (s->n >= 3)
		return -1;
	usleep(10 * 1000);
	s->n++;
	return snprintf(buf, max, ": keepalive\nid: %d\nevent: job\ndata: {\"seq\":%d}\n\n", s->n, s->n);
}

static int h_sse(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	drv_http_resp_stream(resp, 200, "text/event-stream", sse_fn,
			     drv_calloc(1, sizeof(struct sse_state)), drv_free);
	return 0;
}

/* --- deferred replies: /v1/wait?timeout=MS answers once `released` is set */

static atomic_int released, waits_started, waits_freed;
static atomic_int stream_ready;

static int wait_fn(void *cls, struct drv_http_resp *resp, int timed_out)
{
	(void)cls;
	if (atomic_load(&released)) {
		drv_http_resp_bytes(resp, 200, "text/plain", "released", 8);
		return 0;
	}
	if (!timed_out)
		return DRV_HTTP_AGAIN;
	drv_http_resp_bytes(resp, 200, "text/plain", "timed out", 9);
	return 0;
}

static void wait_free(void *cls)
{
	drv_free(cls);
	atomic_fetch_add(&waits_freed, 1);
}

static int h_wait(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	int64_t ms;

	(void)ctx;
	if (drv_http_req_query_int(req, "timeout", 10000, 0, 60000, &ms, resp) < 0)
		return 0;
	if (drv_http_req_query(req, "until"))   /* a deadline on the monotonic clock */
		ms = DRV_MAX(0, atoll(drv_http_req_query(req, "until")) - drv_mono_ms());
	atomic_fetch_add(&waits_started, 1);
	drv_http_defer(req, wait_fn, drv_malloc(16), wait_free, ms);
	return 0;
}

/* /v1/keyed?key=K answers once keyed_ready[K] is set, waiting on key K */
static atomic_int keyed_ready[4], keyed_calls;

static int keyed_fn(void *cls, struct drv_http_resp *resp, int timed_out)
{
	int k = *(int *)cls;

	atomic_fetch_add(&keyed_calls, 1);
	if (atomic_load(&keyed_ready[k]) || timed_out) {
		drv_http_resp_bytes(resp, 200, "text/plain", timed_out ? "late" : "keyed", timed_out ? 4 : 5);
		return 0;
	}
	drv_http_wait_on((uint64_t)k);
	return DRV_HTTP_AGAIN;
}

static int h_keyed(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	int64_t k;
	int *cls = drv_malloc(sizeof(*cls));

	(void)ctx;
	drv_http_req_query_int(req, "key", 1, 1, 3, &k, resp);
	*cls = (int)k;
	drv_http_defer(req, keyed_fn, cls, drv_free, 10000);
	return 0;
}

/* a stream that sends event n only once the test has made n ready */
static ssize_t lazy_fn(void *cls, char *buf, size_t max)
{
	struct sse_state *s = cls;

	if (s->n >= 2)
		return -1;
	if (s->n >= atomic_load(&stream_ready))
		return 0;
	s->n++;
	return snprintf(buf, max, "id: %d\nevent: job\ndata: {}\n\n", s->n);
}

static int h_lazy(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	drv_http_resp_stream(resp, 200, "text/event-stream", lazy_fn,
			     drv_calloc(1, sizeof(struct sse_state)), drv_free);
	return 0;
}

/* An upgrade to a byte pipe that echoes what comes, one read at a time,
 * until the peer's end; a refusal when asked ?no=1. */
static void echo_session(void *cls, struct drv_ws *w)
{
	char buf[4096];
	ssize_t k;

	(void)cls;
	while ((k = drv_ws_read_raw(w, buf, sizeof(buf))) > 0)
		if (drv_ws_write_raw(w, buf, (size_t)k) < 0)
			break;
}

static int h_pipe(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)ctx;
	if (drv_http_req_query(req, "no")) {
		drv_http_resp_error(resp, 409, "conflict", NULL, "nothing listens there");
		return 0;
	}
	return drv_http_resp_upgrade(req, resp, "test-pipe", echo_session, NULL, NULL);
}

static atomic_int secret_calls;

/* A private POST: counts the calls and the body bytes it was handed. */
static int h_secret(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	size_t len;

	(void)ctx;
	drv_http_req_body(req, &len);
	atomic_fetch_add(&secret_calls, 1);
	drv_http_resp_json(resp, 200, json_pack("{s:I}", "len", (json_int_t)len));
	return 0;
}

static int filter(struct drv_http_req *req, const struct drv_http_route *rt,
		  struct drv_http_resp *resp, void *ctx)
{
	const char *auth = drv_http_req_header(req, "Authorization");

	(void)ctx;
	if (!(rt->flags & 1))
		return 0;
	if (!auth || strcmp(auth, "Bearer good") != 0) {
		drv_http_resp_error(resp, 401, "unauthorized", NULL, "no valid token");
		return 1;
	}
	drv_http_req_set_user(req, (void *)"alice");
	return 0;
}

static atomic_int moved_calls;

/* 307 to the query's "to" (a standby sending a client to the leader). */
static int h_moved(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)ctx;
	atomic_fetch_add(&moved_calls, 1);
	drv_http_resp_header(resp, "Location", drv_http_req_query(req, "to"));
	drv_http_resp_bytes(resp, 307, "text/plain", "moved", 5);
	return 0;
}

static const struct drv_http_route routes[] = {
	{ "GET", "/v1/moved", h_moved, 0 },
	{ "POST", "/v1/things/{}", h_echo, 0 },
	{ "GET", "/v1/things/{}", h_echo, 0 },
	{ "GET", "/v1/private", h_echo, 1 },
	{ "POST", "/v1/secret", h_secret, 1 },
	{ "GET", "/v1/fail", h_fail, 0 },
	{ "GET", "/v1/slow", h_slow, 0 },
	{ "GET", "/v1/events", h_sse, 0 },
	{ "GET", "/v1/wait", h_wait, 0 },
	{ "GET", "/v1/lazy", h_lazy, 0 },
	{ "GET", "/v1/keyed", h_keyed, 0 },
	{ "GET", "/v1/pipe", h_pipe, 0 },
	{ "*", "/v1/tree/**", h_tree, 0 },
	{ NULL, NULL, NULL, 0 },
};

static struct drv_http_server *srv;
static char base[64];

static void start(void)
{
	char err[256];

	drv_http_client_plain(HTTP_PLAIN);
	cr_assert(eq(int, drv_http_server_start("127.0.0.1:0", routes, filter, NULL, &srv, err,
						 sizeof(err)), 0));
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", drv_http_server_port(srv));
}

static void stop(void)
{
	drv_http_server_stop(srv);
	srv = NULL;
}

TestSuite(http, .init = start, .fini = stop);

Test(http, captures_query_and_json_body)
{
	struct drv_http_client c;
	json_t *body = json_pack("{s:i}", "gpus", 8), *reply = NULL, *b;
	long st = 0;

	drv_http_client_init(&c, base, NULL);
	cr_assert(eq(int, drv_http_json(&c, "POST", "/v1/things/job%2042?q=a%20b", body, -1, &st,
					&reply), 0));
	cr_assert(eq(long, st, 201));
	cr_assert(eq(str, (char *)drv_json_str(reply, "id"), "job 42"));
	cr_assert(eq(str, (char *)drv_json_str(reply, "q"), "a b"));
	cr_assert(eq(str, (char *)drv_json_str(reply, "ct"), "application/json"));
	b = json_object_get(reply, "body");
	cr_assert(eq(i64, drv_json_int(b, "gpus", -1), 8));
	json_decref(reply);
	json_decref(body);
	drv_http_client_release(&c);
}

Test(http, errors_have_the_documented_shape)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	char buf[256];
	json_t *j;

	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);

	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/nothing", NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 404));
	j = json_loads(r.body, 0, NULL);
	cr_assert(eq(str, (char *)drv_json_str(json_object_get(j, "error"), "code"), "not_found"));
	cr_assert(json_object_get(json_object_get(j, "error"), "details") != NULL);
	json_decref(j);

	cr_assert(eq(int, drv_http_request(&c, "DELETE", "/v1/things/1", NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 405));
	cr_assert(ne(ptr, (void *)drv_http_reply_header(&r, "allow", buf, sizeof(buf)), NULL));
	cr_assert(eq(str, buf, "POST, GET"));

	cr_assert(eq(int, drv_http_request(&c, "POST", "/v1/things/1", "application/json", "{bad",
					   4, -1, &r), 0));
	cr_assert(eq(long, r.status, 400));
	cr_assert(ne(ptr, strstr(drv_http_error_message(&r, buf, sizeof(buf)), "request body:1:"),
		     NULL));

	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/fail", NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 500));
	cr_assert(ne(ptr, strstr(drv_http_error_message(&r, buf, sizeof(buf)), "input/output"), NULL),
		  "%s", buf);

	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}

Test(http, body_over_the_limit_is_413)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	size_t n = DRV_HTTP_MAX_BODY + 10;
	char *big = drv_malloc(n);

	memset(big, 'x', n);
	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "POST", "/v1/things/1", "text/plain", big, n, -1, &r),
		     0));
	cr_assert(eq(long, r.status, 413));
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
	drv_free(big);
}

Test(http, a_large_body_passes_through_a_small_connection_buffer)
{
	struct drv_http_client c;
	json_t *body, *reply = NULL;
	size_t n = 12u << 20;   /* far over DRV_HTTP_CONN_MEMORY, under the cap */
	char *big = drv_malloc(n + 1);
	long st = 0;

	memset(big, 'y', n);
	big[n] = '\0';
	body = json_pack("{s:s}", "blob", big);
	drv_http_client_init(&c, base, NULL);
	cr_assert(eq(int, drv_http_json(&c, "POST", "/v1/things/1", body, 20000, &st, &reply), 0));
	cr_assert(eq(long, st, 201));
	cr_assert(eq(sz, strlen(drv_json_str(json_object_get(reply, "body"), "blob")), n));
	json_decref(reply);
	json_decref(body);
	drv_free(big);
	drv_http_client_release(&c);
}

Test(http, filter_sees_the_token)
{
	struct drv_http_client c, good;
	json_t *reply = NULL;
	long st = 0;

	drv_http_client_init(&c, base, "bad");
	drv_http_client_init(&good, base, "good");
	cr_assert(eq(int, drv_http_json(&c, "GET", "/v1/private", NULL, -1, &st, &reply), 0));
	cr_assert(eq(long, st, 401));
	json_decref(reply);
	cr_assert(eq(int, drv_http_json(&good, "GET", "/v1/private", NULL, -1, &st, &reply), 0));
	cr_assert(eq(long, st, 201));
	cr_assert(eq(str, (char *)drv_json_str(reply, "user"), "alice"));
	json_decref(reply);
	drv_http_client_release(&c);
	drv_http_client_release(&good);
}

static int connect_and_ask(int port, const char *req)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	cr_assert(eq(int, connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0));
	cr_assert(eq(i64, (int64_t)write(fd, req, strlen(req)), (int64_t)strlen(req)));
	return fd;
}

static void expect_reply(int fd, const char *want)
{
	char buf[4096];
	size_t got = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (got < sizeof(buf) - 1 && !memmem(buf, got, want, strlen(want))) {
		ssize_t n;

		cr_assert(eq(int, poll(&p, 1, 5000), 1));
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		cr_assert(gt(i64, (int64_t)n, 0));
		got += (size_t)n;
	}
	cr_assert(ne(ptr, memmem(buf, got, want, strlen(want)), NULL));
}

/* Headers announcing a body of `len` bytes, none of which is sent. */
static int ask_headers_only(const char *path, const char *token, size_t len)
{
	char req[512];

	snprintf(req, sizeof(req),
		 "POST %s HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 path, token ? "Authorization: Bearer " : "", token ? token : "",
		 token ? "\r\n" : "", len);
	return connect_and_ask(drv_http_server_port(srv), req);
}

/* Reads to the end of the stream (the server closed it) within 5 s. */
static void expect_closed(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];
	ssize_t n;

	do {
		cr_assert(eq(int, poll(&p, 1, 5000), 1));
		n = read(fd, buf, sizeof(buf));
	} while (n > 0);
	cr_assert(le(i64, (int64_t)n, 0));
}

Test(http, a_refused_filter_answers_before_the_body)
{
	int fd = ask_headers_only("/v1/secret", "bad", 16u << 20);

	expect_reply(fd, "HTTP/1.1 401");
	expect_closed(fd);
	close(fd);
	fd = ask_headers_only("/v1/secret", NULL, DRV_HTTP_MAX_BODY + 1);
	expect_reply(fd, "unauthorized");   /* 401 comes before 413 */
	close(fd);
	cr_assert(eq(int, atomic_load(&secret_calls), 0));
	/* a GET announcing a body too: answered, the body never read */
	fd = connect_and_ask(drv_http_server_port(srv),
			     "GET /v1/private HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
	expect_reply(fd, "HTTP/1.1 401");
	expect_closed(fd);
	close(fd);
}

Test(http, an_unknown_route_answers_before_the_body)
{
	int fd = ask_headers_only("/v1/nowhere", "good", 16u << 20);

	expect_reply(fd, "HTTP/1.1 404");
	expect_closed(fd);
	close(fd);
	fd = ask_headers_only("/v1/private", "good", 16u << 20);
	expect_reply(fd, "HTTP/1.1 405");
	close(fd);
}

Test(http, an_admitted_body_over_the_cap_is_413)
{
	int fd = ask_headers_only("/v1/secret", "good", DRV_HTTP_MAX_BODY + 1);

	expect_reply(fd, "HTTP/1.1 413");
	expect_closed(fd);
	close(fd);
	cr_assert(eq(int, atomic_load(&secret_calls), 0));
}

Test(http, a_whole_body_sent_without_a_token_gets_401)
{
	struct drv_http_client bad, good;
	struct drv_http_reply r;
	size_t n = DRV_HTTP_MAX_BODY + 10;
	char *big = drv_malloc(n);

	memset(big, ' ', n);
	drv_http_client_init(&bad, base, "bad");
	drv_http_client_init(&good, base, "good");
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&bad, "POST", "/v1/secret", "application/json", big, n,
					   -1, &r), 0), "%s", bad.err);
	cr_assert(eq(long, r.status, 401));
	cr_assert(eq(int, drv_http_request(&good, "POST", "/v1/secret", "application/json", big,
					   n, -1, &r), 0), "%s", good.err);
	cr_assert(eq(long, r.status, 413));
	cr_assert(eq(int, drv_http_request(&good, "POST", "/v1/secret", "application/json", "{}",
					   2, -1, &r), 0));
	cr_assert(eq(long, r.status, 200));
	cr_assert(eq(int, atomic_load(&secret_calls), 1));
	drv_http_reply_release(&r);
	drv_http_client_release(&bad);
	drv_http_client_release(&good);
	drv_free(big);
}

Test(http, per_request_timeout)
{
	struct drv_http_client c;
	struct drv_http_reply r;

	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/slow", NULL, NULL, 0, 100, &r),
		     DRV_ETIMEDOUT));
	cr_assert(ne(ptr, strstr(c.err, "timed out"), NULL), "%s", c.err);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/slow", NULL, NULL, 0, 5000, &r), 0));
	cr_assert(eq(str, r.body, "late"));
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}

struct got {
	int n;
	char ids[64];
	char last[64];
};

static int on_event(const char *event, const char *id, const char *data, void *cls)
{
	struct got *g = cls;
	size_t l = strlen(g->ids);

	cr_assert(eq(str, (char *)event, "job"));
	snprintf(g->ids + l, sizeof(g->ids) - l, "%s,", id);
	snprintf(g->last, sizeof(g->last), "%s", data);
	return ++g->n == 2;   /* stop after two */
}

Test(http, server_sent_events)
{
	struct drv_http_client c;
	struct got g = { 0 };

	drv_http_client_init(&c, base, NULL);
	cr_assert(eq(int, drv_http_sse(&c, "/v1/events", 5000, on_event, &g), 0));
	cr_assert(eq(int, g.n, 2));
	cr_assert(eq(str, g.ids, "1,2,"));
	cr_assert(eq(str, g.last, "{\"seq\":2}"));
	drv_http_client_release(&c);
}

Test(http, nothing_listening_says_so)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	char url[64];
	int port = drv_http_server_port(srv);

	drv_http_server_stop(srv);
	srv = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	drv_http_client_init(&c, url, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/healthz", NULL, NULL, 0, -1, &r),
		     DRV_ECONN));
	cr_assert(ne(ptr, strstr(c.err, "cannot reach drover at http://127.0.0.1:"), NULL));
	cr_assert(ne(ptr, strstr(c.err, "connection refused"), NULL), "%s", c.err);
	drv_http_client_release(&c);
}

Test(http, busy_port_is_reported)
{
	struct drv_http_server *s2 = NULL;
	char addr[64], err[256];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", drv_http_server_port(srv));
	cr_assert(eq(int, drv_http_server_start(addr, routes, NULL, NULL, &s2, err, sizeof(err)),
		     DRV_EEXIST));
	cr_assert(ne(ptr, strstr(err, "in use"), NULL), "%s", err);
	cr_assert(eq(int, drv_http_server_start("nonsense", routes, NULL, NULL, &s2, err,
						sizeof(err)), DRV_EINVAL));
}

static int always_abort(void *cls)
{
	(void)cls;
	return 1;
}

Test(http, abort_hook_cuts_a_request_short)
{
	struct drv_http_client c;
	struct drv_http_reply r;

	drv_http_client_init(&c, base, NULL);
	c.abort_cb = always_abort;
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/slow", NULL, NULL, 0, 5000, &r),
		     DRV_ECONN));
	cr_assert(ne(ptr, strstr(c.err, "cut short"), NULL), "%s", c.err);
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sets `released` and wakes the server after delay_ms, on its own thread. */
static void *release_later(void *arg)
{
	usleep((useconds_t)(intptr_t)arg * 1000);
	atomic_store(&released, 1);
	drv_http_wake(srv);
	return NULL;
}

static void wait_for(atomic_int *v, int want, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (atomic_load(v) < want && now_ms() < end)
		usleep(5000);
	cr_assert(eq(int, atomic_load(v), want));
}

Test(http, deferred_reply_answered_on_wake)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	pthread_t th;
	int64_t t0 = now_ms();

	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	pthread_create(&th, NULL, release_later, (void *)(intptr_t)150);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/wait?timeout=5000", NULL, NULL, 0, -1,
					   &r), 0));
	cr_assert(eq(str, r.body, "released"));
	cr_assert(lt(i64, now_ms() - t0, 2000));
	pthread_join(th, NULL);
	wait_for(&waits_freed, 1, 2000);
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}

Test(http, deferred_reply_answered_at_its_deadline)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	int64_t t0 = now_ms(), took;

	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/wait?timeout=300", NULL, NULL, 0, -1,
					   &r), 0));
	took = now_ms() - t0;
	cr_assert(eq(str, r.body, "timed out"));
	cr_assert(ge(i64, took, 290));
	cr_assert(lt(i64, took, 2000));
	/* the connection is kept alive and serves the next request */
	drv_http_reply_release(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/things/7", NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 201));
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}

Test(http, client_gone_while_suspended_frees_its_state)
{
	struct drv_http_client c;
	struct drv_http_reply r;

	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/wait?timeout=30000", NULL, NULL, 0, 200,
					   &r), DRV_ETIMEDOUT));
	drv_http_client_release(&c);   /* closes the socket */
	wait_for(&waits_freed, 1, 3000);
	drv_http_reply_release(&r);
}

static void *ready_later(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	atomic_store(&stream_ready, 2);
	drv_http_wake(srv);
	return NULL;
}

Test(http, a_waiting_stream_goes_on_when_woken)
{
	struct drv_http_client c;
	struct got g = { 0 };
	int64_t t0 = now_ms();
	pthread_t th;

	/* the second event is made ready and announced 100 ms in: with no
	 * wake the stream would be retried only after DRV_HTTP_STREAM_POLL_MS */
	atomic_store(&stream_ready, 1);
	pthread_create(&th, NULL, ready_later, NULL);
	drv_http_client_init(&c, base, NULL);
	cr_assert(eq(int, drv_http_sse(&c, "/v1/lazy", 5000, on_event, &g), 0));
	cr_assert(eq(int, g.n, 2));
	cr_assert(lt(i64, now_ms() - t0, DRV_HTTP_STREAM_POLL_MS - 100));
	pthread_join(th, NULL);
	drv_http_client_release(&c);
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

Test(http, many_suspended_requests_on_a_bounded_thread_count)
{
	enum { N = 400 };
	static int fds[N];
	const char *req = "GET /v1/wait?timeout=30000 HTTP/1.1\r\nHost: x\r\n\r\n";
	int before = count_threads();

	/* the open route authenticates no one: let one address hold them all */
	drv_http_server_set_client_limit(srv, N + 64);

	for (int i = 0; i < N; i++)
		fds[i] = connect_and_ask(drv_http_server_port(srv), req);
	wait_for(&waits_started, N, 10000);
	cr_assert(eq(int, count_threads(), before), "threads: %d with %d waiting, %d before",
		  count_threads(), N, before);
	atomic_store(&released, 1);
	drv_http_wake(srv);
	for (int i = 0; i < N; i++) {
		expect_reply(fds[i], "released");
		close(fds[i]);
	}
	wait_for(&waits_freed, N, 5000);
}

/*
 * Waits whose deadlines fall close together are answered in few rounds of
 * the waiter (the deadline grid, include/drover/http.h): every round costs
 * each event thread a walk over all of its suspended connections, so one
 * round per deadline was one walk per agent heartbeat at scale. 40 waits
 * with deadlines on 20 successive milliseconds span at most two points of
 * the grid (one more is allowed for a late adoption); answered one
 * deadline at a time (the old way), they took a round per millisecond
 * (17 to 20). None is answered before its deadline.
 */
Test(http, deadlines_due_together_are_served_in_few_rounds)
{
	enum { N = 40 };
	int fds[N];
	uint64_t rounds0, resumed0, rounds, resumed;
	int started0 = atomic_load(&waits_started);
	/* far enough ahead that all N are parked before the first is due on
	 * a loaded machine: one parked after its deadline is answered when
	 * it is adopted, in a round of its own */
	int64_t first = drv_mono_ms() + 1500;

	drv_http_server_set_client_limit(srv, N + 64);
	drv_http_server_wait_stats(srv, &rounds0, &resumed0);
	for (int i = 0; i < N; i++) {
		char req[128];

		snprintf(req, sizeof(req), "GET /v1/wait?until=%lld HTTP/1.1\r\nHost: x\r\n\r\n",
			 (long long)(first + i / 2));
		fds[i] = connect_and_ask(drv_http_server_port(srv), req);
	}
	wait_for(&waits_started, started0 + N, 10000);
	cr_assert(lt(i64, drv_mono_ms(), first),
		  "the %d requests reached their handler only after the first deadline", N);
	for (int i = 0; i < N; i++) {
		expect_reply(fds[i], "timed out");
		cr_assert(ge(i64, drv_mono_ms(), first + i / 2));
		close(fds[i]);
	}
	drv_http_server_wait_stats(srv, &rounds, &resumed);
	cr_assert(eq(u64, resumed - resumed0, N));
	cr_assert(le(u64, rounds - rounds0, 3), "%llu rounds for %d deadlines within 20 ms",
		  (unsigned long long)(rounds - rounds0), N);
}

static bool nothing_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 0;
}

Test(http, a_keyed_wait_is_woken_by_its_key_only)
{
	int port = drv_http_server_port(srv);
	int a = connect_and_ask(port, "GET /v1/keyed?key=1 HTTP/1.1\r\nHost: x\r\n\r\n");
	int b = connect_and_ask(port, "GET /v1/keyed?key=2 HTTP/1.1\r\nHost: x\r\n\r\n");
	int calls;

	wait_for(&keyed_calls, 2, 5000);
	atomic_store(&keyed_ready[1], 1);
	atomic_store(&keyed_ready[2], 1);
	/* a plain wake passes keyed waiters by: their fn is not even called */
	usleep(100 * 1000);
	calls = atomic_load(&keyed_calls);
	drv_http_wake(srv);
	cr_assert(nothing_within(a, 300));
	cr_assert(nothing_within(b, 0));
	cr_assert(eq(int, atomic_load(&keyed_calls), calls));
	drv_http_wake_key(srv, 1);
	expect_reply(a, "keyed");
	cr_assert(nothing_within(b, 300));
	drv_http_wake_key(srv, 2);
	expect_reply(b, "keyed");
	close(a);
	close(b);
}

/* "/v1/tree/" "**" takes /v1/tree and every path below it, "*" any method;
 * a path that only starts with the same letters is not below it. */
Test(http, a_prefix_pattern_takes_any_method_below_it)
{
	struct drv_http_client c;
	const char *paths[] = { "/v1/tree", "/v1/tree/", "/v1/tree/a", "/v1/tree/a/b/c" };
	const char *methods[] = { "GET", "DELETE", "PATCH", "PUT" };
	json_t *reply = NULL;
	long st = 0;

	drv_http_client_init(&c, base, NULL);
	for (size_t i = 0; i < 4; i++) {
		cr_assert(eq(int, drv_http_json(&c, methods[i], paths[i], NULL, -1, &st, &reply), 0));
		cr_assert(eq(long, st, 200), "%s %s", methods[i], paths[i]);
		cr_assert(eq(str, (char *)drv_json_str(reply, "method"), (char *)methods[i]));
		cr_assert(eq(str, (char *)drv_json_str(reply, "path"), (char *)paths[i]));
		json_decref(reply);
		reply = NULL;
	}
	cr_assert(eq(int, drv_http_json(&c, "GET", "/v1/treetop", NULL, -1, &st, &reply), 0));
	cr_assert(eq(long, st, 404));
	json_decref(reply);
	drv_http_client_release(&c);
}

/* The bytes of t until want of them came (or 5 s passed). */
static size_t tunnel_read(struct drv_http_tunnel *t, char *buf, size_t want)
{
	size_t got = 0;

	for (int i = 0; i < 500 && got < want; i++) {
		ssize_t k = drv_http_tunnel_recv(t, buf + got, want - got);
		struct pollfd p = { drv_http_tunnel_fd(t), POLLIN, 0 };

		if (k > 0)
			got += (size_t)k;
		else if (k == DRV_ETIMEDOUT)
			poll(&p, 1, 10);
		else
			break;
	}
	return got;
}

Test(http, an_upgraded_tunnel_pipes_both_ways)
{
	struct drv_http_tunnel *t = NULL;
	char msg[256] = "", big[100000], back[sizeof(big)];

	cr_assert(eq(int, drv_http_tunnel_open(base, NULL, NULL, "/v1/pipe", "test-pipe", 5000, &t,
					       msg, sizeof(msg)), 0), "%s", msg);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	cr_assert(eq(int, drv_http_tunnel_send(t, "hello", 5, 5000), 0));
	cr_assert(eq(sz, tunnel_read(t, back, 5), 5));
	cr_assert(eq(int, memcmp(back, "hello", 5), 0));
	cr_assert(eq(int, drv_http_tunnel_send(t, big, sizeof(big), 5000), 0));
	cr_assert(eq(sz, tunnel_read(t, back, sizeof(big)), sizeof(big)));
	cr_assert(eq(int, memcmp(back, big, sizeof(big)), 0));
	drv_http_tunnel_shutdown(t);   /* the echo ends; so does the pipe */
	cr_assert(eq(sz, tunnel_read(t, back, 1), 0));
	drv_http_tunnel_close(t);
}

Test(http, a_refused_tunnel_says_why)
{
	struct drv_http_tunnel *t = NULL;
	char msg[256] = "";

	cr_assert(eq(int, drv_http_tunnel_open(base, NULL, NULL, "/v1/pipe?no=1", "test-pipe", 5000,
					       &t, msg, sizeof(msg)), DRV_ESTATE));
	cr_assert(eq(ptr, t, NULL));
	cr_assert(eq(str, msg, "nothing listens there"));
	cr_assert(eq(int, drv_http_tunnel_open("http://127.0.0.1:1", NULL, NULL, "/", "x", 2000, &t,
					       msg, sizeof(msg)), DRV_ECONN));
	cr_assert(strstr(msg, "cannot reach http://127.0.0.1:1") != NULL, "%s", msg);
}

/* A 307 is followed to the same scheme only (https never turns into
 * http, nor http into https), at most 3 times; the path is kept (a standby
 * names the leader). */
Test(http, a_307_is_followed_to_the_same_scheme_at_most_three_times)
{
	static const struct drv_http_route leader_routes[] = {
		{ "*", "/v1/**", h_tree, 0 },
		{ NULL, NULL, NULL, 0 },
	};
	struct drv_http_server *leader;
	struct drv_http_client c;
	struct drv_http_reply r;
	char path[512], err[256];
	int port;

	cr_assert(eq(int, drv_http_server_start("127.0.0.1:0", leader_routes, NULL, NULL, &leader,
						 err, sizeof(err)), 0));
	port = drv_http_server_port(leader);
	drv_http_client_init(&c, base, NULL);
	drv_http_reply_init(&r);
	snprintf(path, sizeof(path), "/v1/moved?to=http://127.0.0.1:%d/v1/moved", port);
	cr_assert(eq(int, drv_http_request(&c, "GET", path, NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 200), "followed: %ld", r.status);
	cr_assert(not(eq(ptr, strstr(r.body, "/v1/moved"), NULL)), "%s", r.body);
	drv_http_client_release(&c);
	drv_http_client_init(&c, base, NULL);
	snprintf(path, sizeof(path), "/v1/moved?to=https://127.0.0.1:%d/v1/moved", port);
	cr_assert(eq(int, drv_http_request(&c, "GET", path, NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 307), "another scheme is not followed");
	atomic_store(&moved_calls, 0);
	snprintf(path, sizeof(path), "/v1/moved?to=%s/v1/moved", base);
	cr_assert(eq(int, drv_http_request(&c, "GET", path, NULL, NULL, 0, -1, &r), 0));
	cr_assert(eq(long, r.status, 307));
	cr_assert(eq(int, atomic_load(&moved_calls), 4), "the first and 3 redirects");
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
	drv_http_server_stop(leader);
}
