/*
 * idem.c: the Idempotency-Key header of the create routes (POST /v1/jobs,
 * /v1/jobs/batch, /v1/apply; docs/api.md, "Idempotency keys").
 *
 * A client that lost a reply (a dropped connection, a timeout) cannot tell
 * whether its job was created; with a key it sends the same request again
 * and gets the first answer, not a second job. Keys are scoped to the
 * authenticated user. A key's answer (status, body, header lines) and a
 * fingerprint of its request (SHA-256 of route, Content-Type, filename and
 * body) go to the store in the transaction of what the request created
 * (srv_commit_idem puts the row in that ticket's batch), so a restart,
 * even after SIGKILL, finds every key whose job it has, and no key without
 * its job. Rows older than idempotency_ttl_s are treated as absent and
 * purged by the loop.
 *
 * Until its batch is on disk, a key lives in s->idem (under s->mu): a
 * repeat arriving meanwhile waits on the same ticket and is answered with
 * the same reply, and a repeat that arrives while the first request is
 * still being parsed gets 409 (retry). Entries leave memory once their
 * batch is written (they are in the store then) or failed (the key is
 * free again). A lookup that finds nothing in memory reads the store with
 * s->mu released; if an entry left memory meanwhile (s->idem_gen moved)
 * it looks again, so two requests with one key never both create.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

struct srv_idem {
	char *user, *key;
	char fp[65];
	bool answered;             /* status..headers and ticket are set */
	int status;
	char *body;
	size_t len;
	char *headers;
	uint64_t ticket;
};

static void entry_free(struct srv_idem *e)
{
	drv_free(e->user);
	drv_free(e->key);
	drv_free(e->body);
	drv_free(e->headers);
}

static void entry_remove(struct drv_server *s, size_t i)
{
	entry_free(&s->idem[i]);
	s->idem[i] = s->idem[--s->nidem];
}

static struct srv_idem *entry_find(struct drv_server *s, const char *user, const char *key)
{
	for (size_t i = 0; i < s->nidem; i++)
		if (strcmp(s->idem[i].key, key) == 0 && strcmp(s->idem[i].user, user) == 0)
			return &s->idem[i];
	return NULL;
}

/* Entries whose batch was processed leave memory: written ones are in the
 * store now (idem_gen tells lookups in progress), failed ones are free. */
static void entries_settle(struct drv_server *s)
{
	for (size_t i = 0; i < s->nidem;) {
		struct srv_idem *e = &s->idem[i];
		int st = e->answered ? srv_ticket_state(s, e->ticket) : 1;

		if (st > 0) {
			i++;
			continue;
		}
		if (st == 0)
			s->idem_gen++;
		entry_remove(s, i);
	}
}

/* The request's fingerprint: route, Content-Type, filename and body, the
 * first three each followed by a NUL (a separator no header or query value
 * holds), hashed in two calls (each gnutls_hash costs a thousand
 * instructions of its own) and written as lowercase hex. */
static void fingerprint(struct drv_http_req *r, const char *route, char out[65])
{
	const char *ct = drv_http_req_header(r, "Content-Type");
	const char *fn = drv_http_req_query(r, "filename");
	struct drv_dynbuf head = DRV_DYNBUF_INIT(SIZE_MAX);
	unsigned char d[32];
	gnutls_datum_t dd = { d, sizeof(d) };
	gnutls_hash_hd_t h;
	size_t len, hexlen = 65;
	const char *body = drv_http_req_body(r, &len);

	drv_dynbuf_add(&head, route, strlen(route) + 1);
	drv_dynbuf_add(&head, ct ? ct : "", ct ? strlen(ct) + 1 : 1);
	drv_dynbuf_add(&head, fn ? fn : "", fn ? strlen(fn) + 1 : 1);
	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
		abort();   /* SHA-256 is in every GnuTLS: out of memory */
	gnutls_hash(h, head.buf, head.len);
	gnutls_hash(h, body ? body : "", len);
	gnutls_hash_deinit(h, d);
	drv_dynbuf_release(&head);
	if (gnutls_hex_encode(&dd, out, &hexlen) < 0)
		abort();   /* 65 bytes hold 32 in hex and the NUL */
}

/* The answer already given under a key, into o, marked as a replay. */
static void replay(struct drv_http_resp *o, int status, const char *body, size_t len,
		   const char *headers)
{
	drv_http_resp_bytes(o, status, "application/json", body, len);
	drv_free(o->headers);
	o->headers = headers && *headers ? drv_strdup(headers) : NULL;
	drv_http_resp_header(o, "Idempotent-Replayed", "true");
}

static void conflict(struct drv_http_resp *o, const char *key, const char *route)
{
	drv_http_resp_error(o, 409, "conflict", NULL,
			    "Idempotency-Key %s was already used for another request (not this "
			    "%s with this body); send a new key for a new request", key, route);
}

/* A key found in memory: 1 with r answered or deferred. */
static int answer_from_entry(struct drv_server *s, struct drv_http_req *r,
			     struct drv_http_resp *o, const struct srv_idem *e,
			     const struct srv_idem_req *q, const char *route)
{
	if (!e->answered) {
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "Idempotency-Key %s: a request with this key is still being "
				    "handled; retry it in a moment", q->key);
		return 1;
	}
	if (strcmp(e->fp, q->fp) != 0) {
		conflict(o, q->key, route);
		return 1;
	}
	replay(o, e->status, e->body, e->len, e->headers);
	srv_reply_when_durable(s, r, e->ticket, "the first request's job was not accepted: ");
	return 1;
}

struct idem_read {
	const char *user, *key;
	bool found;
	int status;
	char fp[65];
	char *body, *headers;
	int64_t created;
};

static int keep_idem(const struct drv_store_idem *k, void *cls)
{
	struct idem_read *g = cls;

	g->found = true;
	g->status = k->status;
	g->created = k->created;
	snprintf(g->fp, sizeof(g->fp), "%s", k->fingerprint ? k->fingerprint : "");
	g->body = drv_strdup(k->body ? k->body : "");
	g->headers = k->headers ? drv_strdup(k->headers) : NULL;
	return 0;
}

static int read_idem(struct drv_server *s, void *cls)
{
	struct idem_read *g = cls;
	int rc = s->rstore->ops->get_idem(s->rstore, g->user, g->key, keep_idem, g);

	return rc == DRV_ENOENT ? 0 : rc;
}

/* Under s->mu: -1 after an error answer, 1 when answered from what the
 * store keeps, 0 when the key is free (then claimed in memory). */
static int lookup(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		  struct srv_idem_req *q, const char *route)
{
	for (;;) {
		struct idem_read g = { .user = q->user, .key = q->key };
		struct srv_idem *e;
		uint64_t gen;
		char err[256];
		int rc;

		entries_settle(s);
		e = entry_find(s, q->user, q->key);
		if (e)
			return answer_from_entry(s, r, o, e, q, route);
		gen = s->idem_gen;
		rc = srv_store_call(s, false, read_idem, &g, err, sizeof(err));
		if (rc < 0) {
			drv_http_resp_error(o, 503, "unavailable", NULL,
					    "Idempotency-Key: the state store cannot be read (%s)", err);
			return -1;
		}
		if (g.found && g.created >= drv_wall_s() - s->cfg.idempotency_ttl_s) {
			if (strcmp(g.fp, q->fp) != 0)
				conflict(o, q->key, route);
			else
				replay(o, g.status, g.body, strlen(g.body), g.headers);
			drv_free(g.body);
			drv_free(g.headers);
			return 1;
		}
		drv_free(g.body);
		drv_free(g.headers);
		if (gen != s->idem_gen)
			continue;   /* a key reached the store while it was read: look again */
		if (entry_find(s, q->user, q->key))
			continue;   /* claimed meanwhile */
		DRV_GROW(s->idem, s->nidem + 1, s->idemcap);
		s->idem[s->nidem++] = (struct srv_idem){ .user = drv_strdup(q->user),
							 .key = drv_strdup(q->key) };
		memcpy(s->idem[s->nidem - 1].fp, q->fp, sizeof(q->fp));
		return 0;
	}
}

static void req_release(struct srv_idem_req *q)
{
	drv_free(q->user);
	drv_free(q->key);
	memset(q, 0, sizeof(*q));
}

int srv_idem_begin(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		   const char *route, struct srv_idem_req *q)
{
	const char *key = drv_http_req_header(r, "Idempotency-Key");
	const struct caller *c = drv_http_req_user(r);
	size_t n = key ? strlen(key) : 0;
	int rc;

	memset(q, 0, sizeof(*q));
	if (!key)
		return 0;
	if (n == 0 || n > SRV_IDEM_KEY_MAX) {
		drv_http_resp_error(o, 400, "invalid", NULL,
				    "Idempotency-Key: %zu bytes, expected 1 to %d", n,
				    SRV_IDEM_KEY_MAX);
		return 1;
	}
	q->user = drv_strdup(c->user);
	q->key = drv_strdup(key);
	fingerprint(r, route, q->fp);
	pthread_mutex_lock(&s->mu);
	rc = lookup(s, r, o, q, route);
	pthread_mutex_unlock(&s->mu);
	if (rc) {
		req_release(q);
		return 1;
	}
	q->on = true;
	return 0;
}

uint64_t srv_idem_end(struct drv_server *s, struct srv_idem_req *q,
		      const struct drv_http_resp *o, uint64_t ticket)
{
	struct srv_idem *e;
	struct widem w;

	if (!q->on)
		return ticket;
	e = entry_find(s, q->user, q->key);
	if (!e || o->status < 200 || o->status >= 300) {
		if (e)
			entry_remove(s, (size_t)(e - s->idem));
		req_release(q);
		return ticket;
	}
	e->status = o->status;
	e->len = o->len;
	e->body = drv_malloc(o->len + 1);
	memcpy(e->body, o->body ? o->body : "", o->len);
	e->body[o->len] = '\0';
	e->headers = o->headers ? drv_strdup(o->headers) : NULL;
	w.k = (struct drv_store_idem){ .user = drv_strdup(q->user), .key = drv_strdup(q->key),
				       .fingerprint = drv_strdup(q->fp), .status = o->status,
				       .body = drv_strdup(e->body),
				       .headers = e->headers ? drv_strdup(e->headers) : NULL,
				       .created = drv_wall_s() };
	e->ticket = srv_commit_idem(s, ticket, &w);
	e->answered = true;
	req_release(q);
	return e->ticket;
}

void srv_idem_cancel(struct drv_server *s, struct srv_idem_req *q)
{
	struct srv_idem *e;

	if (!q->on)
		return;
	pthread_mutex_lock(&s->mu);
	e = entry_find(s, q->user, q->key);
	if (e && !e->answered)
		entry_remove(s, (size_t)(e - s->idem));
	pthread_mutex_unlock(&s->mu);
	req_release(q);
}

struct purge {
	int64_t before, n;
};

static int purge_keys(struct drv_server *s, void *cls)
{
	struct purge *p = cls;

	return s->store->ops->purge_idem(s->store, p->before, &p->n);
}

void srv_idem_purge(struct drv_server *s)
{
	struct purge p = { .before = drv_wall_s() - s->cfg.idempotency_ttl_s };
	char err[256];

	entries_settle(s);
	if (srv_store_call(s, true, purge_keys, &p, err, sizeof(err)) < 0)
		drv_log(&s->log, "purging idempotency keys: %s", err);
	else if (p.n > 0)
		drv_log(&s->log, "purged %lld idempotency keys older than %lld s", (long long)p.n,
			(long long)s->cfg.idempotency_ttl_s);
}

void srv_idem_release(struct drv_server *s)
{
	for (size_t i = 0; i < s->nidem; i++)
		entry_free(&s->idem[i]);
	drv_free(s->idem);
	s->idem = NULL;
	s->nidem = s->idemcap = 0;
}
