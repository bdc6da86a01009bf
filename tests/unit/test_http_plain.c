/*
 * test_http_plain.c: the client's own plain HTTP/1.1 path
 * (src/http/http_plain.c, which the light binaries use for http://).
 * Every test of test_http.c runs again here with it on (suite
 * http_plain); then what only a hand-made peer can show: the request's
 * head as libcurl sends it, chunked and unsized replies read as libcurl
 * reads them, a failure in the same words as libcurl's path, a reply
 * that is not HTTP, and the next controller tried when one refuses.
 */
#define HTTP_PLAIN true
#define http http_plain   /* the suite's name in test_http.c's Test(http, ...) */
#include "test_http.c"
#undef http

/* A peer on a loopback port that answers each of its next connections
 * with reply (NULL: closes without a word) after reading the request's
 * head and Content-Length body, which it keeps in req. */
struct peer {
	int lfd, port, conns;
	const char *reply;
	char req[2][8192];
	pthread_t th;
};

static void *peer_run(void *arg)
{
	struct peer *p = arg;

	for (int i = 0; i < p->conns; i++) {
		int fd = accept(p->lfd, NULL, NULL);
		size_t n = 0;
		char *end = NULL;
		long want = -1;

		if (fd < 0)
			break;
		for (;;) {
			ssize_t k = read(fd, p->req[i % 2] + n, sizeof(p->req[0]) - 1 - n);

			if (k <= 0)
				break;
			n += (size_t)k;
			p->req[i % 2][n] = '\0';
			if (!end && (end = strstr(p->req[i % 2], "\r\n\r\n"))) {
				const char *cl = strcasestr(p->req[i % 2], "\r\nContent-Length:");

				want = (long)(end + 4 - p->req[i % 2]) + (cl ? atol(cl + 17) : 0);
			}
			if (want >= 0 && (long)n >= want)
				break;
		}
		if (p->reply && write(fd, p->reply, strlen(p->reply)) < 0)
			break;
		close(fd);
	}
	return NULL;
}

static void peer_start(struct peer *p, const char *reply, int conns)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(p, 0, sizeof(*p));
	p->reply = reply;
	p->conns = conns;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(eq(int, bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0));
	cr_assert(eq(int, listen(p->lfd, 4), 0));
	getsockname(p->lfd, (struct sockaddr *)&a, &al);
	p->port = ntohs(a.sin_port);
	pthread_create(&p->th, NULL, peer_run, p);
}

static void peer_stop(struct peer *p)
{
	pthread_join(p->th, NULL);
	close(p->lfd);
}

/* One request to url with each path, libcurl's (0) and the plain one (1). */
static int ask_both(const char *url, const char *method, const char *path, const char *body,
		    struct drv_http_reply r[2], char err[2][1024])
{
	int rc[2];

	for (int i = 0; i < 2; i++) {
		struct drv_http_client c;

		drv_http_client_plain(i == 1);
		drv_http_client_init(&c, url, "tok");
		drv_http_client_set_header(&c, "Idempotency-Key: k1");
		drv_http_reply_init(&r[i]);
		rc[i] = drv_http_request(&c, method, path, body ? "application/json" : NULL, body,
					 body ? strlen(body) : 0, 2000, &r[i]);
		snprintf(err[i], 1024, "%s", c.err);
		drv_http_client_release(&c);
	}
	drv_http_client_plain(true);
	cr_assert(eq(int, rc[0], rc[1]), "libcurl %d (%s), plain %d (%s)", rc[0], err[0], rc[1],
		  err[1]);
	return rc[1];
}

/* The head's lines but the request line's, sorted, "Connection: close"
 * (the plain path's only addition) left out. */
static void head_lines(const char *req, char *out, size_t n)
{
	char copy[8192], *lines[64], *save = NULL;
	int k = 0;
	size_t used = 0;

	snprintf(copy, sizeof(copy), "%s", req);
	*strstr(copy, "\r\n\r\n") = '\0';
	for (char *l = strtok_r(copy, "\r\n", &save); l && k < 64; l = strtok_r(NULL, "\r\n", &save))
		if (strcmp(l, "Connection: close"))
			lines[k++] = l;
	for (int i = 1; i < k; i++)
		for (int j = i; j > 1 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
			char *t = lines[j];

			lines[j] = lines[j - 1];
			lines[j - 1] = t;
		}
	out[0] = '\0';
	for (int i = 0; i < k; i++)
		used += (size_t)snprintf(out + used, n - DRV_MIN(used, n), "%s\n", lines[i]);
}

Test(http_plain, the_request_head_is_the_one_libcurl_sends)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	struct drv_http_reply r[2];
	char url[64], err[2][1024], a[4096], b[4096];
	struct peer p;

	for (int m = 0; m < 2; m++) {
		peer_start(&p, reply, 2);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", p.port);
		cr_assert(eq(int, ask_both(url, m ? "DELETE" : "POST", "/v1/jobs?x=1",
					   m ? NULL : "{\"a\": 1}", r, err), 0));
		peer_stop(&p);
		head_lines(p.req[0], a, sizeof(a));
		head_lines(p.req[1], b, sizeof(b));
		cr_assert(eq(str, b, a), "plain:\n%s\nlibcurl:\n%s", b, a);
		cr_assert(eq(str, strstr(p.req[1], "\r\n\r\n"), strstr(p.req[0], "\r\n\r\n")));
		cr_assert(eq(str, r[1].body, "ok"));
		for (int i = 0; i < 2; i++)
			drv_http_reply_release(&r[i]);
	}
}

Test(http_plain, chunked_and_unsized_replies_read_as_libcurl_reads_them)
{
	static const char *const replies[] = {
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Drover-Next-Offset: 7\r\n\r\n"
		"4;ext=1\r\nabcd\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nno such thing\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes",
		"HTTP/1.1 204 No Content\r\n\r\n",
	};
	struct drv_http_reply r[2];
	char url[64], err[2][1024], h[2][64];
	struct peer p;

	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		peer_start(&p, replies[i], 2);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", p.port);
		cr_assert(eq(int, ask_both(url, "GET", "/x", NULL, r, err), 0), "%s", err[1]);
		peer_stop(&p);
		cr_assert(eq(long, r[1].status, r[0].status), "reply %zu", i);
		cr_assert(eq(sz, r[1].len, r[0].len), "reply %zu", i);
		cr_assert(eq(str, r[1].body, r[0].body), "reply %zu", i);
		for (int k = 0; k < 2; k++)
			if (!drv_http_reply_header(&r[k], "X-Drover-Next-Offset", h[k], sizeof(h[k])))
				snprintf(h[k], sizeof(h[k]), "-");
		cr_assert(eq(str, h[1], h[0]), "reply %zu", i);
		for (int k = 0; k < 2; k++)
			drv_http_reply_release(&r[k]);
	}
}

Test(http_plain, a_failure_is_said_in_the_words_of_libcurls_path)
{
	struct drv_http_reply r[2];
	char url[64], err[2][1024];
	struct peer p;

	/* nothing listens */
	cr_assert(eq(int, ask_both("http://127.0.0.1:1", "GET", "/x", NULL, r, err), DRV_ECONN));
	cr_assert(eq(str, err[1], err[0]));
	cr_assert(eq(str, err[1], "cannot reach drover at http://127.0.0.1:1: connection refused"));
	/* a peer that closes without a word */
	peer_start(&p, NULL, 2);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", p.port);
	cr_assert(eq(int, ask_both(url, "POST", "/x", "{}", r, err), DRV_ECONN));
	peer_stop(&p);
	cr_assert(eq(str, err[1], err[0]));
	cr_assert(ne(ptr, strstr(err[1], "if it serves TLS, use an https:// URL"), NULL), "%s",
		  err[1]);
	/* too slow */
	snprintf(url, sizeof(url), "%s", base);
	for (int i = 0; i < 2; i++) {
		struct drv_http_client c;

		drv_http_client_plain(i == 1);
		drv_http_client_init(&c, base, NULL);
		drv_http_reply_init(&r[i]);
		cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/slow", NULL, NULL, 0, 100, &r[i]),
			     DRV_ETIMEDOUT));
		snprintf(err[i], 1024, "%s", c.err);
		drv_http_client_release(&c);
	}
	cr_assert(eq(str, err[1], err[0]));
}

Test(http_plain, a_reply_that_is_not_http_says_so)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	char url[64];
	struct peer p;

	peer_start(&p, "\x15\x03\x01\x00\x02\x02\x46", 1);   /* a TLS alert */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", p.port);
	drv_http_client_init(&c, url, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/x", NULL, NULL, 0, 2000, &r), DRV_ECONN));
	peer_stop(&p);
	cr_assert(ne(ptr, strstr(c.err, "not HTTP"), NULL), "%s", c.err);
	cr_assert(ne(ptr, strstr(c.err, "if it serves TLS, use an https:// URL"), NULL), "%s",
		  c.err);
	drv_http_client_release(&c);
}

Test(http_plain, the_next_controller_is_asked_when_one_refuses)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	char list[160];

	snprintf(list, sizeof(list), "http://127.0.0.1:1, %s/", base);
	drv_http_client_init(&c, list, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&c, "GET", "/v1/things/7", NULL, NULL, 0, 2000, &r), 0),
		  "%s", c.err);
	cr_assert(eq(long, r.status, 201));
	cr_assert(eq(str, c.base, base), "the one that answered is asked first after");
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
}
