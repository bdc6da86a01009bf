/*
 * job.c: jobs as the scheduler sees them (src/core): lifecycle, deep
 * copy, building helpers and the sums the scheduler asks for.
 */
#include "drover/model.h"

#include <stdio.h>
#include <string.h>

void drv_job_init(struct drv_job *j)
{
	memset(j, 0, sizeof(*j));
}

void drv_job_release(struct drv_job *j)
{
	int32_t i;

	for (i = 0; i < j->ngroups; i++)
		drv_free(j->groups[i].name);
	drv_free(j->groups);
	for (i = 0; i < j->nregions; i++)
		drv_free(j->regions[i]);
	drv_free(j->regions);
	drv_free(j->name);
	drv_free(j->tenant);
	drv_free(j->user);
	drv_free(j->topo_level);
	memset(j, 0, sizeof(*j));
}

void drv_job_copy(struct drv_job *dst, const struct drv_job *src)
{
	int32_t i;

	*dst = *src;
	dst->name = drv_strdup(src->name);
	dst->tenant = drv_strdup(src->tenant);
	dst->user = drv_strdup(src->user);
	dst->topo_level = drv_strdup(src->topo_level);
	dst->groups = NULL;
	if (src->ngroups > 0) {
		dst->groups = drv_malloc(sizeof(*dst->groups) * (size_t)src->ngroups);
		for (i = 0; i < src->ngroups; i++) {
			dst->groups[i] = src->groups[i];
			dst->groups[i].name = drv_strdup(src->groups[i].name);
		}
	}
	dst->regions = NULL;
	if (src->nregions > 0) {
		dst->regions = drv_malloc(sizeof(*dst->regions) * (size_t)src->nregions);
		for (i = 0; i < src->nregions; i++)
			dst->regions[i] = drv_strdup(src->regions[i]);
	}
}

struct drv_task_group *drv_job_add_group(struct drv_job *j, const char *name, int32_t count,
					 int32_t gpus, int32_t gpu_milli)
{
	struct drv_task_group *g;

	/* groups has no capacity field: grow one at a time (jobs have few). */
	j->groups = drv_realloc(j->groups, sizeof(*j->groups) * ((size_t)j->ngroups + 1));
	g = &j->groups[j->ngroups++];
	memset(g, 0, sizeof(*g));
	g->name = drv_strdup(name);
	g->count = count;
	g->gpus = gpus;
	g->gpu_milli = gpus > 0 ? 0 : gpu_milli;
	g->model = -1;
	return g;
}

void drv_job_set_topology(struct drv_job *j, enum drv_topo_mode mode, const char *level)
{
	drv_free(j->topo_level);
	j->topo_level = NULL;
	j->topo_mode = level ? mode : DRV_TOPO_NONE;
	if (level && mode != DRV_TOPO_NONE)
		j->topo_level = drv_strdup(level);
	else
		j->topo_mode = DRV_TOPO_NONE;
}

void drv_job_add_region(struct drv_job *j, const char *region)
{
	j->regions = drv_realloc(j->regions, sizeof(*j->regions) * ((size_t)j->nregions + 1));
	j->regions[j->nregions++] = drv_strdup(region);
}

int32_t drv_job_tasks(const struct drv_job *j)
{
	int32_t i, n = 0;
	for (i = 0; i < j->ngroups; i++)
		n += j->groups[i].count;
	return n;
}

int64_t drv_job_gpu_milli(const struct drv_job *j)
{
	int32_t i;
	int64_t m = 0;
	for (i = 0; i < j->ngroups; i++) {
		const struct drv_task_group *g = &j->groups[i];
		m += (int64_t)g->count * (g->gpus > 0 ? (int64_t)g->gpus * DRV_MILLI : g->gpu_milli);
	}
	return m;
}

int64_t drv_job_whole_gpus(const struct drv_job *j)
{
	int32_t i;
	int64_t n = 0;
	for (i = 0; i < j->ngroups; i++)
		n += (int64_t)j->groups[i].count * j->groups[i].gpus;
	return n;
}

int drv_job_check(const struct drv_job *j, char *why, size_t whysz)
{
	int32_t i;
	char dummy[8];

	if (!why) {
		why = dummy;
		whysz = sizeof(dummy);
	}
	if (j->ngroups <= 0) {
		snprintf(why, whysz, "the job has no task groups");
		return DRV_EINVAL;
	}
	for (i = 0; i < j->ngroups; i++) {
		const struct drv_task_group *g = &j->groups[i];
		const char *gn = g->name ? g->name : "";
		if (g->count <= 0) {
			snprintf(why, whysz, "task group %d (%s): count %d, expected at least 1",
				 (int)i, gn, (int)g->count);
			return DRV_EINVAL;
		}
		if (g->gpus < 0 || g->gpus > DRV_MAX_NODE_GPUS) {
			snprintf(why, whysz, "task group %d (%s): %d GPUs per task, expected 0..%d",
				 (int)i, gn, (int)g->gpus, DRV_MAX_NODE_GPUS);
			return DRV_EINVAL;
		}
		if (g->gpus > 0 && g->gpu_milli != 0) {
			snprintf(why, whysz, "task group %d (%s): both whole GPUs and a GPU share",
				 (int)i, gn);
			return DRV_EINVAL;
		}
		if (g->gpus == 0 && (g->gpu_milli < 0 || g->gpu_milli >= DRV_MILLI)) {
			snprintf(why, whysz,
				 "task group %d (%s): GPU share %d milli, expected 1..999 (or whole GPUs)",
				 (int)i, gn, (int)g->gpu_milli);
			return DRV_EINVAL;
		}
		if (g->model < -1 || g->model >= drv_gpu_model_count()) {
			snprintf(why, whysz, "task group %d (%s): unknown GPU model index %d", (int)i,
				 gn, (int)g->model);
			return DRV_EINVAL;
		}
		if (g->cpu_milli < 0 || g->mem_mib < 0 || g->gpu_mem_mib < 0) {
			snprintf(why, whysz, "task group %d (%s): negative CPU or memory", (int)i, gn);
			return DRV_EINVAL;
		}
	}
	if (j->topo_mode != DRV_TOPO_NONE && (!j->topo_level || !*j->topo_level)) {
		snprintf(why, whysz, "a topology constraint needs a level");
		return DRV_EINVAL;
	}
	return 0;
}
