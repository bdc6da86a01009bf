/*
 * job_token.c: credentials scoped to one job (CONTRACTS.md §7,
 * docs/security.md). Each task of a job finds DROVER_JOB_TOKEN in its
 * environment (added to every assignment by agent_api.c); the controller
 * takes it on that job's own routes (those flagged ROUTE_JOB: GET
 * /v1/jobs/ID, its logs, POST /v1/jobs/ID/steps and the steps' reads and
 * cancel) for as long as that attempt
 * of the job is not over, acting as the job's user, and refuses it (403)
 * on any other route or job.
 *
 * A token is "drvj1.ID.ATTEMPT.MAC": MAC is HMAC-SHA256 (GnuTLS) of
 * "ID.ATTEMPT" under a key of the controller's own, STATE_DIR/job-token.key
 * (32 random bytes as hex, mode 0600, made on first start). Nothing is
 * stored per token: a restarted controller takes the tokens of jobs that
 * still run, a new attempt of a job (a requeue) gets a new token, and a new
 * key (remove the file, restart) revokes every one.
 *
 * The filter hands each request a struct caller; for job tokens one per job
 * attempt is made on first use and kept until the server stops (s->mu).
 */
#include "server_int.h"

#include "drover/fsutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#define KEY_LEN 32
#define MAC_LEN 32
#define PREFIX "drvj1."

struct job_caller {
	struct caller c;
	char *user;
	struct job_caller *next;
};

static void hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int unhex(const char *s, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		b[i] = (unsigned char)v;
	}
	return strlen(s) == 2 * n ? 0 : -1;
}

static int put_key(FILE *f, void *arg)
{
	char h[2 * KEY_LEN + 1];

	hex(arg, KEY_LEN, h);
	return fprintf(f, "%s\n", h) > 0 ? 0 : DRV_EIO;
}

int srv_job_key_load(struct drv_server *s, char *err, size_t errsz)
{
	char path[4096], *text = NULL;
	unsigned char key[KEY_LEN];
	int rc;

	snprintf(path, sizeof(path), "%s/job-token.key", s->state_dir);
	if (access(path, F_OK) != 0) {
		if (gnutls_rnd(GNUTLS_RND_KEY, key, sizeof(key)) < 0 ||
		    drv_file_write_atomic(path, 0600, put_key, key) < 0) {
			snprintf(err, errsz, "cannot make %s: %s", path, strerror(errno));
			return DRV_EIO;
		}
	}
	rc = drv_secret_file_read(path, &text, err, errsz);
	if (rc == 0 && unhex(text, s->job_key, KEY_LEN) < 0) {
		snprintf(err, errsz, "%s: expected %d hex digits (remove it to make a new key)",
			 path, 2 * KEY_LEN);
		rc = DRV_EINVAL;
	}
	drv_free(text);
	explicit_bzero(key, sizeof(key));
	return rc;
}

/* The MAC of (id, attempt), as hex, into out (2 * MAC_LEN + 1). */
static void job_mac(const struct drv_server *s, uint64_t id, int32_t attempt, char *out)
{
	unsigned char mac[MAC_LEN];
	char msg[48];
	int n = snprintf(msg, sizeof(msg), "%llu.%d", (unsigned long long)id, (int)attempt);

	gnutls_hmac_fast(GNUTLS_MAC_SHA256, s->job_key, KEY_LEN, msg, (size_t)n, mac);
	hex(mac, MAC_LEN, out);
}

void srv_job_token(const struct drv_server *s, uint64_t id, int32_t attempt, char *out,
		   size_t n)
{
	char mac[2 * MAC_LEN + 1];

	job_mac(s, id, attempt, mac);
	snprintf(out, n, PREFIX "%llu.%d.%s", (unsigned long long)id, (int)attempt, mac);
}

bool srv_job_token_like(const char *tok)
{
	return strncmp(tok, PREFIX, sizeof(PREFIX) - 1) == 0;
}

/* Parses and checks tok (in constant time over the MAC). */
static bool token_ok(const struct drv_server *s, const char *tok, uint64_t *id,
		     int32_t *attempt)
{
	const char *p = tok + sizeof(PREFIX) - 1;
	char want[2 * MAC_LEN + 1], *end;
	unsigned long long i;
	long a;
	unsigned char diff = 0;

	errno = 0;
	i = strtoull(p, &end, 10);
	if (errno || end == p || *end != '.' || i == 0)
		return false;
	p = end + 1;
	a = strtol(p, &end, 10);
	if (errno || end == p || *end != '.' || a < 0 || a > INT32_MAX)
		return false;
	p = end + 1;
	if (strlen(p) != 2 * MAC_LEN)
		return false;
	job_mac(s, i, (int32_t)a, want);
	for (size_t k = 0; k < 2 * MAC_LEN; k++)
		diff |= (unsigned char)(want[k] ^ p[k]);
	*id = i;
	*attempt = (int32_t)a;
	return diff == 0;
}

/* The caller of (j, attempt); made once. Under s->mu. */
static struct caller *job_caller(struct drv_server *s, const struct srv_job *j)
{
	struct job_caller *c;

	for (c = s->job_callers; c; c = c->next)
		if (c->c.job == j->id && c->c.attempt == j->attempt)
			return &c->c;
	c = drv_calloc(1, sizeof(*c));
	c->user = drv_strdup(j->spec.job.user ? j->spec.job.user : "");
	c->c = (struct caller){ .user = c->user, .job = j->id, .attempt = j->attempt };
	c->next = s->job_callers;
	s->job_callers = c;
	return &c->c;
}

/* Whether route rt with its "{}" is job id's own. */
static bool own_route(struct drv_http_req *r, const struct drv_http_route *rt, uint64_t id)
{
	const char *p = drv_http_req_param(r, 0);
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)id);
	return (rt->flags & ROUTE_JOB) && p && strcmp(p, buf) == 0;
}

int srv_job_auth(struct drv_server *s, struct drv_http_req *r, const struct drv_http_route *rt,
		 const char *tok, struct drv_http_resp *o)
{
	struct srv_job *j;
	uint64_t id;
	int32_t attempt;
	bool live;

	if (!token_ok(s, tok, &id, &attempt)) {
		drv_http_resp_error(o, 401, "unauthorized", NULL, "not a job token of this server");
		return 1;
	}
	pthread_mutex_lock(&s->mu);
	j = srv_job_get(s, id);
	live = j && j->attempt == attempt && !srv_jstate_final(j->state);
	if (live && own_route(r, rt, id))
		drv_http_req_set_user(r, job_caller(s, j));
	pthread_mutex_unlock(&s->mu);
	if (!live) {
		drv_http_resp_error(o, 401, "unauthorized", NULL,
				    "the job token of job %llu attempt %d is over (the job ended or "
				    "started again)", (unsigned long long)id, (int)attempt);
		return 1;
	}
	if (!own_route(r, rt, id)) {
		drv_http_resp_error(o, 403, "forbidden", NULL,
				    "%s %s: a job token is good only for its own job's routes (GET "
				    "/v1/jobs/%llu, its logs and its steps)", drv_http_req_method(r),
				    drv_http_req_path(r), (unsigned long long)id);
		return 1;
	}
	return 0;
}

void srv_job_callers_free(struct drv_server *s)
{
	while (s->job_callers) {
		struct job_caller *c = s->job_callers;

		s->job_callers = c->next;
		drv_free(c->user);
		drv_free(c);
	}
	explicit_bzero(s->job_key, sizeof(s->job_key));
}
