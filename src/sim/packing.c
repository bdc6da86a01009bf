/*
 * packing.c: GPUs lost to NVLink-domain packing, measured on a finished
 * simulation run (drv_sim_packing_loss in sim.h).
 *
 * The run's records say, for every job, when it was submitted and when
 * each of its runs started and ended on which GPUs. Replaying them in time
 * order gives, for every instant, the free GPUs of each NVLink domain and
 * the jobs waiting that must sit in one domain. Between two consecutive
 * instants that state is constant, so time-weighted sums are exact.
 *
 * What counts as lost, at an instant t: some job that requires one NVLink
 * domain is pending, the cluster's free GPUs F would hold the smallest such
 * job (s GPUs), and no single domain has s free GPUs. Then no waiting
 * domain-bound job can start (all are at least s), although the free total
 * could hold one had it been in one domain: the capacity exists but is
 * split. All F free GPUs count as lost at t. That is an upper bound on what
 * any better packing could have started at t (it cannot start more than F),
 * so a figure under a target on this count is under it on any finer one. An
 * instant where the smallest job does fit some domain but waits (a backfill
 * reservation holds it back) is a queue-order loss, not a packing one, and
 * is counted apart, in idle_wait_gpu_s, with every other free GPU-second
 * while a domain-bound job waits.
 *
 * Split capacity is not always a placement's fault: four 10-tray gangs
 * running on four 18-tray racks leave 32 trays free and a 9-tray gang
 * waiting, and no placement of those gangs could have done better. So the
 * lost instants are also tested for a repacking (repackable below) and
 * summed again, in repack_lost_gpu_s, only where one exists: that is
 * what a better placement could have recovered.
 */
#include "drover/sim.h"

#include <stdlib.h>
#include <string.h>

enum { EV_SUBMIT, EV_START, EV_END, EV_LEAVE };

struct pev {
	int64_t t;
	int32_t kind;
	int32_t idx; /* job (submit, leave) or run (start, end) */
};

static int pev_cmp(const void *a, const void *b)
{
	const struct pev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* The replayed state: per-GPU milli in use, free GPUs per domain, and the
 * pending domain-bound jobs as counts by size. */
struct pstate {
	const struct drv_cluster *c;
	int32_t *gpu_base;   /* [nnodes]: index of the node's first GPU in used */
	int32_t *used;       /* milli in use, per GPU */
	int32_t *dom_of;     /* [nvertices]: domain index of a domain vertex, else -1 */
	int32_t *dom_free;   /* [ndom] */
	int32_t ndom;
	int64_t free_total;
	int64_t gpus;        /* every node's GPUs */
	int32_t *dom_cap;    /* [ndom] GPUs of each domain */
	/* for the repacking test: each run's items (GPUs that must stay in one
	 * domain: the whole run when it is domain-bound, else each task), and
	 * the runs holding GPUs now */
	int32_t *item_off;   /* [nruns + 1] into items */
	int32_t *items;
	int32_t *act, *act_pos, nact;
	int32_t *scratch, *bins;
	int32_t *size;       /* distinct pending sizes (GPUs) */
	int32_t *count;      /* pending jobs of each */
	int32_t nsize;
};

static void pstate_init(struct pstate *s, const struct drv_cluster *c)
{
	int32_t n, v, g = 0;

	memset(s, 0, sizeof(*s));
	s->c = c;
	s->gpu_base = drv_calloc((size_t)c->nnodes + 1, sizeof(int32_t));
	s->dom_of = drv_calloc((size_t)c->nvertices, sizeof(int32_t));
	for (v = 0; v < c->nvertices; v++)
		s->dom_of[v] = -1;
	for (n = 0; n < c->nnodes; n++) {
		s->gpu_base[n] = g;
		g += c->nodes[n].ngpus;
		if (s->dom_of[c->nodes[n].nvl_domain] < 0)
			s->dom_of[c->nodes[n].nvl_domain] = s->ndom++;
	}
	s->used = drv_calloc((size_t)g + 1, sizeof(int32_t));
	s->dom_free = drv_calloc((size_t)s->ndom + 1, sizeof(int32_t));
	s->dom_cap = drv_calloc((size_t)s->ndom + 1, sizeof(int32_t));
	s->bins = drv_calloc((size_t)s->ndom + 1, sizeof(int32_t));
	for (n = 0; n < c->nnodes; n++)
		s->dom_free[s->dom_of[c->nodes[n].nvl_domain]] += c->nodes[n].ngpus;
	memcpy(s->dom_cap, s->dom_free, (size_t)s->ndom * sizeof(int32_t));
	s->free_total = s->gpus = g;
	/* at most one distinct size per GPU count a job can have */
	s->size = drv_calloc((size_t)g + 2, sizeof(int32_t));
	s->count = drv_calloc((size_t)g + 2, sizeof(int32_t));
}

static void pstate_release(struct pstate *s)
{
	drv_free(s->gpu_base);
	drv_free(s->used);
	drv_free(s->dom_of);
	drv_free(s->dom_free);
	drv_free(s->dom_cap);
	drv_free(s->bins);
	drv_free(s->item_off);
	drv_free(s->items);
	drv_free(s->act);
	drv_free(s->act_pos);
	drv_free(s->scratch);
	drv_free(s->size);
	drv_free(s->count);
}

static int32_t task_gpus(const struct drv_task_place *tp)
{
	return __builtin_popcountll(tp->gpu_mask);
}

static int32_t domain_bound_gpus(const struct drv_cluster *c, const struct drv_job *j);

/* Each run's items, for the repacking test (see the top of the file). */
static void make_items(struct pstate *s, const struct drv_sim_workload *w,
		       const struct drv_sim_result *r)
{
	size_t i, n = 0;
	int32_t k;

	s->item_off = drv_calloc(r->nruns + 1, sizeof(int32_t));
	for (i = 0; i < r->nruns; i++)
		n += (size_t)r->runs[i].place.ntasks;
	s->items = drv_calloc(n + 1, sizeof(int32_t));
	s->scratch = drv_calloc(n + 2, sizeof(int32_t));
	s->act = drv_calloc(r->nruns + 1, sizeof(int32_t));
	s->act_pos = drv_calloc(r->nruns + 1, sizeof(int32_t));
	n = 0;
	for (i = 0; i < r->nruns; i++) {
		const struct drv_placement *p = &r->runs[i].place;
		bool whole = domain_bound_gpus(s->c, &w->jobs[r->runs[i].job].job) > 0;
		s->item_off[i] = (int32_t)n;
		for (k = 0; k < p->ntasks; k++) {
			if (whole && k > 0)
				s->items[n - 1] += task_gpus(&p->tasks[k]);
			else
				s->items[n++] = task_gpus(&p->tasks[k]);
		}
	}
	s->item_off[r->nruns] = (int32_t)n;
}

static void activate(struct pstate *s, int32_t run, bool on)
{
	if (on) {
		s->act_pos[run] = s->nact;
		s->act[s->nact++] = run;
	} else {
		int32_t at = s->act_pos[run], last = s->act[--s->nact];
		s->act[at] = last;
		s->act_pos[last] = at;
	}
}

static int desc(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x < y) - (x > y);
}

/* Whether items it[0..n) (largest first) go into the rooms bins[0..nb),
 * trying each distinct room once per item; *budget bounds the search. */
static bool fit(const int32_t *it, int32_t n, int32_t *bins, int32_t nb, long *budget)
{
	int32_t b, j;

	if (n == 0)
		return true;
	if (--*budget < 0)
		return false;
	for (b = 0; b < nb; b++) {
		bool ok;
		if (bins[b] < it[0])
			continue;
		for (j = 0; j < b && bins[j] != bins[b]; j++)
			;
		if (j < b)
			continue; /* the same room as a bin already tried */
		bins[b] -= it[0];
		ok = fit(it + 1, n - 1, bins, nb, budget);
		bins[b] += it[0];
		if (ok)
			return true;
	}
	return false;
}

#define REPACK_BUDGET 100000

/*
 * Whether the GPUs held now, moved as their constraints allow (a
 * domain-bound run whole, other runs task by task), and one more job of
 * gpus GPUs in one domain fit the domains: an exact search, largest item
 * first (its first path is first fit decreasing). 1 = some placement of
 * what runs would have started that job, 0 = none would, -1 = the search
 * ran out of REPACK_BUDGET steps (counted as not lost: the figure stays a
 * lower bound, and the caller counts such instants).
 */
static int repackable(struct pstate *s, int32_t gpus)
{
	int32_t n = 0, i, k;
	long budget = REPACK_BUDGET;

	for (i = 0; i < s->nact; i++)
		for (k = s->item_off[s->act[i]]; k < s->item_off[s->act[i] + 1]; k++)
			s->scratch[n++] = s->items[k];
	s->scratch[n++] = gpus;
	qsort(s->scratch, (size_t)n, sizeof(int32_t), desc);
	memcpy(s->bins, s->dom_cap, (size_t)s->ndom * sizeof(int32_t));
	if (fit(s->scratch, n, s->bins, s->ndom, &budget))
		return 1;
	return budget < 0 ? -1 : 0;
}

/* Adds sign * each task's milli to its GPUs; a GPU going from nothing to
 * something (or back) changes its domain's free count. */
static void apply(struct pstate *s, const struct drv_placement *p, int sign)
{
	int32_t i, k;

	for (i = 0; i < p->ntasks; i++) {
		const struct drv_task_place *tp = &p->tasks[i];
		const struct drv_node *nd = &s->c->nodes[tp->node];
		int32_t d = s->dom_of[nd->nvl_domain];
		for (k = 0; k < nd->ngpus && k < 64; k++) {
			int32_t *u = &s->used[s->gpu_base[tp->node] + k];
			int32_t before = *u;
			if (!(tp->gpu_mask >> k & 1))
				continue;
			*u += sign * tp->gpu_milli;
			if ((before == 0) != (*u == 0)) {
				int32_t delta = *u == 0 ? 1 : -1;
				s->dom_free[d] += delta;
				s->free_total += delta;
			}
		}
	}
}

/* Counts one pending job of gpus more (sign 1) or fewer (-1). */
static void pend(struct pstate *s, int32_t gpus, int sign)
{
	int32_t i;
	if (gpus > s->gpus) /* larger than the cluster: one slot for all such */
		gpus = (int32_t)s->gpus + 1;
	for (i = 0; i < s->nsize && s->size[i] != gpus; i++)
		;
	if (i == s->nsize) {
		s->size[s->nsize] = gpus;
		s->count[s->nsize++] = 0;
	}
	s->count[i] += sign;
}

/* The smallest pending domain-bound job in GPUs, 0 when none waits. */
static int32_t smallest(const struct pstate *s)
{
	int32_t i, m = 0;
	for (i = 0; i < s->nsize; i++)
		if (s->count[i] > 0 && (m == 0 || s->size[i] < m))
			m = s->size[i];
	return m;
}

static int32_t max_domain_free(const struct pstate *s)
{
	int32_t i, m = 0;
	for (i = 0; i < s->ndom; i++)
		if (s->dom_free[i] > m)
			m = s->dom_free[i];
	return m;
}

/* Whether j must sit in one NVLink domain, and its size in whole GPUs. */
static int32_t domain_bound_gpus(const struct drv_cluster *c, const struct drv_job *j)
{
	int64_t milli;
	if (j->topo_mode != DRV_TOPO_REQUIRED || !j->topo_level ||
	    drv_cluster_level(c, j->topo_level) != drv_cluster_level(c, "nvlink-domain"))
		return 0;
	milli = drv_job_gpu_milli(j);
	return (int32_t)((milli + DRV_MILLI - 1) / DRV_MILLI);
}

/* The events of w and r: a job enters the pending set at its submit and at
 * the end of a run that requeued it, leaves it when a run starts, and a
 * rejected job never enters it. */
static struct pev *collect(const struct drv_sim_workload *w, const struct drv_sim_result *r,
			   size_t *nev)
{
	struct pev *ev = drv_calloc((size_t)w->njobs + 2 * r->nruns + 1, sizeof(*ev));
	size_t n = 0, i;

	for (i = 0; i < (size_t)w->njobs; i++)
		if (!w->jobs[i].reject)
			ev[n++] = (struct pev){ w->jobs[i].job.submit_time, EV_SUBMIT, (int32_t)i };
	for (i = 0; i < r->nruns; i++) {
		const struct drv_sim_run *ru = &r->runs[i];
		if (ru->start < 0)
			continue;
		ev[n++] = (struct pev){ ru->start, EV_START, (int32_t)i };
		if (ru->end >= 0)
			ev[n++] = (struct pev){ ru->end, ru->outcome == DRV_SIM_PREEMPTED ||
								 ru->outcome == DRV_SIM_FAILED
							 ? EV_LEAVE
							 : EV_END,
						(int32_t)i };
	}
	qsort(ev, n, sizeof(*ev), pev_cmp);
	*nev = n;
	return ev;
}

static void step(struct pstate *s, const struct drv_sim_workload *w,
		 const struct drv_sim_result *r, const struct pev *e)
{
	const struct drv_sim_run *ru = e->kind == EV_SUBMIT ? NULL : &r->runs[e->idx];
	int32_t job = ru ? ru->job : e->idx;
	int32_t g = domain_bound_gpus(s->c, &w->jobs[job].job);

	switch (e->kind) {
	case EV_SUBMIT:
		if (g)
			pend(s, g, 1);
		break;
	case EV_START:
		apply(s, &ru->place, 1);
		activate(s, e->idx, true);
		if (g)
			pend(s, g, -1);
		break;
	case EV_LEAVE: /* ended and requeued: pending again */
		if (g)
			pend(s, g, 1);
		/* fall through */
	case EV_END:
		apply(s, &ru->place, -1);
		activate(s, e->idx, false);
		break;
	}
}

int drv_sim_packing_loss(const struct drv_cluster *c, const struct drv_sim_workload *w,
			 const struct drv_sim_result *r, int64_t from, int64_t to,
			 struct drv_sim_packing *out)
{
	struct pstate s;
	struct pev *ev;
	size_t nev, i = 0;

	memset(out, 0, sizeof(*out));
	if (to < from || r->sum.failures > 0)
		return DRV_EINVAL;
	out->from = from;
	out->to = to;
	pstate_init(&s, c);
	out->gpu_s = (double)s.gpus * (double)(to - from);
	make_items(&s, w, r);
	ev = collect(w, r, &nev);
	while (i < nev) {
		int64_t t = ev[i].t, next, a, b;
		int32_t small;
		for (; i < nev && ev[i].t == t; i++)
			step(&s, w, r, &ev[i]);
		next = i < nev ? ev[i].t : to;
		a = t > from ? t : from;
		b = next < to ? next : to;
		if (t >= from && t < to)
			out->events++;
		if (b <= a)
			continue;
		out->alloc_gpu_s += (double)(s.gpus - s.free_total) * (double)(b - a);
		small = smallest(&s);
		if (!small)
			continue;
		out->idle_wait_gpu_s += (double)s.free_total * (double)(b - a);
		if (s.free_total < small || max_domain_free(&s) >= small)
			continue;
		out->lost_gpu_s += (double)s.free_total * (double)(b - a);
		switch (repackable(&s, small)) {
		case 1:
			out->repack_lost_gpu_s += (double)s.free_total * (double)(b - a);
			break;
		case -1:
			out->repack_undecided++;
			break;
		}
	}
	drv_free(ev);
	pstate_release(&s);
	return 0;
}
