/*
 * http_ws.c: WebSocket (RFC 6455) over libmicrohttpd's upgrade: the
 * handshake (Sec-WebSocket-Accept from the client's key, a subprotocol
 * the client offered) and the framing of an upgraded connection, server
 * side: frames in are masked, frames out are not; pings are answered,
 * fragments joined. A session runs on a thread of its own (the route's
 * handler must not wait), which libmicrohttpd hands the socket once the
 * 101 answer is out; drv_http_server_stop waits for running sessions.
 */
#include "drover/fsutil.h"
#include "drover/clock.h"
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <poll.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_MAX_MESSAGE (16u << 20)
#define WS_TICK_MS 200

struct ws_start {
	struct drv_http_server *srv;
	drv_ws_fn fn;
	void *cls;
	void (*free_fn)(void *cls);
};

struct ws_run {
	struct ws_start st;
	struct drv_ws ws;
};

/* Whether list (a header's comma-separated tokens) has tok. */
static bool has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok);

	while (list && *list) {
		while (*list == ' ' || *list == ',' || *list == '\t')
			list++;
		if (strncasecmp(list, tok, n) == 0 &&
		    (list[n] == '\0' || list[n] == ',' || list[n] == ' ' || list[n] == '\t'))
			return true;
		list = strchr(list, ',');
	}
	return false;
}

bool drv_http_req_is_websocket(const struct drv_http_req *r)
{
	const char *v = drv_http_req_header(r, "Sec-WebSocket-Version");

	return has_token(drv_http_req_header(r, "Upgrade"), "websocket") &&
	       drv_http_req_header(r, "Sec-WebSocket-Key") && v && strcmp(v, "13") == 0;
}

bool drv_http_req_ws_offers(const struct drv_http_req *r, const char *proto)
{
	return has_token(drv_http_req_header(r, "Sec-WebSocket-Protocol"), proto);
}

static void *ws_main(void *arg)
{
	struct ws_run *run = arg;
	struct drv_http_server *s = run->st.srv;
	int fl = fcntl(run->ws.fd, F_GETFL);

	if (fl >= 0)
		fcntl(run->ws.fd, F_SETFL, fl & ~O_NONBLOCK);
	run->st.fn(run->st.cls, &run->ws);
	if (run->st.free_fn)
		run->st.free_fn(run->st.cls);
	MHD_upgrade_action(run->ws.urh, MHD_UPGRADE_ACTION_CLOSE);
	drv_free(run->ws.in);
	drv_free(run);
	pthread_mutex_lock(&s->wsmu);
	s->nws--;
	pthread_mutex_unlock(&s->wsmu);
	return NULL;
}

static void upgrade_cb(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra,
		       size_t nextra, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct ws_start *st = cls;
	struct ws_run *run = drv_calloc(1, sizeof(*run));
	pthread_attr_t attr;
	pthread_t th;

	(void)conn;
	(void)req_cls;
	run->st = *st;
	drv_free(st);
	run->ws = (struct drv_ws){ .srv = run->st.srv, .fd = sock, .urh = urh };
	if (nextra) {
		run->ws.in = drv_malloc(nextra);
		memcpy(run->ws.in, extra, nextra);
		run->ws.nin = run->ws.incap = nextra;
	}
	pthread_mutex_lock(&run->st.srv->wsmu);
	run->st.srv->nws++;
	pthread_mutex_unlock(&run->st.srv->wsmu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, ws_main, run) != 0) {
		run->ws.closed = true;   /* the session sees a closed peer at once */
		ws_main(run);
	}
	pthread_attr_destroy(&attr);
}

int drv_http_resp_websocket(struct drv_http_req *req, struct drv_http_resp *resp, const char *proto,
			    drv_ws_fn fn, void *cls, void (*free_fn)(void *cls))
{
	const char *key = drv_http_req_header(req, "Sec-WebSocket-Key");
	unsigned char sha[20];
	char buf[128];
	char *acc;

	if (!drv_http_req_is_websocket(req))
		return DRV_EINVAL;
	snprintf(buf, sizeof(buf), "%.60s%s", key, WS_GUID);
	gnutls_hash_fast(GNUTLS_DIG_SHA1, buf, strlen(buf), sha);
	acc = drv_base64_encode(sha, sizeof(sha));
	resp->status = 101;
	resp->ws = drv_calloc(1, sizeof(struct ws_start));
	*(struct ws_start *)resp->ws = (struct ws_start){ req->srv, fn, cls, free_fn };
	drv_http_resp_header(resp, "Upgrade", "websocket");
	drv_http_resp_header(resp, "Connection", "Upgrade");
	drv_http_resp_header(resp, "Sec-WebSocket-Accept", acc);
	if (proto)
		drv_http_resp_header(resp, "Sec-WebSocket-Protocol", proto);
	drv_free(acc);
	return 0;
}

struct MHD_Response *http_ws_response(struct drv_http_resp *resp)
{
	struct MHD_Response *mr = MHD_create_response_for_upgrade(upgrade_cb, resp->ws);

	if (mr)
		resp->ws = NULL;   /* upgrade_cb's now */
	return mr;
}

void http_ws_drop(struct drv_http_resp *resp)
{
	struct ws_start *st = resp->ws;

	if (st && st->free_fn)
		st->free_fn(st->cls);
	drv_free(st);
	resp->ws = NULL;
}

void http_ws_wait(struct drv_http_server *s, int64_t max_ms)
{
	int64_t until = drv_mono_ms() + max_ms;

	pthread_mutex_lock(&s->wsmu);
	s->ws_stopping = true;
	while (s->nws > 0 && drv_mono_ms() < until) {
		pthread_mutex_unlock(&s->wsmu);
		usleep(20 * 1000);
		pthread_mutex_lock(&s->wsmu);
	}
	pthread_mutex_unlock(&s->wsmu);
}

static bool stopping(struct drv_ws *w)
{
	bool st;

	if (!w->srv)
		return false;
	pthread_mutex_lock(&w->srv->wsmu);
	st = w->srv->ws_stopping;
	pthread_mutex_unlock(&w->srv->wsmu);
	return st;
}

/* Until w->in holds n bytes: 0; 1 peer gone; DRV_ETIMEDOUT; DRV_EIO. */
static int fill(struct drv_ws *w, size_t n, int64_t until)
{
	if (w->curl)
		return http_wsc_fill(w, n, until);
	while (w->nin < n) {
		struct pollfd p = { w->fd, POLLIN, 0 };
		int64_t left = until < 0 ? WS_TICK_MS : until - drv_mono_ms();
		ssize_t got;
		int rc;

		if (stopping(w))
			return DRV_EIO;
		if (left <= 0)
			return DRV_ETIMEDOUT;
		rc = poll(&p, 1, (int)(left < WS_TICK_MS ? left : WS_TICK_MS));
		if (rc < 0 && errno != EINTR)
			return DRV_EIO;
		if (rc <= 0)
			continue;
		if (w->incap < w->nin + 65536)
			DRV_GROW(w->in, w->nin + 65536, w->incap);
		got = read(w->fd, w->in + w->nin, w->incap - w->nin);
		if (got == 0)
			return 1;
		if (got < 0 && errno != EINTR && errno != EAGAIN)
			return DRV_EIO;
		if (got > 0)
			w->nin += (size_t)got;
	}
	return 0;
}

int drv_ws_fd(const struct drv_ws *w)
{
	return w->fd;
}

bool drv_ws_buffered(const struct drv_ws *w)
{
	return w->nin > 0;
}

static void take(struct drv_ws *w, size_t n)
{
	memmove(w->in, w->in + n, w->nin - n);
	w->nin -= n;
}

static int write_all(struct drv_ws *w, const unsigned char *p, size_t n)
{
	if (w->curl)
		return http_wsc_write(w, p, n);
	return drv_fd_write_all(w->fd, p, n);
	return 0;
}

int drv_ws_send_channel(struct drv_ws *w, int channel, const void *data, size_t len)
{
	char *m = drv_malloc(len + 1);
	int rc;

	m[0] = (char)channel;
	if (len)
		memcpy(m + 1, data, len);
	rc = drv_ws_send(w, DRV_WS_BINARY, m, len + 1);
	drv_free(m);
	return rc;
}

int drv_ws_send(struct drv_ws *w, int opcode, const void *data, size_t len)
{
	unsigned char h[10];
	size_t hn = 2;

	h[0] = (unsigned char)(0x80 | (opcode & 0x0f));
	if (len < 126) {
		h[1] = (unsigned char)len;
	} else if (len <= 0xffff) {
		h[1] = 126;
		h[2] = (unsigned char)(len >> 8);
		h[3] = (unsigned char)len;
		hn = 4;
	} else {
		h[1] = 127;
		for (int i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
		hn = 10;
	}
	if (w->curl)   /* a client's frames are masked (RFC 6455 5.3) */
		return http_wsc_send_masked(w, h, hn, data, len);
	if (write_all(w, h, hn) < 0 || write_all(w, data, len) < 0)
		return DRV_EIO;
	return 0;
}

int drv_ws_close(struct drv_ws *w, int code, const char *reason)
{
	unsigned char b[125];
	size_t n = reason ? strlen(reason) : 0;

	if (w->closed)
		return 0;
	if (n > sizeof(b) - 2)
		n = sizeof(b) - 2;
	b[0] = (unsigned char)(code >> 8);
	b[1] = (unsigned char)code;
	if (n)
		memcpy(b + 2, reason, n);
	w->closed = true;
	return drv_ws_send(w, DRV_WS_CLOSE, b, n + 2);
}

/* One frame: its opcode, fin bit and payload (unmasked), into *data. */
static int frame(struct drv_ws *w, int *op, bool *fin, unsigned char **data, size_t *len,
		 int64_t until)
{
	size_t hn = 2, n;
	unsigned char *m;
	int rc;

	if ((rc = fill(w, 2, until)) != 0)
		return rc;
	*op = w->in[0] & 0x0f;
	*fin = (w->in[0] & 0x80) != 0;
	n = w->in[1] & 0x7f;
	if (n == 126)
		hn += 2;
	else if (n == 127)
		hn += 8;
	hn += (w->in[1] & 0x80) ? 4 : 0;
	if ((rc = fill(w, hn, until)) != 0)
		return rc;
	if (n == 126) {
		n = (size_t)w->in[2] << 8 | w->in[3];
	} else if (n == 127) {
		n = 0;
		for (int i = 0; i < 8; i++)
			n = n << 8 | w->in[2 + i];
	}
	if (n > WS_MAX_MESSAGE)
		return DRV_ELIMIT;
	if ((rc = fill(w, hn + n, until)) != 0)
		return rc;
	m = (w->in[1] & 0x80) ? w->in + hn - 4 : NULL;
	*data = drv_malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		(*data)[i] = w->in[hn + i] ^ (m ? m[i % 4] : 0);
	(*data)[n] = 0;
	*len = n;
	take(w, hn + n);
	return 0;
}

int drv_ws_read(struct drv_ws *w, int *opcode, unsigned char **data, size_t *len, int timeout_ms)
{
	int64_t until = timeout_ms < 0 ? -1 : drv_mono_ms() + timeout_ms;
	unsigned char *msg = NULL;
	size_t mlen = 0;
	int first = 0;

	*data = NULL;
	*len = 0;
	if (w->closed)
		return 1;
	for (;;) {
		unsigned char *p;
		size_t n;
		bool fin;
		int op, rc = frame(w, &op, &fin, &p, &n, until);

		if (rc != 0) {
			drv_free(msg);
			return rc;
		}
		if (op == DRV_WS_PING) {
			rc = drv_ws_send(w, DRV_WS_PONG, p, n);
			drv_free(p);
			if (rc < 0) {
				drv_free(msg);
				return rc;
			}
			continue;
		}
		if (op == DRV_WS_PONG) {
			drv_free(p);
			continue;
		}
		if (op == DRV_WS_CLOSE) {
			drv_free(p);
			drv_free(msg);
			drv_ws_close(w, 1000, NULL);
			return 1;
		}
		if (op != 0)
			first = op;
		if (mlen + n > WS_MAX_MESSAGE) {
			drv_free(p);
			drv_free(msg);
			return DRV_ELIMIT;
		}
		msg = drv_realloc(msg, mlen + n + 1);
		memcpy(msg + mlen, p, n);
		mlen += n;
		msg[mlen] = 0;
		drv_free(p);
		if (fin) {
			*opcode = first;
			*data = msg;
			*len = mlen;
			return 0;
		}
	}
}

/* A switch to another protocol than WebSocket (kubectl's plain SPDY, the
 * agent's byte pipe): the same session thread, the bytes left raw. */
int drv_http_resp_upgrade(struct drv_http_req *req, struct drv_http_resp *resp, const char *proto,
			  drv_ws_fn fn, void *cls, void (*free_fn)(void *cls))
{
	resp->status = 101;
	resp->ws = drv_calloc(1, sizeof(struct ws_start));
	*(struct ws_start *)resp->ws = (struct ws_start){ req->srv, fn, cls, free_fn };
	drv_http_resp_header(resp, "Upgrade", proto);
	drv_http_resp_header(resp, "Connection", "Upgrade");
	return 0;
}

ssize_t drv_ws_read_raw(struct drv_ws *w, void *buf, size_t n)
{
	int rc = fill(w, 1, -1);

	if (rc != 0)
		return rc == 1 ? 0 : rc;
	if (n > w->nin)
		n = w->nin;
	memcpy(buf, w->in, n);
	take(w, n);
	return (ssize_t)n;
}

int drv_ws_write_raw(struct drv_ws *w, const void *data, size_t len)
{
	return write_all(w, data, len);
}
