/*
 * model.h: drover's model of a GPU cluster and of a job, as the scheduler
 * sees them. This is the contract between the core (placement, policies),
 * the spec parsers that build these structures from files, the simulator
 * and the controller.
 *
 * Units everywhere: GPU shares in milli-GPUs (1000 = one whole GPU), CPU
 * in milli-CPUs, memory in MiB, money in micro-dollars, times in integer
 * seconds since an epoch the caller picks.
 *
 * The core does no I/O, reads no clock and keeps no globals but the
 * constant GPU catalog.
 */
#ifndef DROVER_MODEL_H
#define DROVER_MODEL_H

#include "drover/common.h"

/* ---------------------------------------------------------------------------
 * GPU catalog (src/core/catalog.c): constant data.
 */

#define DRV_MAX_MODELS 24      /* catalog entries; aggregates are per model */
#define DRV_MAX_NODE_GPUS 64   /* a task's GPUs are a 64-bit mask on its node */
#define DRV_MILLI 1000

struct drv_gpu_model {
	const char *id;          /* canonical id: "H100-SXM-80GB" */
	const char *short_name;  /* "H100" */
	const char *gfd_product; /* nvidia.com/gpu.product: "NVIDIA-H100-80GB-HBM3" */
	const char *nvml_name;   /* NVML device name: "NVIDIA H100 80GB HBM3" */
	const char *slurm_gres;  /* Slurm gres type: "h100" */
	const char *more_aliases[4]; /* other accepted names, NULL-terminated */
	int mem_mib;             /* memory per GPU */
	int nvlink_gen;          /* 0 = none (PCIe only) */
	int nvlink_gbps;         /* NVLink bandwidth per GPU, GB/s (bidirectional) */
	int bf16_tflops;         /* dense bf16 (fp16 for pre-Ampere) TFLOP/s */
	int tdp_w;               /* board power, watts */
	int speed_rank;          /* higher is faster: the `fastest` pool policy */
};

/* Number of catalog entries (<= DRV_MAX_MODELS). */
int drv_gpu_model_count(void);
/* Entry i (0 <= i < count); NULL when out of range. */
const struct drv_gpu_model *drv_gpu_model_at(int i);
/*
 * Index of the model any of whose names (canonical id, short name, GFD
 * product, NVML name, Slurm gres type, more aliases) equals name, compared
 * case-insensitively; -1 when none does.
 */
int drv_gpu_model_find(const char *name);
/*
 * A share of one GPU asked for by memory (KAI's gpu-memory: a group with
 * gpu_mem_mib and neither gpus nor gpu_milli) on a GPU of model m: its
 * milli-GPUs, ceil(1000 x mib / the model's memory), at least 1, at most
 * 1000; -1 when the model has less memory than asked (it is no candidate)
 * or m is no model.
 */
int32_t drv_gpu_mem_milli(int32_t mib, int m);

/* ---------------------------------------------------------------------------
 * Cluster: a topology tree (src/core/cluster.c).
 *
 * Levels are named by the cluster file, root first, e.g. "cluster", "pool",
 * "spine", "leaf", "node". The node level is always the last. Every vertex
 * keeps aggregates of the up nodes below it so that "does this gang fit
 * under this vertex" is answered without visiting the nodes.
 *
 * An NVLink domain is a vertex: the node itself for an HGX board, or a rack
 * (a non-node vertex) for GB200 NVL72. A node's nvl_domain names it.
 */

#define DRV_MAX_LEVELS 8
#define DRV_NAME_MAX 64

enum drv_node_state {
	DRV_NODE_UP = 0,
	DRV_NODE_DRAINING = 1, /* runs what it has, takes nothing new */
	DRV_NODE_DOWN = 2,
};

struct drv_label {
	char *key;
	char *value;
};

struct drv_pool {
	char *name;
	char *provider;       /* "onprem", "aws", "gcp", "azure", ... */
	char *region;
	int64_t price_micro_per_gpu_hour; /* micro-dollars per GPU-hour */
	bool spot;
	bool elastic;          /* may grow/shrink (cloud) */
	int32_t max_nodes;     /* elastic cap; 0 = fixed */
	int32_t vertex;        /* the pool's vertex in the tree */
};

struct drv_node {
	char *name;
	int32_t vertex;        /* this node's vertex */
	int32_t pool;          /* index into cluster->pools, -1 when none */
	int32_t nvl_domain;    /* vertex of its NVLink domain */
	int8_t model;          /* catalog index of its GPUs; -1 if it has none */
	int16_t ngpus;
	int64_t cpu_milli;     /* capacity */
	int64_t mem_mib;
	enum drv_node_state state;
	struct drv_label *labels;
	int32_t nlabels;

	/* usage, maintained by drv_cluster_commit/_release */
	int64_t cpu_used;
	int64_t mem_used;
	uint16_t *gpu_milli_used;  /* [ngpus] */
	int32_t *gpu_mem_used;     /* [ngpus] MiB of GPU memory promised */
	int32_t excl_tasks;        /* tasks of exclusive jobs here: no other job's task fits */
};

struct drv_vertex {
	/*
	 * Field order is for the cache: what placement reads for every
	 * candidate comes first (one 64-byte line), the rest after. Use the
	 * names, never positional initialisers.
	 */
	int32_t first_child;   /* -1 when none */
	int32_t next_sibling;  /* -1 when last */
	int32_t node;          /* node index when this is a node vertex, else -1 */
	int32_t pool;          /* pool this vertex belongs to, -1 above pools */
	int16_t level;         /* index into cluster->levels */

	/* aggregates over the up (schedulable) nodes below, kept exact */
	int32_t free_gpus;       /* GPUs with nothing on them */
	int64_t free_milli;      /* sum over GPUs of 1000 - used */
	int32_t free_nodes;      /* nodes with nothing on any GPU */
	int32_t max_node_free;   /* most free whole GPUs on one node below */
	int32_t max_part_free;   /* (core) most free milli on one partly used GPU below; 0 = none */
	int32_t max_node_gpus;   /* (core) largest node below (any state); static */
	int32_t total_nodes;
	/*
	 * (core) max_free_at[l]: the most free whole GPUs under one vertex of
	 * level l in this subtree (for l <= level: free_gpus itself). A vertex
	 * whose path skips level l counts as its own level-l unit. So
	 * max_free_at[nlevels-1] == max_node_free, and "does the gang fit
	 * under one leaf below here" is one comparison.
	 */
	int32_t max_free_at[DRV_MAX_LEVELS];
	int32_t total_gpus;
	int32_t parent;        /* -1 for the root */
	int32_t last_child;    /* (core) -1 when none; children keep insertion order */
	int32_t nodes_all;     /* (core) nodes below in any state; static */
	int32_t kid_first;     /* (core) children at cluster->kids[kid_first..+nkids) */
	int32_t nkids;         /*        (valid when kids_n == nvertices) */
	char *name;
	int32_t free_gpus_by_model[DRV_MAX_MODELS];
	int32_t total_gpus_by_model[DRV_MAX_MODELS]; /* (core) up GPUs by model */
} __attribute__((aligned(64))); /* the hot first line never straddles two */

struct drv_cluster {
	char *name;
	char *levels[DRV_MAX_LEVELS]; /* level names, root first; last = "node" */
	char *level_labels[DRV_MAX_LEVELS]; /* the Kubernetes node label of each level
					     * (cluster file levelLabels); NULL = none */
	int32_t nlevels;
	int32_t nvl_level;      /* level index that is the NVLink domain, or -1 = per node */

	struct drv_vertex *vertices;
	int32_t nvertices;
	size_t vcap;
	struct drv_node *nodes;
	int32_t nnodes;
	size_t ncap;
	struct drv_pool *pools;
	int32_t npools;
	size_t pcap;

	/* Added by core: scratch for drv_place (no allocation per decision). */
	int32_t *scratch;
	size_t scratch_cap;
	/* Added by core: open-addressing index of node names (find_node). */
	int32_t *name_index;
	size_t name_icap;
	/* Added by core: every vertex's children in one array, in sibling order,
	 * so placement reads them without chasing next_sibling (the loads go
	 * out together). Rebuilt by drv_place when vertices were added. */
	int32_t *kids;
	int32_t kids_n;         /* nvertices when kids was built */
};

#define DRV_MAX_POOLS 64        /* pool masks are 64-bit */

/* "up", "draining", "down"; parse returns -1 for anything else. */
const char *drv_node_state_name(enum drv_node_state st);
int drv_node_state_parse(const char *s);

/* Lifecycle. init makes an empty cluster with only a root vertex named
 * name and one level "cluster". release frees everything it owns. */
void drv_cluster_init(struct drv_cluster *c, const char *name);
void drv_cluster_release(struct drv_cluster *c);

/*
 * Building (used by the cluster-file parser and the controller when agents
 * join). Levels must be set before vertices are added; names are copied.
 * Each returns the new index, or a negative drv_err.
 */
int drv_cluster_set_levels(struct drv_cluster *c, const char *const *names, int n);
int drv_cluster_add_vertex(struct drv_cluster *c, int32_t parent, const char *name);
/* The same at an explicit level below the parent's (a path may skip
 * levels: a small pool with nodes straight under it); level < node level. */
int drv_cluster_add_vertex_at(struct drv_cluster *c, int32_t parent, const char *name, int level);
int drv_cluster_add_pool(struct drv_cluster *c, const struct drv_pool *p); /* copies strings */
/* Adds a node vertex under parent with ngpus GPUs of the catalog model. */
int drv_cluster_add_node(struct drv_cluster *c, int32_t parent, const char *name,
			 int model, int ngpus, int64_t cpu_milli, int64_t mem_mib);
/* Index of the level called name (case-insensitive; "nvlink-domain" maps to
 * nvl_level, "node" to the last level), else whose Kubernetes node label
 * (level_labels) is name, else the level drv_topo_label_level names for
 * it: the cluster file's own labels win over the name rules; -1 when none. */
int drv_cluster_level(const struct drv_cluster *c, const char *name);
/* The drover level name Kueue's node label key stands for by its last path
 * segment (kubernetes.io/hostname: "node", ...rack: "leaf", ...block:
 * "spine", nvidia.com/gpu.clique: "nvlink-domain", ...zone: "pool"), a
 * level name as it is; NULL when none (constant strings). */
const char *drv_topo_label_level(const char *key);
int drv_cluster_find_node(const struct drv_cluster *c, const char *name);
/* Changes a node's state and fixes the aggregates. */
void drv_cluster_set_node_state(struct drv_cluster *c, int32_t node, enum drv_node_state st);
/* Recomputes every aggregate from the nodes; returns 0 if they were already
 * equal to the recount, DRV_ESTATE otherwise (tests use this). */
int drv_cluster_check(struct drv_cluster *c);

/*
 * What gpu_milli milli-GPUs cost for secs seconds at price_micro_per_gpu_hour
 * micro-dollars per GPU-hour, in micro-dollars rounded half up (0 when any
 * of them is 0 or negative). Exact integer arithmetic: 1 GPU at $2.50/h for
 * 60 s is 41667.
 */
int64_t drv_cost_micro(int64_t gpu_milli, int64_t price_micro_per_gpu_hour, int64_t secs);

/* ---------------------------------------------------------------------------
 * Jobs, as the scheduler sees them.
 */

enum drv_topo_mode {
	DRV_TOPO_NONE = 0,
	DRV_TOPO_PREFERRED = 1,
	DRV_TOPO_REQUIRED = 2,
};

struct drv_task_group {
	char *name;
	int32_t count;        /* tasks in the group */
	int32_t gpus;         /* whole GPUs per task (0 when fractional or none) */
	int32_t gpu_milli;    /* share of one GPU per task, 1..999, when fractional; else 0 */
	int32_t gpu_mem_mib;  /* GPU memory needed per GPU; 0 = any */
	int8_t model;         /* catalog index; -1 = any */
	int64_t cpu_milli;    /* per task */
	int64_t mem_mib;      /* per task */
	bool distinct_nodes;  /* no two tasks of the group on one node (Slurm's -N) */
};

/* A group that asks for a share of one GPU by its memory only. */
static inline bool drv_group_mem_share(const struct drv_task_group *g)
{
	return g->gpus == 0 && g->gpu_milli == 0 && g->gpu_mem_mib > 0;
}
/* The least milli-GPUs a task of a fractional group takes: gpu_milli, or
 * for a share by memory its share of the catalog's largest GPU (at least
 * 1); 0 for whole-GPU and GPU-less groups. A lower bound for pruning. */
int32_t drv_group_min_milli(const struct drv_task_group *g);

struct drv_job {
	uint64_t id;
	char *name;
	char *tenant;
	char *user;
	struct drv_task_group *groups;
	int32_t ngroups;
	int32_t gang_min;      /* tasks that must start together; 0 = all of them */
	enum drv_topo_mode topo_mode;
	char *topo_level;      /* level name: "nvlink-domain", "node", "leaf", "spine", "pool",
				* or a Kubernetes node label (drv_cluster_level resolves it) */
	/* Slices (Kueue's podset-slice-required-topology and -slice-size): the
	 * tasks in index order (group by group) cut into runs of slice_size,
	 * each run under one vertex of slice_level; NULL / 0 = none. */
	char *slice_level;
	int32_t slice_size;
	char **regions;        /* allowed regions; none = anywhere */
	int32_t nregions;
	/* Node labels a node must carry (Kubernetes nodeSelector and required
	 * node affinity on the zone label and drover's pool label): for each
	 * key, the node's value is one of the entries with that key. The key
	 * drover.io/pool is the node's pool name. None = any node. */
	struct drv_label *node_selector;
	int32_t nnode_selector;
	int32_t priority;
	bool preemptible;
	/* Whole nodes (Slurm's --exclusive): the job takes only nodes with
	 * nothing on them, its tasks there take every GPU, CPU and MiB the
	 * node has left, and no other job's task is placed there while it
	 * runs. */
	bool exclusive;
	int64_t submit_time;   /* s */
	int64_t time_limit;    /* s; 0 = none */
	int64_t runtime_estimate; /* s; 0 = unknown */
};

/* Zeroes j (no groups, gang of all tasks, no topology constraint). */
void drv_job_init(struct drv_job *j);
/* Frees everything the job owns (not the struct itself). */
void drv_job_release(struct drv_job *j);
/*
 * Appends a task group (name copied, may be NULL) with count tasks of
 * gpus whole GPUs each (or gpu_milli of one GPU when gpus is 0), any
 * model, no CPU/memory request; returns it for the caller to adjust. The
 * pointer is valid until the next add.
 */
struct drv_task_group *drv_job_add_group(struct drv_job *j, const char *name, int32_t count,
					 int32_t gpus, int32_t gpu_milli);
/* Sets the topology constraint (level copied; NULL with DRV_TOPO_NONE). */
void drv_job_set_topology(struct drv_job *j, enum drv_topo_mode mode, const char *level);
/* Sets the slices (level copied; NULL or size 0 clears them). */
void drv_job_set_slice(struct drv_job *j, const char *level, int32_t size);
/* Appends an allowed region (copied). */
void drv_job_add_region(struct drv_job *j, const char *region);
/* Appends a node label requirement key=value (copied; see node_selector). */
void drv_job_add_node_label(struct drv_job *j, const char *key, const char *value);
/* Whether j's node_selector lets it use the pool named pool_name: true
 * unless it names pools (DRV_LABEL_POOL) and not this one. Placement and
 * the scheduler rule out a pool this way once, not node by node. */
bool drv_job_pool_ok(const struct drv_job *j, const char *pool_name);
/* Whether node n of c meets j's node_selector. */
bool drv_job_node_ok(const struct drv_cluster *c, const struct drv_job *j,
		     const struct drv_node *n);
#define DRV_LABEL_POOL "drover.io/pool"
/*
 * Slurm's -w, -x and -C as node_selector entries: DRV_LABEL_HOST's value is
 * the node's name (-w: one entry per node the job may use); an entry keyed
 * DRV_LABEL_EXCLUDE rules out the node it names (-x); one keyed
 * DRV_LABEL_CONSTRAINT holds a feature expression the node must meet (-C,
 * drv_constraint_eval; several entries: all).
 */
#define DRV_LABEL_HOST "kubernetes.io/hostname"
#define DRV_LABEL_EXCLUDE "drover.io/exclude-node"
#define DRV_LABEL_CONSTRAINT "drover.io/constraint"
/* An entry keyed DRV_LABEL_INCLUDE names a node the job must have a task on
 * (-w with a larger -N: Slurm's required nodes; the others are any nodes). */
#define DRV_LABEL_INCLUDE "drover.io/include-node"
/* Checks a Slurm --constraint expression: features (letters, digits and
 * _.:/=-) joined by & (and) and | (or, & binds first), grouped with () or
 * [] (Slurm's matching OR, taken as a plain or). 0, or -1 with *at the
 * offset of the first character that does not fit (counts, "a*2", among
 * them). */
int drv_constraint_check(const char *expr, size_t *at);
/* Whether node n meets expr: a feature is the key of one of its labels, or
 * KEY=VALUE of one. A malformed expression is met by no node. */
bool drv_constraint_eval(const char *expr, const struct drv_node *n);
/* Whole GPUs the job holds (fractional tasks count 0). */
int64_t drv_job_whole_gpus(const struct drv_job *j);
/* Checks the job is well-formed (counts > 0, gpus <= 64, milli in 1..999
 * when fractional, model in catalog); 0 or DRV_EINVAL with a one-line
 * explanation in why. */
int drv_job_check(const struct drv_job *j, char *why, size_t whysz);
/* Deep copy; dst is overwritten. */
void drv_job_copy(struct drv_job *dst, const struct drv_job *src);
/* Total tasks over all groups. */
int32_t drv_job_tasks(const struct drv_job *j);
/* GPUs the job holds, in milli-GPUs (whole GPUs count 1000 each). */
int64_t drv_job_gpu_milli(const struct drv_job *j);

/* ---------------------------------------------------------------------------
 * Placement (src/core/place.c).
 */

struct drv_task_place {
	int32_t node;          /* node index */
	int16_t group;         /* task group index in the job */
	int8_t exclusive;      /* a task of an exclusive job: keeps other jobs off the node */
	int32_t gpu_milli;     /* per GPU in mask: 1000 for whole GPUs */
	int32_t gpu_mem_mib;   /* per GPU in mask */
	uint64_t gpu_mask;     /* GPU indexes on the node */
	int64_t cpu_milli;
	int64_t mem_mib;
};

struct drv_placement {
	struct drv_task_place *tasks;
	int32_t ntasks;
	size_t cap;
};

void drv_placement_init(struct drv_placement *p);
void drv_placement_release(struct drv_placement *p);
void drv_placement_copy(struct drv_placement *dst, const struct drv_placement *src);

enum drv_place_strategy {
	DRV_PLACE_BESTFIT = 0,
	DRV_PLACE_FGD = 1,     /* fragmentation-gradient scoring, GPUs only, fixed mix */
	DRV_PLACE_MULTI = 2,   /* multi-resource stranding score, learned mix (multi.c) */
};

/* The default wherever placement happens: `drover place`, sim, server, benches. */
#define DRV_PLACE_DEFAULT DRV_PLACE_MULTI
#define DRV_PLACE_DEFAULT_NAME "multi"  /* drv_place_strategy_name(DRV_PLACE_DEFAULT) */

/* "bestfit", "fgd", "multi"; parse also takes "best-fit", case-insensitive,
 * and returns 0 or DRV_EINVAL. DRV_PLACE_NAMES lists them for messages. */
#define DRV_PLACE_NAMES "bestfit, fgd or multi"
const char *drv_place_strategy_name(enum drv_place_strategy s);
int drv_place_strategy_parse(const char *s, enum drv_place_strategy *out);

/*
 * The task-size mix the multi scorer expects (multi.c): a decayed histogram
 * of the task shapes (GPUs or GPU share, CPU, memory, model) seen lately.
 * Each observed task adds weight 1; older weight halves every half_life
 * observed tasks. At most DRV_MIX_MAX shapes: a new shape then replaces the
 * lightest. Plain data: copy it freely; no allocation.
 */
#define DRV_MIX_MAX 16
#define DRV_MIX_HALF_LIFE 500   /* tasks, the default */

struct drv_mix_shape {
	int32_t milli;        /* GPU milli per task: g * 1000 for g whole GPUs; 0 = CPU-only */
	int8_t model;         /* -1 = any */
	int64_t cpu_milli;
	int64_t mem_mib;
	double w;             /* weight, in units of the current increment's scale */
};

struct drv_place_mix {
	struct drv_mix_shape shape[DRV_MIX_MAX];
	int32_t n;
	int32_t half_life;    /* tasks */
	double inc;           /* weight the next task adds (grows instead of decaying all) */
	double total;         /* sum of the weights */
	int64_t seen;         /* tasks observed */
};

/* Empty mix (the built-in one is used until a task is observed);
 * half_life <= 0 means DRV_MIX_HALF_LIFE. */
void drv_place_mix_init(struct drv_place_mix *m, int32_t half_life);
/* Adds every task of j (count per group) to the histogram. */
void drv_place_mix_observe(struct drv_place_mix *m, const struct drv_job *j);
/* Share of shape i in the mix now (0..1). */
double drv_place_mix_share(const struct drv_place_mix *m, int32_t i);

struct drv_place_opts {
	enum drv_place_strategy strategy;
	/* Expected mix of task sizes in milli-GPUs, for FGD; NULL = built-in. */
	const int32_t *mix_milli;
	const double *mix_weight;
	int32_t nmix;
	/* The learned mix, for multi; NULL or empty = built-in. */
	const struct drv_place_mix *mix;
	/* Pools the job may use (bitmask by pool index; 0 = all allowed). The
	 * job's own regions restrict further. */
	uint64_t pool_mask;
	/* Optional: filled on failure with the kind and numbers behind the
	 * reason (NULL = not wanted). */
	struct drv_place_info *info;
};

enum drv_place_why {
	DRV_WHY_NONE = 0,
	DRV_WHY_INVALID,   /* malformed job, unknown level, task bigger than any node */
	DRV_WHY_REGION,    /* no pool in the allowed regions / pool mask */
	DRV_WHY_MODEL,     /* not enough free GPUs of the model asked for */
	DRV_WHY_CAPACITY,  /* not enough free GPUs (or milli-GPUs) in total */
	DRV_WHY_TOPOLOGY,  /* enough free in total, not under one required vertex */
	DRV_WHY_FRAGMENTED /* enough free, but not on nodes that fit each task */
};

struct drv_place_info {
	enum drv_place_why why;
	int64_t need;      /* GPUs (or milli-GPUs for fractional-only jobs) asked for */
	int64_t have;      /* the best the cluster offers now, same unit */
	bool never;        /* cannot fit even on an empty cluster */
};

/*
 * Finds a placement of the whole gang without changing the cluster. Returns
 * 0 and fills out, or DRV_ENOSPACE and writes a one-line reason a person
 * understands into reason (at most reasonsz bytes, NUL-terminated).
 * Deterministic. out's buffer is reused; it must be initialised.
 */
int drv_place(const struct drv_cluster *c, const struct drv_job *job,
	      const struct drv_place_opts *opts, struct drv_placement *out,
	      char *reason, size_t reasonsz);
/*
 * How drv_place treats c: it marks tentative tasks in c's usage while it
 * searches and restores every field exactly before it returns, so c is
 * unchanged afterwards but must not be used by another thread meanwhile.
 * opts may be NULL (best-fit, every pool). reason may be NULL.
 *
 * Semantics: the whole job or nothing (gang_min is not used by placement:
 * every task is placed); a task never spans nodes; with a required level
 * every task lies under one vertex of that level ("nvlink-domain" is the
 * cluster's NVLink level, the node on HGX); a preferred level is kept when
 * possible. Whole-GPU tasks take GPUs with nothing on them; fractional
 * tasks go to the partly used GPU of the right model that fits best, else
 * a free one. Among subtrees that can hold the gang the smallest is used,
 * best-fit among siblings, then nodes are packed best-fit.
 */

/*
 * drv_place, and on success the placement is committed to c as
 * drv_cluster_commit would (cheaper than the two calls: the tentative marks
 * stay). On failure c is unchanged. What a scheduling pass or simulator
 * that starts the job at once wants.
 */
int drv_place_commit(struct drv_cluster *c, const struct drv_job *job,
		     const struct drv_place_opts *opts, struct drv_placement *out,
		     char *reason, size_t reasonsz);

/*
 * Cheap necessary test, O(groups + pools): 0 when the aggregates say the
 * job may fit now (drv_place may still fail), DRV_ENOSPACE when it surely
 * does not. For skipping hopeless jobs in a scheduling pass.
 */
int drv_place_may_fit(const struct drv_cluster *c, const struct drv_job *job,
		      const struct drv_place_opts *opts);
/*
 * 0 when the job could fit if every up node were empty; DRV_ENOSPACE with
 * a reason when it never can (larger than the cluster or than any vertex of
 * its required level, a task larger than any node, no GPUs of its model,
 * no pool in its regions). Not for the hot path (may visit every vertex
 * of the required level).
 */
int drv_place_check_static(const struct drv_cluster *c, const struct drv_job *job,
			   const struct drv_place_opts *opts, char *reason, size_t reasonsz);

/* Applies / undoes a placement; release restores the exact prior state. */
void drv_cluster_commit(struct drv_cluster *c, const struct drv_placement *p);
void drv_cluster_uncommit(struct drv_cluster *c, const struct drv_placement *p);

/*
 * Formats p as "node:gpu,gpu;node:gpu" (node names, GPU indexes) into buf;
 * returns the length it needed (snprintf-like).
 */
size_t drv_placement_format(const struct drv_cluster *c, const struct drv_placement *p,
			    char *buf, size_t bufsz);
/*
 * Parses the format above back (node names looked up in c; every task of
 * it gets the given milli/memory per GPU and no CPU/memory). 0 or
 * DRV_EINVAL. For tests and trace replays.
 */
int drv_placement_parse(const struct drv_cluster *c, const char *s, int32_t gpu_milli,
			struct drv_placement *out);

#endif
