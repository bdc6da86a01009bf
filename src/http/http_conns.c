/*
 * http_conns.c: the HTTP server's connection policy (include/drover/http.h,
 * "Limits"): how many connections one source address may hold before any
 * of them authenticated, and the deadlines that a slow peer cannot stretch.
 *
 * libmicrohttpd 0.9.75 has an idle timeout per connection but no total
 * one: a byte every few seconds keeps a socket for ever. So every
 * connection is tracked from libmicrohttpd's connection notification
 * (started, closed) in a struct conn of ours, its socket context:
 *   - its source address's counts: connections not yet authenticated,
 *     which the accept policy checks before taking a new one (over the cap
 *     the socket is closed at once, before anything is read), and those a
 *     user's token or the cluster token authenticated, each class with a
 *     cap of its own, checked when a connection's first authenticated
 *     request is admitted (over it the request gets 429 and the
 *     connection is closed);
 *   - a deadline while it waits for a request's headers (counted from its
 *     start, or from the end of its last request) or for an admitted
 *     request's body. The waiter thread (http_wait.c) looks at the timed
 *     connections about once a second and shuts an overdue one's socket
 *     down (shutdown(2), not close: libmicrohttpd still owns the
 *     descriptor, sees the end of its stream and closes it itself).
 * A connection whose request passed the filter with a user set (the
 * caller authenticated) moves from its address's unauthenticated count to
 * its class's for good and waits between requests under libmicrohttpd's
 * idle timeout only.
 *
 * One mutex (s->cmu) guards the address table and the timed list. The
 * descriptor is shut down under it, and the closed notification (which
 * libmicrohttpd sends before closing the descriptor) takes it too, so a
 * descriptor is never shut down after it was reused.
 */
#include "http_int.h"

#include "drover/clock.h"

#include <string.h>
#include <sys/socket.h>

#define CLIENT_BUCKETS 4096

/* A connection's class, the count it is in. */
enum { CONN_UNAUTH, CONN_USER, CONN_CLUSTER, CONN_CLASSES };

/* One source address with connections, by class. */
struct client {
	unsigned char addr[16];
	unsigned count[CONN_CLASSES];
	struct client *next;
};

struct conn {
	struct client *client;        /* NULL: an address of no family we count */
	int cls;                      /* CONN_* */
	int fd;
	int64_t deadline_ms;          /* while in the timed list */
	bool timed;
	struct conn *prev, *next;     /* the timed list */
};

/* The address as 16 bytes (IPv4 mapped the IPv6 way); false if neither. */
static bool addr_key(const struct sockaddr *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static struct client **bucket(struct drv_http_server *s, const unsigned char key[16])
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < 16; i++)
		h = (h ^ key[i]) * 1099511628211ull;
	return &s->clients[h % CLIENT_BUCKETS];
}

/* The address's entry; with create, made when missing. Under cmu. */
static struct client *client_get(struct drv_http_server *s, const unsigned char key[16],
				 bool create)
{
	struct client **b = bucket(s, key), *c;

	for (c = *b; c; c = c->next)
		if (memcmp(c->addr, key, 16) == 0)
			return c;
	if (!create)
		return NULL;
	c = drv_calloc(1, sizeof(*c));
	memcpy(c->addr, key, 16);
	c->next = *b;
	*b = c;
	return c;
}

/* One fewer connection of class cls from c's address. Under cmu. */
static void client_put(struct drv_http_server *s, struct client *c, int cls)
{
	struct client **pp;

	c->count[cls]--;
	for (int i = 0; i < CONN_CLASSES; i++)
		if (c->count[i])
			return;
	for (pp = bucket(s, c->addr); *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	drv_free(c);
}

static void untime(struct drv_http_server *s, struct conn *c)
{
	if (!c->timed)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->timed = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	c->timed = false;
	atomic_fetch_sub(&s->ntimed, 1);
}

/* c must be done by now + secs. Under cmu. */
static void time_for(struct drv_http_server *s, struct conn *c, unsigned secs)
{
	c->deadline_ms = drv_mono_ms() + (int64_t)secs * 1000;
	if (c->timed)
		return;
	c->prev = NULL;
	c->next = s->timed;
	if (s->timed)
		s->timed->prev = c;
	s->timed = c;
	c->timed = true;
	/* it may sleep a minute: now it must look each second. Only then:
	 * with agents syncing, the count goes 0 -> 1 with most requests, and
	 * a poke each was a waiter thread's wake-up per request */
	if (atomic_fetch_add(&s->ntimed, 1) == 0 && s->waiter_started &&
	    atomic_load(&s->sleeps_to) > c->deadline_ms - (int64_t)secs * 1000 + 1000)
		http_wait_poke(s);
}

enum MHD_Result http_conns_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct drv_http_server *s = cls;
	unsigned char key[16];
	struct client *c;
	bool ok;

	(void)addrlen;
	if (!addr_key(addr, key))
		return MHD_YES;
	pthread_mutex_lock(&s->cmu);
	c = client_get(s, key, false);
	ok = !c || c->count[CONN_UNAUTH] < atomic_load(&s->per_client[CONN_UNAUTH]);
	if (!ok)
		s->refused_conns++;
	pthread_mutex_unlock(&s->cmu);
	return ok ? MHD_YES : MHD_NO;
}

static void conn_started(struct drv_http_server *s, struct MHD_Connection *mc, void **ctx)
{
	const union MHD_ConnectionInfo *ai, *fi;
	struct conn *c = drv_calloc(1, sizeof(*c));
	unsigned char key[16];

	ai = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	fi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	c->fd = fi ? fi->connect_fd : -1;
	pthread_mutex_lock(&s->cmu);
	if (ai && addr_key(ai->client_addr, key)) {
		c->client = client_get(s, key, true);
		c->client->count[CONN_UNAUTH]++;
		/* the accept policy checked the count, but two worker threads can
		 * both pass it before either connection is counted here: the one
		 * over the cap is shut down now (its closed notification
		 * uncounts it), so the cap holds exactly */
		if (c->client->count[CONN_UNAUTH] > atomic_load(&s->per_client[CONN_UNAUTH]) &&
		    c->fd >= 0) {
			shutdown(c->fd, SHUT_RDWR);
			s->refused_conns++;
		}
	}
	time_for(s, c, DRV_HTTP_HEADER_TIMEOUT_S);
	pthread_mutex_unlock(&s->cmu);
	*ctx = c;
}

static void conn_closed(struct drv_http_server *s, struct conn *c)
{
	pthread_mutex_lock(&s->cmu);
	untime(s, c);
	if (c->client)
		client_put(s, c->client, c->cls);
	pthread_mutex_unlock(&s->cmu);
	drv_free(c);
}

void http_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe)
{
	struct drv_http_server *s = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		conn_started(s, mc, socket_context);
	else if (*socket_context)
		conn_closed(s, *socket_context);
	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		*socket_context = NULL;
}

struct conn *http_conns_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

bool http_conns_admitted(struct drv_http_server *s, struct conn *c, bool authenticated,
			 bool cluster, bool body)
{
	int to = cluster ? CONN_CLUSTER : CONN_USER;

	if (!c)
		return true;
	pthread_mutex_lock(&s->cmu);
	if (authenticated && c->cls == CONN_UNAUTH && c->client) {
		if (c->client->count[to] >= atomic_load(&s->per_client[to])) {
			s->refused_conns++;
			pthread_mutex_unlock(&s->cmu);
			return false;   /* it stays unauthenticated; the caller closes it */
		}
		c->client->count[CONN_UNAUTH]--;
		c->client->count[to]++;
		c->cls = to;
	} else if (authenticated && c->cls == CONN_UNAUTH) {
		c->cls = to;    /* an address we do not count: no cap */
	}
	if (body)
		time_for(s, c, DRV_HTTP_BODY_TIMEOUT_S);
	else
		untime(s, c);
	pthread_mutex_unlock(&s->cmu);
	return true;
}

void http_conns_body_in(struct drv_http_server *s, struct conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->cmu);
	untime(s, c);
	pthread_mutex_unlock(&s->cmu);
}

void http_conns_request_done(struct drv_http_server *s, struct conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->cmu);
	if (c->cls == CONN_UNAUTH)
		time_for(s, c, DRV_HTTP_HEADER_TIMEOUT_S);
	else
		untime(s, c);
	pthread_mutex_unlock(&s->cmu);
}

bool http_conns_timed(struct drv_http_server *s)
{
	return atomic_load(&s->ntimed) > 0;
}

void http_conns_expire(struct drv_http_server *s, int64_t now)
{
	struct conn *c, *next;

	if (now < s->next_expire_ms)
		return;
	s->next_expire_ms = now + 500;
	pthread_mutex_lock(&s->cmu);
	for (c = s->timed; c; c = next) {
		next = c->next;
		if (now < c->deadline_ms)
			continue;
		untime(s, c);
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		s->expired_conns++;
	}
	pthread_mutex_unlock(&s->cmu);
}

void http_conns_init(struct drv_http_server *s)
{
	pthread_mutex_init(&s->cmu, NULL);
	s->clients = drv_calloc(CLIENT_BUCKETS, sizeof(*s->clients));
	atomic_store(&s->per_client[CONN_UNAUTH], DRV_HTTP_UNAUTH_PER_CLIENT);
	atomic_store(&s->per_client[CONN_USER], DRV_HTTP_USER_PER_CLIENT);
	atomic_store(&s->per_client[CONN_CLUSTER], DRV_HTTP_CLUSTER_PER_CLIENT);
}

/* After libmicrohttpd stopped: every connection was closed (and freed). */
void http_conns_release(struct drv_http_server *s)
{
	drv_free(s->clients);
	pthread_mutex_destroy(&s->cmu);
}

void drv_http_server_set_client_limit(struct drv_http_server *s, unsigned n)
{
	atomic_store(&s->per_client[CONN_UNAUTH], n ? n : 1);
}

void drv_http_server_set_auth_limits(struct drv_http_server *s, unsigned user,
				     unsigned cluster)
{
	atomic_store(&s->per_client[CONN_USER], user ? user : 1);
	atomic_store(&s->per_client[CONN_CLUSTER], cluster ? cluster : 1);
}

unsigned drv_http_server_auth_limit(struct drv_http_server *s, bool cluster)
{
	return atomic_load(&s->per_client[cluster ? CONN_CLUSTER : CONN_USER]);
}

void drv_http_server_conn_stats(struct drv_http_server *s, uint64_t *refused,
				uint64_t *expired)
{
	pthread_mutex_lock(&s->cmu);
	*refused = s->refused_conns;
	*expired = s->expired_conns;
	pthread_mutex_unlock(&s->cmu);
}
