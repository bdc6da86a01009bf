/*
 * server_int.h: the controller's shared state, private to src/server/.
 *
 * One mutex (srv->mu) guards everything below; one condition variable
 * (srv->cv) is broadcast on every change a waiter may care about (a new
 * event, a node's desired state, shutdown); srv->loop_cv wakes the
 * scheduling loop. HTTP handlers run on libmicrohttpd's event threads and
 * take the mutex briefly; replies that wait (long-polls, SSE, writes that
 * must be on disk first) are deferred (drv_http_defer) and looked at again
 * after each drv_http_wake(s->http), which goes with every broadcast of
 * srv->cv.
 *
 * Unfinished jobs live in memory, indexed by id (jobs[id - 1]); each change
 * marks the job dirty and queues an event; srv_flush() writes dirty jobs
 * and queued events in one store transaction before anything is acted on.
 * A finished job leaves memory once its final record is on disk (and is
 * never loaded at start): reads of it go to the store (jobs_store.c).
 * Nodes are parallel to the cluster's nodes: nodes[i] is cluster.nodes[i].
 */
#ifndef DROVER_SERVER_INTERNAL_H
#define DROVER_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include <jansson.h>

#include "drover/clock.h"
#include "drover/dynbuf.h"
#include "drover/http.h"
#include "drover/log.h"
#include "drover/metrics.h"
#include "drover/model.h"
#include "drover/proto.h"
#include "drover/sched.h"
#include "drover/tenants.h"
#include "drover/server.h"
#include "drover/spec.h"
#include "drover/store.h"

enum jstate {
	J_PENDING = 0,
	J_SCHEDULED,
	J_RUNNING,
	J_SUCCEEDED,
	J_FAILED,
	J_CANCELLED,
	J_PREEMPTED,
	J_OUT_OF_MEMORY,        /* final: the kernel's OOM killer ended a task */
	J_TIMEOUT,              /* final: a task was stopped at the job's time limit */
	J_NODE_FAIL,            /* final: a node of it went down and it may not be requeued */
	J_NSTATES
};

enum tstate {
	T_PENDING = 0,
	T_STARTING,
	T_RUNNING,
	T_SUCCEEDED,
	T_FAILED,
	T_CANCELLED,
	T_LOST,
	T_NSTATES
};

/* One task of a job's current (or last) placement, as the controller tracks it. */
struct srv_task {
	int32_t node;          /* node index (nodes[] and cluster) */
	int16_t group;
	uint64_t gpu_mask;
	int32_t gpu_milli;
	int64_t cpu_milli;
	int64_t mem_mib;
	enum tstate state;
	bool ended;            /* the process is gone (or never ran) */
	int exit_code;         /* -1 = none */
	int signal;            /* 0 = none */
	bool oom;
	bool timed_out;        /* the agent stopped it at the job's time limit */
	char *reason;
	int64_t start_time, end_time;
	int64_t counted_micro;     /* of its cost, what the counters have (cost.c) */
	json_t *usage;             /* what it used, as its agent last said (proto's usage form) */
	json_t *container;         /* a container task: {name, command, image_pull} as its
				    * agent last said them; NULL none */
};

/*
 * A job as the controller holds it: the spec, its lifecycle state and
 * events, and the placement's tasks. (The scheduler keeps its own compact
 * record per job, struct sched_job in src/core; this one owns the spec it
 * borrows.)
 */
struct srv_job {
	uint64_t id;
	struct drv_jobspec spec;   /* spec.job is what the scheduler borrows */
	json_t *canon;             /* canonical JSON of spec */
	enum jstate state;
	char *reason;
	int32_t attempt;
	int32_t requeues;          /* after node failures (the retry limit counts these) */
	int64_t epoch;             /* of the current/last start; 0 = never */
	int64_t durable_epoch;     /* the epoch whose start is on disk: agents see only that */
	/* the last signal sent to its processes (signals.c): a number from the
	 * server's epoch counter, so that agents deliver each one once */
	int64_t sig_seq;
	int32_t sig_num;
	uint8_t sig_to;            /* SRV_SIG_BATCH | SRV_SIG_STEPS */
	int64_t sig_timer_epoch;   /* the attempt whose --signal timer fired */
	int64_t submit_time, start_time, end_time;
	int exit_code;             /* valid when has_exit */
	bool has_exit;
	struct srv_task *tasks;       /* the current/last placement, rank order */
	int32_t ntasks;
	bool in_sched;             /* the scheduler knows it */
	bool holding;              /* tasks assigned whose processes are not all gone */
	char *stop_reason;         /* set: every task not ended must stop */
	bool requeue_on_stop;      /* preempted: back to pending when all stopped */
	bool requeue_quiet;        /* ... and already recorded as pending (node failure) */
	json_t *events;            /* [{time, from, to, reason}] */
	int64_t cost_prev_micro;   /* what its earlier attempts cost (cost.c) */
	int64_t cost_prev_time;    /* when the last of them was folded in (wall s) */
	bool budget_held;          /* pending, held: its tenant's budget is spent (`budget` hold) */
	bool runtime_held;         /* pending: it needs a container and no node runs one
				    * (reason code RuntimeUnavailable) */
	bool config_held;          /* pending, held: a Secret or ConfigMap it uses is missing
				    * (kube_config.c) */
	bool dirty;
	uint64_t ver;              /* bumped by every srv_job_mark */
	uint64_t durable_ver;      /* the ver last on disk (commit.c): below ver, unsettled */
	struct srv_api_memo *memo; /* its list form's text while it holds (state_json.c) */
	/* parents and elements (elements.c); all zero for other jobs */
	struct srv_parent *par;    /* set: j is a parent */
	uint64_t parent;           /* an element: its parent's id */
	int32_t index;             /* an element: its index (completion index, 0-based, or
				    * Slurm array task id) */
	bool gated;                /* an element over the parallelism: not yet scheduled */
	uint8_t hold;              /* SRV_HOLD_USER or _ADMIN: pending, off the scheduler */
	/* Slurm --dependency (deps.c): waiting, not given to the scheduler */
	bool dep_wait;
	bool dep_never;            /* ... and it can never be satisfied */
	bool begin_wait;           /* ... they are, and it waits for begin_time */
	int64_t begin_time;        /* Slurm --begin: not before this wall s; 0 = none */
	struct srv_dep_memo *dep_memo; /* [spec.ndeps] while waiting */
	struct srv_job *parent_new; /* while being submitted: the parent, whose id is not set */
	/* job steps of the current attempt (srun; steps.c) */
	struct srv_step **steps;
	int32_t nsteps;
	size_t stepcap;
};

/* A bind mount of a container step (srun --container-mounts SRC:DST[:ro]). */
struct srv_step_mount {
	char *src, *dst;
	bool read_only;
};

/*
 * A job step (CONTRACTS.md section 7): tasks srun started inside job j's
 * allocation, on the job's nodes and GPUs. Its tasks are assignments like
 * the job's own (task id "JOB.sSTEP.RANK", the job's epoch); rank is
 * SLURM_PROCID. Steps are written with the job's record (its "steps").
 */
struct srv_step {
	int32_t id;
	struct srv_task *tasks;
	int32_t ntasks;
	int32_t *local;            /* [ntasks] SLURM_LOCALID */
	int32_t *nodeid;           /* [ntasks] SLURM_NODEID: the node's place in the job's list */
	int32_t nnodes;
	char **argv;
	int32_t nargv;
	struct drv_env *env;       /* srun's environment, then the step's SLURM_* */
	int32_t nenv;
	char *cwd;
	int32_t cpus_per_task;     /* srun -c; 0 = not given */
	char *container_image;     /* srun --container-image, as podman names it; NULL: host */
	char *container_workdir;   /* --container-workdir; NULL: the image's */
	struct srv_step_mount *mounts;   /* --container-mounts */
	int32_t nmounts;
	size_t mountcap;
	bool kill_on_bad_exit;
	bool pty;                  /* srun --pty: task 0 on a terminal (not kept) */
	int32_t pty_rows, pty_cols;
	char *stop_reason;         /* set: its tasks not ended must stop */
	bool done;                 /* every task ended */
	int64_t start_time, end_time;
};

/*
 * What a parent job (CONTRACTS.md section 2: a batch/v1 Job) keeps beside
 * its elements, ids first .. first + n - 1: they are made with it, in one
 * transaction, and never change. The parent is never scheduled itself.
 */
struct srv_parent {
	uint64_t first;            /* the first element's id */
	int32_t n;                 /* elements (completions) */
	int32_t parallelism;       /* at most this many not gated at once */
	int32_t backoff_limit;     /* pod failures past this fail the Job */
	int32_t succeeded;         /* elements that succeeded */
	int32_t failed;            /* pod failures, every attempt (the backoff count) */
	int64_t deadline_s;        /* Job activeDeadlineSeconds; 0 = none */
	int64_t active_since;      /* the deadline counts from here: submit, or the resume */
	bool indexed;              /* completionMode Indexed */
	bool array;                /* a Slurm --array: elements are final, never retried,
				    * and their index is the array task id */
	bool suspended;            /* spec.suspend: a `suspend` hold, no element runs */
};

/* A job's hold (CONTRACTS.md section 4): `scontrol hold`, `sbatch -H`. */
enum { SRV_HOLD_NONE = 0, SRV_HOLD_USER = 1, SRV_HOLD_ADMIN = 2 };

/* A node as the controller holds it: its agent's session, heartbeat and
 * reported state, parallel to the cluster's struct drv_node. */
struct srv_node {
	char *name;
	bool registered;           /* an agent has registered with the current session */
	bool ever_registered;
	bool admin_drain;
	bool health_drain;
	enum drv_node_state state;
	char *reason;
	int64_t session;
	int64_t last_hb_ms;        /* monotonic */
	int64_t last_hb_wall;      /* s */
	int64_t last_reply_ms;     /* monotonic: the last register/sync answer sent it */
	bool lease_wait;           /* down with tasks that may still run: their gangs
				    * restart once its agent's lease is surely over */
	uint64_t version;          /* desired-state version for the assignments poll */
	json_t *inventory;         /* the last register body */
	json_t *health;            /* the last heartbeat's gpus */
	json_t *labels;            /* object */
	char *address;
	char *agent_url;
	bool dirty;
};

struct token {
	char *token;
	char *user;
	bool admin;
};

struct srv_config {
	struct token *tokens;
	int ntokens;
	char *cluster_token;
	bool open_endpoints;
	bool allow_root_tasks;
	int64_t heartbeat_interval_s;
	int64_t heartbeat_timeout_s;
	/* how long an agent's tasks outlive its last exchange; a gang on an
	 * unreachable node restarts only agent_lease_s + 5 s after the last
	 * reply sent there (nodes.c) */
	int64_t agent_lease_s;
	int32_t retry_limit;
	int64_t sched_delay_ms;
	int64_t max_unauth_per_client; /* connections before authenticating, per address */
	int64_t max_user_conns_per_client;    /* authenticated by a user's token, per address */
	int64_t max_cluster_conns_per_client; /* by the cluster token (agents), per address */
	int64_t idempotency_ttl_s;   /* Idempotency-Key answers kept this long (idem.c) */
	int64_t max_array_size;      /* array task ids must be below it (Slurm's MaxArraySize) */
	char **host_path_allow;      /* hostPath prefixes Pods may mount (default none) */
	size_t nhost_path_allow;
	bool kill_invalid_depend;    /* cancel a job whose dependency can never be satisfied */
	int64_t min_job_age_s;       /* squeue shows a finished job this long (Slurm's MinJobAge) */
	char *default_pool;
	char *default_leaf;
	char *cluster_name;          /* SLURM_CLUSTER_NAME; NULL: "drover" */
	struct drv_sched_policy policy;
	int64_t job_retention_s;     /* finished jobs' records purged after this */
	int64_t task_output_max_bytes; /* per task output file, told to agents; 0 none */
	char *tenants_path;          /* `tenants:`, resolved against the config's directory */
	struct drv_tenants tenants;  /* its quotas, weights, classes (empty without one) */
	char *tls_cert_file;         /* `tls:`, resolved as tenants_path; NULL: none */
	char *tls_key_file;
	char *tls_ca_file;           /* the CA agents' certificates are checked against */
	char *store;                 /* `store:` (--store wins): NULL/"sqlite", or a postgres:// URL */
	char *store_password_file;   /* its password, mode 0600 (resolved as tenants_path) */
	int64_t leader_lease_s;      /* the leader lease on PostgreSQL (ha.c) */
	char *advertise_url;         /* where standbys send clients (307); NULL: the listen URL */
};

/* The authenticated caller, set by the filter. */
struct caller {
	const char *user;   /* borrowed from the config (job tokens: job_token.c's) */
	bool admin;
	bool agent;
	uint64_t job;       /* a job token's job (ROUTE_JOB routes only); 0: none */
	int32_t attempt;    /* ... and its attempt */
};

struct ring_event {
	int64_t seq;
	uint64_t job;
	char *user;            /* job events: the job's user; NULL for node events */
	json_t *ev;
};

struct pend_event {
	json_t *ev;            /* without seq */
	uint64_t job;
	char *user;            /* job events: the job's user (watch filter) */
	const char *type;
	char *node;
	char *from, *to, *reason;
	int64_t time;
};

/* One store write, made under srv->mu by srv_enqueue, written by the
 * committer thread without it (commit.c). */
struct wjob {
	uint64_t id;
	int64_t epoch;
	uint64_t ver;              /* the job's ver when written */
	char *name, *user, *tenant, *doc;
	const char *state;
	int64_t submit_time;
	int64_t end_time;
	bool done;
};
struct wnode {
	char *name, *doc;
};
/* An accounting row to write (strings owned). */
struct wacct {
	struct drv_store_acct a;
};
/* An Idempotency-Key's answer to write (strings owned). */
struct widem {
	struct drv_store_idem k;
};
struct wbatch {
	uint64_t ticket;
	struct widem *idems;
	size_t nidems, icap;
	struct wjob *jobs;
	size_t njobs, jcap;
	struct wnode *nodes;
	size_t nnodes, ncap;
	struct pend_event *events;
	size_t nevents, ecap;
	struct wacct *accts;
	size_t naccts, acap;
	bool meta;
	int64_t epoch, session;
	struct srv_job **newjobs;     /* join memory once written (srv_jobs_adopt) */
	size_t nnew;
	struct wbatch *next;
};

struct cost_cell {
	char *tenant;
	char *user;
	char *pool;
	int64_t micro;
};

/* A tenant's spend in the calendar month that starts at s->month_start. */
struct month_cell {
	char *tenant;
	int64_t micro;
};

/* One tenant's histogram of waits from submit to running. */
struct srv_wait {
	char *tenant;
	struct drv_histogram h;
};

enum { SRV_ROLE_STANDALONE, SRV_ROLE_STANDBY, SRV_ROLE_LEADER };

struct drv_server {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* events, versions, stop */
	pthread_cond_t loop_cv;   /* wakes the loop */
	bool stopping;
	int nfetches;             /* log fetch threads running (logs_fetch.c) */

	struct srv_config cfg;
	struct caller *callers;   /* [cfg.ntokens], parallel to cfg.tokens */
	char *config_path;
	char *state_dir;
	unsigned char job_key[32];     /* job tokens' HMAC key (job_token.c) */
	struct job_caller *job_callers; /* one per job attempt that used its token (mu) */
	int lock_fd;              /* STATE_DIR/lock, flock'ed (state_lock.c); -1: none */
	char url[300];
	struct drv_log log;       /* "TIME drover server: ..." to opts.log */
	int64_t started_ms;

	struct drv_store *store;
	struct drv_store *rstore;  /* a second connection, for reads of the store only
				    * (WAL: they never wait for the committer) */
	pthread_mutex_t rstore_mu; /* every rstore call; taken after mu, never before */
	struct drv_cluster cluster;
	struct drv_sched *sched;
	struct drv_capacity *capacity; /* submit-time refusal (srv_capacity_refresh) */
	struct drv_dynbuf cap_inputs;  /* what it was built from */
	uint64_t capacity_builds;      /* times it was (re)built */
	struct drv_sched_decisions dec;
	int32_t default_leaf_vertex;
	int32_t default_pool_index;

	struct srv_job **jobs;       /* jobs[id - 1]; NULL for ids not (yet) in memory */
	uint64_t njobs;
	uint64_t next_id;         /* last id handed out (ids are never reused) */
	size_t jcap;
	uint64_t *active;         /* ids of jobs holding tasks */
	size_t nactive, acap;
	uint64_t *dirty;          /* ids of jobs to write at the next flush */
	size_t ndirty, dcap;
	int32_t *dirty_nodes;     /* indexes of the nodes to write (srv_node_mark) */
	size_t ndirty_nodes, dncap;
	int64_t done_counts[J_NSTATES];   /* finished jobs in the store only, by state */
	/* listings reading the store with mu released (srv_jobs_page): while
	 * any does, evictions wait in evict_later, so a job that is neither in
	 * the rows read nor in memory any more cannot drop out of a page */
	int page_readers;
	uint64_t *evict_later;
	size_t nevict_later, evict_later_cap;
	struct wacct *acct_pend;  /* accounting rows for the next flush */
	size_t nacct, acctcap;
	int64_t last_purge_ms;
	struct srv_idem *idem;    /* Idempotency-Keys in flight (idem.c) */
	size_t nidem, idemcap;
	uint64_t idem_gen;        /* +1 whenever an entry on disk leaves idem[] */
	int64_t last_idem_purge_ms;
	int loading;              /* 1 until the state is loaded (atomic): /healthz says 503 */
	int proto;                /* the agent protocol spoken (drv_proto_speaks) */

	/* High availability on PostgreSQL (ha.c, docs/ha.md) */
	int role;                 /* SRV_ROLE_* (atomic) */
	int64_t term;             /* the lease term held (leader) or last seen (atomic) */
	int64_t failovers;        /* takeovers this controller made from a lapsed leader (atomic) */
	struct drv_store *lease_store; /* its own connection, for the lease calls only */
	char *store_url;          /* the PostgreSQL URL; NULL: SQLite */
	char *store_pw;           /* store_password_file; NULL: libpq's PGPASSFILE/~/.pgpass */
	char holder[512];         /* this process in the lease row: HOST:STATE_DIR:PID:NONCE */
	char advertise[300];      /* where clients reach it (the lease row's addr) */
	pthread_mutex_t ha_mu;    /* leader_url */
	char leader_url[300];     /* the leader's advertised address, as last read */
	pthread_t ha_thread, promote_thread;
	bool ha_started, promote_started;
	int ha_stop;              /* atomic */

	struct srv_node *nodes;      /* parallel to cluster.nodes */
	int32_t *node_index;       /* nodes by name (nodes.c): index + 1, 0 empty */
	size_t node_index_cap;     /* a power of two, at least twice nnodes */
	int32_t nnodes;
	size_t ncap;

	int64_t epoch;
	int64_t session;
	bool meta_dirty;

	struct pend_event *pend;
	size_t npend, pcap;

	/* group commit (commit.c): batches queue here; one thread writes them */
	pthread_mutex_t store_mu;  /* every store call; taken after mu, never before */
	pthread_cond_t commit_cv;  /* wakes the committer */
	pthread_cond_t done_cv;    /* a group was written (or failed) */
	struct wbatch *cq_head, *cq_tail;
	uint64_t next_ticket;      /* last ticket handed out */
	uint64_t done_ticket;      /* every ticket <= this was processed */
	uint64_t fail_lo[32], fail_hi[32]; /* recent failed groups, a ring */
	unsigned nfail;
	char commit_err[256];
	bool commit_fail_logged;
	bool commit_stop;
	pthread_t commit_thread;
	bool commit_started;

	struct ring_event *ring;  /* circular */
	size_t ring_cap, ring_start, ring_n;
	int64_t last_seq;

	bool sched_dirty;
	int64_t dirty_since_ms;
	int64_t last_hb_check_ms;
	int64_t last_periodic_pass_ms;
	uint64_t *announce;       /* jobs started by a pass, told to agents after the flush */
	size_t nannounce, anncap;
	int64_t last_pass_now;
	int64_t last_pass_ms;
	int64_t last_pass_end_ms;  /* drv_mono_ms() when the last pass ended */
	uint64_t passes;
	uint64_t preemptions;
	uint64_t submits;
	uint64_t heartbeats;       /* agent syncs received */
	struct drv_proto_seen *proto_seen;  /* unknown protocol keys already logged */
	uint64_t transitions[J_NSTATES];
	struct srv_wait *waits;      /* submit-to-running histograms per tenant (server_metrics.c) */
	size_t nwaits, waits_cap;
	struct drv_histogram pass_hist;
	struct cost_cell *costs;
	size_t ncosts, costcap;
	struct month_cell *months;
	size_t nmonths, monthcap;
	int64_t month_start;       /* wall s: 00:00 UTC on the 1st of this month */
	struct srv_kobj *kobjs;    /* Secrets and ConfigMaps (kube_config.c) */
	size_t nkobjs, kobjcap;
	int64_t kobj_rv;           /* their last resourceVersion */
	uint64_t *held;            /* ids of jobs under a budget hold */
	size_t nheld, heldcap;
	uint64_t *rt_held;         /* ids of jobs waiting for a container runtime */
	size_t nrt_held, rt_heldcap;
	uint64_t *parents;         /* ids of unfinished parent jobs (elements.c) */
	size_t nparents, parentcap;
	uint64_t *depwait;         /* ids of jobs waiting for dependencies (deps.c) */
	size_t ndepwait, depwaitcap;
	int64_t last_cost_ms;

	pthread_t loop_thread;
	bool loop_started;
	struct drv_http_server *http;
};

/* --- kube_config.c: Secrets and ConfigMaps (docs/kubernetes.md) --- */
/* One object: kind "Secret" or "ConfigMap"; doc is the object as served. */
struct srv_kobj {
	char *kind, *ns, *name, *owner;
	json_t *doc;
};
/* Strings an assignment owns until it is encoded. */
struct srv_strs {
	char **v;
	size_t n, cap;
};
/* Takes str; returns it. */
const char *srv_strs_add(struct srv_strs *ss, char *str);
void srv_strs_release(struct srv_strs *ss);
/* srv_restore's loader of one stored object (cls: the server). */
int srv_kobj_restore(const struct drv_store_kobj *o, void *cls);
void srv_kobjs_free(struct drv_server *s);
/* Under s->mu: whether a Secret or ConfigMap job j needs (not optional)
 * is missing, with the sentence in why. */
bool srv_kobjs_missing(struct drv_server *s, const struct srv_job *j, char *why, size_t n);
/* Under s->mu: after a Secret or ConfigMap changed, jobs held for one
 * that now resolve go to the scheduler. */
void srv_kobjs_unhold(struct drv_server *s);
/*
 * Under s->mu: the env of task group run of j at launch into a->env
 * (allocated with room for extra more entries): envFrom's keys first, then
 * env in order, valueFrom resolved; *lit (allocated, parallel) says which
 * values are literal (resolved ones: no $(VAR) expansion); and a->volumes.
 * The strings are own's or run's.
 */
void srv_kobjs_task(struct drv_server *s, const struct srv_job *j,
		     const struct drv_task_run *run, struct drv_proto_task *a, size_t extra,
		     bool **lit, struct srv_strs *own);
void srv_kobjs_task_release(struct drv_proto_task *a);

/* --- cost.c --- */
/* What t cost from since (wall s; 0 = its start) to its end, or to now. */
int64_t srv_task_cost_micro(const struct drv_server *s, const struct srv_task *t, int64_t now,
			    int64_t since);
/* What j cost: its earlier attempts and its current tasks up to now. */
int64_t srv_job_cost_micro(const struct drv_server *s, const struct srv_job *j, int64_t now);
/* The pool name of t's node ("" when none). */
const char *srv_task_pool(const struct drv_server *s, const struct srv_task *t);
/* 00:00:00 UTC on the first day of now's calendar month. */
int64_t srv_month_start(int64_t now);
struct month_cell *srv_month_cell(struct drv_server *s, const char *tenant);
/* Adds what j accrued since it was last counted to the counters. */
void srv_cost_accrue_job(struct drv_server *s, struct srv_job *j, int64_t now);
/* Before j's tasks are replaced by a new placement: counts them and keeps
 * their cost in cost_prev_micro. */
void srv_cost_fold(struct drv_server *s, struct srv_job *j, int64_t now);
/* A new calendar month (UTC) at now: every tenant's spend back to 0. */
void srv_month_roll(struct drv_server *s, int64_t now);
/* True, with the sentence in buf, when tenant's budget says hold and its
 * spend this month has reached the budget. */
bool srv_budget_spent(struct drv_server *s, const char *tenant, char *buf, size_t n);
/* The tenant's settings in the tenants file, or NULL. */
const struct drv_tenant_conf *srv_tenant_conf(const struct drv_server *s, const char *tenant);
/* After srv_restore: counted marks and this month's spend from the jobs. */
void srv_cost_restore(struct drv_server *s);
void srv_cost_release(struct drv_server *s);
/* --- cost_metrics.c: the cost families of /metrics --- */
void srv_cost_metrics(struct drv_server *s, struct drv_prom *w);

/* --- util.c --- */
json_t *srv_json_time(int64_t t);  /* RFC 3339 string, or null for 0 */
/* Dollars from micro-dollars: a JSON number that prints with at most 6
 * decimals (replies are written with 16 significant digits). */
json_t *srv_json_usd(int64_t micro);
const char *srv_jstate_name(enum jstate st);
int srv_jstate_parse(const char *name);
const char *srv_tstate_name(enum tstate st);
const char *srv_nstate_name(enum drv_node_state st);
bool srv_jstate_final(enum jstate st);
void srv_set_str(char **dst, const char *src);
char *srv_mask_str(uint64_t mask, char *buf, size_t n);  /* "0-7", "0,2,5" */

/* --- state_lock.c: one controller per state directory ---
 * srv_state_lock takes STATE_DIR/lock (s->state_dir set) and writes this
 * pid and listen into it: 0, DRV_ESTATE when another process holds it
 * (err names its pid and address), DRV_EIO. srv_state_lock_listening
 * writes the bound address once known; srv_state_unlock lets go (stop). */
int srv_state_lock(struct drv_server *s, const char *listen, char *err, size_t errsz);
void srv_state_lock_listening(struct drv_server *s, const char *addr);
void srv_state_unlock(struct drv_server *s);

/* --- config.c --- */
int srv_config_load(struct drv_server *s, const char *path, const struct drv_server_opts *o,
		char *err, size_t errsz);
void srv_config_release(struct srv_config *c);
const struct token *srv_config_find_token(const struct srv_config *c, const char *tok);

/* --- state.c: jobs in memory and their lifecycle; all under s->mu --- */
struct srv_job *srv_job_get(struct drv_server *s, uint64_t id);
/* ha.c: the leader lease. srv_ha_start takes it or starts as a standby
 * (the lease thread promotes it later through promote(s)); srv_ha_stop
 * ends the thread and releases a held lease. */
int srv_ha_start(struct drv_server *s, int (*promote)(struct drv_server *s, char *err,
		 size_t errsz), char *err, size_t errsz);
void srv_ha_stop(struct drv_server *s);
void srv_ha_release(struct drv_server *s);
const char *srv_role_name(const struct drv_server *s);
/* A standby's answer to a request other than /healthz and /metrics: 307 to
 * the leader, or 503 while none is known. */
void srv_ha_redirect(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o);
void srv_ha_metrics(struct drv_server *s, struct drv_prom *w);

/* Every job by state, those in the store only included: counts[J_NSTATES]. */
void srv_jobs_by_state(struct drv_server *s, int64_t *counts);
void srv_job_free(struct srv_job *j);
void srv_job_mark(struct drv_server *s, struct srv_job *j);
struct pend_event srv_make_event(const char *type, struct srv_job *j, const char *node,
				 const char *from, const char *to, const char *reason);
void srv_pend_release(struct pend_event *p);
void srv_queue_event(struct drv_server *s, const char *type, struct srv_job *j, const char *node,
		     const char *from, const char *to, const char *reason);
void srv_job_transition(struct drv_server *s, struct srv_job *j, enum jstate to,
			const char *reason);
void srv_active_add(struct drv_server *s, uint64_t id);
void srv_active_remove(struct drv_server *s, uint64_t id);
uint64_t *srv_active_copy(const struct drv_server *s, size_t *n);
/* Node's desired state changed: its version moves and its agent's waiting
 * sync is woken (SRV_KEY_NODE). */
void srv_node_fresh_version(struct drv_server *s, int32_t i);
void srv_node_bump(struct drv_server *s, int32_t node);
void srv_job_bump_nodes(struct drv_server *s, struct srv_job *j);

/* signals.c: a signal to a running job's processes (scancel -s, sbatch
 * --signal). SRV_SIG_BATCH: its batch script's shell (an #SBATCH job) or
 * every task (other jobs); SRV_SIG_STEPS: every process of its steps'
 * tasks. Agents deliver it once per task (assignment signal_seq). */
enum { SRV_SIG_BATCH = 1, SRV_SIG_STEPS = 2 };
void srv_job_signal(struct drv_server *s, struct srv_job *j, int sig, int to);
/* Once a second: jobs whose --signal time before their limit has come. */
void srv_signal_tick(struct drv_server *s, int64_t now);
/* POST /v1/jobs/ID/signal {"signal": N, "to": "steps"|"batch"|"all"}. */
int srv_api_signal(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
double srv_job_gpus(const struct srv_job *j);
/* New jobs, now on disk, join memory and the scheduler. */
void srv_jobs_adopt(struct drv_server *s, struct srv_job **js, size_t n);
/*
 * The priority class a job is handed to the scheduler with: the tenants
 * file's class of the job's priorityClassName, else (no class named,
 * priority 0) its tenant's default class, else NULL (the job's own
 * priority). Borrowed from spec or the config.
 */
const char *srv_job_class(const struct drv_server *s, const struct drv_jobspec *spec);
/* Something the scheduler reads changed: the loop runs a pass
 * sched_delay_ms after the first such kick. */
void srv_sched_kick(struct drv_server *s);
/* A pending decision as a user reads it ("needs 8 GPUs; ..."), times from
 * now. Returns buf. */
const char *srv_pending_text(struct drv_server *s, const struct drv_sched_decision *d, char *buf,
			     size_t n);
/* Why pending job j waits, as shown to users: the scheduler's current reason,
 * else the stored one. May return buf. */
const char *srv_job_reason(struct drv_server *s, const struct srv_job *j, char *buf, size_t n);
/* Its one-word code (CONTRACTS.md section 3): the scheduler's, "None" for a
 * pending job it has not judged yet, NULL when j is not pending. Static. */
/* The Slurm faces' default partition (state_json.c). Under s->mu. */
const char *srv_default_partition(struct drv_server *s);
const char *srv_job_reason_code(struct drv_server *s, const struct srv_job *j);
/* True, with the reason in buf, when job can never run on the cluster as
 * configured (every node that registered or the cluster file names, any
 * state; drv_capacity_check) as of the last srv_capacity_refresh (call it
 * once per request). A server with no node refuses nothing. Under s->mu. */
void srv_capacity_refresh(struct drv_server *s);
bool srv_job_never(struct drv_server *s, const struct drv_job *job, char *buf, size_t n);
/* Pending job j goes to the scheduler, or is held when its tenant's budget
 * is spent (a `budget` hold, lifted by srv_budget_release). */
void srv_job_queue(struct drv_server *s, struct srv_job *j);
/* Held jobs whose tenant may spend again (a new month, a raised budget)
 * go to the scheduler; jobs no longer pending leave the held list. */
void srv_budget_release(struct drv_server *s);
/*
 * Containers (docs/agent.md, "Runtimes"): a task group needs a container
 * runtime when it names an image and no command (the image's entrypoint
 * runs), mounts volumes (hostPath, emptyDir), or asks for one (annotation
 * drover.io/runtime: podman); a script never does. Such a job may run only on nodes whose agent
 * registered the label drover.io/runtime=podman; while no node has it, the
 * job is held pending with reason code RuntimeUnavailable.
 */
#define SRV_RUNTIME_LABEL "drover.io/runtime"
bool srv_run_needs_container(const struct drv_task_run *run);
/* srun --container-image's name (pyxis' [USER@][REGISTRY#]IMAGE[:TAG]) as
 * podman names it (steps.c); NULL and *why when it is none. Caller frees. */
char *srv_step_image_name(const char *in, const char **why);
/* Is path dir or below it (dir "/" holds everything)? */
bool srv_path_under(const char *path, const char *dir);
/* Jobs held for a runtime go to the scheduler once a node offers one. s->mu held. */
void srv_runtime_release(struct drv_server *s);
/* Node i registered with labels: its runtime label is the agent's (a
 * restarted agent may run another runtime). s->mu held. */
void srv_node_runtime_label(struct drv_server *s, int32_t i, json_t *labels);
/*
 * Parents and elements (elements.c; CONTRACTS.md section 2). Under s->mu.
 *
 * srv_elements_expand: when spec is a batch/v1 Job, *js becomes the parent
 * followed by its elements (new jobs, not yet added; the spec is taken)
 * and the count is returned; otherwise 0 and nothing changes.
 * srv_elements_added: ids are set: links elements to their parent.
 * srv_elements_transition: j (a parent or an element) went from -> to:
 * counts, the next elements' turn, the parent's own state.
 * srv_element_retry: element j's pod failed (why): true when it was
 * requeued as a new attempt within the parent's backoffLimit.
 * srv_elements_tick: once a second: Job deadlines.
 * srv_elements_json: a parent's counts and an element's parent and index
 * into the API object o.
 * srv_elements_restored: after a restart: the parents list.
 */
size_t srv_elements_expand(struct drv_server *s, struct drv_jobspec *spec, struct srv_job ***js);
void srv_elements_added(struct drv_server *s, struct srv_job *j);
void srv_elements_transition(struct drv_server *s, struct srv_job *j, enum jstate from,
			     enum jstate to);
bool srv_element_retry(struct drv_server *s, struct srv_job *j, const char *why);
void srv_elements_tick(struct drv_server *s, int64_t now);
void srv_elements_json(struct drv_server *s, const struct srv_job *j, json_t *o);
void srv_elements_restored(struct drv_server *s, struct srv_job *j);
/* POST /v1/apply of parent p's Job with spec ns (canonical canon, both
 * taken on success): only spec.parallelism and spec.suspend may differ
 * (CONTRACTS.md section 4). 0, or -1 with why (nothing changed). */
int srv_elements_update(struct drv_server *s, struct srv_job *p, struct drv_jobspec *ns,
			json_t *canon, char *why, size_t n);
/* Parent p's first pending element (its reason is the parent's), or NULL. */
struct srv_job *srv_parent_first_pending(struct drv_server *s, const struct srv_job *p);
/*
 * Dependencies (deps.c; CONTRACTS.md section 4). Under s->mu.
 * srv_deps_refuse: -1 with why when spec names a job that does not exist
 * (Slurm's "Job dependency problem"), else 0.
 * srv_deps_gate: pending job j (in memory) has dependencies: it waits for
 * them (dep_wait), off the scheduler, with its reason.
 * srv_deps_tick: once a second: waiting jobs whose dependencies are
 * satisfied go to the scheduler; ones never satisfiable say so (or are
 * cancelled, with kill_invalid_depend).
 */
int srv_deps_refuse(struct drv_server *s, const struct drv_jobspec *spec, char *why, size_t n);
void srv_deps_gate(struct drv_server *s, struct srv_job *j);
void srv_deps_tick(struct drv_server *s, int64_t now);
void srv_deps_free(struct srv_job *j);
/* -1 with why when spec's Slurm partitions (-p a,b) name a pool the
 * cluster does not have (a cluster with no pool yet refuses nothing). */
int srv_partition_refuse(struct drv_server *s, const struct drv_jobspec *spec, char *why,
			 size_t n);
/* Resumes suspended parent j (its `suspend` hold): elements take their
 * turns, the deadline counts from now. False when j is not suspended. */
bool srv_elements_resume(struct drv_server *s, struct srv_job *j, const char *why);
/* Cancels job j (not final) with reason why: stops its tasks or takes it
 * from the scheduler (jobs_api.c's cancel, and a parent's end). */
void srv_job_cancel(struct drv_server *s, struct srv_job *j, const char *why);
/* All tasks of j have ended: releases resources, requeues or finishes. */
void srv_job_released(struct drv_server *s, struct srv_job *j);
/* Stops the job's running tasks; reason for the agents. */
void srv_job_stop_tasks(struct drv_server *s, struct srv_job *j, const char *reason);
/* A task's process ended or never ran: updates the job; may finish it. */
void srv_task_ended(struct drv_server *s, struct srv_job *j, int32_t rank);
/* Job steps' lifecycle (the rest is steps.c): srv_steps_free forgets them
 * (a new attempt); srv_steps_stop tells every task not ended to stop
 * (why); srv_steps_ended: every step task is gone; srv_steps_node_lost:
 * the step tasks on node count as gone (lost). */
void srv_steps_free(struct srv_job *j);
void srv_steps_stop(struct drv_server *s, struct srv_job *j, const char *why);
bool srv_steps_ended(const struct srv_job *j);
/* The job's steps as its API JSON lists them ("steps"; docs/api.md). */
json_t *srv_steps_summary(const struct srv_job *j);
void srv_steps_node_lost(struct drv_server *s, struct srv_job *j, int32_t node, const char *why);
/* An #SBATCH job's batch task: the first rank on the first of its nodes in
 * Slurm's order (the batch host), which runs the script; -1 for a job of
 * another format. srv_task_held: rank only holds its share of the
 * allocation for steps, it runs nothing itself. */
int32_t srv_job_batch_rank(const struct drv_server *s, const struct srv_job *j);
bool srv_task_held(const struct drv_server *s, const struct srv_job *j, int32_t rank);
/* Requeue after a node failure (whole gang) or fail past the retry limit. */
void srv_job_requeue_node_down(struct drv_server *s, struct srv_job *j, const char *node,
			       const char *why);
void srv_ring_push(struct drv_server *s, int64_t seq, uint64_t job, const char *user, json_t *ev);
/* A finished job whose final record is on disk leaves memory (the
 * committer calls it); reads of it then go to the store (jobs_store.c).
 * While a listing reads the store unlocked it is put off to the end of
 * the last such read (srv_job_evict_deferred). */
void srv_job_evict(struct drv_server *s, struct srv_job *j);
void srv_job_evict_deferred(struct drv_server *s);
/* Accounting: the row of j's attempt ending now (or, for a running one,
 * as if it ended at `now`) into a (strings borrowed from j and the cluster). */
/* efficiency.c: the job's efficiency (seff: GPU utilisation and memory
 * high-water mark per GPU and in all, CPU and memory efficiency) from its
 * tasks' usage, as docs/api.md's `efficiency`; NULL when no agent has
 * said anything yet. A new reference. srv_task_set_usage keeps u (may be
 * NULL: nothing) on t. */
json_t *srv_job_efficiency(struct drv_server *s, struct srv_job *j, int64_t now);
void srv_task_set_usage(struct srv_task *t, const struct drv_proto_usage *u);
/* Keeps what c says of t's container (the fields it has). */
void srv_task_set_container(struct srv_task *t, const struct drv_proto_container *c);
void srv_acct_row(struct drv_server *s, struct srv_job *j, const char *state, int64_t now,
		  struct drv_store_acct *a);
/* Queues j's ended attempt's accounting row for the next flush. */
void srv_acct_attempt_ended(struct drv_server *s, struct srv_job *j, const char *state);
void srv_wacct_release(struct wacct *w);


/* --- state_json.c: the store's documents and the API's forms (new references) --- */
json_t *srv_job_store_doc(struct drv_server *s, struct srv_job *j);
json_t *srv_job_api_json(struct drv_server *s, struct srv_job *j, bool detail);
/* Appends the text of srv_job_api_json(s, j, false), dumped with
 * DRV_HTTP_JSON_FLAGS, to b; kept in j->memo between calls while it stays
 * the same (a pending job never placed: see state_json.c). Under s->mu. */
void srv_job_api_text(struct drv_server *s, struct srv_job *j, struct drv_dynbuf *b);
void srv_api_memo_free(struct srv_api_memo *m);
json_t *srv_node_store_doc(struct drv_server *s, int32_t i);
json_t *srv_node_api_json(struct drv_server *s, int32_t i);

/* --- slurm_env.c --- */

/* Adds the SLURM_* variables of task rank of j (from an #SBATCH script)
 * to a's env, before the job's own; returns the buffer their values live
 * in (the caller frees it after encoding a). Caller holds s->mu; call
 * after a's node_rank and local_rank are set. */
char *srv_slurm_env(struct drv_server *s, const struct srv_job *j, int32_t rank,
		    struct drv_proto_task *a);
/* The same for task rank of step st, after a's env (srun's): the job's
 * variables, then the step's (SLURM_STEP_*, SLURM_PROCID, ...). */
/* The batch step's working directory and -o/-e files (patterns expanded,
 * absolute), open mode and umask into a, for a job whose client said where
 * it was submitted (slurm.submitDir); rank must be the batch rank. Returns
 * the buffer a's strings live in (caller frees), or NULL: nothing set. */
char *srv_slurm_batch_io(struct drv_server *s, const struct srv_job *j, int32_t rank,
			 struct drv_proto_task *a);
char *srv_slurm_step_env(struct drv_server *s, const struct srv_job *j,
			 const struct srv_step *st, int32_t rank, struct drv_proto_task *a);
/* The most nodes a job's Slurm variables and steps consider. */
#define SRV_MAX_JOB_NODES 256
/* j's nodes (indexes), each once, in Slurm's order (drv_hostname_cmp);
 * returns how many (at most cap). */
size_t srv_job_nodes(const struct drv_server *s, const struct srv_job *j, int32_t *nodes,
		     size_t cap);
/* node's place in that list (SLURM_NODEID), -1 when j has no task there. */
int32_t srv_job_node_index(const struct drv_server *s, const struct srv_job *j, int32_t node);
/* Slurm tasks each of those nodes holds (SLURM_TASKS_PER_NODE) into slots. */
void srv_job_slots(const struct srv_job *j, const int32_t *nodes, size_t nn, int *slots);
/* SLURM_NTASKS of the job: -n, else nodes x --ntasks-per-node; 0: not set. */
int32_t srv_job_slurm_ntasks(const struct srv_job *j, const int *slots, size_t nn);

/* --- steps.c: job steps (srun) --- */
/* "42.s0.3" -> job 42, step 0, rank 3 (a step task's id); false otherwise. */
bool srv_step_task_ref(const char *tid, uint64_t *job, int32_t *step, int32_t *rank);
/* Does node i still want step task (tid, epoch)? */
bool srv_step_wanted(struct drv_server *s, int32_t i, const char *tid, int64_t epoch);
/* A report of a step task from node i: 0, or -1 when (tid, epoch) is stale. */
int srv_step_report(struct drv_server *s, int32_t i, const struct drv_proto_report *rep);
/* Task rank of j's step, for its logs; NULL when there is none. */
const struct srv_task *srv_step_log_task(struct drv_server *s, struct srv_job *j, int64_t step,
					 int64_t rank);
int srv_api_step_create(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_steps(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_step(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_step_cancel(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_step_attach(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);

/* --- nodes.c: nodes and the cluster --- */
int srv_cluster_setup(struct drv_server *s, const char *cluster_file, char *err, size_t errsz);
int srv_node_add(struct drv_server *s, const char *name, int model, int ngpus, int64_t cpu,
		 int64_t mem, json_t *labels);
int32_t srv_node_find(struct drv_server *s, const char *name);
/* Node i is to be written at the next flush (its dirty flag, and the
 * list srv_enqueue takes). Caller holds s->mu. */
void srv_node_mark(struct drv_server *s, int32_t i);
/* The heartbeat timeout marks a silent node down; agent_lease_s + 5 s
 * after the last reply sent to it, its gangs are requeued (their tasks
 * there have surely stopped: the agent and each task's shim stop them
 * when the lease ends). Caller holds s->mu; the loop calls it. */
void srv_nodes_check_liveness(struct drv_server *s);
/* Stops every job with a running task on node i (an admin drain), each
 * requeued once its tasks are gone; why: "drained by USER[: REASON]".
 * Their ids appended to ids. s->mu held. */
void srv_node_stop_jobs(struct drv_server *s, int32_t i, const char *why, json_t *ids);
/* The lease margin: the controller waits agent_lease_s plus this. */
#define SRV_LEASE_MARGIN_MS 5000
void srv_node_set_state(struct drv_server *s, int32_t i, enum drv_node_state st,
			const char *reason);
/* Node i's whole GPUs: allocated (anything on them), free (nothing on them,
 * node up) and unavailable (nothing on them, node down or draining), so
 * that total = allocated + free + unavailable everywhere they are shown.
 * Adds node i's counts to c (callers sum over nodes). */
struct srv_gpu_count {
	int64_t total, allocated, free, unavailable;
};
void srv_node_gpus(const struct drv_server *s, int32_t i, struct srv_gpu_count *c);

/* --- restore.c: nodes, then unfinished jobs, from the store at start --- */
int srv_restore(struct drv_server *s, char *err, size_t errsz);
/* st's finished jobs by state into counts[J_NSTATES] (its mutex held, or
 * the store not shared yet). */
int srv_store_count_done(struct drv_store *st, int64_t *counts);
/* A job built from its stored row (not joined to memory; caller frees with
 * srv_job_free), or NULL when its record does not load (logged). restoring:
 * tasks on nodes not known are kept (the node is added, down); else they
 * are left out. Under s->mu. */
struct srv_job *srv_job_from_row(struct drv_server *s, const struct drv_store_job *row,
				 bool restoring);

/* --- jobs_store.c: finished jobs, read from the store ---
 * srv_job_lookup: job id in memory (*tmp NULL), else read from the store
 * into *tmp (the caller frees it), else NULL. Called under s->mu, which it
 * releases while it reads the store.
 * srv_jobs_page: the jobs of a listing: those matching q in memory and, for
 * ids not in memory, in the store, by id, at most q->limit; *more when a
 * further page exists (then *last is the id to ask after). The items go
 * into items as JSON text, comma-separated (srv_job_api_text). Under s->mu (released while reading the store); match
 * decides for jobs in memory. */
struct srv_job *srv_job_lookup(struct drv_server *s, uint64_t id, struct srv_job **tmp);
void srv_jobs_page(struct drv_server *s, const struct drv_store_job_query *q,
		   bool (*match)(struct srv_job *j, void *cls), void *cls, struct drv_dynbuf *items,
		   bool *more, uint64_t *last);
/* Runs fn with s->mu released and the store's mutex held: the writer
 * (s->store) when write, else the reader (s->rstore); rc, and the store's
 * message in err. */
int srv_store_call(struct drv_server *s, bool write, int (*fn)(struct drv_server *, void *),
		   void *cls, char *err, size_t errsz);
/* Purges finished jobs past the retention time (a batch at a time). Under
 * s->mu, released meanwhile. */
void srv_purge_old_jobs(struct drv_server *s);
/* After srv_cost_restore at start: adds this month's cost of the jobs not
 * in memory (their accounting rows) to each tenant's month spend. */
int srv_acct_month_restore(struct drv_server *s);

/* --- commit.c ---
 * srv_enqueue hands everything dirty to the committer and returns the
 * ticket to wait for; srv_wait waits for it (mu released meanwhile): 0, or
 * DRV_EIO when its group failed (then it is dirty again). srv_flush = both.
 * All under mu. */
uint64_t srv_enqueue(struct drv_server *s);
int srv_wait(struct drv_server *s, uint64_t ticket);
int srv_flush(struct drv_server *s);
/*
 * Queues new jobs (not yet in memory; js is copied, the jobs are taken)
 * with their first event and returns the ticket. Once written, the
 * committer adds them to memory (srv_jobs_adopt); if the write fails it
 * frees them, so a failed submit leaves nothing.
 */
uint64_t srv_commit_new_jobs(struct drv_server *s, struct srv_job **js, size_t n);
/* Adds w (taken) to the batch of ticket while it is still queued (so it is
 * written in the same transaction), else to a batch of its own; returns
 * the ticket to wait for. */
uint64_t srv_commit_idem(struct drv_server *s, uint64_t ticket, struct widem *w);
void srv_widem_release(struct widem *w);
/* 1 while ticket is not yet processed, 0 once on disk, DRV_EIO if its group failed. */
int srv_ticket_state(const struct drv_server *s, uint64_t ticket);
void *srv_commit_main(void *arg);

/*
 * Keys of deferred replies (drv_http_wait_on): a reply waiting for the disk
 * waits on SRV_KEY_COMMIT, woken after every group commit; an agent's sync
 * waiting for its node's desired state waits on SRV_KEY_NODE(i), woken
 * when node i's version, session or registration changes. Everything else
 * (watchers) is woken by every drv_http_wake().
 */
#define SRV_KEY_COMMIT 1ull
#define SRV_KEY_NODE(i) ((2ull << 56) | (uint64_t)(uint32_t)(i))

/* --- idem.c: Idempotency-Key on POST /v1/jobs, /v1/jobs/batch, /v1/apply ---
 * A create handler calls srv_idem_begin first (not under s->mu): 1 when r
 * is answered there (400 for a bad key; 409 when the key went with another
 * request, or its first request is still being handled; else the first
 * answer again with Idempotent-Replayed: true, deferred until it is on
 * disk), 0 to go on, with q claiming the key (q->on) when one came. Under
 * s->mu, once it filled o and has the ticket of what it wrote (0: none),
 * it calls srv_idem_end: a 2xx answer is kept with the key and written in
 * the same transaction as that ticket's batch; returns the ticket to
 * answer after. srv_idem_cancel (not under s->mu) drops a claim that did
 * not end so (an error answer) and releases q; a no-op after srv_idem_end.
 */
struct srv_idem_req {
	bool on;
	char *user, *key;
	char fp[65];
};
int srv_idem_begin(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		   const char *route, struct srv_idem_req *q);
uint64_t srv_idem_end(struct drv_server *s, struct srv_idem_req *q,
		      const struct drv_http_resp *o, uint64_t ticket);
void srv_idem_cancel(struct drv_server *s, struct srv_idem_req *q);
/* Deletes keys older than idempotency_ttl_s from the store (the loop, under
 * s->mu, released meanwhile); frees the table at stop. */
void srv_idem_purge(struct drv_server *s);
void srv_idem_release(struct drv_server *s);
#define SRV_IDEM_KEY_MAX 255

/* GET /v1/jobs and /v1/queue: items in a page by default, and at most
 * (jobs_api.c). 100, not 1,000: a page of 1,000 jobs is about 450 KB of
 * JSON and 90 M instructions to build and dump, which 1,000 clients asking
 * at once made a p99 of 44 s (drover bench api, clients_1000) */
#define SRV_PAGE_DEFAULT 100
#define SRV_PAGE_MAX 10000

/* --- durable.c ---
 * Answers r with the reply the handler left in its resp once ticket is on
 * disk, or with 503 "<fail_prefix>the state store cannot write (...)" if it
 * failed; no thread waits meanwhile. Under mu or not. */
void srv_reply_when_durable(struct drv_server *s, struct drv_http_req *r, uint64_t ticket,
			    const char *fail_prefix);

/* --- logs_fetch.c ---
 * Where a task's logs are, and which bytes. */
struct srv_logs_req {
	char *url, *tok;           /* the agent's; owned */
	const char *ca;            /* the CA its https is checked against (the server's) */
	char path[256];
	char nodename[DRV_NAME_MAX * 2];
	int64_t offset;
};
/* Answers r with the agent's reply to q (taken), fetched on a thread of
 * its own while r waits deferred. Not under mu. */
void srv_logs_fetch(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		    struct srv_logs_req *q);
/* Waits until no fetch thread runs (at stop, after the HTTP server). */
void srv_logs_drain(struct drv_server *s);
/*
 * exec in a running task (kube_exec.c), for kubectl exec and drover exec:
 * srv_exec_proto is the subprotocol r offers (v5.channel.k8s.io, else
 * v4), NULL when r is no WebSocket or offers neither. srv_exec_answer
 * (under s->mu; task rk of j is running on a node with an agent; r offers
 * a protocol) answers r with the switch and relays its frames to the
 * agent's exec of cmd (Kubernetes' query flags stdin, stdout, stderr,
 * tty, read from r) on a thread of its own; what names the task in
 * messages ("pod NAME").
 */
const char *srv_exec_proto(struct drv_http_req *r);
void srv_exec_answer(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		     const struct srv_job *j, int32_t rk, const char *what, json_t *cmd);
/* The same relay to any WebSocket route of node's agent: path (taken) with
 * its query; in: the client sends stdin (v5 only); an agent's 404 (the
 * task not started there yet) is retried for retry_ms. Under s->mu. */
void srv_agent_ws_answer(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
			 int32_t node, const char *what, char *path, bool in, int64_t retry_ms);

/* --- jobs_api.c / nodes_api.c / agent_api.c / watch.c --- */
extern const struct drv_http_route srv_routes[];
int srv_api_submit(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_batch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_apply(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_jobs(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_job(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_cancel(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_release(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_hold(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_requeue(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_job_patch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_logs(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_exec(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_queue(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_nodes(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_node(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_drain(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_resume(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_whoami(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_cluster(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
/* What a submit does, for the Kubernetes face (kube_write.c): the owner,
 * defaults and the tenants file's checks of spec (0, or -1 with a 403 in
 * resp); a job made of spec (moved); and adding jobs (ids assigned, taken,
 * under s->mu): the ticket to answer after. */
int srv_job_own(struct drv_server *s, struct caller *c, struct drv_jobspec *spec,
		struct drv_http_resp *resp);
struct srv_job *srv_job_new(struct drv_jobspec *spec);
uint64_t srv_jobs_add(struct drv_server *s, struct srv_job **js, size_t n, const char *by);
/* server_metrics.c: a job of tenant waited secs from submit to running;
 * every histogram freed (at stop). s->mu held. */
void srv_wait_observe(struct drv_server *s, const char *tenant, double secs);
void srv_waits_release(struct drv_server *s);
int srv_api_prometheus_targets(struct drv_http_req *r, struct drv_http_resp *o, void *ctx); /* prom_sd.c */
int srv_api_watch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_healthz(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_metrics(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_api_acct(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_agent_register(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_agent_sync(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);

/* --- loop.c --- */
void *srv_loop_main(void *arg);

/* --- server_metrics.c: the /metrics page, under s->mu --- */
void srv_render_metrics(struct drv_server *s, struct drv_prom *w);

#define ROUTE_OPEN 1u   /* /healthz, /metrics */
#define ROUTE_USER 2u
#define ROUTE_ADMIN 4u
#define ROUTE_AGENT 8u
#define ROUTE_JOB 16u   /* a job token of the job in its "{}" is taken too */
#define ROUTE_KUBE 32u  /* the Kubernetes face: refusals as Status objects */

/* --- job_token.c: DROVER_JOB_TOKEN, credentials scoped to one job --- */
#define SRV_JOB_TOKEN_MAX 112
/* STATE_DIR/job-token.key into s->job_key (made 0600 on first start). */
int srv_job_key_load(struct drv_server *s, char *err, size_t errsz);
/* The token of job id's attempt into out (SRV_JOB_TOKEN_MAX). */
void srv_job_token(const struct drv_server *s, uint64_t id, int32_t attempt, char *out,
		   size_t n);
/* Whether tok is shaped as a job token (then srv_job_auth decides). */
bool srv_job_token_like(const char *tok);
/* The filter for a job token: 0 with the request's caller set, or 1 with
 * 401 (not ours, or that attempt is over) or 403 (not its job's route) in
 * o. Takes s->mu. */
int srv_job_auth(struct drv_server *s, struct drv_http_req *r, const struct drv_http_route *rt,
		 const char *tok, struct drv_http_resp *o);
/* At stop: the callers made for job tokens, and the key. */
void srv_job_callers_free(struct drv_server *s);

#endif
