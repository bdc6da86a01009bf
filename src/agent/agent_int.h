/*
 * agent_int.h: what the files of src/agent/ share and nothing else does:
 * the agent's state (struct drv_agent, struct task), its threads and their
 * lock rule, and the functions one file offers another (agent_ prefix).
 */
#ifndef DROVER_AGENT_INTERNAL_H
#define DROVER_AGENT_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "drover/agent.h"
#include "drover/gpu.h"
#include "drover/http.h"
#include "drover/log.h"
#include "drover/proto.h"

/* Paths and error sentences are cut at their buffer's size on purpose:
 * a truncated message is better than none. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

struct rusage;
/* launch.c: folds a wait4 rusage (the task and the children it waited
 * for) into p's cpu_us and mem_peak_bytes */
void rusage_into(struct drv_proc *p, const struct rusage *ru);

/* cgroup.c */
int drv_cgroup_make_task(const struct drv_cgroup *cg, const char *task_id, int64_t mem_mib,
			 int64_t cpu_milli, char *out, size_t outsz, char *err, size_t errsz);
long drv_cgroup_oom_kills(const char *cgroup);
void drv_cgroup_kill(const char *cgroup);
/* What the task in cgroup has used: CPU time in microseconds (v2's
 * cpu.stat, else its processes' times) and the memory high-water mark in
 * bytes (memory.peak, v1's memory.max_usage_in_bytes, else memory.current);
 * -1 each when unknown. */
void drv_cgroup_usage(const char *cgroup, int64_t *cpu_us, int64_t *mem_bytes);

/*
 * The agent (drv_agent_start). Threads:
 *   - the syncer (agent_sync.c): everything said to the controller, on one
 *     kept-alive connection (messages: include/drover/proto.h). It
 *     registers (again after any 409) and keeps one sync exchange going:
 *     task states, reports and GPU health up; the level-triggered task set
 *     down when it changed, or after the heartbeat interval. It stores the
 *     set and wakes the supervisor. A sync that waits at the controller is
 *     cut short (drv_http_client_interrupt) when a report is owed.
 *   - the supervisor (agent_super.c): everything that touches processes. It
 *     applies the desired task set (agent_tasks.c: start what is new, stop
 *     what is told to stop, kill what is absent: fencing by (task_id,
 *     epoch)), reaps tasks and enforces time limits. It sleeps in poll() on
 *     the running tasks' pidfds and an eventfd the other threads write to,
 *     so an exit is reaped and reported as it happens, not at a tick.
 *   - the HTTP server's threads (agent_routes.c): /metrics, /healthz and
 *     task logs.
 * One mutex (mu) guards the task table, the GPU set and the desired list;
 * functions below say when they need it held.
 *
 * A (task_id, epoch) pair is started at most once: the record of a
 * finished task stays while the controller's list still names it.
 */

#define DRV_AGENT_VERSION "0.1.0"

/* When the lease runs out, tasks get SIGTERM and at most this long before
 * SIGKILL: the controller restarts them elsewhere 5 s after the lease. */
#define AGENT_LEASE_GRACE_MS 3000

enum tstate { T_RUNNING, T_EXITED, T_FAILED };

/* What a task used so far, sampled every AGENT_USAGE_MS while it runs
 * (agent_usage.c): per GPU of it (index k as in task.gpus) the sum of its
 * share of the utilisation and the high-water mark of its share of the
 * framebuffer; its cgroup's CPU time and memory high-water mark. */
#define AGENT_USAGE_MS 5000
struct task_use {
	int64_t samples;
	double util_sum[DRV_GPU_MAX];
	int64_t fb_max_mib[DRV_GPU_MAX];
	int64_t cpu_us;         /* -1 unknown */
	int64_t mem_max_bytes;  /* -1 unknown */
};

struct task {
	char id[64];
	int64_t epoch;
	char job_id[32];
	int gpus[DRV_GPU_MAX];
	int ngpus;
	enum tstate state;
	struct drv_proc proc;
	bool rep_running;       /* a "running" report is owed */
	bool rep_end;           /* an "exited"/"failed" report is owed */
	bool timed_out;         /* stopped at its time limit (deadline_ms) */
	bool fenced;            /* stopped for the lease: the controller requeues, not fails */
	bool listed;            /* named by the latest assignment list */
	int64_t deadline_ms;    /* time limit; 0 none */
	int64_t grace_ms;       /* the job's SIGTERM-to-SIGKILL grace (grace_s) */
	int64_t output_max;     /* bytes per output file (output_max_bytes); 0 none */
	bool capped[2];         /* stdout, stderr reached it (the marker is written) */
	unsigned long long starttime; /* of its main process (/proc/PID/stat), to know it again */
	char reason[512];       /* why it failed to start, or why it was stopped */
	char dir[PATH_MAX];
	int64_t started_ms;     /* monotonic (the machine's clock): when it was journaled */
	int64_t launch;         /* unique to this launch of (id, epoch) */
	char key[48];           /* "EPOCH-LAUNCH": names the shim's pid and status files */
	bool container;         /* runs in a container (agent_container.c) */
	char cname[128];        /* its name: drover-TASK-eEPOCH */
	char runtime_cmd[4096]; /* the podman command that creates it, as logged ("" unknown) */
	char cg_rel[PATH_MAX];  /* its task cgroup below the hierarchy's root ("" none) */
	bool journaled;         /* its start is in the journal (agent_journal.c) */
	bool end_journaled;     /* ... and so is its acknowledged end */
	int32_t gpu_milli;      /* its share of each of its GPUs (1000: whole) */
	struct task_use use;    /* what it used so far (agent_usage.c) */
	int64_t sig_seen;       /* the assignments' signal_seq delivered (or older) */
	bool sig_known;         /* sig_seen holds: false for an adopted task until listed */
	bool requeue;           /* failed: the node's prolog failed (the report's "requeue") */
	bool hook_wait;         /* its end report waits for the job's epilog (agent_hooks.c) */
	char drain[320];        /* the report's "drain": a prolog or epilog failed; "" none */
	int pty_master;         /* srun --pty: the terminal's master side; -1 none */
	bool pty_attached;      /* an attach (agent_exec.c) has it */
};

/* A job's prolog or epilog on this node (agent_hooks.c). */
struct agent_hook {
	char job[32];
	int64_t epoch;          /* the job's attempt (its tasks' epoch) */
	bool epilog;            /* else the prolog */
	bool ran;               /* prolog: a task of the job was started after it */
	enum { H_RUNNING, H_OK, H_FAILED } state;
	pid_t pid;
	int64_t deadline_ms;    /* monotonic: killed past it */
	char why[300];          /* H_FAILED: what went wrong */
};

/* A task that ended, remembered for its metrics (agent_metrics.c). */
struct agent_ended {
	char id[64];
	char job[32];
	int64_t epoch;
	bool oom;
	int64_t ended_ms;
};
#define DRV_AGENT_KEEP_ENDED_MS (5 * 60 * 1000)
#define DRV_AGENT_MAX_ENDED 256

struct drv_agent {
	/* configuration (owned copies) */
	char *server, *token, *name, *listen, *labels, *state_dir, *nvml_lib, *advertise_cfg;
	char *tls_cert, *tls_key;      /* the listener's https (copies of the config's) */
	char *tls_ca;            /* the CA the controller's https is checked against; NULL */
	char *sysfs_root, *cgroup_parent, *fake_gpus;
	char *metrics_listen;    /* "" (on listen), "none" or ADDR:PORT */
	char *hpc_dir;           /* --hpc-job-mapping-dir; NULL none */
	bool gpu_metrics;        /* DCGM_FI_* series on /metrics */
	/* the runtime (agent_container.c): podman when its start check passed */
	bool podman_on;
	struct drv_podman_conf podman;   /* owned copies of the strings */
	char runtime_line[768];  /* what the start check said */
	/* podman with fake GPUs: the CDI spec the agent wrote for them
	 * (agent_container.c), its kind and file; "" none */
	char fake_cdi_kind[64];
	char fake_cdi_file[PATH_MAX];
	pid_t helpers[64];       /* podman stop/rm/prune calls running, reaped by the supervisor */
	int nhelpers;
	int64_t next_gc_ms;
	char *jobmap[DRV_GPU_MAX]; /* what each GPU's mapping file says (agent_jobmap.c) */
	bool jobmap_warned;
	int fake_hcas;
	bool fake_fallback, run_as_self, stop_tasks_on_exit;
	bool allow_root_tasks;  /* the controller's setting, from the register reply (mu) */
	/* the controller's open_endpoints: false: /metrics and /healthz need
	 * the cluster token; kept as STATE/endpoints-closed across restarts,
	 * so a restarted agent is closed before its first exchange (mu) */
	bool endpoints_closed;
	const char *shim_exe;    /* static storage (config); NULL: no shim */
	struct drv_log log;      /* "drover agent: ..."; quiet drops it */
	int64_t grace_ms;
	int64_t task_retention_ms;  /* --task-retention (agent_clean.c) */
	int64_t next_clean_ms;     /* monotonic */

	/* the node */
	struct drv_gpu_set gpus;
	const char *backend;
	struct drv_hca_set hcas;
	char ib_list[256];
	struct drv_cgroup cg;
	char address[128];
	char ifname[IF_NAMESIZE + 1];
	char agent_url[256];
	char metrics_url[256];  /* "" unless /metrics has a listener of its own */
	char hostname[256];

	/* shared state */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wakefd;             /* eventfd: wakes the supervisor out of poll() */
	bool running_dirty;     /* the running tasks changed: the job map is behind */
	bool stopping;
	struct task **tasks;
	size_t ntasks, tcap;
	struct drv_proto_sync_reply desired; /* the controller's latest task set */
	bool have_desired;
	bool desired_new;
	int64_t session;        /* 0: not registered */
	int64_t version;        /* of the task set applied */
	bool need_register;
	int heartbeat_s;
	int proto;              /* the agent protocol spoken (drv_proto_speaks) */
	struct drv_http_client ctl; /* the syncer's connection to the controller */
	bool sync_waiting;      /* the sync in flight waits at the controller */
	bool interrupted;       /* ... and was cut short (agent_kick_sync) */
	struct drv_proto_seen *seen;
	struct agent_ended ended[DRV_AGENT_MAX_ENDED]; /* the last 5 minutes' */
	size_t nended;
	int64_t oom_kills;      /* since the agent started */
	int64_t next_usage_ms;  /* monotonic: the next usage sample (agent_usage.c) */

	/* the journal (agent_journal.c); the syncer and the supervisor
	 * write it, with mu held */
	int journal_fd;
	int lock_fd;             /* STATE/lock, flock'd while the agent runs; -1 none */
	size_t journal_lines;
	/* the lease: renewed after each successful exchange (deadline on
	 * CLOCK_BOOTTIME, ms; 0 none), written to lease_path for the shims */
	char lease_path[PATH_MAX];
	/* STATE/slurm-bin: srun, salloc, sbatch... linked to this drover, put
	 * first in PATH of a Slurm job's tasks (agent_slurm_bin); "" none */
	char slurm_bin[PATH_MAX];
	int64_t lease_s;
	int64_t lease_deadline;
	bool lease_out;          /* its tasks were stopped for it */
	bool lease_write_failed;

	/* --prolog / --epilog (agent_hooks.c), with mu held */
	char *prolog, *epilog;
	int64_t hook_timeout_ms;
	struct agent_hook *hooks;
	size_t nhooks, hookcap;

	struct drv_http_server *http, *mhttp; /* --listen, --metrics-listen */
	pthread_t syncer, super;
	bool syncer_on, super_on;
};


/* agent_start.c: wakes every thread waiting on a->cv and the supervisor in poll(). */
void agent_wake(struct drv_agent *a);
void agent_slurm_bin(struct drv_agent *a);

/* agent_hooks.c, mu held: whether j's task may start now (1), waits for
 * the job's prolog (0), or must fail because it failed (-1, why set). */
int agent_prolog_gate(struct drv_agent *a, const struct drv_proto_task *j, char *why,
		      size_t whysz);
/* Reaps the hooks, kills those past their time, starts epilogs of jobs
 * the controller no longer wants here; true when a prolog ended (the
 * desired set is worth applying again). *due: the next look (monotonic). */
bool agent_hooks_step(struct drv_agent *a, int64_t *due);
void agent_hooks_release(struct drv_agent *a);

/* agent_journal.c */
unsigned long long agent_proc_starttime(pid_t pid);
int agent_journal_open(struct drv_agent *a);   /* at start: adopts what the journal names */
int agent_journal_start(struct drv_agent *a, struct task *t);  /* mu held; durable */
void agent_journal_end(struct drv_agent *a, struct task *t);   /* mu held; its end acknowledged */
void agent_journal_close(struct drv_agent *a);
/* After a successful exchange sent at sent_boot_ms (CLOCK_BOOTTIME):
 * the deadline moves to sent_boot_ms + lease_s. mu held. */
void agent_lease_renew(struct drv_agent *a, int64_t sent_boot_ms, int64_t lease_s);

/* agent_node.c */
void agent_find_address(struct drv_agent *a);
json_t *agent_register_body(struct drv_agent *a);         /* mu held; a new reference */

/* agent_tasks.c (mu held) */
int agent_valid_task_id(const char *id);
/* agent_routes.c: what the last controller said of open_endpoints, read
 * from the state directory at start; and its new word (mu held) */
void agent_endpoints_load(struct drv_agent *a);
void agent_endpoints_set(struct drv_agent *a, bool closed);
struct task *agent_find_task(struct drv_agent *a, const char *id, int64_t epoch);
void agent_stop_task(struct drv_agent *a, struct task *t, int64_t grace_ms, const char *why);
void agent_mark_gpus(struct drv_agent *a, struct task *t, bool busy);
/* Past the lease: stops every running task (mu held); when it is next due,
 * on drv_mono_ms's clock (INT64_MAX: not). */
int64_t agent_enforce_lease(struct drv_agent *a);
void agent_apply_desired(struct drv_agent *a);
int agent_reap(struct drv_agent *a);                      /* the tasks still running */

/* agent_super.c */
void agent_wait_ms(struct drv_agent *a, int64_t ms);      /* mu held; on a->cv */
void *agent_super_main(void *arg);

/* agent_sync.c */
void *agent_sync_main(void *arg);
int agent_sync_once(struct drv_agent *a);                 /* mu not held */
void agent_kick_sync(struct drv_agent *a);                /* mu held */

/* agent_jobmap.c: dcgm-exporter's HPC job mapping files (--hpc-job-mapping-dir) */
int agent_open_job_map(struct drv_agent *a, char *err, size_t errsz);
void agent_write_job_map(struct drv_agent *a);            /* mu held */
void agent_close_job_map(struct drv_agent *a);

/* agent_metrics.c: remembers the tasks that ended since the last call
 * (their OOM kills counted) and forgets those past DRV_AGENT_KEEP_ENDED_MS.
 * mu held. */
void agent_note_ended(struct drv_agent *a, int64_t now_ms);
/* agent_exec.c: GET /v1/tasks/ID/exec, a WebSocket (the caller checked the token). */
int agent_h_exec(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx);
/* GET /v1/tasks/ID/attach: srun --pty's terminal (agent_exec.c). */
int agent_h_attach(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx);
/* Closes t's terminal master unless an attach holds it. Caller holds a->mu. */
void agent_task_pty_close(struct task *t);
/* agent_forward.c: GET /v1/tasks/ID/portforward (the caller checked the token). */
int agent_h_portforward(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx);

/* agent_container.c (mu held unless said) */
/* At start, before the threads (mu not needed): the runtime as --runtime
 * says; -1 and err when podman was asked and its check failed. */
int agent_runtime_setup(struct drv_agent *a, const struct drv_agent_config *cfg, char *err,
			size_t errsz);
void agent_runtime_release(struct drv_agent *a);
/* The task's container script into s->script (a malloc'd string, *owned);
 * -1 after failing the task. */
int agent_container_prepare(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
			    struct drv_task_spec *s, char **owned);
void agent_container_stop(struct drv_agent *a, struct task *t, int64_t grace_ms);
void agent_container_ended(struct drv_agent *a, struct task *t);
/* After a restart: t (from the journal) ran in a container when its cleanup
 * file is there; marks it so (its name, its cgroup). Then, once the
 * runtime is set up and before the threads, agent_containers_adopt logs
 * each adopted container, removes those whose task ended meanwhile, and
 * removes the containers labelled as this node's that no task it knows
 * has (orphans: podman ps by label, then podman rm as helpers). */
void agent_container_mark(struct drv_agent *a, struct task *t);
/* What a report or sync says of container task t: its name, command and
 * pull state (read into pull, pullsz bytes); nothing for other tasks. */
void agent_container_msg(const struct task *t, struct drv_proto_container *c, char *pull,
			 size_t pullsz);
void agent_containers_adopt(struct drv_agent *a);
void agent_helpers_reap(struct drv_agent *a);
void agent_image_gc(struct drv_agent *a, int64_t now_ms);
/* agent_usage.c: samples the running tasks' usage when AGENT_USAGE_MS
 * have passed (mu held); returns when it is next due (INT64_MAX: nothing
 * runs). agent_usage_msg: a task's usage for the protocol (a new
 * allocation: the message's release frees it), NULL when nothing is known. */
int64_t agent_sample_usage(struct drv_agent *a, int64_t now_ms);
struct drv_proto_usage *agent_usage_msg(const struct task *t);
/* The share of GPU g's readings that task t's job has: its gpu_milli over
 * the sum of the running tasks' on g (1 when it is alone). mu held. */
double agent_gpu_share(const struct drv_agent *a, const struct task *t, int g);
/* A task's gpu_milli from what the controller or the journal said: a
 * share below a whole GPU as it is, anything else a whole GPU (1000). */
static inline int32_t agent_share_milli(long long milli)
{
	return milli > 0 && milli < 1000 ? (int32_t)milli : 1000;
}

/* --- agent_clean.c: task directories removed after --task-retention --- */
void agent_clean_task_dirs(struct drv_agent *a, int64_t now_ms);  /* mu held */
int64_t agent_clean_every_ms(const struct drv_agent *a);

/* agent_routes.c: every route (--listen without --metrics-listen); the
 * private ones (--listen with it); /metrics and /healthz (--metrics-listen) */
extern const struct drv_http_route agent_http_routes[];
extern const struct drv_http_route agent_private_routes[];
extern const struct drv_http_route agent_metrics_routes[];

#endif
