/*
 * manifest.c: Kubernetes manifests to drover jobs. Reads a YAML (or JSON)
 * stream with libfyaml, document by document, and turns each object into
 * jobs:
 *
 *   v1 Pod                         one group of one task
 *   batch/v1 Job                   one group of `parallelism` tasks
 *   batch.volcano.sh/v1alpha1 Job  one group per spec.tasks[], gang of minAvailable
 *   scheduling.volcano.sh/v1beta1 PodGroup
 *                                  gangs the Pods of the stream that name it
 *   kubeflow.org/v1 PyTorchJob     Master and Worker groups, one gang
 *   scheduling.k8s.io/v1 PriorityClass
 *                                  resolves priorityClassName in the stream
 *   v1 List                        its items, each as above
 *
 * Every field is either acted on, or kept in spec->ignored with a warning:
 * nothing is dropped silently. Errors carry the node's line:col and field
 * path. YAML aliases are refused (their expansion is unbounded).
 *
 * This file reads the stream, checks each document's tree and hands each
 * object to its kind's reader: manifest_job.c (Pod, Job), manifest_volcano.c,
 * manifest_pytorch.c, manifest_priority.c; they build groups with
 * manifest_pod.c and manifest_meta.c over the node helpers of
 * manifest_node.c. What they share is declared in spec_int.h.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void one_object(struct mf_ctx *c, struct fy_node *root, const char *path,
		       struct mf_podgroups *pgs, int depth);

static void kind_list(struct mf_ctx *c, const struct mf_object *o, struct mf_podgroups *pgs,
		      int depth)
{
	struct fy_node *items = mf_field(o->root, "items"), *it;
	void *iter = NULL;
	int i = 0;
	char fp[64];
	mf_path(fp, sizeof(fp), o, "items");
	if (!items || !fy_node_is_sequence(items)) {
		mf_err(c, items ? items : o->root, fp, "found %s, expected a list of objects", drv_yaml_kind(items));
		return;
	}
	while ((it = fy_node_sequence_iterate(items, &iter))) {
		char ip[64];
		snprintf(ip, sizeof(ip), "items[%d]", i++);
		one_object(c, it, ip, pgs, depth + 1);
	}
}

static void one_object(struct mf_ctx *c, struct fy_node *root, const char *path,
		       struct mf_podgroups *pgs, int depth)
{
	struct mf_object o;
	char fp[96];

	if (!root) /* an empty document */
		return;
	memset(&o, 0, sizeof(o));
	snprintf(o.path, sizeof(o.path), "%s", path);
	o.root = root;
	if (!fy_node_is_mapping(root)) {
		mf_err(c, root, path[0] ? path : NULL, "found %s, expected a Kubernetes object",
		       drv_yaml_kind(root));
		return;
	}
	o.api = mf_scalar(mf_field(root, "apiVersion"));
	o.kind = mf_scalar(mf_field(root, "kind"));
	if (!o.api || !o.kind) {
		mf_path(fp, sizeof(fp), &o, o.api ? "kind" : "apiVersion");
		mf_err(c, root, fp, "found nothing, expected apiVersion and kind");
		return;
	}
	mf_path(fp, sizeof(fp), &o, "kind");
	if (strcmp(o.api, "v1") == 0 && strcmp(o.kind, "Pod") == 0)
		mf_kind_pod(c, &o);
	else if (strcmp(o.api, "batch/v1") == 0 && strcmp(o.kind, "Job") == 0)
		mf_kind_batch_job(c, &o);
	else if (strncmp(o.api, "batch.volcano.sh/", 17) == 0 && strcmp(o.kind, "Job") == 0)
		mf_kind_volcano_job(c, &o);
	else if ((strncmp(o.api, "scheduling.volcano.sh/", 22) == 0 ||
		  strncmp(o.api, "scheduling.run.ai/", 18) == 0 ||
		  strncmp(o.api, "scheduling.x-k8s.io/", 20) == 0 ||
		  strncmp(o.api, "scheduling.sigs.k8s.io/", 23) == 0) &&
		 strcmp(o.kind, "PodGroup") == 0)
		mf_kind_podgroup(c, &o, pgs);
	else if (strcmp(o.api, "kubeflow.org/v1") == 0 && strcmp(o.kind, "PyTorchJob") == 0)
		mf_kind_pytorchjob(c, &o);
	else if (strncmp(o.api, "scheduling.k8s.io/", 18) == 0 &&
		 strcmp(o.kind, "PriorityClass") == 0)
		mf_kind_priority_class(c, &o);
	else if (strcmp(o.api, "v1") == 0 && strcmp(o.kind, "List") == 0 && depth == 0)
		kind_list(c, &o, pgs, depth);
	else
		drv_diag_warn(c->d, 0, 0, fp, "%s %s is not a job: skipped (drover runs v1 Pod, "
			      "batch/v1 Job, Volcano Job, a PodGroup of Volcano, KAI or coscheduling, "
			      "Kubeflow PyTorchJob)",
			      o.api, o.kind);
}

/* 0: fine; 1: holds an alias; 2: nested deeper than the limit. */
static int check_tree(struct fy_node *n, int depth)
{
	void *it = NULL;
	int rc;
	if (!n)
		return 0;
	if (depth > DRV_SPEC_MAX_DEPTH)
		return 2;
	if (fy_node_is_scalar(n))
		return fy_node_is_alias(n) ? 1 : 0;
	if (fy_node_is_sequence(n)) {
		struct fy_node *e;
		while ((e = fy_node_sequence_iterate(n, &it)))
			if ((rc = check_tree(e, depth + 1)))
				return rc;
	} else {
		struct fy_node_pair *p;
		while ((p = fy_node_mapping_iterate(n, &it))) {
			if ((rc = check_tree(fy_node_pair_key(p), depth + 1)) ||
			    (rc = check_tree(fy_node_pair_value(p), depth + 1)))
				return rc;
		}
	}
	return 0;
}

/*
 * A document with nothing in it: the trailing `---` of a stream, or one of
 * only comments, as `helm template` emits for a template that renders to
 * nothing (kubectl skips these too). libfyaml gives them a null root.
 */
static bool empty_document(struct fy_node *root)
{
	return !root || (fy_node_is_scalar(root) && !fy_node_is_alias(root) &&
			 fy_node_get_style(root) == FYNS_PLAIN && fy_node_is_null(root));
}

/*
 * In a stream of several documents every diagnostic says which document it
 * is about: those added while document k (1-based) was read get doc = k.
 * first[k-1] is d->n when document k began, first[n] when the stream ended;
 * last > n names the document a syntax error stopped in. last 0: one
 * document, nothing to say.
 */
static void name_documents(struct drv_diags *d, const int *first, int n, int last)
{
	int k, i;
	if (last <= 0)
		return;
	for (k = 1; k <= n && k <= DRV_SPEC_MAX_DOCS; k++)
		for (i = first[k - 1]; i < first[k] && i < d->n; i++)
			d->v[i].doc = k;
	for (i = first[n < DRV_SPEC_MAX_DOCS ? n : DRV_SPEC_MAX_DOCS]; last > n && i < d->n; i++)
		d->v[i].doc = last;
}

int drv_spec_parse_manifest(const char *buf, size_t len, const char *name,
			    struct drv_specset *set, struct drv_diags *d)
{
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag = NULL;
	struct fy_parse_cfg cfg;
	struct fy_parser *fyp = NULL;
	struct fy_document *fyd;
	struct mf_ctx c = { .d = d, .set = set };
	struct mf_podgroups pgs = { 0 };
	int ndocs = 0, rc = 0, i;
	int doc_first[DRV_SPEC_MAX_DOCS + 1]; /* d->n when each document began */

	/* YAML text is printable Unicode (YAML 1.2, 5.1); checking first also keeps
	 * what libfyaml 0.7 mishandles (invalid UTF-8 in a directive, some tabs)
	 * away from it */
	if (!drv_yaml_guard(buf, len, d))
		return DRV_EPARSE;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = NULL;
	diag = fy_diag_create(&dcfg);
	if (!diag)
		return DRV_EIO;
	fy_diag_set_collect_errors(diag, true);
	memset(&cfg, 0, sizeof(cfg));
	{
		/* JSON manifests (kubectl -o json) are read as JSON, not as YAML flow */
		size_t k = 0;
		while (k < len && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\n' || buf[k] == '\r'))
			k++;
		cfg.flags = FYPCF_QUIET | (k < len && buf[k] == '{' ? FYPCF_JSON_FORCE : FYPCF_JSON_NONE);
	}
	cfg.diag = diag;
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, buf, len)) {
		rc = DRV_EIO;
		goto out;
	}
	while ((fyd = fy_parse_load_document(fyp))) {
		struct fy_node *root = fy_document_root(fyd);
		doc_first[ndocs < DRV_SPEC_MAX_DOCS ? ndocs : DRV_SPEC_MAX_DOCS] = d->n;
		if (++ndocs > DRV_SPEC_MAX_DOCS) {
			drv_diag_err(d, 0, 0, NULL, "found more than %d documents, over the limit",
				     DRV_SPEC_MAX_DOCS);
			fy_document_destroy(fyd);
			rc = DRV_ELIMIT;
			goto out;
		}
		i = check_tree(root, 1);
		if (i == 1) {
			mf_err(&c, root, NULL, "found a YAML alias (*name), expected values written out "
			       "(drover does not expand aliases)");
		} else if (i == 2) {
			drv_diag_err(d, 0, 0, NULL, "found nesting deeper than the limit of %d levels",
				     DRV_SPEC_MAX_DEPTH);
			fy_document_destroy(fyd);
			rc = DRV_ELIMIT;
			goto out;
		} else if (!empty_document(root)) {
			one_object(&c, root, "", &pgs, 0);
		}
		fy_document_destroy(fyd);
	}
	doc_first[ndocs < DRV_SPEC_MAX_DOCS ? ndocs : DRV_SPEC_MAX_DOCS] = d->n;
	if (fy_parser_get_stream_error(fyp)) {
		void *it = NULL;
		struct fy_diag_error *e;
		int n = 0;
		while ((e = fy_diag_errors_iterate(diag, &it))) {
			if (e->type < FYET_ERROR)
				continue;
			drv_diag_err(d, e->line, e->column, NULL, "%s", e->msg); /* libfyaml: 1-based */
			n++;
		}
		if (!n)
			drv_diag_err(d, 0, 0, NULL, "found YAML that does not parse");
		/* the syntax error is in the document after the last one loaded */
		name_documents(d, doc_first, ndocs, ndocs > 0 ? ndocs + 1 : 0);
		rc = DRV_EPARSE;
		goto out;
	}
	name_documents(d, doc_first, ndocs, ndocs > 1 ? ndocs : 0);
	mf_join_podgroups(&c, &pgs);
	mf_resolve_priorities(&c);
	if (set->njobs == 0 && set->nclasses == 0 && d->nerrors == 0)
		drv_diag_err(d, 0, 0, NULL, "found no job in the manifest, expected a Pod, Job, "
			     "Volcano Job, PodGroup with Pods or PyTorchJob");
out:
	mf_podgroups_release(&pgs);
	if (fyp)
		fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	DRV_UNUSED(name);
	if (!rc && d->nerrors)
		rc = DRV_EPARSE;
	return rc;
}
