/*
 * test_seqtree.c: src/core/seqtree.c, the sequence of ids the fair merge
 * finds queue positions in. Property: any sequence of inserts at random
 * positions and removals of random members leaves the same order, sizes
 * and positions as a plain array with memmove, and the tree stays shallow.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "drover/seqtree.h"

/* xorshift64*: the test's own generator, seeded per run */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

static int32_t depth(const struct drv_seqtree *t, int32_t x)
{
	int32_t a, b;
	if (x < 0)
		return 0;
	a = depth(t, t->n[x].l);
	b = depth(t, t->n[x].r);
	return 1 + (a > b ? a : b);
}

/* Every node's count, parent link and membership agree with the array. */
static void check_same(const struct drv_seqtree *t, const int32_t *ref, int32_t n)
{
	int32_t i;
	cr_assert(eq(i32, drv_seqtree_size(t), n));
	for (i = 0; i < n; i++) {
		int32_t x = ref[i], l = t->n[x].l, r = t->n[x].r;
		cr_assert(eq(i32, drv_seqtree_pos(t, x), i), "id %d", x);
		cr_assert(eq(i32, drv_seqtree_at(t, i), x), "position %d", i);
		cr_assert(eq(i32, t->n[x].sz,
			     1 + (l >= 0 ? t->n[l].sz : 0) + (r >= 0 ? t->n[r].sz : 0)));
		if (l >= 0)
			cr_assert(eq(i32, t->n[l].p, x));
		if (r >= 0)
			cr_assert(eq(i32, t->n[r].p, x));
	}
	if (n > 0)
		cr_assert(eq(i32, t->n[t->root].p, -1));
}

#define MAXID 3000

static void run_random(uint64_t seed, int32_t steps, int32_t check_every, int32_t prefill)
{
	static int32_t ref[MAXID];
	static uint8_t in[MAXID];
	struct drv_seqtree t;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	int32_t n = 0, i, step;

	memset(in, 0, sizeof(in));
	drv_seqtree_init(&t);
	/* a built start (as the fair chains' rebuild does) in a shuffled order */
	for (i = 0; i < prefill; i++) {
		int32_t id = (int32_t)(next_rand(&x) % MAXID), k;
		if (in[id])
			continue;
		k = n ? (int32_t)(next_rand(&x) % (uint64_t)(n + 1)) : 0;
		memmove(&ref[k + 1], &ref[k], (size_t)(n - k) * sizeof(*ref));
		ref[k] = id;
		in[id] = 1;
		n++;
	}
	drv_seqtree_build(&t, ref, n);
	check_same(&t, ref, n);
	for (step = 0; step < steps; step++) {
		uint64_t r = next_rand(&x);
		/* inserts win a little more often while it is small: it grows
		 * and shrinks through the whole range */
		bool ins = n == 0 || (n < MAXID && r % 100 < (n < MAXID / 2 ? 55u : 45u));
		if (ins) {
			int32_t id, k;
			do
				id = (int32_t)(next_rand(&x) % MAXID);
			while (in[id]);
			/* the ends often, as a queue's head and tail are */
			switch (next_rand(&x) % 4) {
			case 0: k = 0; break;
			case 1: k = n; break;
			default: k = (int32_t)(next_rand(&x) % (uint64_t)(n + 1)); break;
			}
			memmove(&ref[k + 1], &ref[k], (size_t)(n - k) * sizeof(*ref));
			ref[k] = id;
			in[id] = 1;
			n++;
			drv_seqtree_insert(&t, id, k);
		} else {
			int32_t k = next_rand(&x) % 3 == 0 ? 0 : (int32_t)(next_rand(&x) % (uint64_t)n);
			int32_t id = ref[k];
			memmove(&ref[k], &ref[k + 1], (size_t)(n - k - 1) * sizeof(*ref));
			in[id] = 0;
			n--;
			drv_seqtree_remove(&t, id);
			cr_assert(eq(i32, t.n[id].sz, 0), "a removed id is out");
		}
		if (step % check_every == 0)
			check_same(&t, ref, n);
	}
	check_same(&t, ref, n);
	/* a treap of n nodes is about 2 ln n deep; far off means a bad shape */
	cr_assert(le(i32, depth(&t, t.root), 64), "n %d", n);
	/* rebuilt from what it holds, it holds the same */
	drv_seqtree_build(&t, ref, n);
	check_same(&t, ref, n);
	drv_seqtree_release(&t);
}

Test(seqtree, random_inserts_and_removes_match_an_array)
{
	uint64_t seed;
	for (seed = 1; seed <= 20; seed++)
		run_random(seed, 4000, 97, seed % 2 ? 0 : 1500);
}

Test(seqtree, every_step_checked_on_small_sequences)
{
	uint64_t seed;
	for (seed = 100; seed < 140; seed++)
		run_random(seed, 400, 1, (int32_t)(seed % 5) * 10);
}

Test(seqtree, appends_and_head_removals_stay_shallow)
{
	struct drv_seqtree t;
	int32_t i;
	drv_seqtree_init(&t);
	/* a queue taken from the head and added to at the tail: the sim's
	 * usual traffic; ids handed out in order, as new slots are */
	for (i = 0; i < 20000; i++)
		drv_seqtree_insert(&t, i, i);
	cr_assert(le(i32, depth(&t, t.root), 64));
	for (i = 0; i < 19000; i++) {
		cr_assert(eq(i32, drv_seqtree_pos(&t, i), 0));
		drv_seqtree_remove(&t, i);
	}
	cr_assert(eq(i32, drv_seqtree_size(&t), 1000));
	cr_assert(eq(i32, drv_seqtree_at(&t, 999), 19999));
	cr_assert(le(i32, depth(&t, t.root), 64));
	drv_seqtree_release(&t);
	cr_assert(eq(i32, drv_seqtree_size(&t), 0));
}
