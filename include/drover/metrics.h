/*
 * metrics.h: a writer for the Prometheus text exposition format (version
 * 0.0.4) and fixed-bucket histograms (src/metrics/prom.c). Owned by the
 * agent engineer; the controller and the agent both render /metrics with it.
 *
 * Usage:
 *
 *	struct drv_prom w;
 *	drv_prom_init(&w);
 *	drv_prom_family(&w, "drover_jobs", "gauge", "Jobs by state.");
 *	drv_prom_sample(&w, "drover_jobs", DRV_PROM_LABELS("state", "running"), 3);
 *	drv_prom_sample(&w, "drover_jobs", DRV_PROM_LABELS("state", "pending"), 7);
 *	drv_prom_histogram(&w, "drover_wait_seconds", NULL, &hist);
 *	... send drv_prom_text(&w), drv_prom_len(&w) bytes ...
 *	drv_prom_release(&w);
 *
 * Label values are escaped as the format requires (backslash, double quote,
 * newline); names are written as given (the caller picks valid names).
 * The writer keeps everything in one growing buffer it owns (dynbuf.h),
 * capped at DRV_PROM_MAX_TEXT: what would pass the cap is dropped whole.
 *
 * Content-Type to serve it under: DRV_PROM_CONTENT_TYPE.
 *
 * Not thread-safe: one writer per render. Histograms are not thread-safe
 * either: the caller holds its own lock around observe and render.
 */
#ifndef DROVER_METRICS_H
#define DROVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "drover/dynbuf.h"

#define DRV_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A NULL-terminated list of alternating label names and values. */
#define DRV_PROM_LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })

#define DRV_PROM_MAX_TEXT (256u << 20)

struct drv_prom {
	struct drv_dynbuf text; /* written so far, NUL-terminated; owned */
	char family[128];       /* the family whose HELP/TYPE was written last */
};

void drv_prom_init(struct drv_prom *w);
void drv_prom_release(struct drv_prom *w);
/* The text so far (NUL-terminated, never NULL) and its length. */
const char *drv_prom_text(const struct drv_prom *w);
size_t drv_prom_len(const struct drv_prom *w);
/* Hands the buffer to the caller (who frees it with free()/drv_free());
 * the writer is left empty and reusable. *len gets the length. */
char *drv_prom_take(struct drv_prom *w, size_t *len);

/*
 * Writes "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram, summary, untyped). help may be NULL (no HELP line). Writing
 * the same family twice in a row is a no-op, so loops may call it per
 * sample.
 */
void drv_prom_family(struct drv_prom *w, const char *name, const char *type,
		     const char *help);

/*
 * Writes one sample "name{l1="v1",...} value". labels is NULL or a
 * NULL-terminated array of name, value pairs (DRV_PROM_LABELS); a pair
 * whose value is NULL is left out. Integral values print without a
 * fraction; NaN and infinities as the format spells them.
 */
void drv_prom_sample(struct drv_prom *w, const char *name, const char *const *labels,
		     double value);

/* family + one sample, for the common single-series case. */
void drv_prom_metric(struct drv_prom *w, const char *name, const char *type, const char *help,
		     const char *const *labels, double value);

/* Appends raw text (a pre-rendered block) to the output. */
void drv_prom_raw(struct drv_prom *w, const char *text, size_t len);

/* ---------------------------------------------------------------------------
 * Histograms with fixed, increasing upper bounds (the +Inf bucket is
 * implicit).
 */
struct drv_histogram {
	const double *bounds; /* borrowed: nbounds increasing upper bounds */
	int nbounds;
	uint64_t *counts;     /* owned: per-bucket (not cumulative), nbounds + 1 */
	double sum;
	uint64_t count;
};

/* bounds is borrowed and must outlive h (a static array, typically). */
void drv_histogram_init(struct drv_histogram *h, const double *bounds, int nbounds);
void drv_histogram_release(struct drv_histogram *h);
void drv_histogram_observe(struct drv_histogram *h, double v);
/* Value at quantile q (0..1) by linear interpolation inside the bucket, as
 * Prometheus's histogram_quantile does; NaN when empty. */
double drv_histogram_quantile(const struct drv_histogram *h, double q);

/*
 * Writes the histogram's _bucket (cumulative, with "le"), _sum and _count
 * series under labels. The caller writes the family line (type
 * "histogram") first when it wants HELP; when it has not, this does.
 */
void drv_prom_histogram(struct drv_prom *w, const char *name, const char *const *labels,
			const struct drv_histogram *h);

/* Default latency buckets in seconds: 1 ms .. 60 s. */
extern const double drv_prom_latency_buckets[];
extern const int drv_prom_latency_nbuckets;

/* Formats v as the exposition format wants (shortest round-trip form,
 * "NaN", "+Inf", "-Inf") into buf; returns buf. */
char *drv_prom_format_value(double v, char *buf, size_t bufsz);

#endif
