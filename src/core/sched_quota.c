/*
 * sched_quota.c: tenant quotas with cohort borrowing, as the pass checks
 * them: before placement for a job of one GPU model, after it for a job
 * that may take any model, and whether any running job could be reclaimed
 * (a cohort peer holding more than its nominal quota).
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* What tenant t may take of model m beyond its own headroom: the cohort's
 * unused quota, within its borrowing limit (0 without a cohort). */
static int64_t may_borrow(const struct drv_sched *s, const struct sched_tenant *t, int m)
{
	int64_t cq = 0, cu = 0, may, head;
	int32_t i;
	if (t->cohort < 0)
		return 0;
	head = DRV_MAX(0, t->quota[m] - sched__quota_use(t, m));
	for (i = 0; i < s->ntenants; i++) {
		const struct sched_tenant *o = &s->tenants[i];
		if (o->cohort != t->cohort || o->quota[m] < 0)
			continue;
		cq += o->quota[m];
		cu += sched__quota_use(o, m);
	}
	may = cq - cu - head;
	if (t->limit[m] >= 0 && t->quota[m] + t->limit[m] - sched__quota_use(t, m) - head < may)
		may = t->quota[m] + t->limit[m] - sched__quota_use(t, m) - head;
	return DRV_MAX(may, 0);
}

static bool vals_eq(const struct quota_vals *a, const struct quota_vals *b)
{
	return a->use == b->use && a->may == b->may && a->users == b->users;
}

/* Names g's new values v: the name they had if they are among the last
 * seen, else a new one. */
static void name_vals(struct drv_sched *s, struct quota_sig *g, const struct quota_vals *v)
{
	uint32_t i;
	for (i = 0; i < g->nseen && i < QUOTA_SEEN; i++)
		if (vals_eq(&g->seen[i].v, v)) {
			g->vid = g->seen[i].vid;
			g->v = *v;
			return;
		}
	if (++g->last_vid == 0) {
		/* names ran out (2^32 changes): every held job is checked again */
		s->quota_all_changed = ++s->quota_seq;
		g->last_vid = 1;
		g->nseen = 0;
	}
	g->vid = g->last_vid;
	g->v = *v;
	g->seen[g->nseen++ % QUOTA_SEEN] = (struct quota_seen){ *v, g->vid };
}

const struct quota_sig *sched__quota_sig(struct drv_sched *s, int32_t ti, int m)
{
	struct sched_tenant *t = &s->tenants[ti];
	struct quota_sig *g = &t->sig[m];
	uint64_t latest = DRV_MAX(t->quota_changed[m], s->quota_all_changed);
	struct quota_vals v;
	if (t->cohort >= 0)
		latest = DRV_MAX(latest, s->cohort_changed[t->cohort].m[m]);
	if (g->at && g->at >= latest)
		return g;
	v.use = sched__quota_use(t, m);
	v.may = t->quota[m] >= 0 ? may_borrow(s, t, m) : 0;
	v.users = t->users_changed[m];
	if (g->at < s->quota_all_changed)
		g->nseen = 0; /* values under other settings name nothing now */
	if (!g->at || g->at < s->quota_all_changed || !vals_eq(&v, &g->v))
		name_vals(s, g, &v);
	g->at = s->quota_seq;
	return g;
}

/*
 * May tenant t take need more milli-GPUs of model m? 0 = within its
 * nominal quota, 1 = by borrowing from its cohort, -1 = no (w filled).
 */
int sched__quota_check(const struct drv_sched *s, int32_t ti, int m, int64_t need,
		       struct drv_sched_decision *w)
{
	const struct sched_tenant *t = &s->tenants[ti];
	int64_t may;

	if (m < 0 || m >= DRV_MAX_MODELS || t->quota[m] < 0)
		return 0;
	if (sched__quota_use(t, m) + need <= t->quota[m])
		return 0;
	may = may_borrow(s, t, m);
	if (t->cohort >= 0 && need <= DRV_MAX(0, t->quota[m] - sched__quota_use(t, m)) + may)
		return 1;
	if (w) {
		sched__why_init(w, DRV_REASON_QUOTA);
		w->model = m;
		w->n[0] = need;
		w->n[1] = sched__quota_use(t, m);
		w->n[2] = t->quota[m];
		w->n[3] = may;
	}
	return -1;
}

/* Quota for a placement whose models were not known before (model = any). */
int sched__quota_check_placement(const struct drv_sched *s, const struct sched_job *j,
				 const struct drv_placement *pl, struct drv_sched_decision *w)
{
	int64_t by[DRV_MAX_MODELS];
	int32_t i;
	int m, rc = 0, r;
	if (!s->tenants[j->tenant].has_quota)
		return 0;
	memset(by, 0, sizeof(by));
	for (i = 0; i < pl->ntasks; i++) {
		int32_t n = pl->tasks[i].node;
		m = n >= 0 && n < s->c->nnodes ? s->c->nodes[n].model : -1;
		if (m >= 0 && m < DRV_MAX_MODELS)
			by[m] += (int64_t)pl->tasks[i].gpu_milli *
				 __builtin_popcountll(pl->tasks[i].gpu_mask);
	}
	for (m = 0; m < DRV_MAX_MODELS; m++) {
		if (!by[m])
			continue;
		r = sched__quota_check(s, j->tenant, m, by[m], w);
		if (r < 0)
			return -1;
		if (r > 0)
			rc = 1;
	}
	return rc;
}

/* May any running job be a reclaim victim for j (a job within its nominal
 * quota, of a tenant with a cohort)? Only if a cohort peer uses more than
 * its nominal quota of a model j's tenant has a quota of. */
bool sched__reclaim_possible(const struct drv_sched *s, const struct sched_job *j,
			     const uint8_t *only)
{
	const struct sched_tenant *jt = &s->tenants[j->tenant];
	int32_t i;
	for (i = 0; i < s->ntenants; i++) {
		const struct sched_tenant *o = &s->tenants[i];
		uint32_t both = o->quota_models & jt->quota_models;
		if (i == j->tenant || o->cohort != jt->cohort || (only && !only[i]))
			continue;
		while (both) {
			int m = __builtin_ctz(both);
			both &= both - 1;
			if (sched__reclaim_use(o, m) > o->quota[m])
				return true;
		}
	}
	return false;
}

/* Per tenant: may a job of it reclaim (it has a cohort, and a peer is over
 * its quota of a model both have a quota of)? Recomputed when a quota
 * check's inputs changed (quota_seq moved). */
const uint8_t *sched__may_reclaim(struct drv_sched *s)
{
	struct sched_job probe;
	int32_t i;
	if (s->may_reclaim_seq == s->quota_seq + 1)
		return s->may_reclaim;
	DRV_GROW(s->may_reclaim, (size_t)s->ntenants + 1, s->may_reclaim_cap);
	memset(&probe, 0, sizeof(probe));
	for (i = 0; i < s->ntenants; i++) {
		probe.tenant = i;
		s->may_reclaim[i] = s->tenants[i].cohort >= 0 && s->tenants[i].has_quota &&
				    sched__reclaim_possible(s, &probe, NULL);
	}
	s->may_reclaim_seq = s->quota_seq + 1;
	return s->may_reclaim;
}
