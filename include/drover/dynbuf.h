/*
 * dynbuf.h: a growable byte buffer with a size cap (layer 0,
 * src/base/dynbuf.c; curl's dynbuf idea). libc only; the core may use it.
 *
 * Every buffer that grows from input someone else controls (an HTTP body, a
 * file, a reply) has a most it may hold: max is given once, at init, and an
 * append that would pass it fails with DRV_ELIMIT and leaves the buffer as
 * it was, so the caller decides whether that is an error or a truncation.
 *
 * The content is kept NUL-terminated (the NUL is not counted in len and
 * not against max), so text can be used as a C string at any time.
 * Allocation aborts on out-of-memory (common.h); the only error is the cap.
 *
 * Ownership: the buffer owns its memory until drv_dynbuf_take() hands it to
 * the caller. drv_dynbuf_release() frees it; a released buffer may be used
 * again and keeps its max.
 *
 *	struct drv_dynbuf b;
 *	drv_dynbuf_init(&b, 1 << 20);
 *	if (drv_dynbuf_addf(&b, "%d jobs", n) < 0) ... too big
 *	puts(drv_dynbuf_str(&b));
 *	drv_dynbuf_release(&b);
 */
#ifndef DROVER_DYNBUF_H
#define DROVER_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>

struct drv_dynbuf {
	char *buf;  /* NULL until something is added; then NUL-terminated */
	size_t len; /* bytes held, without the NUL */
	size_t cap; /* bytes allocated */
	size_t max; /* the most len may become */
};

/* An empty buffer that may hold up to max bytes; allocates nothing. */
#define DRV_DYNBUF_INIT(max_) { NULL, 0, 0, (max_) }
void drv_dynbuf_init(struct drv_dynbuf *b, size_t max);

/* Frees the memory; b is empty again with the same max. */
void drv_dynbuf_release(struct drv_dynbuf *b);

/* Empties b but keeps its memory for reuse. */
void drv_dynbuf_reset(struct drv_dynbuf *b);

/*
 * Appends n bytes of p (drv_dynbuf_addstr: a C string). Returns 0, or
 * DRV_ELIMIT when len would pass max (nothing is appended then).
 */
int drv_dynbuf_add(struct drv_dynbuf *b, const void *p, size_t n);
int drv_dynbuf_addstr(struct drv_dynbuf *b, const char *s);

/* Appends printf-style text; DRV_ELIMIT as drv_dynbuf_add. */
int drv_dynbuf_addf(struct drv_dynbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int drv_dynbuf_vaddf(struct drv_dynbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Drops the last n bytes (all of them when n >= len). */
void drv_dynbuf_trim(struct drv_dynbuf *b, size_t n);

/* The content as a C string: "" when empty; valid until the next change. */
const char *drv_dynbuf_str(const struct drv_dynbuf *b);
static inline size_t drv_dynbuf_len(const struct drv_dynbuf *b)
{
	return b->len;
}

/*
 * Hands the content to the caller (who frees it with drv_free), never NULL
 * (an empty buffer gives ""); *len gets its length when len is not NULL.
 * b is empty afterwards, with the same max.
 */
char *drv_dynbuf_take(struct drv_dynbuf *b, size_t *len);

#endif
