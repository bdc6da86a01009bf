/*
 * http_client.c: the HTTP client side of src/http over libcurl
 * (include/drover/http.h): one easy handle per struct drv_http_client so
 * connections are kept alive across requests, bearer-token auth, JSON
 * request/reply helpers, long-poll with per-request timeouts, and a reader
 * of Server-Sent Events.
 *
 * Transport errors become one line for a person: "cannot reach drover at
 * http://127.0.0.1:8080: connection refused".
 *
 * libcurl is set up on a client's first request that needs it: in a
 * process that has turned on drv_http_client_plain, requests to http://
 * URLs go through http_plain.c instead and never touch it (the light
 * binaries then load libcurl only for https://, src/lite/curl_dl.c).
 */
#include "drover/http.h"
#include "http_int.h"

#include "drover/dynbuf.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Caps of what a reply may bring in (DRV_HTTP_MAX_REPLY for its body). */
#define MAX_HEADERS (1u << 20)
#define MAX_SSE_LINE DRV_HTTP_MAX_BODY

/* curl's write callbacks: a short count stops the transfer at a cap */
static size_t add(struct drv_dynbuf *b, const char *s, size_t n)
{
	return drv_dynbuf_add(b, s, n) < 0 ? 0 : n;
}

/* "URL[,URL...]" into c->bases, each without spaces or trailing slashes. */
static void split_bases(struct drv_http_client *c, const char *list)
{
	const char *p = list;

	do {
		const char *e = strchr(p, ','), *end = e ? e : p + strlen(p);
		size_t n;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		n = (size_t)(end - p);
		while (n > 0 && (p[n - 1] == '/' || p[n - 1] == ' '))
			n--;
		if (n || c->nbases == 0) {
			c->bases = drv_realloc(c->bases, (size_t)(c->nbases + 1) * sizeof(*c->bases));
			c->bases[c->nbases++] = drv_strndup(p, n);
		}
		p = e ? e + 1 : NULL;
	} while (p);
}

static void use_base(struct drv_http_client *c, const char *url, size_t n)
{
	drv_free(c->base);
	c->base = drv_strndup(url, n);
}

void drv_http_client_init(struct drv_http_client *c, const char *base, const char *token)
{
	memset(c, 0, sizeof(*c));
	split_bases(c, base ? base : "http://127.0.0.1:8080");
	c->base = drv_strdup(c->bases[0]);
	c->token = token && *token ? drv_strdup(token) : NULL;
	c->timeout_ms = 30000;
	c->connect_timeout_ms = 5000;
	c->sockfd = -1;
}

/* The client's libcurl handle, made on first use: 0, or DRV_ECONN with
 * c->err saying why there is none (in a light binary: libcurl could not
 * be loaded; curl_easy_strerror then says what the loader said). */
static int need_curl(struct drv_http_client *c)
{
	if (c->curl)
		return 0;
	pthread_once(&curl_once, curl_global);
	c->curl = curl_easy_init();
	if (c->curl)
		return 0;
	snprintf(c->err, sizeof(c->err), "cannot reach drover at %s: %s", c->base,
		 curl_easy_strerror(CURLE_FAILED_INIT));
	return DRV_ECONN;
}

void drv_http_client_release(struct drv_http_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	drv_free(c->base);
	for (int i = 0; i < c->nbases; i++)
		drv_free(c->bases[i]);
	drv_free(c->bases);
	drv_free(c->token);
	drv_free(c->ca_file);
	drv_free(c->header);
	memset(c, 0, sizeof(*c));
}

void drv_http_client_set_header(struct drv_http_client *c, const char *line)
{
	drv_free(c->header);
	c->header = line && *line ? drv_strdup(line) : NULL;
}

void drv_http_client_set_ca(struct drv_http_client *c, const char *ca_file)
{
	drv_free(c->ca_file);
	c->ca_file = ca_file && *ca_file ? drv_strdup(ca_file) : NULL;
}

void drv_http_reply_init(struct drv_http_reply *r)
{
	memset(r, 0, sizeof(*r));
}

void drv_http_reply_release(struct drv_http_reply *r)
{
	drv_free(r->body);
	drv_free(r->headers);
	memset(r, 0, sizeof(*r));
}

const char *drv_http_reply_header(const struct drv_http_reply *r, const char *name,
				  char *buf, size_t bufsz)
{
	const char *line = r->headers;
	size_t nl = strlen(name);

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t ll = end ? (size_t)(end - line) : strlen(line);

		if (ll > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
			const char *v = line + nl + 1;
			size_t vl;

			while (*v == ' ' || *v == '\t')
				v++;
			vl = (size_t)(line + ll - v);
			while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				vl--;
			if (vl >= bufsz)
				vl = bufsz - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return buf;
		}
		if (!end)
			break;
		line = end + 1;
	}
	return NULL;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	return add(ud, ptr, size * nmemb);
}

static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct drv_dynbuf *b = ud;
	size_t n = size * nmemb;

	/* a new status line starts a new header block (after 100 Continue) */
	if (n > 5 && strncmp(ptr, "HTTP/", 5) == 0)
		drv_dynbuf_reset(b);
	return add(b, ptr, n);
}

static void lower_first(char *s)
{
	if (s[0] && isupper((unsigned char)s[0]) && !isupper((unsigned char)s[1]))
		s[0] = (char)tolower((unsigned char)s[0]);
}

/* Whose CA the server's certificate was checked against, for a message. */
static const char *trust(const struct drv_http_client *c, char *buf, size_t n)
{
	if (c->ca_file)
		snprintf(buf, n, "the CA in %s", c->ca_file);
	else
		snprintf(buf, n, "the system's CAs (give the cluster's CA: --tls-ca FILE)");
	return buf;
}

/* The TLS failures, in words; false when cc is not one. */
static bool tls_why(const struct drv_http_client *c, CURLcode cc, char *why, size_t n)
{
	const char *detail = c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc);
	bool plain = strncmp(c->base, "http://", 7) == 0;
	char t[256];

	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		snprintf(why, n, "the server's TLS certificate is not trusted by %s, or does not "
			 "name this host (%s)", trust(c, t, sizeof(t)), detail);
		return true;
	case CURLE_SSL_CACERT_BADFILE:
		snprintf(why, n, "cannot use the CA file %s (%s)", c->ca_file ? c->ca_file : "?",
			 detail);
		return true;
	case CURLE_SSL_CONNECT_ERROR:
		snprintf(why, n, "TLS handshake failed (%s); is it a plain http:// server?", detail);
		return true;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
		if (!plain)
			return false;
		snprintf(why, n, "the server closed the connection without replying (%s); if it "
			 "serves TLS, use an https:// URL", detail);
		return true;
	default:
		return false;
	}
}

static int transport_error(struct drv_http_client *c, CURLcode cc)
{
	long oserr = 0;
	char why[640];

	curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oserr);
	if (tls_why(c, cc, why, sizeof(why)))
		goto out;
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		snprintf(why, sizeof(why), "%s", oserr ? strerror((int)oserr) : "connection refused");
		lower_first(why);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(why, sizeof(why), "cannot resolve the host name");
		break;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(why, sizeof(why), "no reply in time (timed out)");
		break;
	case CURLE_ABORTED_BY_CALLBACK:
		snprintf(why, sizeof(why), "the request was cut short (stopping)");
		break;
	case CURLE_WRITE_ERROR: /* only a cap stops our write callbacks */
		snprintf(why, sizeof(why), "the reply is larger than drover accepts");
		break;
	case CURLE_GOT_NOTHING:
		snprintf(why, sizeof(why), "the server closed the connection without replying");
		break;
	case CURLE_UNSUPPORTED_PROTOCOL:
		snprintf(why, sizeof(why), "not an http:// or https:// URL");
		break;
	default:
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(cc));
		lower_first(why);
		break;
	}
out:
	snprintf(c->err, sizeof(c->err), "cannot reach drover at %s: %s", c->base, why);
	return cc == CURLE_OPERATION_TIMEDOUT ? DRV_ETIMEDOUT : DRV_ECONN;
}

/*
 * The request's headers. A body under EXPECT_MIN bytes goes at once (no
 * "Expect: 100-continue", which costs a round trip); a larger one waits
 * for the server's go-ahead, so that a refusal the server sends before
 * reading any of it (401, 413: it then closes the connection) arrives
 * before the body is sent: sent into a closing connection, the body
 * would make the server's kernel answer with a reset that can destroy
 * the refusal before it is read.
 */
#define EXPECT_MIN (1u << 20)

static struct curl_slist *make_headers(struct drv_http_client *c, const char *ctype,
				       const char *accept, size_t body_len)
{
	struct curl_slist *h = NULL;
	char line[1024];

	if (c->token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", c->token);
		h = curl_slist_append(h, line);
	}
	if (ctype) {
		snprintf(line, sizeof(line), "Content-Type: %s", ctype);
		h = curl_slist_append(h, line);
	}
	if (accept) {
		snprintf(line, sizeof(line), "Accept: %s", accept);
		h = curl_slist_append(h, line);
	}
	if (c->header)
		h = curl_slist_append(h, c->header);
	h = curl_slist_append(h, body_len >= EXPECT_MIN ? "Expect: 100-continue" : "Expect:");
	return h;
}

static int xfer_cb(void *cls, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		   curl_off_t ulnow)
{
	struct drv_http_client *c = cls;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return c->abort_cb(c->abort_cls) ? 1 : 0;
}

/* Guards every client's sockfd, busy and intr (taken briefly, rarely). */
static pthread_mutex_t sock_mu = PTHREAD_MUTEX_INITIALIZER;

int drv_http_client_socket(struct drv_http_client *c, int family, int type, int protocol)
{
	int fd = -1;

	pthread_mutex_lock(&sock_mu);
	if (!c->intr) {
		fd = socket(family, type | SOCK_CLOEXEC, protocol);
		c->sockfd = fd;
	}
	pthread_mutex_unlock(&sock_mu);
	return fd;
}

int drv_http_client_close(struct drv_http_client *c, int fd)
{
	pthread_mutex_lock(&sock_mu);
	if (c->sockfd == fd)
		c->sockfd = -1;
	pthread_mutex_unlock(&sock_mu);
	return close(fd);
}

static curl_socket_t open_cb(void *cls, curlsocktype purpose, struct curl_sockaddr *addr)
{
	int fd = drv_http_client_socket(cls, addr->family, addr->socktype, addr->protocol);

	(void)purpose;
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int close_cb(void *cls, curl_socket_t fd)
{
	return drv_http_client_close(cls, fd);
}

void drv_http_client_interrupt(struct drv_http_client *c)
{
	pthread_mutex_lock(&sock_mu);
	c->intr = 1;
	if (c->busy && c->sockfd >= 0)
		shutdown(c->sockfd, SHUT_RDWR);
	pthread_mutex_unlock(&sock_mu);
}

void drv_http_client_forget_interrupt(struct drv_http_client *c)
{
	pthread_mutex_lock(&sock_mu);
	c->intr = 0;
	pthread_mutex_unlock(&sock_mu);
}

/* Starts a request (0), or consumes an interrupt owed (DRV_ECONN). */
static int request_begin(struct drv_http_client *c)
{
	int rc = 0;

	pthread_mutex_lock(&sock_mu);
	if (c->intr) {
		c->intr = 0;
		snprintf(c->err, sizeof(c->err), "interrupted");
		rc = DRV_ECONN;
	}
	c->busy = !rc;
	pthread_mutex_unlock(&sock_mu);
	return rc;
}

/*
 * Ends it: an interrupt that came meanwhile was for this request, and is
 * spent on it even when the reply won the race (else the next request
 * would fail at once, unasked, and its caller back off as after an error).
 */
static void request_end(struct drv_http_client *c, int rc)
{
	pthread_mutex_lock(&sock_mu);
	c->busy = 0;
	if (rc < 0 && c->intr)
		snprintf(c->err, sizeof(c->err), "interrupted");
	c->intr = 0;
	pthread_mutex_unlock(&sock_mu);
}

static void setup(struct drv_http_client *c, const char *method, const char *path,
		  long timeout_ms, struct curl_slist *h)
{
	CURL *e = c->curl;
	size_t ul = strlen(c->base) + strlen(path) + 2;
	char *url = drv_malloc(ul);

	snprintf(url, ul, "%s%s%s", c->base, path[0] == '/' ? "" : "/", path);
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	drv_free(url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
	/* a large body waits for the server's go-ahead (make_headers) as long
	 * as the request may take, not curl's 1 s: on a loaded machine a
	 * server slower than that to answer got the body anyway, and its
	 * refusal (401, 413) was lost to the reset (http::a_whole_body_...) */
	long wait = timeout_ms < 0 ? c->timeout_ms : timeout_ms;

	/* (0, no time limit, would mean "send at once" to curl) */
	curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, wait > 0 ? wait : 60000L);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_cb);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_cb);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, c);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_err);
	c->curl_err[0] = '\0';
	if (c->ca_file) {
		/* that CA alone: not also the system's folder (/etc/ssl/certs), which
		 * GnuTLS would parse into every handshake's trust list (MBs) */
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	if (c->abort_cb) {
		curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, xfer_cb);
		curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
	}
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	else if (strcmp(method, "POST") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
}

static int request_once(struct drv_http_client *c, const char *method, const char *path,
			const char *ctype, const void *body, size_t len, long timeout_ms,
			struct drv_http_reply *out, bool *noconn);

/* The origin ("https://host:port") of a 307's Location, if the client may
 * follow it: same scheme as now. */
static size_t follow_origin(const struct drv_http_client *c, const char *loc)
{
	const char *sep = strstr(loc, "://"), *end;
	size_t scheme = sep ? (size_t)(sep - loc) : 0;

	if (!sep || strncmp(loc, c->base, scheme + 3) != 0)
		return 0;
	end = strchr(sep + 3, '/');
	return end ? (size_t)(end - loc) : strlen(loc);
}

static bool no_leader(const struct drv_http_reply *r)
{
	return r->status == 503 && r->body && strstr(r->body, "\"no_leader\"");
}

int drv_http_request(struct drv_http_client *c, const char *method, const char *path,
		     const char *ctype, const void *body, size_t len, long timeout_ms,
		     struct drv_http_reply *out)
{
	int tried = 1, redirects = 0, rc;

	for (;;) {
		bool noconn = false;
		char loc[1024];

		rc = request_once(c, method, path, ctype, body, len, timeout_ms, out, &noconn);
		if (c->nbases > 1 && tried < c->nbases &&
		    ((rc < 0 && noconn) || (rc == 0 && no_leader(out)))) {
			c->cur = (c->cur + 1) % c->nbases;
			use_base(c, c->bases[c->cur], strlen(c->bases[c->cur]));
			tried++;
			continue;
		}
		if (rc == 0 && out->status == 307 && redirects < 3 &&
		    drv_http_reply_header(out, "Location", loc, sizeof(loc))) {
			size_t n = follow_origin(c, loc);

			if (n) {
				use_base(c, loc, n);
				redirects++;
				continue;
			}
		}
		return rc;
	}
}

static int request_once(struct drv_http_client *c, const char *method, const char *path,
			const char *ctype, const void *body, size_t len, long timeout_ms,
			struct drv_http_reply *out, bool *noconn)
{
	struct curl_slist *h = NULL;
	struct drv_dynbuf b = DRV_DYNBUF_INIT(DRV_HTTP_MAX_REPLY);
	struct drv_dynbuf hb = DRV_DYNBUF_INIT(MAX_HEADERS);
	CURLcode cc;
	int rc = 0;

	drv_http_reply_release(out);
	rc = request_begin(c);
	if (rc < 0)
		goto out;
	if (drv_http_plain_wanted(c)) {
		rc = drv_http_plain_request(c, method, path,
					    body || strcmp(method, "GET") ? ctype : NULL, body,
					    body ? len : 0, timeout_ms, out, noconn);
		goto out;
	}
	if ((rc = need_curl(c)) < 0)
		goto out;
	h = make_headers(c, body || strcmp(method, "GET") ? ctype : NULL, NULL, body ? len : 0);
	setup(c, method, path, timeout_ms, h);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &hb);
	cc = curl_easy_perform(c->curl);
	*noconn = cc == CURLE_COULDNT_CONNECT;
	if (cc != CURLE_OK) {
		rc = transport_error(c, cc);
		drv_dynbuf_release(&b);
		drv_dynbuf_release(&hb);
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &out->status);
	out->body = drv_dynbuf_take(&b, &out->len);
	out->headers = hb.len ? drv_dynbuf_take(&hb, NULL) : NULL;
	drv_dynbuf_release(&hb);
	c->err[0] = '\0';
out:
	request_end(c, rc);
	curl_slist_free_all(h);
	return rc;
}

int drv_http_json(struct drv_http_client *c, const char *method, const char *path,
		  json_t *body, long timeout_ms, long *status, json_t **reply)
{
	struct drv_http_reply r;
	char *s = NULL;
	int rc;

	drv_http_reply_init(&r);
	if (reply)
		*reply = NULL;
	if (body)
		s = json_dumps(body, JSON_COMPACT);
	rc = drv_http_request(c, method, path, "application/json", s, s ? strlen(s) : 0,
			      timeout_ms, &r);
	free(s);
	if (rc < 0)
		goto out;
	if (status)
		*status = r.status;
	if (reply && r.len)
		*reply = json_loadb(r.body, r.len, 0, NULL);
out:
	drv_http_reply_release(&r);
	return rc;
}

const char *drv_http_error_message(const struct drv_http_reply *r, char *buf, size_t bufsz)
{
	json_t *j = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *m = NULL;
	json_t *e = j ? json_object_get(j, "error") : NULL;

	if (json_is_object(e))
		m = drv_json_str(e, "message");
	else if (json_is_string(e))
		m = json_string_value(e);
	if (m)
		snprintf(buf, bufsz, "%s", m);
	else if (r->len)
		snprintf(buf, bufsz, "HTTP %ld: %.*s", r->status, (int)DRV_MIN(r->len, 200),
			 r->body);
	else
		snprintf(buf, bufsz, "HTTP %ld", r->status);
	json_decref(j);
	return buf;
}

/* --- Server-Sent Events ------------------------------------------------- */

struct sse {
	struct drv_dynbuf line; /* partial line */
	struct drv_dynbuf data;
	char event[64];
	char id[64];
	int (*fn)(const char *event, const char *id, const char *data, void *cls);
	void *cls;
	bool stopped;
	long status;
	CURL *curl;
};

static void sse_line(struct sse *s, char *l, size_t n)
{
	char *v;

	if (n && l[n - 1] == '\r')
		l[--n] = '\0';
	if (n == 0) {
		if (s->data.len || s->event[0]) {
			if (s->data.len && s->data.buf[s->data.len - 1] == '\n')
				drv_dynbuf_trim(&s->data, 1);
			if (s->fn(s->event[0] ? s->event : "message", s->id,
				  drv_dynbuf_str(&s->data), s->cls) != 0)
				s->stopped = true;
		}
		drv_dynbuf_reset(&s->data);
		s->event[0] = '\0';
		return;
	}
	if (l[0] == ':')
		return;
	v = strchr(l, ':');
	if (v) {
		*v++ = '\0';
		if (*v == ' ')
			v++;
	} else {
		v = l + n;
	}
	if (strcmp(l, "data") == 0) {
		drv_dynbuf_addf(&s->data, "%s\n", v); /* past the cap: dropped */
	} else if (strcmp(l, "event") == 0) {
		snprintf(s->event, sizeof(s->event), "%s", v);
	} else if (strcmp(l, "id") == 0) {
		snprintf(s->id, sizeof(s->id), "%s", v);
	}
}

static size_t sse_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct sse *s = ud;
	size_t n = size * nmemb;

	if (s->status == 0)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200) {
		return add(&s->data, ptr, n); /* keep the error body */
	}
	for (size_t i = 0; i < n && !s->stopped; i++) {
		if (ptr[i] == '\n') {
			if (!s->line.buf)
				drv_dynbuf_add(&s->line, "", 0);
			sse_line(s, s->line.buf, s->line.len);
			drv_dynbuf_reset(&s->line);
		} else if (drv_dynbuf_add(&s->line, ptr + i, 1) < 0) {
			return 0;
		}
	}
	return s->stopped ? 0 : n;
}

int drv_http_sse(struct drv_http_client *c, const char *path, long timeout_ms,
		 int (*fn)(const char *event, const char *id, const char *data, void *cls),
		 void *cls)
{
	struct curl_slist *h;
	struct sse s;
	CURLcode cc;
	int rc = 0;

	if ((rc = need_curl(c)) < 0)
		return rc;
	h = make_headers(c, NULL, "text/event-stream", 0);
	memset(&s, 0, sizeof(s));
	drv_dynbuf_init(&s.line, MAX_SSE_LINE);
	drv_dynbuf_init(&s.data, DRV_HTTP_MAX_REPLY);
	s.fn = fn;
	s.cls = cls;
	s.curl = c->curl;
	setup(c, "GET", path, timeout_ms, h);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &s);
	cc = curl_easy_perform(c->curl);
	if (s.stopped) {
		rc = 0;
	} else if (cc != CURLE_OK && s.status == 0) {
		rc = transport_error(c, cc);
	} else {
		if (s.status == 0)
			curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &s.status);
		if (s.status != 200) {
			struct drv_http_reply r = { .status = s.status, .body = s.data.buf,
						    .len = s.data.len };
			char msg[400];

			snprintf(c->err, sizeof(c->err), "%s",
				 drv_http_error_message(&r, msg, sizeof(msg)));
			rc = DRV_EIO;
		} else if (cc == CURLE_OPERATION_TIMEDOUT) {
			rc = 0;  /* the stream ran for the time asked */
		} else if (cc != CURLE_OK) {
			rc = transport_error(c, cc);
		}
	}
	drv_dynbuf_release(&s.line);
	drv_dynbuf_release(&s.data);
	curl_slist_free_all(h);
	return rc;
}

char *drv_http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *o = drv_malloc(n * 3 + 1), *p = o;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			*p++ = (char)ch;
		} else {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		}
	}
	*p = '\0';
	return o;
}
