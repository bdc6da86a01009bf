/*
 * multi.c: the multi-resource placement scorer ("multi", src/core) and the
 * learned task-size mix it scores against.
 *
 * FGD (fgd.c) measures how much free GPU capacity a placement leaves that
 * the expected tasks could not use, counting GPUs only. A free GPU on a
 * node whose CPUs or memory are gone is as lost as a sliver of a shared
 * GPU, and a CPU-only task that takes the CPUs an idle GPU needs strands
 * that GPU. So here a node's stranding for one task shape is:
 *
 *   - all its free GPU milli when the shape's CPU or memory no longer fits
 *     (the node's free GPUs are unusable to that shape, whatever they are);
 *   - else, for g whole GPUs: all free milli when fewer than g GPUs are
 *     wholly free, else the free milli on partly used GPUs;
 *   - else, for a share of m milli: the free milli on GPUs with less than m
 *     free;
 *   - 0 for CPU-only shapes and for shapes of another GPU model.
 *
 * The expected stranding weighs that over the mix (shape shares). A task
 * goes to the node, and a share to the GPU, that raises it least; ties go
 * to the node with fewer free GPUs (best fit), which keeps CPU-only tasks
 * on nodes whose GPUs are taken. The mix is what the caller has seen: a
 * histogram of recent task shapes with exponential decay (half-life in
 * tasks), kept by drv_place_mix_observe; before anything was seen, a
 * built-in mix of GPU sizes stands in.
 *
 * Cost per node scored: O(GPUs + shapes x partly used GPUs), with at most
 * DRV_MIX_MAX shapes; no allocation.
 */
#include "drover/model.h"
#include "core_int.h"

#include <math.h>
#include <string.h>

/* ---- the learned mix ---------------------------------------------------- */

const char *drv_place_strategy_name(enum drv_place_strategy s)
{
	switch (s) {
	case DRV_PLACE_BESTFIT:
		return "bestfit";
	case DRV_PLACE_FGD:
		return "fgd";
	case DRV_PLACE_MULTI:
		return "multi";
	}
	return "?";
}

int drv_place_strategy_parse(const char *s, enum drv_place_strategy *out)
{
	int i;

	if (s && drv_strcaseeq(s, "best-fit")) {
		*out = DRV_PLACE_BESTFIT;
		return 0;
	}
	for (i = DRV_PLACE_BESTFIT; s && i <= DRV_PLACE_MULTI; i++)
		if (drv_strcaseeq(s, drv_place_strategy_name((enum drv_place_strategy)i))) {
			*out = (enum drv_place_strategy)i;
			return 0;
		}
	return DRV_EINVAL;
}

void drv_place_mix_init(struct drv_place_mix *m, int32_t half_life)
{
	memset(m, 0, sizeof(*m));
	m->half_life = half_life > 0 ? half_life : DRV_MIX_HALF_LIFE;
	m->inc = 1;
}

/* Weights are kept relative to a growing increment (decaying every old
 * weight instead would cost O(shapes) per task); rescaled before they
 * could overflow. */
static void mix_rescale(struct drv_place_mix *m)
{
	int32_t i;
	m->total = 0;
	for (i = 0; i < m->n; i++) {
		m->shape[i].w /= m->inc;
		m->total += m->shape[i].w;
	}
	m->inc = 1;
}

static int32_t mix_slot(struct drv_place_mix *m, const struct drv_mix_shape *s)
{
	int32_t i, light = 0;

	for (i = 0; i < m->n; i++) {
		const struct drv_mix_shape *t = &m->shape[i];
		if (t->milli == s->milli && t->model == s->model && t->cpu_milli == s->cpu_milli &&
		    t->mem_mib == s->mem_mib)
			return i;
		if (t->w < m->shape[light].w)
			light = i;
	}
	if (m->n < DRV_MIX_MAX) {
		i = m->n++;
	} else {
		i = light;
		m->total -= m->shape[i].w;
	}
	m->shape[i] = *s;
	m->shape[i].w = 0;
	return i;
}

void drv_place_mix_observe(struct drv_place_mix *m, const struct drv_job *j)
{
	double step = exp2(1.0 / (double)(m->half_life > 0 ? m->half_life : DRV_MIX_HALF_LIFE));
	int32_t gi, t;

	for (gi = 0; gi < j->ngroups; gi++) {
		const struct drv_task_group *g = &j->groups[gi];
		struct drv_mix_shape s = {
			.milli = g->gpus > 0 ? g->gpus * DRV_MILLI : g->gpu_milli,
			.model = g->model,
			.cpu_milli = g->cpu_milli,
			.mem_mib = g->mem_mib,
		};
		int32_t k = mix_slot(m, &s);
		for (t = 0; t < g->count; t++) {
			m->shape[k].w += m->inc;
			m->total += m->inc;
			m->inc *= step;
			m->seen++;
			if (m->inc > 1e150)
				mix_rescale(m);
		}
	}
}

double drv_place_mix_share(const struct drv_place_mix *m, int32_t i)
{
	if (i < 0 || i >= m->n || m->total <= 0)
		return 0;
	return m->shape[i].w / m->total;
}

/* ---- scoring ------------------------------------------------------------ */

/* The built-in mix (no task seen yet): FGD's sizes, no CPU or memory. */
static const int32_t builtin_milli[] = { 250, 500, 1000, 2000, 4000, 8000 };
static const double builtin_share[] = { 0.10, 0.15, 0.35, 0.10, 0.10, 0.20 };

/* What is free on a node, as the score reads it. */
struct nfree {
	int32_t whole;        /* GPUs with nothing on them */
	int32_t npart;
	int64_t all;          /* free milli over all GPUs */
	int64_t cpu, mem;
	int32_t part[DRV_MAX_NODE_GPUS]; /* free milli of each partly used GPU */
};

void drv__mix_flatten(const struct drv_place_opts *o, struct drv__mix_flat *f)
{
	const struct drv_place_mix *m = o ? o->mix : NULL;
	int32_t i;

	if (m && m->n > 0 && m->total > 0) {
		for (i = 0; i < m->n; i++) {
			f->milli[i] = m->shape[i].milli;
			f->model[i] = m->shape[i].model;
			f->cpu[i] = m->shape[i].cpu_milli;
			f->mem[i] = m->shape[i].mem_mib;
			f->w[i] = m->shape[i].w / m->total;
		}
		f->n = m->n;
		return;
	}
	for (i = 0; i < (int32_t)DRV_ARRAY_SIZE(builtin_milli); i++) {
		f->milli[i] = builtin_milli[i];
		f->model[i] = -1;
		f->cpu[i] = f->mem[i] = 0;
		f->w[i] = builtin_share[i];
	}
	f->n = (int32_t)DRV_ARRAY_SIZE(builtin_milli);
}

static void nfree_of(const struct drv_node *n, struct nfree *s)
{
	int k;

	s->whole = s->npart = 0;
	s->all = 0;
	s->cpu = n->cpu_milli - n->cpu_used;
	s->mem = n->mem_mib - n->mem_used;
	for (k = 0; k < n->ngpus; k++) {
		int32_t f = DRV_MILLI - n->gpu_milli_used[k];
		s->all += f;
		if (f == DRV_MILLI)
			s->whole++;
		else if (f > 0)
			s->part[s->npart++] = f;
	}
}

/* Expected stranded GPU milli of a node of GPU model `model`. */
static double stranded(const struct nfree *s, int model, const struct drv__mix_flat *f)
{
	double sum = 0;
	int32_t t, k;

	for (t = 0; t < f->n; t++) {
		int32_t m = f->milli[t];
		int64_t lost = 0;
		if (m == 0 || (f->model[t] >= 0 && f->model[t] != model))
			continue;
		if (f->cpu[t] > s->cpu || f->mem[t] > s->mem) {
			lost = s->all;
		} else if (m >= DRV_MILLI) {
			lost = s->whole < m / DRV_MILLI ? s->all : s->all - (int64_t)s->whole * DRV_MILLI;
		} else {
			for (k = 0; k < s->npart; k++)
				if (s->part[k] < m)
					lost += s->part[k];
		}
		sum += f->w[t] * (double)lost;
	}
	return sum;
}

/* The node after a share of milli on one GPU whose free is f0; slot is the
 * index of that GPU in s->part, or -1 when it is wholly free. */
static void take_share(struct nfree *s, int32_t slot, int32_t milli)
{
	if (slot < 0) {
		s->whole--;
		s->part[s->npart++] = DRV_MILLI - milli;
	} else {
		s->part[slot] -= milli;
	}
	s->all -= milli;
}

double drv__multi_delta(const struct drv_node *n, const struct drv_task_group *g,
			const struct drv__mix_flat *f, int *gpu)
{
	struct nfree s, t;
	double before, after, bestd = 0;
	int32_t k, best = -1, bestfree = 0;

	if (gpu)
		*gpu = -1;
	if (n->ngpus == 0)
		return 0; /* nothing to strand; fit_node decides */
	nfree_of(n, &s);
	before = stranded(&s, n->model, f);
	s.cpu -= g->cpu_milli;
	s.mem -= g->mem_mib;
	if (g->gpus > 0) {
		if (s.whole < g->gpus)
			return 1e18;
		s.whole -= g->gpus;
		s.all -= (int64_t)g->gpus * DRV_MILLI;
	}
	if (g->gpu_milli <= 0 || g->gpus > 0)
		return stranded(&s, n->model, f) - before;
	for (k = 0; k < n->ngpus; k++) {
		int32_t f0 = DRV_MILLI - n->gpu_milli_used[k], slot = -1, i;
		if (f0 < g->gpu_milli)
			continue;
		if (f0 < DRV_MILLI)
			for (i = 0; i < s.npart && slot < 0; i++)
				if (s.part[i] == f0)
					slot = i;
		t = s;
		take_share(&t, slot, g->gpu_milli);
		after = stranded(&t, n->model, f) - before;
		/* ties: the fuller GPU (best fit), then the lower index */
		if (best < 0 || after < bestd - 1e-9 || (after < bestd + 1e-9 && f0 < bestfree)) {
			best = k;
			bestd = after;
			bestfree = f0;
		}
	}
	if (gpu)
		*gpu = best;
	return best < 0 ? 1e18 : bestd;
}
