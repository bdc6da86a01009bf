/*
 * common.h: layer 0 (src/base/common.c), what every part of drover shares:
 * the error enum, the allocation wrappers that abort on out-of-memory, and a
 * few macros. libc only; the core may use it (with dynbuf.h, nothing else
 * of src/base/).
 *
 * Errors: functions return 0 or a negative enum drv_err; drv_strerror()
 * names it. Allocation never returns NULL: drv_malloc() and friends abort
 * with a message, so callers carry no dead NULL checks (git's xmalloc).
 */
#ifndef DROVER_COMMON_H
#define DROVER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

enum drv_err {
	DRV_OK = 0,
	DRV_EINVAL = -1,     /* invalid argument or input */
	DRV_ENOMEM = -2,     /* a size cap was reached (allocation itself aborts) */
	DRV_ENOENT = -3,     /* no such object */
	DRV_EEXIST = -4,     /* already exists */
	DRV_ENOSPACE = -5,   /* does not fit (placement) */
	DRV_EIO = -6,        /* I/O or system call failure */
	DRV_EPARSE = -7,     /* syntax error in a file */
	DRV_ELIMIT = -8,     /* an input limit was exceeded */
	DRV_ESTATE = -9,     /* operation not valid in the current state */
	DRV_EPERM = -10,     /* not allowed */
	DRV_ECONN = -11,     /* cannot reach a peer */
	DRV_ETIMEDOUT = -12, /* timed out */
	DRV_EUNSUPP = -13,   /* not supported here */
	DRV_ERR_MIN_ = -14
};

/* Returns a static string naming err; never NULL. */
const char *drv_strerror(int err);

/* Allocation that aborts on failure. drv_free(NULL) is a no-op. */
void *drv_malloc(size_t n);
void *drv_calloc(size_t nmemb, size_t size);
void *drv_realloc(void *p, size_t n);
/* Returns a malloc'd copy of s (NULL for NULL); caller frees. */
char *drv_strdup(const char *s);
char *drv_strndup(const char *s, size_t n);
void drv_free(void *p);

/*
 * Grows *arr (element size elsz) so that it can hold at least need
 * elements; *cap is the current capacity and is updated. Doubles.
 */
void drv_grow(void *arr, size_t elsz, size_t need, size_t *cap);
#define DRV_GROW(arr, need, cap) drv_grow(&(arr), sizeof(*(arr)), (need), &(cap))

#define DRV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DRV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DRV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DRV_UNUSED(x) ((void)(x))

/* Case-insensitive ASCII comparison, locale-independent. */
int drv_strcaseeq(const char *a, const char *b);

/* Exit codes of the drover binary. */
/* drover's version (drover --version; the Kubernetes face's /version). */
#define DRV_VERSION "0.1.0"

#define DRV_EXIT_OK 0
#define DRV_EXIT_FAIL 1
#define DRV_EXIT_USAGE 2

#endif
