/*
 * deps.c: Slurm job dependencies (sbatch --dependency) as gates
 * (CONTRACTS.md section 4): a pending job whose dependencies are not yet
 * satisfied is not handed to the scheduler; its reason code is Dependency,
 * or DependencyNeverSatisfied once they can never be (it then stays
 * pending, as Slurm leaves it, or is cancelled when the server's
 * kill_invalid_depend is on).
 *
 * What each type waits for, on job T (sbatch(1)):
 *   after:T       T started (or ended without starting), + the delay
 *   afterany:T    T ended, in any state
 *   afterok:T     T succeeded; never when it ended otherwise
 *   afternotok:T  T ended and did not succeed; never when it succeeded
 *   aftercorr:T   the element of array T with this element's index
 *                 succeeded (afterok on T for a job that is no element)
 *   singleton     no earlier job of the same name and user is unfinished
 * A `,` list needs all of them, a `?` list any one. A dependency on an
 * array (its parent) waits for the whole array: the parent ends when every
 * element has, succeeded only when all did.
 *
 * Once T is final the answer cannot change: it is kept per dependency, so
 * a target already left for the store is read from it once. Nothing is
 * written: after a restart the waiting jobs are found again from their
 * specs and evaluated anew, with the same answers.
 *
 * A job with a begin time (sbatch --begin, turned into a time at submit
 * and kept in its record) waits the same way, with reason code BeginTime,
 * once its dependencies (if any) are satisfied.
 *
 * Everything here runs under s->mu.
 */
#include "server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DEP_WAIT = 0, DEP_OK = 1, DEP_NEVER = -1 };

/* What is known of one dependency of a waiting job. */
struct srv_dep_memo {
	int8_t res;      /* DEP_OK (from at on), DEP_NEVER; DEP_WAIT = not settled */
	int64_t at;      /* wall s from which DEP_OK holds (the event + the delay) */
	char why[96];    /* what settled it ("job 12 succeeded") */
};

static bool dep_job_id(const struct drv_dep *d, uint64_t *id)
{
	char *end;
	unsigned long long v;

	if (!d->job || !*d->job)
		return false;
	v = strtoull(d->job, &end, 10);
	if (*end || v == 0)
		return false;
	*id = v;
	return true;
}

static bool is_type(const struct drv_dep *d, const char *t)
{
	return d->type && strcmp(d->type, t) == 0;
}

int srv_deps_refuse(struct drv_server *s, const struct drv_jobspec *spec, char *why, size_t n)
{
	for (int32_t i = 0; i < spec->ndeps; i++) {
		const struct drv_dep *d = &spec->deps[i];
		struct srv_job *t, *tmp = NULL;
		uint64_t id;

		if (is_type(d, "singleton"))
			continue;
		if (!dep_job_id(d, &id)) {
			snprintf(why, n, "--dependency=%s:%s: found \"%s\", expected a job id "
				 "(Job dependency problem)", d->type, d->job ? d->job : "",
				 d->job ? d->job : "");
			return -1;
		}
		t = srv_job_lookup(s, id, &tmp);
		if (tmp)
			srv_job_free(tmp);
		if (!t) {
			snprintf(why, n, "--dependency=%s:%llu: no job %llu (Job dependency problem)",
				 d->type, (unsigned long long)id, (unsigned long long)id);
			return -1;
		}
	}
	return 0;
}

/* Element index of array p, or NULL. */
static struct srv_job *element_at(struct drv_server *s, const struct srv_job *p, int32_t index)
{
	for (uint64_t id = p->par->first; id < p->par->first + (uint64_t)p->par->n; id++) {
		struct srv_job *e = srv_job_get(s, id);

		if (e && e->parent == p->id && e->index == index)
			return e;
	}
	return NULL;
}

/* The answer of job t (final or not) for dependency d. */
static int judge(const struct drv_dep *d, const struct srv_job *t, struct srv_dep_memo *m)
{
	bool final = srv_jstate_final(t->state), ok = t->state == J_SUCCEEDED;
	unsigned long long id = (unsigned long long)t->id;

	if (is_type(d, "after")) {
		if (!t->start_time && !final)
			return DEP_WAIT;
		m->at = (t->start_time ? t->start_time : t->end_time) + d->delay_s;
		snprintf(m->why, sizeof(m->why), "job %llu %s", id, t->start_time ? "started"
			 : "ended before it started");
		return m->res = DEP_OK;
	}
	if (!final)
		return DEP_WAIT;
	m->at = t->end_time + d->delay_s;
	snprintf(m->why, sizeof(m->why), "job %llu ended %s", id, srv_jstate_name(t->state));
	if (is_type(d, "afterany"))
		return m->res = DEP_OK;
	if (is_type(d, "afternotok"))
		return m->res = ok ? DEP_NEVER : DEP_OK;
	return m->res = ok ? DEP_OK : DEP_NEVER;   /* afterok, aftercorr */
}

static int singleton(struct drv_server *s, const struct srv_job *j, struct srv_dep_memo *m)
{
	for (uint64_t id = 1; id < j->id && id <= s->njobs; id++) {
		struct srv_job *x = srv_job_get(s, id);

		if (x && !x->par && !srv_jstate_final(x->state) && x->spec.job.user &&
		    j->spec.job.user && strcmp(x->spec.job.user, j->spec.job.user) == 0 &&
		    x->spec.job.name && j->spec.job.name &&
		    strcmp(x->spec.job.name, j->spec.job.name) == 0) {
			snprintf(m->why, sizeof(m->why), "job %llu of the same name and user is %s",
				 (unsigned long long)x->id, srv_jstate_name(x->state));
			return DEP_WAIT;
		}
	}
	snprintf(m->why, sizeof(m->why), "no earlier job of the same name and user is unfinished");
	m->at = 0;
	return DEP_OK;   /* not kept: a later submission does not matter, an earlier one may requeue */
}

/* Dependency i of job j: DEP_OK, DEP_WAIT or DEP_NEVER (m says why). */
static int dep_one(struct drv_server *s, uint64_t jid, int32_t i, int64_t now)
{
	struct srv_job *j = srv_job_get(s, jid), *t, *tmp = NULL;
	const struct drv_dep *d;
	struct srv_dep_memo *m;
	uint64_t id;
	int rc;

	if (!j || !j->dep_memo)
		return DEP_WAIT;
	d = &j->spec.deps[i];
	m = &j->dep_memo[i];
	if (m->res == DEP_NEVER)
		return DEP_NEVER;
	if (m->res == DEP_OK)
		return now >= m->at ? DEP_OK : DEP_WAIT;
	if (is_type(d, "singleton"))
		return singleton(s, j, m);
	if (!dep_job_id(d, &id)) {
		snprintf(m->why, sizeof(m->why), "\"%s\" names no job", d->job ? d->job : "");
		return m->res = DEP_NEVER;
	}
	t = srv_job_get(s, id);
	if (!t) {
		t = srv_job_lookup(s, id, &tmp);   /* may release s->mu meanwhile */
		if (!(j = srv_job_get(s, jid)) || !j->dep_memo) {
			if (tmp)
				srv_job_free(tmp);
			return DEP_WAIT;
		}
		m = &j->dep_memo[i];
	}
	if (!t) {
		snprintf(m->why, sizeof(m->why), "job %llu is not known (purged?)",
			 (unsigned long long)id);
		return m->res = DEP_NEVER;
	}
	if (is_type(d, "aftercorr") && t->par && j->parent) {
		struct srv_job *e = element_at(s, t, j->index);

		if (!e) {   /* no corresponding task: nothing to wait for */
			snprintf(m->why, sizeof(m->why), "array %llu has no task %d",
				 (unsigned long long)id, j->index);
			m->at = 0;
			rc = m->res = DEP_OK;
		} else {
			rc = judge(d, e, m);
		}
	} else {
		rc = judge(d, t, m);
	}
	if (tmp)
		srv_job_free(tmp);
	return rc == DEP_OK && now < m->at ? DEP_WAIT : rc;
}

/* All (or, with '?', any) of j's dependencies; why the last one judged. */
static int deps_all(struct drv_server *s, uint64_t jid, int64_t now, char *why, size_t n)
{
	struct srv_job *j = srv_job_get(s, jid);
	int32_t nd = j ? j->spec.ndeps : 0, nok = 0, nnever = 0;
	bool any = j && j->spec.deps_any;

	*why = 0;
	for (int32_t i = 0; i < nd; i++) {
		int rc = dep_one(s, jid, i, now);

		if (!(j = srv_job_get(s, jid)) || !j->dep_memo)
			return DEP_WAIT;
		if (rc != DEP_WAIT || !*why) {
			const struct drv_dep *d = &j->spec.deps[i];

			if (d->job)
				snprintf(why, n, "%s:%s: %s", d->type, d->job, j->dep_memo[i].why);
			else
				snprintf(why, n, "%s: %s", d->type, j->dep_memo[i].why);
		}
		nok += rc == DEP_OK;
		nnever += rc == DEP_NEVER;
		if (any ? rc == DEP_OK : rc == DEP_NEVER)
			break;
	}
	if (any)
		return nok ? DEP_OK : nnever == nd ? DEP_NEVER : DEP_WAIT;
	return nnever ? DEP_NEVER : nok == nd ? DEP_OK : DEP_WAIT;
}

int srv_partition_refuse(struct drv_server *s, const struct drv_jobspec *spec, char *why,
			 size_t n)
{
	const struct drv_cluster *c = &s->cluster;
	char *list, *save = NULL, *p;
	int rc = 0;

	if (!spec->slurm.partition || !c->npools)
		return 0;
	list = drv_strdup(spec->slurm.partition);
	for (p = strtok_r(list, ",", &save); p && !rc; p = strtok_r(NULL, ",", &save)) {
		int32_t i;
		size_t len;

		for (i = 0; i < c->npools && strcmp(c->pools[i].name, p) != 0; i++)
			;
		if (i < c->npools)
			continue;
		len = (size_t)snprintf(why, n, "invalid partition specified: %s (the partitions "
				       "are the cluster's pools:", p);
		for (i = 0; i < c->npools && len < n; i++)
			len += (size_t)snprintf(why + len, n - len, "%s %s", i ? "," : "",
						c->pools[i].name);
		if (len < n)
			snprintf(why + len, n - len, ")");
		rc = -1;
	}
	drv_free(list);
	return rc;
}

static void begin_reason(const struct srv_job *j, char *why, size_t n)
{
	time_t t = (time_t)j->begin_time;
	struct tm tm;
	char at[32];

	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(why, n, "waiting for its begin time: not before %s (--begin=%s)", at,
		 j->spec.slurm.begin ? j->spec.slurm.begin : "");
}

void srv_deps_gate(struct drv_server *s, struct srv_job *j)
{
	char why[320];
	size_t len = 0;

	if ((!j->spec.ndeps && j->begin_time <= drv_wall_s()) || j->par ||
	    j->state != J_PENDING || j->dep_wait)
		return;
	if (j->spec.ndeps)
		j->dep_memo = drv_calloc((size_t)j->spec.ndeps, sizeof(*j->dep_memo));
	j->dep_wait = true;
	j->begin_wait = !j->spec.ndeps;
	DRV_GROW(s->depwait, s->ndepwait + 1, s->depwaitcap);
	s->depwait[s->ndepwait++] = j->id;
	if (!j->spec.ndeps) {
		begin_reason(j, why, sizeof(why));
		srv_set_str(&j->reason, why);
		return;
	}
	len = (size_t)snprintf(why, sizeof(why), "waiting for its dependenc%s: ",
			       j->spec.ndeps == 1 ? "y" : "ies");
	for (int32_t i = 0; i < j->spec.ndeps && len < sizeof(why); i++) {
		const struct drv_dep *d = &j->spec.deps[i];

		len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s%s%s",
					i ? (j->spec.deps_any ? "?" : ",") : "", d->type,
					d->job ? ":" : "", d->job ? d->job : "");
	}
	srv_set_str(&j->reason, why);
}

void srv_deps_free(struct srv_job *j)
{
	drv_free(j->dep_memo);
	j->dep_memo = NULL;
}

void srv_deps_tick(struct drv_server *s, int64_t now)
{
	size_t k = 0;
	char why[320], r[400];

	while (k < s->ndepwait) {
		uint64_t id = s->depwait[k];
		struct srv_job *j = srv_job_get(s, id);
		int rc;

		if (!j || !j->dep_wait || j->state != J_PENDING) {
			if (j) {
				j->dep_wait = false;
				srv_deps_free(j);
			}
			s->depwait[k] = s->depwait[--s->ndepwait];
			continue;
		}
		rc = deps_all(s, id, now, why, sizeof(why));
		/* a store read may have let others change the list: find id again */
		if (k >= s->ndepwait || s->depwait[k] != id || !(j = srv_job_get(s, id)) ||
		    !j->dep_wait)
			continue;
		if (rc == DEP_WAIT) {
			k++;
			continue;
		}
		if (rc == DEP_NEVER) {
			k++;
			if (j->dep_never)
				continue;
			j->dep_never = true;
			if (s->cfg.kill_invalid_depend) {
				snprintf(r, sizeof(r), "DependencyNeverSatisfied: %s (cancelled: "
					 "kill_invalid_depend)", why);
				srv_job_cancel(s, j, r);
			} else {
				snprintf(r, sizeof(r), "its dependency can never be satisfied: %s; "
					 "cancel it", why);
				srv_job_transition(s, j, J_PENDING, r);
			}
			continue;
		}
		if (j->begin_time > now) {   /* the dependencies are met; the begin time is not */
			k++;
			if (!j->begin_wait) {
				j->begin_wait = true;
				begin_reason(j, r, sizeof(r));
				srv_job_transition(s, j, J_PENDING, r);
			}
			continue;
		}
		s->depwait[k] = s->depwait[--s->ndepwait];
		j->dep_wait = false;
		j->dep_never = false;
		srv_deps_free(j);
		if (!j->spec.ndeps)
			snprintf(r, sizeof(r), "its begin time came (--begin=%s)",
				 j->spec.slurm.begin ? j->spec.slurm.begin : "");
		else
			snprintf(r, sizeof(r), "dependency satisfied: %s", why);
		srv_job_transition(s, j, J_PENDING, r);
		srv_job_queue(s, j);
		srv_job_mark(s, j);
		srv_sched_kick(s);
	}
}
