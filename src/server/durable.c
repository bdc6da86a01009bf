/*
 * durable.c: replies that go out once their change is on disk.
 *
 * A handler changes memory under srv->mu, queues the change for the
 * committer (srv_enqueue, srv_commit_new_jobs: a ticket), fills the reply
 * it will give, and hands both to srv_reply_when_durable(). The request
 * is deferred (include/drover/http.h): it holds no thread while the
 * committer writes, so an event thread goes on reading other requests and
 * the next group commit gathers them all in one fsync. The committer's
 * wake of SRV_KEY_COMMIT after each group brings the reply back (other
 * wakes pass it by); a failed group
 * turns it into a 503 saying what was not written.
 */
#include "server_int.h"

#include <string.h>

struct durable {
	struct drv_server *s;
	uint64_t ticket;
	const char *fail_prefix;   /* a string literal */
};

static int durable_ready(void *cls, struct drv_http_resp *resp, int timed_out)
{
	struct durable *d = cls;
	struct drv_server *s = d->s;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = srv_ticket_state(s, d->ticket);
	if (rc > 0 && !timed_out) {
		pthread_mutex_unlock(&s->mu);
		drv_http_wait_on(SRV_KEY_COMMIT);
		return DRV_HTTP_AGAIN;
	}
	/* no deadline: timed out means the server is stopping, and the
	 * committer, stopped last, still writes what was queued */
	if (rc > 0)
		rc = srv_wait(s, d->ticket);
	if (rc < 0) {
		drv_free(resp->headers);
		resp->headers = NULL;
		drv_http_resp_error(resp, 503, "unavailable", NULL,
				    "%sthe state store cannot write (%s)", d->fail_prefix,
				    s->commit_err);
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

void srv_reply_when_durable(struct drv_server *s, struct drv_http_req *r, uint64_t ticket,
			    const char *fail_prefix)
{
	struct durable *d = drv_malloc(sizeof(*d));

	d->s = s;
	d->ticket = ticket;
	d->fail_prefix = fail_prefix;
	drv_http_defer(r, durable_ready, d, drv_free, -1);
}
