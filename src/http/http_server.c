/*
 * http_server.c: the HTTP server side of src/http: a route table over
 * libmicrohttpd (include/drover/http.h).
 *
 * libmicrohttpd runs its own event loop: DRV_HTTP_THREADS threads, each
 * with an epoll set over its share of the connections. A handler runs on
 * one of them, so it must not wait long: a reply that waits (long-poll,
 * commit) is deferred and a stream with nothing to send returns 0; both
 * suspend the connection and wait in http_wait.c. Once a request's
 * headers are in (the access callback's first call), its path is matched
 * against the table and the caller's filter runs (authentication): a
 * refusal is answered then, without reading the body, and the connection
 * closed after it. An admitted request's body is collected across the
 * next calls (bounded by DRV_HTTP_MAX_BODY), then its handler fills a
 * struct drv_http_resp that becomes the MHD response.
 *
 * The listening socket is made here (not by MHD) so that a bind failure
 * is reported with its real cause ("address already in use").
 */
#include "http_int.h"

#include <curl/curl.h>

#include "drover/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- address parsing ---------------------------------------------------- */

int drv_http_parse_addr(const char *s, char *host, size_t hostsz, int *port)
{
	const char *colon;
	char *end;
	long p;
	size_t hl;

	if (!s)
		return DRV_EINVAL;
	colon = strrchr(s, ':');
	if (!colon)
		return DRV_EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= hostsz)
		return DRV_EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno || p < 0 || p > 65535)
		return DRV_EINVAL;
	*port = (int)p;
	return 0;
}

static int make_listen_socket(const char *addr, int *fd_out, int *port_out, char *errmsg,
			      size_t errsz)
{
	char host[256];
	int port, fd = -1, one = 1, rc;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	if (drv_http_parse_addr(addr, host, sizeof(host), &port) < 0) {
		if (errmsg)
			snprintf(errmsg, errsz, "%s: not ADDR:PORT (e.g. 127.0.0.1:8080)", addr ? addr : "(null)");
		return DRV_EINVAL;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (host[0] == '\0' || strcmp(host, "*") == 0) {
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
	} else if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		struct addrinfo hints, *res = NULL;

		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_INET;
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) {
			if (errmsg)
				snprintf(errmsg, errsz, "%s: cannot resolve host %s", addr, host);
			return DRV_EINVAL;
		}
		sin.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
		freeaddrinfo(res);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto fail;
	if (listen(fd, 4096) < 0)
		goto fail;
	if (getsockname(fd, (struct sockaddr *)&sin, &sl) < 0)
		goto fail;
	*fd_out = fd;
	*port_out = ntohs(sin.sin_port);
	return 0;
fail:
	rc = errno;
	if (errmsg)
		snprintf(errmsg, errsz, "cannot listen on %s: %s", addr, strerror(rc));
	if (fd >= 0)
		close(fd);
	return rc == EADDRINUSE ? DRV_EEXIST : DRV_EIO;
}

/* --- route matching ----------------------------------------------------- */

/* Matches path against pattern; fills captures (malloc'd) on success. A
 * pattern ending in "/" followed by "**" matches its prefix and any path below it. */
static bool match(const char *pattern, const char *path, char **params)
{
	const char *p = pattern, *u = path;
	int np = 0;

	while (*p && *u) {
		if (strcmp(p, "/**") == 0 && *u == '/')
			return true;
		if (p[0] == '{' && p[1] == '}') {
			const char *e = strchr(u, '/');
			size_t n = e ? (size_t)(e - u) : strlen(u);

			if (n == 0 || np >= DRV_HTTP_MAX_PARAMS)
				goto no;
			params[np++] = drv_strndup(u, n);
			u += n;
			p += 2;
			continue;
		}
		if (*p != *u)
			goto no;
		p++;
		u++;
	}
	/* a trailing '/' on the path is tolerated */
	if (*p == '\0' && (*u == '\0' || (u[0] == '/' && u[1] == '\0')))
		return true;
	if (*u == '\0' && strcmp(p, "/**") == 0)
		return true;
no:
	for (int i = 0; i < np; i++) {
		drv_free(params[i]);
		params[i] = NULL;
	}
	return false;
}

/* --- response helpers --------------------------------------------------- */

static void resp_clear_body(struct drv_http_resp *resp)
{
	drv_free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	if (resp->stream_free && resp->stream_cls)
		resp->stream_free(resp->stream_cls);
	resp->stream = NULL;
	resp->stream_cls = NULL;
	resp->stream_free = NULL;
	if (resp->ws)
		http_ws_drop(resp);
}

static void set_ctype(struct drv_http_resp *resp, const char *ctype)
{
	snprintf(resp->content_type, sizeof(resp->content_type), "%s", ctype);
}

void drv_http_resp_json(struct drv_http_resp *resp, int status, json_t *obj)
{
	char *s;

	resp_clear_body(resp);
	resp->status = status;
	/* 16 digits: a number rounded to micro-dollars prints as such
	 * (0.041667, not 0.041667000000000003) up to ten billion */
	s = obj ? json_dumps(obj, DRV_HTTP_JSON_FLAGS) : NULL;
	if (!s)
		s = strdup("{}");
	resp->len = strlen(s);
	resp->body = drv_malloc(resp->len + 2);
	memcpy(resp->body, s, resp->len);
	resp->body[resp->len++] = '\n';
	resp->body[resp->len] = '\0';
	free(s);
	set_ctype(resp, "application/json");
	json_decref(obj);
}

void drv_http_resp_bytes(struct drv_http_resp *resp, int status, const char *ctype,
			 const void *data, size_t len)
{
	resp_clear_body(resp);
	resp->status = status;
	resp->body = drv_malloc(len + 1);
	if (len)
		memcpy(resp->body, data, len);
	resp->body[len] = '\0';
	resp->len = len;
	set_ctype(resp, ctype);
}

void drv_http_resp_error(struct drv_http_resp *resp, int status, const char *code,
			 json_t *details, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!details)
		details = json_array();
	drv_http_resp_json(resp, status,
			   json_pack("{s:{s:s,s:s,s:o}}", "error", "code", code, "message", msg,
				     "details", details));
}

void drv_http_resp_header(struct drv_http_resp *resp, const char *name, const char *value)
{
	size_t old = resp->headers ? strlen(resp->headers) : 0;
	size_t add = strlen(name) + strlen(value) + 3;

	resp->headers = drv_realloc(resp->headers, old + add + 1);
	snprintf(resp->headers + old, add + 1, "%s: %s\n", name, value);
}

void drv_http_resp_stream(struct drv_http_resp *resp, int status, const char *ctype,
			  ssize_t (*fn)(void *cls, char *buf, size_t max), void *cls,
			  void (*free_fn)(void *cls))
{
	resp_clear_body(resp);
	resp->status = status;
	resp->stream = fn;
	resp->stream_cls = cls;
	resp->stream_free = free_fn;
	set_ctype(resp, ctype);
}

/* --- request accessors -------------------------------------------------- */

const char *drv_http_req_method(const struct drv_http_req *r) { return r->method; }
const char *drv_http_req_path(const struct drv_http_req *r) { return r->path; }
const struct drv_http_route *drv_http_req_route(const struct drv_http_req *r) { return r->route; }
void drv_http_req_set_user(struct drv_http_req *r, void *p) { r->user = p; }
void drv_http_req_set_cluster(struct drv_http_req *r) { r->cluster = true; }
void *drv_http_req_user(const struct drv_http_req *r) { return r->user; }
const char *drv_http_req_peer(const struct drv_http_req *r) { return r->peer; }

const char *drv_http_req_param(const struct drv_http_req *r, int i)
{
	if (i < 0 || i >= DRV_HTTP_MAX_PARAMS)
		return NULL;
	return r->params[i];
}

const char *drv_http_req_query(const struct drv_http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct qs {
	char *buf;
	size_t n, len;
};

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	struct qs *q = cls;
	char *k = curl_easy_escape(NULL, key, 0), *v = value ? curl_easy_escape(NULL, value, 0) : NULL;
	int w = snprintf(q->buf + q->len, q->n - q->len, "%c%s%s%s", q->len ? '&' : '?',
			 k ? k : "", v ? "=" : "", v ? v : "");

	(void)kind;
	curl_free(k);
	curl_free(v);
	if (w > 0)
		q->len = q->len + (size_t)w < q->n ? q->len + (size_t)w : q->n - 1;
	return MHD_YES;
}

struct qall {
	const char *name;
	json_t *v;
};

static enum MHD_Result add_named(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct qall *q = cls;

	(void)kind;
	if (key && strcmp(key, q->name) == 0)
		json_array_append_new(q->v, json_string(value ? value : ""));
	return MHD_YES;
}

json_t *drv_http_req_query_all(const struct drv_http_req *r, const char *name)
{
	struct qall q = { name, json_array() };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_named, &q);
	return q.v;
}

void drv_http_req_query_string(const struct drv_http_req *r, char *buf, size_t n)
{
	struct qs q = { buf, n, 0 };

	buf[0] = '\0';
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &q);
}

const char *drv_http_req_header(const struct drv_http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *drv_http_req_body(const struct drv_http_req *r, size_t *len)
{
	if (len)
		*len = drv_dynbuf_len(&r->body);
	return drv_dynbuf_str(&r->body);
}

json_t *drv_http_req_json(const struct drv_http_req *r, struct drv_http_resp *resp)
{
	json_error_t e;
	json_t *j;

	if (r->body.len == 0) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "request body: empty, expected JSON");
		return NULL;
	}
	j = json_loadb(r->body.buf, r->body.len, 0, &e);
	if (!j)
		drv_http_resp_error(resp, 400, "invalid", NULL, "request body:%d:%d: %s", e.line,
				    e.column, e.text);
	return j;
}

int drv_http_req_query_int(const struct drv_http_req *r, const char *name, int64_t def,
			   int64_t min, int64_t max, int64_t *out, struct drv_http_resp *resp)
{
	const char *v = drv_http_req_query(r, name);
	char *end;
	long long x;

	if (!v || !*v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtoll(v, &end, 10);
	if (*end || errno || x < min || x > max) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "query %s=%s: expected an integer from %lld to %lld", name, v,
				    (long long)min, (long long)max);
		return DRV_EINVAL;
	}
	*out = x;
	return 0;
}

/* --- MHD glue ----------------------------------------------------------- */

/*
 * A streamed reply. The wrapped fn never blocks: when it has nothing, the
 * reader parks the request (suspending the connection) until the next
 * drv_http_wake() or DRV_HTTP_STREAM_POLL_MS, then is called again.
 */
struct stream_wrap {
	struct drv_http_req *req;  /* alive while the reader is called */
	ssize_t (*fn)(void *cls, char *buf, size_t max);
	void *cls;
	void (*free_fn)(void *cls);
};

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream_wrap *w = cls;
	struct drv_http_req *r = w->req;
	ssize_t n;

	(void)pos;
	if (r->ended || r->gone)
		return MHD_CONTENT_READER_END_OF_STREAM;
	r->gen = atomic_load(&r->srv->wake_gen);
	n = w->fn(w->cls, buf, max);
	if (n < 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == 0) {
		r->deadline_ms = drv_mono_ms() + DRV_HTTP_STREAM_POLL_MS;
		if (!http_park(r, PARK_STREAM))
			return MHD_CONTENT_READER_END_OF_STREAM;   /* stopping */
	}
	return n;
}

static void stream_free(void *cls)
{
	struct stream_wrap *w = cls;

	if (w->free_fn)
		w->free_fn(w->cls);
	drv_free(w);
}

static enum MHD_Result send_resp(struct drv_http_req *req, struct drv_http_resp *resp)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;

	if (resp->ws) {
		mr = http_ws_response(resp);
	} else if (resp->stream) {
		struct stream_wrap *w = drv_calloc(1, sizeof(*w));

		w->req = req;
		w->fn = resp->stream;
		w->cls = resp->stream_cls;
		w->free_fn = resp->stream_free;
		resp->stream = NULL;
		resp->stream_cls = NULL;
		resp->stream_free = NULL;
		mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, w,
						       stream_free);
		MHD_add_response_header(mr, "Cache-Control", "no-cache");
	} else {
		mr = MHD_create_response_from_buffer(resp->len, resp->body ? resp->body : (char *)"",
						     MHD_RESPMEM_MUST_COPY);
	}
	if (!mr)
		return MHD_NO;
	if (resp->content_type[0])
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
	if (resp->headers) {
		char *line = resp->headers, *nl;

		while ((nl = strchr(line, '\n'))) {
			char *colon = strchr(line, ':');

			*nl = '\0';
			if (colon && colon < nl) {
				*colon = '\0';
				MHD_add_response_header(mr, line, colon + 2);
				*colon = ':';
			}
			*nl = '\n';
			line = nl + 1;
		}
	}
	ret = MHD_queue_response(req->conn, (unsigned)(resp->status ? resp->status : 200), mr);
	MHD_destroy_response(mr);
	return ret;
}

void http_resp_release(struct drv_http_resp *resp)
{
	resp_clear_body(resp);
	drv_free(resp->headers);
	resp->headers = NULL;
}

/*
 * Matches r's path against the table and runs the caller's filter, before
 * any of the body is read. Returns true when the request may go on to its
 * handler (r->route set); false with resp holding the refusal: the
 * filter's (401, 403), 405 with Allow, or 404.
 */
static bool admit(struct drv_http_req *r, struct drv_http_resp *resp)
{
	struct drv_http_server *s = r->srv;
	char allow[128] = "";
	bool path_matched = false;

	for (const struct drv_http_route *rt = s->routes; rt->method; rt++) {
		char *params[DRV_HTTP_MAX_PARAMS] = { 0 };

		if (!match(rt->pattern, r->path, params))
			continue;
		if (strcmp(rt->method, "*") != 0 && strcmp(rt->method, r->method) != 0) {
			size_t n = strlen(allow);

			path_matched = true;
			snprintf(allow + n, sizeof(allow) - n, "%s%s", n ? ", " : "", rt->method);
			for (int i = 0; i < DRV_HTTP_MAX_PARAMS; i++)
				drv_free(params[i]);
			continue;
		}
		memcpy(r->params, params, sizeof(params));
		r->route = rt;
		if (s->filter && s->filter(r, rt, resp, s->ctx) != 0) {
			if (resp->status < 300)
				drv_http_resp_error(resp, 403, "forbidden", NULL, "forbidden");
			return false;
		}
		return true;
	}
	if (path_matched) {
		drv_http_resp_error(resp, 405, "method_not_allowed", NULL,
				    "%s %s: method not allowed (allowed: %s)", r->method, r->path,
				    allow);
		drv_http_resp_header(resp, "Allow", allow);
		return false;
	}
	drv_http_resp_error(resp, 404, "not_found", NULL, "%s %s: no such route", r->method,
			    r->path);
	return false;
}

/* The admitted request's handler, once its whole body is in (or 413). */
static void dispatch(struct drv_http_req *r, struct drv_http_resp *resp)
{
	int rc;

	if (r->too_large) {
		drv_http_resp_error(resp, 413, "too_large", NULL,
				    "request body over %u bytes", DRV_HTTP_MAX_BODY);
		return;
	}
	rc = r->route->fn(r, resp, r->srv->ctx);
	if (rc < 0 && (resp->status < 400 || !resp->body))
		drv_http_resp_error(resp, 500, "internal", NULL, "%s %s: %s", r->method, r->path,
				    drv_strerror(rc));
}

void drv_http_defer(struct drv_http_req *req, drv_http_defer_fn fn, void *cls,
		    void (*free_fn)(void *), int64_t timeout_ms)
{
	req->deferred = true;
	req->dfn = fn;
	req->dcls = cls;
	req->dfree = free_fn;
	req->deadline_ms = timeout_ms < 0 ? INT64_MAX : drv_mono_ms() + timeout_ms;
}

static void fill_peer(struct drv_http_req *r)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	if (ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ci->client_addr)->sin_addr, r->peer,
			  sizeof(r->peer));
	else if (ci->client_addr->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ci->client_addr)->sin6_addr, r->peer,
			  sizeof(r->peer));
}

static void take_body(struct drv_http_req *r, const char *data, size_t n)
{
	if (!r->too_large && drv_dynbuf_add(&r->body, data, n) < 0)
		r->too_large = true;
}

/* Queues r's reply and frees its body (MHD copied it). */
static enum MHD_Result answer(struct drv_http_req *r)
{
	enum MHD_Result ret = send_resp(r, &r->dresp);

	http_resp_release(&r->dresp);
	return ret;
}

/*
 * The handler deferred: answer now if its fn can, else park the request.
 * Called again after the waiter thread resumes it (answered, or its peer
 * gone: then the connection is closed).
 */
static enum MHD_Result deferred(struct drv_http_req *r)
{
	if (r->gone)
		return MHD_NO;
	if (!r->answered) {
		if (!http_defer_try(r, false) && http_park(r, PARK_DEFER))
			return MHD_YES;
		if (!r->answered)
			http_defer_try(r, true);   /* stopping: nothing may park */
	}
	return answer(r);
}

/* A body was announced (Content-Length not 0, or chunked). */
static bool body_announced(const struct drv_http_req *r)
{
	const char *cl = drv_http_req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (cl && strtoull(cl, NULL, 10) != 0) ||
	       drv_http_req_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* A Content-Length over DRV_HTTP_MAX_BODY: 413 before reading any of it. */
static bool body_announced_too_large(const struct drv_http_req *r)
{
	const char *cl = drv_http_req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return cl && strtoull(cl, NULL, 10) > DRV_HTTP_MAX_BODY;
}

/*
 * The request's headers are in, its body not yet: refuse it now (unknown
 * route, the filter says no, a body announced over the cap) without
 * reading the body, and close the connection after the reply rather than
 * drain what the client may still send. An admitted request's connection
 * gets the full idle timeout (see start_mhd).
 */
static enum MHD_Result headers_in(struct drv_http_req *r)
{
	bool close = false;

	r->dresp.status = 200;
	if (admit(r, &r->dresp)) {
		if (!http_conns_admitted(r->srv, r->conn_policy, !r->srv->filter || r->user,
					 r->cluster, body_announced(r))) {
			drv_http_resp_error(&r->dresp, 429, "too_many_connections", NULL,
					    "%s already holds %u authenticated connections to this "
					    "server; close some or raise max_%s_connections_per_client",
					    r->peer, drv_http_server_auth_limit(r->srv, r->cluster),
					    r->cluster ? "cluster" : "user");
			drv_http_resp_header(&r->dresp, "Retry-After", "1");
			close = true;
		} else {
			MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
						  (unsigned int)DRV_HTTP_IDLE_TIMEOUT_S);
			if (!body_announced_too_large(r))
				return MHD_YES;
			drv_http_resp_error(&r->dresp, 413, "too_large", NULL,
					    "request body over %u bytes", DRV_HTTP_MAX_BODY);
		}
	}
	r->refused = true;
	if (close || body_announced(r))
		drv_http_resp_header(&r->dresp, MHD_HTTP_HEADER_CONNECTION, "close");
	return answer(r);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version,
				 const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct drv_http_server *s = cls;
	struct drv_http_req *r = *con_cls;

	(void)version;
	if (!r) {
		r = drv_calloc(1, sizeof(*r));
		drv_dynbuf_init(&r->body, DRV_HTTP_MAX_BODY);
		r->srv = s;
		r->conn = conn;
		r->method = method;
		r->path = url;
		r->sock = -1;
		r->conn_policy = http_conns_of(conn);
		fill_peer(r);
		*con_cls = r;
		return headers_in(r);
	}
	if (r->refused)   /* answered already; a body still coming is not read */
		return *upload_data_size ? MHD_NO : MHD_YES;
	if (*upload_data_size) {
		take_body(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->deferred)
		return deferred(r);
	http_conns_body_in(s, r->conn_policy);
	dispatch(r, &r->dresp);
	return r->deferred ? deferred(r) : answer(r);
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct drv_http_req *r = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!r)
		return;
	if (!r->refused)
		http_conns_request_done(r->srv, r->conn_policy);
	if (r->dfree && r->dcls)
		r->dfree(r->dcls);
	http_resp_release(&r->dresp);
	drv_dynbuf_release(&r->body);
	for (int i = 0; i < DRV_HTTP_MAX_PARAMS; i++)
		drv_free(r->params[i]);
	drv_free(r);
	*con_cls = NULL;
}

long drv_http_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > LONG_MAX ? LONG_MAX : (long)rl.rlim_cur;
}

/*
 * The connection limit the open-file limit leaves room for: all of it
 * but DRV_HTTP_FD_RESERVE descriptors (the store, logs, libmicrohttpd's
 * own), capped at DRV_HTTP_MAX_CONNECTIONS.
 */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return DRV_HTTP_MIN_CONNECTIONS;
	n = rl.rlim_cur == RLIM_INFINITY ? DRV_HTTP_MAX_CONNECTIONS + DRV_HTTP_FD_RESERVE : rl.rlim_cur;
	if (n < DRV_HTTP_FD_RESERVE + DRV_HTTP_MIN_CONNECTIONS)
		return DRV_HTTP_MIN_CONNECTIONS;
	n -= DRV_HTTP_FD_RESERVE;
	return n > DRV_HTTP_MAX_CONNECTIONS ? DRV_HTTP_MAX_CONNECTIONS : (unsigned)n;
}

static struct MHD_Daemon *start_mhd(struct drv_http_server *s)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_ALLOW_UPGRADE;
	struct MHD_OptionItem listen[] = {
		{ MHD_OPTION_LISTEN_SOCKET, s->fd, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};

	/* with TLS, the front threads accept and do TLS (http_tlsfront.c) */
	if (s->tls.cert)
		flags |= MHD_USE_NO_LISTEN_SOCKET;
	return MHD_start_daemon(flags, 0, http_conns_accept, s, access_cb, s,
				MHD_OPTION_NOTIFY_CONNECTION, http_conns_notify, s,
				MHD_OPTION_ARRAY, s->tls.cert ? listen + 1 : listen,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)DRV_HTTP_THREADS,
				MHD_OPTION_NOTIFY_COMPLETED, completed_cb, s,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)DRV_HTTP_HEADER_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, s->conn_limit,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)DRV_HTTP_CONN_MEMORY,
				MHD_OPTION_END);
}

static void server_free(struct drv_http_server *s)
{
	http_tls_release(&s->tls);
	pthread_mutex_destroy(&s->wsmu);
	drv_free(s);
}

int drv_http_server_start(const char *addr, const struct drv_http_route *routes,
			  drv_http_filter filter, void *ctx, struct drv_http_server **out,
			  char *errmsg, size_t errsz)
{
	return drv_http_server_start_opts(addr, NULL, routes, filter, ctx, out, errmsg, errsz);
}

int drv_http_server_start_opts(const char *addr, const struct drv_http_server_opts *o,
			       const struct drv_http_route *routes, drv_http_filter filter,
			       void *ctx, struct drv_http_server **out, char *errmsg,
			       size_t errsz)
{
	struct drv_http_server *s = drv_calloc(1, sizeof(*s));
	char dummy[8];

	pthread_mutex_init(&s->wsmu, NULL);
	int fd, port, rc;

	if (!errmsg) {
		errmsg = dummy;
		errsz = sizeof(dummy);
	}
	if (o && (o->tls_cert_file || o->tls_key_file)) {
		rc = http_tls_load(&s->tls, o->tls_cert_file, o->tls_key_file, errmsg, errsz);
		if (rc < 0) {
			server_free(s);
			return rc;
		}
	}
	rc = make_listen_socket(addr, &fd, &port, errmsg, errsz);
	if (rc < 0) {
		server_free(s);
		return rc;
	}
	s->routes = routes;
	s->filter = filter;
	s->ctx = ctx;
	s->port = port;
	s->fd = fd;
	s->conn_limit = connection_limit();
	if (s->tls.cert)   /* the TCP socket and a socketpair each (http_tlsfront.c) */
		s->conn_limit = DRV_MAX(s->conn_limit / 3, DRV_HTTP_MIN_CONNECTIONS);
	http_conns_init(s);
	if (http_wait_start(s) < 0 || !(s->mhd = start_mhd(s)) ||
	    (s->tls.cert && http_tlsfront_start(s) < 0)) {
		snprintf(errmsg, errsz, "cannot start the HTTP%s server on %s",
			 s->tls.cert ? "S" : "", addr);
		http_wait_stop(s);
		if (s->mhd)
			MHD_stop_daemon(s->mhd);
		http_conns_release(s);
		close(fd);
		server_free(s);
		return DRV_EIO;
	}
	*out = s;
	return 0;
}

bool drv_http_server_tls(const struct drv_http_server *s)
{
	return s && s->tls.cert;
}

int drv_http_server_port(const struct drv_http_server *s)
{
	return s->port;
}

unsigned drv_http_server_connection_limit(const struct drv_http_server *s)
{
	return s->conn_limit;
}

void drv_http_server_stop(struct drv_http_server *s)
{
	if (!s)
		return;
	/* every parked request is answered and resumed first: libmicrohttpd
	 * must not be stopped with a connection suspended; once closed, a
	 * request that comes meanwhile is answered without parking. No
	 * MHD_quiesce_daemon: in libmicrohttpd 0.9.75 it races a worker
	 * thread of the pool, which can then take the listen socket it
	 * cleared (-1) out of its epoll set and abort the process ("Failed to
	 * remove listen FD from epoll set", daemon.c:4976; 1 in 5 unit runs
	 * here). MHD_stop_daemon closes the listen socket itself. */
	http_ws_wait(s, 5000);
	http_wait_stop(s);
	http_tlsfront_stop(s);
	MHD_stop_daemon(s->mhd);
	if (s->tls.cert)
		close(s->fd);   /* libmicrohttpd had no listen socket */
	http_conns_release(s);
	server_free(s);
}
