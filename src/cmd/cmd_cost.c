/*
 * cmd_cost.c: `drover cost [FILE] [--json] [--from-sim SIMJSON] [--html OUT]`, the
 * on-prem versus cloud calculator (docs/cost.md). The assumptions come
 * from FILE (default examples/cost/h100.yaml); the arithmetic is
 * src/spec/costmodel.c.
 */
#include "drover/cmd.h"
#include "drover/costmodel.h"
#include "drover/diag.h"
#include "drover/fsutil.h"
#include "drover/options.h"

#include <jansson.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_FILE "examples/cost/h100.yaml"

#define NSENS 10

/* One row: the base assumptions with one of them moved. */
static int sens_one(const struct drv_cost_in *base, int kind, double x)
{
	struct drv_cost_in in = *base;
	struct drv_cost_out o;
	int c;

	if (kind == 0)
		in.utilisation = x;
	else if (kind == 1)
		for (c = 0; c < DRV_CLOUD_N; c++)
			in.cloud_usd_gpuh[c] *= x;
	else
		in.usd_per_kwh *= x;
	drv_cost_compute(&in, &o);
	return o.break_even[in.compare];
}

static void sensitivity(const struct drv_cost_in *in, struct drv_cost_sens rows[NSENS])
{
	static const struct { const char *what; int kind; double x; } t[NSENS] = {
		{ "utilisation", 0, 0.3 }, { "utilisation", 0, 0.5 }, { "utilisation", 0, 0.7 },
		{ "utilisation", 0, 0.9 }, { "cloud_price", 1, 0.7 }, { "cloud_price", 1, 1.0 },
		{ "cloud_price", 1, 1.3 }, { "power_price", 2, 0.5 }, { "power_price", 2, 1.0 },
		{ "power_price", 2, 1.5 },
	};
	int i;

	for (i = 0; i < NSENS; i++) {
		rows[i].what = t[i].what;
		rows[i].value = t[i].x;
		rows[i].break_even = sens_one(in, t[i].kind, t[i].x);
	}
}

static json_t *months_json(int m)
{
	return m > 0 ? json_integer(m) : json_null();
}

static json_t *usd(double v)
{
	return json_real(round(v * 100.0) / 100.0);
}

static void print_json(const struct drv_cost_in *in, const struct drv_cost_out *o,
		       const struct drv_cost_sens *rows)
{
	json_t *j = json_object(), *cloud = json_object(), *be = json_object(), *s = json_array();
	int c, i;

	json_object_set_new(j, "compare_with", json_string(drv_cost_cloud_names[in->compare]));
	json_object_set_new(j, "break_even_months", months_json(o->break_even[in->compare]));
	json_object_set_new(j, "horizon_months", json_integer(DRV_COST_HORIZON_MONTHS));
	json_object_set_new(j, "gpus", json_real(o->gpus));
	json_object_set_new(j, "utilisation", json_real(in->utilisation));
	json_object_set_new(j, "used_gpu_hours_month", usd(o->used_gpuh_month));
	json_object_set_new(j, "capex_usd", usd(o->capex_usd));
	json_object_set_new(j, "monthly_capex_usd", usd(o->capex_month));
	json_object_set_new(j, "monthly_power_usd", usd(o->power_month));
	json_object_set_new(j, "monthly_colo_usd", usd(o->colo_month));
	json_object_set_new(j, "monthly_network_usd", usd(o->network_month));
	json_object_set_new(j, "monthly_staff_usd", usd(o->staff_month));
	json_object_set_new(j, "monthly_onprem_usd", usd(o->onprem_month));
	for (c = 0; c < DRV_CLOUD_N; c++) {
		json_object_set_new(cloud, drv_cost_cloud_names[c], usd(o->cloud_month[c]));
		json_object_set_new(be, drv_cost_cloud_names[c], months_json(o->break_even[c]));
	}
	json_object_set_new(j, "monthly_cloud_usd", cloud);
	json_object_set_new(j, "break_even_months_by_cloud", be);
	json_object_set_new(j, "onprem_usd_per_gpu_hour", json_real(round(o->onprem_usd_gpuh * 1e4) / 1e4));
	for (i = 0; i < NSENS; i++) {
		json_t *r = json_object();
		json_object_set_new(r, "vary", json_string(rows[i].what));
		json_object_set_new(r, rows[i].what[0] == 'u' ? "utilisation" : "factor",
				    json_real(rows[i].value));
		json_object_set_new(r, "break_even_months", months_json(rows[i].break_even));
		json_array_append_new(s, r);
	}
	json_object_set_new(j, "sensitivity", s);
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
	fputc('\n', stdout);
	json_decref(j);
}

static void months_text(char *buf, size_t sz, int m)
{
	if (m > 0)
		snprintf(buf, sz, "%d", m);
	else
		snprintf(buf, sz, "never (within %d months)", DRV_COST_HORIZON_MONTHS);
}

static void print_text(const struct drv_cost_in *in, const struct drv_cost_out *o,
		       const struct drv_cost_sens *rows)
{
	char m[64];
	int c, i;

	printf("%.0f GPUs, %.0f used GPU-hours a month (utilisation %.0f%%)\n", o->gpus,
	       o->used_gpuh_month, in->utilisation * 100.0);
	printf("on-prem   $%12.0f a month: capex $%.0f over %g years = $%.0f, power $%.0f, "
	       "colo $%.0f, network $%.0f, staff $%.0f\n", o->onprem_month, o->capex_usd,
	       in->depreciation_years, o->capex_month, o->power_month, o->colo_month,
	       o->network_month, o->staff_month);
	for (c = 0; c < DRV_CLOUD_N; c++) {
		months_text(m, sizeof(m), o->break_even[c]);
		printf("%-9s $%12.0f a month at $%.2f/GPU-h; break-even month: %s\n",
		       drv_cost_cloud_names[c], o->cloud_month[c], in->cloud_usd_gpuh[c], m);
	}
	months_text(m, sizeof(m), o->break_even[in->compare]);
	printf("break-even against %s: %s\n", drv_cost_cloud_names[in->compare], m);
	printf("put in the cluster file: pricePerGpuHour: %.2f  (on-prem per used GPU-hour)\n",
	       o->onprem_usd_gpuh);
	printf("\nsensitivity (against %s)\n%-12s %8s  %s\n", drv_cost_cloud_names[in->compare],
	       "vary", "value", "break-even month");
	for (i = 0; i < NSENS; i++) {
		months_text(m, sizeof(m), rows[i].break_even);
		if (rows[i].what[0] == 'u')
			printf("%-12s %7.0f%%  %s\n", rows[i].what, rows[i].value * 100.0, m);
		else
			printf("%-12s %+7.0f%%  %s\n", rows[i].what, (rows[i].value - 1.0) * 100.0, m);
	}
}

/* --from-sim: the utilisation a `drover sim --json` run measured
 * (gpu_alloc_ratio: allocated GPU-seconds over capacity). */
static int from_sim(const char *path, double *util)
{
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e), *r;
	int rc = 0;

	if (!j) {
		fprintf(stderr, "drover cost: %s:%d:%d: %s\n", path, e.line, e.column, e.text);
		return 2;
	}
	r = json_object_get(j, "gpu_alloc_ratio");
	if (!json_is_number(r) || json_number_value(r) < 0 || json_number_value(r) > 1) {
		fprintf(stderr, "drover cost: %s: gpu_alloc_ratio: found %s, expected a number "
			"from 0 to 1 (the output of drover sim --json)\n", path,
			r ? "another type or range" : "nothing");
		rc = 2;
	} else {
		*util = json_number_value(r);
	}
	json_decref(j);
	return rc;
}

struct html_args {
	const char *source;
	const struct drv_cost_in *in;
	const struct drv_cost_out *o;
	const struct drv_cost_sens *rows;
};

static int put_html(FILE *f, void *arg)
{
	const struct html_args *h = arg;

	return drv_cost_html(f, h->source, h->in, h->o, h->rows, NSENS);
}

int cmd_cost(int argc, char **argv)
{
	bool json = false;
	const char *sim = NULL, *path = DEFAULT_FILE, *html = NULL;
	struct drv_option opts[] = {
		DRV_OPT_FLAG(0, "json", &json, "print one JSON object"),
		DRV_OPT_STRING(0, "from-sim", &sim, "SIMJSON",
			       "take the utilisation from a drover sim --json output (gpu_alloc_ratio)"),
		DRV_OPT_STRING(0, "html", &html, "OUT.html",
			       "also write the cumulative cost curves (one self-contained page)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover cost",
		.usage = "drover cost [FILE] [--json] [--from-sim SIMJSON] [--html OUT.html]",
		.about = "Compares owning GPUs with renting them from stated assumptions (FILE, "
			 "default " DEFAULT_FILE "): monthly costs, the break-even month, the "
			 "on-prem price per used GPU-hour and a sensitivity table. See docs/cost.md.",
		.options = opts,
		.args_max = 1,
	};
	int n = drv_opts_parse(&cmd, argc, argv), rc;
	struct drv_cost_in in;
	struct drv_cost_out out;
	struct drv_cost_sens rows[NSENS];
	struct drv_diags d;

	if (n < 0)
		return drv_opts_exit(n);
	if (n == 1)
		path = argv[0];
	drv_diags_init(&d, path);
	rc = drv_cost_load_file(path, &in, &d);
	drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	if (rc == DRV_EIO && n == 0)
		fprintf(stderr, "drover cost: no FILE given and the default %s is not in the current "
			"directory: run from the repository or give FILE\n", DEFAULT_FILE);
	if (rc)
		return 2;
	if (sim && (rc = from_sim(sim, &in.utilisation)))
		return rc;
	drv_cost_compute(&in, &out);
	sensitivity(&in, rows);
	if (html) {
		struct html_args h = { path, &in, &out, rows };

		if (drv_file_write_atomic(html, 0644, put_html, &h) < 0) {
			fprintf(stderr, "drover cost: --html %s: %s\n", html, strerror(errno));
			return 1;
		}
	}
	if (json)
		print_json(&in, &out, rows);
	else
		print_text(&in, &out, rows);
	if (html && !json)
		printf("\ncost curves written to %s\n", html);
	return 0;
}
