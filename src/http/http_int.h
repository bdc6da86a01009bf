/*
 * http_int.h: the server side's shared structs, private to src/http/.
 *
 * http_server.c owns the route table and libmicrohttpd's callbacks;
 * http_wait.c owns the waiter thread that holds suspended requests
 * (deferred replies and streams with nothing to send) until they can go
 * on. A request is touched by one thread at a time: the event thread that
 * runs its callbacks while it is active, the waiter thread while it is
 * suspended (MHD calls nothing for a suspended connection; resuming it
 * hands it back).
 */
#ifndef DROVER_HTTP_INT_H
#define DROVER_HTTP_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <microhttpd.h>

#include "drover/dynbuf.h"
#include "drover/http.h"

/* A server's certificate and key as PEM text (http_tls.c): libmicrohttpd
 * is handed the text, which must live as long as the daemon. */
struct drv_http_tls_pem {
	const char *cert_file, *key_file; /* the caller's, for messages */
	char *cert, *key;                 /* owned */
};

struct drv_http_server {
	struct MHD_Daemon *mhd;
	/* WebSocket sessions (http_ws.c) */
	pthread_mutex_t wsmu;
	int nws;                       /* running */
	bool ws_stopping;
	struct drv_http_tls_pem tls;   /* cert NULL: plain HTTP */
	struct http_tlsfront *front;   /* TLS done in front of libmicrohttpd */
	const struct drv_http_route *routes;
	drv_http_filter filter;
	void *ctx;
	int port;
	int fd;
	unsigned conn_limit;

	/* the waiter thread (http_wait.c) */
	pthread_t waiter;
	bool waiter_started;
	int epfd;                      /* peers' hang-ups and the wake eventfd */
	int evfd;                      /* drv_http_wake() writes here */
	atomic_bool wake_pending;      /* a wake is in the eventfd, not yet read */
	atomic_uint_fast64_t wake_gen; /* drv_http_wake() calls so far */
	_Atomic int64_t sleeps_to;     /* the waiter thread's next timeout (ms) */
	atomic_uint_fast64_t key_gen;  /* drv_http_wake_key() calls so far */
	pthread_mutex_t inmu;          /* guards incoming and closed */
	struct drv_http_req *incoming; /* parked by event threads, not yet adopted */
	bool closed;                   /* stopping: nothing may park any more */
	uint64_t *keys;                /* woken since the last scan (under inmu) */
	size_t nkeys, kcap;
	bool keys_overflow;            /* too many: wake every keyed request */
	struct drv_http_req *parked;   /* the waiter thread's own list */
	size_t nparked;
	/* the waiter thread's index over parked, so that a scan looks only at
	 * the requests a wake or a deadline concerns, not at every agent's
	 * waiting sync (12,500 of them at scale) */
	struct drv_http_req **kbuckets; /* keyed requests by key (WAIT_BUCKETS) */
	struct drv_http_req *unkeyed;   /* key 0: any drv_http_wake() */
	struct drv_http_req **heap;     /* by deadline_ms, those with one */
	size_t nheap, heapcap;
	struct drv_http_req **visit_v;  /* a scan's list: adopted, hung up, woken, due */
	size_t nvisit, visitcap;
	uint64_t last_gen;              /* wake_gen at the last scan */
	uint64_t visits;                /* scans so far */
	atomic_uint_fast64_t resume_rounds; /* scans that resumed something */
	atomic_uint_fast64_t resumed;       /* connections resumed */

	/* the connection policy (http_conns.c) */
	pthread_mutex_t cmu;           /* guards what follows but the atomics */
	struct client **clients;       /* addresses with connections */
	struct conn *timed;            /* connections with a deadline */
	atomic_int ntimed;
	atomic_uint per_client[3];     /* caps by class: unauthenticated, user, cluster */
	uint64_t refused_conns, expired_conns;
	int64_t next_expire_ms;        /* the waiter thread's own */
};

/* One WebSocket connection (http_ws.c): a session the server runs (srv,
 * urh) or a client's (http_wsc.c: curl, the handle whose socket fd is). */
struct drv_ws {
	struct drv_http_server *srv;
	int fd;
	struct MHD_UpgradeResponseHandle *urh;
	void *curl;                 /* a client's CURL handle (CONNECT_ONLY) */
	unsigned char *in;          /* bytes read, not yet taken */
	size_t nin, incap;
	bool closed;                /* a close frame came or went */
};
int http_wsc_fill(struct drv_ws *w, size_t n, int64_t until);
int http_wsc_write(struct drv_ws *w, const unsigned char *p, size_t n);
int http_wsc_send_masked(struct drv_ws *w, const unsigned char *h, size_t hn, const void *data,
			 size_t len);

enum park_kind { PARK_DEFER = 1, PARK_STREAM };

struct drv_http_req {
	struct drv_http_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	struct drv_dynbuf body; /* capped at DRV_HTTP_MAX_BODY */
	bool too_large;         /* the body passed it: 413 */
	bool refused;           /* answered before its body (not admitted) */
	const struct drv_http_route *route;
	char *params[DRV_HTTP_MAX_PARAMS];
	char peer[INET6_ADDRSTRLEN];
	void *user;
	bool cluster;                  /* the filter took the cluster credential */
	struct conn *conn_policy;      /* its connection's (http_conns.c) */

	/* a deferred reply (drv_http_defer) */
	drv_http_defer_fn dfn;
	void *dcls;
	void (*dfree)(void *cls);
	int64_t deadline_ms;           /* INT64_MAX: none */
	struct drv_http_resp dresp;    /* the reply, once dfn gave it */
	bool deferred;                 /* the handler called drv_http_defer */
	bool answered;                 /* dresp holds the answer */
	bool ended;                    /* a parked stream must end (stopping) */

	/* while parked */
	enum park_kind kind;
	bool gone;                     /* the peer hung up */
	uint64_t gen;                  /* wake_gen when last looked at */
	uint64_t key;                  /* drv_http_wait_on's; 0: any wake */
	uint64_t kgen;                 /* key_gen when last looked at */
	bool fresh;                    /* parked, not yet looked at by the waiter */
	int sock;
	struct drv_http_req *next;     /* the incoming list */
	/* the waiter thread's index of what it holds (http_wait.c) */
	struct drv_http_req *pnext, **pprev;   /* every parked request */
	struct drv_http_req *knext, **kprev;   /* those of its key (or the unkeyed) */
	uint64_t kindexed;             /* the key it is filed under */
	size_t heap_i;                 /* its place in the deadline heap, +1; 0: none */
	uint64_t visit;                /* the scan that last listed it */
};

/* http_ws.c: the upgrade response of resp (its switch then taken), NULL
 * on failure; dropping a switch never sent; waiting for sessions. */
struct MHD_Response *http_ws_response(struct drv_http_resp *resp);
void http_ws_drop(struct drv_http_resp *resp);
void http_ws_wait(struct drv_http_server *s, int64_t max_ms);

/* http_wait.c */
int http_wait_start(struct drv_http_server *s);
/* Answers every parked request (deadline reached), resumes them, joins. */
void http_wait_stop(struct drv_http_server *s);
/*
 * Suspends r's connection and hands it to the waiter thread. Called from
 * the access callback (PARK_DEFER) or the stream reader (PARK_STREAM).
 * Returns false when the server is stopping (nothing was suspended).
 */
bool http_park(struct drv_http_req *r, enum park_kind kind);
/* Wakes the waiter thread (to adopt parked requests, or because a
 * connection now has a deadline). */
void http_wait_poke(struct drv_http_server *s);
/* Calls r's deferred fn; true when it answered (r->answered). */
bool http_defer_try(struct drv_http_req *r, bool timed_out);

/* http_tls.c: reads both files (the key as a secret file), checks them
 * against each other; 0 or DRV_EINVAL/DRV_EPERM with err naming the file. */
int http_tls_load(struct drv_http_tls_pem *p, const char *cert_file, const char *key_file,
		  char *err, size_t errsz);
void http_tls_release(struct drv_http_tls_pem *p);

/* http_tlsfront.c: with a certificate, TLS is done here, in front of
 * libmicrohttpd (which then sees plain connections on socketpairs): its
 * own forwarding of upgraded TLS connections (0.9.75) moves 4 bytes a
 * record. Start after libmicrohttpd (it accepts on s->fd), stop before. */
int http_tlsfront_start(struct drv_http_server *s);
void http_tlsfront_stop(struct drv_http_server *s);

/* http_conns.c: libmicrohttpd's accept policy and connection notification */
void http_conns_init(struct drv_http_server *s);
void http_conns_release(struct drv_http_server *s);
enum MHD_Result http_conns_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void http_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe);
struct conn *http_conns_of(struct MHD_Connection *mc);
/* A request's headers passed admission; authenticated: the filter set a
 * user (cluster: with the cluster credential); body: one is announced (it
 * must be in by DRV_HTTP_BODY_TIMEOUT_S). False: its address already holds
 * its class's cap of authenticated connections (the caller answers 429
 * and closes the connection). */
bool http_conns_admitted(struct drv_http_server *s, struct conn *c, bool authenticated,
			 bool cluster, bool body);
void http_conns_body_in(struct drv_http_server *s, struct conn *c);
/* A request is over: an unauthenticated connection's next headers are due
 * within DRV_HTTP_HEADER_TIMEOUT_S. */
void http_conns_request_done(struct drv_http_server *s, struct conn *c);
/* Any connection with a deadline? (the waiter thread then wakes often) */
bool http_conns_timed(struct drv_http_server *s);
/* Shuts down overdue connections (looks at most twice a second). */
void http_conns_expire(struct drv_http_server *s, int64_t now);

/* http_server.c */
void http_resp_release(struct drv_http_resp *resp);

/* --- the client (http_client.c, http_plain.c) --- */

/* A socket for c's request (SOCK_CLOEXEC added), noted so that
 * drv_http_client_interrupt can shut it down; -1 when an interrupt is
 * owed (or socket() fails). Closed with drv_http_client_close. */
int drv_http_client_socket(struct drv_http_client *c, int family, int type, int protocol);
int drv_http_client_close(struct drv_http_client *c, int fd);
/* Whether c's next request goes through http_plain.c: plain HTTP was
 * asked for (drv_http_client_plain) and c->base is an http:// URL. */
bool drv_http_plain_wanted(const struct drv_http_client *c);
/*
 * One request over plain HTTP/1.1 on a connection of its own, as
 * request_once does it with libcurl: the same headers, timeouts, caps and
 * errors in the same words (c->err). *noconn is set when no connection
 * could be made (the caller then tries the next controller).
 */
int drv_http_plain_request(struct drv_http_client *c, const char *method, const char *path,
			   const char *ctype, const void *body, size_t len, long timeout_ms,
			   struct drv_http_reply *out, bool *noconn);

#endif
