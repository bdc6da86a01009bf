/*
 * heap.c: the simulator's event queue, a binary min-heap ordered by
 * (time, seq). The sequence number breaks ties in push order, which makes
 * the order of simultaneous events, and so every run, deterministic.
 */
#include "drover/sim.h"

#include <string.h>

void drv_sim_heap_init(struct drv_sim_heap *h)
{
	memset(h, 0, sizeof(*h));
}

void drv_sim_heap_release(struct drv_sim_heap *h)
{
	drv_free(h->v);
	memset(h, 0, sizeof(*h));
}

static inline bool before(const struct drv_sim_event *x, const struct drv_sim_event *y)
{
	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

void drv_sim_heap_push(struct drv_sim_heap *h, int64_t time, int32_t type, int32_t a, int64_t b)
{
	struct drv_sim_event e = { .time = time, .seq = h->next_seq++, .type = type, .a = a, .b = b };
	size_t i;

	DRV_GROW(h->v, h->n + 1, h->cap);
	i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(&e, &h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = e;
}

bool drv_sim_heap_pop(struct drv_sim_heap *h, struct drv_sim_event *out)
{
	struct drv_sim_event last;
	size_t i = 0;

	if (!h->n)
		return false;
	*out = h->v[0];
	last = h->v[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, m;
		if (l >= h->n)
			break;
		m = l;
		if (l + 1 < h->n && before(&h->v[l + 1], &h->v[l]))
			m = l + 1;
		if (!before(&h->v[m], &last))
			break;
		h->v[i] = h->v[m];
		i = m;
	}
	if (h->n)
		h->v[i] = last;
	return true;
}

const struct drv_sim_event *drv_sim_heap_peek(const struct drv_sim_heap *h)
{
	return h->n ? &h->v[0] : NULL;
}
