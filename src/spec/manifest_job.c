/*
 * manifest_job.c: what every job kind shares (a new spec with its
 * metadata, job-level annotations applied once the groups exist, a task
 * group added under the limit) and the two core kinds: v1 Pod (one task)
 * and batch/v1 Job (parallelism tasks, capped by completions).
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mf_path(char *out, size_t sz, const struct mf_object *o, const char *rest)
{
	mf_join(out, sz, o->path, rest);
}

/* Common start: a new spec with source, metadata, job-level annotations. */
struct drv_jobspec *mf_begin_job(struct mf_ctx *c, const struct mf_object *o)
{
	struct drv_jobspec *s = drv_specset_add(c->set);
	char fp[128];
	s->format = DRV_FMT_MANIFEST;
	s->api_version = drv_strdup(o->api);
	s->kind = drv_strdup(o->kind);
	mf_path(fp, sizeof(fp), o, "metadata");
	mf_read_metadata(c, s, mf_field(o->root, "metadata"), fp);
	if (!s->job.name)
		s->job.name = drv_strdup("");
	{
		const char *q = mf_label_get(s->labels, s->nlabels, LABEL_KUEUE_QUEUE);
		if (q)
			s->queue = drv_strdup(q);
	}
	return s;
}

/* Job-level annotations apply to every group: call after the groups exist. */
void mf_end_job(struct mf_ctx *c, struct drv_jobspec *s, const struct mf_object *o)
{
	char fp[160];
	int64_t tasks = 0;
	int i;
	mf_path(fp, sizeof(fp), o, "metadata.annotations");
	mf_apply_annotations(c, s, -1, mf_field(mf_field(o->root, "metadata"), "annotations"), fp);
	for (i = 0; i < s->job.ngroups; i++)
		tasks += s->job.groups[i].count;
	if (tasks > DRV_SPEC_MAX_TASKS)
		mf_err(c, o->root, o->path, "found %lld tasks, over the limit of %d", (long long)tasks,
		       DRV_SPEC_MAX_TASKS);
	if (s->job.ngroups == 0)
		mf_err(c, o->root, o->path, "found no task groups, expected at least one");
}

int mf_add_group(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *n, const char *path,
		 const char *name)
{
	int g = drv_jobspec_add_group(s, name);
	if (g < 0)
		mf_err(c, n, path, "found more than %d task groups", DRV_SPEC_MAX_GROUPS);
	return g;
}

void mf_kind_pod(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	struct drv_jobspec *s = mf_begin_job(c, o);
	char fp[128];
	int g = mf_add_group(c, s, o->root, o->path, s->job.name);
	if (g < 0)
		return;
	s->job.groups[g].count = 1;
	mf_path(fp, sizeof(fp), o, "spec");
	mf_read_pod_spec(c, s, g, mf_field(o->root, "spec"), fp, mf_field(o->root, "metadata"));
	mf_keep_unknown(s, o->root, o->path, known);
	mf_end_job(c, s, o);
}

void mf_kind_batch_job(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "parallelism", "completions", "backoffLimit",
		"activeDeadlineSeconds", "template", NULL };
	struct drv_jobspec *s = mf_begin_job(c, o);
	struct fy_node *spec = mf_field(o->root, "spec"), *n;
	char fp[128], sp[128];
	int64_t v;
	int g;

	mf_path(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		mf_err(c, spec ? spec : o->root, sp, "found %s, expected a Job spec", drv_yaml_kind(spec));
		return;
	}
	if ((g = mf_add_group(c, s, spec, sp, s->job.name)) < 0)
		return;
	s->job.groups[g].count = 1;
	mf_join(fp, sizeof(fp), sp, "template");
	mf_read_template(c, s, g, mf_field(spec, "template"), fp);
	if ((n = mf_field(spec, "parallelism"))) {
		mf_join(fp, sizeof(fp), sp, "parallelism");
		if (mf_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v))
			s->k8s.parallelism = (int32_t)v;
	}
	if ((n = mf_field(spec, "completions"))) {
		mf_join(fp, sizeof(fp), sp, "completions");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->k8s.completions = (int32_t)v;
	}
	if ((n = mf_field(spec, "backoffLimit"))) {
		mf_join(fp, sizeof(fp), sp, "backoffLimit");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->k8s.backoff_limit = (int32_t)v;
	}
	if ((n = mf_field(spec, "activeDeadlineSeconds"))) {
		mf_join(fp, sizeof(fp), sp, "activeDeadlineSeconds");
		if (mf_int(c, n, fp, INT32_MAX, &v)) {
			s->k8s.active_deadline_s = v;
			s->job.time_limit = v;
		}
	}
	/* pods running at once: parallelism, capped by completions (both default 1) */
	v = s->k8s.parallelism >= 0 ? s->k8s.parallelism : 1;
	if (s->k8s.completions >= 0 && s->k8s.completions < v)
		v = s->k8s.completions;
	s->job.groups[g].count = (int32_t)v;
	/* a plain Job's pods start independently; Kueue admits the whole Job at once */
	s->job.gang_min = s->queue ? 0 : (v > 1 ? 1 : 0);
	mf_keep_unknown(s, spec, sp, sknown);
	mf_keep_unknown(s, o->root, o->path, known);
	mf_end_job(c, s, o);
}
