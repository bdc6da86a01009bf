/*
 * dynbuf.c: layer 0, libc only: the capped growable buffer of
 * include/drover/dynbuf.h. Capacity doubles from 64 bytes; the cap is
 * checked before anything is copied, so a refused append changes nothing.
 */
#include "drover/dynbuf.h"

#include "drover/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void drv_dynbuf_init(struct drv_dynbuf *b, size_t max)
{
	b->buf = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void drv_dynbuf_release(struct drv_dynbuf *b)
{
	drv_free(b->buf);
	drv_dynbuf_init(b, b->max);
}

void drv_dynbuf_reset(struct drv_dynbuf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

/* Room for extra more bytes and the NUL; DRV_ELIMIT past max. */
static int reserve(struct drv_dynbuf *b, size_t extra)
{
	size_t need, c;

	if (extra > b->max || b->len > b->max - extra)
		return DRV_ELIMIT;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	c = b->cap ? b->cap : 64;
	while (c < need)
		c *= 2;
	b->buf = drv_realloc(b->buf, c);
	b->cap = c;
	return 0;
}

int drv_dynbuf_add(struct drv_dynbuf *b, const void *p, size_t n)
{
	int rc = reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

int drv_dynbuf_addstr(struct drv_dynbuf *b, const char *s)
{
	return drv_dynbuf_add(b, s, strlen(s));
}

int drv_dynbuf_vaddf(struct drv_dynbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n, rc;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	rc = n < 0 ? DRV_EINVAL : reserve(b, (size_t)n);
	if (!rc) {
		vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return rc;
}

int drv_dynbuf_addf(struct drv_dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = drv_dynbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void drv_dynbuf_trim(struct drv_dynbuf *b, size_t n)
{
	b->len = n >= b->len ? 0 : b->len - n;
	if (b->buf)
		b->buf[b->len] = '\0';
}

const char *drv_dynbuf_str(const struct drv_dynbuf *b)
{
	return b->buf ? b->buf : "";
}

char *drv_dynbuf_take(struct drv_dynbuf *b, size_t *len)
{
	char *p = b->buf ? b->buf : drv_strdup("");

	if (len)
		*len = b->len;
	drv_dynbuf_init(b, b->max);
	return p;
}
