/* hostlist.c: Slurm's compressed node lists and counts (hostlist.h). */
#include "drover/hostlist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/common.h"

/* One name split into a prefix and the number it ends in. */
struct host {
	const char *name;
	size_t plen;            /* prefix length */
	int width;              /* digits at the end; 0 none */
	int pad;                /* zero-padded to this width; 0 not padded */
	unsigned long long num;
};

static void split(struct host *h, const char *name)
{
	size_t len = strlen(name), p = len;

	while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9' && len - p < 18)
		p--;
	h->name = name;
	h->plen = p;
	h->width = (int)(len - p);
	h->num = h->width ? strtoull(name + p, NULL, 10) : 0;
	h->pad = h->width > 1 && name[p] == '0' ? h->width : 0;
}

static bool same_prefix(const struct host *a, const struct host *b)
{
	return a->plen == b->plen && !strncmp(a->name, b->name, a->plen);
}

/* "node10" joins "node01"'s padded group: same prefix, as many digits. */
static void join_padded(struct host *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n && !h[i].pad && h[i].width; k++)
			if (h[k].pad == h[i].width && same_prefix(&h[i], &h[k]))
				h[i].pad = h[k].pad;
}

static int cmp_host(const void *x, const void *y)
{
	const struct host *a = x, *b = y;
	size_t m = a->plen < b->plen ? a->plen : b->plen;
	int c = strncmp(a->name, b->name, m);

	if (c)
		return c;
	if (a->plen != b->plen)
		return a->plen < b->plen ? -1 : 1;
	if (!a->width != !b->width)
		return a->width ? 1 : -1;
	if (a->pad != b->pad)
		return a->pad < b->pad ? -1 : 1;
	return a->num < b->num ? -1 : a->num > b->num;
}

int drv_hostname_cmp(const char *a, const char *b)
{
	struct host x, y;

	split(&x, a);
	split(&y, b);
	return cmp_host(&x, &y);
}

static bool same_group(const struct host *a, const struct host *b)
{
	return a->width && b->width && a->pad == b->pad && same_prefix(a, b);
}

/* Appends to out at *len, counting what did not fit. */
static void put(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*len < cap ? out + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

/* The numbers of h[0..n-1] (one group) as "01-03,05". */
static void put_ranges(const struct host *h, size_t n, char *out, size_t cap, size_t *len)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j + 1 < n && h[j + 1].num <= h[j].num + 1)
			j++;
		put(out, cap, len, "%s%0*llu", i ? "," : "", h[i].pad, h[i].num);
		if (h[j].num != h[i].num)
			put(out, cap, len, "-%0*llu", h[j].pad, h[j].num);
		i = j + 1;
	}
}

size_t drv_hostlist_compress(const char *const *names, size_t n, char *out, size_t cap)
{
	struct host *h = drv_calloc(n ? n : 1, sizeof(*h));
	size_t len = 0, i, j, u = 0;

	if (cap)
		out[0] = '\0';
	for (i = 0; i < n; i++)
		split(&h[i], names[i]);
	join_padded(h, n);
	qsort(h, n, sizeof(*h), cmp_host);
	for (i = 0; i < n; i++)   /* duplicates once */
		if (!u || cmp_host(&h[u - 1], &h[i]) || strcmp(h[u - 1].name, h[i].name))
			h[u++] = h[i];
	for (i = 0; i < u; i = j) {
		for (j = i + 1; j < u && same_group(&h[i], &h[j]); j++)
			;
		if (j - i == 1) {
			put(out, cap, &len, "%s%s", i ? "," : "", h[i].name);
			continue;
		}
		put(out, cap, &len, "%s%.*s[", i ? "," : "", (int)h[i].plen, h[i].name);
		put_ranges(h + i, j - i, out, cap, &len);
		put(out, cap, &len, "]");
	}
	drv_free(h);
	return len;
}

size_t drv_counts_compress(const int *counts, size_t n, char *out, size_t cap)
{
	size_t len = 0, i, j;

	if (cap)
		out[0] = '\0';
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && counts[j] == counts[i]; j++)
			;
		put(out, cap, &len, "%s%d", i ? "," : "", counts[i]);
		if (j - i > 1)
			put(out, cap, &len, "(x%zu)", j - i);
	}
	return len;
}

/* ---- expansion: "gpu-[01-03,05],login1" -> gpu-01 gpu-02 gpu-03 gpu-05 login1 */

struct names {
	char **v;
	size_t n, cap, max;
};

static int push(struct names *ns, const char *s, size_t len)
{
	if (ns->n == ns->max)
		return DRV_ELIMIT;
	DRV_GROW(ns->v, ns->n + 1, ns->cap);
	ns->v[ns->n++] = drv_strndup(s, len);
	return 0;
}

/* One "prefix[ranges]suffix" item (len bytes; at most one bracket). */
static int expand_one(struct names *ns, const char *s, size_t len)
{
	const char *lb = memchr(s, '[', len), *rb, *p;
	char buf[512];

	if (!lb)
		return memchr(s, ']', len) ? DRV_EINVAL : len ? push(ns, s, len) : DRV_EINVAL;
	rb = memchr(lb, ']', len - (size_t)(lb - s));
	if (!rb || rb == lb + 1 || memchr(lb + 1, '[', (size_t)(rb - lb - 1)) ||
	    memchr(rb + 1, '[', len - (size_t)(rb + 1 - s)))
		return DRV_EINVAL;
	for (p = lb + 1; p < rb;) {
		const char *e = memchr(p, ',', (size_t)(rb - p));
		char *end;
		unsigned long long a, b;
		int width;
		size_t plen = (size_t)(lb - s), slen = len - (size_t)(rb + 1 - s);

		if (!e)
			e = rb;
		if (p == e || *p < '0' || *p > '9')
			return DRV_EINVAL;
		a = strtoull(p, &end, 10);
		width = (int)(end - p);
		b = a;
		if (*end == '-') {
			const char *q = end + 1;

			if (q >= e || *q < '0' || *q > '9')
				return DRV_EINVAL;
			b = strtoull(q, &end, 10);
		}
		if (end != e || b < a || b - a > 1000000 || plen + slen + 24 > sizeof(buf))
			return DRV_EINVAL;
		for (unsigned long long k = a; k <= b; k++) {
			int m = snprintf(buf, sizeof(buf), "%.*s%0*llu%.*s", (int)plen, s, width, k,
					 (int)slen, rb + 1);
			int rc = push(ns, buf, (size_t)m);

			if (rc)
				return rc;
		}
		p = e < rb ? e + 1 : rb;
	}
	return 0;
}

int drv_hostlist_expand(const char *list, char ***names, size_t *n, size_t max)
{
	struct names ns = { .max = max };
	const char *p = list;
	int rc = 0;

	while (*p && !rc) {
		const char *q = p;
		int depth = 0;

		while (*q && (depth || (*q != ',' && *q != ' ' && *q != '\n'))) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			q++;
		}
		if (q > p)
			rc = expand_one(&ns, p, (size_t)(q - p));
		p = *q ? q + 1 : q;
	}
	if (rc) {
		drv_hostlist_free(ns.v, ns.n);
		ns.v = NULL, ns.n = 0;
	}
	*names = ns.v;
	*n = ns.n;
	return rc;
}

void drv_hostlist_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		drv_free(names[i]);
	drv_free(names);
}
