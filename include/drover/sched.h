/*
 * sched.h: the scheduling policies (src/core/sched*.c): one deterministic
 * pass that turns the scheduler state (cluster, pending jobs, running jobs,
 * tenants, priority classes) and the time into decisions.
 *
 *     n = drv_sched_pass(s, now, &policy, &decisions);
 *
 * Both the controller (issue 6) and the simulator (issue 4) call it. The
 * pass is pure in the core's sense: libc only, no I/O, no clock (time is
 * passed in), no globals; the same state, time and policy give the same
 * decisions byte for byte.
 *
 * How it fits together
 *  - struct drv_sched (opaque) is the state. It borrows the caller's
 *    cluster (struct drv_cluster, model.h) and the caller's jobs (struct
 *    drv_job): both must stay alive and unchanged (the job) until the job
 *    is removed or the state freed. The state commits running jobs'
 *    placements into the cluster; the caller must not commit or uncommit
 *    placements of jobs it gave the state (it may change node states and
 *    add nodes, then call drv_sched_cluster_changed()).
 *  - The pass APPLIES its own decisions to the state before returning:
 *    a started job is running (its placement committed), a preempted job is
 *    terminating (its resources still held until the caller says it
 *    stopped), a released node is set down, a provisioning request is
 *    remembered as in flight. The caller then acts on them in the world
 *    (controller: persist, tell agents; simulator: schedule completion and
 *    grace-expiry events) and reports back what happened with the calls
 *    below (drv_sched_finish, drv_sched_requeue, ...).
 *  - The pass is incremental: the queue order, the reservations and the
 *    per-job reasons are kept between passes and only what changed is
 *    recomputed. A pass after one job ended costs far less than a full one.
 *
 * Ownership: the decisions list (struct drv_sched_decisions) is the
 * caller's, reused from pass to pass (no allocation once it has grown).
 * The placements a decision points to belong to the state and stay valid
 * until the next call that changes the state (any drv_sched_* call but the
 * read-only queries).
 *
 * Units as in model.h: milli-GPUs, seconds, micro-dollars.
 */
#ifndef DROVER_SCHED_H
#define DROVER_SCHED_H

#include "drover/model.h"

/* ---------------------------------------------------------------------------
 * Policy: how the pass decides. Plain data; drv_sched_policy_default() fills
 * the defaults, the caller changes what it wants.
 */

enum drv_sched_order {
	DRV_ORDER_FIFO = 0,  /* submit time */
	DRV_ORDER_SJF = 1,   /* runtime estimate, else time limit, else last */
	DRV_ORDER_LAS = 2,   /* least attained GPU-service, discrete queues (Tiresias) */
	DRV_ORDER_FAIR = 3,  /* tenant's weighted share deficit */
};

enum drv_sched_mode {
	DRV_MODE_STRICT = 0,   /* nothing passes the first blocked job */
	DRV_MODE_BACKFILL = 1, /* EASY (or conservative) backfill: the default */
	DRV_MODE_GREEDY = 2,   /* try every job in order, no head-of-line blocking */
};

enum drv_sched_pools {
	DRV_POOLS_CHEAPEST = 0, /* lowest price per GPU-hour x GPUs (spot only if preemptible) */
	DRV_POOLS_FASTEST = 1,  /* best GPU model (catalog speed_rank), then price */
};

enum drv_preempt_policy {
	DRV_PREEMPT_LOWER = 0, /* Kubernetes PreemptLowerPriority */
	DRV_PREEMPT_NEVER = 1, /* Kubernetes Never: waits, never preempts */
};

#define DRV_SCHED_MAX_LAS 8

struct drv_sched_policy {
	enum drv_sched_order order;
	enum drv_sched_mode mode;
	bool preemption;            /* may start jobs by preempting others */
	enum drv_sched_pools pools;
	enum drv_place_strategy place; /* placement strategy handed to drv_place */
	/* multi: half-life of the learned task mix, in tasks submitted
	 * (0 = DRV_MIX_HALF_LIFE) */
	int32_t mix_half_life;

	/* Aging: every aging_interval_s of waiting adds aging_step to a pending
	 * job's effective priority, at most aging_max in all. 0 interval = off.
	 * Aging orders the queue; it never makes a job able to preempt. */
	int64_t aging_interval_s;
	int32_t aging_step;
	int32_t aging_max;

	/* LAS: attained GPU-service thresholds in GPU-seconds, ascending; a job
	 * whose attained service reaches las_threshold[i] drops to queue i+1.
	 * Within a queue: FIFO. With preemption on, a pending job in a higher
	 * queue may preempt a preemptible running job of no higher priority in a
	 * lower queue. */
	int64_t las_threshold[DRV_SCHED_MAX_LAS];
	int32_t nlas;

	/* LAS starvation: a pending job that has waited las_promote_s since it
	 * was submitted or last stopped is ordered as if in the first queue
	 * (Tiresias's promotion), so long jobs preempted by a stream of short
	 * ones still run. 0 = never. */
	int64_t las_promote_s;

	/* fair: with a half-life, a tenant's share counts its decayed past use
	 * (its GPU-seconds, each weighing half as much fair_half_life_s
	 * later, as an average over about a half-life) beside what it holds
	 * now, as Slurm's fair-share decay does. 0 = what it holds now only. */
	int64_t fair_half_life_s;

	int64_t min_run_s;          /* a job runs this long before it can be preempted */
	int64_t grace_s;            /* victims' grace period (their resources stay held) */
	int32_t conservative_depth; /* backfill: 0 or 1 = EASY (one reservation);
	                             * N > 1 = reservations for the first N blocked jobs */
	int64_t default_runtime_s;  /* reservation math for a running job with neither an
	                             * estimate nor a time limit; 0 = it never ends */
	int32_t max_preempt_tries;  /* preemption searches per pass (bounds the cost) */

	/* Elastic pools: a job pending longer than grow_wait_s that no current
	 * node can host makes the pass provision nodes in an elastic pool that
	 * could (up to the pool's max_nodes); an elastic node idle for
	 * idle_release_s is released. 0 = never. */
	int64_t grow_wait_s;
	int64_t idle_release_s;

	/* Emit a PENDING decision for every pending job each pass (golden tests,
	 * `why` listings) instead of only for jobs whose reason changed. */
	bool report_all_pending;
};

/* Defaults: fifo, backfill, preemption off, cheapest, DRV_PLACE_DEFAULT, aging off,
 * LAS thresholds 300, 3000, 30000, 300000 and 3000000 GPU-seconds, no LAS
 * promotion, min_run 0, grace 30 s, EASY,
 * default_runtime 0, 16 preemption searches, elastic off. */
void drv_sched_policy_default(struct drv_sched_policy *p);

/* Names <-> values for command lines ("fifo", "sjf", "las", "fair";
 * "strict", "backfill", "greedy"; "cheapest", "fastest";
 * "PreemptLowerPriority", "Never"). Parsers return 0 or DRV_EINVAL. */
const char *drv_sched_order_name(enum drv_sched_order o);
const char *drv_sched_mode_name(enum drv_sched_mode m);
const char *drv_sched_pools_name(enum drv_sched_pools p);
int drv_sched_order_parse(const char *s, enum drv_sched_order *out);
int drv_sched_mode_parse(const char *s, enum drv_sched_mode *out);
int drv_sched_pools_parse(const char *s, enum drv_sched_pools *out);
int drv_preempt_policy_parse(const char *s, enum drv_preempt_policy *out);

/* ---------------------------------------------------------------------------
 * State.
 */

struct drv_sched;

/* A new, empty state over cluster c (borrowed, see above). Free with
 * drv_sched_free(), which uncommits every placement it committed. */
struct drv_sched *drv_sched_new(struct drv_cluster *c);
void drv_sched_free(struct drv_sched *s);

/* Priority classes, Kubernetes style. Name copied. Returns the class index
 * or DRV_EEXIST / DRV_EINVAL. */
int drv_sched_add_class(struct drv_sched *s, const char *name, int32_t value,
			enum drv_preempt_policy policy);

/*
 * Tenants (teams/queues). A job's tenant is matched by name (exact); a job
 * of an unknown tenant makes one with no quota and weight 1. quota_milli[m]
 * is the tenant's nominal quota of GPU model m in milli-GPUs, -1 = no quota
 * for that model (unlimited). Tenants with the same non-empty cohort name
 * share their unused nominal quota: a tenant may borrow up to its
 * borrow_limit_milli[m] (-1 = no limit) of what its cohort peers do not
 * use; a tenant under its nominal quota reclaims borrowed capacity by
 * preempting the borrowers' preemptible jobs (if the policy allows
 * preemption). weight (> 0) is the fair-share weight.
 */
struct drv_sched_tenant {
	const char *name;
	const char *cohort;         /* NULL or "" = none */
	int32_t weight;
	int64_t quota_milli[DRV_MAX_MODELS];
	int64_t borrow_limit_milli[DRV_MAX_MODELS];
};
/* Sets every quota and limit to -1, weight 1, no cohort. */
void drv_sched_tenant_default(struct drv_sched_tenant *t, const char *name);
/* Adds (or replaces the settings of) a tenant; strings copied. Returns the
 * tenant index or a negative drv_err. */
int drv_sched_set_tenant(struct drv_sched *s, const struct drv_sched_tenant *t);

/*
 * Per-user limits (Slurm's MaxJobsPerUser, MaxTRESPerUser=gres/gpu,
 * MaxSubmitJobsPerUser): a job's user (struct drv_job.user) is matched by
 * name when the job is submitted; set users before their jobs. -1 = no
 * limit. max_running: jobs running at once; max_milli: GPUs held at once
 * (milli-GPUs); max_submitted: jobs pending or running at once, in submit
 * order: later ones wait, not considered, until earlier ones leave. Each
 * holds a job with its own reason (USER_JOBS, USER_GPUS, USER_SUBMIT).
 */
struct drv_sched_user {
	const char *name;
	int32_t max_running;
	int64_t max_milli;
	int32_t max_submitted;
};
/* Adds or replaces a user's limits (name copied); index or DRV_EINVAL. */
int drv_sched_set_user(struct drv_sched *s, const struct drv_sched_user *u);

/*
 * Jobs. Every job the scheduler knows is pending, running or terminating.
 *
 * drv_sched_submit: a new pending job. job is borrowed (keep it alive and
 *   unchanged until removed). priority_class: a class name given to
 *   drv_sched_add_class, or NULL: then job->priority is the value and the
 *   job may preempt lower priorities. DRV_EEXIST on a duplicate id,
 *   DRV_ENOENT on an unknown class.
 * drv_sched_add_running: a job already running with placement p (copied,
 *   committed into the cluster) since start_time, having attained
 *   attained_gpu_s GPU-seconds before that start (controller restart,
 *   benchmarks, tests).
 * drv_sched_finish: the job left (completed, failed, cancelled), whatever
 *   its state; its resources are released. DRV_ENOENT if unknown.
 * drv_sched_requeue: a running or terminating job stopped and goes back to
 *   pending (a preempted victim that has stopped, a job on a failed node):
 *   resources released, attained service kept, submit time kept.
 * drv_sched_update_estimate: the caller learned a better runtime estimate
 *   for a job (seconds from start); 0 = unknown.
 * drv_sched_cluster_changed: the caller changed node states or added nodes
 *   (after growing an elastic pool: drv_sched_pool_grown instead). Cheap
 *   when only states changed: the jobs are derived again (O(nodes + jobs))
 *   by the next pass, once for however many changes came before it.
 * drv_sched_pool_grown: nodes the pass asked for arrived (or failed to:
 *   count 0 clears the request); added nodes are already in the cluster.
 */
int drv_sched_submit(struct drv_sched *s, const struct drv_job *job, const char *priority_class);
int drv_sched_add_running(struct drv_sched *s, const struct drv_job *job,
			  const char *priority_class, const struct drv_placement *p,
			  int64_t start_time, int64_t attained_gpu_s);
int drv_sched_finish(struct drv_sched *s, uint64_t id, int64_t now);
int drv_sched_requeue(struct drv_sched *s, uint64_t id, int64_t now);
int drv_sched_update_estimate(struct drv_sched *s, uint64_t id, int64_t estimate_s);
void drv_sched_cluster_changed(struct drv_sched *s, int64_t now);
int drv_sched_pool_grown(struct drv_sched *s, int32_t pool, int32_t count, int64_t now);
/* Nodes of a pool that has none yet: what provisioning adds (model index,
 * GPUs per node). A pool with nodes uses its first node as the template. */
int drv_sched_set_pool_template(struct drv_sched *s, int32_t pool, int model, int ngpus);

/* ---------------------------------------------------------------------------
 * Decisions.
 */

enum drv_sched_dec_kind {
	DRV_DEC_START = 1,     /* job starts now on placement */
	DRV_DEC_PREEMPT = 2,   /* victims must stop (grace until at) so job can start */
	DRV_DEC_RESERVE = 3,   /* placement is held for job from time at */
	DRV_DEC_PROVISION = 4, /* add count nodes to elastic pool */
	DRV_DEC_RELEASE = 5,   /* elastic node idle: set down, give it back */
	DRV_DEC_PENDING = 6,   /* job waits, for reason */
};

enum drv_sched_reason {
	DRV_REASON_NONE = 0,
	DRV_REASON_RESOURCES = 1,   /* not enough free GPUs (of its model, in its pools) */
	DRV_REASON_TOPOLOGY = 2,    /* enough free in total, not together as required */
	DRV_REASON_QUOTA = 3,       /* tenant at quota (plus what it may borrow) */
	DRV_REASON_RESERVATION = 4, /* would delay another job's reservation */
	DRV_REASON_PRIORITY = 5,    /* strict order: behind a blocked job */
	DRV_REASON_PREEMPTING = 6,  /* waiting for its preemption victims to stop */
	DRV_REASON_PROVISIONING = 7,/* waiting for nodes being provisioned */
	DRV_REASON_NEVER = 8,       /* can never fit this cluster (size, regions, model) */
	DRV_REASON_RESERVED = 9,    /* blocked; holds a reservation (see RESERVE) */
	DRV_REASON_NODE_DOWN = 10,  /* would fit were its down or draining nodes up */
	DRV_REASON_USER_JOBS = 11,  /* its user runs max_running jobs: n[0] running, n[1] limit */
	DRV_REASON_USER_GPUS = 12,  /* its user's GPUs: n[0] need, n[1] held, n[2] limit (milli) */
	DRV_REASON_USER_SUBMIT = 13,/* its user has max_submitted jobs ahead: n[0] limit */
	DRV_REASON_REQ_NODE = 14,   /* nodes it names (-w) are down or draining: n[0..2] the
				     * first (node indexes, -1 none), n[3] how many; count 1
				     * when one it requires is among them */
};

/* NEVER and NODE_DOWN: what never fits (decision field count). */
enum drv_never_what {
	DRV_NEVER_POOLS = 1,     /* no pool its regions (and spot rule) allow */
	DRV_NEVER_MODEL = 2,     /* no GPU of its model; n[2] = models present (bit mask) */
	DRV_NEVER_TASK_GPUS = 3, /* a task needs n[0] GPUs; the largest node has n[1] */
	DRV_NEVER_TASK_CPU = 4,  /* a task needs n[0] milli-CPUs; the largest node has n[1] */
	DRV_NEVER_TASK_MEM = 5,  /* a task needs n[0] MiB; the largest node has n[1] */
	DRV_NEVER_GPUS = 6,      /* needs n[0] whole GPUs (of model); the cluster has n[1] */
	DRV_NEVER_LEVEL = 7,     /* needs n[0] GPUs under one vertex of level; largest has n[1] */
	DRV_NEVER_GPU_MEM = 8,   /* a task needs n[0] MiB of one GPU; the largest (model) has n[1] */
	DRV_NEVER_NODES = 9,     /* needs n[0] nodes that meet its -w/-x/-C; n[1] do (and fit a task) */
	DRV_NEVER_INCLUDE = 10,  /* a node it requires (DRV_LABEL_INCLUDE) is none of the cluster's
				  * or is ruled out by its -x/-C */
	DRV_NEVER_DISTINCT = 11, /* needs n[0] distinct nodes that fit a task (-N); n[1] do */
};

/* RESOURCES: what a node lacks (decision field count; 0 = GPUs). */
enum drv_short_what {
	DRV_SHORT_GPU = 0,
	DRV_SHORT_CPU = 1,       /* a task needs n[0] milli-CPUs; at most n[1] free on a node */
	DRV_SHORT_MEM = 2,       /* a task needs n[0] MiB; at most n[1] free on a node */
};

/* Decision flags. */
#define DRV_DEC_BACKFILLED 0x1u  /* START: started past a blocked job */
#define DRV_DEC_BORROWING 0x2u   /* START: uses quota borrowed from the cohort */
#define DRV_DEC_RECLAIM 0x4u     /* PREEMPT: reclaims quota lent to the victims' tenants */
#define DRV_DEC_SPOT 0x8u        /* START: in a spot pool */
#define DRV_DEC_NO_VICTIMS 0x10u /* PENDING: preemption is on and no victim set helps */
#define DRV_DEC_CLASS_NEVER 0x20u /* PENDING: preemption is on but its class is Never */
#define DRV_DEC_REQ_NODE 0x40u   /* PENDING (RESOURCES/TOPOLOGY): node is the first node
				  * it requires (-w with a larger -N), up but without room */

/*
 * One decision. Fields by kind (unused ones are 0 / -1 / NULL):
 *  START      job, placement, pool (chosen pool or -1), at = expected end (0 =
 *             unknown), n[0] = price micro-$/hour of the placement, flags
 *  PREEMPT    job (the preemptor), victims[nvictims] (ids, ascending),
 *             placement (where job will start once they stopped), at = grace
 *             deadline, n[0] = GPU-seconds of work the victims lose,
 *             n[1] = highest victim priority
 *  RESERVE    job, placement, at = reserved start time
 *  PROVISION  pool, count (nodes), model, n[0] = GPUs per node,
 *             job = the job that waited longest for it
 *  RELEASE    pool, node
 *  PENDING    job, reason, the numbers behind it:
 *             RESOURCES    count = enum drv_short_what; GPU: n[0] need milli,
 *                          n[1] free milli usable by it, n[2] GPUs per task,
 *                          n[3] most free GPUs on one node; CPU/MEM: n[0] need
 *                          per task, n[1] most free on one node
 *             TOPOLOGY     n[0] need milli, n[1] free milli, level = required level,
 *                          or the slice level with count = tasks per slice
 *             QUOTA        model, n[0] need milli, n[1] tenant's use, n[2] nominal,
 *                          n[3] cohort capacity it may still borrow
 *             RESERVATION  n[0] id of the reserving job, at = its start time
 *             PRIORITY     n[0] id of the blocked job ahead of it
 *             PREEMPTING   n[0] victims still stopping, at = grace deadline
 *             PROVISIONING pool, count
 *             NEVER        count = enum drv_never_what, model, level, n[0] need,
 *                          n[1] what the cluster has (see drv_never_what)
 *             NODE_DOWN    the same numbers over the up nodes, node = a down or
 *                          draining node, n[3] = how many are down or draining
 *             RESERVED     at = reserved start time
 *             flag DRV_DEC_NO_VICTIMS: preemption is on and no set of victims
 *                          it may preempt makes room (RESOURCES/TOPOLOGY)
 */
struct drv_sched_decision {
	enum drv_sched_dec_kind kind;
	enum drv_sched_reason reason;
	uint64_t job;
	uint32_t flags;
	int32_t pool;
	int32_t node;
	int32_t count;
	int32_t model;
	int32_t level;
	int64_t at;
	int64_t n[4];
	const struct drv_placement *placement; /* owned by the state */
	const uint64_t *victims;               /* owned by the decisions list */
	int32_t nvictims;
};

/* The caller's list, reused across passes. */
struct drv_sched_decisions {
	struct drv_sched_decision *v;
	int32_t n;
	size_t cap;
	uint64_t *ids; /* victims' storage */
	size_t nids;
	size_t idcap;
};
void drv_sched_decisions_init(struct drv_sched_decisions *d);
void drv_sched_decisions_release(struct drv_sched_decisions *d);

/*
 * The pass. Clears out, decides, applies the decisions to s (see the top of
 * this file) and appends them to out in this order: PREEMPT and START in
 * queue order, RELEASE, RESERVE, PROVISION, then PENDING in queue order.
 * Returns the number of decisions, or a negative drv_err (DRV_EINVAL for a
 * bad policy). now must not go backwards between passes.
 */
int drv_sched_pass(struct drv_sched *s, int64_t now, const struct drv_sched_policy *pol,
		   struct drv_sched_decisions *out);

/* ---------------------------------------------------------------------------
 * Queries (read-only).
 */

enum drv_sched_job_state {
	DRV_SJ_PENDING = 0,
	DRV_SJ_RUNNING = 1,
	DRV_SJ_TERMINATING = 2, /* preempted, in its grace period */
};

struct drv_sched_job_info {
	enum drv_sched_job_state state;
	int32_t priority;         /* effective value (class or job) without aging */
	int32_t tenant;
	int64_t start_time;       /* running: this run's start */
	int64_t attained_gpu_s;   /* up to the last pass */
	int64_t grace_deadline;   /* terminating */
	uint64_t preempted_by;    /* last preemptor, 0 = none */
	const struct drv_placement *placement; /* running/terminating; owned by s */
	struct drv_sched_decision why; /* pending: the last pass's reason (kind PENDING) */
};
/* 0, or DRV_ENOENT. */
int drv_sched_job_get(const struct drv_sched *s, uint64_t id, struct drv_sched_job_info *out);

/* Counts. */
int32_t drv_sched_pending_count(const struct drv_sched *s);
int32_t drv_sched_running_count(const struct drv_sched *s);

/*
 * One line a person reads, for any decision ("start job 7 on n1:0-7 ...",
 * "job 9 pending: needs 64 GPUs under one leaf; 40 free together").
 * snprintf-like: returns the length needed.
 */
size_t drv_sched_decision_format(const struct drv_sched *s, const struct drv_sched_decision *d,
				 char *buf, size_t bufsz);

/* ---------------------------------------------------------------------------
 * Reasons (src/core/reason.c): the one place a pending reason becomes words,
 * for drover place, the server and the simulator (CONTRACTS.md section 3).
 *
 * drv_sched_reason_code: the one-word code of a PENDING decision's reason
 *   (Slurm's word where Slurm has one): Resources (GPUs, CPU, memory,
 *   topology), Priority (strict order, or it would delay another job's
 *   reservation), Reservation (it holds one and waits for its start), Quota,
 *   Preempting, Provisioning, BadConstraints (never fits the cluster as
 *   configured), NodeDown, None. Static string.
 * drv_sched_reason_text: the sentence with its numbers, no code, times as
 *   durations from now ("starts in 2h13m"). c names levels, pools and
 *   nodes (may be NULL). snprintf-like.
 */
const char *drv_sched_reason_code(const struct drv_sched_decision *d);
size_t drv_sched_reason_text(const struct drv_cluster *c, const struct drv_sched_decision *d,
			     int64_t now, char *buf, size_t bufsz);

/*
 * What the cluster as configured could ever offer: every node in any state
 * (down and draining included) and every elastic pool grown to its
 * maxNodes, shaped like its first node, else like tmpl_gpus[p] GPUs of
 * model tmpl_model[p] (arrays by pool, may be NULL), else of unknown shape
 * (then nothing that may use the pool is judged). Build it again after the
 * cluster changed (O(nodes x levels)).
 *
 * drv_capacity_check: 0 when job may run some day; DRV_REASON_NEVER when
 *   it never can (a task larger than any node in GPUs, CPU or memory, a GPU
 *   model the cluster lacks, more GPUs than the cluster or a vertex of its
 *   required level holds, no pool its regions allow); DRV_REASON_NODE_DOWN
 *   when it can only once down or draining nodes are up again;
 *   DRV_REASON_REQ_NODE (Slurm's ReqNodeNotAvail) when those are nodes it
 *   names (-w: one it requires, or too few of those it may use are up). w is filled
 *   as a PENDING decision with that reason (job = job->id). A capacity
 *   built from no node and no elastic pool says 0 to everything
 *   (drv_capacity_empty). Necessary conditions only: a job it passes may
 *   still never fit (CPU on one node, GPUs on another).
 */
struct drv_capacity;
struct drv_capacity *drv_capacity_new(void);
void drv_capacity_free(struct drv_capacity *cap);
void drv_capacity_build(struct drv_capacity *cap, const struct drv_cluster *c,
			const int32_t *tmpl_gpus, const int32_t *tmpl_model);
bool drv_capacity_empty(const struct drv_capacity *cap);
int drv_capacity_check(const struct drv_capacity *cap, const struct drv_cluster *c,
		       const struct drv_job *job, struct drv_sched_decision *w);

#endif
