/*
 * cost_html.c: the page `drover cost --html FILE` writes: the cumulative
 * cost curves of owning against renting (an inline SVG, as the simulator's
 * report draws its charts), the monthly figures and the sensitivity table,
 * in one file that needs nothing else to open.
 *
 * Owning costs the capex in month 0 and the running costs (power, colo,
 * network, staff) every month after; renting costs the cloud price times
 * the used GPU-hours every month. The curves cross at the break-even month
 * drv_cost_break_even finds (capex + m x opex <= m x cloud).
 */
#include "drover/costmodel.h"

#include <math.h>
#include <stdio.h>

enum { W = 760, H = 380, ML = 80, MR = 20, MT = 16, MB = 48 };

static const char *const colours[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd" };

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

/* A round step near range / want: 1, 2 or 5 times a power of ten. */
static double step_of(double range, int want)
{
	double raw = range / want, p, m;

	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* Dollars as $1.2M, $350k, $900. */
static void money(char *b, size_t n, double v)
{
	if (fabs(v) >= 1e6)
		snprintf(b, n, "$%.3gM", v / 1e6);
	else if (fabs(v) >= 1e3)
		snprintf(b, n, "$%.3gk", v / 1e3);
	else
		snprintf(b, n, "$%.0f", v);
}

/* The months the chart spans: past every break-even, at least 36. */
static int span_months(const struct drv_cost_out *o)
{
	int m = 36;

	for (int c = 0; c < DRV_CLOUD_N; c++)
		if (o->break_even[c] > 0)
			m = (int)fmax(m, ceil(o->break_even[c] * 1.25));
	return (int)fmin(m, DRV_COST_HORIZON_MONTHS);
}

static double onprem_at(const struct drv_cost_out *o, int m)
{
	return o->capex_usd + m * o->opex_month;
}

static void axes(FILE *f, int months, double ymax)
{
	const int pw = W - ML - MR, ph = H - MT - MB;
	double st = step_of(ymax, 6), t;
	char b[32];

	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		   "stroke=\"#ccc\"/>\n", ML, MT, pw, ph);
	for (t = 0; t <= ymax; t += st) {
		double y = MT + ph - t / ymax * ph;

		money(b, sizeof(b), t);
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%s</text>\n",
			ML, ML + pw, y, y, ML - 6, y + 4, b);
	}
	st = step_of(months, 10);
	for (t = 0; t <= months; t += st) {
		double x = ML + t / months * pw;

		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e4e4e4\"/>"
			   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">%.0f</text>\n",
			x, x, MT, MT + ph, x, MT + ph + 16, t);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">month</text>\n"
		   "<text transform=\"translate(14,%d) rotate(-90)\" text-anchor=\"middle\">"
		   "cumulative cost (USD)</text>\n", ML + pw / 2, H - 8, MT + ph / 2);
}

/* One curve: month 0..months of cost(m); its legend entry at slot i. */
static void curve(FILE *f, int i, const char *name, int months, double ymax,
		  const struct drv_cost_out *o, int cloud)
{
	const int pw = W - ML - MR, ph = H - MT - MB;
	const char *col = colours[i % 4];

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", col,
		cloud < 0 ? "" : " stroke-dasharray=\"6 3\"");
	for (int m = 0; m <= months; m++) {
		double v = cloud < 0 ? onprem_at(o, m) : m * o->cloud_month[cloud];

		fprintf(f, "%.1f,%.1f ", ML + (double)m / months * pw, MT + ph - v / ymax * ph);
	}
	fprintf(f, "\"/>\n<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		   "<text x=\"%d\" y=\"%d\" class=\"tick\">", ML + 12 + 180 * i, H + 6, col,
		ML + 30 + 180 * i, H + 16);
	esc(f, name);
	fprintf(f, "</text>\n");
	if (cloud >= 0 && o->break_even[cloud] > 0 && o->break_even[cloud] <= months) {
		int be = o->break_even[cloud];
		double x = ML + (double)be / months * pw, y = MT + ph - onprem_at(o, be) / ymax * ph;

		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">month %d</text>\n",
			x, y, col, x + 6, y - 6, be);
	}
}

static void chart(FILE *f, const struct drv_cost_in *in, const struct drv_cost_out *o)
{
	int months = span_months(o), c;
	double ymax = onprem_at(o, months);
	char name[64];

	for (c = 0; c < DRV_CLOUD_N; c++)
		ymax = fmax(ymax, months * o->cloud_month[c]);
	ymax *= 1.05;
	fprintf(f, "<figure><figcaption>Cumulative cost: owning (solid) against renting at each "
		   "cloud price (dashed); dots mark the break-even months</figcaption>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H + 24, W, H + 24);
	axes(f, months, ymax);
	curve(f, 0, "on-prem", months, ymax, o, -1);
	for (c = 0; c < DRV_CLOUD_N; c++) {
		snprintf(name, sizeof(name), "cloud %s ($%.2f/GPU-h)", drv_cost_cloud_names[c],
			 in->cloud_usd_gpuh[c]);
		curve(f, c + 1, name, months, ymax, o, c);
	}
	fprintf(f, "</svg></figure>\n");
}

static void be_cell(FILE *f, int m)
{
	if (m > 0)
		fprintf(f, "<td>%d</td>", m);
	else
		fprintf(f, "<td>never (within %d months)</td>", DRV_COST_HORIZON_MONTHS);
}

static void tables(FILE *f, const struct drv_cost_in *in, const struct drv_cost_out *o,
		   const struct drv_cost_sens *rows, size_t nrows)
{
	fprintf(f, "<h2>Monthly cost</h2>\n<table><tr><th>option</th><th>USD a month</th>"
		   "<th>break-even month</th></tr>\n<tr><td>on-prem: capex $%.0f over %g years = "
		   "$%.0f, power $%.0f, colo $%.0f, network $%.0f, staff $%.0f</td><td>%.0f</td>"
		   "<td></td></tr>\n", o->capex_usd, in->depreciation_years, o->capex_month,
		o->power_month, o->colo_month, o->network_month, o->staff_month, o->onprem_month);
	for (int c = 0; c < DRV_CLOUD_N; c++) {
		fprintf(f, "<tr><td>cloud %s at $%.2f/GPU-h</td><td>%.0f</td>",
			drv_cost_cloud_names[c], in->cloud_usd_gpuh[c], o->cloud_month[c]);
		be_cell(f, o->break_even[c]);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</table>\n<p>%.0f GPUs, %.0f used GPU-hours a month (utilisation %.0f%%); "
		   "on-prem per used GPU-hour: $%.2f (the cluster file's <code>pricePerGpuHour</code>)."
		   "</p>\n", o->gpus, o->used_gpuh_month, in->utilisation * 100, o->onprem_usd_gpuh);
	fprintf(f, "<h2>Sensitivity (against %s)</h2>\n<table><tr><th>vary</th><th>value</th>"
		   "<th>break-even month</th></tr>\n", drv_cost_cloud_names[in->compare]);
	for (size_t i = 0; i < nrows; i++) {
		fprintf(f, "<tr><td>%s</td>", rows[i].what);
		if (rows[i].what[0] == 'u')
			fprintf(f, "<td>%.0f%%</td>", rows[i].value * 100);
		else
			fprintf(f, "<td>%+.0f%%</td>", (rows[i].value - 1) * 100);
		be_cell(f, rows[i].break_even);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</table>\n");
}

int drv_cost_html(FILE *f, const char *source, const struct drv_cost_in *in,
		  const struct drv_cost_out *o, const struct drv_cost_sens *rows, size_t nrows)
{
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<title>drover cost: ");
	esc(f, source);
	fprintf(f, "</title>\n<style>body{font:14px sans-serif;margin:2em;max-width:60em}"
		   "svg{font-size:11px;max-width:100%%;height:auto}.tick{fill:#555}"
		   "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
		   "text-align:left}</style></head><body>\n<h1>Owning against renting GPUs</h1>\n"
		   "<p>Assumptions: <code>");
	esc(f, source);
	fprintf(f, "</code> (every figure's public source and date, or \"estimate\", is in its "
		   "comments). Break-even against %s: ", drv_cost_cloud_names[in->compare]);
	if (o->break_even[in->compare] > 0)
		fprintf(f, "<b>month %d</b>.</p>\n", o->break_even[in->compare]);
	else
		fprintf(f, "<b>never within %d months</b>.</p>\n", DRV_COST_HORIZON_MONTHS);
	chart(f, in, o);
	tables(f, in, o, rows, nrows);
	fprintf(f, "</body></html>\n");
	return ferror(f) ? DRV_EIO : 0;
}
