/*
 * proto.h: the agent protocol of docs/api.md ("Agent protocol") as types.
 * This header is the source of truth for every message an agent and the
 * controller exchange; docs/api.md shows their JSON. src/proto/proto.c
 * holds the encoders and decoders, and nothing else in drover builds or
 * reads a protocol message (src/server/agent_api.c, src/agent/agent_*.c,
 * the benches and tests go through here).
 *
 * Messages:
 *   agent -> controller            controller -> agent
 *   struct drv_proto_register      struct drv_proto_registered   POST /v1/agent/register
 *   struct drv_proto_sync          struct drv_proto_sync_reply   POST /v1/agent/sync
 * and their parts: a task assignment (struct drv_proto_task), a task
 * report (struct drv_proto_report), a GPU's health (struct
 * drv_proto_gpu_health), a (task_id, epoch) reference (struct
 * drv_proto_ref).
 *
 * Growing the protocol (../shared/CONTRACTS.md §8): a new field goes
 * here first, with its encode/decode and a round-trip test in
 * tests/unit/test_proto.c. A field an older peer may not send is optional
 * (with a default below); only what the protocol cannot work without is
 * required. A change older agents cannot follow bumps DRV_PROTO_VERSION;
 * the controller refuses (409, naming both versions) an agent whose
 * version is more than one apart from its own.
 *
 * Decoding is strict about what is required and tolerant of the rest:
 *   - a missing required key, or a key of the wrong type (required or
 *     not), fails the decode with DRV_EINVAL and dec->err naming the key's
 *     path and what was expected: "tasks[2].epoch: expected an integer,
 *     found a string";
 *   - an unknown key is ignored, and logged through dec->log once per key
 *     path and peer (see struct drv_proto_seen);
 *   - a nullable string key ("image": null) is the same as an absent one.
 *
 * Ownership. A decoded message borrows: its strings point into the JSON
 * document it was read from, which the message holds (->doc, one
 * reference) until drv_proto_*_release(); its arrays are allocated and
 * freed by release too. A message the caller fills to encode owns
 * nothing the encoder cares about: strings are copied into the JSON, and
 * release only frees arrays allocated with drv_calloc (and the doc, NULL
 * there). Encoders return a new reference; they never fail.
 *
 * Thread rules: the functions keep no state; a struct drv_proto_seen may
 * be shared by threads (it has its own lock).
 */
#ifndef DROVER_PROTO_H
#define DROVER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "drover/common.h"

/*
 * The versions (docs/ha.md, "Rolling upgrade"):
 *   1: register + one sync exchange per agent; the controller refuses an
 *      agent more than one version apart (409).
 *   2: the register answer names the controller's version ("protocol";
 *      absent: 1), and the agent refuses, in turn, a controller more than
 *      one apart: the check is made on both sides. A version 1 peer
 *      ignores the key (unknown keys are ignored).
 * DRV_PROTO_MIN is the oldest version there is: an agent below it is
 * refused as one too far apart.
 */
#define DRV_PROTO_VERSION 2
#define DRV_PROTO_MIN 1

/* ---------------------------------------------------------------------------
 * Decoding context
 */

/* The unknown keys already logged, per peer (capped: past the cap nothing
 * more is logged). Create with drv_proto_seen_new, free with _free. */
struct drv_proto_seen;
struct drv_proto_seen *drv_proto_seen_new(void);
void drv_proto_seen_free(struct drv_proto_seen *s);

struct drv_proto_dec {
	const char *peer;            /* who sent it ("node-a", "controller"); may be NULL */
	struct drv_proto_seen *seen; /* NULL: every unknown key is logged each time */
	/* receives "PEER: unknown key PATH ignored" lines; NULL: silent */
	void (*log)(void *cls, const char *line);
	void *log_cls;
	char err[256];               /* why the decode failed */
};

/* ---------------------------------------------------------------------------
 * Parts
 */

/* A name=value pair of labels or env, in the order the JSON object gives. */
struct drv_proto_kv {
	const char *name;
	const char *value;
};

/*
 * What a task has used so far (a sync's task states) or in all (its end
 * report), for the job's efficiency (seff): CPU time, the memory
 * high-water mark of its cgroup, and per GPU the mean utilisation and the
 * framebuffer high-water mark over the agent's samples. On a GPU shared
 * with other tasks each reading is the task's share (its gpu_milli over
 * the sum of the running tasks' on that GPU), so sums over tasks never
 * count a GPU twice. Optional: a decoded usage is allocated (gpus too) and
 * freed by its message's release, as an encoder's caller allocates it.
 */
struct drv_proto_gpu_use {
	int64_t gpu;                 /* index on the node; required */
	double util_pct;             /* mean, 0..100 */
	int64_t mem_max_mib;         /* framebuffer high-water mark */
	int64_t samples;             /* readings behind them */
};

struct drv_proto_usage {
	double cpu_s;                /* CPU time, user + system; < 0 unknown */
	int64_t mem_max_mib;         /* memory high-water mark; < 0 unknown */
	struct drv_proto_gpu_use *gpus;
	size_t ngpus;
};

/*
 * (task_id, epoch) and what is said about it. task_id and epoch are
 * required; the rest optional and only encoded when set:
 *   pid     register's running list (0: absent)
 *   state   a sync's task states ("running"); register's list: "running",
 *           or "exited" for a task that ended and whose end is not yet
 *           acknowledged (its report follows in the next sync)
 *   reason  a sync reply's stale list ("stale epoch")
 */
/* A container task as its agent runs it (docs/agent.md, "Runtimes"): the
 * container's name, the podman command that creates it (no env values:
 * those are in its env file) and where its image pull stands ("pulled
 * (attempt 1 of 3)", "present, not pulled (imagePullPolicy Never)",
 * "pulling (attempt 2 of 3)", "failed: ..."). Each NULL when absent. */
struct drv_proto_container {
	const char *name;
	const char *command;
	const char *image_pull;
};

struct drv_proto_ref {
	const char *task_id;
	int64_t epoch;
	int64_t pid;
	const char *state;
	const char *reason;
	struct drv_proto_usage *usage;  /* a sync's running task: what it used so far; NULL absent */
	struct drv_proto_container container;  /* a container task's (all NULL: none) */
};

/* One GPU of a register's inventory. index and model required. */
struct drv_proto_gpu {
	int64_t index;
	const char *uuid;
	const char *model;           /* NVML name, or any catalog name or alias */
	int64_t memory_mib;          /* 0: unknown */
	const char *pci_bus_id;
};

/* One NIC of a register's topology. name required. */
struct drv_proto_nic {
	const char *name;
	const char *link_layer;      /* "InfiniBand", "Ethernet" */
	const char *state;           /* "ACTIVE" */
	int64_t rate_gbps;
	int64_t *near_gpus;
	size_t nnear;
};

/* One GPU's health in a sync. index and healthy required; the rest
 * optional: -1 (power_w: a NaN) when absent. */
struct drv_proto_gpu_health {
	int64_t index;
	bool healthy;
	int64_t xid;
	int64_t ecc_uncorrected;
	int64_t temperature_c;
	int64_t utilization;
	int64_t memory_used_mib;
	double power_w;
};

enum drv_proto_task_state {
	DRV_PROTO_RUNNING,           /* the process started */
	DRV_PROTO_EXITED,            /* it ended: exit_code, or signal; oom_killed */
	DRV_PROTO_FAILED,            /* it could not start: reason */
};

/* A task report. task_id, epoch and state required. */
struct drv_proto_report {
	const char *task_id;
	int64_t epoch;
	enum drv_proto_task_state state;
	int64_t pid;                 /* running: 0 absent */
	const char *time;            /* RFC 3339, when the agent saw it */
	int64_t exit_code;           /* exited: -1 absent (a signal ended it) */
	int64_t signal;              /* exited: 0 none */
	const char *signal_name;     /* "SIGKILL" */
	bool oom_killed;
	bool timed_out;              /* exited: stopped at the job's time limit */
	/* exited: stopped by drover's fencing (the agent's lease ran out), not
	 * by anything the task did: the controller treats it as the loss of
	 * the node, not as the task's failure. false when absent. */
	bool fenced;
	const char *reason;          /* failed: why; exited: why it was stopped */
	/* failed: it never started through no fault of the job (the node's
	 * prolog failed): the controller requeues the job as for a lost node
	 * (counted against retry_limit, so a prolog failing everywhere cannot
	 * requeue it forever). false when absent. */
	bool requeue;
	/* the node should be drained, for this reason (a site prolog or
	 * epilog failed, as Slurm drains); NULL absent */
	const char *drain;
	struct drv_proto_usage *usage; /* exited: what it used in all; NULL absent */
	struct drv_proto_container container;  /* a container task's (all NULL: none) */
};

/* A peer of a gang, by rank. */
struct drv_proto_peer {
	int64_t rank;
	const char *node;
	const char *address;
};

/* A volume a container task mounts. type and container_path required. */
struct drv_proto_mount {
	const char *name;            /* the volume's */
	const char *type;            /* "hostPath" or "emptyDir" */
	const char *host_path;       /* hostPath */
	const char *container_path;
	const char *sub_path;        /* NULL: the whole volume */
	bool read_only;
	bool memory;                 /* emptyDir medium Memory: a tmpfs */
	int64_t size_mib;            /* its sizeLimit; 0 none */
};

/* One file of a volume: a key of a Secret or ConfigMap. */
struct drv_proto_file {
	const char *path;            /* below the volume's directory; no "..", no leading / */
	int64_t mode;                /* file mode; default 0644 (0600 for a secret) */
	const char *data;            /* the bytes, base64 (RFC 4648) */
};

/*
 * A volume of a task (docs/kubernetes.md, "Secrets and ConfigMaps"): files
 * the agent writes under the task's directory, volumes/NAME/, before it
 * starts the task; a runtime that can mount (a container runtime) mounts
 * that directory at mount_path (or, with sub_path, that one file there),
 * read-only when read_only. The host runtime cannot mount: the task finds
 * the directory in $DROVER_VOLUME_<NAME> (upper case, '-' and '.' as '_').
 * Required: name, mount_path.
 */
struct drv_proto_volume {
	const char *name;
	const char *mount_path;      /* absolute, inside the task's view */
	const char *sub_path;        /* NULL: the whole directory */
	bool read_only;              /* default true */
	bool secret;                 /* a Secret's: files 0600, the directory 0700 */
	struct drv_proto_file *files;
	size_t nfiles;
};

/*
 * One task the controller wants on the node: an element of the task set
 * (docs/api.md, "POST /v1/agent/sync").
 * Required: task_id, job_id, epoch, desired. The rest are optional; the
 * defaults are what the agent assumes when they are absent.
 */
struct drv_proto_task {
	const char *task_id;         /* "JOB.RANK" */
	int64_t job_id;
	const char *job_name;
	int64_t epoch;
	bool stop;                   /* "desired": "stop" (else "run") */
	const char *stop_reason;     /* with stop: cancelled, preempted, ... */
	const char *user;            /* run as this user (agent as root) */
	const char *runtime;         /* "host" (default), or "podman": the task needs a
				      * container of image (docs/agent.md, "Runtimes") */
	const char *image;
	const char *container;
	const char **argv;           /* command then args; no shell */
	size_t nargv;
	/* How many of argv are the Kubernetes command (the image's ENTRYPOINT
	 * when a container runs it); the rest are args (its CMD). -1 (absent):
	 * all of argv is the command. */
	int64_t command_len;
	/* imagePullPolicy: "Always", "IfNotPresent", "Never"; NULL (absent):
	 * Kubernetes' default by tag (Always for :latest or no tag). */
	const char *pull_policy;
	struct drv_proto_mount *mounts;  /* a container's volumes */
	size_t nmounts;
	int64_t shm_mib;             /* a container's /dev/shm; 0 (absent): the agent's default */
	bool host_ipc;               /* the host's IPC namespace (no /dev/shm sizing) */
	/* securityContext: run as this uid / gid instead of the user's (-1,
	 * absent: the user's); runAsNonRoot: refuse to start it as uid 0 */
	int64_t run_as_uid;
	int64_t run_as_gid;
	bool run_as_non_root;
	const char *script;          /* a batch script, run with /bin/sh FILE */
	const char *workdir;
	struct drv_proto_kv *env;    /* applied on top of what the agent sets */
	size_t nenv;
	struct drv_proto_volume *volumes; /* Secrets and ConfigMaps as files */
	size_t nvolumes;
	int64_t *gpus;               /* GPU indexes on the node */
	size_t ngpus;
	int64_t gpu_milli;           /* default 1000 */
	int64_t cpu_milli;           /* 0: no limit */
	int64_t mem_mib;             /* 0: no limit */
	int64_t rank;                /* default 0 */
	int64_t world_size;          /* default 1 */
	int64_t local_rank;          /* default 0 */
	int64_t local_world_size;    /* default 1 */
	int64_t node_rank;           /* default 0 */
	int64_t nnodes;              /* default 1 */
	const char *master_addr;     /* NULL: the agent's own address */
	int64_t master_port;         /* default 29500 */
	struct drv_proto_peer *peers;
	size_t npeers;
	int64_t time_limit_s;        /* 0: none */
	int64_t grace_s;             /* -1 (absent): the agent's --grace */
	int64_t output_max_bytes;    /* per output file (stdout, stderr); 0 (absent): no cap */
	/* A Slurm batch step's --output/--error, patterns expanded (relative:
	 * to workdir), opened by the task's user; stderr_file NULL: stdout's
	 * file takes both. NULL stdout_file: the agent's own log files. */
	const char *stdout_file;
	const char *stderr_file;
	bool open_append;            /* --open-mode=append (or a requeued job's) */
	int64_t umask;               /* the task's umask; -1 (absent): the agent's */
	/* The last signal sent to the task (scancel -s, sbatch --signal): the
	 * agent delivers each signal_seq once, to the task's main process
	 * (a batch shell) or with signal_group to its whole process group.
	 * 0 (absent): none. */
	int64_t signal;
	int64_t signal_seq;
	bool signal_group;
	/* srun --pty: the task's stdin, stdout and stderr are a pseudo-terminal
	 * of pty_rows x pty_cols (0: the kernel's default) whose other end the
	 * agent keeps for GET /v1/tasks/ID/attach. false (absent): /dev/null
	 * and the log files. */
	bool pty;
	int64_t pty_rows;
	int64_t pty_cols;
};

/* ---------------------------------------------------------------------------
 * Messages
 */

/* POST /v1/agent/register. protocol and name required. */
struct drv_proto_register {
	int64_t protocol;            /* DRV_PROTO_VERSION of the agent */
	const char *name;            /* the node name */
	const char *hostname;
	const char *address;         /* NULL: the controller uses the peer address */
	const char *agent_url;       /* NULL: no metrics or logs */
	const char *metrics_url;     /* where /metrics is when not at agent_url
				      * (--metrics-listen); NULL: at agent_url, if any */
	bool no_metrics;             /* --metrics-listen none: no /metrics anywhere */
	const char *version;         /* the agent's release, "0.1.0" */
	const char *backend;         /* "nvml", "fake" */
	struct drv_proto_kv *labels;
	size_t nlabels;
	int64_t cpu_milli;
	int64_t mem_mib;
	struct drv_proto_gpu *gpus;
	size_t ngpus;
	/* topology: gpu_matrix[i][j] is what nvidia-smi topo -m prints for
	 * GPUs i and j ("X", "NV18", "PIX", ...); row i has matrix_len[i] cells */
	const char ***gpu_matrix;
	size_t *matrix_len;
	size_t nmatrix;
	struct drv_proto_nic *nics;
	size_t nnics;
	struct drv_proto_ref *running;  /* tasks running now: task_id, epoch, pid */
	size_t nrunning;
	json_t *doc;
};

/* Its 200 answer. node and session required. */
struct drv_proto_registered {
	const char *node;
	int64_t session;
	int64_t heartbeat_interval_s;   /* default 5 */
	int64_t heartbeat_timeout_s;    /* default 30 */
	/* The agent's lease (server setting agent_lease_s): an agent that has
	 * had no successful exchange for this long stops its tasks, and so
	 * does each task's shim (docs/agent.md, "Leases"). 0 (absent): none,
	 * as an older controller says. Also in every sync reply. */
	int64_t agent_lease_s;
	/* The server setting: false (or absent) and a task would run as root
	 * (a root agent with --run-as-self, or user root): the agent fails it. */
	bool allow_root_tasks;
	/* The server setting open_endpoints false: the agent's /metrics and
	 * /healthz then need the cluster token too. On the wire
	 * "open_endpoints": false, sent only then (absent: open, as an older
	 * controller says). Also in every sync reply. */
	bool endpoints_closed;
	const char *pool;
	struct drv_proto_kv *labels;
	size_t nlabels;
	/* The controller's protocol version (2 and later send it); 0 (absent):
	 * a version 1 controller. */
	int64_t protocol;
	json_t *doc;
};

/*
 * POST /v1/agent/sync: everything an agent says, on its one connection.
 * node, session and version required; tasks, reports and gpus default to
 * empty. version is the last task-set version the agent applied (0 at
 * first); the controller answers at once when its version differs, when
 * reports are stale, or else after wait_s seconds (the heartbeat interval).
 */
struct drv_proto_sync {
	const char *node;
	int64_t session;
	int64_t version;
	int64_t wait_s;              /* how long the answer may wait; -1: the controller's */
	struct drv_proto_ref *tasks; /* every local task still running: task_id, epoch, state */
	size_t ntasks;
	struct drv_proto_report *reports;  /* what changed since the last answer */
	size_t nreports;
	struct drv_proto_gpu_health *gpus;
	size_t ngpus;
	json_t *doc;
};

/*
 * Its 200 answer. version and heartbeat_interval_s required. has_tasks:
 * "tasks" was present (the complete, level-triggered set of the node at
 * version; absent when version is the agent's). stale: (task_id, epoch)
 * pairs of the sync's reports and task states the controller does not
 * want (the agent kills them at once), with a reason.
 */
struct drv_proto_sync_reply {
	int64_t version;
	int64_t heartbeat_interval_s;
	int64_t agent_lease_s;       /* as in struct drv_proto_registered; 0 absent */
	bool allow_root_tasks;       /* as there; sent only when true */
	bool endpoints_closed;       /* as there ("open_endpoints": false) */
	bool has_tasks;
	struct drv_proto_task *tasks;
	size_t ntasks;
	struct drv_proto_ref *stale;
	size_t nstale;
	json_t *doc;
};

/* ---------------------------------------------------------------------------
 * Encode and decode
 *
 * _encode: a new JSON object (never NULL). _decode: 0 and *out filled
 * (release it), or DRV_EINVAL with d->err set and *out released; j is not
 * consumed (the message takes its own reference). _release: frees what a
 * decode allocated and drops the doc; the struct is zeroed, so a second
 * release is a no-op. _init: zeroes and sets the defaults above.
 */
void drv_proto_register_init(struct drv_proto_register *m);
json_t *drv_proto_register_encode(const struct drv_proto_register *m);
int drv_proto_register_decode(json_t *j, struct drv_proto_register *out,
			      struct drv_proto_dec *d);
void drv_proto_register_release(struct drv_proto_register *m);

void drv_proto_registered_init(struct drv_proto_registered *m);
json_t *drv_proto_registered_encode(const struct drv_proto_registered *m);
int drv_proto_registered_decode(json_t *j, struct drv_proto_registered *out,
				struct drv_proto_dec *d);
void drv_proto_registered_release(struct drv_proto_registered *m);

void drv_proto_sync_init(struct drv_proto_sync *m);
json_t *drv_proto_sync_encode(const struct drv_proto_sync *m);
int drv_proto_sync_decode(json_t *j, struct drv_proto_sync *out, struct drv_proto_dec *d);
void drv_proto_sync_release(struct drv_proto_sync *m);

void drv_proto_sync_reply_init(struct drv_proto_sync_reply *m);
json_t *drv_proto_sync_reply_encode(const struct drv_proto_sync_reply *m);
int drv_proto_sync_reply_decode(json_t *j, struct drv_proto_sync_reply *out,
				struct drv_proto_dec *d);
void drv_proto_sync_reply_release(struct drv_proto_sync_reply *m);

/* Parts, for callers that keep them apart (the server stores a node's
 * GPU health and inventory as JSON; the sync reply's tasks). */
void drv_proto_task_init(struct drv_proto_task *t);
json_t *drv_proto_task_encode(const struct drv_proto_task *t);
json_t *drv_proto_gpu_health_encode(const struct drv_proto_gpu_health *g, size_t n);
json_t *drv_proto_usage_encode(const struct drv_proto_usage *u);
json_t *drv_proto_kv_encode(const struct drv_proto_kv *kv, size_t n);

const char *drv_proto_task_state_name(enum drv_proto_task_state s);

/*
 * The version this process speaks: DRV_PROTO_VERSION, or the environment's
 * DROVER_PROTO_VERSION (DRV_PROTO_MIN..DRV_PROTO_VERSION), which makes a
 * controller or agent speak an older version exactly as that release did
 * (tests/integration/rolling_upgrade.sh plays the older release so). A
 * value out of range or not a number: DRV_EINVAL, msg saying so.
 */
int drv_proto_speaks(char *msg, size_t msgsz);

/*
 * Whether a peer speaking protocol `theirs` may talk to this process,
 * speaking `ours`: at most one version apart, and not below DRV_PROTO_MIN.
 * `peer` and `self` name the two sides ("agent", "controller"). Returns 0,
 * or DRV_EPERM with msg set to "agent speaks protocol 4; this controller
 * speaks 2 (at most one apart)".
 */
int drv_proto_versions_check(int64_t ours, int64_t theirs, const char *peer, const char *self,
			     char *msg, size_t msgsz);
/* The controller's check of an agent, speaking DRV_PROTO_VERSION. */
int drv_proto_version_check(int64_t theirs, char *msg, size_t msgsz);

#endif
