/*
 * http_wsc.c: the client side of a WebSocket (RFC 6455): libcurl's
 * CONNECT_ONLY opens the connection (TCP, and TLS for https:// with the
 * same trust as drv_http_client), then the upgrade request and the frames
 * go through curl_easy_send/recv, so one struct drv_ws (http_ws.c's
 * framing) serves a server's session and a client's. The controller
 * relays kubectl exec to an agent with it, and `drover exec` talks to the
 * controller with it. Not thread-safe: one thread per connection.
 */
#include "drover/clock.h"
#include "http_int.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#define WSC_TICK_MS 200
#define WSC_HEAD_MAX (64u << 10)
#define WSC_CONNECT_MS 10000

static int wait_sock(struct drv_ws *w, short ev, int ms)
{
	struct pollfd p = { w->fd, ev, 0 };

	return poll(&p, 1, ms) < 0 && errno != EINTR ? DRV_EIO : 0;
}

int http_wsc_fill(struct drv_ws *w, size_t n, int64_t until)
{
	/* read first, poll after: TLS may hold decrypted bytes the socket
	 * no longer shows */
	while (w->nin < n) {
		size_t got = 0;
		CURLcode cc;
		int64_t left;

		if (w->incap < w->nin + 65536)
			DRV_GROW(w->in, w->nin + 65536, w->incap);
		cc = curl_easy_recv(w->curl, w->in + w->nin, w->incap - w->nin, &got);
		if (cc == CURLE_OK && got == 0)
			return 1;
		if (cc == CURLE_OK) {
			w->nin += got;
			continue;
		}
		if (cc != CURLE_AGAIN)
			return cc == CURLE_UNSUPPORTED_PROTOCOL ? 1 : DRV_EIO;
		left = until < 0 ? WSC_TICK_MS : until - drv_mono_ms();
		if (left <= 0)
			return DRV_ETIMEDOUT;
		if (wait_sock(w, POLLIN, (int)(left < WSC_TICK_MS ? left : WSC_TICK_MS)) < 0)
			return DRV_EIO;
	}
	return 0;
}

int http_wsc_write(struct drv_ws *w, const unsigned char *p, size_t n)
{
	while (n) {
		size_t k = 0;
		CURLcode cc = curl_easy_send(w->curl, p, n, &k);

		if (cc == CURLE_AGAIN) {
			if (wait_sock(w, POLLOUT, WSC_TICK_MS) < 0)
				return DRV_EIO;
			continue;
		}
		if (cc != CURLE_OK)
			return DRV_EIO;
		p += k;
		n -= k;
	}
	return 0;
}

int http_wsc_send_masked(struct drv_ws *w, const unsigned char *h, size_t hn, const void *data,
			 size_t len)
{
	unsigned char *f = drv_malloc(hn + 4 + len), key[4];
	const unsigned char *d = data;
	int rc;

	gnutls_rnd(GNUTLS_RND_NONCE, key, sizeof(key));
	memcpy(f, h, hn);
	f[1] |= 0x80;
	memcpy(f + hn, key, 4);
	for (size_t i = 0; i < len; i++)
		f[hn + 4 + i] = d[i] ^ key[i % 4];
	rc = http_wsc_write(w, f, hn + 4 + len);
	drv_free(f);
	return rc;
}

/* "host[:port]" of url (owned). */
static char *url_host(const char *url)
{
	const char *p = strstr(url, "://");
	size_t n;

	p = p ? p + 3 : url;
	n = strcspn(p, "/,");
	return drv_strndup(p, n);
}

/* Until the end of the answer's head: its length, or an error. */
static int read_head(struct drv_ws *w, size_t *hlen, int64_t until)
{
	for (;;) {
		unsigned char *e = w->nin >= 4 ? memmem(w->in, w->nin, "\r\n\r\n", 4) : NULL;
		int rc;

		if (e) {
			*hlen = (size_t)(e - w->in) + 4;
			return 0;
		}
		if (w->nin > WSC_HEAD_MAX)
			return DRV_ELIMIT;
		if ((rc = http_wsc_fill(w, w->nin + 1, until)) != 0)
			return rc;
	}
}

/* The value of header name in head (a copy in buf), or NULL. */
static const char *head_value(const char *head, const char *name, char *buf, size_t n)
{
	size_t nl = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2;

		if (strncasecmp(v, name, nl) == 0 && v[nl] == ':') {
			size_t k;

			v += nl + 1;
			v += strspn(v, " \t");
			k = strcspn(v, "\r\n");
			snprintf(buf, n, "%.*s", (int)k, v);
			return buf;
		}
	}
	return NULL;
}

/* A refusal: its body (within a few seconds) and its message in err. */
static void refusal(struct drv_ws *w, const char *head, size_t hlen, long status, char *err,
		    size_t errn)
{
	struct drv_http_reply r = { .status = status };
	char cl[32], m[1024];
	size_t want = head_value(head, "Content-Length", cl, sizeof(cl)) ? strtoul(cl, NULL, 10)
									 : 0;

	if (want > WSC_HEAD_MAX)
		want = WSC_HEAD_MAX;
	(void)http_wsc_fill(w, hlen + want, drv_mono_ms() + 5000);
	r.len = w->nin > hlen ? w->nin - hlen : 0;
	r.body = drv_strndup((const char *)w->in + hlen, r.len);
	snprintf(err, errn, "%s", drv_http_error_message(&r, m, sizeof(m)));
	drv_free(r.body);
}

static int handshake(struct drv_ws *w, const char *base, const char *path, const char *token,
		     const char *proto, long *status, char *err, size_t errn)
{
	unsigned char nonce[16], sha[20];
	char *key, *host = url_host(base), *req, buf[256], *head;
	const char *acc;
	size_t hlen = 0, n = strlen(path) + strlen(host) + (token ? strlen(token) : 0) + 512;
	int rc;

	gnutls_rnd(GNUTLS_RND_NONCE, nonce, sizeof(nonce));
	key = drv_base64_encode(nonce, sizeof(nonce));
	req = drv_malloc(n);
	snprintf(req, n, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
		 "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n"
		 "Sec-WebSocket-Protocol: %s\r\n%s%s%s\r\n", path, host, key, proto,
		 token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
	rc = http_wsc_write(w, (unsigned char *)req, strlen(req));
	drv_free(req);
	if (rc == 0)
		rc = read_head(w, &hlen, drv_mono_ms() + 60000);
	if (rc != 0) {
		snprintf(err, errn, "%s: no answer to the WebSocket request (%s)", host,
			 drv_strerror(rc));
		goto out;
	}
	head = drv_strndup((const char *)w->in, hlen);
	*status = strncmp(head, "HTTP/1.", 7) == 0 ? strtol(head + 9, NULL, 10) : 0;
	if (*status != 101) {
		refusal(w, head, hlen, *status, err, errn);
		rc = DRV_EINVAL;
	} else {
		snprintf(buf, sizeof(buf), "%.60s%s", key, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
		gnutls_hash_fast(GNUTLS_DIG_SHA1, buf, strlen(buf), sha);
		drv_free(key);
		key = drv_base64_encode(sha, sizeof(sha));
		acc = head_value(head, "Sec-WebSocket-Accept", buf, sizeof(buf));
		if (!acc || strcmp(acc, key) != 0) {
			snprintf(err, errn, "%s: the WebSocket answer's Sec-WebSocket-Accept is "
				 "wrong", host);
			rc = DRV_EIO;
		} else {
			memmove(w->in, w->in + hlen, w->nin - hlen);
			w->nin -= hlen;
		}
	}
	drv_free(head);
out:
	drv_free(key);
	drv_free(host);
	return rc;
}

int drv_ws_connect(const char *base, const char *path, const char *token, const char *ca_file,
		   const char *proto, struct drv_ws **out, long *status, char *err, size_t errn)
{
	struct drv_ws *w = drv_calloc(1, sizeof(*w));
	char cerr[CURL_ERROR_SIZE] = "", *url = drv_strndup(base, strcspn(base, ","));
	curl_socket_t sock = CURL_SOCKET_BAD;
	CURL *e = curl_easy_init();
	CURLcode cc;
	int rc;

	*out = NULL;
	*status = 0;
	w->curl = e;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)WSC_CONNECT_MS);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
	if (ca_file) {
		curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	cc = curl_easy_perform(e);
	if (cc == CURLE_OK)
		cc = curl_easy_getinfo(e, CURLINFO_ACTIVESOCKET, &sock);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
	if (cc != CURLE_OK || sock == CURL_SOCKET_BAD) {
		snprintf(err, errn, "cannot reach %s: %s", url, cerr[0] ? cerr
			 : curl_easy_strerror(cc));
		rc = DRV_EIO;
		goto fail;
	}
	w->fd = (int)sock;
	if ((rc = handshake(w, url, path, token, proto, status, err, errn)) != 0)
		goto fail;
	*status = 101;
	drv_free(url);
	*out = w;
	return 0;
fail:
	drv_free(url);
	drv_ws_free(w);
	return rc;
}

void drv_ws_free(struct drv_ws *w)
{
	if (!w)
		return;
	if (w->curl)
		curl_easy_cleanup(w->curl);
	drv_free(w->in);
	drv_free(w);
}
