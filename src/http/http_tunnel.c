/*
 * http_tunnel.c: a byte pipe through an HTTP upgrade, client side
 * (include/drover/http.h): libcurl connects (TLS with the given CA for
 * https) and is then left the socket alone (CONNECT_ONLY); the request
 * line and headers are written by hand, the 101 read back, and what
 * follows is the peer's bytes. The controller relays kubectl port-forward
 * through its agents so (src/server/kube_forward.c, the agent's
 * GET /v1/tasks/ID/portforward).
 */
#include "drover/clock.h"
#include "drover/dynbuf.h"
#include "drover/http.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#define HEAD_MAX (64u << 10)

struct drv_http_tunnel {
	CURL *curl;
	int fd;
	bool tls;
	unsigned char *pre;   /* bytes that came after the 101's headers */
	size_t npre;
};

static int wait_fd(int fd, short ev, int64_t until)
{
	struct pollfd p = { fd, ev, 0 };
	int64_t left = until - drv_mono_ms();

	if (left <= 0)
		return DRV_ETIMEDOUT;
	return poll(&p, 1, (int)left) > 0 ? 0 : DRV_ETIMEDOUT;
}

static int send_until(struct drv_http_tunnel *t, const void *p, size_t n, int64_t until)
{
	while (n) {
		size_t k = 0;
		CURLcode cc = curl_easy_send(t->curl, p, n, &k);

		if (cc == CURLE_AGAIN) {
			if (wait_fd(t->fd, POLLOUT, until) < 0)
				return DRV_ETIMEDOUT;
			continue;
		}
		if (cc != CURLE_OK)
			return DRV_EIO;
		p = (const char *)p + k;
		n -= k;
	}
	return 0;
}

/* Up to n bytes, waiting until `until`: their count, 0 at the peer's end. */
static ssize_t recv_until(struct drv_http_tunnel *t, void *p, size_t n, int64_t until)
{
	for (;;) {
		ssize_t k = drv_http_tunnel_recv(t, p, n);

		if (k != DRV_ETIMEDOUT)
			return k;
		if (wait_fd(t->fd, POLLIN, until) < 0)
			return DRV_ETIMEDOUT;
	}
}

static long content_length(const char *head)
{
	const char *p = head;

	while ((p = strchr(p, '\n'))) {
		p++;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			return strtol(p + 15, NULL, 10);
	}
	return -1;
}

/* The reply's head (status line and headers) into *head; the bytes after it
 * into t->pre; the status, or <0. */
static long read_head(struct drv_http_tunnel *t, struct drv_dynbuf *b, int64_t until,
		      size_t *headlen)
{
	char buf[8192], *e;

	while (!(e = b->len ? strstr(b->buf, "\r\n\r\n") : NULL)) {
		ssize_t k = recv_until(t, buf, sizeof(buf), until);

		if (k <= 0 || drv_dynbuf_add(b, buf, (size_t)k) < 0)
			return k == DRV_ETIMEDOUT ? DRV_ETIMEDOUT : DRV_EIO;
	}
	*headlen = (size_t)(e + 4 - b->buf);
	if (strncmp(b->buf, "HTTP/1.", 7) != 0 || b->len < 12)
		return DRV_EPARSE;
	return strtol(b->buf + 9, NULL, 10);
}

/* A refusal's body (at most its Content-Length, or until the end) into msg. */
static void refusal(struct drv_http_tunnel *t, struct drv_dynbuf *b, size_t headlen, long status,
		    int64_t until, char *msg, size_t msgsz)
{
	long want = content_length(b->buf);
	struct drv_http_reply r = { .status = status };
	char buf[8192];

	while (want < 0 || b->len - headlen < (size_t)want) {
		ssize_t k = recv_until(t, buf, sizeof(buf), until);

		if (k <= 0 || drv_dynbuf_add(b, buf, (size_t)k) < 0)
			break;
	}
	r.body = b->buf + headlen;
	r.len = b->len - headlen;
	if (want >= 0 && r.len > (size_t)want)
		r.len = (size_t)want;
	drv_http_error_message(&r, msg, msgsz);
}

int drv_http_tunnel_open(const char *base, const char *token, const char *ca_file,
			 const char *path, const char *proto, long timeout_ms,
			 struct drv_http_tunnel **out, char *msg, size_t msgsz)
{
	struct drv_http_tunnel *t = drv_calloc(1, sizeof(*t));
	int64_t until = drv_mono_ms() + timeout_ms;
	size_t ul = strlen(base) + strlen(path) + 1;
	char cerr[CURL_ERROR_SIZE] = "", *url = drv_malloc(ul);
	const char *host = strstr(base, "://") ? strstr(base, "://") + 3 : base;
	struct drv_dynbuf b;
	curl_socket_t sock = CURL_SOCKET_BAD;
	size_t headlen = 0;
	long status;
	int rc;
	CURLcode cc;

	*out = NULL;
	drv_dynbuf_init(&b, HEAD_MAX);
	snprintf(url, ul, "%s%s", base, path);
	t->tls = strncasecmp(base, "https:", 6) == 0;
	t->curl = curl_easy_init();
	curl_easy_setopt(t->curl, CURLOPT_URL, url);
	curl_easy_setopt(t->curl, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(t->curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, cerr);
	if (ca_file) {
		curl_easy_setopt(t->curl, CURLOPT_CAINFO, ca_file);
		curl_easy_setopt(t->curl, CURLOPT_CAPATH, NULL);
	}
	if ((cc = curl_easy_perform(t->curl)) != CURLE_OK ||
	    curl_easy_getinfo(t->curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK ||
	    sock == CURL_SOCKET_BAD) {
		snprintf(msg, msgsz, "cannot reach %s: %s", base,
			 cerr[0] ? cerr : curl_easy_strerror(cc));
		rc = DRV_ECONN;
		goto out;
	}
	t->fd = (int)sock;
	{
		size_t hl = strcspn(host, "/");
		size_t rl = strlen(path) + hl + (token ? strlen(token) : 0) + strlen(proto) + 160;
		char *req = drv_malloc(rl);
		int n = snprintf(req, rl, "GET %s HTTP/1.1\r\nHost: %.*s\r\n%s%s%sConnection: Upgrade\r\n"
				"Upgrade: %s\r\n\r\n", path, (int)hl, host,
				token ? "Authorization: Bearer " : "", token ? token : "",
				token ? "\r\n" : "", proto);

		rc = send_until(t, req, (size_t)n, until);
		drv_free(req);
	}
	if (rc < 0 || (status = read_head(t, &b, until, &headlen)) < 0) {
		snprintf(msg, msgsz, "%s: no answer to the upgrade%s", base,
			 rc == DRV_ETIMEDOUT ? " in time" : "");
		rc = DRV_ECONN;
		goto out;
	}
	if (status != 101) {
		refusal(t, &b, headlen, status, until, msg, msgsz);
		rc = DRV_ESTATE;
		goto out;
	}
	if (b.len > headlen) {
		t->npre = b.len - headlen;
		t->pre = drv_malloc(t->npre);
		memcpy(t->pre, b.buf + headlen, t->npre);
	}
	*out = t;
	t = NULL;
	rc = 0;
out:
	drv_free(url);
	drv_dynbuf_release(&b);
	drv_http_tunnel_close(t);
	return rc;
}

int drv_http_tunnel_fd(const struct drv_http_tunnel *t)
{
	return t->fd;
}

ssize_t drv_http_tunnel_recv(struct drv_http_tunnel *t, void *buf, size_t n)
{
	size_t k = 0;
	CURLcode cc;

	if (t->npre) {
		k = DRV_MIN(n, t->npre);
		memcpy(buf, t->pre, k);
		memmove(t->pre, t->pre + k, t->npre - k);
		t->npre -= k;
		return (ssize_t)k;
	}
	cc = curl_easy_recv(t->curl, buf, n, &k);
	if (cc == CURLE_AGAIN)
		return DRV_ETIMEDOUT;
	if (cc != CURLE_OK)
		return DRV_EIO;
	return (ssize_t)k;
}

int drv_http_tunnel_send(struct drv_http_tunnel *t, const void *buf, size_t n, long timeout_ms)
{
	return send_until(t, buf, n, drv_mono_ms() + timeout_ms);
}

void drv_http_tunnel_shutdown(struct drv_http_tunnel *t)
{
	if (!t->tls)
		shutdown(t->fd, SHUT_WR);
}

void drv_http_tunnel_close(struct drv_http_tunnel *t)
{
	if (!t)
		return;
	if (t->curl)
		curl_easy_cleanup(t->curl);
	drv_free(t->pre);
	drv_free(t);
}
