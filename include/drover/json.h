/*
 * json.h: reading fields of jansson objects without a NULL check at every
 * step (layer 0, src/base/json.c; jansson, so not for the core). The one
 * getter family for store documents, protocol messages and server replies.
 *
 * Every getter takes an object (NULL, or a non-object, reads as empty) and
 * a key, and never fails: a missing key or a value of the wrong type gives
 * the default (or NULL, "" or 0, as each says). Where a missing field must
 * be an error, check with json_object_get() instead.
 *
 * Returned strings point into the object (valid while it lives) unless
 * said otherwise.
 */
#ifndef DROVER_JSON_H
#define DROVER_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* obj[key] when it is a string; NULL otherwise. */
const char *drv_json_str(const json_t *obj, const char *key);

/*
 * obj[key] when it is a number (a real is truncated) or a string that is
 * a whole decimal integer ("12", as hand-written or converted documents
 * carry); def otherwise.
 */
int64_t drv_json_int(const json_t *obj, const char *key, int64_t def);

/* obj[key] when it is a number; def otherwise. */
double drv_json_num(const json_t *obj, const char *key, double def);

/* obj[key] when it is true or false (1 or 0); def otherwise. */
int drv_json_bool(const json_t *obj, const char *key, int def);

/*
 * obj[key] as text for a table cell, written into buf (n bytes, cut to
 * fit): a string as it is, a number or boolean as JSON writes it ("%g" for
 * a real), "" for anything else. Returns buf.
 */
const char *drv_json_text(const json_t *obj, const char *key, char *buf, size_t n);

/*
 * obj[key] as a wall time in seconds since the epoch: a number, or an RFC
 * 3339 string (clock.h); 0 when absent or unreadable.
 */
int64_t drv_json_time(const json_t *obj, const char *key);

#endif
