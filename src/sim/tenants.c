/*
 * tenants.c: a tenants file (include/drover/tenants.h) meets a workload.
 * Before a trace is read, the workload learns the file's priority classes,
 * so that a native row's priority column may name one; after, every job
 * that gives no priority gets its tenant's default class, and tenants of
 * the file that no job belongs to are pointed out (a misspelt tenant name
 * would otherwise limit nothing, silently), as are quotas on GPU models the
 * cluster lacks, and budgets, users and allowedClasses, which only the
 * controller acts on. The quotas, weights and cohorts themselves go to the
 * scheduler in drv_sim_run.
 */
#include "drover/sim.h"

#include <string.h>

void drv_sim_workload_set_classes(struct drv_sim_workload *w, const struct drv_tenants *t)
{
	int32_t i;

	for (i = 0; i < w->nclasses; i++)
		drv_free(w->classes[i]);
	drv_free(w->classes);
	drv_free(w->class_values);
	w->classes = NULL;
	w->class_values = NULL;
	w->nclasses = 0;
	if (!t || !t->nclasses)
		return;
	w->classes = drv_calloc((size_t)t->nclasses, sizeof(char *));
	w->class_values = drv_calloc((size_t)t->nclasses, sizeof(int32_t));
	for (i = 0; i < t->nclasses; i++) {
		w->classes[i] = drv_strdup(t->classes[i].name);
		w->class_values[i] = t->classes[i].value;
	}
	w->nclasses = t->nclasses;
}

static int32_t class_index(const struct drv_sim_workload *w, const char *name)
{
	int32_t k;
	for (k = 0; k < w->nclasses; k++)
		if (!strcmp(w->classes[k], name))
			return k;
	return -1;
}

/* A quota that names only models the cluster lacks limits nothing: say so. */
static void check_models(const struct drv_tenants *t, const struct drv_cluster *c,
			 struct drv_diags *d)
{
	bool have[DRV_MAX_MODELS] = { false };
	int32_t i;
	int m;

	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].model >= 0 && c->nodes[i].model < DRV_MAX_MODELS &&
		    c->nodes[i].ngpus > 0)
			have[c->nodes[i].model] = true;
	for (i = 0; i < t->ntenants; i++) {
		const struct drv_tenant_conf *tc = &t->tenants[i];
		bool any = false, hit = false;
		char path[96], list[256];
		size_t len = 0;

		list[0] = 0;
		for (m = 0; m < DRV_MAX_MODELS && m < drv_gpu_model_count(); m++) {
			if (tc->quota_milli[m] < 0)
				continue;
			any = true;
			hit |= have[m];
			if (len < sizeof(list))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
							len ? ", " : "", drv_gpu_model_at(m)->short_name);
		}
		if (!any || hit)
			continue;
		snprintf(path, sizeof(path), "tenants.%s.quota", tc->name);
		drv_diag_warn(d, tc->line, tc->col, path,
			      "names only GPU models the cluster has none of (%s); it limits "
			      "nothing", list);
	}
}

int32_t drv_sim_bind_tenants(struct drv_sim_workload *w, const struct drv_tenants *t,
			     const struct drv_cluster *c, struct drv_diags *d)
{
	int32_t *def, i, n = 0;
	bool *used;

	if (!t)
		return 0;
	if (w->nclasses != t->nclasses)
		drv_sim_workload_set_classes(w, t);
	/* each workload tenant's default class, -1 = none */
	def = drv_malloc(sizeof(int32_t) * ((size_t)w->ntenants + 1));
	for (i = 0; i < w->ntenants; i++) {
		const struct drv_tenant_conf *tc = drv_tenants_tenant(t, w->tenants[i]);
		def[i] = tc && tc->priority_class ? class_index(w, tc->priority_class) : -1;
	}
	for (i = 0; i < w->njobs; i++) {
		struct drv_sim_job *sj = &w->jobs[i];
		int32_t k = def[sj->tenant];
		if (sj->pclass >= 0 || sj->job.priority != 0 || k < 0)
			continue;
		sj->pclass = k;
		sj->job.priority = w->class_values[k];
		n++;
	}
	used = drv_calloc((size_t)t->ntenants + 1, sizeof(bool));
	for (i = 0; i < w->ntenants; i++) {
		const struct drv_tenant_conf *tc = drv_tenants_tenant(t, w->tenants[i]);
		if (tc)
			used[tc - t->tenants] = true;
	}
	for (i = 0; i < t->ntenants; i++) {
		char path[96];
		if (used[i])
			continue;
		snprintf(path, sizeof(path), "tenants.%s", t->tenants[i].name);
		drv_diag_warn(d, t->tenants[i].line, t->tenants[i].col, path,
			      "no job of the workload belongs to this tenant; its settings "
			      "change nothing");
	}
	if (c)
		check_models(t, c, d);
	for (i = 0; i < t->ntenants; i++) {
		char path[96];
		if (t->tenants[i].has_users || t->tenants[i].has_allowed) {
			snprintf(path, sizeof(path), "tenants.%s.%s", t->tenants[i].name,
				 t->tenants[i].has_users ? "users" : "allowedClasses");
			drv_diag_warn(d, t->tenants[i].line, t->tenants[i].col, path,
				      "the simulator does not act on who may submit what (users, "
				      "allowedClasses); the controller refuses it at submit");
		}
		if (t->tenants[i].budget_micro < 0)
			continue;
		snprintf(path, sizeof(path), "tenants.%s.budget", t->tenants[i].name);
		drv_diag_warn(d, t->tenants[i].line, t->tenants[i].col, path,
			      "the simulator does not act on budgets (the controller does); "
			      "the run's cost is in the summary");
	}
	drv_free(used);
	drv_free(def);
	return n;
}
