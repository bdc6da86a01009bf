/*
 * seqtree.c: a sequence of ids in a treap keyed by position (seqtree.h).
 * Each node's priority is a hash of its id, so the tree's shape is random
 * with respect to the order and its depth O(log n) expected; every
 * operation is a walk down (by subtree counts) or up (by parent links)
 * plus rotations.
 */
#include "drover/seqtree.h"

#include "drover/common.h"

#include <stdbool.h>

void drv_seqtree_init(struct drv_seqtree *t)
{
	t->n = NULL;
	t->cap = 0;
	t->stack = NULL;
	t->stack_cap = 0;
	t->root = -1;
}

void drv_seqtree_release(struct drv_seqtree *t)
{
	drv_free(t->n);
	drv_free(t->stack);
	drv_seqtree_init(t);
}

static uint64_t prio_of(int32_t id)
{
	uint64_t z = (uint64_t)(uint32_t)id + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Does a sit above b in the heap order (a total order: ids differ)? */
static bool above(int32_t a, int32_t b)
{
	uint64_t pa = prio_of(a), pb = prio_of(b);
	return pa > pb || (pa == pb && a > b);
}

static int32_t size_of(const struct drv_seqtree *t, int32_t x)
{
	return x >= 0 ? t->n[x].sz : 0;
}

/* A node for id, not in the tree yet. */
static void node_fresh(struct drv_seqtree *t, int32_t id)
{
	size_t old = t->cap, i;
	if ((size_t)id >= t->cap) {
		DRV_GROW(t->n, (size_t)id + 1, t->cap);
		for (i = old; i < t->cap; i++)
			t->n[i].sz = 0;
	}
	t->n[id].l = t->n[id].r = t->n[id].p = -1;
	t->n[id].sz = 1;
}

int32_t drv_seqtree_size(const struct drv_seqtree *t)
{
	return size_of(t, t->root);
}

void drv_seqtree_build(struct drv_seqtree *t, const int32_t *ids, int32_t n)
{
	int32_t i, top = 0, x, last;
	size_t k;
	for (k = 0; k < t->cap; k++)
		t->n[k].sz = 0;
	DRV_GROW(t->stack, (size_t)n + 1, t->stack_cap);
	/* the right spine on a stack: a new id takes the spine's lower
	 * priorities as its left subtree; a node leaves the spine complete */
	for (i = 0; i < n; i++) {
		x = ids[i];
		node_fresh(t, x);
		last = -1;
		while (top > 0 && above(x, t->stack[top - 1])) {
			last = t->stack[--top];
			t->n[last].sz = 1 + size_of(t, t->n[last].l) + size_of(t, t->n[last].r);
		}
		t->n[x].l = last;
		if (last >= 0)
			t->n[last].p = x;
		if (top > 0) {
			t->n[t->stack[top - 1]].r = x;
			t->n[x].p = t->stack[top - 1];
		}
		t->stack[top++] = x;
	}
	t->root = top > 0 ? t->stack[0] : -1;
	while (top > 0) {
		last = t->stack[--top];
		t->n[last].sz = 1 + size_of(t, t->n[last].l) + size_of(t, t->n[last].r);
	}
}

/* x takes its parent's place; the parent becomes x's child. */
static void rotate_up(struct drv_seqtree *t, int32_t x)
{
	struct drv_seqtree_node *n = t->n;
	int32_t p = n[x].p, g = n[p].p, c;
	if (n[p].l == x) {
		c = n[x].r;
		n[p].l = c;
		n[x].r = p;
	} else {
		c = n[x].l;
		n[p].r = c;
		n[x].l = p;
	}
	if (c >= 0)
		n[c].p = p;
	n[p].p = x;
	n[x].p = g;
	if (g < 0)
		t->root = x;
	else if (n[g].l == p)
		n[g].l = x;
	else
		n[g].r = x;
	n[x].sz = n[p].sz;
	n[p].sz = 1 + size_of(t, n[p].l) + size_of(t, n[p].r);
}

void drv_seqtree_insert(struct drv_seqtree *t, int32_t id, int32_t pos)
{
	int32_t x = t->root;
	node_fresh(t, id);
	if (x < 0) {
		t->root = id;
		return;
	}
	for (;;) {
		int32_t left = size_of(t, t->n[x].l);
		t->n[x].sz++;
		if (pos <= left) {
			if (t->n[x].l < 0) {
				t->n[x].l = id;
				break;
			}
			x = t->n[x].l;
		} else {
			pos -= left + 1;
			if (t->n[x].r < 0) {
				t->n[x].r = id;
				break;
			}
			x = t->n[x].r;
		}
	}
	t->n[id].p = x;
	while (t->n[id].p >= 0 && above(id, t->n[id].p))
		rotate_up(t, id);
}

void drv_seqtree_remove(struct drv_seqtree *t, int32_t id)
{
	struct drv_seqtree_node *n = t->n;
	int32_t child, p, q;
	/* down until it has one child at most, the child that sits higher
	 * taking its place each time */
	while (n[id].l >= 0 && n[id].r >= 0)
		rotate_up(t, above(n[id].l, n[id].r) ? n[id].l : n[id].r);
	child = n[id].l >= 0 ? n[id].l : n[id].r;
	p = n[id].p;
	if (child >= 0)
		n[child].p = p;
	if (p < 0)
		t->root = child;
	else if (n[p].l == id)
		n[p].l = child;
	else
		n[p].r = child;
	for (q = p; q >= 0; q = n[q].p)
		n[q].sz--;
	n[id].l = n[id].r = n[id].p = -1;
	n[id].sz = 0;
}

int32_t drv_seqtree_pos(const struct drv_seqtree *t, int32_t id)
{
	const struct drv_seqtree_node *n = t->n;
	int32_t pos = size_of(t, n[id].l), x = id, p;
	for (p = n[x].p; p >= 0; x = p, p = n[p].p)
		if (n[p].r == x)
			pos += size_of(t, n[p].l) + 1;
	return pos;
}

int32_t drv_seqtree_at(const struct drv_seqtree *t, int32_t pos)
{
	int32_t x = t->root;
	for (;;) {
		int32_t left = size_of(t, t->n[x].l);
		if (pos < left) {
			x = t->n[x].l;
		} else if (pos == left) {
			return x;
		} else {
			pos -= left + 1;
			x = t->n[x].r;
		}
	}
}
