/*
 * test_metrics.c: the Prometheus text writer renders families, escaped
 * labels, values and cumulative histogram buckets as the exposition
 * format wants them.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <string.h>

#include "drover/metrics.h"

Test(metrics, family_once_and_escaped_labels)
{
	struct drv_prom w;

	drv_prom_init(&w);
	drv_prom_family(&w, "drover_jobs", "gauge", "Jobs by state.\nSecond line \\ here.");
	drv_prom_sample(&w, "drover_jobs", DRV_PROM_LABELS("state", "running"), 3);
	drv_prom_family(&w, "drover_jobs", "gauge", "Jobs by state.");
	drv_prom_sample(&w, "drover_jobs", DRV_PROM_LABELS("state", "a\"b\\c\nd", "skip", NULL), 0.5);
	drv_prom_metric(&w, "drover_up", "gauge", NULL, NULL, 1);
	cr_assert(eq(str, (char *)drv_prom_text(&w),
		     "# HELP drover_jobs Jobs by state.\\nSecond line \\\\ here.\n"
		     "# TYPE drover_jobs gauge\n"
		     "drover_jobs{state=\"running\"} 3\n"
		     "drover_jobs{state=\"a\\\"b\\\\c\\nd\"} 0.5\n"
		     "# TYPE drover_up gauge\n"
		     "drover_up 1\n"));
	cr_assert(eq(sz, drv_prom_len(&w), strlen(drv_prom_text(&w))));
	drv_prom_release(&w);
}

Test(metrics, values_round_trip)
{
	char b[40];

	cr_assert(eq(str, drv_prom_format_value(42, b, sizeof(b)), "42"));
	cr_assert(eq(str, drv_prom_format_value(-3, b, sizeof(b)), "-3"));
	cr_assert(eq(str, drv_prom_format_value(0.1, b, sizeof(b)), "0.1"));
	cr_assert(eq(str, drv_prom_format_value(1e300, b, sizeof(b)), "1e+300"));
	cr_assert(eq(str, drv_prom_format_value(NAN, b, sizeof(b)), "NaN"));
	cr_assert(eq(str, drv_prom_format_value(INFINITY, b, sizeof(b)), "+Inf"));
	cr_assert(eq(str, drv_prom_format_value(-INFINITY, b, sizeof(b)), "-Inf"));
	cr_assert(eq(dbl, strtod(drv_prom_format_value(1.0 / 3, b, sizeof(b)), NULL), 1.0 / 3));
}

Test(metrics, histogram_cumulative_buckets)
{
	static const double bounds[] = { 0.1, 1, 10 };
	struct drv_histogram h;
	struct drv_prom w;

	drv_histogram_init(&h, bounds, 3);
	drv_histogram_observe(&h, 0.05);
	drv_histogram_observe(&h, 0.1); /* le is inclusive */
	drv_histogram_observe(&h, 5);
	drv_histogram_observe(&h, 100);
	drv_prom_init(&w);
	drv_prom_family(&w, "drover_wait_seconds", "histogram", "Wait.");
	drv_prom_histogram(&w, "drover_wait_seconds", DRV_PROM_LABELS("pool", "p1"), &h);
	cr_assert(eq(str, (char *)drv_prom_text(&w),
		     "# HELP drover_wait_seconds Wait.\n"
		     "# TYPE drover_wait_seconds histogram\n"
		     "drover_wait_seconds_bucket{pool=\"p1\",le=\"0.1\"} 2\n"
		     "drover_wait_seconds_bucket{pool=\"p1\",le=\"1\"} 2\n"
		     "drover_wait_seconds_bucket{pool=\"p1\",le=\"10\"} 3\n"
		     "drover_wait_seconds_bucket{pool=\"p1\",le=\"+Inf\"} 4\n"
		     "drover_wait_seconds_sum{pool=\"p1\"} 105.15\n"
		     "drover_wait_seconds_count{pool=\"p1\"} 4\n"));
	/* half of the 4 observations are <= 0.1: the median is in bucket one */
	cr_assert(le(dbl, drv_histogram_quantile(&h, 0.5), 0.1));
	cr_assert(eq(dbl, drv_histogram_quantile(&h, 0.75), 10));
	drv_prom_release(&w);
	drv_histogram_release(&h);
}

Test(metrics, histogram_without_labels_and_take)
{
	static const double bounds[] = { 1 };
	struct drv_histogram h;
	struct drv_prom w;
	size_t n;
	char *t;

	drv_histogram_init(&h, bounds, 1);
	cr_assert(isnan(drv_histogram_quantile(&h, 0.5)));
	drv_histogram_observe(&h, 0.5);
	drv_prom_init(&w);
	drv_prom_histogram(&w, "x_seconds", NULL, &h);
	t = drv_prom_take(&w, &n);
	cr_assert(eq(str, t,
		     "# TYPE x_seconds histogram\n"
		     "x_seconds_bucket{le=\"1\"} 1\n"
		     "x_seconds_bucket{le=\"+Inf\"} 1\n"
		     "x_seconds_sum 0.5\n"
		     "x_seconds_count 1\n"));
	cr_assert(eq(sz, n, strlen(t)));
	cr_assert(eq(sz, drv_prom_len(&w), 0));
	free(t);
	drv_prom_release(&w);
	drv_histogram_release(&h);
}
