/*
 * http_plain.c: one HTTP/1.1 request to an http:// URL over a socket of
 * its own, without libcurl (drv_http_client_plain in include/drover/http.h).
 *
 * Why not libcurl, which STYLE.md would have: a light binary (src/lite/)
 * that links libcurl loads its 30 libraries (GnuTLS, Kerberos, LDAP,
 * libssh2, ...) at every start, and their relocations and page faults are
 * most of what a one-job sbatch process costs (docs/architecture.md,
 * "Light builds"). A request to a controller on plain http needs none of
 * them, so this file does what request_once in http_client.c asks of
 * libcurl there, and nothing more: resolve, connect (every address, within
 * the connect timeout), send the same headers (Host, Accept, bearer
 * token, content type, the extra header, Content-Length; "Expect:
 * 100-continue" for a body of 1 MiB or more, whose bytes then wait for
 * the go-ahead), read the reply (interim 1xx blocks skipped; a body by
 * Content-Length, chunked, or to the end of the connection) within the
 * caps, and say a failure in the words transport_error gives libcurl's.
 * No connection is kept between requests ("Connection: close"): a face
 * makes one or two. https:// stays with libcurl.
 */
#include "http_int.h"

#include "drover/clock.h"
#include "drover/dynbuf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool plain_on;

void drv_http_client_plain(bool on)
{
	plain_on = on;
}

bool drv_http_plain_wanted(const struct drv_http_client *c)
{
	return plain_on && c->base && strncmp(c->base, "http://", 7) == 0;
}

/* As http_client.c's: the headers' cap, and the body size from which the
 * body waits for "100 Continue" (see make_headers there). */
#define MAX_HEADERS (1u << 20)
#define EXPECT_MIN (1u << 20)
/* How often a transfer looks at c->abort_cb (libcurl's progress callback
 * runs about as often). */
#define ABORT_POLL_MS 250
/* A body this small goes in the same send as the head. */
#define SMALL_BODY (64u << 10)

/* What went wrong, before it is said. */
enum plain_err {
	P_OK,
	P_URL,       /* the URL has no host, or a bad port */
	P_RESOLVE,
	P_CONNECT,   /* every address refused (or failed): errno in sys */
	P_TIMEOUT,
	P_ABORT,     /* abort_cb said stop */
	P_SEND,      /* errno in sys */
	P_NOTHING,   /* closed before the first byte of a reply */
	P_RECV,      /* a read failed (errno in sys) before any reply */
	P_WEIRD,     /* not an HTTP reply, or cut short */
	P_BIG,       /* over a cap */
};

struct plain {
	struct drv_http_client *c;
	int fd;
	int64_t deadline;    /* drv_mono_ms; 0: none */
	struct drv_dynbuf in;  /* what came and is not used yet */
	int sys;             /* errno of the failure */
};

static void lower_first(char *s)
{
	if (s[0] && isupper((unsigned char)s[0]) && !isupper((unsigned char)s[1]))
		s[0] = (char)tolower((unsigned char)s[0]);
}

/* The failure in the words transport_error (http_client.c) gives the
 * libcurl error of the same case. */
static int say(struct plain *p, enum plain_err e)
{
	struct drv_http_client *c = p->c;
	char why[640];

	switch (e) {
	case P_URL:
		snprintf(why, sizeof(why), "URL using bad/illegal format or missing URL");
		break;
	case P_RESOLVE:
		snprintf(why, sizeof(why), "cannot resolve the host name");
		break;
	case P_CONNECT:
		snprintf(why, sizeof(why), "%s", p->sys ? strerror(p->sys) : "connection refused");
		lower_first(why);
		break;
	case P_TIMEOUT:
		snprintf(why, sizeof(why), "no reply in time (timed out)");
		break;
	case P_ABORT:
		snprintf(why, sizeof(why), "the request was cut short (stopping)");
		break;
	case P_SEND:
		snprintf(why, sizeof(why), "failed sending data to the peer (%s)", strerror(p->sys));
		break;
	case P_NOTHING:
		snprintf(why, sizeof(why), "the server closed the connection without replying "
			 "(Empty reply from server); if it serves TLS, use an https:// URL");
		break;
	case P_RECV:
		snprintf(why, sizeof(why), "the server closed the connection without replying "
			 "(Recv failure: %s); if it serves TLS, use an https:// URL",
			 strerror(p->sys));
		break;
	case P_WEIRD:
		snprintf(why, sizeof(why), "weird server reply (not HTTP, or cut short); if it "
			 "serves TLS, use an https:// URL");
		break;
	case P_BIG:
		snprintf(why, sizeof(why), "the reply is larger than drover accepts");
		break;
	default:
		snprintf(why, sizeof(why), "failed");
		break;
	}
	snprintf(c->err, sizeof(c->err), "cannot reach drover at %s: %s", c->base, why);
	return e == P_TIMEOUT ? DRV_ETIMEDOUT : DRV_ECONN;
}

/* Waits for events on p->fd until *until (or p->deadline, the sooner; 0:
 * none): P_OK when they came, P_TIMEOUT, P_ABORT. */
static enum plain_err wait_fd(struct plain *p, short events, int64_t until)
{
	struct drv_http_client *c = p->c;

	if (!until || (p->deadline && p->deadline < until))
		until = p->deadline;
	for (;;) {
		struct pollfd pfd = { .fd = p->fd, .events = events };
		int64_t now = drv_mono_ms();
		int ms = -1, n;

		if (c->abort_cb && c->abort_cb(c->abort_cls))
			return P_ABORT;
		if (until) {
			if (now >= until)
				return P_TIMEOUT;
			ms = (int)DRV_MIN(until - now, (int64_t)1 << 30);
		}
		if (c->abort_cb && (ms < 0 || ms > ABORT_POLL_MS))
			ms = ABORT_POLL_MS;
		n = poll(&pfd, 1, ms);
		if (n > 0)
			return P_OK;
		if (n < 0 && errno != EINTR) {
			p->sys = errno;
			return P_RECV;
		}
	}
}

/* "http://HOST[:PORT][/PREFIX]" into its parts; the prefix stays in base. */
static bool split_url(const char *base, char *host, size_t hostsz, char *port, size_t portsz,
		      const char **prefix)
{
	const char *h = base + 7, *end = h + strcspn(h, "/?#"), *colon, *hend;
	size_t n;

	*prefix = end;
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (!hend)
			return false;
		h++;
		colon = hend + 1 < end && hend[1] == ':' ? hend + 1 : NULL;
		if (hend + 1 < end && !colon)
			return false;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		hend = colon ? colon : end;
	}
	n = (size_t)(hend - h);
	if (!n || n >= hostsz)
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	if (colon) {
		const char *q = colon + 1;

		n = (size_t)(end - q);
		if (!n || n >= portsz || strspn(q, "0123456789") < n)
			return false;
		memcpy(port, q, n);
		port[n] = '\0';
		if (atoi(port) < 1 || atoi(port) > 65535)
			return false;
	} else {
		snprintf(port, portsz, "80");
	}
	return true;
}

/* Connects to one address within the connect timeout. */
static enum plain_err connect_one(struct plain *p, const struct addrinfo *a)
{
	int one = 1, err = 0, fd;
	socklen_t el = sizeof(err);
	enum plain_err e;

	fd = drv_http_client_socket(p->c, a->ai_family, a->ai_socktype, a->ai_protocol);
	if (fd < 0) {
		p->sys = p->c->intr ? ECONNABORTED : errno;
		return P_CONNECT;
	}
	p->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
		return P_OK;
	if (errno != EINPROGRESS) {
		p->sys = errno;
		return P_CONNECT;
	}
	e = wait_fd(p, POLLOUT, p->c->connect_timeout_ms > 0 ?
				drv_mono_ms() + p->c->connect_timeout_ms : 0);
	if (e != P_OK)
		return e;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
		return P_OK;
	p->sys = err ? err : errno;
	return P_CONNECT;
}

static void drop_fd(struct plain *p)
{
	if (p->fd >= 0)
		drv_http_client_close(p->c, p->fd);
	p->fd = -1;
}

/* Connects to host:port, each address in turn; the last failure counts. */
static enum plain_err open_conn(struct plain *p, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	enum plain_err e = P_CONNECT;

	if (getaddrinfo(host, port, &hints, &res) || !res)
		return P_RESOLVE;
	for (const struct addrinfo *a = res; a; a = a->ai_next) {
		e = connect_one(p, a);
		if (e == P_OK || e == P_TIMEOUT || e == P_ABORT)
			break;
		drop_fd(p);
	}
	freeaddrinfo(res);
	return e;
}

static enum plain_err send_all(struct plain *p, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(p->fd, s, n, MSG_NOSIGNAL);
		enum plain_err e;

		if (k > 0) {
			s += k;
			n -= (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			p->sys = errno;
			return P_SEND;
		}
		if ((e = wait_fd(p, POLLOUT, 0)) != P_OK)
			return e;
	}
	return P_OK;
}

/* Reads more into p->in: P_OK, or *eof set at the end of the stream. */
static enum plain_err fill(struct plain *p, bool *eof)
{
	char buf[16384];

	*eof = false;
	for (;;) {
		ssize_t k = recv(p->fd, buf, sizeof(buf), 0);
		enum plain_err e;

		if (k > 0)
			return drv_dynbuf_add(&p->in, buf, (size_t)k) < 0 ? P_BIG : P_OK;
		if (k == 0) {
			*eof = true;
			return P_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			p->sys = errno;
			return P_RECV;
		}
		if ((e = wait_fd(p, POLLIN, 0)) != P_OK)
			return e;
	}
}

/* Drops the first n bytes of p->in. */
static void consume(struct plain *p, size_t n)
{
	if (!n)
		return;
	memmove(p->in.buf, p->in.buf + n, p->in.len - n);
	p->in.len -= n;
	if (p->in.buf)
		p->in.buf[p->in.len] = '\0';
}

/* The end of the header block in p->in (just past its blank line), 0
 * while it is not all there. */
static size_t block_end(const struct plain *p)
{
	const char *e = p->in.len ? memmem(p->in.buf, p->in.len, "\r\n\r\n", 4) : NULL;

	return e ? (size_t)(e - p->in.buf) + 4 : 0;
}

/* A header's value in a block (NUL-terminated text), into v. */
static bool block_header(const char *blk, const char *name, char *v, size_t vsz)
{
	struct drv_http_reply r = { .headers = (char *)blk };

	return drv_http_reply_header(&r, name, v, vsz) != NULL;
}

/* Reads one header block: *status, and the block itself (owned) in *blk.
 * got_any: whether a byte of a reply came before (a close then is a cut
 * reply, not an empty one). */
static enum plain_err read_block(struct plain *p, long *status, char **blk, bool got_any)
{
	size_t end;
	bool eof = false;
	enum plain_err e;
	int code = 0;

	while (!(end = block_end(p))) {
		if (p->in.len >= MAX_HEADERS)
			return P_BIG;
		if (p->in.len >= 5 && strncmp(p->in.buf, "HTTP/", 5))
			return P_WEIRD;
		if ((e = fill(p, &eof)) != P_OK)
			return e == P_RECV && (got_any || p->in.len) ? P_WEIRD : e;
		if (eof)
			return got_any || p->in.len ? P_WEIRD : P_NOTHING;
	}
	if (end > MAX_HEADERS || strncmp(p->in.buf, "HTTP/1.", 7) ||
	    sscanf(p->in.buf + 8, " %3d", &code) != 1 || code < 100 || code > 999)
		return P_WEIRD;
	*status = code;
	*blk = drv_strndup(p->in.buf, end);
	consume(p, end);
	return P_OK;
}

/* The body by Content-Length (len >= 0), or to the end of the stream. */
static enum plain_err read_sized(struct plain *p, long long len, struct drv_dynbuf *body)
{
	bool eof = false;
	enum plain_err e;

	if (len > (long long)DRV_HTTP_MAX_REPLY)
		return P_BIG;
	for (;;) {
		size_t take = len < 0 ? p->in.len : DRV_MIN(p->in.len, (size_t)len - body->len);

		if (take && drv_dynbuf_add(body, p->in.buf, take) < 0)
			return P_BIG;
		consume(p, take);
		if (len >= 0 && body->len >= (size_t)len)
			return P_OK;
		if ((e = fill(p, &eof)) != P_OK)
			return e == P_RECV ? P_WEIRD : e;
		if (eof)
			return len < 0 ? P_OK : P_WEIRD;
	}
}

/* A chunked body (RFC 9112 7.1); trailers are read and dropped. */
static enum plain_err read_chunked(struct plain *p, struct drv_dynbuf *body)
{
	bool eof = false;
	enum plain_err e;

	for (;;) {
		char *nl = p->in.len ? memmem(p->in.buf, p->in.len, "\r\n", 2) : NULL;
		unsigned long long n;
		char *endp;

		if (!nl) {
			if (p->in.len > 4096)
				return P_WEIRD;
			if ((e = fill(p, &eof)) != P_OK)
				return e == P_RECV ? P_WEIRD : e;
			if (eof)
				return P_WEIRD;
			continue;
		}
		errno = 0;
		n = strtoull(p->in.buf, &endp, 16);
		if (endp == p->in.buf || errno || (*endp != '\r' && *endp != ';' && *endp != ' '))
			return P_WEIRD;
		if (n > DRV_HTTP_MAX_REPLY - body->len)
			return P_BIG;
		consume(p, (size_t)(nl + 2 - p->in.buf));
		if (n == 0) {   /* trailers, up to the blank line */
			for (;;) {
				nl = p->in.len ? memmem(p->in.buf, p->in.len, "\r\n", 2) : NULL;
				if (nl) {
					bool last = nl == p->in.buf;

					consume(p, (size_t)(nl + 2 - p->in.buf));
					if (last)
						return P_OK;
					continue;
				}
				if (p->in.len > MAX_HEADERS)
					return P_BIG;
				if ((e = fill(p, &eof)) != P_OK)
					return e == P_RECV ? P_WEIRD : e;
				if (eof)
					return P_OK;   /* a server that ends without the blank line */
			}
		}
		while (n) {   /* the chunk's bytes, as they come */
			size_t take = (size_t)DRV_MIN((unsigned long long)p->in.len, n);

			if (take && drv_dynbuf_add(body, p->in.buf, take) < 0)
				return P_BIG;
			consume(p, take);
			n -= take;
			if (!n)
				break;
			if ((e = fill(p, &eof)) != P_OK)
				return e == P_RECV ? P_WEIRD : e;
			if (eof)
				return P_WEIRD;
		}
		while (p->in.len < 2) {
			if ((e = fill(p, &eof)) != P_OK)
				return e == P_RECV ? P_WEIRD : e;
			if (eof)
				return P_WEIRD;
		}
		if (memcmp(p->in.buf, "\r\n", 2))
			return P_WEIRD;
		consume(p, 2);
	}
}

/* The request's head, as libcurl sends it for request_once. */
static void head(struct drv_dynbuf *b, const struct drv_http_client *c, const char *method,
		 const char *host_port, const char *prefix, const char *path, const char *ctype,
		 size_t len)
{
	bool has_body = strcmp(method, "GET") && strcmp(method, "HEAD");

	drv_dynbuf_addf(b, "%s %s%s%s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\n", method,
			*prefix ? prefix : "", path[0] == '/' ? "" : "/", path, host_port);
	if (c->token)
		drv_dynbuf_addf(b, "Authorization: Bearer %s\r\n", c->token);
	if (ctype)
		drv_dynbuf_addf(b, "Content-Type: %s\r\n", ctype);
	else if (has_body)   /* what libcurl's POST says when nothing is given */
		drv_dynbuf_addstr(b, "Content-Type: application/x-www-form-urlencoded\r\n");
	if (c->header)
		drv_dynbuf_addf(b, "%s\r\n", c->header);
	if (has_body)
		drv_dynbuf_addf(b, "Content-Length: %zu\r\n", len);
	if (has_body && len >= EXPECT_MIN)
		drv_dynbuf_addstr(b, "Expect: 100-continue\r\n");
	drv_dynbuf_addstr(b, "Connection: close\r\n\r\n");
}

/* The reply: interim blocks skipped (the body sent on "100 Continue" when
 * it waits for one), then the final block and its body. */
static enum plain_err exchange(struct plain *p, const char *method, const void *body,
			       size_t len, bool body_waits, struct drv_http_reply *out)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(DRV_HTTP_MAX_REPLY);
	char *blk = NULL, v[64];
	bool got_any = false;
	enum plain_err e;
	long status = 0;

	for (;;) {
		drv_free(blk);
		blk = NULL;
		if ((e = read_block(p, &status, &blk, got_any)) != P_OK)
			goto fail;
		got_any = true;
		if (status >= 200)
			break;
		if (status == 100 && body_waits) {
			body_waits = false;
			if ((e = send_all(p, body, len)) != P_OK)
				goto fail;
		}
	}
	if (!strcmp(method, "HEAD") || status == 204 || status == 304) {
		e = P_OK;
	} else if (block_header(blk, "Transfer-Encoding", v, sizeof(v)) &&
		   strcasestr(v, "chunked")) {
		e = read_chunked(p, &b);
	} else if (block_header(blk, "Content-Length", v, sizeof(v))) {
		char *endp;
		long long n = strtoll(v, &endp, 10);

		e = endp == v || *endp || n < 0 ? P_WEIRD : read_sized(p, n, &b);
	} else {
		e = read_sized(p, -1, &b);
	}
	if (e != P_OK)
		goto fail;
	out->status = status;
	out->body = drv_dynbuf_take(&b, &out->len);
	out->headers = blk;
	return P_OK;
fail:
	drv_free(blk);
	drv_dynbuf_release(&b);
	return e;
}

int drv_http_plain_request(struct drv_http_client *c, const char *method, const char *path,
			   const char *ctype, const void *body, size_t len, long timeout_ms,
			   struct drv_http_reply *out, bool *noconn)
{
	struct plain p = { .c = c, .fd = -1, .in = DRV_DYNBUF_INIT(MAX_HEADERS + (1u << 16)) };
	struct drv_dynbuf req = DRV_DYNBUF_INIT(MAX_HEADERS + SMALL_BODY);
	long total = timeout_ms < 0 ? c->timeout_ms : timeout_ms;
	bool has_body = strcmp(method, "GET") && strcmp(method, "HEAD");
	bool body_waits = has_body && len >= EXPECT_MIN;
	char host[256], port[8], hp[300];
	const char *prefix;
	enum plain_err e;
	int rc;

	*noconn = false;
	p.deadline = total > 0 ? drv_mono_ms() + total : 0;
	if (!split_url(c->base, host, sizeof(host), port, sizeof(port), &prefix)) {
		rc = say(&p, P_URL);
		goto out;
	}
	snprintf(hp, sizeof(hp), "%.*s", (int)(prefix - (c->base + 7)), c->base + 7);
	e = open_conn(&p, host, port);
	if (e != P_OK) {
		*noconn = e == P_CONNECT;
		rc = say(&p, e);
		goto out;
	}
	head(&req, c, method, hp, prefix, path, ctype, has_body ? len : 0);
	if (has_body && len && len <= SMALL_BODY)   /* in one send with the head */
		drv_dynbuf_add(&req, body, len);
	e = send_all(&p, req.buf, req.len);
	if (e == P_OK && has_body && len > SMALL_BODY && !body_waits)
		e = send_all(&p, body, len);
	if (e == P_OK && body_waits) {
		/* the go-ahead, or a refusal that comes without it */
		e = wait_fd(&p, POLLIN, 0);
	}
	if (e == P_OK || e == P_SEND) {
		/* a server that refused and closed may have said why first */
		enum plain_err sent = e;

		e = exchange(&p, method, body, len, body_waits, out);
		if (e != P_OK && sent == P_SEND)
			e = P_SEND;
	}
	rc = e == P_OK ? 0 : say(&p, e);
	if (!rc)
		c->err[0] = '\0';
out:
	drop_fd(&p);
	drv_dynbuf_release(&req);
	drv_dynbuf_release(&p.in);
	return rc;
}
