/*
 * agent.h: the node agent (src/agent/). Owned by the agent engineer.
 *
 * Three parts, bottom up:
 *   - cgroups (src/agent/cgroup.c): where task cgroups go, and whether
 *     cgroup v2 memory/CPU limits can be applied on this machine at all;
 *   - the launcher (src/agent/launch.c): one task = one process group in
 *     its own session, its environment built from the placement, stdout and
 *     stderr to files, limits, termination with a grace period, exact exit
 *     status and OOM detection;
 *   - the agent (src/agent/agent_*.c, its parts in agent_int.h): registers
 *     with the controller and keeps one sync exchange going with it
 *     (include/drover/proto.h), launches and stops tasks, reports them, and
 *     serves /metrics. drover agent runs it in the
 *     foreground; drover up runs it on threads next to the controller with
 *     drv_agent_start / drv_agent_stop.
 */
#ifndef DROVER_AGENT_H
#define DROVER_AGENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "drover/gpu.h"

/* ---------------------------------------------------------------------------
 * cgroups: v2, or the v1 memory controller (hybrid hosts, RHEL 8, Ubuntu 20.04)
 */
struct drv_cgroup {
	bool enabled;           /* limits are applied */
	int version;            /* 2, or 1: the v1 memory controller (no CPU limits) */
	bool has_cpu;           /* the cpu controller is there too (v2 only) */
	char base[PATH_MAX];    /* task cgroups are made as <base>/task-<id> */
	char why[512];          /* when !enabled: a sentence saying why */
};

/*
 * Finds a cgroup tree this process may write to that offers the memory
 * controller: parent if given (a cgroup v2 directory, or one of the v1
 * memory hierarchy), else the agent's own cgroup. With cgroup v2 it
 * enables memory (and cpu) for a "drover-tasks" child, moving the agent
 * into a "drover-agent" leaf first when cgroup v2's no-internal-process
 * rule asks for it. Where v2 has no memory controller (hybrid hosts) it
 * uses the v1 memory hierarchy: "drover-tasks-PID" below the agent's own v1
 * memory cgroup, memory.limit_in_bytes per task, OOM kills from
 * memory.oom_control (no CPU limits there). Never fails: when limits
 * cannot be applied, cg->enabled is false and cg->why says why.
 */
void drv_cgroup_setup(struct drv_cgroup *cg, const char *parent);
/* Removes what setup made for this agent alone (v1: its drover-tasks-PID
 * and the task cgroups left in it, those no process holds). Setup itself
 * sweeps the drover-tasks-PID of agents that are gone the same way. */
void drv_cgroup_release(struct drv_cgroup *cg);

/* ---------------------------------------------------------------------------
 * Launching one task.
 */
struct drv_task_spec {
	const char *job_id;
	const char *task_id;           /* unique on the node: "<job>.<index>" */
	char *const *argv;             /* NULL-terminated; argv[0] looked up in PATH */
	const char *script;            /* instead of argv: a script body run by /bin/sh
					* (or its #! line), written to a file first */
	char *const *env;              /* the job's own "K=V" (NULL-terminated, or NULL) */
	const char *workdir;           /* NULL: the task's log directory */
	const char *log_dir;           /* <log_dir>/<task_id>.out, .err (and .script) */
	const char *node_name;
	const char *image;             /* recorded as DROVER_IMAGE; may be NULL */
	int gpus[DRV_GPU_MAX];         /* GPU indexes on this node */
	int ngpus;
	int rank, world_size;          /* global */
	int local_rank, local_world_size;
	int node_rank, nnodes;
	const char *master_addr;
	int master_port;
	/* Address of each rank's node, rank order (world_size of them), for
	 * TF_CONFIG; NULL: every rank at master_addr. */
	const char *const *rank_addrs;
	const char *nccl_ib_hca;       /* HCAs for NCCL_IB_HCA; NULL or "" = none */
	const char *nccl_socket_ifname;/* NULL or "": not set */
	/* DROVER_SERVER and DROVER_CA_FILE, so that srun in the task reaches
	 * the controller with its DROVER_JOB_TOKEN; NULL: not set. server may
	 * be a comma list (the agent's --server): the first is given. */
	const char *server_url;
	const char *ca_file;
	int64_t mem_limit_mib;         /* 0: none */
	int64_t cpu_milli;             /* 0: none */
	/* Run as another user (the agent must be root): set_user, with uid,
	 * gid, supplementary groups, and user/home for USER, LOGNAME, HOME. */
	bool set_user;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	const char *user;
	const char *home;
	/* The shim (drover task-shim, src/agent/shim.c): when shim_exe is set
	 * ("/proc/self/exe" in drover itself), the task runs under it, so it
	 * outlives the agent and its end is recorded in its status file.
	 * NULL: the task is the agent's own child (the unit tests). */
	const char *shim_exe;
	int64_t epoch;                 /* DROVER_EPOCH */
	const char *launch_key;        /* names the status and pid files: "EPOCH-LAUNCH" */
	const char *lease_file;        /* NULL: the shim enforces no lease */
	int64_t lease_grace_ms;        /* SIGTERM->SIGKILL when the lease runs out */
	/* The output cap (task_output_max_bytes), 0 none: the shim relays the
	 * task's stdout and stderr through pipes into the files and keeps
	 * each at most this many bytes of output and the line saying so. */
	int64_t output_max;
	/* A Slurm batch step's -o/-e files (absolute): opened by the task's
	 * user after the switch, with umask, and linked from <task_id>.out and
	 * .err in log_dir (so the logs route reads them); stderr_file NULL:
	 * stdout's file takes both. NULL stdout_file: the agent's own files. */
	const char *stdout_file;
	const char *stderr_file;
	bool open_append;              /* else truncate */
	bool set_umask;                /* else the agent's umask */
	mode_t umask;
	/* srun --pty: pty_slave (the caller's; it stays open) is the task's
	 * stdin, stdout and stderr and its controlling terminal, instead of
	 * /dev/null and the log files (which stay empty). */
	bool pty;
	int pty_slave;
};

/*
 * Builds the task's environment: a few variables from the agent's own
 * (PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_ALL, TZ, TMPDIR,
 * LD_LIBRARY_PATH), drover's (DROVER_JOB_ID, DROVER_TASK_ID, DROVER_NODE,
 * DROVER_IMAGE), the GPUs (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES),
 * PyTorch's, JAX's, TensorFlow's and NCCL's, then the job's own env on top
 * (a job's NCCL_IB_DISABLE=0 wins). Returns a NULL-terminated array of
 * malloc'd "K=V" strings; free with drv_env_free.
 */
char **drv_task_env(const struct drv_task_spec *t);
void drv_env_free(char **env);
/* Value of key in a "K=V" array, or NULL. */
const char *drv_env_get(char *const *env, const char *key);

enum drv_proc_state {
	DRV_PROC_RUNNING = 0,
	DRV_PROC_EXITED = 1,    /* exit_code / signal are set */
	DRV_PROC_FAILED = 2,    /* never started: error says why */
};

struct drv_proc {
	pid_t pid;                /* also the process group and session id */
	enum drv_proc_state state;
	int exit_code;            /* when it exited normally, else -1 */
	int signal;               /* the signal that ended it, else 0 */
	bool oom_killed;          /* the kernel's OOM killer ended it (cgroup memory.events) */
	bool fenced;              /* stopped for the agent's lease (the shim's status says) */
	bool terminating;         /* SIGTERM was sent */
	int64_t started_ms, ended_ms;
	int64_t kill_at_ms;       /* when SIGKILL follows SIGTERM */
	int pidfd;                /* readable once it has exited (pidfd_open); -1 when none */
	char cgroup[PATH_MAX];    /* "" when none */
	char error[512];          /* why it failed to start; with a shim, why it was stopped */
	char stdout_path[PATH_MAX];
	char stderr_path[PATH_MAX];
	bool shim;                /* pid is the task's shim: status_path says how it ended */
	bool adopted;             /* not our child: an earlier agent started it */
	char status_path[PATH_MAX];
	/* once ended: what it used, for its efficiency (-1 unknown): CPU time
	 * (its cgroup's, else the rusage of it and the children it waited
	 * for) and the memory high-water mark (its cgroup's, else its largest
	 * process's maximum RSS) */
	int64_t cpu_us;
	int64_t mem_peak_bytes;
};

/*
 * Starts t as a new session and process group: fork, then in the child
 * only async-signal-safe calls (setsid, joining the cgroup, chdir, dup2,
 * execve). argv and env are passed as given: no shell sees them. On
 * failure to start (command not found, exec error, bad workdir) returns a
 * negative drv_err, p->state is DRV_PROC_FAILED and p->error says why.
 * cg may be NULL or disabled: then no limits, and that is not an error.
 * now_ms is the caller's monotonic clock.
 */
int drv_proc_start(struct drv_proc *p, const struct drv_task_spec *t,
		   const struct drv_cgroup *cg, int64_t now_ms);

/*
 * Checks whether the task ended (no waiting). Returns 1 when it has (state
 * EXITED, exit_code/signal/oom_killed set, its leftover group members
 * killed), 0 while it runs. Sends the pending SIGKILL when the grace
 * period has passed.
 */
int drv_proc_poll(struct drv_proc *p, int64_t now_ms);

/* SIGTERM to the whole process group now, SIGKILL after grace_ms (0:
 * SIGKILL at once). Repeated calls keep the earlier deadline. */
void drv_proc_terminate(struct drv_proc *p, int64_t grace_ms, int64_t now_ms);
/* Sends sig to a running task: with group to its whole process group,
 * else to its main process alone (through its shim, which forwards what is
 * queued to it with this value). 0, or DRV_ENOENT when it does not run. */
#define DRV_SHIM_FORWARD 0x64727673
int drv_proc_signal(struct drv_proc *p, int sig, bool group);

/*
 * Watches a shim an earlier agent started (pid, checked by the caller):
 * p is set up to be polled and stopped like a child of this process; its
 * end is read from status_path (drv_shim_paths). Returns 0, or DRV_ENOENT
 * when the process is gone already.
 */
int drv_proc_adopt(struct drv_proc *p, pid_t pid, const char *status_path, const char *cgroup,
		   int64_t now_ms);

/* --- the task shim (src/agent/shim.c) ---------------------------------- */

/* `drover task-shim ...` (a hidden command): argv[0] is "task-shim". */
int drv_task_shim_main(int argc, char **argv);
/* DIR/TASK.KEY.status and DIR/TASK.KEY.pid (KEY: the launch key) */
void drv_shim_paths(const char *dir, const char *task_id, const char *key, char *status,
		    char *pidfile, size_t sz);
/* How a task ended, from its status file into p (exit_code, signal,
 * oom_killed, error); DRV_ENOENT when there is none yet. */
int drv_shim_read_status(const char *path, struct drv_proc *p);
/* CLOCK_BOOTTIME in ms: what lease deadlines are counted in. */
int64_t drv_boottime_ms(void);
/* The deadline in a lease file; 0 when there is none. */
int64_t drv_lease_read(const char *path);

/* Removes the task's cgroup once it is empty; call after it ended. */
void drv_proc_cleanup(struct drv_proc *p);

/* "SIGKILL" for 9, ...; "SIG<n>" for others (buf used then). */
const char *drv_signal_name(int sig, char *buf, size_t bufsz);


/* ---------------------------------------------------------------------------
 * The container runtime (src/agent/podman.c; docs/agent.md, "Runtimes").
 *
 * A task that needs a container (its assignment's runtime is "podman")
 * runs as a small shell script under the task's shim: it pulls the image
 * as imagePullPolicy says, creates the container (podman create --rm,
 * the environment from an env file of mode 0600 that is removed as soon as
 * the container exists), and execs `podman start --attach`, so the
 * container's output is the task's, a SIGTERM to the task reaches the
 * container (podman's signal proxy) and its exit code is the task's.
 * The script is the exact, runnable record of what ran: the agent logs its
 * podman lines.
 *
 * This is the one entry point for every face that runs a container
 * (Kubernetes Pods, and Slurm's srun --container-image through the same
 * struct drv_container_spec): fill a spec, call drv_podman_script, run the
 * script as the task.
 */
struct drv_podman_conf {
	const char *podman;          /* the executable; NULL: "podman" in PATH */
	const char *root;            /* --podman-root: storage in ROOT/storage, ROOT/run;
				      * NULL: podman's own (/var/lib/containers) */
	const char *storage_driver;  /* NULL: podman's default */
	const char *registries_conf; /* --registries-conf: CONTAINERS_REGISTRIES_CONF for
				      * podman (mirrors, short names); NULL: podman's */
	const char *auth_file;       /* --registry-auth-file: registry credentials; NULL none */
	int64_t nofile;              /* --ulimit nofile=N:N; 0: the agent's soft limit */
	int64_t nproc;               /* --ulimit nproc=N:N; 0: 32768 */
	int pull_retries;            /* pulls of one image per start; 0: 3 */
	int64_t pull_backoff_ms;     /* before the second pull, doubling; 0: 2000 */
	int image_gc_percent;        /* images pruned when the store's disk is fuller; 0: 85 */
};

/* One bind mount of a container: hostPath and emptyDir volumes. */
struct drv_container_mount {
	const char *host_path;       /* NULL with tmpfs */
	const char *container_path;
	bool read_only;
	bool tmpfs;                  /* an emptyDir of medium Memory */
	int64_t tmpfs_mib;           /* its size; 0: podman's default */
};

struct drv_container_spec {
	const char *name;            /* the container's name: drover-TASK-eEPOCH */
	const char *image;
	const char *pull_policy;     /* Always, IfNotPresent, Never; NULL: by tag */
	char *const *command;        /* replaces ENTRYPOINT (ncommand > 0) */
	int ncommand;
	char *const *args;           /* replace CMD (nargs > 0) */
	int nargs;
	const char *workdir;         /* NULL: the image's */
	char *const *env;            /* "K=V", in order, into the env file */
	const char *env_file;        /* where the env file is written (0600) */
	const char *reason_file;     /* where the script writes why it failed (image pulls) */
	const char *pull_file;       /* where it writes how its image pull stands (a line) */
	const char *task_id, *job_id, *node;  /* its labels drover.task, drover.job, drover.node */
	int64_t epoch;
	bool set_user;               /* --user uid:gid, supplementary groups */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	bool non_root;               /* runAsNonRoot with no --user: the script refuses an
				      * image whose USER is root (or not numeric), as kubelet */
	const char *cgroup_parent;   /* the task's cgroup, relative to its hierarchy; NULL none */
	int64_t mem_mib;             /* --memory (cgroup v2 only: on v1 the task cgroup's limit
				      * is the one, so its OOM notification sees the kill) */
	bool mem_in_container;
	int64_t cpu_milli;           /* --cpus; 0 none */
	int64_t shm_mib;             /* /dev/shm size; 0: 8 GiB */
	bool host_ipc;               /* the host's IPC namespace (no shm sizing then) */
	const char *const *devices;  /* CDI names (nvidia.com/gpu=UUID); NULL-terminated or NULL */
	const struct drv_container_mount *mounts;
	int nmounts;
};

/*
 * The script that runs spec's container (a malloc'd string in *out, freed
 * by the caller) and the env file it reads, written now. The script's
 * first podman lines go to log (one line each, values of the env file not
 * among them) when log is not NULL. Returns 0, or DRV_EINVAL with err
 * set (an env value podman's env file cannot carry: a newline).
 */
struct drv_log;
int drv_podman_script(const struct drv_podman_conf *pc, const struct drv_container_spec *cs,
		      char **out, char *err, size_t errsz);

/*
 * podman's global arguments for pc (NULL-terminated, static storage
 * inside a malloc'd array: free the array only): "podman --runtime runc
 * [--root ... --runroot ...] ...". Every podman call the agent makes
 * starts with them.
 */
char **drv_podman_global_argv(const struct drv_podman_conf *pc, size_t *n);

/*
 * CDI (src/agent/cdi.c): the device names of one kind ("nvidia.com/gpu")
 * in the CDI specs (*.yaml, *.json) of dirs (NULL-terminated; podman's
 * own are /etc/cdi and /var/run/cdi), so a container gets its GPUs as
 * --device KIND=NAME. drv_cdi_load fills c (release it with
 * drv_cdi_release, also after a failure): 0, or DRV_ENOENT with err
 * ("no CDI spec of kind K", or the first spec that could not be read).
 * drv_cdi_gpu_devices names each of the n GPUs (index[k], uuid[k] or
 * NULL) as "KIND=UUID" when the spec names the UUID, else "KIND=INDEX",
 * into out[k]; DRV_ENOENT with err naming the GPU the spec does not name.
 */
#define DRV_CDI_NAME_MAX 160
struct drv_cdi {
	char *file;                  /* the first spec of the kind */
	char **names;                /* its devices' names, all specs of the kind */
	size_t n;
};
int drv_cdi_load(const char *const *dirs, const char *kind, struct drv_cdi *c, char *err,
		 size_t errsz);
int drv_cdi_gpu_devices(const struct drv_cdi *c, const char *kind, const int *index,
			const char *const *uuid, int n, char (*out)[DRV_CDI_NAME_MAX], char *err,
			size_t errsz);
void drv_cdi_release(struct drv_cdi *c);

/*
 * Runs podman (pc's global arguments, then args, NULL-terminated) and
 * returns its stdout (malloc'd, NUL-terminated, at most 1 MiB kept) in
 * *out: 0; or DRV_EIO with why (its last stderr line) when it failed or
 * ran past timeout_ms. Blocks: for the agent's start, before its threads.
 */
int drv_podman_output(const struct drv_podman_conf *pc, const char *const *args,
		      int64_t timeout_ms, char **out, char *why, size_t whysz);

/*
 * The start check: runs `podman run --rm --rootfs /:O /bin/true` with the
 * settings tasks get (runc, ulimits, the store) and waits at most
 * timeout_ms. 0 and a line saying what works in msg, or a negative
 * drv_err and why not (podman missing, runc missing, its error).
 */
int drv_podman_check(const struct drv_podman_conf *pc, int64_t timeout_ms, char *msg,
		     size_t msgsz);

/* ---------------------------------------------------------------------------
 * The agent.
 */
struct drv_agent_config {
	const char *server_url;    /* "http://127.0.0.1:8080" */
	const char *token;         /* the cluster's agent token */
	const char *name;          /* node name */
	const char *listen;        /* task logs, inventory, /healthz and (without
				    * metrics_listen) /metrics: "ADDR:PORT";
				    * NULL = "0.0.0.0:9400"; "none" = off */
	const char *metrics_listen;/* /metrics (and /healthz) on a listener of their
				    * own, "ADDR:PORT"; "none": no /metrics at all;
				    * NULL: /metrics on listen */
	bool no_gpu_metrics;       /* leave dcgm-exporter's DCGM_FI_* series out
				    * (a site's own dcgm-exporter exports them) */
	const char *hpc_job_mapping_dir; /* write dcgm-exporter's HPC job mapping files
				    * there (one per GPU index: the job ids on it);
				    * NULL: none */
	const char *fake_gpus;     /* "8xH100": the fake backend; NULL = nvml */
	bool fake_fallback;        /* nvml missing: use 8xH100 fake and say so (drover up) */
	int fake_hcas;             /* with fake GPUs: this many fake HCAs (default 0) */
	const char *labels;        /* "k=v,k=v" */
	const char *state_dir;     /* task logs and scripts; NULL = $XDG_STATE_HOME/drover/agent-<name> */
	const char *sysfs_root;    /* NULL = "/" (tests point it at a tree of their own) */
	const char *cgroup_parent; /* NULL = the agent's own cgroup */
	const char *advertise;     /* address peers reach this node on; NULL = found */
	const char *nvml_lib;      /* NULL = "libnvidia-ml.so.1" */
	const char *tls_cert;      /* the listener serves https with these (PEM; the */
	const char *tls_key;       /* key 0600); NULL: plain HTTP */
	const char *tls_ca;        /* the CA the server's https is checked against;
				    * NULL: the system's */
	int64_t grace_ms;          /* default SIGTERM→SIGKILL grace; 0 = 10000 */
	int64_t task_retention_s;  /* a forgotten task's directory (its logs) is kept this
				    * long after its last write; 0 = 7 days */
	bool run_as_self;          /* every task runs as the agent's own user, whatever the
				    * assignment's user (drover up: a single-user setup) */
	bool quiet;                /* no log lines on stderr */
	/* Each task runs under `shim_exe task-shim ...` (drover passes
	 * "/proc/self/exe"), so it outlives the agent and a new agent adopts
	 * it; NULL: tasks are plain children (tests of the library). Static
	 * storage: not copied. */
	const char *shim_exe;
	/* drv_agent_stop stops the tasks (SIGTERM, grace, SIGKILL) and
	 * reports them; false: they keep running under their shims, for the
	 * next agent to adopt (drover agent without --stop-tasks-on-exit). */
	bool stop_tasks_on_exit;
	/* --runtime: "host" (default), "podman" (the start check must pass, else
	 * drv_agent_start fails), "auto" (podman when the check passes, else
	 * host; the log line says which). */
	const char *runtime;
	struct drv_podman_conf podman;
	/* --prolog / --epilog: site programs run as the agent's user (root)
	 * before a job's first task on the node and once the controller no
	 * longer wants any of its tasks here (agent_hooks.c); NULL none.
	 * hook_timeout_s: either is killed past it (0 = 300). */
	const char *prolog, *epilog;
	int64_t hook_timeout_s;
};

struct drv_agent;

/*
 * Opens the GPUs, HCAs and cgroups, starts the listeners and the protocol
 * loop on threads of its own, and returns. On failure (no NVML and no
 * fake, bad --listen, ...) returns a negative drv_err with a sentence in
 * err and *out is NULL: DRV_EEXIST when a listener's port is taken (a
 * setting that cannot work here: drover agent exits 2). cfg's strings are
 * copied.
 */
/* The shim_exe drover passes: drover-shim beside this binary when it is
 * there (a small build of the shim that links libc only, so that a task's
 * start does not load drover's libraries: the Makefile builds it beside
 * drover), else "/proc/self/exe" (drover task-shim). Static storage. */
const char *drv_agent_shim_exe(void);

int drv_agent_start(const struct drv_agent_config *cfg, struct drv_agent **out, char *err,
		    size_t errsz);

/* Stops the loop; with stop_tasks_on_exit terminates running tasks
 * (SIGTERM, grace, SIGKILL) and reports them, else leaves them to their
 * shims; stops the listener and frees a. NULL is a no-op. */
void drv_agent_stop(struct drv_agent *a);

/* The /metrics port actually bound (useful with port 0), or 0. */
int drv_agent_metrics_port(const struct drv_agent *a);

/*
 * Renders the agent's /metrics text (dcgm-exporter's GPU series, drover_
 * HCA and task series) at now_ms into w. Exposed for tests and the bench.
 */
struct drv_prom;
void drv_agent_render_metrics(struct drv_agent *a, struct drv_prom *w, int64_t now_ms);

#endif
