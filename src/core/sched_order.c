/*
 * sched_order.c: the order of the pending queue. Re-keying at the pass's
 * time (priority with aging, then the fifo/sjf/las key), re-sorting only
 * when keys moved, and the fair-share merge of the tenants' queues.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- the queue ---------------------------------------------------------- */

/*
 * The queue's order as one unsigned 256-bit key, most significant word
 * first: priority (descending), the policy key, submit time, id (each
 * ascending). Unsigned order of the words is the order of cmp_jobs.
 */
struct pend_sort_key {
	uint64_t w[4];
	int32_t pos; /* queue position before the sort */
};

static uint64_t ord_i64(int64_t x)
{
	return (uint64_t)x ^ (1ull << 63);
}

static void sort_key_of(const struct sched_job *j, int32_t pos, struct pend_sort_key *k)
{
	k->w[0] = ~ord_i64(j->key_prio);
	k->w[1] = ord_i64(j->key_policy);
	k->w[2] = ord_i64(j->submit);
	k->w[3] = j->id;
	k->pos = pos;
}

/* Bits needed to tell the values of a word apart: above its highest bit
 * that varies, every key agrees. */
static int varying_bits(uint64_t all_and, uint64_t all_or)
{
	uint64_t v = all_and ^ all_or;
	return v ? 64 - __builtin_clzll(v) : 0;
}

/*
 * Least-significant-digit radix sorts, byte by byte, passing over every
 * byte that is the same in all keys: two linear passes a byte that varies,
 * where qsort made n log n calls to a comparator. Both are stable, and the
 * key is a total order (ids differ), so the order is qsort's.
 */
static void radix_u64(uint64_t *k, uint64_t *tmp, int32_t n, uint64_t varies)
{
	uint64_t *base = k;
	int32_t i, byte;
	for (byte = 0; byte < 8; byte++) {
		int32_t cnt[256] = { 0 }, sum = 0, c;
		int sh = byte * 8;
		uint64_t *t;
		if (!((varies >> sh) & 0xff))
			continue;
		for (i = 0; i < n; i++)
			cnt[(k[i] >> sh) & 0xff]++;
		for (c = 0; c < 256; c++) {
			int32_t x = cnt[c];
			cnt[c] = sum;
			sum += x;
		}
		for (i = 0; i < n; i++)
			tmp[cnt[(k[i] >> sh) & 0xff]++] = k[i];
		t = k;
		k = tmp;
		tmp = t;
	}
	if (k != base) /* the last pass wrote the other buffer */
		memcpy(base, k, (size_t)n * sizeof(*k));
}

static void radix_keys(struct pend_sort_key *base, struct pend_sort_key *tmp, int32_t n,
		       const uint64_t *all_and, const uint64_t *all_or)
{
	struct pend_sort_key *k = base;
	int32_t i, w, byte;
	for (w = 3; w >= 0; w--) {
		uint64_t varies = all_and[w] ^ all_or[w];
		for (byte = 0; byte < 8; byte++) {
			int32_t cnt[256] = { 0 }, sum = 0, c;
			int sh = byte * 8;
			struct pend_sort_key *t;
			if (!((varies >> sh) & 0xff))
				continue;
			for (i = 0; i < n; i++)
				cnt[(k[i].w[w] >> sh) & 0xff]++;
			for (c = 0; c < 256; c++) {
				int32_t x = cnt[c];
				cnt[c] = sum;
				sum += x;
			}
			for (i = 0; i < n; i++)
				tmp[cnt[(k[i].w[w] >> sh) & 0xff]++] = k[i];
			t = k;
			k = tmp;
			tmp = t;
		}
	}
	if (k != base)
		memcpy(base, k, (size_t)n * sizeof(*k));
}

/*
 * Puts both lists in the new order in place, cycle by cycle: new entry i
 * is old entry perm[i] (perm is used up: -1 once placed). No copy of the
 * 64-byte compact entries is made, so a first sort touches no new memory
 * for them.
 */
static void permute_pending(struct drv_sched *s, int32_t *perm, int32_t n)
{
	int32_t i, j;
	for (i = 0; i < n; i++) {
		struct pend_compact tc;
		int32_t tp;
		if (perm[i] < 0)
			continue;
		if (perm[i] == i) {
			perm[i] = -1;
			continue;
		}
		tc = s->pend_compact[i];
		tp = s->pend[i];
		for (j = i;;) {
			int32_t from = perm[j];
			perm[j] = -1;
			if (from == i) {
				s->pend_compact[j] = tc;
				s->pend[j] = tp;
				break;
			}
			s->pend_compact[j] = s->pend_compact[from];
			s->pend[j] = s->pend[from];
			j = from;
		}
	}
}

/*
 * Sorts the queue and its compact copy together from the keys rekey
 * recorded (s->sort_rec, in queue order). When the bits that vary in the
 * four words and the old position fit one 64-bit word, the sort moves
 * those words alone (the usual case: priorities, submit times and ids
 * span few bits); else the whole keys.
 */
static void sort_pending(struct drv_sched *s)
{
	int32_t n = s->npend, i, w, bits[4], posbits, total;
	uint64_t all_and[4], all_or[4];
	struct pend_sort_key *r = s->sort_rec;
	for (w = 0; w < 4; w++) {
		all_and[w] = ~0ull;
		all_or[w] = 0;
	}
	for (i = 0; i < n; i++)
		for (w = 0; w < 4; w++) {
			all_and[w] &= r[i].w[w];
			all_or[w] |= r[i].w[w];
		}
	posbits = varying_bits(0, (uint64_t)n);
	total = posbits;
	for (w = 0; w < 4; w++)
		total += bits[w] = varying_bits(all_and[w], all_or[w]);
	DRV_GROW(s->sort_pend, (size_t)n + 1, s->sort_pend_cap);
	if (total <= 64) {
		uint64_t *k, varies = 0;
		DRV_GROW(s->sort_u64, 2 * (size_t)n + 1, s->sort_u64_cap);
		k = s->sort_u64;
		for (i = 0; i < n; i++) {
			uint64_t x = 0;
			for (w = 0; w < 4; w++)
				if (bits[w])
					x = (x << bits[w]) | (r[i].w[w] & (~0ull >> (64 - bits[w])));
			k[i] = posbits ? (x << posbits) | (uint64_t)r[i].pos : x;
			varies |= k[i] ^ k[0];
		}
		radix_u64(k, k + n, n, varies);
		for (i = 0; i < n; i++)
			s->sort_pend[i] = posbits ? (int32_t)(k[i] & (~0ull >> (64 - posbits))) : 0;
	} else {
		DRV_GROW(s->sort_rec, 2 * (size_t)n + 1, s->sort_rec_cap);
		r = s->sort_rec;
		radix_keys(r, r + n, n, all_and, all_or);
		for (i = 0; i < n; i++)
			s->sort_pend[i] = r[i].pos;
	}
	permute_pending(s, s->sort_pend, n);
	sched__pend_touch(s, 0, n);
}

/* Re-keys every pending job at now and re-sorts when the keys moved. */
void sched__rekey(struct pass *p)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_policy *pol = p->pol;
	const struct drv_sched_policy *kp = &s->keyed_pol;
	bool same = s->keys_valid && kp->order == pol->order &&
		    kp->aging_interval_s == pol->aging_interval_s &&
		    kp->aging_step == pol->aging_step && kp->aging_max == pol->aging_max &&
		    kp->nlas == pol->nlas && kp->las_promote_s == pol->las_promote_s &&
		    !memcmp(kp->las_threshold, pol->las_threshold, sizeof(pol->las_threshold));
	int32_t i, moved = 0;
	int64_t next = T_INF;

	if (kp->default_runtime_s != pol->default_runtime_s) {
		s->keyed_pol.default_runtime_s = pol->default_runtime_s;
		s->occ_gen++;
		for (i = 0; i < s->nrun; i++) {
			struct sched_job *r = &s->jobs[s->run[i]];
			int64_t d = r->dur > 0 ? r->dur : pol->default_runtime_s;
			r->end = d > 0 ? r->start + d : T_INF;
			if (r->state == DRV_SJ_TERMINATING && r->grace < r->end)
				r->end = r->grace;
		}
		/* re-sort the running list by (end, id) */
		for (i = 1; i < s->nrun; i++) {
			int32_t k = i, x = s->run[i];
			while (k > 0) {
				const struct sched_job *a = &s->jobs[s->run[k - 1]], *b = &s->jobs[x];
				if (a->end < b->end || (a->end == b->end && a->id < b->id))
					break;
				s->run[k] = s->run[k - 1];
				k--;
			}
			s->run[k] = x;
		}
		sched__run_compact_rebuild(s);
	}
	if (same && p->now < s->next_age)
		return;
	s->keyed_pol = *pol;
	s->keys_at = p->now;
	s->keys_valid = true;
	/* one walk over the jobs: keys, the compact copy, how many are out of
	 * order, and the keys a full sort would need (the jobs are large and
	 * far apart: each walk over them is a cache miss a job) */
	sched__pend_reserve(s);
	DRV_GROW(s->sort_rec, (size_t)s->npend + 1, s->sort_rec_cap);
	for (i = 0; i < s->npend; i++) {
		struct sched_job *j = &s->jobs[s->pend[i]];
		sched__key(s, j, p->now, pol);
		if (j->next_age < next)
			next = j->next_age;
		sched__pend_compact_fill(s, i);
		sort_key_of(j, i, &s->sort_rec[i]);
		if (i > 0 && sched__cmp_pend(s, s->pend[i - 1], s->pend[i]) > 0)
			moved++;
	}
	s->next_age = next;
	s->pend_compact_stale = false;
	if (!moved)
		return;
	if (moved < 64) {
		/* a few moved: insertion sort is linear-ish */
		for (i = 1; i < s->npend; i++) {
			int32_t k = i, x = s->pend[i];
			while (k > 0 && sched__cmp_pend(s, s->pend[k - 1], x) > 0) {
				s->pend[k] = s->pend[k - 1];
				k--;
			}
			s->pend[k] = x;
		}
		s->pend_gen++;
		s->pend_compact_stale = true;
		return;
	}
	sort_pending(s);
}

/* ---- fair share: merging the tenants' queues --------------------------- */

/*
 * Fair share: merge the tenants' queues (each in priority, then submit
 * order) taking next the job whose tenant has the least weighted use,
 * counting what it holds and what the merge already took for it.
 *
 * The merge is lazy: the pass asks for the next job. Once the pass may skip
 * hopeless jobs, a tenant whose every remaining job cannot fit even the
 * cluster as it was when the pass began (nothing in a pass frees more) drops
 * out of the merge at once; the order of the others does not depend on it.
 */
/* Per tenant its queue as a chain of job slots (both ways), and what the
 * rest of each chain needs from each slot on. By slot, not by queue
 * position: an entry coming or going relinks its neighbours and moves
 * nothing else, where chains of positions had every position past it
 * shifted. A slot's position, where the merge needs it, comes from
 * s->fair_seq (seqtree.h). */

static const struct queue_rest REST_NONE = { INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MIN,
					     T_INF, false, false };

/* What the rest of a chain needs from h on, given what it needs after h.
 * (The aggregate is taken and returned whole: updated field by field in
 * place and then copied whole, the copy waited for the fields' stores.) */
static inline struct queue_rest rest_fold(const struct pend_compact *h, struct queue_rest a)
{
	if (h->never)
		return a;
	a.gpuless |= h->gpuless;
	a.held |= h->held;
	if (h->need_whole > 0) {
		a.min_need = DRV_MIN(a.min_need, h->need_whole);
		a.min_task = DRV_MIN(a.min_task, h->max_task);
		a.min_full_tasks = DRV_MIN(a.min_full_tasks, h->full_tasks);
	} else if (h->min_frac > 0) {
		a.min_frac = DRV_MIN(a.min_frac, h->min_frac);
	}
	a.max_prio = DRV_MAX(a.max_prio, h->prio);
	if (h->dur > 0)
		a.min_dur = DRV_MIN(a.min_dur, h->dur);
	return a;
}

/* What the rest of a chain needs from an entry on: what the entry asks
 * alone (rest_fold of it onto REST_NONE) joined with what the rest after
 * it needs; the same as rest_fold of the entry onto that rest. */
static inline struct queue_rest rest_join(struct queue_rest a, const struct queue_rest *b)
{
	a.min_need = DRV_MIN(a.min_need, b->min_need);
	a.min_task = DRV_MIN(a.min_task, b->min_task);
	a.min_full_tasks = DRV_MIN(a.min_full_tasks, b->min_full_tasks);
	a.min_frac = DRV_MIN(a.min_frac, b->min_frac);
	a.max_prio = DRV_MAX(a.max_prio, b->max_prio);
	a.min_dur = DRV_MIN(a.min_dur, b->min_dur);
	a.gpuless |= b->gpuless;
	a.held |= b->held;
	return a;
}

static bool rest_eq(const struct queue_rest *a, const struct queue_rest *b)
{
	return a->min_need == b->min_need && a->min_task == b->min_task &&
	       a->min_full_tasks == b->min_full_tasks && a->min_frac == b->min_frac &&
	       a->max_prio == b->max_prio && a->min_dur == b->min_dur &&
	       a->gpuless == b->gpuless && a->held == b->held;
}

/* Room by job slot, and per tenant (the suffix buffer's tail after the
 * slots holds fair_chains's per-tenant rest so far). */
static void fair_grow(struct drv_sched *s)
{
	size_t n = (size_t)s->njobs + 1;
	DRV_GROW(s->fair_first, (size_t)s->ntenants + 1, s->fair_first_cap);
	DRV_GROW(s->fair_next, n, s->fair_next_cap);
	DRV_GROW(s->fair_prev, n, s->fair_prev_cap);
	DRV_GROW(s->fair_own, n, s->fair_own_cap);
	DRV_GROW(s->fair_at, n, s->fair_at_cap);
	DRV_GROW(s->fair_suffix, n + (size_t)s->ntenants, s->fair_suffix_cap);
}

static void fair_chains(struct drv_sched *s)
{
	int32_t nt = s->ntenants, i, t;
	struct queue_rest *agg;
	fair_grow(s);
	agg = s->fair_suffix + s->njobs; /* per tenant, the rest so far */
	for (t = 0; t < nt; t++) {
		s->fair_first[t] = -1;
		agg[t] = REST_NONE;
	}
	for (i = s->npend - 1; i >= 0; i--) {
		const struct pend_compact *h = &s->pend_compact[i];
		int32_t slot = s->pend[i], nx = s->fair_first[h->tenant];
		struct queue_rest own = rest_fold(h, REST_NONE);
		struct queue_rest a = rest_join(own, &agg[h->tenant]);
		agg[h->tenant] = a;
		s->fair_own[slot] = own;
		s->fair_suffix[slot] = a;
		s->fair_next[slot] = nx;
		if (nx >= 0)
			s->fair_prev[nx] = slot;
		s->fair_first[h->tenant] = slot;
		s->fair_at[slot] = i;
	}
	for (t = 0; t < nt; t++)
		if (s->fair_first[t] >= 0)
			s->fair_prev[s->fair_first[t]] = -1;
	s->fair_at_ok = true;
	s->fair_seq_ok = false;
	s->fair_nt = nt;
	s->fair_gen = s->pend_gen + 1;
}

bool sched__fair_current(const struct drv_sched *s)
{
	return s->fair_gen == s->pend_gen + 1 && s->fair_nt == s->ntenants;
}

int32_t sched__fair_pos(const struct drv_sched *s, int32_t slot)
{
	return s->fair_at_ok ? s->fair_at[slot] : drv_seqtree_pos(&s->fair_seq, slot);
}

/* The queue gained or lost an entry: positions come from the tree from now
 * on, built (from the queue as it is now) at the first such change. False
 * when it was built now, with the change in it. */
static bool fair_seq_follows(struct drv_sched *s)
{
	s->fair_at_ok = false;
	if (s->fair_seq_ok)
		return true;
	drv_seqtree_build(&s->fair_seq, s->pend, s->npend);
	s->fair_seq_ok = true;
	return false;
}

/* The rest from slot on, and back along its chain until one is as it was
 * (those before it depend on nothing else). */
static void refold_back(struct drv_sched *s, int32_t slot)
{
	while (slot >= 0) {
		int32_t nx = s->fair_next[slot];
		struct queue_rest a = nx >= 0 ? rest_join(s->fair_own[slot], &s->fair_suffix[nx]) :
						s->fair_own[slot];
		if (rest_eq(&a, &s->fair_suffix[slot]))
			break;
		s->fair_suffix[slot] = a;
		slot = s->fair_prev[slot];
	}
}

void sched__fair_inserted(struct drv_sched *s, int32_t pos)
{
	const struct pend_compact *h = &s->pend_compact[pos];
	int32_t slot = s->pend[pos], t = h->tenant, k, pred, succ;
	fair_grow(s);
	for (k = pos - 1; k >= 0 && s->pend_compact[k].tenant != t; k--)
		;
	pred = k >= 0 ? s->pend[k] : -1;
	succ = pred >= 0 ? s->fair_next[pred] : s->fair_first[t];
	s->fair_next[slot] = succ;
	s->fair_prev[slot] = pred;
	if (succ >= 0)
		s->fair_prev[succ] = slot;
	if (pred >= 0)
		s->fair_next[pred] = slot;
	else
		s->fair_first[t] = slot;
	s->fair_own[slot] = rest_fold(h, REST_NONE);
	s->fair_suffix[slot] = succ >= 0 ? rest_join(s->fair_own[slot], &s->fair_suffix[succ]) :
					   s->fair_own[slot];
	if (fair_seq_follows(s))
		drv_seqtree_insert(&s->fair_seq, slot, pos);
	refold_back(s, pred);
	s->fair_gen = s->pend_gen + 1;
}

void sched__fair_removed(struct drv_sched *s, int32_t slot, int32_t tenant)
{
	int32_t pred = s->fair_prev[slot], succ = s->fair_next[slot];
	if (pred >= 0)
		s->fair_next[pred] = succ;
	else
		s->fair_first[tenant] = succ;
	if (succ >= 0)
		s->fair_prev[succ] = pred;
	if (fair_seq_follows(s))
		drv_seqtree_remove(&s->fair_seq, slot);
	refold_back(s, pred);
	s->fair_gen = s->pend_gen + 1;
}

void sched__fair_rewritten(struct drv_sched *s, int32_t pos)
{
	int32_t slot = s->pend[pos];
	s->fair_own[slot] = rest_fold(&s->pend_compact[pos], REST_NONE);
	refold_back(s, slot);
	s->fair_gen = s->pend_gen + 1;
}

void sched__fair_setup(struct pass *p, struct fair_merge *fm)
{
	struct drv_sched *s = p->s;
	int32_t nt = s->ntenants, i;
	/* the chains change only with the queue, and are kept as entries
	 * come and go: most passes reuse them */
	if (!sched__fair_current(s))
		fair_chains(s);
	DRV_GROW(s->scratch_slots2, 3 * (size_t)nt + 3, s->scratch_slots2_cap);
	fm->head = s->scratch_slots2;
	fm->hpos = s->scratch_slots2 + nt + 1;
	fm->act = s->scratch_slots2 + 2 * (nt + 1);
	fm->next = s->fair_next;
	fm->suf = s->fair_suffix;
	fm->nact = 0;
	fm->swept_at = -1;
	fm->last = -1;
	for (i = 0; i < nt; i++) {
		fm->head[i] = s->fair_first[i];
		fm->hpos[i] = fm->head[i] >= 0 ? sched__fair_pos(s, fm->head[i]) : -1;
		sched__hist_advance(s, &s->tenants[i], p->now);
		s->tenants[i].fair_use = s->tenants[i].usage_all + sched__hist_milli(s, &s->tenants[i]);
		if (fm->head[i] >= 0)
			fm->act[fm->nact++] = i;
	}
}

/* Does tenant t's next job come before u's in the merge? Higher priority
 * first, then the lesser weighted use, then the one ahead in the queue
 * (its total order): a total order. */
static inline bool fair_before(const struct drv_sched *s, const struct fair_merge *fm, int32_t t,
			       int32_t u)
{
	int32_t ht = fm->hpos[t], hu = fm->hpos[u];
	int64_t kt = s->pend_compact[ht].key_prio, ku = s->pend_compact[hu].key_prio;
	__int128 x, y;
	if (kt != ku)
		return kt > ku;
	x = (__int128)s->tenants[t].fair_use * s->tenants[u].weight;
	y = (__int128)s->tenants[u].fair_use * s->tenants[t].weight;
	return x < y || (x == y && ht < hu);
}

/* The active tenant whose next job comes first (*bi its slot in act), and
 * fm->second the one that comes second. */
static int32_t fair_first_two(const struct drv_sched *s, struct fair_merge *fm, int32_t *bi)
{
	int32_t a, best = fm->act[0], sec = -1;
	*bi = 0;
	for (a = 1; a < fm->nact; a++) {
		int32_t t = fm->act[a];
		if (fair_before(s, fm, t, best)) {
			sec = best;
			best = t;
			*bi = a;
		} else if (sec < 0 || fair_before(s, fm, t, sec)) {
			sec = t;
		}
	}
	fm->second = sec;
	return best;
}

/* Next queue position in fair order, or -1. *dropped: jobs were left out. */
int32_t sched__fair_next(struct pass *p, struct fair_merge *fm, const struct bounds *drop, int32_t visits,
			 bool *dropped)
{
	struct drv_sched *s = p->s;
	int32_t a, best, bi, pos;
	bool may_drop = drop != NULL;
	if (may_drop && fm->swept_at != visits) {
		/* the cluster changed since the last look: drop every tenant
		 * none of whose remaining jobs can start */
		fm->swept_at = visits;
		for (a = 0; a < fm->nact;) {
			int32_t t = fm->act[a];
			/* (a tenant that may reclaim, now or once a peer
			 * borrows later in the pass, stays in) */
			bool reclaims = p->reclaim_bounds && s->tenants[t].cohort >= 0 &&
					s->tenants[t].has_quota;
			if (!reclaims && sched__rest_hopeless(drop, &fm->suf[fm->head[t]])) {
				fm->act[a] = fm->act[--fm->nact];
				*dropped = true;
				fm->last = -1;
			} else {
				a++;
			}
		}
	}
	if (fm->nact == 0)
		return -1;
	if (fm->last >= 0 && (fm->second < 0 || fair_before(s, fm, fm->last, fm->second))) {
		best = fm->last;
		bi = fm->last_i;
	} else {
		best = fair_first_two(s, fm, &bi);
	}
	pos = fm->hpos[best];
	fm->head[best] = fm->next[fm->head[best]];
	s->tenants[best].fair_use += s->pend_compact[pos].need_milli;
	fm->last = best;
	fm->last_i = bi;
	if (fm->head[best] < 0) {
		fm->act[bi] = fm->act[--fm->nact];
		fm->last = -1;
	} else if (may_drop && sched__rest_hopeless(drop, &fm->suf[fm->head[best]])) {
		fm->act[bi] = fm->act[--fm->nact];
		*dropped = true;
		fm->last = -1;
	} else {
		fm->hpos[best] = sched__fair_pos_after(s, fm->head[best], pos);
	}
	return pos;
}
