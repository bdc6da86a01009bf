/*
 * spec_int.h: what the files of src/spec share and nobody else uses: the
 * per-format parsers behind drv_spec_parse_all, a few helpers, and what the
 * Kubernetes manifest readers (manifest*.c) share among themselves.
 */
#ifndef DROVER_SPEC_INT_H
#define DROVER_SPEC_INT_H

#include "drover/spec.h"

/* Each appends the jobs (and PriorityClasses) of buf (NUL-terminated, len
 * bytes) to set; errors go to d. 0 or a negative drv_err. */
int drv_spec_parse_manifest(const char *buf, size_t len, const char *name,
			    struct drv_specset *set, struct drv_diags *d);
int drv_spec_parse_sbatch(const char *buf, size_t len, const char *name,
			  const struct drv_spec_opts *opts, struct drv_specset *set,
			  struct drv_diags *d);
int drv_spec_parse_canonical(const char *buf, size_t len, struct drv_specset *set,
			     struct drv_diags *d);

/* A new initialised spec at the end of set. */
struct drv_jobspec *drv_specset_add(struct drv_specset *set);
void drv_spec_run_release(struct drv_task_run *r);
void drv_spec_class_release(struct drv_priority_class *c);

/* Adds (or replaces) field path -> value (reference stolen) in s->ignored
 * and warns "path: kept, not acted on by drover". */
void drv_spec_keep_ignored(struct drv_jobspec *s, const char *path, json_t *value);

/*
 * Checks that buf is valid UTF-8 and, unless controls, holds no control
 * characters but tab, LF and CR (NUL is refused either way). On failure
 * reports "found byte 0x.., expected UTF-8 text" at its line:col.
 */
bool drv_spec_check_text(const char *buf, size_t len, bool controls, struct drv_diags *d);

/* ------------------------------------------------------------------------
 * The Kubernetes manifest readers (manifest*.c), private to them. The
 * stream reader (manifest.c) hands each object to its kind's reader; the
 * helpers below are how every one of them reads nodes and reports errors
 * ("found X, expected Y" at the node's line:col, with the field path).
 */

/* Annotations, labels and resources drover reads (docs/job-format.md). */
#define ANN_GPU_FRACTION "drover.io/gpu-fraction"
#define ANN_KAI_FRACTION "gpu-fraction"
#define ANN_GPU_MEMORY "drover.io/gpu-memory"
#define ANN_KAI_MEMORY "gpu-memory"
#define ANN_PREEMPTIBLE "drover.io/preemptible"
#define ANN_TENANT "drover.io/tenant"
#define ANN_RUNTIME "drover.io/runtime-estimate"
#define ANN_CONTAINER_RUNTIME "drover.io/runtime"
#define ANN_TOPO_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define ANN_TOPO_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define ANN_TOPO_SLICE "kueue.x-k8s.io/podset-slice-required-topology"
#define ANN_TOPO_SLICE_SIZE "kueue.x-k8s.io/podset-slice-size"
#define ANN_VOLCANO_GROUP "scheduling.k8s.io/group-name"
#define ANN_KAI_GROUP "pod-group-name"
#define LABEL_COSCHED_GROUP "scheduling.x-k8s.io/pod-group"
#define LABEL_COSCHED_GROUP_OLD "pod-group.scheduling.sigs.k8s.io"
#define LABEL_KAI_QUEUE "kai.scheduler/queue"
#define LABEL_RUNAI_QUEUE "runai/queue"
#define ANN_VOLCANO_QUEUE "scheduling.volcano.sh/queue-name"
#define ANN_DEFAULT_CONTAINER "kubectl.kubernetes.io/default-container"
#define LABEL_KUEUE_QUEUE "kueue.x-k8s.io/queue-name"
#define SEL_GPU_PRODUCT "nvidia.com/gpu.product"
#define SEL_REGION "topology.kubernetes.io/region"
#define SEL_REGION_OLD "failure-domain.beta.kubernetes.io/region"
#define SEL_ZONE "topology.kubernetes.io/zone"
#define SEL_ZONE_OLD "failure-domain.beta.kubernetes.io/zone"
#define RES_GPU "nvidia.com/gpu"

struct fy_node;

/* One manifest being read: where errors go, where jobs go, and a count. */
struct mf_ctx {
	struct drv_diags *d;
	struct drv_specset *set;
	int errs;
	/* the main container's volumeMounts, read with the Pod's volumes
	 * (manifest_volumes.c) once both are known */
	struct fy_node *mounts;
	char mounts_path[600];
	/* while a pod spec is read: its volumes (borrowed) and the names of
	 * those the main container mounts (manifest_pod.c) */
	struct fy_node *pod_volumes;
	json_t *mounted;
	/* Kueue's slice annotations once read: the size's node and path, and
	 * the pod template's group (-1: the object's metadata), checked
	 * against the pod count when the job is complete (mf_end_job) */
	struct fy_node *slice_node;
	char slice_path[600];
	int slice_group;
};

/* manifest_volumes.c: the Pod spec's volumes, hostIPC and the main
 * container's volumeMounts (c->mounts) into group g. */
void mf_read_volumes(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
		     const char *path);
/* A securityContext (the main container's first, then the Pod's) into
 * group g: runAsUser, runAsGroup, runAsNonRoot; what is set stays. */
void mf_read_security(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *sc,
		      const char *path);

/* One object of the stream: its root mapping, apiVersion and kind
 * (borrowed from the document) and its path ("" or "items[3]"). */
struct mf_object {
	struct fy_node *root;
	const char *api, *kind;
	char path[64];
};

/* The stream's Volcano PodGroups, recorded by mf_kind_podgroup and joined
 * with their Pods by mf_join_podgroups (manifest_volcano.c). */
struct mf_podgroup;
struct mf_podgroups {
	struct mf_podgroup *v;
	int n;
	size_t cap;
};

/* manifest_node.c: nodes. An error at n's line:col (n may be NULL). */
void mf_err(struct mf_ctx *c, struct fy_node *n, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The scalar text of n (borrowed), or NULL when n is not a scalar or is an alias. */
const char *mf_scalar(struct fy_node *n);
/* The value of key in mapping m, or NULL (m may be NULL or not a mapping). */
struct fy_node *mf_field(struct fy_node *m, const char *key);
/* path.key, or path["key"] when key is not a plain identifier. */
void mf_join(char *out, size_t sz, const char *path, const char *key);
/* Keeps every key of mapping m not in known[] (NULL-ended) as ignored. */
void mf_keep_unknown(struct drv_jobspec *s, struct fy_node *m, const char *path,
		     const char *const *known);
/* Readers of one value: false (and an error) when it is not what is
 * expected; strings and vectors are the caller's to free. */
bool mf_int(struct mf_ctx *c, struct fy_node *n, const char *path, int64_t max, int64_t *out);
char *mf_str(struct mf_ctx *c, struct fy_node *n, const char *path);
char **mf_strv(struct mf_ctx *c, struct fy_node *n, const char *path, int32_t *count);
struct drv_label *mf_labels(struct mf_ctx *c, struct fy_node *n, const char *path,
			    int32_t *count);
/* The value of key among n labels, or NULL. */
const char *mf_label_get(const struct drv_label *l, int32_t n, const char *key);

/* manifest_meta.c: metadata into s (name required); annotations that act
 * on group g, or on every group when g < 0. */
void mf_read_metadata(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *md,
		      const char *path);
void mf_apply_annotations(struct mf_ctx *c, struct drv_jobspec *s, int g,
			  struct fy_node *anns, const char *path);

/* manifest_pod.c: a pod spec (md: the pod's metadata, for the default
 * container) or a pod template {metadata, spec} into group g, which exists
 * with its count set. */
void mf_read_pod_spec(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
		      const char *path, struct fy_node *md);
void mf_read_template(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *tn,
		      const char *path);

/* manifest_job.c: the field path of rest in o; a new job spec for o with
 * its metadata read; the job-level checks and annotations once its groups
 * exist; a new group (-1 and an error past the limit). */
void mf_path(char *out, size_t sz, const struct mf_object *o, const char *rest);
struct drv_jobspec *mf_begin_job(struct mf_ctx *c, const struct mf_object *o);
void mf_end_job(struct mf_ctx *c, struct drv_jobspec *s, const struct mf_object *o);
int mf_add_group(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *n, const char *path,
		 const char *name);

/* The kinds' readers, one file each but Pod and Job (manifest_job.c):
 * each appends to c->set what object o says. */
void mf_kind_pod(struct mf_ctx *c, const struct mf_object *o);
void mf_kind_batch_job(struct mf_ctx *c, const struct mf_object *o);
void mf_kind_volcano_job(struct mf_ctx *c, const struct mf_object *o);
void mf_kind_podgroup(struct mf_ctx *c, const struct mf_object *o, struct mf_podgroups *pgs);
void mf_kind_pytorchjob(struct mf_ctx *c, const struct mf_object *o);
void mf_kind_priority_class(struct mf_ctx *c, const struct mf_object *o);

/* After the stream: PodGroups merged with their Pods (then released), and
 * priorityClassName resolved against the stream's PriorityClasses. */
void mf_join_podgroups(struct mf_ctx *c, struct mf_podgroups *pgs);
void mf_podgroups_release(struct mf_podgroups *pgs);
void mf_resolve_priorities(struct mf_ctx *c);

/* ------------------------------------------------------------------------
 * The cluster file reader (cluster_file.c, cluster_topology.c), private to
 * them. Every reader below reports "found X, expected Y" at the node's
 * line:col with the field path into L->d and returns false.
 */

#define CF_PATH_MAX 256

/* A node type (nodeTypes), or the inline fields of a node entry. */
struct cf_node_type {
	char *name;
	int gpus;
	int model;
	int64_t cpu_milli;
	int64_t mem_mib;
	struct drv_label *labels;
	int nlabels;
	bool has_gpus, has_model, has_cpu, has_mem;
};

/* One cluster file being read into c. */
struct cf_loader {
	struct drv_cluster *c;
	struct drv_diags *d;
	struct cf_node_type *types;
	int ntypes;
	size_t tcap;
	int pool_level;         /* level index named "pool", or -1 */
	int64_t nodes;          /* nodes made so far */
	bool too_big;
};

bool cf_read_int(struct cf_loader *L, struct fy_node *n, const char *path, int64_t lo,
		 int64_t hi, int64_t *out);
bool cf_read_bool(struct cf_loader *L, struct fy_node *n, const char *path, bool *out);
/* A non-empty string, borrowed from the document. */
bool cf_read_str(struct cf_loader *L, struct fy_node *n, const char *path, const char **out);
/* Dollars per GPU-hour as micro-dollars. */
bool cf_read_price(struct cf_loader *L, struct fy_node *n, const char *path, int64_t *out);
void cf_free_labels(struct drv_label *l, int n);
/* Every key of mapping n one of allowed (NULL-terminated)? */
bool cf_check_keys(struct cf_loader *L, struct fy_node *n, const char *path,
		   const char *const *allowed);
/* gpus/gpuModel/cpu/memory/labels of mapping n into t (fields set are flagged). */
bool cf_read_node_fields(struct cf_loader *L, struct fy_node *n, const char *path,
			 struct cf_node_type *t);
/* The nodeTypes entry named name, or NULL. */
struct cf_node_type *cf_find_type(struct cf_loader *L, const char *name);

/* cluster_topology.c: the list of entries seq under vertex parent. */
void cf_read_entries(struct cf_loader *L, struct fy_node *seq, int32_t parent, const char *path);

/* ------------------------------------------------------------------------
 * The Slurm batch script reader (sbatch.c reads the script and builds the
 * job; sbatch_opts.c knows what each option does), private to them.
 */

/* What an option does; O_IGNORED ones are kept in spec->ignored. */
enum sb_opt_id {
	O_IGNORED = 0, O_JOB_NAME, O_NODES, O_NTASKS, O_NTASKS_PER_NODE, O_GPUS, O_GPUS_PER_NODE,
	O_GPUS_PER_TASK, O_GRES, O_CPUS_PER_TASK, O_CPUS_PER_GPU, O_MEM, O_MEM_PER_GPU,
	O_MEM_PER_CPU, O_TIME, O_PARTITION, O_QOS, O_ACCOUNT, O_REQUEUE, O_NO_REQUEUE, O_HOLD, O_BEGIN, O_SIGNAL,
	O_SWITCHES, O_SEGMENT, O_ARRAY, O_DEPENDENCY, O_EXPORT, O_CHDIR, O_PRIORITY,
	O_OUTPUT, O_ERROR, O_INPUT, O_OPEN_MODE, O_NODELIST, O_EXCLUDE, O_CONSTRAINT, O_EXCLUSIVE,
	O_HELP_LIKE,
};

struct sb_opt {
	const char *name;
	char shrt;
	int arg; /* 0 none, 1 required, 2 optional (only with '=') */
	enum sb_opt_id id;
};

/* A GPU request: [type:]count. */
struct sb_gpureq {
	int64_t n;   /* -1 = not given */
	char *type;
	int line, col;
};

/* One component's options as written (-1 = not given). */
struct sb_comp {
	int64_t nodes, ntasks, tpn, cpt, cpg, mem, mem_per_gpu, mem_per_cpu;
	struct sb_gpureq gpus, gpn, gpt, gres;
	int line, col; /* where it starts */
};

/* One script being read. */
struct sb_ctx {
	struct drv_diags *d;
	struct drv_jobspec *s;
	struct sb_comp *comps;
	int ncomps;
	size_t ccap;
	/* job-wide */
	char *name;
	int64_t time;
	char *export_raw;
	int export_line, export_col;
	char *workdir;
	/* -w, -x, -C as written (the last of each), and where */
	char *nodelist, *exclude, *constraint;
	int nodelist_line, nodelist_col, exclude_line, exclude_col, constraint_line,
	    constraint_col;
};

/* sbatch.c: an error at line:col of option opt (line 0: the command line). */
void sb_err(struct sb_ctx *c, int line, int col, const char *opt, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Forgets a GPU request (n = -1). */
void sb_gpureq_clear(struct sb_gpureq *g);

/* sbatch_opts.c: the option a long name (or an unambiguous abbreviation of
 * len bytes) names, else NULL and an error; the option of a short letter,
 * else NULL. */
const struct sb_opt *sb_find_long(struct sb_ctx *c, const char *name, size_t len, int line,
				  int col);
const struct sb_opt *sb_find_short(char ch);
/* Acts on one occurrence of option o with value v (NULL: none) in the
 * current component k or the job. */
void sb_apply(struct sb_ctx *c, struct sb_comp *k, const struct sb_opt *o, const char *v,
	      int line, int col);

#endif
