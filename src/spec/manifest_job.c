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
		/* the queue as Kueue, KAI (and Run:ai before it) and Volcano name it */
		const char *q = mf_label_get(s->labels, s->nlabels, LABEL_KUEUE_QUEUE);
		if (!q)
			q = mf_label_get(s->labels, s->nlabels, LABEL_KAI_QUEUE);
		if (!q)
			q = mf_label_get(s->labels, s->nlabels, LABEL_RUNAI_QUEUE);
		if (!q)
			q = mf_label_get(s->annotations, s->nannotations, ANN_VOLCANO_QUEUE);
		if (q)
			s->queue = drv_strdup(q);
	}
	return s;
}

/* Kueue's slice size against the pods it cuts: drover slices the job's
 * pods as one gang, so the annotations go where they cover every pod. */
static void check_slice(struct mf_ctx *c, struct drv_jobspec *s, int64_t tasks)
{
	if (s->api_version && strcmp(s->api_version, "batch/v1") == 0 && s->kind &&
	    strcmp(s->kind, "Job") == 0)
		mf_err(c, c->slice_node, c->slice_path,
		       "found slices on a batch/v1 Job, whose pods drover schedules one by "
		       "one, expected a gang to cut into slices (a PyTorchJob, a Volcano "
		       "Job)");
	else if (c->slice_group >= 0 && s->job.ngroups > 1)
		mf_err(c, c->slice_node, c->slice_path,
		       "found slices on one of %d pod templates, expected them on the "
		       "object's metadata.annotations (drover cuts all the job's pods into "
		       "slices)", s->job.ngroups);
	else if (tasks % s->job.slice_size != 0)
		mf_err(c, c->slice_node, c->slice_path,
		       "found %d, expected a size that divides the job's %lld pods",
		       (int)s->job.slice_size, (long long)tasks);
}

/* Job-level annotations apply to every group: call after the groups exist. */
void mf_end_job(struct mf_ctx *c, struct drv_jobspec *s, const struct mf_object *o)
{
	char md[160], fp[180];
	int64_t tasks = 0;
	int i;
	mf_path(md, sizeof(md), o, "metadata"); /* a key with a dot would be quoted */
	mf_join(fp, sizeof(fp), md, "annotations");
	mf_apply_annotations(c, s, -1, mf_field(mf_field(o->root, "metadata"), "annotations"), fp);
	for (i = 0; i < s->job.ngroups; i++)
		tasks += s->job.groups[i].count;
	if (tasks > DRV_SPEC_MAX_TASKS)
		mf_err(c, o->root, o->path, "found %lld tasks, over the limit of %d", (long long)tasks,
		       DRV_SPEC_MAX_TASKS);
	if (s->job.ngroups == 0)
		mf_err(c, o->root, o->path, "found no task groups, expected at least one");
	if (c->slice_node)
		check_slice(c, s, tasks);
	c->slice_node = NULL;
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

/* spec.completionMode and spec.suspend of a batch/v1 Job. */
static void job_mode_and_suspend(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *spec,
				 const char *sp)
{
	struct fy_node *n;
	const char *t;
	char fp[128];

	if ((n = mf_field(spec, "completionMode"))) {
		mf_join(fp, sizeof(fp), sp, "completionMode");
		t = mf_scalar(n);
		if (t && strcmp(t, "Indexed") == 0)
			s->k8s.indexed = 1;
		else if (t && strcmp(t, "NonIndexed") == 0)
			s->k8s.indexed = 0;
		else
			mf_err(c, n, fp, "found %s%.64s%s, expected Indexed or NonIndexed",
			       t ? "\"" : "", t ? t : drv_yaml_kind(n), t ? "\"" : "");
	}
	if ((n = mf_field(spec, "suspend"))) {
		mf_join(fp, sizeof(fp), sp, "suspend");
		t = mf_scalar(n);
		if (t && strcmp(t, "true") == 0)
			s->k8s.suspend = 1;
		else if (t && strcmp(t, "false") == 0)
			s->k8s.suspend = 0;
		else
			mf_err(c, n, fp, "found %s, expected true or false", t ? t : drv_yaml_kind(n));
	}
}

/*
 * A batch/v1 Job is a parent with elements (docs/job-format.md): its one
 * group is what one pod takes (count 1); spec.completions pods must
 * succeed (default: parallelism, else 1), at most spec.parallelism (default
 * 1) at once. The server makes the elements; the pod template's own
 * activeDeadlineSeconds is each pod's time limit, the Job's is the whole
 * Job's deadline.
 */
void mf_kind_batch_job(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "parallelism", "completions", "backoffLimit",
		"activeDeadlineSeconds", "template", "completionMode", "suspend",
		"ttlSecondsAfterFinished", NULL };
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
	s->k8s.active_deadline_s = -1;  /* the pod's is its time limit, not the Job's */
	if ((n = mf_field(spec, "parallelism"))) {
		mf_join(fp, sizeof(fp), sp, "parallelism");
		if (mf_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v))
			s->k8s.parallelism = (int32_t)v;
	}
	if ((n = mf_field(spec, "completions"))) {
		mf_join(fp, sizeof(fp), sp, "completions");
		if (mf_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v)) {
			if (v == 0)
				mf_err(c, n, fp, "found 0, expected at least 1 (a Job of no pods "
				       "has nothing to run)");
			s->k8s.completions = (int32_t)v;
		}
	}
	if ((n = mf_field(spec, "backoffLimit"))) {
		mf_join(fp, sizeof(fp), sp, "backoffLimit");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->k8s.backoff_limit = (int32_t)v;
	}
	if ((n = mf_field(spec, "activeDeadlineSeconds"))) {
		mf_join(fp, sizeof(fp), sp, "activeDeadlineSeconds");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->k8s.active_deadline_s = v;
	}
	if ((n = mf_field(spec, "ttlSecondsAfterFinished"))) {
		mf_join(fp, sizeof(fp), sp, "ttlSecondsAfterFinished");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->k8s.ttl_after_finished_s = v;
	}
	job_mode_and_suspend(c, s, spec, sp);
	if (s->run[g].restart_policy && strcmp(s->run[g].restart_policy, "Always") == 0) {
		char tp[128];
		mf_join(tp, sizeof(tp), sp, "template");
		mf_join(fp, sizeof(fp), tp, "spec");
		mf_join(tp, sizeof(tp), fp, "restartPolicy");
		snprintf(fp, sizeof(fp), "%s", tp);
		mf_err(c, mf_field(mf_field(mf_field(spec, "template"), "spec"), "restartPolicy"), fp,
		       "found Always, expected OnFailure or Never (a Job's pods must end)");
	}
	/* each pod is one element: the elements run independently, as pods do */
	s->job.gang_min = 0;
	mf_keep_unknown(s, spec, sp, sknown);
	mf_keep_unknown(s, o->root, o->path, known);
	mf_end_job(c, s, o);
}
