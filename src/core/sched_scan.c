/*
 * sched_scan.c: one pending job's turn in the pass. In order: a held
 * nomination, never-fits, strict order, quota, a placement attempt (on
 * reserved GPUs too when the job ends before they are needed), the
 * reason with its numbers, a preemption search, a reservation, and a
 * request to an elastic pool.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* Upper bound: could j fit if the reserved GPUs were free? */
static bool fits_with_blocked(const struct pass *p, const struct sched_job *j)
{
	struct avail a;
	sched__job_avail(p->s, j, j->pool_mask, &a);
	a.whole += p->blocked_gpus;
	a.nodes += p->blocked_gpus;
	a.milli += p->blocked_gpus * DRV_MILLI;
	a.maxnode = DRV_MIN(a.maxnode + p->blocked_max, p->s->max_node_gpus);
	a.maxlevel += (int32_t)DRV_MIN(p->blocked_gpus, INT32_MAX - a.maxlevel);
	return sched__avail_fits(j, &a);
}

static void count_blocked(struct pass *p, const struct sched_job *j)
{
	if (p->nblocked++ == 0)
		p->first_blocked = j->id;
}

/* Exact: would j fit now without the reservations' blocks? */
static bool fits_unblocked(struct pass *p, const struct sched_job *j)
{
	struct place_fail f;
	int32_t pool;
	int rc;
	sched__blocks_off(p);
	rc = sched__try_place(p, j, &p->s->scratch2, &pool, &f);
	sched__blocks_on(p);
	return rc == 0;
}

/* Enough free GPUs, but a task's CPU or memory is free on no node of
 * its pools: say which, with the most free on one up node (an O(nodes)
 * scan, only for jobs that ask for CPU or memory and whose GPUs fit). */
static bool cpu_mem_why(const struct drv_sched *s, const struct sched_job *j,
			struct drv_sched_decision *w)
{
	const struct drv_cluster *c = s->c;
	int64_t cpu = 0, mem = 0, free_cpu = 0, free_mem = 0;
	int32_t g, i;

	for (g = 0; g < j->job->ngroups; g++) {
		cpu = DRV_MAX(cpu, j->job->groups[g].cpu_milli);
		mem = DRV_MAX(mem, j->job->groups[g].mem_mib);
	}
	if (!cpu && !mem)
		return false;
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (n->state != DRV_NODE_UP ||
		    (j->pool_mask && (n->pool < 0 || !(j->pool_mask >> n->pool & 1))))
			continue;
		free_cpu = DRV_MAX(free_cpu, n->cpu_milli - n->cpu_used);
		free_mem = DRV_MAX(free_mem, n->mem_mib - n->mem_used);
	}
	if (cpu <= free_cpu && mem <= free_mem)
		return false;
	sched__why_init(w, DRV_REASON_RESOURCES);
	w->count = cpu > free_cpu ? DRV_SHORT_CPU : DRV_SHORT_MEM;
	w->n[0] = cpu > free_cpu ? cpu : mem;
	w->n[1] = cpu > free_cpu ? free_cpu : free_mem;
	return true;
}

/* A job that requires nodes (-w with a larger -N) waits for their room:
 * the first of them goes into the reason (Slurm says Resources here too). */
static void req_node_why(const struct drv_cluster *c, const struct drv_job *job,
			 struct drv_sched_decision *w)
{
	for (int32_t i = 0; i < job->nnode_selector; i++) {
		if (strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE) != 0)
			continue;
		for (int32_t k = 0; k < c->nnodes; k++)
			if (c->nodes[k].name && !strcmp(c->nodes[k].name, job->node_selector[i].value)) {
				w->node = k;
				w->flags |= DRV_DEC_REQ_NODE;
				return;
			}
	}
}

static void resources_why(struct pass *p, const struct sched_job *j, const struct place_fail *f,
			  struct drv_sched_decision *w)
{
	struct avail a;
	sched__job_avail(p->s, j, j->pool_mask, &a);
	if (sched__avail_fits(j, &a) && cpu_mem_why(p->s, j, w))
		return;
	/* "not together" is topology only for a job that asked for a level;
	 * slices below its required level are what keeps it apart */
	sched__why_init(w, f->topology && (j->level >= 0 || j->slice_level >= 0) ?
				   DRV_REASON_TOPOLOGY : DRV_REASON_RESOURCES);
	w->n[0] = j->need_milli;
	w->n[1] = j->need_whole > 0 ? DRV_MIN(a.whole * DRV_MILLI, a.milli) : a.milli;
	w->n[2] = j->max_task;
	w->n[3] = a.maxnode;
	w->level = j->level;
	if (j->slice_level > j->level) {
		w->level = j->slice_level;
		w->count = j->slice_size;
	}
	if (f->topology)
		w->n[2] = w->n[3] = 0;
	req_node_why(p->s->c, j->job, w);
	/* It would fit now if reserved GPUs were free: say so. */
	if (p->s->nresv > 0 && p->blocked_gpus > 0 && p->exact_left > 0 && fits_with_blocked(p, j) &&
	    (p->exact_left--, fits_unblocked(p, j))) {
		const struct reservation *r = &p->s->resv[p->first_resv];
		sched__why_init(w, DRV_REASON_RESERVATION);
		w->n[0] = (int64_t)p->s->jobs[r->job].id;
		w->at = r->at;
	}
}

static void why_preempting(struct pass *p, struct sched_job *j)
{
	struct drv_sched_decision w;
	sched__why_init(&w, DRV_REASON_PREEMPTING);
	w.n[0] = j->victims_left;
	w.at = j->nomination_deadline;
	sched__set_why(p, j, &w);
	count_blocked(p, j);
}

static void why_never(struct pass *p, struct sched_job *j)
{
	sched__set_why(p, j, &j->never_why);
}

/* A preemptor whose victims are gone: the held placement is its own to
 * use; it no longer stands as the pass's reservation, so the next blocked
 * job gets one (and skipping waits for that). */
static void take_own_nomination(struct pass *p, int32_t slot)
{
	sched__resv_drop(p, slot);
	sched__nomination_drop(p->s, slot);
	if (p->nresv_made > 0)
		p->nresv_made--;
}

static uint32_t start_flags(const struct pass *p, bool own_nom, int qrc)
{
	return (p->nblocked && !own_nom ? DRV_DEC_BACKFILLED : 0) |
	       (qrc > 0 ? DRV_DEC_BORROWING : 0);
}

/* One placement attempt, unless nothing was freed since j last failed
 * with nothing reserved: then it fails again (placement only gets harder
 * as the cluster fills). */
static int place_attempt(struct pass *p, struct sched_job *j, struct drv_placement *pl,
			 struct place_fail *f)
{
	struct drv_sched *s = p->s;
	int32_t pool;
	int rc;
	if (j->fail_gen == s->rel_gen) {
		memset(f, 0, sizeof(*f));
		f->topology = j->fail_topo;
		return DRV_ENOSPACE;
	}
	rc = sched__try_place(p, j, pl, &pool, f);
	if (rc && !f->never && s->block.ntasks == 0) {
		j->fail_gen = s->rel_gen;
		j->fail_topo = f->topology;
	}
	return rc;
}

/* Starts the job when it fits now, on reserved GPUs too when it is short
 * enough to be gone before any reservation starts; a job of any model
 * checks its quota on the placement found. True when its turn is over
 * (started, or held at quota with *w set); else f says why it did not fit. */
static bool start_if_fits(struct pass *p, int32_t slot, bool own_nom, int *qrc,
			  struct drv_sched_decision *w, struct place_fail *f)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	struct drv_placement *pl = &s->scratch;
	int32_t pool;
	int rc = place_attempt(p, j, pl, f);

	if (rc && s->nresv > 0 && p->blocked_gpus > 0 && j->dur > 0 &&
	    p->now + j->dur <= p->t_min && fits_with_blocked(p, j)) {
		struct place_fail f2;
		sched__blocks_off(p);
		rc = sched__try_place(p, j, pl, &pool, &f2);
		if (rc == 0 && j->quota_any_model)
			*qrc = sched__quota_check_placement(s, j, pl, w);
		if (rc == 0 && *qrc >= 0)
			sched__pass_start(p, slot, pl, start_flags(p, own_nom, *qrc));
		sched__blocks_on(p);
		if (rc == 0 && *qrc < 0)
			sched__set_why(p, j, w);
		return rc == 0;
	}
	if (rc)
		return false;
	if (j->quota_any_model) {
		*qrc = sched__quota_check_placement(s, j, pl, w);
		if (*qrc < 0) {
			sched__set_why(p, j, w);
			return true;
		}
	}
	sched__pass_start(p, slot, pl, start_flags(p, own_nom, *qrc));
	return true;
}

/* A blocked job that may hold one of the pass's reservations gets the
 * earliest time it fits as one (w becomes "reserved"), and counts as
 * blocked. */
static void reserve(struct pass *p, int32_t slot, struct drv_sched_decision *w)
{
	const struct drv_sched_policy *pol = p->pol;
	int32_t depth = pol->mode == DRV_MODE_BACKFILL && pol->conservative_depth > 1 ?
				pol->conservative_depth : 1;
	struct drv_placement *pl = &p->s->scratch;
	if (p->nresv_made < depth) {
		int64_t at;
		p->nresv_made++;
		at = sched__earliest_cached(p, &p->s->jobs[slot], pl);
		if (at != T_INF) {
			sched__resv_add(p, slot, at, pl, false);
			sched__why_init(w, DRV_REASON_RESERVED);
			w->at = at;
		}
	}
	count_blocked(p, &p->s->jobs[slot]);
}

/* The job does not fit now (f says why): it preempts, or waits with its
 * reason, a reservation and maybe a request for elastic nodes. */
static void wait_or_preempt(struct pass *p, int32_t slot, int qrc, const struct place_fail *f)
{
	const struct drv_sched_policy *pol = p->pol;
	struct sched_job *j = &p->s->jobs[slot];
	struct drv_sched_decision w;
	bool resources, reason_blocks;

	resources_why(p, j, f, &w);
	if (pol->preemption && !j->never_preempts && p->tries < pol->max_preempt_tries &&
	    sched__try_preempt(p, slot, qrc)) {
		why_preempting(p, j);
		sched__resv_add(p, slot, j->nomination_deadline, &j->nomination, true);
		return;
	}
	resources = w.reason == DRV_REASON_RESOURCES || w.reason == DRV_REASON_TOPOLOGY;
	if (pol->preemption && resources)
		w.flags |= j->never_preempts ? DRV_DEC_CLASS_NEVER : DRV_DEC_NO_VICTIMS;
	reason_blocks = resources || w.reason == DRV_REASON_RESERVATION;
	if (reason_blocks && pol->mode != DRV_MODE_GREEDY)
		reserve(p, slot, &w);
	sched__set_why(p, j, &w);
	if (reason_blocks || w.reason == DRV_REASON_RESERVED)
		sched__consider_provision(p, j);
}

/* Its user's limits: true when one holds it (its reason set). A job past
 * max_submitted is admitted once earlier ones left, in queue order. */
static bool user_held(struct pass *p, struct sched_job *j)
{
	struct sched_user *u;
	struct drv_sched_decision w;
	if (j->user < 0)
		return false;
	u = &p->s->users[j->user];
	if (!j->admitted && u->admitted < u->max_submitted) {
		j->admitted = true;
		u->admitted++;
	}
	if (!j->admitted) {
		sched__why_init(&w, DRV_REASON_USER_SUBMIT);
		w.n[0] = u->max_submitted;
	} else if (u->max_running >= 0 && u->running >= u->max_running) {
		sched__why_init(&w, DRV_REASON_USER_JOBS);
		w.n[0] = u->running;
		w.n[1] = u->max_running;
	} else if (u->max_milli >= 0 && u->milli + j->need_milli > u->max_milli) {
		sched__why_init(&w, DRV_REASON_USER_GPUS);
		w.n[0] = j->need_milli;
		w.n[1] = u->milli;
		w.n[2] = u->max_milli;
	} else {
		return false;
	}
	sched__set_why(p, j, &w);
	return true;
}

void sched__scan_one(struct pass *p, int32_t slot)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	struct drv_sched_decision w;
	struct place_fail f;
	int qrc = 0;
	bool own_nom = false;

	if (j->victims_left > 0) {
		/* its nominated placement is already held (pass start) */
		why_preempting(p, j);
		return;
	}
	if (j->nomination.ntasks > 0) {
		take_own_nomination(p, slot);
		own_nom = true;
	}
	if (j->never) {
		why_never(p, j);
		return;
	}
	if (p->pol->mode == DRV_MODE_STRICT && p->nblocked > 0 && !own_nom) {
		/* (a preemptor whose victims are gone was granted its GPUs
		 * when it preempted: no blocked job could use them) */
		sched__why_init(&w, DRV_REASON_PRIORITY);
		w.n[0] = (int64_t)p->first_blocked;
		sched__set_why(p, j, &w);
		return;
	}
	if (user_held(p, j))
		return;
	if (s->tenants[j->tenant].has_quota && !j->quota_any_model) {
		qrc = sched__quota_check(s, j->tenant, j->quota_model, j->need_milli, &w);
		if (qrc < 0) {
			sched__set_why(p, j, &w);
			/* the same answer while what it read keeps its value */
			j->quota_seq = s->quota_seq;
			j->quota_vid = sched__quota_sig(s, j->tenant, j->quota_model)->vid;
			return;
		}
	}
	if (start_if_fits(p, slot, own_nom, &qrc, &w, &f))
		return;
	/* f.never (the up nodes could not hold it even empty) with j->never
	 * unset: an elastic pool may grow for it, or the capacity's necessary
	 * conditions missed a mix (CPU on one node, GPUs on another); it
	 * waits with the reason resources */
	wait_or_preempt(p, slot, qrc, &f);
}
