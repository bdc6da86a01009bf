/*
 * manifest_pytorch.c: Kubeflow's PyTorchJob: Master and Worker replica
 * specs as two groups of one gang (unless runPolicy.schedulingPolicy
 * .minAvailable says less), with the run policy's limits.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One role's replica spec (Master or Worker) at path rp as a group. False:
 * no more groups may be added. */
static bool read_role(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *r,
		      const char *role, const char *rp)
{
	static const char *const rk[] = { "replicas", "template", "restartPolicy", NULL };
	char xp[240], lname[16];
	int64_t v;
	int g;
	size_t k;

	if (!fy_node_is_mapping(r)) {
		mf_err(c, r, rp, "found %s, expected a replica spec", drv_yaml_kind(r));
		return true;
	}
	for (k = 0; role[k] && k < sizeof(lname) - 1; k++)
		lname[k] = (char)(role[k] | 0x20);
	lname[k] = '\0';
	if ((g = mf_add_group(c, s, r, rp, lname)) < 0)
		return false;
	s->job.groups[g].count = 1;
	mf_join(xp, sizeof(xp), rp, "replicas");
	if (mf_field(r, "replicas") && mf_int(c, mf_field(r, "replicas"), xp,
					      DRV_SPEC_MAX_TASKS, &v))
		s->job.groups[g].count = (int32_t)v;
	mf_join(xp, sizeof(xp), rp, "template");
	mf_read_template(c, s, g, mf_field(r, "template"), xp);
	if (mf_field(r, "restartPolicy")) {
		mf_join(xp, sizeof(xp), rp, "restartPolicy");
		drv_free(s->run[g].restart_policy);
		s->run[g].restart_policy = mf_str(c, mf_field(r, "restartPolicy"), xp);
	}
	mf_keep_unknown(s, r, rp, rk);
	return true;
}

/* spec.pytorchReplicaSpecs at fp: Master, then Worker. */
static void read_replicas(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *spec,
			  struct fy_node *rs, const char *fp)
{
	static const char *const roles[] = { "Master", "Worker" };
	static const char *const rk2[] = { "Master", "Worker", NULL };

	if (!rs || !fy_node_is_mapping(rs)) {
		mf_err(c, rs ? rs : spec, fp, "found %s, expected Master and Worker replica specs",
		       drv_yaml_kind(rs));
		return;
	}
	for (size_t i = 0; i < DRV_ARRAY_SIZE(roles); i++) {
		struct fy_node *r = mf_field(rs, roles[i]);
		char rp2[200];
		if (!r)
			continue;
		mf_join(rp2, sizeof(rp2), fp, roles[i]);
		if (!read_role(c, s, r, roles[i], rp2))
			break;
	}
	mf_keep_unknown(s, rs, fp, rk2);
	if (s->job.ngroups == 0)
		mf_err(c, rs, fp, "found no Master or Worker, expected at least one");
}

/* runPolicy.schedulingPolicy at xp: minAvailable, queue, priorityClass. */
static void read_sched_policy(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *sch,
			      const char *xp)
{
	static const char *const sk[] = { "minAvailable", "queue", "priorityClass", NULL };
	struct fy_node *n;
	char yp[240];
	int64_t v;

	if ((n = mf_field(sch, "minAvailable"))) {
		mf_join(yp, sizeof(yp), xp, "minAvailable");
		if (mf_int(c, n, yp, DRV_SPEC_MAX_TASKS, &v)) {
			s->k8s.min_available = (int32_t)v;
			s->job.gang_min = (int32_t)v;
		}
	}
	if ((n = mf_field(sch, "queue"))) {
		mf_join(yp, sizeof(yp), xp, "queue");
		drv_free(s->queue);
		s->queue = mf_str(c, n, yp);
	}
	if ((n = mf_field(sch, "priorityClass"))) {
		mf_join(yp, sizeof(yp), xp, "priorityClass");
		drv_free(s->priority_class);
		s->priority_class = mf_str(c, n, yp);
	}
	mf_keep_unknown(s, sch, xp, sk);
}

/* spec.runPolicy at fp: backoffLimit, activeDeadlineSeconds, schedulingPolicy. */
static void read_run_policy(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *rp,
			    const char *fp)
{
	static const char *const pk[] = { "backoffLimit", "activeDeadlineSeconds",
		"schedulingPolicy", NULL };
	struct fy_node *n, *sch;
	char xp[200];
	int64_t v;

	if ((n = mf_field(rp, "backoffLimit"))) {
		mf_join(xp, sizeof(xp), fp, "backoffLimit");
		if (mf_int(c, n, xp, INT32_MAX, &v))
			s->k8s.backoff_limit = (int32_t)v;
	}
	if ((n = mf_field(rp, "activeDeadlineSeconds"))) {
		mf_join(xp, sizeof(xp), fp, "activeDeadlineSeconds");
		if (mf_int(c, n, xp, INT32_MAX, &v)) {
			s->k8s.active_deadline_s = v;
			s->job.time_limit = v;
		}
	}
	if ((sch = mf_field(rp, "schedulingPolicy"))) {
		mf_join(xp, sizeof(xp), fp, "schedulingPolicy");
		read_sched_policy(c, s, sch, xp);
	}
	mf_keep_unknown(s, rp, fp, pk);
}

void mf_kind_pytorchjob(struct mf_ctx *c, const struct mf_object *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "pytorchReplicaSpecs", "runPolicy", NULL };
	struct drv_jobspec *s = mf_begin_job(c, o);
	struct fy_node *spec = mf_field(o->root, "spec"), *rp;
	char fp[128], sp[128];
	int64_t tasks = 0;

	mf_path(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		mf_err(c, spec ? spec : o->root, sp, "found %s, expected a PyTorchJob spec", drv_yaml_kind(spec));
		return;
	}
	mf_join(fp, sizeof(fp), sp, "pytorchReplicaSpecs");
	read_replicas(c, s, spec, mf_field(spec, "pytorchReplicaSpecs"), fp);
	/* one gang unless runPolicy.schedulingPolicy.minAvailable says less */
	s->job.gang_min = 0;
	mf_join(fp, sizeof(fp), sp, "runPolicy");
	if ((rp = mf_field(spec, "runPolicy")))
		read_run_policy(c, s, rp, fp);
	for (int g = 0; g < s->job.ngroups; g++)
		tasks += s->job.groups[g].count;
	if (s->job.gang_min >= tasks)
		s->job.gang_min = 0;
	mf_keep_unknown(s, spec, sp, sknown);
	mf_keep_unknown(s, o->root, o->path, known);
	mf_end_job(c, s, o);
}
