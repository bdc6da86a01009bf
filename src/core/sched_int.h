/*
 * sched_int.h: the scheduler's insides, shared by the src/core/sched*.c
 * files; not part of the public contract. Two halves: the state (struct
 * drv_sched and the jobs, tenants and reservations it holds, with the
 * calls that keep its lists sorted: sched.c, sched_queue.c), and the pass
 * (struct pass, what one drv_sched_pass call carries from step to step,
 * and the steps' entry points: sched_pass.c and the files it names).
 *
 * Everything here follows the core's rules: no I/O, no clock, no globals;
 * slots (int32_t) index s->jobs, positions index s->pend or s->run. The
 * sched__ functions return nothing to check unless they say so. Nothing
 * allocates per decision: the state's own arrays grow (and are kept), and
 * only a full re-sort of the queue (sched_order.c) takes a temporary.
 */
#ifndef DROVER_SCHED_INT_H
#define DROVER_SCHED_INT_H

#include "drover/sched.h"
#include "drover/seqtree.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SJ_FREE 0xff
#define T_INF INT64_MAX
#define SCHED_MAX_POOLS 64

struct sched_class {
	char *name;
	int32_t value;
	enum drv_preempt_policy policy;
};

/* What a quota check's answer and reason depend on besides the job's need
 * and the settings: the tenant's use of the model (sched__quota_use), what
 * it may borrow, and when its users' state last changed (users_changed). */
struct quota_vals {
	int64_t use, may;
	uint64_t users;
};

#define QUOTA_SEEN 4

struct sched_tenant {
	char *name;
	int32_t cohort;   /* -1 = none */
	int32_t weight;
	bool has_quota;   /* any quota set */
	uint32_t quota_models;  /* models with a quota (bit m: quota[m] >= 0) */
	int64_t quota[DRV_MAX_MODELS];
	int64_t limit[DRV_MAX_MODELS];
	int64_t usage[DRV_MAX_MODELS];  /* milli-GPUs held by running + terminating jobs */
	int64_t usage_all;              /* over all models */
	/* milli-GPUs that change hands once pending preemptions end: held
	 * for its nominated preemptors (promised), held by its terminating
	 * jobs (leaving, also in usage). Quota checks read usage + promised
	 * (sched__quota_use), so what a reclaim frees is its reclaimer's and
	 * cannot be borrowed nor count as unused quota during the victims'
	 * grace; reclaim reads that less leaving (sched__reclaim_use), so a
	 * tenant's excess is not reclaimed twice. */
	int64_t promised[DRV_MAX_MODELS];
	int64_t leaving[DRV_MAX_MODELS];
	/* s->quota_seq when usage[m] last changed (sched__quota_check's
	 * answers for m may have changed since; see sched_job.quota_seq) */
	uint64_t quota_changed[DRV_MAX_MODELS];
	/* s->quota_seq when a job of it with a user (limits) started or
	 * stopped on m: its users' limits may answer otherwise */
	uint64_t users_changed[DRV_MAX_MODELS];
	/* per model, what a quota check's answer and reason depend on besides
	 * the job's need (sched__quota_sig_changed) */
	struct quota_sig {
		uint64_t at;            /* s->quota_seq when taken (0: never) */
		uint32_t vid;           /* names v among the values it had */
		uint32_t last_vid;      /* the last name given */
		struct quota_vals v;
		/* the last values it had, with their names: a use that goes
		 * back and forth (31, 32, 31 GPUs) keeps its names */
		struct quota_seen { struct quota_vals v; uint32_t vid; } seen[QUOTA_SEEN];
		uint32_t nseen;
	} sig[DRV_MAX_MODELS];
	int64_t fair_use;       /* fair: virtual use while a pass merges */
	double hist;            /* fair: decayed milli-GPU-seconds up to hist_at */
	int64_t hist_at;
};

struct sched_user {
	char *name;
	int32_t max_running, max_submitted;
	int64_t max_milli;
	int32_t running;        /* its jobs running or terminating */
	int64_t milli;          /* GPUs they hold */
	int32_t admitted;       /* its jobs counted against max_submitted */
};

struct sched_job {
	const struct drv_job *job;
	uint64_t id;
	/* pending: its reason was set to "quota" (the check before placement)
	 * when s->quota_seq had this value (0 = its reason is not that). While
	 * nothing that check reads changed since (its tenant's use of its
	 * model, the cohort's, the tenants' settings: quota_changed,
	 * cohort_changed, quota_all_changed all <= quota_seq), or changed
	 * only in ways that leave its answer as it was (sched__quota_held), a
	 * pass would set the same reason again, so it may skip the job (next to state
	 * and reason_pass: one cache line) */
	uint64_t quota_seq;
	uint32_t reason_pass;   /* pending: pass number that set why */
	uint32_t quota_vid;     /* names the values that check saw: quota_sig.vid */
	uint8_t state;          /* enum drv_sched_job_state, or SJ_FREE */
	bool preemptible;
	bool never_preempts;    /* class policy Never */
	bool quota_any_model;   /* job's model is -1: quota checked after placement */
	int32_t prio;
	int32_t tenant;
	int32_t user;           /* index into s->users, -1 = no limits */
	bool admitted;          /* counted against its user's max_submitted */
	int32_t model;          /* the one model all GPU groups ask for, or -1 */
	int32_t quota_model;    /* model its quota is charged to before placement, or -1 */
	int64_t need_milli;     /* GPU milli over all tasks */
	int32_t need_whole;     /* whole GPUs over all tasks */
	int32_t max_task;       /* largest whole-GPU task */
	int32_t full_tasks;     /* tasks that need a whole node of the largest size */
	int32_t min_frac;       /* smallest fractional task (milli), 0 = none */
	bool gpuless;           /* asks for no GPU at all */
	int32_t level;          /* required topology level, -1 = none */
	int32_t slice_level;    /* level each slice lies under, -1 = no slices */
	int32_t slice_size;     /* tasks per slice */
	uint64_t pool_mask;     /* pools it may use (0 with pools_none) */
	bool pools_none;        /* no pool allowed at all */
	bool never;             /* can never fit the cluster, or not while nodes are down */
	int64_t dur;            /* own runtime for backfill: estimate, else limit; 0 = unknown */
	int64_t submit;
	int64_t queued_at;      /* pending: since submit or its last stop (LAS promotion) */
	int64_t attained;       /* milli-GPU-seconds before the current run */
	/* pending: order keys (valid for s->keyed_order); with the fields
	 * above, what keying and the compact copy read sits in the first
	 * three cache lines of the job */
	int64_t key_prio;       /* effective priority (with aging) */
	int64_t key_policy;     /* policy key */
	int64_t next_age;       /* when key_prio next changes (T_INF = never) */
	struct drv_placement nomination; /* pending: held for it (preemption in progress) */
	struct drv_sched_decision never_why; /* when never: why (NEVER or NODE_DOWN) */

	/* running / terminating */
	struct drv_placement pl;
	int32_t pool;           /* pool of its placement (first task), -1 */
	int32_t place_model;    /* GPU model of its placement (first task), -1 */
	int32_t las_queue;      /* LAS queue, as of the pass that last set it */
	int64_t start;
	int64_t end;            /* expected end (T_INF unknown); key of the running list */
	int64_t grace;          /* terminating: deadline */
	uint64_t preempted_by;

	/* pending: preemption in progress */
	int32_t victims_left;
	int64_t nomination_deadline;

	/* pending: its last placement attempt failed while s->rel_gen had this
	 * value (UINT64_MAX = none); nothing was freed since, so it still would */
	uint64_t fail_gen;
	bool fail_topo;
	/* pending: its last preemption search failed in this situation; the
	 * same search would fail again */
	struct preempt_memo {
		bool valid, tried;          /* tried: it counted as a try */
		uint64_t rel_gen, start_gen;  /* s->rel_gen, s->start_gen then */
		int64_t until;              /* when a running job passes its minimum run time */
		int64_t t_min;              /* the pass's earliest reservation then */
		int32_t nresv, nblock;      /* reservations and block tasks then */
	} preempt_memo;

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
	int8_t quota_model;     /* sched_job.quota_model */
	int8_t las_q;           /* LAS: its queue (key_policy), else 0 */
	uint32_t quota_vid;     /* sched_job.quota_vid (in what was padding) */
	int64_t dur;
	uint64_t quota_seq;          /* sched_job.quota_seq as of its last visit (0: visit it) */
};

/*
 * What a run of SCHED_PBLK pending entries holds at least or at most, over
 * those that are not never: the queue walk passes over the whole run when
 * these bounds show every entry hopeless (sched__hopeless), rather than
 * reading each. Kept per block of the pend_compact buffer (by buffer index,
 * not queue position) and recomputed when an entry in it was written.
 */
#define SCHED_PBLK_SHIFT 6
#define SCHED_PBLK (1 << SCHED_PBLK_SHIFT)
struct pend_block {
	int32_t min_need, min_task, min_full; /* over entries needing whole GPUs */
	int32_t min_frac;                     /* over entries needing a share */
	int32_t max_prio, min_las_q;
	int64_t min_dur;                      /* least positive dur (T_INF: none) */
	bool valid;
	bool whole, frac;                     /* such entries are in it */
	bool stop;                            /* an entry no bound may pass over */
};

/* What a preemption search reads of a running job, parallel to s->run. */
struct run_compact {
	int64_t start;
	int64_t need_milli;
	uint64_t id;
	int64_t las_next;       /* when its LAS queue next grows (INT64_MIN: unknown) */
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
	/* a node changed state since the jobs were derived: the next pass
	 * refreshes them first (drv_sched_cluster_changed) */
	bool cluster_stale;

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
	struct pend_compact *pend_compact; /* parallel to pend */
	bool pend_compact_stale;        /* pend was re-sorted: rebuild pend_compact */
	struct pend_block *pblk;        /* per SCHED_PBLK entries of pend_compact_buf */
	size_t pblk_cap;
	/* scratch of the queue's full sort (sched_order.c), kept between passes */
	struct pend_sort_key *sort_rec;
	size_t sort_rec_cap;
	uint64_t *sort_u64;
	size_t sort_u64_cap;
	int32_t *sort_pend;
	size_t sort_pend_cap;
	uint8_t *start_mark;            /* by slot: started this pass (drop_started), else 0 */
	size_t start_mark_cap;
	int32_t *pend_buf;              /* pend = pend_buf + pend_off (sched_queue.c) */
	struct pend_compact *pend_compact_buf; /* pend_compact = ... + pend_off */
	int32_t pend_off;
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
	struct run_compact *run_compact; /* parallel to run */
	int32_t nrun;
	size_t rcap;
	size_t run_compact_cap;
	/* jobs started since the list was last sorted, in start order, each
	 * with its compact entry as of its start: a pass that starts many jobs
	 * merges them in once (sched__run_sync) rather than moving the list
	 * for each. Every reader of run/run_compact/nrun syncs first. */
	int32_t *run_add;
	struct run_compact *run_add_compact;
	int32_t nrun_add;
	size_t run_add_cap, run_add_compact_cap;
	/* over the run_compact entries that are ok (possible victims): the least
	 * priority, and the highest LAS queue among those of that priority;
	 * a preemption search whose job is above neither finds no victim by
	 * priority or LAS without scanning (recomputed when dirty) */
	/* bumped whenever run_compact's entries move or are refilled: an index
	 * into it taken at one generation is good while it lasts */
	uint64_t run_gen;
	/* LAS: the indices into run_compact of the possible victims past their
	 * minimum run time at las_elig_now, as of run_gen las_elig_gen */
	int32_t *las_elig;
	int32_t nlas_elig;
	size_t las_elig_cap;
	uint64_t las_elig_gen;
	int64_t las_elig_now;
	struct {
		bool dirty;
		int32_t least_prio; /* INT32_MAX: no possible victim */
		int32_t most_las_queue; /* INT32_MIN: none */
	} victim_bounds;

	struct sched_class *classes;
	int32_t nclasses;
	size_t ccap;
	struct sched_user *users;
	int32_t nusers;
	size_t ucap;
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
	int32_t *scratch_slots; /* victims, sweeps */
	size_t scratch_slots_cap;
	int32_t *scratch_slots2;
	size_t scratch_slots2_cap;
	/* the fair merge's chains as of pend_gen == fair_gen - 1 with
	 * fair_nt tenants (sched__fair_setup), by job slot, so that an entry
	 * coming or going moves nothing else: per tenant its first slot in
	 * queue order, per slot the next and previous of its tenant, what the
	 * job asks alone (fair_own) and what the rest of its tenant's queue
	 * from it needs (fair_suffix). A slot's queue position: fair_at
	 * while fair_at_ok (as the chains were built, until an entry comes
	 * or goes), else fair_seq, the queue's slots in order (O(log n);
	 * built at the first entry that comes or goes after the chains were:
	 * a full pass does without it) */
	struct queue_rest *fair_suffix, *fair_own;
	size_t fair_suffix_cap, fair_own_cap;
	int32_t *fair_first, *fair_next, *fair_prev, *fair_at;
	size_t fair_first_cap, fair_next_cap, fair_prev_cap, fair_at_cap;
	struct drv_seqtree fair_seq;
	bool fair_at_ok, fair_seq_ok;
	uint64_t fair_gen;
	int32_t fair_nt;
	uint64_t pend_gen; /* moves whenever s->pend or its compact copy is written */
	uint8_t *el_tenant;     /* per tenant: has a victim past its minimum run (pass) */
	size_t el_tenant_cap;
	/* per tenant: a cohort peer is over its quota of a model both have a
	 * quota of (its jobs may reclaim), as of quota_seq == may_reclaim_seq - 1 */
	uint8_t *may_reclaim;
	size_t may_reclaim_cap;
	uint64_t may_reclaim_seq;
	int32_t *visited;       /* slots the last pass gave a reason */
	size_t vcap;
	int32_t *quota_held_seen; /* slots it found held at quota as they were */
	size_t quota_held_seen_cap;

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
	/* the task shapes seen (every job submitted or added running), for
	 * the multi placement scorer; its half-life follows the policy */
	struct drv_place_mix mix;
	/* the first reservation of the last pass, while nothing could move it */
	struct resv_cache {
		bool valid;
		uint64_t id;
		int64_t at;
		uint64_t occ, free;
		int64_t default_runtime;
		int32_t place, pools;
		struct drv_placement pl;
	} resv_cache;

	int64_t fair_half_life; /* the last pass's fair_half_life_s */
	uint32_t pass_no;
	int64_t last_now;
	int32_t max_node_gpus;
	struct drv_capacity *cap; /* the cluster as configured (reason.c) */
	int32_t only_model;     /* the cluster's one GPU model, -1 when mixed or none */
};

/* sched_queue.c: jobs by id (sched__lookup: slot, or -1). */
int32_t sched__lookup(const struct drv_sched *s, uint64_t id);
void sched__id_grow(struct drv_sched *s);
void sched__id_put(struct drv_sched *s, uint64_t id, int32_t slot);
void sched__id_del(struct drv_sched *s, uint64_t id);

/* sched_queue.c: the pending list. Keys (effective priority and the
 * policy's key) at now; the list's order; its compact copy (fill one
 * position, rebuild all, refresh a slot's entry); insert and remove keep it
 * sorted. */
int32_t sched__las_queue(const struct drv_sched_policy *pol, int64_t attained_milli_s);
void sched__key(const struct drv_sched *s, struct sched_job *j, int64_t now,
		const struct drv_sched_policy *pol);
int sched__cmp_pend(const struct drv_sched *s, int32_t a, int32_t b);
void sched__pend_compact_fill(struct drv_sched *s, int32_t pos);
void sched__pend_compact_rebuild(struct drv_sched *s);
/* Room in the pending buffers for npend + 1 entries (entries may move). */
void sched__pend_reserve(struct drv_sched *s);
/* The pend_compact entries at queue positions [from, to) were written: their
 * blocks' bounds are recomputed when next asked for. */
static inline void sched__pend_touch(struct drv_sched *s, int32_t from, int32_t to)
{
	int32_t b, e;
	s->pend_gen++;
	if (from >= to)
		return;
	b = (s->pend_off + from) >> SCHED_PBLK_SHIFT;
	e = (s->pend_off + to - 1) >> SCHED_PBLK_SHIFT;
	for (; b <= e; b++)
		s->pblk[b].valid = false;
}
/* The bounds of the block holding queue positions [pos, pos + SCHED_PBLK),
 * pos block-aligned in the buffer and every entry of the block pending. */
const struct pend_block *sched__pend_block(struct drv_sched *s, int32_t pos);
void sched__pend_compact_refresh(struct drv_sched *s, int32_t slot);
void sched__pend_insert(struct drv_sched *s, int32_t slot);
/* sched_order.c: the fair merge's chains kept current as one entry is
 * inserted at queue position pos, job slot's entry removed (after the
 * queue lost it; its tenant given), or the entry at pos rewritten in place, when they were
 * current before (sched__fair_current); else they are built again at the
 * next fair pass. O(log n) each, but for the walk back to the inserted
 * entry's predecessor of its tenant. */
bool sched__fair_current(const struct drv_sched *s);
void sched__fair_inserted(struct drv_sched *s, int32_t pos);
void sched__fair_removed(struct drv_sched *s, int32_t slot, int32_t tenant);
void sched__fair_rewritten(struct drv_sched *s, int32_t pos);
void sched__pend_remove(struct drv_sched *s, int32_t slot);

/* sched_queue.c: the running list, its compact copy and the bounds over
 * possible victims (add one entry; recompute when dirty). */
void sched__run_insert(struct drv_sched *s, int32_t slot);
void sched__run_remove(struct drv_sched *s, int32_t slot);
void sched__run_compact_rebuild(struct drv_sched *s);
void sched__victim_bounds_add(struct drv_sched *s, const struct run_compact *h);
void sched__victim_bounds_refresh(struct drv_sched *s);
/* Merges the jobs started since into the sorted running list. */
void sched__run_flush(struct drv_sched *s);
static inline void sched__run_sync(struct drv_sched *s)
{
	if (s->nrun_add > 0)
		sched__run_flush(s);
}

/* sched.c: a job's quota use (sign +1 or -1), node idleness, the cluster
 * view after nodes changed, a job started on p, a preemptor's nomination
 * given up, and the milli-GPUs of model a placement holds. */
void sched__usage(struct drv_sched *s, struct sched_job *j, int sign, int64_t now);
/* fair: a tenant's decayed past use brought up to now (before its use
 * changes), and that use as an average of milli-GPUs. */
void sched__hist_advance(const struct drv_sched *s, struct sched_tenant *t, int64_t now);
int64_t sched__hist_milli(const struct drv_sched *s, const struct sched_tenant *t);
void sched__node_touch(struct drv_sched *s, const struct drv_placement *p, int64_t now);
void sched__refresh_cluster(struct drv_sched *s);
void sched__start(struct drv_sched *s, int32_t slot, const struct drv_placement *p, int64_t now);
void sched__nomination_drop(struct drv_sched *s, int32_t slot);
void sched__coming(struct drv_sched *s, const struct sched_job *j,
		   const struct drv_placement *pl, int sign, bool leaving);
static inline int64_t sched__quota_use(const struct sched_tenant *t, int m)
{
	return t->usage[m] + t->promised[m];
}
static inline int64_t sched__reclaim_use(const struct sched_tenant *t, int m)
{
	return t->usage[m] + t->promised[m] - t->leaving[m];
}
int64_t sched__model_milli(const struct drv_sched *s, const struct drv_placement *p, int model);

/*
 * What a quota check of tenant ti for model m reads, taken again only when
 * the counters it depends on moved, with a name for those values (the same
 * name while they are equal, also when they come back). A counter that
 * moved (a cohort peer's job started) with the values the same changes no
 * answer: a tenant at its borrowing limit may borrow nothing whatever its
 * peers do. The pass takes it when it sets a job's quota reason
 * (sched_job.quota_vid).
 */
const struct quota_sig *sched__quota_sig(struct drv_sched *s, int32_t ti, int m);

/* A pending job (its compact entry) whose reason is "quota" and that a
 * pass would give the same reason again, numbers and all: nothing that
 * check reads has changed since, or it is at the values it read (a
 * capped tenant's job ended and another of the same size started). */
static inline bool sched__quota_held(struct drv_sched *s, const struct pend_compact *h)
{
	const struct sched_tenant *t;
	const struct quota_sig *g;
	uint64_t q = h->quota_seq, latest;
	int m = h->quota_model;
	if (!q || q < s->quota_all_changed)
		return false;
	t = &s->tenants[h->tenant];
	latest = t->quota_changed[m];
	if (t->cohort >= 0)
		latest = DRV_MAX(latest, s->cohort_changed[t->cohort].m[m]);
	if (q >= latest)
		return true; /* nothing moved since */
	g = &t->sig[m];
	if (g->at < latest || g->at < s->quota_all_changed)
		g = sched__quota_sig(s, h->tenant, m);
	return h->quota_vid == g->vid;
}

/* ==== the pass ======================================================== */

/* Exact placement attempts in a sweep before it starts to gallop. */
#define GALLOP_AFTER 16

/* What one drv_sched_pass call carries from step to step (on its stack). */
struct pass {
	struct drv_sched *s;
	struct drv_cluster *c;
	const struct drv_sched_policy *pol;
	int64_t now;
	struct drv_sched_decisions *out;
	int32_t nblocked;
	uint64_t first_blocked;
	int32_t nresv_made;     /* reservations computed (depth) */
	int64_t t_min;          /* earliest reservation start */
	int32_t tries;
	bool blocked_on;        /* s->block committed */
	int64_t blocked_gpus;   /* GPUs in s->block */
	int32_t blocked_max;    /* most blocked GPUs on one node */
	int32_t min_prio_victim;/* least priority of a preemptible running job */
	bool reclaim_bounds;    /* some tenant has a cohort and a quota */
	int32_t first_resv;     /* index of the earliest reservation */
	bool resv_cached;       /* the first reservation is the cached one */
	int32_t exact_left;     /* exact "would fit but for a reservation" checks left */
	int32_t nfailed;        /* preemption searches that failed this pass, by shape */
	struct failed_shape {
		int64_t need_milli;
		int32_t need_whole, max_task, full_tasks, min_frac, level, model, prio, tenant;
		uint64_t pool_mask, preempted_by;
		int32_t nstarted, nresv, nblock, las_queue; /* the pass then */
		bool tried;
	} failed[16];
	bool las_queues_done;   /* running jobs' LAS queues computed this pass */
	/* with them, over the possible victims past their minimum run time:
	 * the least priority, the highest LAS queue among those of it */
	int32_t las_least_prio, las_most_queue;
	/* with a minimum run time: the possible victims past it, once a pass
	 * (starts this pass are not; stops only remove): their least priority,
	 * and s->el_tenant[t] set for the tenants that have one */
	bool el_done;
	int32_t el_least_prio;
	int32_t nstarted;
	int32_t prov_add[SCHED_MAX_POOLS];  /* nodes this pass asks each pool for */
	uint64_t prov_job[SCHED_MAX_POOLS]; /* the job the first request was for */
};

/* A pending reason with nothing filled in but the reason. */
static inline void sched__why_init(struct drv_sched_decision *w, enum drv_sched_reason r)
{
	memset(w, 0, sizeof(*w));
	w->kind = DRV_DEC_PENDING;
	w->reason = r;
	w->pool = -1;
	w->node = -1;
	w->model = -1;
	w->level = -1;
}

/* sched_pass.c: a new decision at the end of p->out (its pointer is valid
 * until the next one); a pending job's reason for this pass. */
struct drv_sched_decision *sched__decision_new(struct pass *p, enum drv_sched_dec_kind kind);
void sched__set_why(struct pass *p, struct sched_job *j, const struct drv_sched_decision *w);

/* sched_place.c: what is free for a job under its pools (or mask). */
struct avail {
	int64_t nodes;     /* nodes with nothing on them */
	int64_t whole;     /* free whole GPUs of the job's model */
	int64_t milli;     /* free milli */
	int32_t maxnode;   /* most free whole GPUs on one node */
	int32_t maxlevel;  /* most free whole GPUs under one vertex of its required level */
	int32_t maxpart;   /* most free milli on one partly used GPU */
};

/* Why a placement attempt failed. */
struct place_fail {
	bool quick;        /* the aggregates said no */
	bool never;
	bool topology;
};

void sched__job_avail(const struct drv_sched *s, const struct sched_job *j, uint64_t mask,
		      struct avail *a);
/* Could j fit in what a says is free? (A necessary condition.) */
static inline bool sched__avail_fits(const struct sched_job *j, const struct avail *a)
{
	if ((int64_t)j->need_whole > a->whole || j->max_task > a->maxnode || j->need_milli > a->milli)
		return false;
	if ((int64_t)j->full_tasks > a->nodes)
		return false;
	if (j->level >= 0 && j->need_whole > a->maxlevel)
		return false;
	if (j->min_frac > 0 && a->whole == 0 && j->min_frac > a->maxpart)
		return false;
	return true;
}
/* A necessary condition: may the job fit in these pools now? */
bool sched__fits_quick(const struct drv_sched *s, const struct sched_job *j, uint64_t mask);
/* The job's candidate pools in policy order into out[SCHED_MAX_POOLS];
 * returns how many (0 = use the whole cluster in one attempt). */
int32_t sched__pool_order(const struct pass *p, const struct sched_job *j, int32_t *out);
/* Tries to place j now: 0 with pl and *pool filled, or DRV_ENOSPACE with f. */
int sched__try_place(struct pass *p, const struct sched_job *j, struct drv_placement *pl,
		     int32_t *pool, struct place_fail *f);
/* Starts slot on pl: the state changes and its START decision. */
void sched__pass_start(struct pass *p, int32_t slot, const struct drv_placement *pl,
		       uint32_t flags);

/* sched_quota.c: may tenant ti take need more milli-GPUs of model m? 0 =
 * within its nominal quota, 1 = by borrowing from its cohort, -1 = no (w
 * filled when not NULL). The _placement form charges each model pl uses. */
int sched__quota_check(const struct drv_sched *s, int32_t ti, int m, int64_t need,
		       struct drv_sched_decision *w);
int sched__quota_check_placement(const struct drv_sched *s, const struct sched_job *j,
				 const struct drv_placement *pl, struct drv_sched_decision *w);
const uint8_t *sched__may_reclaim(struct drv_sched *s);
bool sched__reclaim_possible(const struct drv_sched *s, const struct sched_job *j,
			     const uint8_t *only);

/* sched_reserve.c: lifting and restoring the reservations' blocks; adding
 * and dropping a reservation (a nomination when nominated); the earliest
 * time j fits (T_INF: never, as far as known ends go), cached across
 * passes, with its placement in pl. */
void sched__blocks_off(struct pass *p);
void sched__blocks_on(struct pass *p);
void sched__resv_add(struct pass *p, int32_t slot, int64_t at, const struct drv_placement *pl,
		     bool nominated);
void sched__resv_drop(struct pass *p, int32_t slot);
int64_t sched__earliest_cached(struct pass *p, const struct sched_job *j,
			       struct drv_placement *pl);

/* sched_preempt.c: looks for victims for slot (quota_rc: its quota
 * check's answer); true when found and applied (victims terminating, the
 * job nominated, a PREEMPT decision). */
bool sched__try_preempt(struct pass *p, int32_t slot, int quota_rc);
/* Running jobs' LAS queues at p->now, and the pass's LAS victim bounds. */
void sched__las_queues_now(struct pass *p);

/* sched_elastic.c: asks an elastic pool for nodes for j (sets its reason);
 * releases elastic nodes idle long enough. */
void sched__consider_provision(struct pass *p, struct sched_job *j);
void sched__releases(struct pass *p);

/* sched_order.c: re-keys the pending queue at p->now and re-sorts it when
 * keys moved. */
void sched__rekey(struct pass *p);

/* What every job from one fair-merge slot on, in its tenant's queue, asks
 * for at least: enough to tell that none of them can start now. */
struct queue_rest {
	/* the least of need_whole, max_task and full_tasks over whole-GPU
	 * jobs (INT32_MAX: none), the least min_frac over fractional-only
	 * jobs (INT32_MAX: none) */
	int32_t min_need, min_task, min_full_tasks;
	int32_t min_frac;
	int32_t max_prio;
	int64_t min_dur;                 /* over jobs with a known duration */
	bool gpuless;
	bool held;                       /* a preemptor holding its placement */
};

/* The fair merge's state: head, hpos and act over s->scratch_slots2, the
 * rest the queue's per-tenant chains (s->fair_*), kept while the queue is. */
struct fair_merge {
	/* per tenant t: head[t] the job slot of its next job (-1: none
	 * left) and hpos[t] its queue position, then next[head[t]] and so on
	 * in queue order; act[0 .. nact) the tenants still merging; suf[j]
	 * what the rest of the tenant's queue from slot j on needs */
	int32_t *head, *hpos, *act, *next;
	struct queue_rest *suf;
	int32_t nact;
	int32_t swept_at;   /* visits when the active tenants were last checked */
	/* the tenant last taken (-1: none, or the active ones changed since),
	 * its slot in act, and the one that came second then (-1: none): only
	 * the one taken moved, so it is next again while it still comes
	 * before that second one */
	int32_t last, last_i, second;
};

struct bounds;
void sched__fair_setup(struct pass *p, struct fair_merge *fm);
/* Next queue position in fair order, or -1. drop: the bounds by which
 * tenants none of whose jobs can start drop out (NULL: none drops);
 * *dropped: jobs were left out. */
int32_t sched__fair_next(struct pass *p, struct fair_merge *fm, const struct bounds *drop, int32_t visits,
			 bool *dropped);
/* The queue position of a pending job slot while the chains are current
 * (O(1) until an entry came or went since they were built, then O(log n)
 * by the tree of the queue's slots). */
int32_t sched__fair_pos(const struct drv_sched *s, int32_t slot);
/* How far past a chain's entry its next is looked for in the queue itself
 * before the tree is asked: 16 slots, one cache line. */
#define SCHED_FAIR_NEAR 16
/* The same for a slot known to sit after queue position from: a chain's
 * next usually sits a few entries on (on Philly with the tenants file, 2.8
 * entries on average), so those are looked at first. */
static inline int32_t sched__fair_pos_after(const struct drv_sched *s, int32_t slot, int32_t from)
{
	int32_t k, end = DRV_MIN(s->npend, from + 1 + SCHED_FAIR_NEAR);
	if (s->fair_at_ok)
		return s->fair_at[slot];
	for (k = from + 1; k < end; k++)
		if (s->pend[k] == slot)
			return k;
	return sched__fair_pos(s, slot);
}

/* sched_scan.c: one pending job's turn. */
void sched__scan_one(struct pass *p, int32_t slot);

/* sched_pass.c: what the tight skip loop compares the compact entries with. */
struct bounds {
	int64_t nodes, nodes_loose;       /* free whole nodes: strict, and counting reserved ones */
	int64_t gpus, gpus_loose;         /* free whole GPUs: the same two ways */
	int32_t node_max, node_max_loose; /* most free on one node: the same two ways */
	int32_t part_max;                 /* most free milli on a partly used GPU */
	int64_t short_dur;                /* a job this short may use reserved GPUs */
	bool any_reserved;                /* some GPUs are blocked for reservations */
	bool preempt;                     /* preemption searches left */
	int32_t least_victim_prio;        /* least priority of a preemptible running job */
	int32_t las_most_queue;           /* LAS: highest queue of a victim of that priority */
	const uint8_t *may_reclaim;       /* per tenant (NULL: none may) */
};

void sched__bounds_get(const struct pass *p, struct bounds *b);

/* What a job may count on: free GPUs (w), the most on one node (m) and
 * whole free nodes (n); with the reserved ones when it is short enough to
 * end before their reservation starts. */
static inline void sched__limits(const struct bounds *b, bool short_job, int64_t *w, int32_t *m,
				 int64_t *n)
{
	bool loose = b->any_reserved && short_job;
	*w = loose ? b->gpus_loose : b->gpus;
	*m = loose ? b->node_max_loose : b->node_max;
	*n = loose ? b->nodes_loose : b->nodes;
}

/* True when the job surely can neither start (even on reserved GPUs, if it
 * is short) nor preempt, nor is anything but "resources". */
static inline bool sched__hopeless(const struct bounds *b, const struct pend_compact *h)
{
	int64_t w, n;
	int32_t m;
	if (h->never)
		return true;
	if (h->gpuless || h->held)
		return false; /* a preemptor: its held placement frees no root GPU */
	if (b->preempt && b->may_reclaim && b->may_reclaim[h->tenant])
		return false; /* it may reclaim whatever the priority */
	if (b->preempt && (h->prio > b->least_victim_prio ||
			   (h->prio == b->least_victim_prio && h->las_q < b->las_most_queue)))
		return false;
	sched__limits(b, h->dur > 0 && h->dur <= b->short_dur, &w, &m, &n);
	if (h->need_whole > w || h->max_task > m || h->full_tasks > n)
		return true;
	if (h->min_frac > 0 && w == 0 && h->min_frac > b->part_max)
		return true;
	return false;
}

/* True when no job of a tenant's rest (struct queue_rest) can start now. */
static inline bool sched__rest_hopeless(const struct bounds *b, const struct queue_rest *a)
{
	int64_t w, n;
	int32_t m;
	if (a->gpuless || a->held || (b->preempt && a->max_prio > b->least_victim_prio))
		return false;
	sched__limits(b, a->min_dur <= b->short_dur, &w, &m, &n);
	if (a->min_need != INT32_MAX && a->min_need <= w && a->min_task <= m &&
	    a->min_full_tasks <= n)
		return false;
	if (a->min_frac != INT32_MAX && (w > 0 || a->min_frac <= b->part_max))
		return false;
	return true;
}

/* A bounded text buffer both the decision formatter and the reason
 * function append to: fput() counts what would not fit, as snprintf does. */
struct fbuf {
	char *buf;
	size_t sz;
	size_t len;
};

static inline void fput(struct fbuf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void fput(struct fbuf *f, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(f->len < f->sz ? f->buf + f->len : NULL, f->len < f->sz ? f->sz - f->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len += (size_t)n;
}

#endif
