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
};

struct drv_vertex {
	char *name;
	int32_t parent;        /* -1 for the root */
	int32_t first_child;   /* -1 when none */
	int32_t next_sibling;  /* -1 when last */
	int16_t level;         /* index into cluster->levels */
	int32_t node;          /* node index when this is a node vertex, else -1 */
	int32_t pool;          /* pool this vertex belongs to, -1 above pools */

	/* aggregates over the up (schedulable) nodes below, kept exact */
	int32_t total_gpus;
	int32_t free_gpus;       /* GPUs with nothing on them */
	int64_t free_milli;      /* sum over GPUs of 1000 - used */
	int32_t total_nodes;
	int32_t free_nodes;      /* nodes with nothing on any GPU */
	int32_t max_node_free;   /* most free whole GPUs on one node below */
	int32_t free_gpus_by_model[DRV_MAX_MODELS];
};

struct drv_cluster {
	char *name;
	char *levels[DRV_MAX_LEVELS]; /* level names, root first; last = "node" */
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
};

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
int drv_cluster_add_pool(struct drv_cluster *c, const struct drv_pool *p); /* copies strings */
/* Adds a node vertex under parent with ngpus GPUs of the catalog model. */
int drv_cluster_add_node(struct drv_cluster *c, int32_t parent, const char *name,
			 int model, int ngpus, int64_t cpu_milli, int64_t mem_mib);
/* Index of the level called name (case-insensitive; "nvlink-domain" maps to
 * nvl_level, "node" to the last level); -1 when none. */
int drv_cluster_level(const struct drv_cluster *c, const char *name);
int drv_cluster_find_node(const struct drv_cluster *c, const char *name);
/* Changes a node's state and fixes the aggregates. */
void drv_cluster_set_node_state(struct drv_cluster *c, int32_t node, enum drv_node_state st);
/* Recomputes every aggregate from the nodes; returns 0 if they were already
 * equal to the recount, DRV_ESTATE otherwise (tests use this). */
int drv_cluster_check(struct drv_cluster *c);

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
};

struct drv_job {
	uint64_t id;
	char *name;
	char *tenant;
	char *user;
	struct drv_task_group *groups;
	int32_t ngroups;
	int32_t gang_min;      /* tasks that must start together; 0 = all of them */
	enum drv_topo_mode topo_mode;
	char *topo_level;      /* level name: "nvlink-domain", "node", "leaf", "spine", "pool" */
	char **regions;        /* allowed regions; none = anywhere */
	int32_t nregions;
	int32_t priority;
	bool preemptible;
	int64_t submit_time;   /* s */
	int64_t time_limit;    /* s; 0 = none */
	int64_t runtime_estimate; /* s; 0 = unknown */
};

/* Frees everything the job owns (not the struct itself). */
void drv_job_release(struct drv_job *j);
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
	DRV_PLACE_FGD = 1,     /* fragmentation-gradient scoring */
};

struct drv_place_opts {
	enum drv_place_strategy strategy;
	/* Expected mix of task sizes in milli-GPUs, for FGD; NULL = built-in. */
	const int32_t *mix_milli;
	const double *mix_weight;
	int32_t nmix;
	/* Pools the job may use (bitmask by pool index; 0 = all allowed). */
	uint64_t pool_mask;
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

/* Applies / undoes a placement; release restores the exact prior state. */
void drv_cluster_commit(struct drv_cluster *c, const struct drv_placement *p);
void drv_cluster_uncommit(struct drv_cluster *c, const struct drv_placement *p);

/*
 * Formats p as "node:gpu,gpu;node:gpu" (node names, GPU indexes) into buf;
 * returns the length it needed (snprintf-like).
 */
size_t drv_placement_format(const struct drv_cluster *c, const struct drv_placement *p,
			    char *buf, size_t bufsz);

#endif
