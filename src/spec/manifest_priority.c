/*
 * manifest_priority.c: scheduling.k8s.io PriorityClass objects of a
 * stream, and resolving each job's priorityClassName (or the global
 * default) against them once the stream is read.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mf_kind_priority_class(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "value",
		"globalDefault", "preemptionPolicy", "description", NULL };
	struct drv_specset *set = c->set;
	struct drv_priority_class *pc;
	struct fy_node *n;
	char fp[128];
	const char *t;

	DRV_GROW(set->classes, (size_t)set->nclasses + 1, set->ccap);
	pc = &set->classes[set->nclasses++];
	memset(pc, 0, sizeof(*pc));
	mf_path(fp, sizeof(fp), o, "metadata.name");
	t = mf_scalar(mf_field(mf_field(o->root, "metadata"), "name"));
	if (!t)
		mf_err(c, o->root, fp, "found nothing, expected the PriorityClass name");
	pc->name = drv_strdup(t ? t : "");
	mf_path(fp, sizeof(fp), o, "value");
	n = mf_field(o->root, "value");
	t = mf_scalar(n);
	if (!t) {
		mf_err(c, n ? n : o->root, fp, "found %s, expected an integer value", drv_yaml_kind(n));
	} else {
		char *end;
		long long x = strtoll(t, &end, 10);
		if (!*t || *end || x < -2147483647LL || x > 1000000000LL)
			mf_err(c, n, fp, "found \"%.32s\", expected an integer up to 1000000000", t);
		else
			pc->value = (int32_t)x;
	}
	if ((n = mf_field(o->root, "globalDefault")))
		pc->global_default = mf_scalar(n) && strcmp(mf_scalar(n), "true") == 0;
	if ((n = mf_field(o->root, "preemptionPolicy"))) {
		mf_path(fp, sizeof(fp), o, "preemptionPolicy");
		t = mf_scalar(n);
		if (!t || (strcmp(t, "PreemptLowerPriority") && strcmp(t, "Never")))
			mf_err(c, n, fp, "found \"%.64s\", expected PreemptLowerPriority or Never",
			       t ? t : drv_yaml_kind(n));
		else
			pc->preemption_policy = drv_strdup(t);
	}
	if ((n = mf_field(o->root, "description")))
		pc->description = drv_strdup(mf_scalar(n) ? mf_scalar(n) : "");
	{
		/* a PriorityClass has no job to warn on: unknown fields are diagnostics */
		void *it = NULL;
		struct fy_node_pair *p;
		while ((p = fy_node_mapping_iterate(o->root, &it))) {
			const char *k = mf_scalar(fy_node_pair_key(p));
			const char *const *a;
			for (a = known; k && *a; a++)
				if (strcmp(*a, k) == 0)
					break;
			if (k && !*a) {
				mf_path(fp, sizeof(fp), o, k);
				drv_diag_warn(c->d, 0, 0, fp, "kept, not acted on by drover");
			}
		}
	}
}

/* Resolves priorityClassName against the stream's PriorityClasses. */
void mf_resolve_priorities(struct mf_ctx *c)
{
	int i, k;
	for (i = 0; i < c->set->njobs; i++) {
		struct drv_jobspec *s = &c->set->jobs[i];
		for (k = 0; k < c->set->nclasses; k++) {
			const struct drv_priority_class *pc = &c->set->classes[k];
			bool hit = s->priority_class ? strcmp(pc->name, s->priority_class) == 0
						     : pc->global_default;
			if (!hit)
				continue;
			s->job.priority = pc->value;
			if (!s->priority_class)
				s->priority_class = drv_strdup(pc->name);
		}
		/* every job carries the classes it was defined with */
		if (c->set->nclasses && !s->nclasses) {
			s->classes = drv_calloc((size_t)c->set->nclasses, sizeof(*s->classes));
			for (k = 0; k < c->set->nclasses; k++) {
				const struct drv_priority_class *pc = &c->set->classes[k];
				s->classes[k].name = drv_strdup(pc->name);
				s->classes[k].value = pc->value;
				s->classes[k].global_default = pc->global_default;
				s->classes[k].preemption_policy = drv_strdup(pc->preemption_policy);
				s->classes[k].description = drv_strdup(pc->description);
			}
			s->nclasses = c->set->nclasses;
		}
	}
}
