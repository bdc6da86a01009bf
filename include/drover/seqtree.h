/*
 * seqtree.h: a sequence of distinct small ids (0 .. n) kept in a balanced
 * tree by position, so an id is put at a position, taken out, or asked
 * its position in O(log n) expected time, without moving the others the
 * way an array's memmove does.
 *
 * The tree is a treap keyed implicitly by position: each node counts its
 * subtree, and its heap priority is a fixed hash of its id (the core draws
 * no randomness), so the same operations give the same tree. Nodes live in
 * arrays indexed by id (parent links make the position of an id a walk to
 * the root), grown as larger ids come.
 *
 * Ownership: the tree owns its arrays; drv_seqtree_release frees them. An
 * id is in the tree at most once; the caller keeps that true.
 */
#ifndef DROVER_SEQTREE_H
#define DROVER_SEQTREE_H

#include <stddef.h>
#include <stdint.h>

struct drv_seqtree_node {
	int32_t l, r, p; /* children and parent ids (-1: none) */
	int32_t sz;      /* nodes in the subtree; 0: the id is not in the tree */
};

struct drv_seqtree {
	struct drv_seqtree_node *n; /* by id */
	size_t cap;                 /* ids below cap have a node */
	int32_t *stack;             /* drv_seqtree_build's scratch */
	size_t stack_cap;
	int32_t root;               /* -1: empty */
};

void drv_seqtree_init(struct drv_seqtree *t);
void drv_seqtree_release(struct drv_seqtree *t);

/* How many ids the sequence holds. */
int32_t drv_seqtree_size(const struct drv_seqtree *t);

/* The sequence becomes ids[0 .. n) (distinct, each >= 0), in O(n). */
void drv_seqtree_build(struct drv_seqtree *t, const int32_t *ids, int32_t n);

/* Puts id (not in the tree) at position pos (0 .. size): the ids at pos
 * and after move one on. */
void drv_seqtree_insert(struct drv_seqtree *t, int32_t id, int32_t pos);

/* Takes id (in the tree) out: those after it move one back. */
void drv_seqtree_remove(struct drv_seqtree *t, int32_t id);

/* The position of id (in the tree). */
int32_t drv_seqtree_pos(const struct drv_seqtree *t, int32_t id);

/* The id at position pos (0 .. size - 1). */
int32_t drv_seqtree_at(const struct drv_seqtree *t, int32_t pos);

#endif
