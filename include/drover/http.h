/*
 * http.h: drover's thin HTTP layer (src/http/). Owned by the server
 * engineer (issue 6); used by the controller, the agent and the client.
 *
 * Server side (src/http/http_server.c): a table of routes over libmicrohttpd.
 * A route is one row: method, path pattern, handler. A pattern is a path
 * whose segments may be "{}" to capture that segment: "/v1/jobs/{}/cancel".
 * The server runs libmicrohttpd's event loop on DRV_HTTP_THREADS threads
 * (epoll), not a thread per connection: a handler must answer quickly.
 * A reply that must wait (a long-poll, a write that must reach the disk
 * first) is deferred (drv_http_defer below): the connection is suspended
 * and holds no thread until the reply is ready. A streamed reply (SSE)
 * returns 0 when it has nothing to send and is called again later. A
 * handler may still block briefly (a mutex, a store read) at the cost of
 * the other connections on its event thread.
 *
 * Limits (for 12,500 agents plus clients in a 20,000 open-file limit):
 * the controller raises RLIMIT_NOFILE to its hard limit first
 * (drv_http_raise_nofile); a server allows as many connections as the
 * open-file limit less DRV_HTTP_FD_RESERVE (20,000 - 512 = 19,488 here);
 * each connection's buffers are capped at DRV_HTTP_CONN_MEMORY (headers
 * and read buffer; a request body is copied into a buffer of its own, up
 * to DRV_HTTP_MAX_BODY): an idle kept-alive connection costs about 17 KiB
 * and one descriptor. Deadlines are totals, not idle times, so a byte
 * trickled now and then keeps nothing open: a request's headers must be in
 * within DRV_HTTP_HEADER_TIMEOUT_S of the connection's start (or, on a
 * connection that has not authenticated, of the end of its last request),
 * an admitted request's body within DRV_HTTP_BODY_TIMEOUT_S of its
 * headers; past it the connection is closed. An authenticated connection
 * (a request on it passed the filter with a user set; any, without a
 * filter) then waits for its
 * next request up to DRV_HTTP_IDLE_TIMEOUT_S idle (a suspended one never
 * times out). Before that, a source address may hold at most
 * DRV_HTTP_UNAUTH_PER_CLIENT unauthenticated connections
 * (drv_http_server_set_client_limit): one more is closed as it is
 * accepted, before a byte is read. An authenticated connection leaves that
 * count for its class's: connections authenticated with the cluster
 * credential (the filter calls drv_http_req_set_cluster) may number
 * DRV_HTTP_CLUSTER_PER_CLIENT per address, so 12,500 agents behind one
 * address fit, and those with any other credential
 * DRV_HTTP_USER_PER_CLIENT (drv_http_server_set_auth_limits). A request
 * that would take its address past its class's cap is answered 429 with
 * Retry-After and its connection closed. Threads: the event threads and one
 * waiter thread, however many requests wait.
 *
 * Admission comes before the body: once a request's headers are in, its
 * path is matched and the filter runs; a refusal (the filter's 401/403, a
 * path that matches a pattern with another method: 405 with Allow, no
 * match: 404, a Content-Length over DRV_HTTP_MAX_BODY: 413) is answered
 * without reading the body, and a connection that announced a body is
 * closed after it ("Connection: close"). So an unauthenticated 17 MiB
 * body gets 401, an authenticated one 413. Errors are in the error shape
 * of docs/api.md.
 *
 * Client side (src/http/http_client.c): one connection handle over a libcurl
 * easy handle (keep-alive), bearer token, long-poll with a
 * per-request timeout, and a Server-Sent Events reader. A handle is used by
 * one thread at a time.
 *
 * TLS (src/http/http_tls.c): one library, GnuTLS, on both sides:
 * libmicrohttpd serves https with it (a server started with a certificate
 * and key), libcurl's GnuTLS flavour calls https:// URLs with it and
 * verifies the server's certificate against a CA file (or the system's
 * trust store) and its name. No client certificates: who calls is told by
 * the bearer token, as over plain HTTP. http_tls.c also makes a small CA
 * and certificates signed by it (drover up --tls, drover tls).
 *
 * JSON is jansson's json_t throughout; "consumes" means the function takes
 * the caller's reference.
 */
#ifndef DROVER_HTTP_H
#define DROVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "drover/common.h"
#include "drover/json.h" /* the getters its users read bodies with */

/* ---------------------------------------------------------------------------
 * Server
 */

#define DRV_HTTP_MAX_BODY (16u << 20)  /* request bodies over this: 413 */
#define DRV_HTTP_MAX_PARAMS 4          /* "{}" captures per pattern */
#define DRV_HTTP_THREADS 4             /* event threads (plus one waiter) */
#define DRV_HTTP_FD_RESERVE 512        /* open files kept from connections */
#define DRV_HTTP_MIN_CONNECTIONS 64    /* when the open-file limit is tiny */
#define DRV_HTTP_MAX_CONNECTIONS 100000 /* when it is huge */
#define DRV_HTTP_CONN_MEMORY (16u << 10) /* per connection, bodies apart */
#define DRV_HTTP_IDLE_TIMEOUT_S 600    /* an idle kept-alive connection */
#define DRV_HTTP_HEADER_TIMEOUT_S 10   /* a request's headers, in all */
#define DRV_HTTP_BODY_TIMEOUT_S 120    /* an admitted request's body, in all */
#define DRV_HTTP_UNAUTH_PER_CLIENT 64  /* unauthenticated connections per address */
#define DRV_HTTP_USER_PER_CLIENT 4096  /* connections a user's token authenticated */
#define DRV_HTTP_CLUSTER_PER_CLIENT 16384 /* connections the cluster token authenticated */
#define DRV_HTTP_STREAM_POLL_MS 1000   /* a waiting stream is retried this often */
#define DRV_HTTP_AGAIN 1               /* a deferred fn: not ready yet */
#define DRV_HTTP_DEADLINE_ROUND_MS 20  /* deadlines are served on this grid */

struct drv_http_req;   /* opaque: valid during the handler call only */

/*
 * A reply the handler fills. Defaults: status 200, no body. Set it with the
 * helpers below; each replaces any body set before.
 */
struct drv_http_resp {
	int status;
	char *body;                 /* owned; freed by the server */
	size_t len;
	char content_type[96];
	char *headers;              /* owned; "Name: value\n" lines, or NULL */
	/* streamed body (SSE): called until it returns < 0; 0 = not yet */
	ssize_t (*stream)(void *cls, char *buf, size_t max);
	void *stream_cls;
	void (*stream_free)(void *cls);
	void *ws;                   /* a WebSocket switch (drv_http_resp_websocket) */
};

/*
 * A handler returns 0 (the reply is in resp) or a negative drv_err, which
 * the server turns into a 500 "internal" error reply unless resp->status
 * was already set to an error (>= 400) with a body.
 */
typedef int (*drv_http_handler)(struct drv_http_req *req, struct drv_http_resp *resp,
				void *ctx);

struct drv_http_route {
	const char *method;        /* "GET", "POST", ...; "*": any method */
	const char *pattern;       /* "/v1/jobs/{}"; "/api/" "**": /api and all below it */
	drv_http_handler fn;
	unsigned flags;            /* the caller's, passed to the filter */
};

/*
 * Called before every matched handler, once the request's headers are in
 * and before its body is read (drv_http_req_body is empty then); returning
 * non-zero stops the request with whatever it set in resp (e.g. 401).
 * NULL: no filter.
 */
typedef int (*drv_http_filter)(struct drv_http_req *req, const struct drv_http_route *route,
			       struct drv_http_resp *resp, void *ctx);

struct drv_http_server;

/*
 * Starts listening on addr ("127.0.0.1:8080", "0.0.0.0:8080", ":8080",
 * port 0 picks a free one) and serving routes (an array ending with a row
 * whose method is NULL; it must outlive the server). ctx is passed to every
 * handler. Returns 0 and *out, or DRV_EINVAL (bad address), DRV_EEXIST (the
 * port is taken: EADDRINUSE), DRV_EIO (cannot bind otherwise); errmsg says
 * why (errmsg may be NULL).
 */
int drv_http_server_start(const char *addr, const struct drv_http_route *routes,
			  drv_http_filter filter, void *ctx, struct drv_http_server **out,
			  char *errmsg, size_t errsz);

/* What a server may be given beyond its address (zeroed: plain HTTP). */
struct drv_http_server_opts {
	/* https: both set. The certificate file is PEM, the server's own first
	 * (then any intermediates); the key file PEM, mode 0600 or stricter
	 * (else refused, as a token file is). */
	const char *tls_cert_file;
	const char *tls_key_file;
};
/* What a TLS server offers (GnuTLS priority string): TLS 1.3 and 1.2 only.
 * A client asks for 1.2 at least. */
#define DRV_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/*
 * drv_http_server_start with options (o may be NULL). Errors as above;
 * also DRV_EINVAL with errmsg naming the file for a certificate or key
 * that cannot be read or used (not PEM, the key does not match, a key
 * file others may read), DRV_EPERM for the latter.
 */
int drv_http_server_start_opts(const char *addr, const struct drv_http_server_opts *o,
			       const struct drv_http_route *routes, drv_http_filter filter,
			       void *ctx, struct drv_http_server **out, char *errmsg,
			       size_t errsz);
/* Whether it serves https. */
bool drv_http_server_tls(const struct drv_http_server *s);
/*
 * Whether "ADDR:PORT" binds only loopback (127.0.0.0/8, localhost, ::1):
 * plain HTTP anywhere else carries tokens in clear, which the controller
 * and the agent say in a warning line.
 */
bool drv_http_addr_loopback(const char *addr);
/*
 * Raises this process's open-file limit (RLIMIT_NOFILE) to its hard limit
 * and returns it (-1 if it cannot be read). For a process that serves
 * many connections: call it before drv_http_server_start, which sizes
 * its connection limit from the limit then. Children inherit the raised
 * limit, which is why the agent (whose tasks are children) does not call it.
 */
long drv_http_raise_nofile(void);
/* The port it listens on (useful with port 0). */
int drv_http_server_port(const struct drv_http_server *s);
/* How many connections it accepts at once (see Limits above). */
unsigned drv_http_server_connection_limit(const struct drv_http_server *s);
/* How many unauthenticated connections one source address may hold (see
 * Limits above; default DRV_HTTP_UNAUTH_PER_CLIENT; 0 is taken as 1). */
void drv_http_server_set_client_limit(struct drv_http_server *s, unsigned n);
/* The caps on authenticated connections per source address: with a
 * user's credential and with the cluster's (see Limits above; defaults
 * DRV_HTTP_USER_PER_CLIENT and DRV_HTTP_CLUSTER_PER_CLIENT; 0 is taken as
 * 1), and the one now in force for a class. */
void drv_http_server_set_auth_limits(struct drv_http_server *s, unsigned user,
				     unsigned cluster);
unsigned drv_http_server_auth_limit(struct drv_http_server *s, bool cluster);
/*
 * Deferred replies resumed so far (resumed) and the waiter's rounds that
 * resumed any (rounds). Deadlines are served on a grid of
 * DRV_HTTP_DEADLINE_ROUND_MS of the monotonic clock: a request whose
 * deadline passed is answered at the next multiple, up to that much late,
 * with every other one due by then, in one round. Each round costs every
 * event thread a walk over all of its suspended connections
 * (libmicrohttpd 0.9.75 looks at each one after any resume), so 12,500
 * agents' syncs timing out one at a time were 2,500 walks over ~3,000
 * connections a second. A round looks at every request due first and
 * resumes the ready ones after, back to back, so that an event thread
 * walks once for the round rather than once per reply it was computing
 * meanwhile. (A coarser grid for long waits, 100 ms, made fewer rounds
 * but each a burst: 250 replies, then 250 syncs back at once, and a
 * submit that came during one waited it out; the grid stays fine.) A
 * request that is woken (its key, a wake) or new is looked at at once.
 */
void drv_http_server_wait_stats(struct drv_http_server *s, uint64_t *rounds, uint64_t *resumed);
/* Connections closed so far by the policy: refused (at accept, over the
 * unauthenticated cap, or answered 429, over an authenticated one; the
 * per-address cap) and expired (past a header or body deadline). */
void drv_http_server_conn_stats(struct drv_http_server *s, uint64_t *refused,
				uint64_t *expired);
/*
 * Stops accepting, answers every deferred reply (its fn is called with
 * timed_out set) and ends every waiting stream, waits for handlers to
 * return, frees. NULL is a no-op.
 */
void drv_http_server_stop(struct drv_http_server *s);

/* ---------------------------------------------------------------------------
 * Deferred replies
 *
 * A handler that cannot answer yet calls drv_http_defer() and returns 0.
 * The server then calls fn(cls, resp, timed_out):
 *   - right after the handler returns, on the same event thread;
 *   - after each drv_http_wake() (on the server's waiter thread);
 *   - at the deadline, and when the server stops, with timed_out set.
 * fn returns 0 with resp filled to answer, or DRV_HTTP_AGAIN to go on
 * waiting. resp starts as what the handler left in it, so a handler may
 * fill the reply it hopes to give and fn only say when. fn must not
 * block: it may take the caller's own locks briefly (no lock of this layer
 * is held while it runs). It must answer when timed_out is set (if it does
 * not, the reply is a 500). free_fn(cls), if given, runs once when the
 * request is over: answered, or its client gone (a suspended client that
 * hangs up is noticed at once), or the server stopping.
 *
 * drv_http_wake() says "something changed": every waiting fn is called
 * again and every waiting stream is retried. It takes no lock and may be
 * called from any thread, under any lock; many wakes in a burst cost one
 * pass. A pass calls every waiting fn, so keep fn cheap (compare a version
 * number, say).
 *
 * Keys, for many waiters of which a wake concerns few (an agent's sync
 * waits for its own node): fn, before returning DRV_HTTP_AGAIN, may call
 * drv_http_wait_on(key) (key != 0; the key holds until fn runs again).
 * Then drv_http_wake() passes the request by and only
 * drv_http_wake_key(s, key), the deadline or the server's stop call fn
 * again; a pass costs a lookup per waiting request, not a call.
 * drv_http_wake_key() takes a short lock of this layer's own (never held
 * while calling out), so it too may be called under any lock. The key
 * spaces are the caller's (e.g. a kind in the top bits, an index below).
 *
 * While it waits, a request holds its connection and a little memory
 * (the struct, cls), no thread.
 */
typedef int (*drv_http_defer_fn)(void *cls, struct drv_http_resp *resp, int timed_out);
/* timeout_ms < 0: no deadline (only the server's stop ends the wait). */
void drv_http_defer(struct drv_http_req *req, drv_http_defer_fn fn, void *cls,
		    void (*free_fn)(void *), int64_t timeout_ms);
void drv_http_wake(struct drv_http_server *s);   /* NULL is a no-op */
void drv_http_wait_on(uint64_t key);            /* only from inside fn */
void drv_http_wake_key(struct drv_http_server *s, uint64_t key);   /* NULL: no-op */

/* Parses "ADDR:PORT" (ADDR may be empty = all, or "localhost"). */
int drv_http_parse_addr(const char *s, char *host, size_t hostsz, int *port);

/* --- the request (valid during the handler call) --- */
const char *drv_http_req_method(const struct drv_http_req *r);
const char *drv_http_req_path(const struct drv_http_req *r);
/* i-th "{}" capture of the pattern, URL-decoded; NULL when absent. */
const char *drv_http_req_param(const struct drv_http_req *r, int i);
/* Query argument (URL-decoded) or NULL. */
const char *drv_http_req_query(const struct drv_http_req *r, const char *name);
/* Header (case-insensitive name) or NULL. */
const char *drv_http_req_header(const struct drv_http_req *r, const char *name);
/* The request's query as "?a=1&b=x%20y" (re-encoded), or "" without one;
 * cut at n - 1 bytes. */
void drv_http_req_query_string(const struct drv_http_req *r, char *buf, size_t n);
/* Body bytes (NUL-terminated for convenience) and length. */
const char *drv_http_req_body(const struct drv_http_req *r, size_t *len);
/* The peer's IP address as text ("127.0.0.1"). */
const char *drv_http_req_peer(const struct drv_http_req *r);
/* The matched route (NULL in the filter of an unmatched path: never called). */
const struct drv_http_route *drv_http_req_route(const struct drv_http_req *r);
/* Per-request slot for the filter to hand data to the handler (e.g. the
 * authenticated user). Not freed by the server. */
void drv_http_req_set_user(struct drv_http_req *r, void *p);
/* The filter took the cluster credential (an agent): the connection counts
 * against the cluster's cap of connections per address, not a user's. */
void drv_http_req_set_cluster(struct drv_http_req *r);
void *drv_http_req_user(const struct drv_http_req *r);
/*
 * Parses the body as JSON. Returns a new reference, or NULL after setting
 * resp to 400 "invalid" with jansson's message (line:column).
 */
json_t *drv_http_req_json(const struct drv_http_req *r, struct drv_http_resp *resp);
/*
 * Query argument as an integer in [min, max]; def when absent. Returns 0,
 * or DRV_EINVAL after setting resp to 400.
 */
int drv_http_req_query_int(const struct drv_http_req *r, const char *name, int64_t def,
			   int64_t min, int64_t max, int64_t *out, struct drv_http_resp *resp);

/* --- the reply --- */
/* status with the compact dump of obj (consumes obj; NULL gives "{}"),
 * made with DRV_HTTP_JSON_FLAGS and a newline after it. */
#define DRV_HTTP_JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(16))
void drv_http_resp_json(struct drv_http_resp *resp, int status, json_t *obj);
/* status with raw bytes (copied) of the given content type. */
void drv_http_resp_bytes(struct drv_http_resp *resp, int status, const char *ctype,
			 const void *data, size_t len);
/*
 * The error shape: {"error":{"code":code,"message":msg,"details":[…]}}.
 * details may be NULL (empty array) and is consumed.
 */
void drv_http_resp_error(struct drv_http_resp *resp, int status, const char *code,
			 json_t *details, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Adds a header line to the reply. */
void drv_http_resp_header(struct drv_http_resp *resp, const char *name, const char *value);
/*
 * A streamed reply (SSE). fn fills buf and returns bytes, or -1 at the end;
 * free_fn(cls) runs after. fn must not block: it returns 0 when it has
 * nothing yet and is called again after the next drv_http_wake() or within
 * DRV_HTTP_STREAM_POLL_MS, meanwhile holding no thread. A stream ends when
 * the server stops.
 */
void drv_http_resp_stream(struct drv_http_resp *resp, int status, const char *ctype,
			  ssize_t (*fn)(void *cls, char *buf, size_t max), void *cls,
			  void (*free_fn)(void *cls));
/* Every value of query parameter name, in order (a new array of strings). */
json_t *drv_http_req_query_all(const struct drv_http_req *r, const char *name);

/*
 * WebSocket (RFC 6455, http_ws.c). drv_http_resp_websocket answers req
 * with 101 Switching Protocols (subprotocol proto, one the client offered,
 * or NULL) and, once that is sent, runs fn(cls, ws) on a thread of its own;
 * free_fn(cls) runs after fn returns, or when the switch never happens.
 * Returns 0, or DRV_EINVAL with resp untouched when req asks for no
 * WebSocket (Upgrade: websocket, Sec-WebSocket-Key, version 13).
 * drv_http_server_stop waits (a few seconds at most) for running sessions;
 * their reads fail once it has begun.
 *
 * drv_ws_read: the next data message (pings answered, fragments joined)
 * into *data (owned by the caller, NUL-terminated), *len and *opcode.
 * Returns 0; 1 when the peer closed; DRV_ETIMEDOUT after timeout_ms (-1:
 * none); DRV_ELIMIT past 16 MiB; DRV_EIO. drv_ws_send: one frame;
 * drv_ws_send_channel: one binary frame of Kubernetes' channel protocol
 * (the channel's byte, then data: exec's stdin 0, stdout 1, stderr 2, ...);
 * drv_ws_close: the close frame (code, reason), once.
 */
struct drv_ws;
typedef void (*drv_ws_fn)(void *cls, struct drv_ws *ws);
enum { DRV_WS_TEXT = 1, DRV_WS_BINARY = 2, DRV_WS_CLOSE = 8, DRV_WS_PING = 9, DRV_WS_PONG = 10 };
bool drv_http_req_is_websocket(const struct drv_http_req *req);
bool drv_http_req_ws_offers(const struct drv_http_req *req, const char *proto);
int drv_http_resp_websocket(struct drv_http_req *req, struct drv_http_resp *resp, const char *proto,
			    drv_ws_fn fn, void *cls, void (*free_fn)(void *cls));
int drv_ws_read(struct drv_ws *w, int *opcode, unsigned char **data, size_t *len, int timeout_ms);
int drv_ws_send(struct drv_ws *w, int opcode, const void *data, size_t len);
int drv_ws_send_channel(struct drv_ws *w, int channel, const void *data, size_t len);
int drv_ws_close(struct drv_ws *w, int code, const char *reason);
/*
 * For a caller that polls a WebSocket beside other descriptors: its
 * socket, and whether bytes already read wait in it (a message may be
 * there while the socket has nothing more to read).
 */
int drv_ws_fd(const struct drv_ws *w);
bool drv_ws_buffered(const struct drv_ws *w);
/*
 * The client side (http_wsc.c, libcurl's CONNECT_ONLY for the socket and
 * TLS): drv_ws_connect opens base (http[s]://host:port, its first URL
 * when a list) and asks for path (with its query) as a WebSocket with
 * subprotocol proto, token as the bearer (may be NULL), ca_file as the
 * CA (NULL: the system's). Returns 0 and *out (free with drv_ws_free,
 * which closes the connection), or an error with a line for a person in
 * err: DRV_EIO when the server cannot be reached; when it answers other
 * than 101, *status (otherwise 101) and its message. Frames sent are
 * masked; drv_ws_read/send/close work on it as on a server's.
 */
int drv_ws_connect(const char *base, const char *path, const char *token, const char *ca_file,
		   const char *proto, struct drv_ws **out, long *status, char *err, size_t errn);
void drv_ws_free(struct drv_ws *w);

/*
 * Other upgrades (http_ws.c), on the same session thread: 101 with
 * Upgrade: proto (the caller adds any other header to resp), then fn(cls,
 * ws) where ws is a plain byte stream: drv_ws_read_raw (blocks for at
 * least one byte; returns their count, 0 when the peer closed, DRV_EIO,
 * also once the server stops), drv_ws_write_raw (all of it; 0 or DRV_EIO).
 * drv_ws_fd and drv_ws_buffered (above) work on it too.
 */
int drv_http_resp_upgrade(struct drv_http_req *req, struct drv_http_resp *resp, const char *proto,
			  drv_ws_fn fn, void *cls, void (*free_fn)(void *cls));
ssize_t drv_ws_read_raw(struct drv_ws *w, void *buf, size_t n);
int drv_ws_write_raw(struct drv_ws *w, const void *data, size_t len);

/*
 * A byte pipe through an HTTP upgrade, client side (http_tunnel.c).
 * drv_http_tunnel_open connects to base (http or https, ca_file the CA to
 * trust or NULL), sends GET path with the bearer token (may be NULL),
 * Connection: Upgrade and Upgrade: proto, and on 101 gives the pipe in
 * *out (drv_http_tunnel_close frees it). Returns 0; DRV_ECONN when base
 * cannot be reached or does not answer within timeout_ms; DRV_ESTATE when
 * it answers otherwise: then msg holds the error its answer gives.
 * recv: what came (at most n bytes; 0 at the peer's end), DRV_ETIMEDOUT
 * when nothing is there now (poll drv_http_tunnel_fd and try again; after
 * a recv that filled buf, call again first), DRV_EIO. send: all of it,
 * within timeout_ms. shutdown: the end of what this side sends (plain
 * http only; over TLS a no-op). One thread at a time per tunnel.
 */
struct drv_http_tunnel;
int drv_http_tunnel_open(const char *base, const char *token, const char *ca_file,
			 const char *path, const char *proto, long timeout_ms,
			 struct drv_http_tunnel **out, char *msg, size_t msgsz);
int drv_http_tunnel_fd(const struct drv_http_tunnel *t);
ssize_t drv_http_tunnel_recv(struct drv_http_tunnel *t, void *buf, size_t n);
int drv_http_tunnel_send(struct drv_http_tunnel *t, const void *buf, size_t n, long timeout_ms);
void drv_http_tunnel_shutdown(struct drv_http_tunnel *t);
void drv_http_tunnel_close(struct drv_http_tunnel *t);

/* ---------------------------------------------------------------------------
 * Base64 (RFC 4648, with padding; GnuTLS's, in http_tls.c): Kubernetes
 * Secrets and the agent protocol's volume files carry bytes so.
 * encode: a new NUL-terminated string (caller frees). decode: 0 and a new
 * buffer of *n bytes plus a NUL (caller frees), or DRV_EINVAL when in is
 * not base64 (*out NULL).
 */
char *drv_base64_encode(const void *data, size_t len);
int drv_base64_decode(const char *in, unsigned char **out, size_t *n);

/* ---------------------------------------------------------------------------
 * Client
 */

/*
 * base may name several controllers, comma-separated ("http://a:8080,
 * http://b:8080": an active/standby pair, docs/ha.md). A request that
 * cannot connect to one tries the next; a 307 from a standby is followed
 * (to the same scheme only: https never turns into http) with the method,
 * body and token kept, at most 3 times; a 503 "no_leader" tries the next.
 * The controller that answered stays the first one asked.
 */
struct drv_http_client {
	char *base;            /* the controller asked now, no trailing slash */
	char **bases;          /* internal: every controller given */
	int nbases, cur;       /* internal */
	char *token;           /* bearer token or NULL */
	long timeout_ms;       /* per request, default 30000; 0 = none */
	long connect_timeout_ms; /* default 5000 */
	/* Optional: polled during a transfer; non-zero aborts it (the request
	 * then returns DRV_ECONN). Lets a long-poll be cut short at shutdown. */
	int (*abort_cb)(void *cls);
	void *abort_cls;
	void *curl;            /* CURL * */
	void *hdrs;            /* internal */
	int sockfd;            /* internal: the socket in use, -1 none */
	int busy, intr;        /* internal: a request in flight; an interrupt owed */
	char *ca_file;         /* https: the CA file; NULL: the system's (set_ca) */
	char *header;          /* one more request header line, or NULL (set_header) */
	char curl_err[256];    /* internal: libcurl's own detail (CURL_ERROR_SIZE) */
	char err[1024];        /* last transport error, for a person */
};

/*
 * The most a reply body (or the data of one SSE stream) may bring in: past
 * it the request fails as a transport error ("the reply is larger than
 * drover accepts").
 */
#define DRV_HTTP_MAX_REPLY (1u << 30)

struct drv_http_reply {
	long status;           /* 0 when no reply came */
	char *body;            /* NUL-terminated, owned */
	size_t len;
	char *headers;         /* raw header lines, owned */
};

/* base is copied (a trailing '/' is dropped); token may be NULL. */
void drv_http_client_init(struct drv_http_client *c, const char *base, const char *token);
void drv_http_client_release(struct drv_http_client *c);
/*
 * https: verify the server's certificate against the CA certificates in
 * ca_file (PEM, copied) rather than the system's trust store; NULL goes
 * back to the system's. Either way the certificate must name the URL's
 * host (a DNS name or an IP address in its subjectAltName). A failure is
 * a transport error that says which (untrusted, name mismatch, the CA
 * file unreadable, not a TLS server).
 */
void drv_http_client_set_ca(struct drv_http_client *c, const char *ca_file);
/* One more header line ("Idempotency-Key: K", copied) sent with every
 * request until changed; NULL sends none. */
void drv_http_client_set_header(struct drv_http_client *c, const char *line);

/*
 * For the whole process, from its start (before any request): on, every
 * request to an http:// URL goes through drover's own small HTTP/1.1
 * client (http_plain.c: one connection a request, Content-Length and
 * chunked replies) rather than libcurl, with the same headers, timeouts,
 * caps, failover and errors in the same words; https:// URLs and SSE
 * streams still use libcurl. The light binaries turn it on, so that a
 * face called over plain http never loads libcurl's 30 libraries
 * (docs/architecture.md, "Light builds"). Off by default.
 */
void drv_http_client_plain(bool on);

/*
 * From any thread: the request in flight on c fails at once with
 * DRV_ECONN (its connection is shut down); when none is in flight, the
 * next one does, without sending anything. Lets a thread waiting in a
 * long-poll be told that it has something new to say.
 */
void drv_http_client_interrupt(struct drv_http_client *c);
/* Drops an interrupt owed to the next request (its reason is stale: the
 * caller's next request carries what it had to say anyway). */
void drv_http_client_forget_interrupt(struct drv_http_client *c);

void drv_http_reply_init(struct drv_http_reply *r);
void drv_http_reply_release(struct drv_http_reply *r);
/* A header of the reply (case-insensitive name), copied into buf; NULL when absent. */
const char *drv_http_reply_header(const struct drv_http_reply *r, const char *name,
				  char *buf, size_t bufsz);

/*
 * One request: method, path (with query, appended to base), an optional body
 * of ctype. Returns 0 when any HTTP reply came (look at out->status), or
 * DRV_ECONN / DRV_ETIMEDOUT with c->err set to a line such as "cannot reach
 * drover at http://127.0.0.1:8080: connection refused". timeout_ms < 0 uses
 * c->timeout_ms.
 */
int drv_http_request(struct drv_http_client *c, const char *method, const char *path,
		     const char *ctype, const void *body, size_t len, long timeout_ms,
		     struct drv_http_reply *out);

/*
 * JSON request: body (may be NULL; not consumed) is sent as application/json;
 * on any reply, *status is set and *reply gets the parsed JSON body (new
 * reference; NULL when the body is not JSON). Returns as drv_http_request.
 */
int drv_http_json(struct drv_http_client *c, const char *method, const char *path,
		  json_t *body, long timeout_ms, long *status, json_t **reply);

/*
 * The message of an error reply in the shape of docs/api.md (or the raw
 * body), copied into buf; always returns buf.
 */
const char *drv_http_error_message(const struct drv_http_reply *r, char *buf, size_t bufsz);

/*
 * Server-Sent Events: GETs path with Accept: text/event-stream and calls
 * fn(event, id, data, cls) for each event (event "message" when unnamed;
 * id "" when none). fn returns 0 to go on, non-zero to stop (then this
 * returns 0). Returns DRV_ECONN/DRV_ETIMEDOUT as drv_http_request, DRV_EIO
 * when the status is not 200 (c->err says it). timeout_ms 0: none.
 */
int drv_http_sse(struct drv_http_client *c, const char *path, long timeout_ms,
		 int (*fn)(const char *event, const char *id, const char *data, void *cls),
		 void *cls);

/* Percent-encodes s for a query value or path segment into a new string. */
char *drv_http_escape(const char *s);

/* Whether bearer token got is want, in time that depends only on their
 * lengths (gnutls_memcmp), not on where they first differ. */
bool drv_http_token_eq(const char *want, const char *got);

/* ---------------------------------------------------------------------------
 * Certificates for a first cluster (GnuTLS's x509 API): ECDSA P-256 keys,
 * SHA-256 signatures. Certificates are written 0644, keys 0600, each
 * through a temporary file and a rename. Every function returns 0, or a
 * negative drv_err with one line in err naming the file: DRV_EIO (cannot
 * write or read it), DRV_EINVAL (not a usable certificate or key, a bad
 * name).
 */
#define DRV_TLS_CA_DAYS 3650       /* a CA made here is valid 10 years */
#define DRV_TLS_CERT_DAYS 825      /* a certificate it signs, 825 days */

/* A self-signed CA named cn: cert_path and key_path. */
int drv_tls_make_ca(const char *cert_path, const char *key_path, const char *cn, char *err,
		    size_t errsz);
/*
 * A server certificate signed by the CA in ca_cert/ca_key, for names:
 * a comma-separated list of DNS names and IP addresses ("127.0.0.1,
 * localhost,node1.example"), all in its subjectAltName, the first its
 * common name. It is good for a TLS server and a TLS client.
 */
int drv_tls_make_cert(const char *ca_cert, const char *ca_key, const char *names,
		      const char *cert_path, const char *key_path, char *err, size_t errsz);
/*
 * dir (made 0700 when absent) with ca.pem and ca-key.pem (a CA, kept when
 * there) and server.pem and server-key.pem for names (kept when there and
 * signed by that CA). *made (may be NULL) says whether anything was
 * written. drover up --tls and drover tls init.
 */
int drv_tls_init_dir(const char *dir, const char *names, bool *made, char *err, size_t errsz);
/* The names drover up puts in its certificate: localhost, 127.0.0.1, ::1,
 * this host's name (short and full) and the addresses of its other
 * interfaces (IPv4; IPv6 but link-local), comma-separated, into buf (as
 * many as fit). */
const char *drv_tls_local_names(char *buf, size_t bufsz);

#endif
