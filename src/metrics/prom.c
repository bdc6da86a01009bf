/*
 * prom.c: the Prometheus text exposition writer and fixed-bucket
 * histograms declared in drover/metrics.h.
 *
 * The output is one growing buffer. Values use the shortest decimal form
 * that reads back to the same double, so a scrape loses nothing and
 * integral gauges print as integers ("42", not "42.000000").
 */
#include "drover/metrics.h"
#include "drover/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double drv_prom_latency_buckets[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};
const int drv_prom_latency_nbuckets = (int)DRV_ARRAY_SIZE(drv_prom_latency_buckets);

void drv_prom_init(struct drv_prom *w)
{
	memset(w, 0, sizeof(*w));
	drv_dynbuf_init(&w->text, DRV_PROM_MAX_TEXT);
}

void drv_prom_release(struct drv_prom *w)
{
	drv_dynbuf_release(&w->text);
	memset(w, 0, sizeof(*w));
}

const char *drv_prom_text(const struct drv_prom *w)
{
	return drv_dynbuf_str(&w->text);
}

size_t drv_prom_len(const struct drv_prom *w)
{
	return w->text.len;
}

char *drv_prom_take(struct drv_prom *w, size_t *len)
{
	char *b = drv_dynbuf_take(&w->text, len);

	drv_prom_init(w);
	return b;
}

static void put(struct drv_prom *w, const char *s, size_t n)
{
	drv_dynbuf_add(&w->text, s, n); /* past DRV_PROM_MAX_TEXT: dropped */
}

static void puts_(struct drv_prom *w, const char *s)
{
	put(w, s, strlen(s));
}

void drv_prom_raw(struct drv_prom *w, const char *text, size_t len)
{
	put(w, text, len);
}

char *drv_prom_format_value(double v, char *buf, size_t bufsz)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, bufsz, "NaN");
		return buf;
	}
	if (isinf(v)) {
		snprintf(buf, bufsz, v > 0 ? "+Inf" : "-Inf");
		return buf;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, bufsz, "%.0f", v);
		return buf;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, bufsz, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

/* HELP text escapes backslash and newline; label values also '"'. */
static void put_escaped(struct drv_prom *w, const char *s, int quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *rep = NULL;
		if (*s == '\\')
			rep = "\\\\";
		else if (*s == '\n')
			rep = "\\n";
		else if (quote && *s == '"')
			rep = "\\\"";
		if (rep) {
			put(w, run, (size_t)(s - run));
			puts_(w, rep);
			run = s + 1;
		}
	}
	put(w, run, (size_t)(s - run));
}

void drv_prom_family(struct drv_prom *w, const char *name, const char *type,
		     const char *help)
{
	if (strncmp(w->family, name, sizeof(w->family)) == 0)
		return;
	snprintf(w->family, sizeof(w->family), "%s", name);
	if (help) {
		puts_(w, "# HELP ");
		puts_(w, name);
		put(w, " ", 1);
		put_escaped(w, help, 0);
		put(w, "\n", 1);
	}
	puts_(w, "# TYPE ");
	puts_(w, name);
	put(w, " ", 1);
	puts_(w, type ? type : "untyped");
	put(w, "\n", 1);
}

static void put_labels(struct drv_prom *w, const char *const *labels, const char *le)
{
	int first = 1;
	size_t i;

	if (labels) {
		for (i = 0; labels[i]; i += 2) {
			if (!labels[i + 1])
				continue;
			put(w, first ? "{" : ",", 1);
			first = 0;
			puts_(w, labels[i]);
			puts_(w, "=\"");
			put_escaped(w, labels[i + 1], 1);
			put(w, "\"", 1);
		}
	}
	if (le) {
		put(w, first ? "{" : ",", 1);
		first = 0;
		puts_(w, "le=\"");
		puts_(w, le);
		put(w, "\"", 1);
	}
	if (!first)
		put(w, "}", 1);
}

static void sample_le(struct drv_prom *w, const char *name, const char *suffix,
		      const char *const *labels, const char *le, double value)
{
	char num[40];

	puts_(w, name);
	if (suffix)
		puts_(w, suffix);
	put_labels(w, labels, le);
	put(w, " ", 1);
	puts_(w, drv_prom_format_value(value, num, sizeof(num)));
	put(w, "\n", 1);
}

void drv_prom_sample(struct drv_prom *w, const char *name, const char *const *labels,
		     double value)
{
	sample_le(w, name, NULL, labels, NULL, value);
}

void drv_prom_metric(struct drv_prom *w, const char *name, const char *type, const char *help,
		     const char *const *labels, double value)
{
	drv_prom_family(w, name, type, help);
	drv_prom_sample(w, name, labels, value);
}

void drv_histogram_init(struct drv_histogram *h, const double *bounds, int nbounds)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->nbounds = nbounds;
	h->counts = drv_calloc((size_t)nbounds + 1, sizeof(*h->counts));
}

void drv_histogram_release(struct drv_histogram *h)
{
	drv_free(h->counts);
	memset(h, 0, sizeof(*h));
}

void drv_histogram_observe(struct drv_histogram *h, double v)
{
	int lo = 0, hi = h->nbounds;

	/* first bucket whose upper bound is >= v (le is inclusive) */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (v <= h->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	h->counts[lo]++;
	h->count++;
	h->sum += v;
}

double drv_histogram_quantile(const struct drv_histogram *h, double q)
{
	double rank, cum = 0;
	int i;

	if (!h->count)
		return NAN;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)h->count;
	for (i = 0; i <= h->nbounds; i++) {
		double prev = cum;
		cum += (double)h->counts[i];
		if (cum >= rank && h->counts[i]) {
			double lo = i == 0 ? 0 : h->bounds[i - 1];
			double hi;
			if (i == h->nbounds) /* +Inf bucket: the highest finite bound */
				return h->nbounds ? h->bounds[h->nbounds - 1] : NAN;
			hi = h->bounds[i];
			if (i == 0 && hi <= 0)
				return hi;
			return lo + (hi - lo) * ((rank - prev) / (double)h->counts[i]);
		}
	}
	return h->nbounds ? h->bounds[h->nbounds - 1] : NAN;
}

void drv_prom_histogram(struct drv_prom *w, const char *name, const char *const *labels,
			const struct drv_histogram *h)
{
	char le[40];
	uint64_t cum = 0;
	int i;

	drv_prom_family(w, name, "histogram", NULL);
	for (i = 0; i < h->nbounds; i++) {
		cum += h->counts[i];
		sample_le(w, name, "_bucket", labels,
			  drv_prom_format_value(h->bounds[i], le, sizeof(le)), (double)cum);
	}
	cum += h->counts[h->nbounds];
	sample_le(w, name, "_bucket", labels, "+Inf", (double)cum);
	sample_le(w, name, "_sum", labels, NULL, h->sum);
	sample_le(w, name, "_count", labels, NULL, (double)h->count);
}
