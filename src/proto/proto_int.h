/*
 * proto_int.h: what the files of src/proto/ share and nothing else does:
 * the reader a decoder walks a JSON document with (it knows the key path
 * it stands on, so every error and unknown key is named by it), the
 * writer's helpers, and the parts' decoders and encoders.
 *
 * Reader rules: a getter leaves *out alone when the key is absent (or null,
 * for an optional key), so callers set defaults first; the first failure
 * wins and the rest of a decode becomes a no-op (r->failed).
 */
#ifndef DROVER_PROTO_INTERNAL_H
#define DROVER_PROTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "drover/proto.h"

/* A key path or message cut at its buffer is better than none. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

struct proto_rd {
	struct drv_proto_dec *d;
	char path[192];
	size_t len;
	bool failed;
};

typedef void (*proto_item_fn)(struct proto_rd *r, const json_t *item, void *el);

/* The reader: where it stands, and failing there. */
void proto_rd_init(struct proto_rd *r, struct drv_proto_dec *d);
size_t proto_push_key(struct proto_rd *r, const char *key);   /* returns the mark to pop to */
void proto_push_index(struct proto_rd *r, size_t i);
void proto_pop(struct proto_rd *r, size_t mark);
const char *proto_type_name(const json_t *v);                /* "a string", ... */
bool proto_expect_obj(struct proto_rd *r, const json_t *o);
/* Logs (once per path and peer) the keys of o that are not in known[]. */
void proto_unknown_keys(struct proto_rd *r, const json_t *o, const char *const *known);
/* Ends a decode: on failure release(m) and DRV_EINVAL, else *doc holds j. */
int proto_finish(struct proto_rd *r, json_t *j, json_t **doc, void (*release)(void *), void *m);

/* Getters: the value of key in o, checked with is(); NULL when absent. */
int proto_is_str(const json_t *v);
int proto_is_int(const json_t *v);
int proto_is_num(const json_t *v);
int proto_is_bool(const json_t *v);
int proto_is_arr(const json_t *v);
int proto_is_obj(const json_t *v);
json_t *proto_get(struct proto_rd *r, const json_t *o, const char *key, bool req,
		  int (*is)(const json_t *), const char *want);
void proto_get_str(struct proto_rd *r, const json_t *o, const char *key, bool req,
		   const char **out);
void proto_get_int(struct proto_rd *r, const json_t *o, const char *key, bool req, int64_t *out);
void proto_get_num(struct proto_rd *r, const json_t *o, const char *key, double *out);
void proto_get_bool(struct proto_rd *r, const json_t *o, const char *key, bool req, bool *out);
json_t *proto_get_array(struct proto_rd *r, const json_t *o, const char *key, bool req);
/* A list into a new array of *n elements of elsz, each through one(). */
void proto_get_list(struct proto_rd *r, const json_t *o, const char *key, bool req, size_t elsz,
		    proto_item_fn one, void *out, size_t *n);
/* A mapping of strings, in its order. */
void proto_get_kv(struct proto_rd *r, const json_t *o, const char *key, struct drv_proto_kv **out,
		  size_t *n);
void proto_item_str(struct proto_rd *r, const json_t *item, void *el);
void proto_item_int(struct proto_rd *r, const json_t *item, void *el);

/* The writer. */
void proto_put_str(json_t *o, const char *key, const char *s);     /* NULL: null */
void proto_put_opt_str(json_t *o, const char *key, const char *s); /* NULL: absent */
void proto_put_int(json_t *o, const char *key, int64_t v);
json_t *proto_int_list(const int64_t *v, size_t n);
json_t *proto_str_list(const char *const *v, size_t n);

/* The parts (proto_parts.c). */
void proto_item_ref(struct proto_rd *r, const json_t *o, void *el);
json_t *proto_refs_encode(const struct drv_proto_ref *v, size_t n);
void proto_get_usage(struct proto_rd *r, const json_t *o, struct drv_proto_usage **out);
json_t *proto_usage_encode(const struct drv_proto_usage *u);
void proto_usage_free(struct drv_proto_usage *u);
void proto_refs_release(struct drv_proto_ref *v, size_t n);   /* their usage; not v */
void proto_item_health(struct proto_rd *r, const json_t *o, void *el);
void proto_item_report(struct proto_rd *r, const json_t *o, void *el);
json_t *proto_report_encode(const struct drv_proto_report *x);
void proto_item_task(struct proto_rd *r, const json_t *o, void *el);
void proto_task_release(struct drv_proto_task *t);

int proto_fail_at(struct proto_rd *r, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
