/*
 * ha.c: active/standby controllers on one PostgreSQL (docs/ha.md).
 *
 * Every controller on a PostgreSQL store competes for one lease row
 * (store_pg.c): the one that holds it leads, the others stand by. A
 * standby has the HTTP server up but no state in memory: it answers
 * /healthz (200, role and term), /metrics (its role, term and failovers
 * only, so dashboards count nothing twice) and every other request with
 * 307 to the leader's advertised address. Its lease thread tries the row
 * every poll (a quarter of the lease, at most a second); when the leader's
 * lease has lapsed it takes the row (term + 1), fences its store with the
 * new term and loads the state as a restart would, while the thread keeps
 * renewing. So a takeover costs at most leader_lease_s + a poll + the load.
 *
 * The leader renews every third of the lease. When the database says its
 * term is gone, or it could not renew for a whole lease (the database lost
 * or unreachable, or the process stopped), it has been deposed: its writes
 * are refused by the database already (the fence), and it exits at once
 * (exit status 1, one log line), as kube-controller-manager does on a lost
 * election, for its supervisor to start it again as a standby. Nothing it
 * holds in memory is trusted after a deposition.
 *
 * On SQLite the role is "standalone": no lease, nothing of this runs.
 */
#include "server_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *srv_role_name(const struct drv_server *s)
{
	switch (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE)) {
	case SRV_ROLE_STANDBY:
		return "standby";
	case SRV_ROLE_LEADER:
		return "leader";
	default:
		return "standalone";
	}
}

static int lease_ms(const struct drv_server *s)
{
	return (int)(s->cfg.leader_lease_s * 1000);
}

/* How often a standby tries the row: a quarter of the lease, at most 1 s. */
static int poll_ms(const struct drv_server *s)
{
	int ms = lease_ms(s) / 4;

	return ms > 1000 ? 1000 : ms < 50 ? 50 : ms;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void set_leader_url(struct drv_server *s, const char *url)
{
	pthread_mutex_lock(&s->ha_mu);
	snprintf(s->leader_url, sizeof(s->leader_url), "%s", url);
	pthread_mutex_unlock(&s->ha_mu);
}

static void deposed(struct drv_server *s, const char *why)
{
	drv_log(&s->log, "deposed: %s; this controller's writes are refused by the database "
		"from now on, so it exits (start it again: it stands by)", why);
	_exit(DRV_EXIT_FAIL);
}

static int (*promote_fn)(struct drv_server *s, char *err, size_t errsz);

/* The takeover's load runs beside the lease thread, which keeps renewing. */
static void *promote_main(void *arg)
{
	struct drv_server *s = arg;
	int64_t t0 = drv_mono_ms();
	char err[1024] = "";

	if (promote_fn(s, err, sizeof(err)) < 0) {
		drv_log(&s->log, "cannot take over as leader: %s", err);
		_exit(DRV_EXIT_FAIL);
	}
	drv_log(&s->log, "role: leader (term %" PRId64 "), state loaded in %" PRId64 " ms",
		__atomic_load_n(&s->term, __ATOMIC_ACQUIRE), drv_mono_ms() - t0);
	return NULL;
}

/* Leader: renew every third of the lease; a whole lease without a renewal,
 * or the database naming another term, is a deposition. */
static void lead(struct drv_server *s, int64_t term)
{
	int64_t ok_sent = drv_mono_ms();

	while (!__atomic_load_n(&s->ha_stop, __ATOMIC_ACQUIRE)) {
		struct drv_lease l = { 0 };
		int64_t sent;
		char why[1200];
		int rc;

		for (int t = 0; t < lease_ms(s) / 3; t += 50)
			if (__atomic_load_n(&s->ha_stop, __ATOMIC_ACQUIRE))
				return;
			else
				sleep_ms(50);
		sent = drv_mono_ms();
		if (sent - ok_sent >= lease_ms(s)) {
			snprintf(why, sizeof(why), "no lease renewal for %" PRId64 " ms (the lease is "
				 "%d ms; was this process stopped?)", sent - ok_sent, lease_ms(s));
			deposed(s, why);
		}
		rc = drv_store_lease_renew(s->lease_store, term, lease_ms(s),
					   (int)(ok_sent + lease_ms(s) - sent), &l);
		if (rc == 0) {
			ok_sent = sent;
			continue;
		}
		if (rc == DRV_ESTATE) {
			snprintf(why, sizeof(why), "term %" PRId64 " ended; %s leads in term %" PRId64
				 " (%s)", term, l.holder, l.term, l.addr);
			deposed(s, why);
		}
		if (drv_mono_ms() - ok_sent >= lease_ms(s)) {
			snprintf(why, sizeof(why), "the lease could not be renewed for %d ms: %s",
				 lease_ms(s), s->lease_store->err);
			deposed(s, why);
		}
		drv_log(&s->log, "lease renewal failed (retrying within the lease): %s",
			s->lease_store->err);
	}
}

/* Standby: take the row once it lapses; 0 with the term, or the stop. */
static int stand_by(struct drv_server *s, int64_t *term)
{
	int64_t last_seen = __atomic_load_n(&s->term, __ATOMIC_ACQUIRE);
	bool logged_err = false;

	while (!__atomic_load_n(&s->ha_stop, __ATOMIC_ACQUIRE)) {
		struct drv_lease l = { 0 };
		int rc = drv_store_lease_take(s->lease_store, s->holder, s->advertise, lease_ms(s),
					      poll_ms(s) + 1000, &l);

		if (rc == 0) {
			*term = l.term;
			return 0;
		}
		if (rc == DRV_EEXIST) {
			logged_err = false;
			set_leader_url(s, l.addr);
			__atomic_store_n(&s->term, l.term, __ATOMIC_RELEASE);
			if (l.term != last_seen)
				drv_log(&s->log, "role: standby; %s leads in term %" PRId64 " (%s)",
					l.holder, l.term, l.addr);
			last_seen = l.term;
		} else if (!logged_err) {
			drv_log(&s->log, "standby: cannot read the lease: %s", s->lease_store->err);
			logged_err = true;
		}
		sleep_ms(poll_ms(s));
	}
	return DRV_ESTATE;
}

static void *ha_main(void *arg)
{
	struct drv_server *s = arg;
	int64_t term = __atomic_load_n(&s->term, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE) == SRV_ROLE_STANDBY) {
		if (stand_by(s, &term) < 0)
			return NULL;
		__atomic_store_n(&s->term, term, __ATOMIC_RELEASE);
		__atomic_add_fetch(&s->failovers, 1, __ATOMIC_ACQ_REL);
		set_leader_url(s, s->advertise);
		drv_log(&s->log, "took the leader lease (term %" PRId64 "): loading the state", term);
		__atomic_store_n(&s->role, SRV_ROLE_LEADER, __ATOMIC_RELEASE);
		if (pthread_create(&s->promote_thread, NULL, promote_main, s) != 0) {
			drv_log(&s->log, "cannot start the takeover thread");
			_exit(DRV_EXIT_FAIL);
		}
		s->promote_started = true;
	}
	lead(s, term);
	return NULL;
}

int srv_ha_start(struct drv_server *s, int (*promote)(struct drv_server *s, char *err,
		 size_t errsz), char *err, size_t errsz)
{
	struct drv_lease l = { 0 };
	char host[64] = "";
	int rc;

	char self[400];

	promote_fn = promote;
	gethostname(host, sizeof(host) - 1);
	snprintf(self, sizeof(self), "%s:%s:", host, s->state_dir);
	snprintf(s->holder, sizeof(s->holder), "%s%d:%" PRIx64, self, (int)getpid(),
		 (uint64_t)drv_mono_ms() ^ ((uint64_t)time(NULL) << 20));
	rc = drv_store_lease_take(s->lease_store, s->holder, s->advertise, lease_ms(s), 5000, &l);
	/* held by this very controller before a crash (the same host and state
	 * directory, whose lock we hold now: that process is gone): no need to
	 * wait out its lease */
	if (rc == DRV_EEXIST && !strncmp(l.holder, self, strlen(self))) {
		drv_log(&s->log, "the lease (term %" PRId64 ") was this controller's before a "
			"restart: taking it over now", l.term);
		rc = drv_store_lease_take_from(s->lease_store, l.term, s->holder, s->advertise,
					       lease_ms(s), 5000, &l);
	}
	if (rc < 0 && rc != DRV_EEXIST) {
		snprintf(err, errsz, "cannot read the leader lease: %s", s->lease_store->err);
		return DRV_EIO;
	}
	__atomic_store_n(&s->term, l.term, __ATOMIC_RELEASE);
	if (rc == 0) {
		set_leader_url(s, s->advertise);
		__atomic_store_n(&s->role, SRV_ROLE_LEADER, __ATOMIC_RELEASE);
		drv_log(&s->log, "role: leader (term %" PRId64 ", lease %" PRId64 " s)", l.term,
			s->cfg.leader_lease_s);
		rc = promote(s, err, errsz);
		if (rc < 0)
			return rc;
	} else {
		set_leader_url(s, l.addr);
		__atomic_store_n(&s->role, SRV_ROLE_STANDBY, __ATOMIC_RELEASE);
		drv_log(&s->log, "role: standby; %s leads in term %" PRId64 " (%s)", l.holder, l.term,
			l.addr);
	}
	if (pthread_create(&s->ha_thread, NULL, ha_main, s) != 0) {
		snprintf(err, errsz, "cannot start the lease thread");
		return DRV_EIO;
	}
	s->ha_started = true;
	return 0;
}

void srv_ha_stop(struct drv_server *s)
{
	__atomic_store_n(&s->ha_stop, 1, __ATOMIC_RELEASE);
	if (s->ha_started)
		pthread_join(s->ha_thread, NULL);
	if (s->promote_started)
		pthread_join(s->promote_thread, NULL);
	s->ha_started = s->promote_started = false;
}

/* After the state is flushed: a clean stop hands the lease over at once. */
void srv_ha_release(struct drv_server *s)
{
	if (s->lease_store && __atomic_load_n(&s->role, __ATOMIC_ACQUIRE) == SRV_ROLE_LEADER &&
	    drv_store_lease_release(s->lease_store, __atomic_load_n(&s->term, __ATOMIC_ACQUIRE),
				    2000) == 0)
		drv_log(&s->log, "released the leader lease (term %" PRId64 ")",
			__atomic_load_n(&s->term, __ATOMIC_ACQUIRE));
}

void srv_ha_redirect(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o)
{
	char url[300], loc[4096], q[3000];

	pthread_mutex_lock(&s->ha_mu);
	snprintf(url, sizeof(url), "%s", s->leader_url);
	pthread_mutex_unlock(&s->ha_mu);
	if (!url[0] || !strcmp(url, s->advertise)) {
		drv_http_resp_error(o, 503, "no_leader", NULL, "this controller stands by and no "
				    "leader is known yet; try again shortly");
		return;
	}
	drv_http_req_query_string(r, q, sizeof(q));
	snprintf(loc, sizeof(loc), "%s%s%s", url, drv_http_req_path(r), q);
	drv_http_resp_header(o, "Location", loc);
	drv_http_resp_error(o, 307, "standby", NULL, "this controller stands by; the leader is %s",
			    url);
}

void srv_ha_metrics(struct drv_server *s, struct drv_prom *w)
{
	static const char *const roles[] = { "standalone", "standby", "leader" };
	int role = __atomic_load_n(&s->role, __ATOMIC_ACQUIRE);

	drv_prom_family(w, "drover_controller_role", "gauge",
			"1 for this controller's role (standalone, standby, leader).");
	for (int i = 0; i < 3; i++)
		drv_prom_sample(w, "drover_controller_role", DRV_PROM_LABELS("role", roles[i]),
				role == i);
	drv_prom_family(w, "drover_controller_term", "gauge",
			"The leader lease's term, held or last seen (0 on SQLite).");
	drv_prom_sample(w, "drover_controller_term", NULL,
			(double)__atomic_load_n(&s->term, __ATOMIC_ACQUIRE));
	drv_prom_family(w, "drover_controller_failovers_total", "counter",
			"Takeovers this controller made after a leader's lease lapsed.");
	drv_prom_sample(w, "drover_controller_failovers_total", NULL,
			(double)__atomic_load_n(&s->failovers, __ATOMIC_ACQUIRE));
}
