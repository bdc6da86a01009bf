/*
 * transport.c: one HTTP call from the client to the controller, over
 * libcurl, with failures turned into sentences a person can act on:
 * "cannot reach drover at http://127.0.0.1:8080: connection refused".
 *
 * A struct drv_client keeps one curl easy handle, so a command that makes
 * several calls (top, bench) reuses one keep-alive connection. It is not
 * shared between threads; the benchmark gives each thread its own.
 */
#include "drover/client.h"
#include "drover/common.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct drv_client {
	struct drv_client_conf conf;
	CURL *curl;
	char *auth;     /* "Authorization: Bearer ..." */
};

struct buf {
	char *p;
	size_t n, cap;
};

#define REPLY_MAX (256u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct drv_client *drv_client_new(const struct drv_client_conf *conf)
{
	struct drv_client *c = drv_calloc(1, sizeof(*c));
	size_t n;

	pthread_once(&curl_once, curl_init_once);
	c->conf.server = drv_strdup(conf->server ? conf->server : DRV_CLIENT_DEFAULT_SERVER);
	c->conf.token = drv_strdup(conf->token);
	c->conf.source = drv_strdup(conf->source);
	if (c->conf.token) {
		n = strlen(c->conf.token) + sizeof("Authorization: Bearer ");
		c->auth = drv_malloc(n);
		snprintf(c->auth, n, "Authorization: Bearer %s", c->conf.token);
	}
	c->curl = curl_easy_init();
	if (!c->curl) {
		fprintf(stderr, "drover: cannot initialise libcurl\n");
		abort();
	}
	return c;
}

void drv_client_free(struct drv_client *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->curl);
	drv_client_conf_release(&c->conf);
	drv_free(c->auth);
	drv_free(c);
}

const char *drv_client_server(const struct drv_client *c)
{
	return c->conf.server;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	if (b->n + n + 1 > REPLY_MAX)
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	DRV_GROW(b->p, b->n + n + 1, b->cap);
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

/* Picks the headers the client uses out of the reply. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct drv_client_reply *r = ud;
	size_t n = size * nmemb;
	static const char key[] = "x-drover-next-offset:";

	if (n > sizeof(key) - 1 && !strncasecmp(ptr, key, sizeof(key) - 1)) {
		char tmp[32];
		size_t k = DRV_MIN(n - (sizeof(key) - 1), sizeof(tmp) - 1);
		memcpy(tmp, ptr + sizeof(key) - 1, k);
		tmp[k] = '\0';
		r->next_offset = strtoll(tmp, NULL, 10);
	}
	return n;
}

/* "Connection refused" -> "connection refused", as the sentence reads. */
static void lower_first(char *s)
{
	if (s[0] && isupper((unsigned char)s[0]) && !isupper((unsigned char)s[1]))
		s[0] = (char)tolower((unsigned char)s[0]);
}

static void describe_failure(struct drv_client *c, CURLcode cc, const char *cerr,
			     long timeout_ms, char *err, size_t errsz)
{
	char why[256];
	long oserr = 0;

	curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oserr);
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		if (oserr)
			snprintf(why, sizeof(why), "%s", strerror((int)oserr));
		else
			snprintf(why, sizeof(why), "connection refused");
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(why, sizeof(why), "%s", cerr[0] ? cerr : "cannot resolve the host name");
		break;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(why, sizeof(why), "no answer after %ld ms", timeout_ms);
		break;
	case CURLE_GOT_NOTHING:
		snprintf(why, sizeof(why), "the connection closed without an answer");
		break;
	case CURLE_UNSUPPORTED_PROTOCOL:
		snprintf(why, sizeof(why), "not an http:// or https:// URL");
		break;
	case CURLE_URL_MALFORMAT:
		snprintf(why, sizeof(why), "not a valid URL");
		break;
	default:
		snprintf(why, sizeof(why), "%s", cerr[0] ? cerr : curl_easy_strerror(cc));
		break;
	}
	lower_first(why);
	snprintf(err, errsz, "cannot reach drover at %s: %s", c->conf.server, why);
}

int drv_client_call(struct drv_client *c, const char *method, const char *path,
		    const char *ctype, const char *body, size_t len, long timeout_ms,
		    struct drv_client_reply *reply, char *err, size_t errsz)
{
	struct curl_slist *hdrs = NULL;
	struct buf b = { 0 };
	char cerr[CURL_ERROR_SIZE] = "";
	char *url, *hct = NULL;
	size_t n;
	CURLcode cc;
	int rc = 0;

	memset(reply, 0, sizeof(*reply));
	reply->next_offset = -1;
	if (timeout_ms <= 0)
		timeout_ms = 30000;
	n = strlen(c->conf.server) + strlen(path) + 1;
	url = drv_malloc(n);
	snprintf(url, n, "%s%s", c->conf.server, path);

	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, DRV_MIN(timeout_ms, 10000L));
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "drover-client");
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, reply);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
	if (body || strcmp(method, "GET")) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
	}
	if (ctype) {
		n = strlen(ctype) + sizeof("Content-Type: ");
		hct = drv_malloc(n);
		snprintf(hct, n, "Content-Type: %s", ctype);
		hdrs = curl_slist_append(hdrs, hct);
	}
	if (c->auth)
		hdrs = curl_slist_append(hdrs, c->auth);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);

	cc = curl_easy_perform(c->curl);
	if (cc != CURLE_OK) {
		describe_failure(c, cc, cerr, timeout_ms, err, errsz);
		rc = cc == CURLE_OPERATION_TIMEDOUT ? DRV_ETIMEDOUT
		     : (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
			cc == CURLE_GOT_NOTHING) ? DRV_ECONN : DRV_EIO;
		drv_free(b.p);
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &reply->status);
	reply->body = b.p ? b.p : drv_strdup("");
	reply->len = b.n;
	if (reply->len)
		reply->json = json_loadb(reply->body, reply->len, JSON_DECODE_ANY, NULL);
out:
	curl_slist_free_all(hdrs);
	drv_free(hct);
	drv_free(url);
	return rc;
}

void drv_client_reply_release(struct drv_client_reply *reply)
{
	drv_free(reply->body);
	if (reply->json)
		json_decref(reply->json);
	memset(reply, 0, sizeof(*reply));
}

static void append(struct buf *b, const char *s)
{
	size_t n = strlen(s);
	DRV_GROW(b->p, b->n + n + 1, b->cap);
	memcpy(b->p + b->n, s, n + 1);
	b->n += n;
}

/* Diagnostics may be strings or objects with a "message" (and maybe "path"). */
static void append_details(struct buf *b, const json_t *arr)
{
	size_t i;
	const json_t *d;

	if (!json_is_array(arr))
		return;
	json_array_foreach(arr, i, d) {
		append(b, "\n  ");
		if (json_is_string(d)) {
			append(b, json_string_value(d));
		} else if (json_is_object(d)) {
			const json_t *m = json_object_get(d, "message");
			const json_t *p = json_object_get(d, "path");
			if (json_is_string(p)) {
				append(b, json_string_value(p));
				append(b, ": ");
			}
			if (json_is_string(m))
				append(b, json_string_value(m));
		}
	}
}

char *drv_client_reply_error(const struct drv_client_reply *reply)
{
	struct buf b = { 0 };
	const json_t *e = reply->json ? json_object_get(reply->json, "error") : NULL;
	char line[64];

	if (json_is_string(e)) {
		append(&b, json_string_value(e));
	} else if (json_is_object(e) && json_is_string(json_object_get(e, "message"))) {
		append(&b, json_string_value(json_object_get(e, "message")));
		append_details(&b, json_object_get(e, "diagnostics"));
		append_details(&b, json_object_get(e, "details"));
	} else if (reply->len) {
		size_t n = reply->len;
		while (n && (reply->body[n - 1] == '\n' || reply->body[n - 1] == '\r'))
			n--;
		DRV_GROW(b.p, n + 1, b.cap);
		memcpy(b.p, reply->body, n);
		b.p[n] = '\0';
		b.n = n;
	} else {
		snprintf(line, sizeof(line), "HTTP %ld", reply->status);
		append(&b, line);
	}
	if (reply->json) {
		append_details(&b, json_object_get(reply->json, "diagnostics"));
		append_details(&b, json_object_get(reply->json, "details"));
	}
	return b.p ? b.p : drv_strdup("");
}

int drv_client_status_exit(long status)
{
	switch (status) {
	case 400:
	case 413:
	case 415:
	case 422:
		return DRV_EXIT_USAGE;
	default:
		return status >= 200 && status < 300 ? DRV_EXIT_OK : DRV_EXIT_FAIL;
	}
}

char *drv_client_urlencode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s), i, j = 0;
	char *o = drv_malloc(3 * n + 1);

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			o[j++] = (char)ch;
		} else {
			o[j++] = '%';
			o[j++] = hex[ch >> 4];
			o[j++] = hex[ch & 15];
		}
	}
	o[j] = '\0';
	return o;
}
