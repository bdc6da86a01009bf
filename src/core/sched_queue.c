/*
 * sched_queue.c: the state's three indexes. Jobs by id (open addressing),
 * the pending list sorted by (effective priority, policy key, submit, id)
 * with its compact copy, and the running list sorted by (expected end, id)
 * with its compact copy and the bounds on possible victims. Each is kept
 * sorted as it changes (binary search and memmove), so a pass finds the
 * queue in order without sorting it again unless the keys moved.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- id hash ------------------------------------------------------------ */

#define H_EMPTY (-1)
#define H_DEL (-2)

static size_t hslot(uint64_t id, size_t cap)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & (cap - 1);
}

int32_t sched__lookup(const struct drv_sched *s, uint64_t id)
{
	size_t i;
	if (!s->hcap)
		return -1;
	for (i = hslot(id, s->hcap);; i = (i + 1) & (s->hcap - 1)) {
		if (s->id_slots[i] == H_EMPTY)
			return -1;
		if (s->id_slots[i] >= 0 && s->id_keys[i] == id)
			return s->id_slots[i];
	}
}

void sched__id_grow(struct drv_sched *s)
{
	uint64_t *ok = s->id_keys;
	int32_t *ov = s->id_slots;
	size_t ocap = s->hcap, i;
	s->hcap = ocap ? ocap * 2 : 1024;
	s->id_keys = drv_calloc(s->hcap, sizeof(*s->id_keys));
	s->id_slots = drv_malloc(s->hcap * sizeof(*s->id_slots));
	for (i = 0; i < s->hcap; i++)
		s->id_slots[i] = H_EMPTY;
	s->hused = 0;
	for (i = 0; i < ocap; i++)
		if (ov[i] >= 0)
			sched__id_put(s, ok[i], ov[i]);
	drv_free(ok);
	drv_free(ov);
}

void sched__id_put(struct drv_sched *s, uint64_t id, int32_t slot)
{
	size_t i;
	if ((s->hused + 1) * 2 > s->hcap)
		sched__id_grow(s);
	for (i = hslot(id, s->hcap); s->id_slots[i] >= 0; i = (i + 1) & (s->hcap - 1))
		;
	if (s->id_slots[i] == H_EMPTY)
		s->hused++;
	s->id_keys[i] = id;
	s->id_slots[i] = slot;
}

void sched__id_del(struct drv_sched *s, uint64_t id)
{
	size_t i;
	for (i = hslot(id, s->hcap);; i = (i + 1) & (s->hcap - 1)) {
		if (s->id_slots[i] == H_EMPTY)
			return;
		if (s->id_slots[i] >= 0 && s->id_keys[i] == id) {
			s->id_slots[i] = H_DEL;
			return;
		}
	}
}

/* ---- order keys and the pending list ------------------------------------ */

int32_t sched__las_queue(const struct drv_sched_policy *pol, int64_t attained_milli_s)
{
	int32_t q = 0;
	while (q < pol->nlas && attained_milli_s >= pol->las_threshold[q] * DRV_MILLI)
		q++;
	return q;
}

void sched__key(const struct drv_sched *s, struct sched_job *j, int64_t now,
		const struct drv_sched_policy *pol)
{
	int64_t bonus = 0;
	j->next_age = T_INF;
	if (pol->aging_interval_s > 0 && pol->aging_step > 0) {
		int64_t waited = now > j->submit ? now - j->submit : 0;
		int64_t steps = waited / pol->aging_interval_s;
		bonus = steps * pol->aging_step;
		if (pol->aging_max > 0 && bonus >= pol->aging_max)
			bonus = pol->aging_max;
		else
			j->next_age = j->submit + (steps + 1) * pol->aging_interval_s;
	}
	j->key_prio = (int64_t)j->prio + bonus;
	switch (pol->order) {
	case DRV_ORDER_SJF:
		j->key_policy = j->dur > 0 ? j->dur : T_INF;
		break;
	case DRV_ORDER_LAS:
		j->key_policy = sched__las_queue(pol, j->attained);
		if (j->key_policy > 0 && pol->las_promote_s > 0) {
			int64_t at = j->queued_at + pol->las_promote_s;
			if (now >= at)
				j->key_policy = 0; /* starving: promoted */
			else if (at < j->next_age)
				j->next_age = at;
		}
		break;
	default:
		j->key_policy = 0;
		break;
	}
	(void)s;
}

static int cmp_jobs(const struct sched_job *x, const struct sched_job *y)
{
	if (x->key_prio != y->key_prio)
		return x->key_prio > y->key_prio ? -1 : 1;
	if (x->key_policy != y->key_policy)
		return x->key_policy < y->key_policy ? -1 : 1;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

int sched__cmp_pend(const struct drv_sched *s, int32_t a, int32_t b)
{
	return cmp_jobs(&s->jobs[a], &s->jobs[b]);
}

/* First position whose job does not sort before slot's. */
static int32_t pend_lower_bound(const struct drv_sched *s, int32_t slot)
{
	int32_t lo = 0, hi = s->npend;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (sched__cmp_pend(s, s->pend[mid], slot) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

_Static_assert(sizeof(struct pend_compact) == 64, "a compact entry is one cache line");

void sched__pend_compact_fill(struct drv_sched *s, int32_t pos)
{
	const struct sched_job *j = &s->jobs[s->pend[pos]];
	struct pend_compact *h = &s->pend_compact[pos];
	h->key_prio = j->key_prio;
	h->need_milli = j->need_milli;
	h->tenant = j->tenant;
	h->need_whole = j->need_whole;
	h->full_tasks = j->full_tasks;
	h->max_task = (int16_t)j->max_task;
	h->min_frac = (int16_t)j->min_frac;
	h->prio = j->prio;
	h->never = j->never;
	h->gpuless = j->gpuless;
	h->held = j->nomination.ntasks > 0;
	h->quota_model = (int8_t)j->quota_model;
	h->las_q = s->keys_valid && s->keyed_pol.order == DRV_ORDER_LAS ?
			   (int8_t)DRV_MIN(j->key_policy, 127) : 0;
	h->dur = j->dur;
	h->quota_seq = j->quota_seq;
	h->quota_vid = j->quota_vid;
	s->pblk[(s->pend_off + pos) >> SCHED_PBLK_SHIFT].valid = false;
	s->pend_gen++;
}

const struct pend_block *sched__pend_block(struct drv_sched *s, int32_t pos)
{
	struct pend_block *k = &s->pblk[(s->pend_off + pos) >> SCHED_PBLK_SHIFT];
	const struct pend_compact *h = &s->pend_compact[pos];
	int32_t i;
	if (k->valid)
		return k;
	k->min_need = k->min_task = k->min_full = k->min_frac = INT32_MAX;
	k->max_prio = INT32_MIN;
	k->min_las_q = INT32_MAX;
	k->min_dur = T_INF;
	k->whole = k->frac = k->stop = false;
	for (i = 0; i < SCHED_PBLK; i++, h++) {
		if (h->never)
			continue;
		if (h->gpuless || h->held) {
			k->stop = true;
		} else if (h->need_whole > 0) {
			k->whole = true;
			k->min_need = DRV_MIN(k->min_need, h->need_whole);
			k->min_task = DRV_MIN(k->min_task, (int32_t)h->max_task);
			k->min_full = DRV_MIN(k->min_full, h->full_tasks);
		} else if (h->min_frac > 0) {
			k->frac = true;
			k->min_frac = DRV_MIN(k->min_frac, (int32_t)h->min_frac);
		} else {
			k->stop = true;
		}
		k->max_prio = DRV_MAX(k->max_prio, h->prio);
		k->min_las_q = DRV_MIN(k->min_las_q, (int32_t)h->las_q);
		if (h->dur > 0)
			k->min_dur = DRV_MIN(k->min_dur, h->dur);
	}
	k->valid = true;
	return k;
}

/*
 * The pending list and its compact copy live at s->pend_off in their
 * buffers (s->pend = s->pend_buf + s->pend_off): a job inserted or removed
 * in the first half moves the entries before it, one in the second half
 * those after, so taking the head of a long queue (the usual start)
 * moves little. Room for n entries after the offset, moving the lists
 * back to the buffers' start when the offset is larger than they are.
 */
/* The block bounds cover the buffer and are all stale (entries moved). */
static void pblk_fit(struct drv_sched *s)
{
	size_t n = s->pcap / SCHED_PBLK + 1, i;
	DRV_GROW(s->pblk, n, s->pblk_cap);
	for (i = 0; i < s->pblk_cap; i++)
		s->pblk[i].valid = false;
}

static void pend_room(struct drv_sched *s, int32_t n)
{
	size_t need = (size_t)s->pend_off + (size_t)n, cap;
	if (need <= s->pcap)
		return;
	if (s->pend_off > s->npend) {
		memmove(s->pend_buf, s->pend, (size_t)s->npend * sizeof(*s->pend));
		memmove(s->pend_compact_buf, s->pend_compact,
			(size_t)s->npend * sizeof(*s->pend_compact));
		s->pend_off = 0;
		s->pend = s->pend_buf;
		s->pend_compact = s->pend_compact_buf;
		pblk_fit(s);
		if ((size_t)n <= s->pcap)
			return;
		need = (size_t)n;
	}
	cap = DRV_MAX(need * 2, (size_t)64);
	s->pend_buf = drv_realloc(s->pend_buf, cap * sizeof(*s->pend_buf));
	s->pend_compact_buf = drv_realloc(s->pend_compact_buf, cap * sizeof(*s->pend_compact_buf));
	s->pcap = cap;
	s->pend = s->pend_buf + s->pend_off;
	s->pend_compact = s->pend_compact_buf + s->pend_off;
	pblk_fit(s);
}

void sched__pend_reserve(struct drv_sched *s)
{
	pend_room(s, s->npend + 1);
}

void sched__pend_compact_rebuild(struct drv_sched *s)
{
	int32_t i;
	pend_room(s, s->npend + 1);
	for (i = 0; i < s->npend; i++)
		sched__pend_compact_fill(s, i);
}

/* Where pending job slot sits in s->pend, or -1: by binary search while the
 * keys are valid, else by a scan. */
static int32_t pend_find(const struct drv_sched *s, int32_t slot)
{
	int32_t pos = -1, i;
	if (s->keys_valid) {
		pos = pend_lower_bound(s, slot);
		if (pos < s->npend && s->pend[pos] == slot)
			return pos;
	}
	for (i = 0; i < s->npend; i++)
		if (s->pend[i] == slot)
			return i;
	return -1;
}

/* Refills the compact entry of a pending job whose fields it copies changed
 * (a nomination made or dropped); nothing when slot is not pending. */
void sched__pend_compact_refresh(struct drv_sched *s, int32_t slot)
{
	int32_t pos = pend_find(s, slot);
	bool fair = sched__fair_current(s);
	if (pos < 0)
		return;
	sched__pend_compact_fill(s, pos);
	if (fair)
		sched__fair_rewritten(s, pos);
}

void sched__pend_insert(struct drv_sched *s, int32_t slot)
{
	int32_t pos;
	bool fair = sched__fair_current(s);
	s->jobs[slot].added_pass = s->pass_no;
	if (s->keys_valid) {
		sched__key(s, &s->jobs[slot], s->keys_at, &s->keyed_pol);
		if (s->jobs[slot].next_age < s->next_age)
			s->next_age = s->jobs[slot].next_age;
		pos = pend_lower_bound(s, slot);
	} else {
		pos = s->npend;
	}
	if (pos < s->npend / 2 && s->pend_off > 0) {
		/* the entries before it move one down */
		s->pend_off--;
		s->pend--;
		s->pend_compact--;
		memmove(&s->pend[0], &s->pend[1], (size_t)pos * sizeof(*s->pend));
		memmove(&s->pend_compact[0], &s->pend_compact[1],
			(size_t)pos * sizeof(*s->pend_compact));
		sched__pend_touch(s, 0, pos);
	} else {
		pend_room(s, s->npend + 1);
		memmove(&s->pend[pos + 1], &s->pend[pos],
			(size_t)(s->npend - pos) * sizeof(*s->pend));
		memmove(&s->pend_compact[pos + 1], &s->pend_compact[pos],
			(size_t)(s->npend - pos) * sizeof(*s->pend_compact));
		sched__pend_touch(s, pos + 1, s->npend + 1);
	}
	s->pend[pos] = slot;
	s->npend++;
	sched__pend_compact_fill(s, pos);
	if (fair)
		sched__fair_inserted(s, pos);
}

void sched__pend_remove(struct drv_sched *s, int32_t slot)
{
	int32_t pos = pend_find(s, slot), tenant;
	bool fair = sched__fair_current(s);
	if (pos < 0)
		return;
	tenant = s->pend_compact[pos].tenant;
	if (pos < s->npend / 2) {
		/* the entries before it move one up */
		memmove(&s->pend[1], &s->pend[0], (size_t)pos * sizeof(*s->pend));
		memmove(&s->pend_compact[1], &s->pend_compact[0],
			(size_t)pos * sizeof(*s->pend_compact));
		sched__pend_touch(s, 1, pos + 1);
		s->pend_off++;
		s->pend++;
		s->pend_compact++;
	} else {
		memmove(&s->pend[pos], &s->pend[pos + 1],
			(size_t)(s->npend - pos - 1) * sizeof(*s->pend));
		memmove(&s->pend_compact[pos], &s->pend_compact[pos + 1],
			(size_t)(s->npend - pos - 1) * sizeof(*s->pend_compact));
		sched__pend_touch(s, pos, s->npend - 1);
	}
	s->npend--;
	if (fair)
		sched__fair_removed(s, slot, tenant);
}

/* ---- the running list, sorted by (end, id) ------------------------------- */

static int cmp_run(const struct sched_job *x, const struct sched_job *y)
{
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

static int32_t run_lower_bound(const struct drv_sched *s, int32_t slot)
{
	int32_t lo = 0, hi = s->nrun;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (cmp_run(&s->jobs[s->run[mid]], &s->jobs[slot]) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void run_compact_of(const struct drv_sched *s, int32_t slot, struct run_compact *h)
{
	const struct sched_job *j = &s->jobs[slot];
	h->start = j->start;
	h->need_milli = j->need_milli;
	h->id = j->id;
	h->slot = slot;
	h->prio = j->prio;
	h->las_queue = j->las_queue;
	h->las_next = INT64_MIN;   /* sched__las_queues_now computes it */
	h->place_model = j->place_model;
	h->pool = j->pool;
	h->tenant = j->tenant;
	h->ok = j->state == DRV_SJ_RUNNING && j->preemptible;
}

static void run_compact_fill(struct drv_sched *s, int32_t pos)
{
	run_compact_of(s, s->run[pos], &s->run_compact[pos]);
}

void sched__run_compact_rebuild(struct drv_sched *s)
{
	int32_t i;
	DRV_GROW(s->run_compact, (size_t)s->nrun + 1, s->run_compact_cap);
	for (i = 0; i < s->nrun; i++)
		run_compact_fill(s, i);
	s->victim_bounds.dirty = true;
	s->run_gen++;
}

/* Merges one entry into the summary of possible victims. */
void sched__victim_bounds_add(struct drv_sched *s, const struct run_compact *h)
{
	if (!h->ok)
		return;
	if (h->prio < s->victim_bounds.least_prio) {
		s->victim_bounds.least_prio = h->prio;
		s->victim_bounds.most_las_queue = h->las_queue;
	} else if (h->prio == s->victim_bounds.least_prio &&
		   h->las_queue > s->victim_bounds.most_las_queue) {
		s->victim_bounds.most_las_queue = h->las_queue;
	}
}

void sched__victim_bounds_refresh(struct drv_sched *s)
{
	int32_t i;
	sched__run_sync(s);
	if (!s->victim_bounds.dirty)
		return;
	s->victim_bounds.least_prio = INT32_MAX;
	s->victim_bounds.most_las_queue = INT32_MIN;
	for (i = 0; i < s->nrun; i++)
		sched__victim_bounds_add(s, &s->run_compact[i]);
	s->victim_bounds.dirty = false;
}

/* Appends to the batch of started jobs; its compact entry is taken now, as
 * an insert in place would have. */
void sched__run_insert(struct drv_sched *s, int32_t slot)
{
	struct run_compact *h;
	DRV_GROW(s->run_add, (size_t)s->nrun_add + 1, s->run_add_cap);
	DRV_GROW(s->run_add_compact, (size_t)s->nrun_add + 1, s->run_add_compact_cap);
	s->run_add[s->nrun_add] = slot;
	h = &s->run_add_compact[s->nrun_add++];
	run_compact_of(s, slot, h);
	if (!s->victim_bounds.dirty)
		sched__victim_bounds_add(s, h);
}

static int cmp_run_slot(const void *a, const void *b, void *arg)
{
	const struct drv_sched *s = arg;
	return cmp_run(&s->jobs[*(const int32_t *)a], &s->jobs[*(const int32_t *)b]);
}

/*
 * The batch sorted by (end, id), then merged into the list from the back,
 * so each entry moves once: O(n + k log k) for k started jobs, where k
 * inserts in place would move O(n k). The (end, id) order is total, so
 * the list is the one those inserts would have made.
 */
void sched__run_flush(struct drv_sched *s)
{
	int32_t k = s->nrun_add, i, a, b, o;
	int32_t *sl; /* (slot, batch position) pairs, sorted */
	if (k == 0)
		return;
	DRV_GROW(s->run, (size_t)s->nrun + (size_t)k, s->rcap);
	DRV_GROW(s->run_compact, (size_t)s->nrun + (size_t)k, s->run_compact_cap);
	DRV_GROW(s->run_add, (size_t)k * 3, s->run_add_cap);
	sl = s->run_add + k;
	for (i = 0; i < k; i++) {
		sl[2 * i] = s->run_add[i];
		sl[2 * i + 1] = i;
	}
	if (k > 1)
		qsort_r(sl, (size_t)k, 2 * sizeof(*sl), cmp_run_slot, s);
	/* from the back: each batch entry's place by binary search over what
	 * is not moved yet, the entries after it moved in one go */
	a = s->nrun; /* run[0, a) not moved yet */
	o = s->nrun + k; /* run[o, nrun + k) final */
	for (b = k - 1; b >= 0; b--) {
		int32_t bs = sl[2 * b], lo = 0, hi = a, n;
		while (lo < hi) {
			int32_t mid = lo + (hi - lo) / 2;
			if (cmp_run(&s->jobs[s->run[mid]], &s->jobs[bs]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		n = a - lo;
		o -= n;
		memmove(&s->run[o], &s->run[lo], (size_t)n * sizeof(*s->run));
		memmove(&s->run_compact[o], &s->run_compact[lo], (size_t)n * sizeof(*s->run_compact));
		a = lo;
		o--;
		s->run[o] = bs;
		s->run_compact[o] = s->run_add_compact[sl[2 * b + 1]];
	}
	s->nrun += k;
	s->nrun_add = 0;
	s->run_gen++;
}

void sched__run_remove(struct drv_sched *s, int32_t slot)
{
	int32_t pos, i;
	sched__run_sync(s);
	pos = run_lower_bound(s, slot);
	if (pos >= s->nrun || s->run[pos] != slot) {
		pos = -1;
		for (i = 0; i < s->nrun; i++)
			if (s->run[i] == slot) {
				pos = i;
				break;
			}
		if (pos < 0)
			return;
	}
	memmove(&s->run[pos], &s->run[pos + 1], (size_t)(s->nrun - pos - 1) * sizeof(*s->run));
	memmove(&s->run_compact[pos], &s->run_compact[pos + 1],
		(size_t)(s->nrun - pos - 1) * sizeof(*s->run_compact));
	s->nrun--;
	s->victim_bounds.dirty = true;
	s->run_gen++;
}
