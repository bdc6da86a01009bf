/*
 * manifest_pod.c: a pod spec or pod template as one task group: the
 * containers (the main one runs the task; sidecars count toward its
 * resources), their resources, env, command and args, the node selector
 * (GPU model, region), restart policy, grace period and priority.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct res {
	int64_t gpus;      /* -1 = not given */
	int64_t cpu_milli;
	int64_t mem_mib;
};

static void read_resources(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *rn,
			   const char *path, struct res *out)
{
	static const char *const known[] = { "limits", "requests", NULL };
	static const char *const kinds[] = { "limits", "requests" };
	int64_t gpu[2] = { -1, -1 }, cpu[2] = { -1, -1 }, mem[2] = { -1, -1 };
	int i;

	out->gpus = -1;
	out->cpu_milli = out->mem_mib = 0;
	if (!rn)
		return;
	if (!fy_node_is_mapping(rn)) {
		mf_err(c, rn, path, "found %s, expected limits and requests", drv_yaml_kind(rn));
		return;
	}
	mf_keep_unknown(s, rn, path, known);
	for (i = 0; i < 2; i++) {
		struct fy_node *m = mf_field(rn, kinds[i]);
		void *it = NULL;
		struct fy_node_pair *p;
		char mp[512];
		mf_join(mp, sizeof(mp), path, kinds[i]);
		if (!m)
			continue;
		if (!fy_node_is_mapping(m)) {
			mf_err(c, m, mp, "found %s, expected a mapping of resource quantities", drv_yaml_kind(m));
			continue;
		}
		while ((p = fy_node_mapping_iterate(m, &it))) {
			const char *k = mf_scalar(fy_node_pair_key(p));
			struct fy_node *vn = fy_node_pair_value(p);
			const char *v = mf_scalar(vn);
			char fp[600];
			int64_t x;
			if (!k)
				continue;
			mf_join(fp, sizeof(fp), mp, k);
			if (strcmp(k, RES_GPU) == 0) {
				if (!v || drv_quantity_parse(v, 1000, &x) || x % 1000) {
					mf_err(c, vn, fp, "found %s%.64s%s, expected a whole number of GPUs "
					       "(for a share of one GPU use the annotation "
					       ANN_GPU_FRACTION ")", v ? "\"" : "", v ? v : drv_yaml_kind(vn),
					       v ? "\"" : "");
					continue;
				}
				if (x / 1000 > DRV_MAX_NODE_GPUS) {
					mf_err(c, vn, fp, "found %lld GPUs, expected at most %d per task",
					       (long long)(x / 1000), DRV_MAX_NODE_GPUS);
					continue;
				}
				gpu[i] = x / 1000;
			} else if (strcmp(k, "cpu") == 0) {
				if (!v || drv_quantity_parse(v, 1000, &x)) {
					mf_err(c, vn, fp, "found \"%.64s\", expected a CPU quantity such as "
					       "500m or 2", v ? v : drv_yaml_kind(vn));
					continue;
				}
				cpu[i] = x;
			} else if (strcmp(k, "memory") == 0) {
				if (!v || drv_quantity_mib(v, &x)) {
					mf_err(c, vn, fp, "found \"%.64s\", expected a memory quantity such "
					       "as 16Gi, 129M or 128974848", v ? v : drv_yaml_kind(vn));
					continue;
				}
				mem[i] = x;
			} else {
				drv_spec_keep_ignored(s, fp, drv_yaml_node_json(vn));
			}
		}
	}
	if (gpu[0] >= 0 && gpu[1] >= 0 && gpu[0] != gpu[1]) {
		char rp[560], fp[600];
		mf_join(rp, sizeof(rp), path, "requests");
		mf_join(fp, sizeof(fp), rp, RES_GPU);
		mf_err(c, mf_field(mf_field(rn, "requests"), RES_GPU), fp,
		       "found %lld GPUs requested and %lld as the limit, expected them equal",
		       (long long)gpu[1], (long long)gpu[0]);
	}
	out->gpus = gpu[0] >= 0 ? gpu[0] : gpu[1];
	out->cpu_milli = cpu[1] >= 0 ? cpu[1] : (cpu[0] >= 0 ? cpu[0] : 0);
	out->mem_mib = mem[1] >= 0 ? mem[1] : (mem[0] >= 0 ? mem[0] : 0);
}

static void read_env(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *en,
		     const char *path)
{
	void *it = NULL;
	struct fy_node *e;
	int i = 0;
	if (!fy_node_is_sequence(en)) {
		mf_err(c, en, path, "found %s, expected a list of {name, value}", drv_yaml_kind(en));
		return;
	}
	if (fy_node_sequence_item_count(en) > DRV_SPEC_MAX_ITEMS) {
		mf_err(c, en, path, "found more than %d entries", DRV_SPEC_MAX_ITEMS);
		return;
	}
	while ((e = fy_node_sequence_iterate(en, &it))) {
		static const char *const known[] = { "name", "value", NULL };
		char ep[560], fp[600];
		const char *name, *value;
		snprintf(ep, sizeof(ep), "%.500s[%d]", path, i++);
		if (!fy_node_is_mapping(e)) {
			mf_err(c, e, ep, "found %s, expected {name, value}", drv_yaml_kind(e));
			continue;
		}
		mf_join(fp, sizeof(fp), ep, "name");
		name = mf_scalar(mf_field(e, "name"));
		if (!name || !*name) {
			mf_err(c, e, fp, "found %s, expected a variable name",
			       name ? "an empty name" : drv_yaml_kind(mf_field(e, "name")));
			continue;
		}
		if (mf_field(e, "valueFrom")) {
			struct fy_node *vf = mf_field(e, "valueFrom");
			json_t *j = drv_yaml_node_json(vf);
			char where[300], what[300];

			mf_join(fp, sizeof(fp), ep, "valueFrom");
			if (!json_object_get(j, "secretKeyRef") && !json_object_get(j, "configMapKeyRef")) {
				/* fieldRef, resourceFieldRef: kept */
				drv_spec_keep_ignored(s, fp, j);
			} else if (!drv_spec_check_value_from(j, where, sizeof(where), what,
							      sizeof(what))) {
				char wp[900];

				snprintf(wp, sizeof(wp), "%s%s", fp, where);
				mf_err(c, vf, wp, "%s", what);
				json_decref(j);
			} else {
				drv_jobspec_add_env_from(s, g, name, j);
			}
			continue;
		}
		mf_keep_unknown(s, e, ep, known);
		value = "";
		if (mf_field(e, "value")) {
			mf_join(fp, sizeof(fp), ep, "value");
			value = mf_scalar(mf_field(e, "value"));
			if (!value) {
				mf_err(c, mf_field(e, "value"), fp, "found %s, expected a string",
				       drv_yaml_kind(mf_field(e, "value")));
				continue;
			}
		}
		drv_jobspec_add_env(s, g, name, value);
	}
}

/* The pod's volume named name (a mapping), or NULL. */
static struct fy_node *pod_volume(struct mf_ctx *c, const char *name)
{
	void *it = NULL;
	struct fy_node *v;

	if (!c->pod_volumes || !fy_node_is_sequence(c->pod_volumes))
		return NULL;
	while ((v = fy_node_sequence_iterate(c->pod_volumes, &it))) {
		const char *vn = mf_scalar(mf_field(v, "name"));

		if (vn && strcmp(vn, name) == 0)
			return v;
	}
	return NULL;
}

/*
 * The main container's volumeMounts at path: a mount of a secret or
 * configMap volume joins its volume into run[g].volumes (checked); a mount
 * of any other volume is kept, not acted on.
 */
static void read_mounts(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *n,
			const char *path)
{
	void *it = NULL;
	struct fy_node *m;
	json_t *out = json_array();
	int i = 0;

	if (!fy_node_is_sequence(n)) {
		mf_err(c, n, path, "found %s, expected a list of {name, mountPath}", drv_yaml_kind(n));
		json_decref(out);
		return;
	}
	while ((m = fy_node_sequence_iterate(n, &it))) {
		char mp[600];
		const char *name = mf_scalar(mf_field(m, "name"));
		struct fy_node *v;
		json_t *j, *src;

		snprintf(mp, sizeof(mp), "%.500s[%d]", path, i++);
		if (!fy_node_is_mapping(m) || !name) {
			mf_err(c, m, mp, "found %s, expected {name, mountPath}",
			       fy_node_is_mapping(m) ? "a mount without a name" : drv_yaml_kind(m));
			continue;
		}
		v = pod_volume(c, name);
		if (!v || !(mf_field(v, "secret") || mf_field(v, "configMap")))
			continue;   /* other kinds, and unknown names: mf_read_volumes */
		src = drv_yaml_node_json(mf_field(v, "secret") ? mf_field(v, "secret")
					 : mf_field(v, "configMap"));
		j = drv_yaml_node_json(m);
		json_object_set_new(j, mf_field(v, "secret") ? "secret" : "configMap", src);
		json_object_del(j, "mountPropagation");   /* no meaning for a file volume */
		json_array_append_new(out, j);
		if (c->mounted)
			json_array_append_new(c->mounted, json_string(name));
	}
	if (json_array_size(out)) {
		char where[300], what[300], wp[900];

		if (!drv_spec_check_volumes(out, where, sizeof(where), what, sizeof(what))) {
			snprintf(wp, sizeof(wp), "%s%s", path, where);
			mf_err(c, n, wp, "%s (the mount joined with its volume)", what);
			json_decref(out);
			return;
		}
		json_decref(s->run[g].volumes);
		s->run[g].volumes = out;
		return;
	}
	json_decref(out);
}

/* The main container (the first, or the one kubectl.kubernetes.io/default-container
 * names) runs the task; the others count toward resources and are kept. */
static void read_container(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *cn,
			   const char *path, bool main, struct res *sum)
{
	static const char *const known[] = { "name", "image", "command", "args", "env",
		"workingDir", "resources", "imagePullPolicy", "envFrom", "volumeMounts", "securityContext",
		NULL };
	struct drv_task_run *r = &s->run[g];
	struct fy_node *n;
	struct res res;
	char fp[560];

	if (!fy_node_is_mapping(cn)) {
		mf_err(c, cn, path, "found %s, expected a container", drv_yaml_kind(cn));
		return;
	}
	mf_join(fp, sizeof(fp), path, "resources");
	read_resources(c, s, mf_field(cn, "resources"), fp, &res);
	if (res.gpus > 0)
		sum->gpus = (sum->gpus > 0 ? sum->gpus : 0) + res.gpus;
	else if (res.gpus == 0 && sum->gpus < 0)
		sum->gpus = 0;
	sum->cpu_milli += res.cpu_milli;
	sum->mem_mib += res.mem_mib;
	if (!main) {
		/* a sidecar: its resources count, the rest is kept */
		static const char *const sk[] = { "resources", NULL };
		mf_keep_unknown(s, cn, path, sk);
		return;
	}
	if ((n = mf_field(cn, "name"))) {
		mf_join(fp, sizeof(fp), path, "name");
		r->container = mf_str(c, n, fp);
	}
	if ((n = mf_field(cn, "image"))) {
		mf_join(fp, sizeof(fp), path, "image");
		r->image = mf_str(c, n, fp);
		/* kubelet: InvalidImageName; here refused before anything runs */
		for (const char *p = r->image; p && *p; p++)
			if ((unsigned char)*p <= ' ' || *p == 0x7f) {
				mf_err(c, n, fp, "found %s (0x%02x) at byte %d of the image, expected "
				       "an image reference such as registry/name:tag",
				       *p == ' ' ? "a space" : "a control character",
				       (unsigned)(unsigned char)*p, (int)(p - r->image) + 1);
				break;
			}
	} else {
		mf_join(fp, sizeof(fp), path, "image");
		mf_err(c, cn, fp, "found nothing, expected a container image");
	}
	if ((n = mf_field(cn, "command"))) {
		mf_join(fp, sizeof(fp), path, "command");
		r->command = mf_strv(c, n, fp, &r->ncommand);
	}
	if ((n = mf_field(cn, "args"))) {
		mf_join(fp, sizeof(fp), path, "args");
		r->args = mf_strv(c, n, fp, &r->nargs);
	}
	if ((n = mf_field(cn, "env"))) {
		mf_join(fp, sizeof(fp), path, "env");
		read_env(c, s, g, n, fp);
	}
	if ((n = mf_field(cn, "workingDir"))) {
		mf_join(fp, sizeof(fp), path, "workingDir");
		r->working_dir = mf_str(c, n, fp);
	}
	if ((n = mf_field(cn, "securityContext"))) {
		mf_join(fp, sizeof(fp), path, "securityContext");
		mf_read_security(c, s, g, n, fp);
	}
	if ((n = mf_field(cn, "volumeMounts"))) {
		c->mounts = n;
		mf_join(c->mounts_path, sizeof(c->mounts_path), path, "volumeMounts");
	}
	if ((n = mf_field(cn, "imagePullPolicy"))) {
		mf_join(fp, sizeof(fp), path, "imagePullPolicy");
		r->image_pull_policy = mf_str(c, n, fp);
		if (r->image_pull_policy && strcmp(r->image_pull_policy, "Always") &&
		    strcmp(r->image_pull_policy, "IfNotPresent") &&
		    strcmp(r->image_pull_policy, "Never"))
			mf_err(c, n, fp, "found \"%.64s\", expected Always, IfNotPresent or Never",
			       r->image_pull_policy);
	}
	if ((n = mf_field(cn, "envFrom"))) {
		json_t *j = drv_yaml_node_json(n);
		char where[300], what[300], wp[900];

		mf_join(fp, sizeof(fp), path, "envFrom");
		if (!drv_spec_check_env_from(j, where, sizeof(where), what, sizeof(what))) {
			snprintf(wp, sizeof(wp), "%s%s", fp, where);
			mf_err(c, n, wp, "%s", what);
			json_decref(j);
		} else {
			r->env_from = j;
		}
	}
	if ((n = mf_field(cn, "volumeMounts"))) {
		mf_join(fp, sizeof(fp), path, "volumeMounts");
		read_mounts(c, s, g, n, fp);
	}
	mf_keep_unknown(s, cn, path, known);
}

/* The containers at fp (a non-empty list) into group g; their resources
 * summed into sum. */
static void read_containers(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *n,
			    const char *fp, struct fy_node *md, struct res *sum)
{
	void *it = NULL;
	struct fy_node *cn;
	int i = 0, main_i = 0;
	/* kubectl's default-container annotation names the main container */
	const char *dflt = mf_scalar(mf_field(mf_field(md, "annotations"), ANN_DEFAULT_CONTAINER));

	if (dflt) {
		while ((cn = fy_node_sequence_iterate(n, &it))) {
			const char *cname = mf_scalar(mf_field(cn, "name"));
			if (cname && strcmp(cname, dflt) == 0) {
				main_i = i;
				break;
			}
			i++;
		}
		it = NULL;
		i = 0;
	}
	while ((cn = fy_node_sequence_iterate(n, &it))) {
		char cp[600];
		snprintf(cp, sizeof(cp), "%s[%d]", fp, i);
		read_container(c, s, g, cn, cp, i == main_i, sum);
		i++;
	}
}

/* Is key a label drover acts on: GPU product, region, zone, pool? */
static bool label_acted(const char *k)
{
	return strcmp(k, SEL_GPU_PRODUCT) == 0 || strcmp(k, SEL_REGION) == 0 ||
	       strcmp(k, SEL_REGION_OLD) == 0 || strcmp(k, SEL_ZONE) == 0 ||
	       strcmp(k, SEL_ZONE_OLD) == 0 || strcmp(k, DRV_LABEL_POOL) == 0;
}

/* A node must have label k = val (vn: where val was written, at kp). */
static void require_label(struct mf_ctx *c, struct drv_jobspec *s, int g, const char *k,
			  const char *val, struct fy_node *vn, const char *kp)
{
	struct drv_task_group *tg = &s->job.groups[g];

	if (!val || !*val) {
		mf_err(c, vn, kp, "found %s, expected a label value", drv_yaml_kind(vn));
	} else if (strcmp(k, SEL_GPU_PRODUCT) == 0) {
		int m = drv_gpu_model_find(val);
		if (m < 0) {
			/* a model the catalog lacks may still be on a node */
			int line, col;
			drv_spec_node_mark(vn, &line, &col);
			drv_diag_warn(c->d, line, col, kp, "GPU model \"%.64s\" is not in "
				      "drover's catalog: kept; the job runs only where a "
				      "node has it", val);
			drv_free(s->run[g].gpu_model_name);
			s->run[g].gpu_model_name = drv_strdup(val);
		} else {
			tg->model = (int8_t)m;
		}
	} else if (strcmp(k, SEL_REGION) == 0 || strcmp(k, SEL_REGION_OLD) == 0) {
		drv_job_add_region(&s->job, val);
	} else {
		/* zone labels as nodes carry them; the pool label is the pool's name */
		drv_job_add_node_label(&s->job, strcmp(k, SEL_ZONE_OLD) == 0 ? SEL_ZONE : k, val);
	}
}

/* nodeSelector at sp: the GPU model, region, zone and pool act; other labels are kept. */
static void read_node_selector(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *n,
			       const char *sp)
{
	void *it = NULL;
	struct fy_node_pair *p;

	if (!fy_node_is_mapping(n))
		mf_err(c, n, sp, "found %s, expected a mapping of labels", drv_yaml_kind(n));
	while (fy_node_is_mapping(n) && (p = fy_node_mapping_iterate(n, &it))) {
		const char *k = mf_scalar(fy_node_pair_key(p));
		struct fy_node *vn = fy_node_pair_value(p);
		const char *val = mf_scalar(vn);
		char kp[600];
		if (!k)
			continue;
		mf_join(kp, sizeof(kp), sp, k);
		if (label_acted(k)) {
			require_label(c, s, g, k, val, vn, kp);
		} else {
			drv_spec_keep_ignored(s, kp, drv_yaml_node_json(vn));
		}
	}
}

/* The pod-level fields after the containers: restart policy, grace
 * period, priority class and priority, deadline. */
static void read_pod_fields(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
			    const char *path)
{
	struct drv_task_run *r = &s->run[g];
	struct fy_node *n;
	char fp[560];
	int64_t v;

	if ((n = mf_field(ps, "restartPolicy"))) {
		mf_join(fp, sizeof(fp), path, "restartPolicy");
		drv_free(r->restart_policy);
		r->restart_policy = mf_str(c, n, fp);
		if (r->restart_policy && strcmp(r->restart_policy, "Always") != 0 &&
		    strcmp(r->restart_policy, "OnFailure") != 0 &&
		    strcmp(r->restart_policy, "Never") != 0)
			mf_err(c, n, fp, "found \"%.64s\", expected Always, OnFailure or Never",
			       r->restart_policy);
	}
	if ((n = mf_field(ps, "terminationGracePeriodSeconds"))) {
		mf_join(fp, sizeof(fp), path, "terminationGracePeriodSeconds");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			r->termination_grace_s = v;
	}
	if ((n = mf_field(ps, "priorityClassName"))) {
		mf_join(fp, sizeof(fp), path, "priorityClassName");
		if (!s->priority_class)
			s->priority_class = mf_str(c, n, fp);
	}
	if ((n = mf_field(ps, "priority"))) {
		mf_join(fp, sizeof(fp), path, "priority");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			s->job.priority = (int32_t)v;
	}
	if ((n = mf_field(ps, "activeDeadlineSeconds"))) {
		mf_join(fp, sizeof(fp), path, "activeDeadlineSeconds");
		if (mf_int(c, n, fp, INT32_MAX, &v)) {
			s->job.time_limit = v;
			s->k8s.active_deadline_s = v;
		}
	}
}

/*
 * spec.affinity at path: a required node affinity of one term whose
 * expressions are `In` on the labels drover acts on becomes requirements
 * as nodeSelector's; every other part (other operators or keys, several
 * terms, preferred terms, pod affinity and anti-affinity) is kept, one
 * warning each.
 */
static void read_affinity(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *af,
			  const char *path)
{
	static const char *const aknown[] = { "nodeAffinity", NULL };
	static const char *const nknown[] = { "requiredDuringSchedulingIgnoredDuringExecution", NULL };
	struct fy_node *na = mf_field(af, "nodeAffinity"), *req, *terms, *exprs, *e;
	char np[600], rp[700], tp[760], ep[800];
	void *it = NULL;
	int i = 0;

	if (!fy_node_is_mapping(af)) {
		mf_err(c, af, path, "found %s, expected an affinity mapping", drv_yaml_kind(af));
		return;
	}
	mf_keep_unknown(s, af, path, aknown);
	if (!na)
		return;
	mf_join(np, sizeof(np), path, "nodeAffinity");
	mf_keep_unknown(s, na, np, nknown);
	req = mf_field(na, "requiredDuringSchedulingIgnoredDuringExecution");
	mf_join(rp, sizeof(rp), np, "requiredDuringSchedulingIgnoredDuringExecution");
	terms = mf_field(req, "nodeSelectorTerms");
	if (!req)
		return;
	if (!terms || !fy_node_is_sequence(terms) || fy_node_sequence_item_count(terms) != 1 ||
	    !fy_node_is_mapping(fy_node_sequence_get_by_index(terms, 0))) {
		/* several terms are alternatives drover cannot express: kept whole */
		drv_spec_keep_ignored(s, rp, drv_yaml_node_json(req));
		return;
	}
	snprintf(tp, sizeof(tp), "%s.nodeSelectorTerms[0]", rp);
	{
		static const char *const tknown[] = { "matchExpressions", NULL };
		mf_keep_unknown(s, fy_node_sequence_get_by_index(terms, 0), tp, tknown);
	}
	exprs = mf_field(fy_node_sequence_get_by_index(terms, 0), "matchExpressions");
	while (exprs && fy_node_is_sequence(exprs) && (e = fy_node_sequence_iterate(exprs, &it))) {
		const char *k = mf_scalar(mf_field(e, "key")), *op = mf_scalar(mf_field(e, "operator"));
		struct fy_node *vals = mf_field(e, "values"), *v;
		void *vit = NULL;
		int nv = vals && fy_node_is_sequence(vals) ? fy_node_sequence_item_count(vals) : 0;

		snprintf(ep, sizeof(ep), "%s.matchExpressions[%d]", tp, i++);
		if (!k || !op || strcmp(op, "In") != 0 || !label_acted(k) || nv == 0 ||
		    (strcmp(k, SEL_GPU_PRODUCT) == 0 && nv != 1)) {
			drv_spec_keep_ignored(s, ep, drv_yaml_node_json(e));
			continue;
		}
		while ((v = fy_node_sequence_iterate(vals, &vit)))
			require_label(c, s, g, k, mf_scalar(v), v, ep);
	}
}

/* The pod's volumes: those the main container mounts from a secret or
 * configMap are acted on (read_mounts); every other one is kept. */
static void read_volumes(struct mf_ctx *c, struct drv_jobspec *s, const char *path)
{
	void *it = NULL;
	struct fy_node *v;
	char fp[600];
	int i = 0;

	if (!c->pod_volumes)
		return;
	mf_join(fp, sizeof(fp), path, "volumes");
	if (!fy_node_is_sequence(c->pod_volumes)) {
		mf_err(c, c->pod_volumes, fp, "found %s, expected a list of volumes",
		       drv_yaml_kind(c->pod_volumes));
		return;
	}
	while ((v = fy_node_sequence_iterate(c->pod_volumes, &it))) {
		const char *name = mf_scalar(mf_field(v, "name"));
		bool acted = false;
		char vp[640];
		size_t k;
		json_t *x;

		snprintf(vp, sizeof(vp), "%.560s[%d]", fp, i++);
		json_array_foreach(c->mounted, k, x)
			if (name && strcmp(json_string_value(x), name) == 0)
				acted = true;
		/* hostPath and emptyDir: mf_read_volumes' (manifest_volumes.c) */
		if (!acted && !mf_field(v, "hostPath") && !mf_field(v, "emptyDir"))
			drv_spec_keep_ignored(s, vp, drv_yaml_node_json(v));
	}
}

/*
 * Pod spec at path into group g (already added, count set): containers,
 * nodeSelector, restart policy, grace period, priority.
 */
void mf_read_pod_spec(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
		      const char *path, struct fy_node *md)
{
	static const char *const known[] = { "containers", "nodeSelector", "restartPolicy",
		"terminationGracePeriodSeconds", "priorityClassName", "priority",
		"activeDeadlineSeconds", "affinity", "volumes", "hostIPC", "securityContext", NULL };
	struct drv_task_group *tg = &s->job.groups[g];
	struct fy_node *n;
	struct res sum = { -1, 0, 0 };
	char fp[560];

	if (!ps || !fy_node_is_mapping(ps)) {
		mf_err(c, ps, path, "found %s, expected a pod spec with containers", drv_yaml_kind(ps));
		return;
	}
	c->mounts = NULL;
	mf_join(fp, sizeof(fp), path, "containers");
	n = mf_field(ps, "containers");
	if (!n || !fy_node_is_sequence(n) || fy_node_sequence_item_count(n) == 0)
		mf_err(c, n ? n : ps, fp, "found %s, expected a list of at least one container",
		       n && fy_node_is_sequence(n) ? "an empty list" : drv_yaml_kind(n));
	else {
		c->pod_volumes = mf_field(ps, "volumes");
		c->mounted = json_array();
		read_containers(c, s, g, n, fp, md, &sum);
		read_volumes(c, s, path);
		json_decref(c->mounted);
		c->mounted = NULL;
		c->pod_volumes = NULL;
	}
	tg->gpus = sum.gpus > 0 ? (int32_t)sum.gpus : 0;
	if (sum.gpus > DRV_MAX_NODE_GPUS)
		mf_err(c, n, fp, "found %lld GPUs in one pod, expected at most %d",
		       (long long)sum.gpus, DRV_MAX_NODE_GPUS);
	tg->cpu_milli = sum.cpu_milli;
	tg->mem_mib = sum.mem_mib;
	if ((n = mf_field(ps, "nodeSelector"))) {
		char sp[560];
		mf_join(sp, sizeof(sp), path, "nodeSelector");
		read_node_selector(c, s, g, n, sp);
	}
	if ((n = mf_field(ps, "affinity"))) {
		char ap[560];
		mf_join(ap, sizeof(ap), path, "affinity");
		read_affinity(c, s, g, n, ap);
	}
	read_pod_fields(c, s, g, ps, path);
	mf_read_volumes(c, s, g, ps, path);
	mf_join(fp, sizeof(fp), path, "securityContext");
	if ((n = mf_field(ps, "securityContext")))
		mf_read_security(c, s, g, n, fp);
	if (s->run[g].run_as_non_root == 1 && s->run[g].run_as_user == 0)
		mf_err(c, n ? n : ps, fp, "found runAsNonRoot: true with runAsUser: 0, expected a "
		       "non-zero runAsUser (or runAsNonRoot: false)");
	mf_keep_unknown(s, ps, path, known);
}

/* A pod template {metadata, spec} into group g. */
void mf_read_template(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *tn,
		      const char *path)
{
	static const char *const known[] = { "metadata", "spec", NULL };
	static const char *const mknown[] = { "labels", "annotations", NULL };
	struct fy_node *md;
	char fp[560];

	if (!tn || !fy_node_is_mapping(tn)) {
		mf_err(c, tn, path, "found %s, expected a pod template {metadata, spec}", drv_yaml_kind(tn));
		return;
	}
	mf_join(fp, sizeof(fp), path, "spec");
	mf_read_pod_spec(c, s, g, mf_field(tn, "spec"), fp, mf_field(tn, "metadata"));
	mf_join(fp, sizeof(fp), path, "metadata");
	if ((md = mf_field(tn, "metadata"))) {
		char ap[600];
		mf_join(ap, sizeof(ap), fp, "annotations");
		mf_apply_annotations(c, s, g, mf_field(md, "annotations"), ap);
		if (mf_field(md, "labels")) {
			const char *q = mf_scalar(mf_field(mf_field(md, "labels"), LABEL_KUEUE_QUEUE));
			if (q && !s->queue)
				s->queue = drv_strdup(q);
		}
		mf_keep_unknown(s, md, fp, mknown);
		/* template labels/annotations other than the ones acted on are kept */
		if (mf_field(md, "labels")) {
			mf_join(ap, sizeof(ap), fp, "labels");
			drv_spec_keep_ignored(s, ap, drv_yaml_node_json(mf_field(md, "labels")));
		}
	}
	mf_keep_unknown(s, tn, path, known);
}
