/*
 * sched_int.h: the scheduler state's insides, shared by sched.c (the
 * state, the calls that change it, the queries and formatting) and
 * sched_pass.c (the pass). Not part of the public contract.
 */
#ifndef DROVER_SCHED_INT_H
#define DROVER_SCHED_INT_H

#include "drover/sched.h"

#define SJ_FREE 0xff
#define T_INF INT64_MAX
#define SCHED_MAX_POOLS 64

struct sched_class {
	char *name;
	int32_t value;
	enum drv_preempt_policy policy;
};

struct sched_tenant {
	char *name;
	int32_t cohort;   /* -1 = none */
	int32_t weight;
	bool has_quota;   /* any quota set */
	uint32_t quota_models;   /* models with a quota (bit m: quota[m] >= 0) */
	int64_t quota[DRV_MAX_MODELS];
	int64_t limit[DRV_MAX_MODELS];
	int64_t usage[DRV_MAX_MODELS];  /* milli-GPUs held by running + terminating jobs */
	int64_t usage_all;              /* over all models */
	/* s->quota_seq when usage[m] last changed (quota_check's answers for m
	 * may have changed since; see sched_job.quota_seq) */
	uint64_t quota_changed[DRV_MAX_MODELS];
	int64_t fair_use;                   /* fair: virtual use while a pass merges */
};

struct sched_job {
	const struct drv_job *job;
	uint64_t id;
	/* pending: its reason was set to "quota" (the check before placement)
	 * when s->quota_seq had this value (0 = its reason is not that). While
	 * nothing that check reads changed since (its tenant's use of its
	 * model, the cohort's, the tenants' settings: quota_changed, cohort chg, quota_all_changed
	 * all <= quota_seq), a pass would set the same reason again, so it may
	 * skip the job (next to state and reason_pass: one cache line) */
	uint64_t quota_seq;
	uint32_t reason_pass;      /* pending: pass number that set why */
	uint8_t state;          /* enum drv_sched_job_state, or SJ_FREE */
	bool preemptible;
	bool never_preempts;    /* class policy Never */
	bool quota_any_model;   /* job's model is -1: quota checked after placement */
	int32_t prio;
	int32_t tenant;
	int32_t model;          /* the one model all GPU groups ask for, or -1 */
	int32_t quota_model;         /* model its quota is charged to before placement, or -1 */
	int64_t need_milli;     /* GPU milli over all tasks */
	int32_t need_whole;     /* whole GPUs over all tasks */
	int32_t max_task;       /* largest whole-GPU task */
	int32_t full_tasks;     /* tasks that need a whole node of the largest size */
	int32_t min_frac;       /* smallest fractional task (milli), 0 = none */
	bool gpuless;           /* asks for no GPU at all */
	int32_t level;          /* required topology level, -1 = none */
	uint64_t pool_mask;     /* pools it may use (0 with pools_none) */
	bool pools_none;        /* no pool allowed at all */
	bool never;             /* can never fit the cluster as it is */
	int64_t cap_milli;      /* GPU capacity it may ever use (up nodes, its pools) */
	int64_t dur;            /* own runtime for backfill: estimate, else limit; 0 = unknown */
	int64_t submit;
	int64_t attained;       /* milli-GPU-seconds before the current run */

	/* running / terminating */
	struct drv_placement pl;
	int32_t pool;           /* pool of its placement (first task), -1 */
	int32_t place_model;         /* GPU model of its placement (first task), -1 */
	int32_t las_queue;           /* LAS queue, as of the pass that last set it */
	int64_t start;
	int64_t end;            /* expected end (T_INF unknown); key of the running list */
	int64_t grace;          /* terminating: deadline */
	uint64_t preempted_by;

	/* pending: preemption in progress */
	int32_t victims_left;
	int64_t nomination_deadline;
	struct drv_placement nomination;

	/* pending: its last placement attempt failed while s->rel_gen had this
	 * value (UINT64_MAX = none); nothing was freed since, so it still would */
	uint64_t fail_gen;
	bool fail_topo;
	/* pending: its last preemption search failed in this situation; the
	 * same search would fail again */
	struct {
		bool valid, tried;
		uint64_t rel, start;
		int64_t until, t_min;
		int32_t nresv, blk;
	} preempt_memo;

	/* pending: order keys (valid for s->keyed_order) */
	int64_t key_prio;          /* effective priority (with aging) */
	int64_t key_policy;           /* policy key */
	int64_t next_age;       /* when key_prio next changes (T_INF = never) */

	/* pending: reason of the last pass that visited it */
	struct drv_sched_decision why;
	uint32_t added_pass;    /* s->pass_no when it became pending */
	bool why_emitted;
};

/* What the pass reads of a pending job before touching the job itself:
 * one compact entry per s->pend position, so a pass over a long queue that
 * mostly cannot start stays in cache. */
struct pend_compact {
	int64_t key_prio;
	int64_t need_milli;
	int32_t tenant;
	int32_t need_whole;
	int32_t full_tasks;
	int16_t max_task;
	int16_t min_frac;
	int32_t prio;
	uint8_t never;
	uint8_t gpuless;
	uint8_t held;           /* holds a nominated placement: never skipped */
	int8_t quota_model;          /* sched_job.quota_model */
	int64_t dur;
	uint64_t quota_seq;          /* sched_job.quota_seq as of its last visit (0: visit it) */
};

struct queue_rest;

/* What a preemption search reads of a running job, parallel to s->run. */
struct run_compact {
	int64_t start;
	int64_t need_milli;
	uint64_t id;
	int32_t slot, prio, las_queue, place_model, pool, tenant;
	bool ok;                /* running (not terminating) and preemptible */
};

struct reservation {
	int32_t job;            /* slot */
	int64_t at;
	bool nominated;         /* held for a preemptor, not a backfill reservation */
	struct drv_placement pl;
};

struct drv_sched {
	struct drv_cluster *c;

	struct sched_job *jobs;
	int32_t njobs;          /* slots used (including free ones) */
	size_t jcap;
	int32_t *free_slots;
	int32_t nfree;
	size_t fcap;

	/* id -> slot, open addressing, power-of-two size, -1 empty, -2 deleted */
	uint64_t *id_keys;
	int32_t *id_slots;
	size_t hcap;
	size_t hused;

	/* pending, sorted by (key_prio desc, key_policy, submit, id) */
	int32_t *pend;
	struct pend_compact *pend_compact;      /* parallel to pend */
	bool pend_compact_stale;        /* pend was re-sorted: rebuild pend_compact */
	int32_t npend;
	size_t pcap;
	size_t pend_compact_cap;
	enum drv_sched_order keyed_order;
	bool keys_valid;
	int64_t keys_at;        /* time keys were computed for */
	int64_t next_age;       /* min over pending of next_age */
	struct drv_sched_policy keyed_pol; /* aging/LAS settings the keys used */

	/* running + terminating, sorted by (end, id) */
	int32_t *run;
	struct run_compact *run_compact;      /* parallel to run */
	int32_t nrun;
	size_t rcap;
	size_t run_compact_cap;
	/* over the run_compact entries that are ok (possible victims): the least
	 * priority, and the highest LAS queue among those of that priority;
	 * a preemption search whose job is above neither finds no victim by
	 * priority or LAS without scanning (recomputed when dirty) */
	struct {
		bool dirty;
		int32_t least_prio; /* INT32_MAX: no possible victim */
		int32_t most_las_queue; /* INT32_MIN: none */
	} victim_bounds;

	struct sched_class *classes;
	int32_t nclasses;
	size_t ccap;
	struct sched_tenant *tenants;
	int32_t ntenants;
	size_t tcap;
	char **cohorts;
	int32_t ncohorts;
	size_t cocap;
	/* quota answers: a counter bumped at every change a quota check
	 * reads; per cohort and model, its value when a member's use of the
	 * model last changed (cohort_changed); at the last change of any tenant's
	 * settings or the cluster (quota_all_changed) */
	uint64_t quota_seq;
	uint64_t quota_all_changed;
	struct model_seqs { uint64_t m[DRV_MAX_MODELS]; } *cohort_changed;
	size_t cohort_changed_cap;

	/* per pool */
	int32_t pool_nodes[SCHED_MAX_POOLS];
	int32_t pool_inflight[SCHED_MAX_POOLS];
	int32_t pool_tmpl_model[SCHED_MAX_POOLS];
	int32_t pool_tmpl_gpus[SCHED_MAX_POOLS];
	int32_t pool_speed[SCHED_MAX_POOLS];
	uint64_t spot_mask;
	uint64_t all_pools;

	/* per node */
	int64_t *idle_since;    /* INT64_MIN unknown, -1 busy */
	uint64_t *resv_mask;    /* GPUs reserved during a pass */
	int32_t nnodes_seen;
	bool idle_unknown;      /* some idle_since[] still INT64_MIN */

	/* pending preemptors holding a nominated placement */
	int32_t *preemptors;
	int32_t npreemptors;
	size_t preemptors_cap;

	/* reservations made by the last pass */
	struct reservation *resv;
	int32_t nresv;
	size_t resvcap;
	struct drv_placement block;   /* the GPUs a pass blocks for reservations */
	struct drv_placement scratch; /* placement attempts */
	struct drv_placement scratch2;
	struct drv_placement scratch3;

	/* pass scratch */
	int32_t *scratch_slots;         /* victims, sweeps */
	size_t scratch_slots_cap;
	int32_t *scratch_slots2;
	size_t scratch_slots2_cap;
	struct queue_rest *fair_suffix;    /* fair merge: what the rest of a tenant's queue needs */
	size_t fair_suffix_cap;
	int32_t *visited;       /* slots the last pass gave a reason */
	size_t vcap;
	int32_t *quota_held_seen;      /* slots it found held at quota as they were */
	size_t quota_held_seen_cap;

	/* pending demand, for stopping a pass early: counts by whole-GPU task
	 * size (max_task, 1..64) and by fractional task size (1..999) */
	int32_t cnt_task[DRV_MAX_NODE_GPUS + 1];
	int32_t cnt_frac[DRV_MILLI];
	int32_t cnt_gpuless;
	/* the reason of the jobs a pass stopped before reaching */
	struct drv_sched_decision tail_why;
	uint32_t tail_pass;     /* pass that stopped early (0 = none) */

	/* what changed since: occupancy grew or ends moved (occ), or something
	 * was freed (free); a cached reservation is valid while neither moved */
	uint64_t occ_gen;
	uint64_t free_gen;
	uint64_t rel_gen;       /* any resources released or capacity added */
	uint64_t start_gen;     /* any job started */
	int32_t last_place, last_pools; /* placement settings of the last pass */
	struct {
		bool valid;
		uint64_t id;
		int64_t at;
		uint64_t occ, free;
		int64_t default_runtime;
		int32_t place, pools;
		struct drv_placement pl;
	} resv_cache;

	uint32_t pass_no;
	int64_t last_now;
	int32_t max_node_gpus;
	int32_t only_model;     /* the cluster's one GPU model, -1 when mixed or none */
};

/* sched.c */
int32_t sched__lookup(const struct drv_sched *s, uint64_t id);
void sched__pend_compact_fill(struct drv_sched *s, int32_t pos);
void sched__pend_compact_rebuild(struct drv_sched *s);
void sched__pend_compact_refresh(struct drv_sched *s, int32_t slot);
void sched__nomination_drop(struct drv_sched *s, int32_t slot);
void sched__run_compact_rebuild(struct drv_sched *s);
void sched__victim_bounds_add(struct drv_sched *s, const struct run_compact *h);
void sched__victim_bounds_refresh(struct drv_sched *s);
void sched__demand(struct drv_sched *s, const struct sched_job *j, int d);
void sched__pend_remove(struct drv_sched *s, int32_t slot);
void sched__pend_insert(struct drv_sched *s, int32_t slot);
void sched__run_insert(struct drv_sched *s, int32_t slot);
void sched__run_remove(struct drv_sched *s, int32_t slot);
void sched__key(const struct drv_sched *s, struct sched_job *j, int64_t now,
		const struct drv_sched_policy *pol);
int sched__cmp_pend(const struct drv_sched *s, int32_t a, int32_t b);
int32_t sched__las_queue(const struct drv_sched_policy *pol, int64_t attained_milli_s);
void sched__usage(struct drv_sched *s, struct sched_job *j, int sign);
void sched__node_touch(struct drv_sched *s, const struct drv_placement *p, int64_t now);
void sched__refresh_cluster(struct drv_sched *s);
void sched__start(struct drv_sched *s, int32_t slot, const struct drv_placement *p, int64_t now);
int64_t sched__model_milli(const struct drv_sched *s, const struct drv_placement *p, int model);

/* A pending job (its compact entry) whose reason is "quota" and that a pass
 * would give the same reason again, numbers and all: nothing that check
 * reads has changed since. */
static inline bool sched__quota_held(const struct drv_sched *s, const struct pend_compact *h)
{
	const struct sched_tenant *t;
	uint64_t q = h->quota_seq;
	if (!q || q < s->quota_all_changed)
		return false;
	t = &s->tenants[h->tenant];
	return q >= t->quota_changed[h->quota_model] && (t->cohort < 0 || q >= s->cohort_changed[t->cohort].m[h->quota_model]);
}

#endif
