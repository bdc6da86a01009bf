/*
 * manifest_meta.c: an object's metadata (name, namespace, labels,
 * annotations) and the annotations that act on a job: GPU fraction and
 * memory (drover's and KAI's), Kueue's topology requests (mapped to
 * drover's level names by drv_spec_topo_level), preemptible, tenant and
 * runtime estimate.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- topology levels: Kueue names node labels; drover names levels --- */

const char *drv_spec_topo_level(const char *key)
{
	return drv_topo_label_level(key);
}


/* --- metadata and annotations -------------------------------------- */

void mf_read_metadata(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *md,
		      const char *path)
{
	static const char *const known[] = { "name", "generateName", "namespace", "labels",
		"annotations", NULL };
	struct fy_node *n;
	char fp[512];

	if (!md) {
		mf_err(c, NULL, path, "found nothing, expected metadata with a name");
		return;
	}
	if (!fy_node_is_mapping(md)) {
		mf_err(c, md, path, "found %s, expected a mapping", drv_yaml_kind(md));
		return;
	}
	if ((n = mf_field(md, "name"))) {
		mf_join(fp, sizeof(fp), path, "name");
		s->job.name = mf_str(c, n, fp);
	} else if ((n = mf_field(md, "generateName"))) {
		mf_join(fp, sizeof(fp), path, "generateName");
		s->job.name = mf_str(c, n, fp);
	} else {
		mf_err(c, md, path, "found no name, expected metadata.name");
	}
	if ((n = mf_field(md, "namespace"))) {
		mf_join(fp, sizeof(fp), path, "namespace");
		s->namespace_ = mf_str(c, n, fp);
	}
	if ((n = mf_field(md, "labels"))) {
		mf_join(fp, sizeof(fp), path, "labels");
		s->labels = mf_labels(c, n, fp, &s->nlabels);
	}
	if ((n = mf_field(md, "annotations"))) {
		mf_join(fp, sizeof(fp), path, "annotations");
		s->annotations = mf_labels(c, n, fp, &s->nannotations);
	}
	mf_keep_unknown(s, md, path, known);
}

/*
 * A Kueue topology annotation's value as the job keeps it: a node label key
 * as written (the cluster resolves it: its levelLabels first, then the name
 * rules of drv_spec_topo_level), or a drover level name; NULL after an
 * error.
 */
static const char *topo_level_of(struct mf_ctx *c, struct fy_node *vn, const char *v,
				 const char *fp)
{
	const char *lvl = drv_spec_topo_level(v);
	if (strchr(v, '/')) {
		if (!lvl) {
			int line, col;
			drv_spec_node_mark(vn, &line, &col);
			drv_diag_warn(c->d, line, col, fp, "topology label \"%.128s\" is no "
				      "level drover knows by itself: kept; a cluster file must "
				      "name it in levelLabels", v);
		}
		return v;
	}
	if (!lvl)
		mf_err(c, vn, fp, "found \"%.128s\", expected a topology label drover maps "
		       "to a level (kubernetes.io/hostname, ...-rack, ...-block, "
		       "nvidia.com/gpu.clique), a label of the cluster file's "
		       "levelLabels or a level name", v);
	return lvl;
}

/*
 * Kueue's slices: podset-slice-required-topology names the level, and
 * podset-slice-size, beside it in the same annotations, the pods per slice
 * (both or neither, as Kueue's webhook has it). The size is checked against
 * the pod count once the job is complete (mf_end_job).
 */
static void read_slice(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *anns,
		       const char *k, struct fy_node *vn, const char *fp, const char *path)
{
	struct fy_node *sn = mf_field(anns, ANN_TOPO_SLICE_SIZE);
	const char *v = mf_scalar(vn), *lvl, *sv;
	char *end = NULL;
	long n = 0;

	if (strcmp(k, ANN_TOPO_SLICE_SIZE) == 0) {
		if (!mf_field(anns, ANN_TOPO_SLICE))
			mf_err(c, vn, fp, "found a slice size without %s, expected both or neither",
			       ANN_TOPO_SLICE);
		return; /* read with the level */
	}
	if (!(lvl = topo_level_of(c, vn, v, fp)))
		return;
	if (!sn) {
		mf_err(c, vn, fp, "found no %s beside it, expected the pods per slice", ANN_TOPO_SLICE_SIZE);
		return;
	}
	mf_join(c->slice_path, sizeof(c->slice_path), path, ANN_TOPO_SLICE_SIZE);
	sv = mf_scalar(sn);
	if (sv && *sv)
		n = strtol(sv, &end, 10);
	if (!sv || !*sv || *end || n < 1 || n > DRV_SPEC_MAX_TASKS) {
		mf_err(c, sn, c->slice_path, "found \"%.64s\", expected a number of pods, at least 1",
		       sv ? sv : "");
		return;
	}
	drv_job_set_slice(&s->job, lvl, (int32_t)n);
	c->slice_node = sn;
	c->slice_group = g;
}

/* Annotations that act on the job (from object or pod template metadata). */
void mf_apply_annotations(struct mf_ctx *c, struct drv_jobspec *s, int g,
			  struct fy_node *anns, const char *path)
{
	void *it = NULL;
	struct fy_node_pair *p;
	if (!anns || !fy_node_is_mapping(anns))
		return;
	while ((p = fy_node_mapping_iterate(anns, &it))) {
		const char *k = mf_scalar(fy_node_pair_key(p));
		struct fy_node *vn = fy_node_pair_value(p);
		const char *v = mf_scalar(vn);
		char fp[560];
		if (!k || !v)
			continue;
		mf_join(fp, sizeof(fp), path, k);
		if (strcmp(k, ANN_GPU_FRACTION) == 0 || strcmp(k, ANN_KAI_FRACTION) == 0) {
			int64_t m;
			int i;
			if (drv_quantity_parse(v, 1000, &m) || m < 1 || m > 999) {
				mf_err(c, vn, fp, "found \"%.64s\", expected a fraction of one GPU "
				       "between 0.001 and 0.999 (or 1m..999m)", v);
				continue;
			}
			for (i = (g < 0 ? 0 : g); i < (g < 0 ? s->job.ngroups : g + 1); i++) {
				if (s->job.groups[i].gpus > 1 ||
				    (s->job.groups[i].gpus == 1 && m != 1000)) {
					mf_err(c, vn, fp, "found a GPU fraction and a whole-GPU request "
					       "of %d, expected one of them", s->job.groups[i].gpus);
					continue;
				}
				s->job.groups[i].gpus = 0;
				s->job.groups[i].gpu_milli = (int32_t)m;
			}
		} else if (strcmp(k, ANN_GPU_MEMORY) == 0 || strcmp(k, ANN_KAI_MEMORY) == 0) {
			int64_t mib;
			int i, rc;
			/* KAI's gpu-memory is a plain number of MiB; ours is a quantity */
			rc = strcmp(k, ANN_KAI_MEMORY) == 0 && strspn(v, "0123456789") == strlen(v)
				? drv_quantity_parse(v, 1, &mib) : drv_quantity_mib(v, &mib);
			if (rc || mib > INT32_MAX) {
				mf_err(c, vn, fp, "found \"%.64s\", expected a memory quantity such as 20Gi", v);
				continue;
			}
			for (i = (g < 0 ? 0 : g); i < (g < 0 ? s->job.ngroups : g + 1); i++)
				s->job.groups[i].gpu_mem_mib = (int32_t)mib;
		} else if (strcmp(k, ANN_TOPO_REQUIRED) == 0 || strcmp(k, ANN_TOPO_PREFERRED) == 0) {
			const char *lvl = topo_level_of(c, vn, v, fp);
			bool req = strcmp(k, ANN_TOPO_REQUIRED) == 0;
			if (!lvl)
				continue;
			if (s->job.topo_mode == DRV_TOPO_REQUIRED && !req)
				continue; /* required wins over preferred */
			drv_free(s->job.topo_level);
			s->job.topo_level = drv_strdup(lvl);
			s->job.topo_mode = req ? DRV_TOPO_REQUIRED : DRV_TOPO_PREFERRED;
		} else if (strcmp(k, ANN_TOPO_SLICE) == 0 || strcmp(k, ANN_TOPO_SLICE_SIZE) == 0) {
			read_slice(c, s, g, anns, k, vn, fp, path);
		} else if (strcmp(k, ANN_PREEMPTIBLE) == 0) {
			if (strcmp(v, "true") == 0)
				s->job.preemptible = true;
			else if (strcmp(v, "false") == 0)
				s->job.preemptible = false;
			else
				mf_err(c, vn, fp, "found \"%.64s\", expected \"true\" or \"false\"", v);
		} else if (strcmp(k, ANN_TENANT) == 0) {
			drv_free(s->job.tenant);
			s->job.tenant = drv_strdup(v);
		} else if (strcmp(k, ANN_CONTAINER_RUNTIME) == 0) {
			if (strcmp(v, "podman") && strcmp(v, "host")) {
				mf_err(c, vn, fp, "found \"%.64s\", expected podman or host", v);
				continue;
			}
			for (int i = (g < 0 ? 0 : g); i < (g < 0 ? s->job.ngroups : g + 1); i++) {
				drv_free(s->run[i].runtime);
				s->run[i].runtime = strcmp(v, "podman") ? NULL : drv_strdup(v);
			}
		} else if (strcmp(k, ANN_RUNTIME) == 0) {
			int64_t secs;
			if (drv_slurm_time_parse(v, &secs))
				mf_err(c, vn, fp, "found \"%.64s\", expected a time such as 2:00:00 or 1-12", v);
			else
				s->job.runtime_estimate = secs;
		}
	}
}
