/*
 * kube_forward.c: the Pods portforward subresource (kubectl port-forward)
 * in SPDY/3.1 (the draft's framing: SYN_STREAM, SYN_REPLY, DATA,
 * RST_STREAM, PING, GOAWAY; name/value blocks zlib-compressed with the
 * SPDY dictionary, one stream of compression each way), tunnelled in
 * WebSocket binary messages (subprotocol SPDY/3.1+portforward.k8s.io,
 * what kubectl 1.31 and later ask first) or, kubectl's fallback, over a
 * plain `Upgrade: SPDY/3.1` (X-Stream-Protocol-Version:
 * portforward.k8s.io). Per local connection kubectl opens two streams
 * with the headers streamType (error, data), port and requestID; each
 * pair is one connection to the pod's port, relayed through the pod's
 * agent (its GET /v1/tasks/ID/portforward, a byte pipe to the node's
 * loopback port, as kubelet relays), so the controller needs no route to
 * the nodes' other ports. A port nothing listens on, or an agent that
 * cannot be reached, is told on the error stream, which kubectl prints.
 * One session thread per kubectl (http_ws.c) polls kubectl's socket and
 * every pipe; the server's event loop is not held.
 */
#include "kube_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define FWD_PROTO "portforward.k8s.io"
#define FWD_WS_PROTO "SPDY/3.1+" FWD_PROTO
#define CONNECT_TIMEOUT_MS 10000
#define SEND_TIMEOUT_MS 30000
#define CHUNK (32u << 10)
#define NV_MAX (64u << 10)
#define MAX_PAIRS 256

enum { SYN_STREAM = 1, SYN_REPLY = 2, RST_STREAM = 3, PING = 6, GOAWAY = 7, HEADERS = 8 };
enum { FLAG_FIN = 1, RST_PROTOCOL_ERROR = 1, RST_REFUSED = 3 };

struct kfwd {
	struct drv_server *s;
	char *url, *tok, *ca;
	char tid[64], nodename[256], pod[320];
	bool raw;                  /* plain SPDY, not in WebSocket */
};

/* One forwarded connection: kubectl's error and data streams. */
struct pair {
	char reqid[32];
	uint32_t err_id, data_id;  /* 0 until opened */
	long port;
	struct drv_http_tunnel *t;
	bool done;
};

struct sess {
	struct kfwd *x;
	struct drv_ws *w;
	z_stream zin, zout;
	struct pair **pairs;
	size_t npairs;
	unsigned char *in;         /* SPDY bytes read, not yet parsed */
	size_t nin, incap;
	bool dead;                 /* kubectl gone, or its GOAWAY */
};

/* The SPDY/3 dictionary: these names, each after its 32-bit length, then
 * the text below (1423 bytes, Adler-32 0xe3c6a7c2). */
static const char *const dict_words[] = {
	"options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
	"accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
	"cache-control", "connection", "content-base", "content-encoding", "content-language",
	"content-length", "content-location", "content-md5", "content-range", "content-type",
	"date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
	"if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
	"max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
	"retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
	"vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
	"version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin", NULL
};
static const char dict_tail[] =
	"100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
	"504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
	"400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
	"501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
	"Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
	"image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
	"publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
static unsigned char dict[1500];
static size_t ndict;
static pthread_once_t dict_once = PTHREAD_ONCE_INIT;

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void dict_build(void)
{
	for (size_t i = 0; dict_words[i]; i++) {
		size_t n = strlen(dict_words[i]);

		put32(dict + ndict, (uint32_t)n);
		memcpy(dict + ndict + 4, dict_words[i], n);
		ndict += 4 + n;
	}
	memcpy(dict + ndict, dict_tail, sizeof(dict_tail) - 1);
	ndict += sizeof(dict_tail) - 1;
}

const unsigned char *kube_spdy_dictionary(size_t *n)
{
	pthread_once(&dict_once, dict_build);
	*n = ndict;
	return dict;
}

/* --- frames out ----------------------------------------------------------- */

static void out(struct sess *S, const unsigned char *p, size_t n)
{
	int rc;

	if (S->dead)
		return;
	rc = S->x->raw ? drv_ws_write_raw(S->w, p, n) : drv_ws_send(S->w, DRV_WS_BINARY, p, n);
	if (rc < 0)
		S->dead = true;
}

static void frame_out(struct sess *S, bool control, uint32_t word, int flags,
		      const unsigned char *body, size_t n)
{
	unsigned char *f = drv_malloc(8 + n);

	put32(f, control ? 0x80000000u | 3u << 16 | word : word & 0x7fffffffu);
	put32(f + 4, (uint32_t)flags << 24 | (uint32_t)n);
	if (n)
		memcpy(f + 8, body, n);
	out(S, f, 8 + n);
	drv_free(f);
}

static void data_out(struct sess *S, uint32_t id, int flags, const void *p, size_t n)
{
	frame_out(S, false, id, flags, p, n);
}

static void rst_out(struct sess *S, uint32_t id, uint32_t status)
{
	unsigned char b[8];

	put32(b, id & 0x7fffffffu);
	put32(b + 4, status);
	frame_out(S, true, RST_STREAM, 0, b, 8);
}

/* SYN_REPLY with no headers: an empty name/value block, compressed. */
static void reply_out(struct sess *S, uint32_t id)
{
	unsigned char nv[4] = { 0 }, b[4 + 64];

	put32(b, id & 0x7fffffffu);
	S->zout.next_in = nv;
	S->zout.avail_in = sizeof(nv);
	S->zout.next_out = b + 4;
	S->zout.avail_out = sizeof(b) - 4;
	if (deflate(&S->zout, Z_SYNC_FLUSH) != Z_OK || S->zout.avail_in) {
		S->dead = true;
		return;
	}
	frame_out(S, true, SYN_REPLY, 0, b, sizeof(b) - S->zout.avail_out);
}

/* --- name/value blocks in ------------------------------------------------- */

/* The block of n compressed bytes, inflated into a new buffer (*len), or
 * NULL when it does not inflate: the session's compression is then lost. */
static unsigned char *inflate_nv(struct sess *S, const unsigned char *p, size_t n, size_t *len)
{
	size_t cap = 1024;
	unsigned char *o = drv_malloc(cap);

	*len = 0;
	S->zin.next_in = (unsigned char *)p;
	S->zin.avail_in = (uInt)n;
	for (;;) {
		int rc;

		S->zin.next_out = o + *len;
		S->zin.avail_out = (uInt)(cap - *len);
		rc = inflate(&S->zin, Z_SYNC_FLUSH);
		if (rc == Z_NEED_DICT) {
			size_t dn;
			const unsigned char *d = kube_spdy_dictionary(&dn);

			rc = inflateSetDictionary(&S->zin, d, (uInt)dn);
			*len = cap - S->zin.avail_out;
			if (rc != Z_OK)
				break;
			continue;
		}
		*len = cap - S->zin.avail_out;
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			break;
		if (S->zin.avail_in == 0 && S->zin.avail_out > 0)
			return o;
		if (cap >= NV_MAX)
			break;
		cap *= 2;
		o = drv_realloc(o, cap);
	}
	drv_free(o);
	return NULL;
}

/* The value of header name (lowercase) in the block, into v; false when absent. */
static bool nv_get(const unsigned char *b, size_t n, const char *name, char *v, size_t vsz)
{
	size_t off = 4, cnt = n >= 4 ? get32(b) : 0;

	for (size_t i = 0; i < cnt; i++) {
		size_t kl, vl;
		const unsigned char *k;

		if (off + 4 > n || (kl = get32(b + off)) > n - off - 4)
			return false;
		k = b + off + 4;
		off += 4 + kl;
		if (off + 4 > n || (vl = get32(b + off)) > n - off - 4)
			return false;
		if (kl == strlen(name) && strncasecmp((const char *)k, name, kl) == 0) {
			snprintf(v, vsz, "%.*s", (int)DRV_MIN(vl, vsz - 1), b + off + 4);
			return true;
		}
		off += 4 + vl;
	}
	return false;
}

/* --- the pairs ------------------------------------------------------------ */

static struct pair *pair_for(struct sess *S, const char *reqid)
{
	struct pair *p;

	for (size_t i = 0; i < S->npairs; i++)
		if (!S->pairs[i]->done && strcmp(S->pairs[i]->reqid, reqid) == 0)
			return S->pairs[i];
	if (S->npairs >= MAX_PAIRS)
		return NULL;
	p = drv_calloc(1, sizeof(*p));
	snprintf(p->reqid, sizeof(p->reqid), "%s", reqid);
	S->pairs = drv_realloc(S->pairs, (S->npairs + 1) * sizeof(*S->pairs));
	S->pairs[S->npairs++] = p;
	return p;
}

static struct pair *pair_of_stream(struct sess *S, uint32_t id)
{
	for (size_t i = 0; i < S->npairs; i++)
		if (!S->pairs[i]->done && (S->pairs[i]->data_id == id || S->pairs[i]->err_id == id))
			return S->pairs[i];
	return NULL;
}

/* The end of a forwarded connection: msg (or nothing) on the error
 * stream, both streams finished, the pipe closed. */
static void pair_finish(struct sess *S, struct pair *p, const char *msg)
{
	if (p->done)
		return;
	if (p->err_id) {
		if (msg)
			data_out(S, p->err_id, 0, msg, strlen(msg));
		data_out(S, p->err_id, FLAG_FIN, NULL, 0);
	}
	if (p->data_id)
		data_out(S, p->data_id, FLAG_FIN, NULL, 0);
	drv_http_tunnel_close(p->t);
	p->t = NULL;
	p->done = true;
}

static void pairs_compact(struct sess *S)
{
	size_t k = 0;

	for (size_t i = 0; i < S->npairs; i++) {
		if (S->pairs[i]->done)
			drv_free(S->pairs[i]);
		else
			S->pairs[k++] = S->pairs[i];
	}
	S->npairs = k;
}

/* Both streams open: the pipe to the pod's port, through its agent. */
static void pair_connect(struct sess *S, struct pair *p)
{
	char path[160], why[1024], msg[1700];
	int rc;

	if (!p->err_id || !p->data_id || p->t || p->done)
		return;
	if (p->port < 1 || p->port > 65535) {
		snprintf(msg, sizeof(msg), "pods/portforward: port: expected a TCP port from 1 to "
			 "65535, found %ld", p->port);
		pair_finish(S, p, msg);
		return;
	}
	snprintf(path, sizeof(path), "/v1/tasks/%s/portforward?port=%ld", S->x->tid, p->port);
	rc = drv_http_tunnel_open(S->x->url, S->x->tok, S->x->ca, path, "drover-tcp",
				  CONNECT_TIMEOUT_MS, &p->t, why, sizeof(why));
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "error forwarding port %ld to pod %s on node %s: %s",
			 p->port, S->x->pod, S->x->nodename, why);
		pair_finish(S, p, msg);
	}
}

static void on_syn_stream(struct sess *S, uint32_t id, int flags, const unsigned char *nv,
			  size_t nnv)
{
	char type[16] = "", port[16] = "", reqid[32] = "";
	struct pair *p;
	bool is_data;

	(void)flags;
	reply_out(S, id);
	nv_get(nv, nnv, "streamtype", type, sizeof(type));
	nv_get(nv, nnv, "port", port, sizeof(port));
	is_data = strcmp(type, "data") == 0;
	if (!is_data && strcmp(type, "error") != 0) {
		rst_out(S, id, RST_PROTOCOL_ERROR);
		return;
	}
	/* kubectl before 1.6 sent no requestID: its data stream follows its error stream */
	if (!nv_get(nv, nnv, "requestid", reqid, sizeof(reqid)))
		snprintf(reqid, sizeof(reqid), "#%u", is_data ? id - 2 : id);
	if (!(p = pair_for(S, reqid))) {
		rst_out(S, id, RST_REFUSED);
		return;
	}
	if (is_data)
		p->data_id = id;
	else
		p->err_id = id;
	if (port[0] && (is_data || !p->port)) {
		char *end;

		p->port = strtol(port, &end, 10);
		if (*end)
			p->port = -1;
	}
	pair_connect(S, p);
}

static void on_data(struct sess *S, uint32_t id, int flags, const unsigned char *b, size_t n)
{
	struct pair *p = pair_of_stream(S, id);

	if (!p || id != p->data_id || !p->t)
		return;
	if (n && drv_http_tunnel_send(p->t, b, n, SEND_TIMEOUT_MS) < 0) {
		pair_finish(S, p, NULL);
		return;
	}
	if (flags & FLAG_FIN)
		drv_http_tunnel_shutdown(p->t);
}

/* One whole frame of n bytes. */
static void on_frame(struct sess *S, const unsigned char *f, size_t n)
{
	uint32_t w0 = get32(f);
	int flags = f[4];
	const unsigned char *b = f + 8;
	size_t bn = n - 8;

	if (!(w0 & 0x80000000u)) {
		on_data(S, w0 & 0x7fffffffu, flags, b, bn);
		return;
	}
	switch (w0 & 0xffff) {
	case SYN_STREAM:
	case SYN_REPLY:
	case HEADERS: {
		size_t skip = (w0 & 0xffff) == SYN_STREAM ? 10 : 4, nnv;
		unsigned char *nv;

		if (bn < skip || !(nv = inflate_nv(S, b + skip, bn - skip, &nnv))) {
			S->dead = true;   /* the headers' compression is lost with it */
			return;
		}
		if ((w0 & 0xffff) == SYN_STREAM)
			on_syn_stream(S, get32(b) & 0x7fffffffu, flags, nv, nnv);
		drv_free(nv);
		break;
	}
	case RST_STREAM: {
		struct pair *p = bn >= 8 ? pair_of_stream(S, get32(b) & 0x7fffffffu) : NULL;

		if (p)
			pair_finish(S, p, NULL);
		break;
	}
	case PING:
		if (bn >= 4 && (get32(b) & 1))   /* kubectl's (odd): echoed */
			frame_out(S, true, PING, 0, b, 4);
		break;
	case GOAWAY:
		S->dead = true;
		break;
	default:   /* SETTINGS, WINDOW_UPDATE: nothing to do */
		break;
	}
}

/* The frames whole in S->in. */
static void parse(struct sess *S)
{
	size_t off = 0;

	while (!S->dead && S->nin - off >= 8) {
		size_t n = 8 + (get32(S->in + off + 4) & 0xffffffu);

		if (S->nin - off < n)
			break;
		on_frame(S, S->in + off, n);
		off += n;
	}
	memmove(S->in, S->in + off, S->nin - off);
	S->nin -= off;
}

/* What kubectl sent: one WebSocket message, or what its socket has. */
static void read_peer(struct sess *S)
{
	if (S->incap < S->nin + 65536)
		DRV_GROW(S->in, S->nin + 65536, S->incap);
	if (S->x->raw) {
		ssize_t k = drv_ws_read_raw(S->w, S->in + S->nin, S->incap - S->nin);

		if (k <= 0)
			S->dead = true;
		else
			S->nin += (size_t)k;
	} else {
		unsigned char *m;
		size_t len;
		int op;

		if (drv_ws_read(S->w, &op, &m, &len, -1) != 0) {
			S->dead = true;
			return;
		}
		if (op == DRV_WS_BINARY) {
			if (S->incap < S->nin + len)
				DRV_GROW(S->in, S->nin + len, S->incap);
			memcpy(S->in + S->nin, m, len);
			S->nin += len;
		}
		drv_free(m);
	}
	parse(S);
}

/* What the pod's port sent, until the pipe has nothing more now. */
static void read_pipe(struct sess *S, struct pair *p)
{
	char buf[CHUNK];

	while (!p->done && !S->dead) {
		ssize_t k = drv_http_tunnel_recv(p->t, buf, sizeof(buf));

		if (k == DRV_ETIMEDOUT)
			return;
		if (k <= 0) {
			pair_finish(S, p, NULL);
			return;
		}
		data_out(S, p->data_id, 0, buf, (size_t)k);
	}
}

static bool stopping(struct drv_server *s)
{
	bool st;

	pthread_mutex_lock(&s->mu);
	st = s->stopping;
	pthread_mutex_unlock(&s->mu);
	return st;
}

static void session(void *cls, struct drv_ws *w)
{
	struct sess S = { .x = cls, .w = w };

	deflateInit(&S.zout, Z_DEFAULT_COMPRESSION);
	{
		size_t dn;
		const unsigned char *d = kube_spdy_dictionary(&dn);

		deflateSetDictionary(&S.zout, d, (uInt)dn);
	}
	inflateInit(&S.zin);
	while (!S.dead && !stopping(S.x->s)) {
		struct pollfd *p = drv_calloc(S.npairs + 1, sizeof(*p));
		struct pair **at = drv_calloc(S.npairs + 1, sizeof(*at));
		size_t np = 1;
		bool buffered = drv_ws_buffered(w);

		p[0] = (struct pollfd){ drv_ws_fd(w), POLLIN, 0 };
		for (size_t i = 0; i < S.npairs; i++)
			if (S.pairs[i]->t && !S.pairs[i]->done) {
				at[np] = S.pairs[i];
				p[np++] = (struct pollfd){ drv_http_tunnel_fd(S.pairs[i]->t), POLLIN, 0 };
			}
		if (poll(p, np, buffered ? 0 : 500) < 0 && errno != EINTR)
			S.dead = true;
		if (buffered || (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			read_peer(&S);
		for (size_t i = 1; i < np; i++)
			if (p[i].revents && at[i]->t)
				read_pipe(&S, at[i]);
		pairs_compact(&S);
		drv_free(p);
		drv_free(at);
	}
	for (size_t i = 0; i < S.npairs; i++)
		S.pairs[i]->done = true, drv_http_tunnel_close(S.pairs[i]->t);
	pairs_compact(&S);
	drv_free(S.pairs);
	drv_free(S.in);
	deflateEnd(&S.zout);
	inflateEnd(&S.zin);
	if (!S.x->raw)
		drv_ws_close(w, 1000, NULL);
}

static void kfwd_free(void *cls)
{
	struct kfwd *x = cls;
	struct drv_server *s = x->s;

	drv_free(x->url);
	drv_free(x->tok);
	drv_free(x->ca);
	drv_free(x);
	pthread_mutex_lock(&s->mu);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Which transport req asks: 1 WebSocket, 2 plain SPDY, 0 neither. */
static int transport(struct drv_http_req *r)
{
	const char *up = drv_http_req_header(r, "Upgrade");
	const char *v = drv_http_req_header(r, "X-Stream-Protocol-Version");

	if (drv_http_req_is_websocket(r) && drv_http_req_ws_offers(r, FWD_WS_PROTO))
		return 1;
	if (up && strcasecmp(up, "SPDY/3.1") == 0 && v && strstr(v, FWD_PROTO))
		return 2;
	return 0;
}

int kube_portforward(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		     struct drv_http_resp *o)
{
	struct kube_jobs js;
	struct kfwd *x;
	struct srv_job *j;
	json_t *pod = NULL;
	const char *cname;
	int32_t rk;
	int how = transport(r);

	if (strcmp(q->res->kind, "Pod") != 0) {
		kube_status(o, 404, "NotFound", NULL, "only pods have portforward");
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	kube_jobs_collect(s, &js);
	if (kube_find_pod(s, q, &js, NULL, o, &j, &rk, &pod, &cname) < 0)
		goto out;
	if (rk >= j->ntasks || j->tasks[rk].state != T_RUNNING ||
	    !s->nodes[j->tasks[rk].node].agent_url) {
		kube_status(o, 400, "BadRequest", NULL,
			    "cannot port-forward to pod %s: it is not running (job %llu is %s)",
			    q->name, (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	if (!how || s->stopping) {
		if (s->stopping)
			kube_status(o, 503, "ServiceUnavailable", NULL, "the server is stopping");
		else
			kube_status(o, 400, "BadRequest", NULL,
				    "pods/portforward: drover serves SPDY/3.1 (Upgrade: SPDY/3.1, "
				    "X-Stream-Protocol-Version: " FWD_PROTO "), also tunnelled in "
				    "WebSocket (subprotocol " FWD_WS_PROTO ")");
		goto out;
	}
	x = drv_calloc(1, sizeof(*x));
	x->s = s;
	x->raw = how == 2;
	x->url = drv_strdup(s->nodes[j->tasks[rk].node].agent_url);
	x->tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
	x->ca = s->cfg.tls_ca_file ? drv_strdup(s->cfg.tls_ca_file) : NULL;
	snprintf(x->nodename, sizeof(x->nodename), "%s", s->nodes[j->tasks[rk].node].name);
	snprintf(x->tid, sizeof(x->tid), "%llu.%d", (unsigned long long)j->id, rk);
	snprintf(x->pod, sizeof(x->pod), "%s", q->name);
	s->nfetches++;   /* srv_logs_drain waits for it too */
	if (x->raw) {
		drv_http_resp_upgrade(r, o, "SPDY/3.1", session, x, kfwd_free);
		drv_http_resp_header(o, "X-Stream-Protocol-Version", FWD_PROTO);
	} else {
		drv_http_resp_websocket(r, o, FWD_WS_PROTO, session, x, kfwd_free);
	}
out:
	kube_jobs_release(&js);
	pthread_mutex_unlock(&s->mu);
	json_decref(pod);
	return 0;
}
