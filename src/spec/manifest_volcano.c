/*
 * manifest_volcano.c: Volcano's kinds: batch.volcano.sh Job (one group per
 * spec.tasks[], a gang of minAvailable), and the PodGroups of the gang
 * schedulers, recorded while the stream is read and then joined with the
 * Pods that name them into one gang job of minMember:
 *
 *   scheduling.volcano.sh PodGroup   Pods' annotation scheduling.k8s.io/group-name
 *   scheduling.run.ai PodGroup (KAI) Pods' annotation pod-group-name
 *   scheduling.x-k8s.io PodGroup     Pods' label scheduling.x-k8s.io/pod-group
 *     (scheduler-plugins coscheduling; scheduling.sigs.k8s.io and its
 *     label pod-group.scheduling.sigs.k8s.io before v0.24)
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mf_kind_volcano_job(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "minAvailable", "queue", "priorityClassName",
		"tasks", NULL };
	struct drv_jobspec *s = mf_begin_job(c, o);
	struct fy_node *spec = mf_field(o->root, "spec"), *n;
	char fp[128], sp[128];
	int64_t v, total = 0;

	mf_path(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		mf_err(c, spec ? spec : o->root, sp, "found %s, expected a Volcano Job spec", drv_yaml_kind(spec));
		return;
	}
	mf_join(fp, sizeof(fp), sp, "tasks");
	n = mf_field(spec, "tasks");
	if (!n || !fy_node_is_sequence(n) || fy_node_sequence_item_count(n) == 0) {
		mf_err(c, n ? n : spec, fp, "found %s, expected a list of tasks", drv_yaml_kind(n));
	} else {
		void *it = NULL;
		struct fy_node *t;
		int i = 0;
		while ((t = fy_node_sequence_iterate(n, &it))) {
			static const char *const tk[] = { "name", "replicas", "template", NULL };
			char tp[160], xp[200];
			const char *name;
			int g;
			snprintf(tp, sizeof(tp), "%s[%d]", fp, i++);
			if (!fy_node_is_mapping(t)) {
				mf_err(c, t, tp, "found %s, expected a task", drv_yaml_kind(t));
				continue;
			}
			name = mf_scalar(mf_field(t, "name"));
			if ((g = mf_add_group(c, s, t, tp, name ? name : "task")) < 0)
				break;
			s->job.groups[g].count = 1;
			mf_join(xp, sizeof(xp), tp, "replicas");
			if (mf_field(t, "replicas") && mf_int(c, mf_field(t, "replicas"), xp,
							   DRV_SPEC_MAX_TASKS, &v))
				s->job.groups[g].count = (int32_t)v;
			total += s->job.groups[g].count;
			mf_join(xp, sizeof(xp), tp, "template");
			mf_read_template(c, s, g, mf_field(t, "template"), xp);
			mf_keep_unknown(s, t, tp, tk);
		}
	}
	if ((n = mf_field(spec, "minAvailable"))) {
		mf_join(fp, sizeof(fp), sp, "minAvailable");
		if (mf_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v)) {
			if (v > total)
				mf_err(c, n, fp, "found %lld, expected at most the %lld replicas of all tasks",
				       (long long)v, (long long)total);
			s->k8s.min_available = (int32_t)v;
			s->job.gang_min = v == total ? 0 : (int32_t)v;
		}
	}
	if ((n = mf_field(spec, "queue"))) {
		mf_join(fp, sizeof(fp), sp, "queue");
		drv_free(s->queue);
		s->queue = mf_str(c, n, fp);
	}
	if ((n = mf_field(spec, "priorityClassName"))) {
		mf_join(fp, sizeof(fp), sp, "priorityClassName");
		drv_free(s->priority_class);
		s->priority_class = mf_str(c, n, fp);
	}
	mf_keep_unknown(s, spec, sp, sknown);
	mf_keep_unknown(s, o->root, o->path, known);
	mf_end_job(c, s, o);
}

/* A PodGroup: recorded, joined with its Pods after the stream. */
struct mf_podgroup {
	char *name;
	const char *api;         /* its apiVersion's group, e.g. scheduling.run.ai/v2alpha2 */
	const char *member_key;  /* the annotation or label of its Pods that names it */
	bool by_label;           /* member_key is a label (else an annotation) */
	char *queue;
	char *priority_class;
	int64_t min_member;
	int line, col;
	struct drv_jobspec kept; /* its fields drover does not act on */
};


void mf_kind_podgroup(struct mf_ctx *c, const struct mf_object *o, struct mf_podgroups *pgs)
{
	struct fy_node *spec = mf_field(o->root, "spec"), *n;
	struct mf_podgroup *pg;
	char fp[128];
	const char *t;
	int64_t v;

	DRV_GROW(pgs->v, (size_t)pgs->n + 1, pgs->cap);
	pg = &pgs->v[pgs->n++];
	memset(pg, 0, sizeof(*pg));
	drv_spec_node_mark(o->root, &pg->line, &pg->col);
	t = mf_scalar(mf_field(mf_field(o->root, "metadata"), "name"));
	mf_path(fp, sizeof(fp), o, "metadata.name");
	if (!t)
		mf_err(c, o->root, fp, "found nothing, expected the PodGroup name");
	pg->name = drv_strdup(t ? t : "");
	pg->min_member = -1;
	if (strncmp(o->api, "scheduling.run.ai/", 18) == 0) {
		pg->api = "scheduling.run.ai/v2alpha2";
		pg->member_key = ANN_KAI_GROUP;
	} else if (strncmp(o->api, "scheduling.x-k8s.io/", 20) == 0) {
		pg->api = "scheduling.x-k8s.io/v1alpha1";
		pg->member_key = LABEL_COSCHED_GROUP;
		pg->by_label = true;
	} else if (strncmp(o->api, "scheduling.sigs.k8s.io/", 23) == 0) {
		pg->api = "scheduling.sigs.k8s.io/v1alpha1";
		pg->member_key = LABEL_COSCHED_GROUP_OLD;
		pg->by_label = true;
	} else {
		pg->api = "scheduling.volcano.sh/v1beta1";
		pg->member_key = ANN_VOLCANO_GROUP;
	}
	if ((n = mf_field(spec, "minMember"))) {
		mf_path(fp, sizeof(fp), o, "spec.minMember");
		if (mf_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v))
			pg->min_member = v;
	}
	if ((t = mf_scalar(mf_field(spec, "queue"))))
		pg->queue = drv_strdup(t);
	if ((t = mf_scalar(mf_field(spec, "priorityClassName"))))
		pg->priority_class = drv_strdup(t);
	{
		static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
		static const char *const mknown[] = { "name", NULL };
		static const char *const sknown[] = { "minMember", "queue", "priorityClassName", NULL };
		char p[128];
		drv_jobspec_init(&pg->kept);
		mf_keep_unknown(&pg->kept, o->root, o->path, known);
		mf_path(p, sizeof(p), o, "metadata");
		mf_keep_unknown(&pg->kept, mf_field(o->root, "metadata"), p, mknown);
		mf_path(p, sizeof(p), o, "spec");
		mf_keep_unknown(&pg->kept, spec, p, sknown);
	}
}

/* Copies every kept field of ign into into, its key prefixed "who: ". */
static void keep_as(json_t *into, json_t *ign, const char *who)
{
	const char *k;
	json_t *v;

	json_object_foreach(ign, k, v) {
		char key[600];
		snprintf(key, sizeof(key), "%s: %s", who, k);
		json_object_set(into, key, v);
	}
}

/* The group's first Pod becomes its job: what it kept is named after the
 * Pod (the job is several pods); returns its member count. */
static int first_member(struct drv_jobspec *s, const struct mf_podgroup *pg)
{
	json_t *ign = json_object();

	for (int g = 0; g < s->nwarnings; g++) {
		char *old = s->warnings[g];
		size_t n = strlen(old) + strlen(s->job.name) + 3;
		s->warnings[g] = drv_malloc(n);
		snprintf(s->warnings[g], n, "%s: %s", s->job.name, old);
		drv_free(old);
	}
	keep_as(ign, s->ignored, s->job.name);
	json_decref(s->ignored);
	s->ignored = ign;
	drv_free(s->kind);
	s->kind = drv_strdup("PodGroup");
	drv_free(s->api_version);
	s->api_version = drv_strdup(pg->api);
	drv_free(s->job.name);
	s->job.name = drv_strdup(pg->name);
	return s->job.ngroups ? s->job.groups[0].count : 0;
}

/* Moves Pod s's groups, warnings and kept fields into first; returns the
 * tasks moved. s is released by the caller. */
static int move_member(struct mf_ctx *c, struct drv_jobspec *first, struct drv_jobspec *s,
		       const struct mf_podgroup *pg)
{
	int members = 0, g;

	for (g = 0; g < s->job.ngroups; g++) {
		int ng = drv_jobspec_add_group(first, s->job.groups[g].name);
		char *nm;
		if (ng < 0) {
			drv_diag_err(c->d, pg->line, pg->col, pg->name,
				     "found more than %d pods in the PodGroup", DRV_SPEC_MAX_GROUPS);
			break;
		}
		nm = first->job.groups[ng].name;
		first->job.groups[ng] = s->job.groups[g];
		first->job.groups[ng].name = nm;
		drv_spec_run_release(&first->run[ng]);
		first->run[ng] = s->run[g];
		memset(&s->run[g], 0, sizeof(s->run[g]));
		members += s->job.groups[g].count;
	}
	for (g = 0; g < s->nwarnings; g++)
		drv_jobspec_warn(first, "%s: %s", s->job.name, s->warnings[g]);
	keep_as(first->ignored, s->ignored, s->job.name);
	return members;
}

/* What the PodGroup itself says, applied to its job of members tasks. */
static void apply_podgroup(struct mf_ctx *c, struct drv_jobspec *first,
			   const struct mf_podgroup *pg, int members)
{
	char who[600];

	if (pg->min_member > members)
		drv_diag_err(c->d, pg->line, pg->col, pg->name,
			     "found minMember %lld, expected at most the %d pods of the group",
			     (long long)pg->min_member, members);
	for (int w = 0; w < pg->kept.nwarnings; w++)
		drv_jobspec_warn(first, "PodGroup %s: %s", pg->name, pg->kept.warnings[w]);
	snprintf(who, sizeof(who), "PodGroup %s", pg->name);
	keep_as(first->ignored, pg->kept.ignored, who);
	first->k8s.min_available = (int32_t)pg->min_member;
	first->job.gang_min = pg->min_member < 0 || pg->min_member >= members
		? 0 : (int32_t)pg->min_member;
	if (pg->queue) {
		drv_free(first->queue);
		first->queue = drv_strdup(pg->queue);
	}
	if (pg->priority_class) {
		drv_free(first->priority_class);
		first->priority_class = drv_strdup(pg->priority_class);
	}
}

/* Merges the Pods naming a PodGroup into one gang job (the first Pod's). */
void mf_join_podgroups(struct mf_ctx *c, struct mf_podgroups *pgs)
{
	for (int i = 0; i < pgs->n; i++) {
		struct mf_podgroup *pg = &pgs->v[i];
		struct drv_jobspec *first = NULL;
		int members = 0;
		for (int j = 0; j < c->set->njobs; j++) {
			struct drv_jobspec *s = &c->set->jobs[j];
			const char *gname = pg->by_label
				? mf_label_get(s->labels, s->nlabels, pg->member_key)
				: mf_label_get(s->annotations, s->nannotations, pg->member_key);
			if (!gname || strcmp(gname, pg->name) != 0 || s->kind == NULL ||
			    strcmp(s->kind, "Pod") != 0)
				continue;
			if (!first) {
				first = s;
				members += first_member(s, pg);
				continue;
			}
			members += move_member(c, first, s, pg);
			drv_jobspec_release(s);
			memmove(s, s + 1, sizeof(*s) * (size_t)(c->set->njobs - j - 1));
			c->set->njobs--;
			j--;
		}
		if (!first) {
			drv_diag_warn(c->d, pg->line, pg->col, pg->name,
				      "PodGroup has no Pods in this file; nothing to run");
			continue;
		}
		apply_podgroup(c, first, pg, members);
	}
}

void mf_podgroups_release(struct mf_podgroups *pgs)
{
	for (int i = 0; i < pgs->n; i++) {
		drv_free(pgs->v[i].name);
		drv_free(pgs->v[i].queue);
		drv_free(pgs->v[i].priority_class);
		drv_jobspec_release(&pgs->v[i].kept);
	}
	drv_free(pgs->v);
}
