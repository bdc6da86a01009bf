/*
 * common.c: layer 0, libc only: drover's error names and allocation
 * wrappers (include/drover/common.h).
 *
 * Allocation failure aborts: on the machines drover runs on, a failed
 * malloc means the process is already lost, and checking every call site
 * only adds untested branches.
 */
#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const err_names[] = {
	"success",
	"invalid argument",
	"size limit reached",
	"no such object",
	"already exists",
	"does not fit",
	"input/output error",
	"parse error",
	"input limit exceeded",
	"invalid in current state",
	"permission denied",
	"cannot connect",
	"timed out",
	"not supported",
};

const char *drv_strerror(int err)
{
	if (err > 0 || err <= DRV_ERR_MIN_)
		return "unknown error";
	return err_names[-err];
}

static void oom(size_t n)
{
	fprintf(stderr, "drover: out of memory allocating %zu bytes\n", n);
	abort();
}

void *drv_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *drv_calloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *drv_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *drv_strdup(const char *s)
{
	if (!s)
		return NULL;
	return drv_strndup(s, strlen(s));
}

char *drv_strndup(const char *s, size_t n)
{
	char *d;
	if (!s)
		return NULL;
	d = drv_malloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

void drv_free(void *p)
{
	free(p);
}

void drv_grow(void *arr, size_t elsz, size_t need, size_t *cap)
{
	void **pp = arr;
	size_t n;
	if (need <= *cap)
		return;
	n = *cap ? *cap : 8;
	while (n < need)
		n *= 2;
	*pp = drv_realloc(*pp, n * elsz);
	*cap = n;
}

int drv_strcaseeq(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return 0;
		if (!x)
			return 1;
	}
}
