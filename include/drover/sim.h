/*
 * sim.h: drover's trace-driven simulator (src/sim/, owner: sim, issue 4).
 *
 * A workload (jobs with submit times and true durations) is replayed on a
 * virtual cluster through the very same scheduling pass the controller uses
 * (include/drover/sched.h). Time is virtual: integer seconds from the
 * workload's first submit. The wall clock is read only to report how long
 * the run took; every random choice comes from a seeded generator, so the
 * same inputs give byte-identical outputs.
 *
 * Pieces, each usable on its own:
 *   - workloads: readers for the Philly CSV and drover's native CSV
 *     (docs/simulator.md), a writer for the native CSV, a synthetic
 *     generator (src/sim/trace.c, src/sim/gen.c);
 *   - an event heap keyed by (time, sequence) (src/sim/heap.c);
 *   - the engine: events, scheduling passes, failures, metrics
 *     (src/sim/engine.c);
 *   - outputs: JSON summary, per-run CSV, HTML report (src/sim/summary.c,
 *     src/sim/report.c);
 *   - tenants, quotas and priority classes from a tenants file
 *     (include/drover/tenants.h; src/sim/tenants.c binds it to a workload).
 *
 * Ownership: a struct drv_sim_workload owns its jobs and every string they
 * point to (tenant names are interned in the workload); release it with
 * drv_sim_workload_release, never with drv_job_release on its jobs.
 */
#ifndef DROVER_SIM_H
#define DROVER_SIM_H

#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"
#include "drover/sched.h"
#include "drover/tenants.h"

#include <stdio.h>

/* ---------------------------------------------------------------------------
 * Random numbers: xoshiro256** seeded through splitmix64. Every random
 * choice of the simulator draws from one of these, never from rand().
 */
struct drv_rng {
	uint64_t s[4];
};

void drv_rng_seed(struct drv_rng *r, uint64_t seed);
uint64_t drv_rng_next(struct drv_rng *r);
/* Uniform in (0, 1]: never 0, so -log(u) is finite. */
double drv_rng_unit(struct drv_rng *r);
/* Exponential with the given mean. */
double drv_rng_exp(struct drv_rng *r, double mean);
/* Standard normal (Box-Muller). */
double drv_rng_normal(struct drv_rng *r);

/* ---------------------------------------------------------------------------
 * Workloads.
 */

#define DRV_SIM_SERVICE (-1) /* duration of a service: runs until the end */

struct drv_sim_job {
	struct drv_job job;   /* id = index + 1 in submit order; submit_time is
			       * seconds from the workload's first submit */
	int64_t duration;     /* seconds of work, or DRV_SIM_SERVICE */
	int32_t line;         /* source line (1-based), 0 when generated */
	int32_t tenant;       /* index into the workload's tenants */
	int32_t pclass;       /* index into the workload's classes, -1 = none
			       * (then job.priority is its priority value) */
	char *reject;         /* set by drv_sim_run: why it can never run */
};

struct drv_sim_workload {
	struct drv_sim_job *jobs;   /* sorted by (submit_time, line) */
	int32_t njobs;
	size_t cap;
	char **tenants;             /* interned, in order of first appearance */
	int32_t ntenants;
	size_t tcap;
	char **classes;             /* priority class names a job may name (copied
				     * from a tenants file before reading) */
	int32_t *class_values;      /* their priority values */
	int32_t nclasses;
	int64_t epoch;              /* absolute time of submit_time 0 (Philly:
				     * Unix seconds of the first submit) */
	int64_t malformed;          /* rows skipped as malformed */
	int64_t blank;              /* blank lines skipped */
};

void drv_sim_workload_init(struct drv_sim_workload *w);
void drv_sim_workload_release(struct drv_sim_workload *w);
/* Index of tenant name, interning it when new. */
int32_t drv_sim_tenant(struct drv_sim_workload *w, const char *name);

/*
 * Tenants files (include/drover/tenants.h) and workloads, in two steps:
 *
 * drv_sim_workload_set_classes: before reading a trace, tells w the
 *   priority classes of t, so that the native CSV's priority column may
 *   name one (its value becomes job.priority). Replaces any classes w had.
 * drv_sim_bind_tenants: after reading (or generating), gives every job
 *   that names no class and has priority 0 (Philly rows, native rows with
 *   an empty priority) its tenant's priorityClass, if the file gives one.
 *   Warns into d, at the tenant's line in the file, about each tenant of
 *   the file that no job of w belongs to (a misspelt name limits nothing),
 *   and, given the cluster c (or NULL), about each quota that names only
 *   GPU models c has none of. Returns the number of jobs that got a class.
 */
void drv_sim_workload_set_classes(struct drv_sim_workload *w, const struct drv_tenants *t);
int32_t drv_sim_bind_tenants(struct drv_sim_workload *w, const struct drv_tenants *t,
			     const struct drv_cluster *c, struct drv_diags *d);

/*
 * Reads the Philly CSV (timestamp,duration,num_gpus,gpu_time,cluster).
 * Rows need not be in time order. A job of n GPUs is one task when
 * n <= node_gpus, else tasks of node_gpus each and one task of the
 * remainder, all one gang. Tenants are the cluster column. The runtime
 * estimate is the true duration (the sjf oracle baseline).
 *
 * Blank lines are skipped. A malformed row is reported into d (a warning)
 * and counted in w->malformed; with strict it is an error instead. Returns
 * 0, or DRV_EPARSE when strict and any row was malformed (w then holds
 * nothing), or DRV_EIO on a read error.
 */
int drv_sim_read_philly(FILE *f, int node_gpus, bool strict, struct drv_sim_workload *w,
			struct drv_diags *d);

/*
 * Reads drover's native workload CSV (docs/simulator.md). Same rules for
 * blank lines, malformed rows and strict as drv_sim_read_philly; a header
 * that is missing or names an unknown column is always an error.
 */
int drv_sim_read_native(FILE *f, bool strict, struct drv_sim_workload *w,
			struct drv_diags *d);

/* Writes w as native CSV that drv_sim_read_native reads back to the same
 * jobs. Returns 0 or DRV_EIO. */
int drv_sim_write_native(FILE *f, const struct drv_sim_workload *w);

enum drv_sim_dist {
	DRV_SIM_DIST_PHILLY = 0, /* Philly-like size mix, log-normal durations */
	DRV_SIM_DIST_EXP = 1,    /* one task of one GPU, exponential durations */
};

struct drv_sim_gen_opts {
	int32_t njobs;
	double load;             /* offered GPU load / cluster GPUs, e.g. 0.8 */
	uint64_t seed;
	enum drv_sim_dist dist;
	double mean_duration_s;  /* DRV_SIM_DIST_EXP: mean service time */
	int32_t node_gpus;       /* gang split, as for Philly */
	int32_t total_gpus;      /* the cluster's GPUs, for the arrival rate */
};

/*
 * Generates a synthetic workload: Poisson arrivals whose rate makes the
 * offered load (GPU-seconds per second / total_gpus) equal o->load, a
 * Philly-like mix of sizes and durations, priorities and tenants (or
 * M/M/c-style jobs with DRV_SIM_DIST_EXP). Deterministic in o->seed.
 * Returns 0 or DRV_EINVAL for impossible options.
 */
int drv_sim_generate(const struct drv_sim_gen_opts *o, struct drv_sim_workload *w);

/* ---------------------------------------------------------------------------
 * Event heap: a binary min-heap ordered by (time, seq); seq is assigned on
 * push, so events at the same time pop in the order they were pushed.
 */

enum drv_sim_ev_type {
	DRV_SIM_EV_FINISH = 1,    /* a = job index, b = run token */
	DRV_SIM_EV_GRACE = 2,     /* a preempted job's grace ends; a = job, b = token */
	DRV_SIM_EV_FAIL = 3,      /* a = node */
	DRV_SIM_EV_REPAIR = 4,    /* a = node */
	DRV_SIM_EV_PROVISION = 5, /* a = provisioning request */
	DRV_SIM_EV_TICK = 6,      /* a pass is due (a job's grow_wait has passed) */
};

struct drv_sim_event {
	int64_t time;
	uint64_t seq;
	int32_t type;
	int32_t a;
	int64_t b;
};

struct drv_sim_heap {
	struct drv_sim_event *v;
	size_t n, cap;
	uint64_t next_seq;
};

void drv_sim_heap_init(struct drv_sim_heap *h);
void drv_sim_heap_release(struct drv_sim_heap *h);
void drv_sim_heap_push(struct drv_sim_heap *h, int64_t time, int32_t type, int32_t a, int64_t b);
/* Removes the earliest event into *out; returns false when empty. */
bool drv_sim_heap_pop(struct drv_sim_heap *h, struct drv_sim_event *out);
/* The earliest event, or NULL when empty. */
const struct drv_sim_event *drv_sim_heap_peek(const struct drv_sim_heap *h);

/* ---------------------------------------------------------------------------
 * Running a simulation.
 */

enum drv_sim_outcome {
	DRV_SIM_COMPLETED = 0,
	DRV_SIM_PREEMPTED = 1,   /* run ended by preemption; the job was requeued */
	DRV_SIM_FAILED = 2,      /* run ended by a node failure; requeued whole */
	DRV_SIM_RUNNING = 3,     /* still running at the end (services) */
	DRV_SIM_NEVER = 4,       /* never started */
	DRV_SIM_REJECTED = 5,    /* can never run on this cluster */
	DRV_SIM_TIMEOUT = 6,     /* killed at its time limit */
};

const char *drv_sim_outcome_name(enum drv_sim_outcome o);

/* One run (attempt) of a job; a job that never ran has one with start -1. */
struct drv_sim_run {
	int32_t job;             /* index into the workload */
	int32_t attempt;         /* 0, 1, ... */
	int64_t start;           /* s, -1 when never started */
	int64_t end;             /* s, -1 when never started or still running */
	enum drv_sim_outcome outcome;
	struct drv_placement place;
	int64_t cost_micro;      /* micro-dollars this run cost */
};

/* One step of the time series: from time t on, these values held. */
struct drv_sim_sample {
	int64_t t;
	int64_t alloc_milli;     /* GPUs allocated, milli */
	int32_t queued;          /* pending jobs */
	int32_t running;         /* running jobs */
};

struct drv_sim_summary {
	int64_t jobs, completed, rejected, malformed, never_started, services;
	double avg_jct_s, p50_jct_s, p99_jct_s, avg_wait_s, p99_wait_s;
	int64_t makespan_s;
	double gpu_alloc_ratio;
	int64_t preemptions, failures, requeues;
	double lost_gpu_hours;
	double cost_usd;
	int64_t events, passes;
	double sim_wall_s;
	/* Little's law, measured two independent ways */
	double mean_in_system;     /* time-average of jobs submitted, not ended */
	double arrival_rate;       /* accepted jobs / observed span, per s */
	double mean_sojourn_s;     /* mean (end - submit), ends capped at the span */
};

struct drv_sim_opts {
	const struct drv_sched_policy *policy; /* queue order, mode, preemption, pools */
	double mtbf_hours;         /* per node; 0 = no failures */
	double repair_hours;       /* mean repair time */
	uint64_t seed;
	int64_t provision_delay_s; /* elastic nodes become usable after this */
	bool progress;             /* progress bar on stderr */
	bool record_samples;       /* keep the time series (the report needs it) */
	bool every_pass;           /* never skip a pass (tests: skipping changes nothing) */
	int64_t preempt_cost_s;    /* work a preempted run loses (since its last
				    * checkpoint), at most what it ran: counted in
				    * its JCT and lost_gpu_hours */
	const struct drv_tenants *tenants; /* quotas, weights, cohorts, classes; NULL =
				    * none (every tenant unlimited, weight 1).
				    * Needed when jobs name classes. */
};

/* What one tenant got. Times in seconds, as the summary's. */
struct drv_sim_tenant_sum {
	int64_t jobs, completed, rejected, never_started, preempted;
	double avg_wait_s, p99_wait_s, avg_jct_s;
	double gpu_hours;          /* allocated GPU-hours over all its runs */
	double avg_gpus;           /* gpu_hours / the makespan */
	double peak_gpus;          /* most GPUs it held at one instant */
	double quota_gpus;         /* its nominal quota summed over the cluster's GPU
				    * models; -1 = no quota */
};

struct drv_sim_result {
	struct drv_sim_summary sum;
	struct drv_sim_run *runs;  /* sorted by (job, attempt) */
	size_t nruns, rcap;
	struct drv_sim_sample *samples;
	size_t nsamples, scap;
	int64_t total_gpus;
	struct drv_sim_tenant_sum *tenants; /* per workload tenant, same order */
	int32_t ntenants;
};

void drv_sim_result_init(struct drv_sim_result *r);
void drv_sim_result_release(struct drv_sim_result *r);

/*
 * Replays w on c under o->policy, one scheduling pass per distinct event
 * time. c is modified (it ends in the final state; failed nodes may be
 * down, provisioned nodes added). Jobs the scheduler finds can never run
 * get job->reject. Fills r (initialised by the caller). Returns 0, or a
 * negative drv_err when the scheduler fails or returns a decision the
 * virtual cluster cannot apply (a bug either way).
 */
int drv_sim_run(struct drv_cluster *c, struct drv_sim_workload *w,
		const struct drv_sim_opts *o, struct drv_sim_result *r);

/*
 * GPUs lost to NVLink-domain packing over [from, to) of a finished run
 * (src/sim/packing.c). Replays w's submits and r's runs on c's nodes (c is
 * only read: its nodes, their GPUs and NVLink domains) and sums, over time:
 *
 *   lost: at an instant when a job that requires one NVLink domain is
 *     pending, the free GPUs F would hold the smallest such job (s GPUs)
 *     and no single domain has s free GPUs, all F free GPUs (an upper
 *     bound on what a better packing could have started then);
 *   idle_wait: free GPUs at any instant when such a job is pending
 *     (packing and queue order together: a backfill reservation's hold
 *     counts here, not in lost);
 *   repack_lost: lost, only at instants when a packing exists of what
 *     runs (a domain-bound run whole, any other task by task) with that
 *     smallest job beside it (an exact search, bounded): some other
 *     placement would have started it. Where none exists (gangs that together cannot share
 *     the domains otherwise; a rack being drained for a whole-rack gang)
 *     the idle GPUs are the price of gangs, not of packing;
 *   alloc: GPUs with anything on them.
 *
 * GPU-seconds; lost_gpu_s / gpu_s is the share lost. Rejected jobs are
 * never pending; a requeued run (preempted) makes its job pending again.
 * Returns 0, or DRV_EINVAL when to < from or the run had node failures
 * (the replay assumes every node up).
 */
struct drv_sim_packing {
	int64_t from, to;          /* the window, s */
	int64_t events;            /* distinct event instants inside it */
	double gpu_s;              /* the cluster's GPUs x (to - from) */
	double alloc_gpu_s;
	double idle_wait_gpu_s;
	double lost_gpu_s;
	double repack_lost_gpu_s;  /* lost, at instants a repacking exists */
	int64_t repack_undecided;  /* lost instants whose search ran out of steps
				    * (not in repack_lost_gpu_s) */
};

int drv_sim_packing_loss(const struct drv_cluster *c, const struct drv_sim_workload *w,
			 const struct drv_sim_result *r, int64_t from, int64_t to,
			 struct drv_sim_packing *out);

/* ---------------------------------------------------------------------------
 * Outputs.
 */

/* The summary object (docs/simulator.md lists the keys), with per-tenant
 * figures under "tenants" (names from w); with config_json, the policy and
 * input description are added under "config". Returns 0/DRV_EIO. */
int drv_sim_write_json(FILE *f, const struct drv_sim_workload *w, const struct drv_sim_result *r,
		       const char *config_json);
/* One CSV row per run: job,attempt,tenant,submit_s,start_s,end_s,gpus,
 * gpu_milli,tasks,placement,preempted,cost_usd,outcome,priority,reason,
 * priority_class. */
int drv_sim_write_jobs(FILE *f, const struct drv_cluster *c, const struct drv_sim_workload *w,
		       const struct drv_sim_result *r);
/* A self-contained HTML page with inline SVG charts. */
int drv_sim_write_report(FILE *f, const struct drv_cluster *c, const struct drv_sim_workload *w,
			 const struct drv_sim_result *r, const char *title);

#endif
