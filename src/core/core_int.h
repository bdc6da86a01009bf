/*
 * core_int.h: helpers shared inside src/core (cluster.c, place.c, fgd.c, multi.c);
 * not part of the public contract.
 */
#ifndef DROVER_CORE_INT_H
#define DROVER_CORE_INT_H

#include "drover/model.h"

/* Applies one task to its node (sign +1) or takes it back (-1), keeping
 * every aggregate exact. */
void drv__task_apply(struct drv_cluster *c, const struct drv_task_place *t, int sign);

/* Rebuilds c->kids and each vertex's kid_first/nkids when vertices were
 * added since the last build; O(vertices). */
void drv__cluster_kids(struct drv_cluster *c);

/*
 * FGD (fgd.c): how much one task of group g on node n raises the node's
 * expected fragmentation under the mix in opts (or the built-in one). For
 * fractional tasks *gpu is set to the GPU that raises it least (-1 when
 * none fits by milli; the caller checks memory). Huge when it cannot fit.
 */
double drv__fgd_delta(const struct drv_node *n, const struct drv_task_group *g,
		      const struct drv_place_opts *opts, int *gpu);

/*
 * multi (multi.c): the mix as shares summing to 1, flattened once per
 * placement (the learned one in opts->mix, else the built-in one).
 */
struct drv__mix_flat {
	int32_t n;
	int32_t milli[DRV_MIX_MAX];
	int8_t model[DRV_MIX_MAX];
	int32_t per[DRV_MIX_MAX];   /* GPUs a whole task takes; shares one free GPU holds */
	int64_t cpu[DRV_MIX_MAX], mem[DRV_MIX_MAX];
	double w[DRV_MIX_MAX];
	double cpu_per_gpu, mem_per_gpu, gpu_per_cpu; /* the mix's means over GPU shapes; 0 = none */
};
void drv__mix_flatten(const struct drv_place_opts *opts, struct drv__mix_flat *f);
/*
 * How much one task of group g on node n raises the node's expected
 * stranded GPU capacity (GPUs unusable for lack of GPUs, CPU or memory)
 * under the mix f. For fractional tasks *gpu is set to the GPU that raises
 * it least (-1 when none fits by milli; the caller checks memory). Huge
 * when whole GPUs do not fit; 0 on a node without GPUs.
 */
double drv__multi_delta(const struct drv_node *n, const struct drv_task_group *g,
			const struct drv__mix_flat *f, int *gpu);

#endif
