/*
 * spec.h: job files in, job model out (src/spec, owned by the spec work,
 * issue 5). drover reads a job as it is already written:
 *
 *   - Kubernetes manifests (YAML or JSON, multi-document streams): v1 Pod,
 *     batch/v1 Job, Volcano Job and PodGroup, Kubeflow PyTorchJob,
 *     PriorityClass, and the v1 List wrapper;
 *   - Slurm batch scripts (#SBATCH directives, hetjob components, arrays);
 *   - drover's canonical JSON job (apiVersion "drover/v1", kind "Job"),
 *     the form the API and the store speak (docs/job-format.md).
 *
 * Each becomes a struct drv_jobspec: an embedded struct drv_job that the
 * scheduler sees, plus what running it needs per task group (image,
 * command, env in order, script body, ...) and what the source said that
 * the scheduler does not act on (array, dependencies, Slurm and Kubernetes
 * extras, warnings).
 *
 * Errors go to a struct drv_diags as "file:line:col: field: found X,
 * expected Y"; parse functions return 0 or a negative enum drv_err
 * (DRV_EPARSE for bad input, DRV_ELIMIT when an input limit was passed,
 * DRV_EIO when a file cannot be read). On error the spec is left
 * initialised and empty (release it as usual); nothing half-filled leaks out.
 *
 * Ownership: a drv_jobspec owns every string and array it points to;
 * drv_jobspec_release frees them. Functions that take const char * copy.
 */
#ifndef DROVER_SPEC_H
#define DROVER_SPEC_H

#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"

#include <jansson.h>
#include <stdarg.h>

/* ---------------------------------------------------------------------------
 * Input limits; passing one is a DRV_ELIMIT error naming the limit.
 */
#define DRV_SPEC_MAX_BYTES   (4 << 20)  /* a whole input file */
#define DRV_SPEC_MAX_DEPTH   64         /* nesting of YAML/JSON collections */
#define DRV_SPEC_MAX_STRING  (256 << 10) /* one string (script bodies included) */
#define DRV_SPEC_MAX_DOCS    256        /* documents in one YAML stream */
#define DRV_SPEC_MAX_TASKS   100000     /* tasks in one job, all groups */
#define DRV_SPEC_MAX_GROUPS  64         /* task groups (hetjob components, replica types) */
#define DRV_SPEC_MAX_ITEMS   4096       /* env entries, args, labels, ... per list */
#define DRV_SPEC_MAX_ARRAY   1000000    /* array tasks (Slurm --array) */
#define DRV_SPEC_MAX_NAME    1024       /* a job's name, in bytes: every list carries it */

/* What a file is, told apart by content (drv_spec_sniff). */
enum drv_spec_format {
	DRV_FMT_UNKNOWN = 0,
	DRV_FMT_MANIFEST = 1,  /* Kubernetes YAML/JSON */
	DRV_FMT_SBATCH = 2,    /* Slurm batch script */
	DRV_FMT_CANONICAL = 3, /* drover's canonical JSON job */
	DRV_FMT_CLUSTER = 4,   /* a cluster file (clusterfile.h), not a job */
};

/* "manifest", "sbatch", "canonical", "cluster", "unknown". */
const char *drv_spec_format_name(enum drv_spec_format f);

/* One environment variable; a NULL value means "take it from the
 * submitter's environment" (Slurm --export=NAME without a value), unless
 * value_from is set: then the value comes from a Secret or ConfigMap when
 * the task is launched (value_from is {"secretKeyRef"|"configMapKeyRef":
 * {name, key[, optional]}}, checked by drv_spec_check_value_from). */
struct drv_env {
	char *name;
	char *value;
	json_t *value_from;     /* owned; NULL for a plain value */
};

/* A volume the main container mounts (a Pod's volumes joined with its
 * volumeMounts): hostPath, or emptyDir (medium Memory: a tmpfs; at
 * /dev/shm: the shared memory's size). */
struct drv_mount {
	char *name;             /* the volume's name */
	char *type;             /* "hostPath" or "emptyDir" */
	char *medium;           /* emptyDir: "Memory" or NULL */
	char *host_path;        /* hostPath: its path */
	char *mount_path;       /* where the container sees it */
	char *sub_path;         /* NULL: the whole volume */
	bool read_only;
	int64_t size_mib;       /* emptyDir sizeLimit; 0 none */
};

/* What running one task group needs. Parallel to job.groups[i]. */
struct drv_task_run {
	char *container;        /* Kubernetes container name; NULL when none */
	char *image;            /* container image; NULL for a bare process */
	char **command;         /* argv[0..]: Kubernetes command (entrypoint) */
	int32_t ncommand;
	char **args;            /* Kubernetes args */
	int32_t nargs;
	struct drv_env *env;    /* in the order written */
	int32_t nenv;
	size_t envcap;
	char *working_dir;
	/* Secrets and ConfigMaps (docs/job-format.md, "Secrets and ConfigMaps"),
	 * in Kubernetes' shape, checked; owned; NULL when none. env_from: the
	 * container's envFrom list. volumes: its volumeMounts of secret and
	 * configMap volumes, each joined with its volume: {name, mountPath,
	 * readOnly, subPath, secret: {secretName, items, defaultMode, optional}
	 * | configMap: {name, items, defaultMode, optional}}. */
	json_t *env_from;
	json_t *volumes;
	int64_t termination_grace_s; /* -1 = not given (Kubernetes default 30) */
	char *script;           /* batch script body (the whole script); NULL for manifests */
	char *export_mode;      /* Slurm --export: "ALL", "NONE" or NULL (not given) */
	char *restart_policy;   /* Kubernetes restartPolicy, NULL when not given */
	char *image_pull_policy;/* Always, IfNotPresent, Never; NULL: not given (Kubernetes'
				 * default by tag, applied by the agent) */
	char *runtime;          /* "podman" (annotation drover.io/runtime): run it in a
				 * container even with a command; NULL: not asked */
	struct drv_mount *mounts;  /* in the order of volumeMounts */
	int32_t nmounts;
	size_t mounts_cap;
	bool host_ipc;          /* Pod hostIPC: true */
	/* securityContext (the container's over the Pod's): the uid and gid
	 * the task runs as, -1 when not given (the job's user's); and
	 * runAsNonRoot, -1 not given, else 0 or 1 */
	int64_t run_as_user;
	int64_t run_as_group;
	int8_t run_as_non_root;
	char *gpu_model_name;   /* a GPU model the catalog does not know, as written (the
				 * group's model is then -1): valid to write, refused at
				 * submit while no node has it; NULL otherwise */
};

/* The image's pull policy as Kubernetes defaults it: Always for a
 * ":latest" tag or none (and no digest), else IfNotPresent (also for NULL).
 * Static string. */
const char *drv_pull_policy_default(const char *image);

/* Slurm --dependency entries: afterok:123 -> { "afterok", "123", 0 }. */
struct drv_dep {
	char *type;             /* after, afterany, afterok, afternotok, aftercorr, singleton */
	char *job;              /* job id or name; NULL for singleton */
	int64_t delay_s;        /* after:job+time, in seconds; 0 = none */
};

/* Slurm --array: ranges first-last:step, and the % limit. */
struct drv_array_range {
	int32_t first, last, step;
};
struct drv_array {
	char *spec;             /* as written: "0-15:2%4"; NULL = not an array job */
	struct drv_array_range *ranges;
	int32_t nranges;
	int32_t count;          /* array tasks, all ranges */
	int32_t max_parallel;   /* % limit; 0 = none */
};

/* scheduling.k8s.io/v1 PriorityClass. */
struct drv_priority_class {
	char *name;
	int32_t value;
	bool global_default;
	char *preemption_policy; /* "PreemptLowerPriority" or "Never"; NULL = default */
	char *description;
};

/* Slurm options that are kept but are not part of the core model. */
struct drv_slurm_extra {
	char *qos;
	char *account;
	char *partition;        /* also copied to queue */
	bool requeue;           /* --requeue (false: --no-requeue or not given) */
	bool no_requeue;        /* --no-requeue: a node failure ends it (node_fail) */
	bool hold;              /* -H/--hold: submitted with a user hold */
	char *begin;            /* --begin as written (the server turns it into a time
				 * when the job is submitted); NULL = none */
	int32_t signal;         /* --signal number (SIGUSR1 = 10, ...); 0 = none */
	int32_t signal_secs;    /* @secs before the time limit (Slurm default 60) */
	bool signal_batch_only; /* B: prefix */
	int32_t switches;       /* --switches count; 0 = none */
	int64_t switches_wait_s;
	int32_t segment;        /* --segment size; 0 = none */
	/* How the first component asked for tasks, for the Slurm variables
	 * and srun's defaults (docs/slurm.md): 0 = not given. */
	int32_t ntasks;         /* -n/--ntasks */
	int32_t ntasks_per_node; /* --ntasks-per-node */
	int32_t cpus_per_task;  /* -c/--cpus-per-task */
	bool per_node;          /* a drover task is one node's share (-N or a per-node request) */
	/* -o/-e/-i as written (Slurm's % patterns, expanded by the agent);
	 * NULL = not given (-o defaults to slurm-%j.out in the submit dir) */
	char *output, *error, *input;
	char *open_mode;        /* --open-mode: "append" or "truncate"; NULL = not given */
	/* where the script was submitted from, as the client says; NULL = unknown.
	 * With submit_dir the batch step runs there (or in --chdir) and writes
	 * its output to the -o/-e files, default slurm-%j.out (docs/slurm.md). */
	char *submit_dir, *submit_host;
	char *umask;            /* the submitter's umask, 4 octal digits ("0022"); NULL = unknown */
};

/* Kubernetes controller fields that are kept. -1 = not given. */
struct drv_k8s_extra {
	int32_t parallelism;
	int32_t completions;
	int32_t backoff_limit;
	int64_t active_deadline_s;
	int32_t min_available;  /* Volcano minAvailable / PodGroup minMember */
	int32_t indexed;        /* batch/v1 Job completionMode: 1 Indexed, 0 NonIndexed */
	int32_t suspend;        /* batch/v1 Job spec.suspend: 1 true, 0 false */
	int64_t ttl_after_finished_s; /* ttlSecondsAfterFinished */
};

/* The full job. */
struct drv_jobspec {
	struct drv_job job;     /* what the scheduler sees; groups[] live here */
	struct drv_task_run *run; /* [job.ngroups], what each group runs */

	enum drv_spec_format format; /* where it came from */
	char *api_version;      /* source apiVersion ("v1", "kubeflow.org/v1"; "slurm" for scripts) */
	char *kind;             /* source kind ("Pod", "PyTorchJob", "BatchScript", "Job") */
	char *namespace_;       /* Kubernetes namespace, NULL when not given */
	char *queue;            /* Volcano/Kueue queue, Slurm partition */
	char *priority_class;   /* priorityClassName (Slurm: --qos) */

	struct drv_label *labels;      /* metadata.labels, in order */
	int32_t nlabels;
	struct drv_label *annotations; /* metadata.annotations, in order */
	int32_t nannotations;

	struct drv_array array;
	struct drv_dep *deps;
	int32_t ndeps;
	bool deps_any;          /* '?' separated: any one suffices */

	struct drv_slurm_extra slurm;
	struct drv_k8s_extra k8s;

	/* PriorityClass objects defined in the same stream. */
	struct drv_priority_class *classes;
	int32_t nclasses;

	/* Fields drover kept but does not act on: a JSON object mapping each
	 * field path ("spec.tolerations") to its value; NULL when there are none.
	 * init allocates nothing, so a moved-from spec may be re-initialised. */
	json_t *ignored;
	/* Warnings, one line each ("spec.tolerations: kept, not acted on"). */
	char **warnings;
	int32_t nwarnings;
};

/* init zeroes s (allocates nothing; the k8s extras are set to -1); release
 * frees everything s owns and leaves it as init does. A spec may be moved
 * by struct copy, the source then re-initialised. */
void drv_jobspec_init(struct drv_jobspec *s);
void drv_jobspec_release(struct drv_jobspec *s);

/*
 * Appends a task group (zeroed; model -1; termination_grace_s -1) and
 * returns its index; name is copied. DRV_ELIMIT past DRV_SPEC_MAX_GROUPS.
 */
int drv_jobspec_add_group(struct drv_jobspec *s, const char *name);
/* Appends an env entry to group g (value may be NULL); copies both. */
void drv_jobspec_add_env(struct drv_jobspec *s, int g, const char *name, const char *value);
/* Appends an env entry whose value comes from value_from (consumed). */
void drv_jobspec_add_env_from(struct drv_jobspec *s, int g, const char *name, json_t *value_from);
/*
 * The checks of the Secret and ConfigMap references in their canonical
 * shape (struct drv_env, struct drv_task_run): true when v is one; else
 * false with where (the path below v, "" for v itself, e.g.
 * ".secretKeyRef.key") and what ("found 3, expected a string").
 */
bool drv_spec_check_value_from(const json_t *v, char *where, size_t wn, char *what, size_t n);
bool drv_spec_check_env_from(const json_t *v, char *where, size_t wn, char *what, size_t n);
bool drv_spec_check_volumes(const json_t *v, char *where, size_t wn, char *what, size_t n);
/* How env entry e is shown (describe, validate, the job's JSON): its
 * value; "<secret>" for a Secret's (never its value); "<configMap NAME.KEY>";
 * NULL for a value taken from the submitter. Into buf when made. */
const char *drv_env_shown(const struct drv_env *e, char *buf, size_t n);
/* Value of env name in group g, or NULL. */
const char *drv_jobspec_env(const struct drv_jobspec *s, int g, const char *name);
/*
 * A batch/v1 Job is a parent with elements (one pod each; CONTRACTS §2 of
 * the project, docs/job-format.md). Its element count: spec.completions,
 * else spec.parallelism (at least 1); 0 when s is not a batch/v1 Job. And
 * how many may run at once: spec.parallelism (default 1; 0: none until
 * raised), never more than the elements.
 */
int32_t drv_jobspec_elements(const struct drv_jobspec *s);
int32_t drv_jobspec_parallelism(const struct drv_jobspec *s);
/*
 * in with its `$(NAME)` references expanded as kubelet does for a
 * container's command, args and env (src/spec/expand.c): NAME's value
 * among env[0..nenv) (the last entry of that name), a reference to an
 * undefined NAME left as written, `$$` as one `$`. Caller frees.
 */
char *drv_k8s_expand(const char *in, const struct drv_env *env, int32_t nenv);
/* Appends a warning line (printf-like) to s->warnings. */
void drv_jobspec_warn(struct drv_jobspec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------
 * Loading.
 */

/* Options: Slurm options given on the command line win over #SBATCH ones. */
struct drv_spec_opts {
	int sbatch_argc;
	char **sbatch_argv;     /* e.g. { "-N", "4", "--time=1:00:00" } */
};

/* Tells the format of buf apart by content, not by name. */
enum drv_spec_format drv_spec_sniff(const char *buf, size_t len);

/*
 * Parses one job from buf (len bytes, need not be NUL-terminated); name is
 * what messages call it (usually the path). A stream holding several jobs
 * is an error here (use drv_spec_parse_all). PriorityClass objects in the
 * stream resolve priorityClassName into job.priority.
 */
int drv_spec_parse_buffer(const char *buf, size_t len, const char *name,
			  struct drv_jobspec *spec, struct drv_diags *d);
int drv_spec_parse_buffer_opts(const char *buf, size_t len, const char *name,
			       const struct drv_spec_opts *opts,
			       struct drv_jobspec *spec, struct drv_diags *d);
/* Reads path (at most DRV_SPEC_MAX_BYTES) and parses it as above; "-" is stdin. */
int drv_spec_load_file(const char *path, struct drv_jobspec *spec, struct drv_diags *d);
int drv_spec_load_file_opts(const char *path, const struct drv_spec_opts *opts,
			    struct drv_jobspec *spec, struct drv_diags *d);

/* Every job in a stream (v1 List items and multi-document streams). */
struct drv_specset {
	struct drv_jobspec *jobs;
	int32_t njobs;
	size_t cap;
	struct drv_priority_class *classes; /* PriorityClass objects seen */
	int32_t nclasses;
	size_t ccap;
};
void drv_specset_init(struct drv_specset *set);
void drv_specset_release(struct drv_specset *set);
int drv_spec_parse_all(const char *buf, size_t len, const char *name,
		       const struct drv_spec_opts *opts, struct drv_specset *set,
		       struct drv_diags *d);

/*
 * The check every YAML text must pass before it reaches libfyaml (every
 * fy_document_build_* and fy_parser call in drover goes through it): UTF-8
 * text without control characters (as drv_spec_check_text), and no tab
 * used as indentation after a block indicator, e.g. "? key:<TAB>? x",
 * which crashes libfyaml 0.7.12 (src/spec/yaml.c). Tabs inside
 * scalars and comments pass. On failure reports the first offence into d
 * as "line:col: found a tab in indentation, expected spaces (YAML forbids
 * tabs for indentation)" and returns false.
 */
bool drv_yaml_guard(const char *buf, size_t len, struct drv_diags *d);
/* The same for a caller with no drv_diags: on failure writes
 * "line:col: message" into err (errsz bytes). */
bool drv_yaml_guard_err(const char *buf, size_t len, char *err, size_t errsz);

struct fy_node;
/* Node n of a libfyaml document as JSON (new reference), typed the way
 * libfyaml's JSON emitter types it: plain null, true, false and JSON
 * numbers, all else strings; a collection used as a key is left out.
 * Use this, never fy_emit_*_to_string in JSON mode: libfyaml 0.7.12's
 * emitter crashes on an empty block scalar at the end of the text. */
json_t *drv_yaml_node_json(struct fy_node *n);

struct fy_document;
/*
 * The one way drover turns YAML text into a libfyaml document: runs
 * drv_yaml_guard, then builds the document with libfyaml's messages
 * collected, not printed. Returns 0 with *out the document (caller
 * destroys it with fy_document_destroy; its root is NULL for a file of
 * comments only), or 0 with *out NULL when libfyaml built nothing and
 * said nothing (empty text). DRV_EPARSE after reporting the guard's
 * finding or each "YAML syntax: ..." error at its line:col into d.
 */
int drv_yaml_load(const char *buf, size_t len, struct drv_diags *d, struct fy_document **out);

/* Line and column (1-based) where node n starts; 0, 0 when unknown.
 * For a collection, the position of its first scalar. */
void drv_spec_node_mark(struct fy_node *n, int *line, int *col);

/* Reports fmt at node n's line:col into d, under field path (NULL or ""
 * for none): the common way YAML readers report a bad value. The message
 * is cut at 1023 bytes. */
void drv_yaml_err(struct drv_diags *d, struct fy_node *n, const char *path, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));
/* The same with a va_list, and path passed on as it is ("" stays ""). */
void drv_yaml_verr(struct drv_diags *d, struct fy_node *n, const char *path, const char *fmt,
		   va_list ap) __attribute__((format(printf, 4, 0)));

/* The text of scalar node n (NUL-terminated, owned by the document), or
 * NULL when n is missing or a collection. */
const char *drv_yaml_scalar(struct fy_node *n);

/* What kind of node n is, for messages: "nothing", "a mapping", "a list"
 * or "a scalar". */
const char *drv_yaml_kind(struct fy_node *n);

/* "base.key" into out (sz bytes), or "key" when base is NULL or empty; a
 * path too long for out ends in "...". */
void drv_yaml_join(char *out, size_t sz, const char *base, const char *key);

struct fy_node_pair;
/* Where to point for the value of pair p: the value, or its key when the
 * value is missing or empty ("key:" alone has no position of its own). */
struct fy_node *drv_yaml_pair_at(struct fy_node_pair *p);

/* What node n is, for "found X" in a message: "'16'" (a scalar, at most
 * 60 bytes, controls shown as spaces), "a mapping", "a list", or
 * "nothing" (no node or an empty scalar). */
void drv_yaml_found(struct fy_node *n, char *buf, size_t sz);

/* ---------------------------------------------------------------------------
 * Canonical JSON (docs/job-format.md).
 */

/* New reference to the canonical object of s. Deterministic: the same spec
 * gives the same bytes with drv_jobspec_dumps. */
json_t *drv_jobspec_to_json(const struct drv_jobspec *s);
/*
 * Fills spec (initialised, empty) from a canonical object. Unknown keys,
 * wrong types and out-of-range values are errors with their field path.
 * from_json(to_json(s)) gives back s; to_json(from_json(j)) == j for any
 * j that to_json produced.
 */
int drv_jobspec_from_json(const json_t *j, struct drv_jobspec *spec, struct drv_diags *d);
/* Canonical text: sorted-free, indented (indent 2) or compact (indent 0);
 * malloc'd, caller frees. */
char *drv_jobspec_dumps(const struct drv_jobspec *s, int indent);

/* ---------------------------------------------------------------------------
 * Value parsers, exposed for tests, the client and the fuzz targets.
 */

/*
 * Kubernetes quantity ("500m", "2", "16Gi", "1e3", "129M", "0.5") scaled
 * by `scale` and rounded up: drv_quantity_parse("500m", 1000, &v) gives
 * 500 (milli-units); ("16Gi", 1, &v) gives bytes. DRV_EINVAL when s is not
 * a quantity, DRV_ELIMIT when the result does not fit in int64.
 */
int drv_quantity_parse(const char *s, int64_t scale, int64_t *out);
/* Bytes quantity to MiB, rounded up. */
int drv_quantity_mib(const char *s, int64_t *mib);

/*
 * Slurm time ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS",
 * "UNLIMITED"/"INFINITE" = 0) to seconds. DRV_EINVAL when malformed.
 */
int drv_slurm_time_parse(const char *s, int64_t *secs);

/*
 * Slurm's --begin value as of wall time now (s) into *at (wall s, local
 * time for clock times as Slurm reads them): now[+N[seconds|minutes|hours|
 * days|weeks]] (units may be cut to any prefix, default seconds),
 * YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS] (today, or tomorrow once passed),
 * midnight, noon, teatime (16:00), elevenses (11:00), fika (15:00), today,
 * tomorrow. 0, or DRV_EINVAL.
 */
int drv_slurm_begin_parse(const char *s, int64_t now, int64_t *at);

/*
 * drover topology level for a Kueue topology annotation value (a node label
 * key) or a level name: "kubernetes.io/hostname" -> "node", "...-rack" or
 * "...subblock" -> "leaf", "...-block" -> "spine", "nvidia.com/gpu.clique"
 * or "...nvlink..." -> "nvlink-domain", "...zone"/"...region" -> "pool";
 * NULL when it maps to none. Static string.
 */
const char *drv_spec_topo_level(const char *key);

/* Slurm --array value into a (released, then filled); DRV_EINVAL/ELIMIT. */
int drv_array_parse(const char *s, struct drv_array *a);

/* The k-th array task id of a (0 <= k < a->count), in the order written;
 * the lowest and highest ids; the step Slurm reports in
 * SLURM_ARRAY_TASK_STEP (the one range's step; 1 for lists). */
int32_t drv_array_index(const struct drv_array *a, int32_t k);
int32_t drv_array_min(const struct drv_array *a);
int32_t drv_array_max(const struct drv_array *a);
int32_t drv_array_step(const struct drv_array *a);

/* A name as traces and tenants files spell tenants, jobs and topology
 * levels: 1 to DRV_NAME_MAX - 1 bytes of letters, digits and -_.:/@
 * (s need not be NUL-terminated; len bytes are checked). */
bool drv_spec_name_ok(const char *s, size_t len);
void drv_array_release(struct drv_array *a);

/*
 * Slurm's filename patterns (sbatch/srun --output, --error, --input):
 * %j job id, %J job id with ".step" when there is a step, %A the array's
 * job id (the job's own when not an array), %a the array index
 * (4294967294 when not an array, as Slurm writes it), %x job name, %u user,
 * %N node name, %n node id in the job, %t task rank, %s step ("batch" for
 * the batch step), %% one %. A width between % and the letter pads numbers
 * with zeros ("%3a" -> "007"). Any other % sequence is kept as written.
 * Writes into out (cap bytes, NUL-terminated; cut when too long) and
 * returns the length needed.
 */
struct drv_slurm_pattern {
	uint64_t job_id, array_job_id;
	int64_t array_task_id;    /* -1: not an array element */
	const char *job_name, *user, *node;
	int64_t node_id, task_id; /* -1: not known (kept as written) */
	int64_t step_id;          /* -1: the batch step */
};
size_t drv_slurm_pattern_expand(const char *pat, const struct drv_slurm_pattern *v, char *out,
				size_t cap);

#endif
