/*
 * transport.c: one HTTP call from the client to the controller, through
 * the project's HTTP client (src/http, libcurl underneath), with the reply
 * parsed as JSON when it is JSON and failures as sentences a person can act
 * on: "cannot reach drover at http://127.0.0.1:8080: connection refused".
 *
 * A struct drv_client keeps one connection handle, so a command that makes
 * several calls (top, bench) reuses one keep-alive connection. It is not
 * shared between threads; the benchmark gives each thread its own.
 */
#include "drover/client.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drv_client {
	struct drv_client_conf conf;
	struct drv_http_client http;
};

/* The most of a reply's error that is shown: a page, not a dump. */
#define ERROR_TEXT_MAX (64u << 10)

struct drv_client *drv_client_new(const struct drv_client_conf *conf)
{
	struct drv_client *c = drv_calloc(1, sizeof(*c));

	c->conf.server = drv_strdup(conf->server ? conf->server : DRV_CLIENT_DEFAULT_SERVER);
	c->conf.token = drv_strdup(conf->token);
	c->conf.source = drv_strdup(conf->source);
	c->conf.ca_file = drv_strdup(conf->ca_file);
	drv_http_client_init(&c->http, c->conf.server, c->conf.token);
	drv_http_client_set_ca(&c->http, c->conf.ca_file);
	return c;
}

void drv_client_free(struct drv_client *c)
{
	if (!c)
		return;
	drv_http_client_release(&c->http);
	drv_client_conf_release(&c->conf);
	drv_free(c);
}

const char *drv_client_server(const struct drv_client *c)
{
	return c->conf.server;
}

int drv_client_call(struct drv_client *c, const char *method, const char *path,
		    const char *ctype, const char *body, size_t len, long timeout_ms,
		    struct drv_client_reply *reply, char *err, size_t errsz)
{
	struct drv_http_reply r;
	char off[32];
	int rc;

	memset(reply, 0, sizeof(*reply));
	reply->next_offset = -1;
	drv_http_reply_init(&r);
	rc = drv_http_request(&c->http, method, path, ctype, body, body ? len : 0,
			      timeout_ms > 0 ? timeout_ms : 30000, &r);
	if (rc) {
		snprintf(err, errsz, "%s", c->http.err[0] ? c->http.err : drv_strerror(rc));
		drv_http_reply_release(&r);
		return rc;
	}
	reply->status = r.status;
	reply->body = r.body ? r.body : drv_strdup("");
	reply->len = r.body ? r.len : 0;
	r.body = NULL;
	if (drv_http_reply_header(&r, "X-Drover-Next-Offset", off, sizeof(off)))
		reply->next_offset = strtoll(off, NULL, 10);
	if (reply->len)
		reply->json = json_loadb(reply->body, reply->len, JSON_DECODE_ANY, NULL);
	drv_http_reply_release(&r);
	return 0;
}

void drv_client_set_header(struct drv_client *c, const char *line)
{
	drv_http_client_set_header(&c->http, line);
}

void drv_client_reply_release(struct drv_client_reply *reply)
{
	drv_free(reply->body);
	if (reply->json)
		json_decref(reply->json);
	memset(reply, 0, sizeof(*reply));
}

/* Diagnostics may be strings or objects with a "message" (and maybe "path"). */
static void append_details(struct drv_dynbuf *b, const json_t *arr)
{
	size_t i;
	const json_t *d;

	if (!json_is_array(arr))
		return;
	json_array_foreach(arr, i, d) {
		drv_dynbuf_addstr(b, "\n  ");
		if (json_is_string(d)) {
			drv_dynbuf_addstr(b, json_string_value(d));
		} else if (json_is_object(d)) {
			const json_t *m = json_object_get(d, "message");
			const json_t *p = json_object_get(d, "path");
			if (json_is_string(p)) {
				drv_dynbuf_addstr(b, json_string_value(p));
				drv_dynbuf_addstr(b, ": ");
			}
			if (json_is_string(m))
				drv_dynbuf_addstr(b, json_string_value(m));
		}
	}
}

char *drv_client_reply_error(const struct drv_client_reply *reply)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(ERROR_TEXT_MAX);
	const json_t *e = reply->json ? json_object_get(reply->json, "error") : NULL;
	char line[64];

	if (json_is_string(e)) {
		drv_dynbuf_addstr(&b, json_string_value(e));
	} else if (json_is_object(e) && json_is_string(json_object_get(e, "message"))) {
		drv_dynbuf_addstr(&b, json_string_value(json_object_get(e, "message")));
		append_details(&b, json_object_get(e, "diagnostics"));
		append_details(&b, json_object_get(e, "details"));
	} else if (reply->len) {
		size_t n = reply->len;
		while (n && (reply->body[n - 1] == '\n' || reply->body[n - 1] == '\r'))
			n--;
		drv_dynbuf_add(&b, reply->body, DRV_MIN(n, ERROR_TEXT_MAX));
	} else {
		snprintf(line, sizeof(line), "HTTP %ld", reply->status);
		drv_dynbuf_addstr(&b, line);
	}
	if (reply->json) {
		append_details(&b, json_object_get(reply->json, "diagnostics"));
		append_details(&b, json_object_get(reply->json, "details"));
	}
	return drv_dynbuf_take(&b, NULL);
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
	return drv_http_escape(s);
}
