/*
 * multi.c: the multi-resource placement scorer ("multi", src/core) and the
 * learned mix of task shapes it scores against.
 *
 * FGD (fgd.c) measures the free GPU capacity that the expected tasks could
 * not use, counting GPUs only. A free GPU on a node whose CPUs or memory
 * are gone is as lost as a sliver of a shared GPU, and a CPU-only task
 * that takes the CPUs an idle GPU needs strands that GPU. So here what a
 * node strands is what no common task shape (one with at least 2% of the
 * mix; a shape is GPUs or a GPU share, CPU, memory and model) could use:
 *
 *   - GPU: the free milli-GPUs left over when the node takes as many tasks
 *     of a shape as its free GPUs, CPU and memory together allow, for the
 *     shape that leaves least (a node with 3 free GPUs and 4 free cores
 *     strands 3 GPUs when every common shape asks 8 cores or more);
 *   - CPU, at half weight: the free CPU left over likewise (CPU-only shapes
 *     included), valued at the mix's GPUs per CPU (the node's own when the
 *     mix asks no CPU): idle CPU beside taken GPUs is capacity lost too, if
 *     less dear, and one price on every node keeps it from deciding where
 *     a share goes;
 *   - the free GPUs the node's free CPU or memory could not feed at the
 *     mix's mean CPU and memory per GPU (the best shape may ask less than
 *     most tasks do).
 *
 * A task goes to the node, and a share to the GPU, whose stranding it
 * raises least; ties go to best fit (fewer free GPUs; for a share the
 * fullest GPU that holds it), which keeps whole nodes whole and CPU-only
 * tasks on nodes whose GPUs are taken. A share never opens a fresh GPU
 * while a partly used one holds it (place.c's multi_key does the same
 * across nodes): two half-GPU jobs share one GPU, whatever the score. Minimum over shapes, not FGD's mean: a GPU that some common task
 * can still use is not lost, and the mean let the big shapes (for which
 * every partly used node's GPUs are "lost" anyway) outweigh the CPU that
 * the small ones need, so it chose as best-fit does.
 *
 * The mix is what the caller has seen: a histogram of recent task shapes
 * with exponential decay (half-life in tasks), kept by
 * drv_place_mix_observe; before anything was seen, a built-in mix of GPU
 * sizes without CPU or memory stands in.
 *
 * Cost per node scored: O(GPUs + shapes x partly used GPUs) for each
 * distinct free amount a share could go to, at most DRV_MIX_MAX shapes; no
 * allocation.
 */
#include "drover/model.h"
#include "core_int.h"

#include <math.h>
#include <stdlib.h>
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

/*
 * The slot of shape s: its own, a new one, or, when the table is full, the
 * nearest shape of the same GPU ask and model (*merge set: the caller blends
 * CPU and memory in by weight), else the lightest, replaced.
 */
static int32_t mix_slot(struct drv_place_mix *m, const struct drv_mix_shape *s, bool *merge)
{
	int32_t i, light = 0, near = -1;
	int64_t neard = INT64_MAX;

	*merge = false;
	for (i = 0; i < m->n; i++) {
		const struct drv_mix_shape *t = &m->shape[i];
		int64_t d;
		if (t->milli != s->milli || t->model != s->model) {
			if (t->w < m->shape[light].w)
				light = i;
			continue;
		}
		if (t->cpu_milli == s->cpu_milli && t->mem_mib == s->mem_mib)
			return i;
		/* a core weighs as much as 8 GiB */
		d = llabs(t->cpu_milli - s->cpu_milli) + llabs(t->mem_mib - s->mem_mib) / 8;
		if (d < neard) {
			neard = d;
			near = i;
		}
		if (t->w < m->shape[light].w)
			light = i;
	}
	if (m->n < DRV_MIX_MAX) {
		i = m->n++;
	} else if (near >= 0) {
		*merge = true;
		return near;
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
		bool merge;
		int32_t k = mix_slot(m, &s, &merge);
		struct drv_mix_shape *sh = &m->shape[k];
		for (t = 0; t < g->count; t++) {
			if (merge) {
				double a = sh->w / (sh->w + m->inc);
				sh->cpu_milli = llround(a * (double)sh->cpu_milli +
							(1 - a) * (double)s.cpu_milli);
				sh->mem_mib = llround(a * (double)sh->mem_mib + (1 - a) * (double)s.mem_mib);
			}
			sh->w += m->inc;
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

/* Shapes rarer than this in the mix are left out of the score. */
#define MIX_MIN_SHARE 0.02

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
	double gpu_per_cpu;   /* the node's milli-GPUs per milli-CPU: what idle CPU is worth */
	int32_t part[DRV_MAX_NODE_GPUS]; /* free milli of each partly used GPU */
};

/* GPUs a whole task takes, or shares a free GPU holds. */
static int32_t per_of(int32_t milli)
{
	if (milli >= DRV_MILLI)
		return milli / DRV_MILLI;
	return milli > 0 ? DRV_MILLI / milli : 0;
}

void drv__mix_flatten(const struct drv_place_opts *o, struct drv__mix_flat *f)
{
	const struct drv_place_mix *m = o ? o->mix : NULL;
	int32_t i;

	f->cpu_per_gpu = f->mem_per_gpu = f->gpu_per_cpu = 0;
	if (m && m->n > 0 && m->total > 0) {
		double g = 0, cp = 0, me = 0;
		f->n = 0;
		for (i = 0; i < m->n; i++) {
			int32_t k = f->n;
			/* a rare shape is no reason to keep capacity for it */
			if (m->shape[i].w < MIX_MIN_SHARE * m->total)
				continue;
			f->milli[k] = m->shape[i].milli;
			f->model[k] = m->shape[i].model;
			f->cpu[k] = m->shape[i].cpu_milli;
			f->mem[k] = m->shape[i].mem_mib;
			f->w[k] = m->shape[i].w / m->total;
			f->per[k] = per_of(f->milli[k]);
			if (f->milli[k] > 0) {
				g += f->w[k] * f->milli[k];
				cp += f->w[k] * (double)f->cpu[k];
				me += f->w[k] * (double)f->mem[k];
			}
			f->n++;
		}
		if (g > 0) {
			f->cpu_per_gpu = cp / g;
			f->mem_per_gpu = me / g;
			f->gpu_per_cpu = cp > 0 ? g / cp : 0;
		}
		return;
	}
	for (i = 0; i < (int32_t)DRV_ARRAY_SIZE(builtin_milli); i++) {
		f->milli[i] = builtin_milli[i];
		f->model[i] = -1;
		f->cpu[i] = f->mem[i] = 0;
		f->w[i] = builtin_share[i];
		f->per[i] = per_of(f->milli[i]);
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
	s->gpu_per_cpu = n->cpu_milli > 0 ? (double)n->ngpus * DRV_MILLI / (double)n->cpu_milli : 0;
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
/*
 * What of node s no shape of the mix could use: the free GPU milli that
 * even the shape that fits the node best leaves, plus half the idle CPU
 * that the best-fitting shape for CPU leaves, valued at the node's milli-GPUs
 * per milli-CPU (idle CPU beside taken GPUs is capacity lost too, if less
 * dear). A shape "leaves" what is free beyond the most tasks of it the node
 * could still take (GPUs, CPU and memory together).
 */
static double stranded(const struct nfree *s, int model, const struct drv__mix_flat *f)
{
	int64_t cpu = DRV_MAX(s->cpu, 0), mem = DRV_MAX(s->mem, 0);
	int64_t gpu_left = INT64_MAX, cpu_left = INT64_MAX;
	/* idle CPU is worth the GPUs the mix's tasks would feed with it (the
	 * node's own GPUs per CPU when the mix asks no CPU): one price on every
	 * node, so it never outweighs where a share fits best */
	double gpc = f->gpu_per_cpu > 0 ? f->gpu_per_cpu : s->gpu_per_cpu, lack = 0;
	int32_t t, k;

	for (t = 0; t < f->n && (gpu_left > 0 || cpu_left > 0); t++) {
		int32_t m = f->milli[t];
		int64_t fit = INT64_MAX;
		if (m > 0 && f->model[t] >= 0 && f->model[t] != model)
			continue;
		/* how many tasks of this shape the node could still take */
		if (m >= DRV_MILLI) {
			fit = s->whole / f->per[t];
		} else if (m > 0) {
			fit = (int64_t)s->whole * f->per[t];
			for (k = 0; k < s->npart; k++)
				if (s->part[k] >= m)
					fit += s->part[k] / m;
		}
		/* (divide only when CPU or memory is what limits) */
		if (f->cpu[t] > 0 && (fit == INT64_MAX || cpu < fit * f->cpu[t]))
			fit = cpu / f->cpu[t];
		if (f->mem[t] > 0 && (fit == INT64_MAX || mem < fit * f->mem[t]))
			fit = mem / f->mem[t];
		if (fit == INT64_MAX)
			fit = 0; /* a shape that asks for nothing */
		gpu_left = DRV_MIN(gpu_left, s->all - fit * m);
		cpu_left = DRV_MIN(cpu_left, cpu - fit * f->cpu[t]);
	}
	if (gpu_left == INT64_MAX)
		return 0;
	if (f->cpu_per_gpu > 0)
		lack = DRV_MAX(lack, (double)s->all - (double)cpu / f->cpu_per_gpu);
	if (f->mem_per_gpu > 0)
		lack = DRV_MAX(lack, (double)s->all - (double)mem / f->mem_per_gpu);
	return (double)gpu_left + 0.5 * (double)cpu_left * gpc + lack;
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
	int32_t k, best = -1, bestfree = 0, seen[DRV_MAX_NODE_GPUS], nseen = 0;
	bool shared = false;

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
	/* a share never opens a fresh GPU while a shared one holds it */
	for (k = 0; k < n->ngpus && !shared; k++)
		shared = n->gpu_milli_used[k] > 0 && DRV_MILLI - n->gpu_milli_used[k] >= g->gpu_milli;
	for (k = 0; k < n->ngpus; k++) {
		int32_t f0 = DRV_MILLI - n->gpu_milli_used[k], slot = -1, i;
		if (f0 < g->gpu_milli || (shared && f0 == DRV_MILLI))
			continue;
		/* GPUs with as much free score alike: only the first is scored */
		for (i = 0; i < nseen && seen[i] != f0; i++)
			;
		if (i < nseen)
			continue;
		seen[nseen++] = f0;
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
