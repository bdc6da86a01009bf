/*
 * report.c: the simulator's HTML report: one self-contained page (inline
 * CSS and SVG, no script, nothing fetched) with the summary and four
 * charts: GPU allocation and queue depth over time, the JCT CDF by job
 * size, wait by priority, and cost by pool, then a table of what each
 * tenant got. It opens in any browser.
 *
 * The charts are drawn by two small helpers (a line chart with optional
 * log-x axis, a grouped bar chart) that write SVG elements directly; the
 * data are bucketed first so the page stays small for long traces.
 */
#include "drover/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 760
#define H 260
#define ML 70 /* margins */
#define MR 20
#define MT 20
#define MB 45

static const char *const palette[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
				       "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };

struct series {
	const char *name;
	const double *x, *y;
	size_t n;
	size_t count; /* shown in the legend when set (e.g. jobs behind a CDF) */
};

static void html_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* A "nice" tick step for a range (1, 2 or 5 times a power of ten). */
static double nice_step(double range, int want)
{
	double raw = range / want, p, m;
	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void fmt_num(char *buf, size_t sz, double v)
{
	double a = fabs(v);
	if (a >= 1e6)
		snprintf(buf, sz, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, sz, "%.3gk", v / 1e3);
	else
		snprintf(buf, sz, "%.4g", v);
}

/* Line chart. logx: x is plotted as log10 (x must be > 0). step: draw
 * steps (the time series) rather than straight segments. */
static void line_chart(FILE *f, const char *title, const char *xlabel, const char *ylabel,
		       const struct series *s, int ns, bool logx, bool step, double ymax_hint)
{
	double xmin = INFINITY, xmax = -INFINITY, ymin = 0, ymax = ymax_hint, t, st;
	int i;
	size_t k;
	char b[32];
	const int pw = W - ML - MR, ph = H - MT - MB;

	for (i = 0; i < ns; i++)
		for (k = 0; k < s[i].n; k++) {
			double x = logx ? log10(DRV_MAX(s[i].x[k], 1e-3)) : s[i].x[k];
			xmin = DRV_MIN(xmin, x);
			xmax = DRV_MAX(xmax, x);
			ymax = DRV_MAX(ymax, s[i].y[k]);
		}
	fprintf(f, "<figure><figcaption>");
	html_text(f, title);
	fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		W, H + 22 * ((ns + 3) / 4), W, H + 22 * ((ns + 3) / 4));
	if (!isfinite(xmin)) {
		fprintf(f, "<text x=\"%d\" y=\"%d\">no data</text></svg></figure>\n", W / 2 - 30,
			H / 2);
		return;
	}
	if (xmax <= xmin)
		xmax = xmin + 1;
	if (ymax <= ymin)
		ymax = ymin + 1;
	ymax *= 1.05;
#define PX(x) (ML + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (MT + ph - ((y) - ymin) / (ymax - ymin) * ph)
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		   "stroke=\"#ccc\"/>\n", ML, MT, pw, ph);
	/* y grid */
	st = nice_step(ymax - ymin, 5);
	for (t = 0; t <= ymax; t += st) {
		fmt_num(b, sizeof(b), t);
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%s</text>\n",
			ML, ML + pw, PY(t), PY(t), ML - 6, PY(t) + 4, b);
	}
	/* x ticks */
	if (logx) {
		for (t = ceil(xmin); t <= xmax; t += 1) {
			fmt_num(b, sizeof(b), pow(10, t));
			fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
				   "stroke=\"#e4e4e4\"/><text x=\"%.1f\" y=\"%d\" "
				   "text-anchor=\"middle\" class=\"tick\">%s</text>\n",
				PX(t), PX(t), MT, MT + ph, PX(t), MT + ph + 16, b);
		}
	} else {
		st = nice_step(xmax - xmin, 8);
		for (t = ceil(xmin / st) * st; t <= xmax; t += st) {
			fmt_num(b, sizeof(b), t);
			fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
				   "stroke=\"#e4e4e4\"/><text x=\"%.1f\" y=\"%d\" "
				   "text-anchor=\"middle\" class=\"tick\">%s</text>\n",
				PX(t), PX(t), MT, MT + ph, PX(t), MT + ph + 16, b);
		}
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"lab\">", ML + pw / 2,
		MT + ph + 36);
	html_text(f, xlabel);
	fprintf(f, "</text><text transform=\"translate(16,%d) rotate(-90)\" "
		   "text-anchor=\"middle\" class=\"lab\">", MT + ph / 2);
	html_text(f, ylabel);
	fprintf(f, "</text>\n");
	for (i = 0; i < ns; i++) {
		const char *col = palette[i % DRV_ARRAY_SIZE(palette)];
		if (!s[i].n)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
			col);
		for (k = 0; k < s[i].n; k++) {
			double x = logx ? log10(DRV_MAX(s[i].x[k], 1e-3)) : s[i].x[k];
			if (step && k)
				fprintf(f, "%.1f,%.1f ", PX(x), PY(s[i].y[k - 1]));
			fprintf(f, "%.1f,%.1f ", PX(x), PY(s[i].y[k]));
		}
		fprintf(f, "\"/>\n");
		/* a series of a few points gets markers, so one point still shows */
		if (s[i].n <= 20)
			for (k = 0; k < s[i].n; k++) {
				double x = logx ? log10(DRV_MAX(s[i].x[k], 1e-3)) : s[i].x[k];
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
					PX(x), PY(s[i].y[k]), col);
			}
	}
	/* legend below */
	for (i = 0; i < ns && ns > 1; i++) {
		int lx = ML + (i % 4) * 170, ly = H + 4 + 22 * (i / 4);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text x=\"%d\" y=\"%d\" class=\"tick\">",
			lx, ly, palette[i % DRV_ARRAY_SIZE(palette)], lx + 16, ly + 10);
		html_text(f, s[i].name);
		if (s[i].count)
			fprintf(f, " (%zu)", s[i].count);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</svg></figure>\n");
#undef PX
#undef PY
}

/* Grouped bar chart: ncat categories, nval values each. */
static void bar_chart(FILE *f, const char *title, const char *ylabel, char **cats, int ncat,
		      const char *const *valnames, int nval, const double *v /* [ncat][nval] */)
{
	double ymax = 0, st, t;
	int i, k;
	char b[32];
	const int pw = W - ML - MR, ph = H - MT - MB;
	double gw = ncat ? (double)pw / ncat : pw, bw = gw * 0.8 / (nval ? nval : 1);

	for (i = 0; i < ncat * nval; i++)
		ymax = DRV_MAX(ymax, v[i]);
	if (ymax <= 0)
		ymax = 1;
	ymax *= 1.08;
	fprintf(f, "<figure><figcaption>");
	html_text(f, title);
	fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		W, H + 22, W, H + 22);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		   "stroke=\"#ccc\"/>\n", ML, MT, pw, ph);
	st = nice_step(ymax, 5);
	for (t = 0; t <= ymax; t += st) {
		double y = MT + ph - t / ymax * ph;
		fmt_num(b, sizeof(b), t);
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%s</text>\n",
			ML, ML + pw, y, y, ML - 6, y + 4, b);
	}
	for (i = 0; i < ncat; i++) {
		double gx = ML + i * gw + gw * 0.1;
		for (k = 0; k < nval; k++) {
			double val = v[i * nval + k], hgt = val / ymax * ph;
			fmt_num(b, sizeof(b), val);
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"%s\"><title>",
				gx + k * bw, MT + ph - hgt, bw * 0.95, hgt,
				palette[k % DRV_ARRAY_SIZE(palette)]);
			html_text(f, cats[i]);
			fprintf(f, " %s: %s</title></rect>", valnames[k], b);
			if (ncat * nval <= 24)
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
					   "class=\"tick\">%s</text>",
					gx + k * bw + bw / 2, MT + ph - hgt - 3, b);
			fputc('\n', f);
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">",
			ML + i * gw + gw / 2, MT + ph + 16);
		html_text(f, cats[i]);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "<text transform=\"translate(16,%d) rotate(-90)\" text-anchor=\"middle\" "
		   "class=\"lab\">", MT + ph / 2);
	html_text(f, ylabel);
	fprintf(f, "</text>\n");
	for (k = 0; k < nval && nval > 1; k++) {
		int lx = ML + k * 170, ly = H + 4;
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text x=\"%d\" y=\"%d\" class=\"tick\">%s</text>\n",
			lx, ly, palette[k % DRV_ARRAY_SIZE(palette)], lx + 16, ly + 10, valnames[k]);
	}
	fprintf(f, "</svg></figure>\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int64_t job_gpus(const struct drv_job *j)
{
	return (drv_job_gpu_milli(j) + 999) / 1000;
}

/* Allocation and queue depth, averaged into nb buckets over [0, end]. */
static void time_series(FILE *f, const struct drv_sim_result *r, int64_t end)
{
	enum { NB = 500 };
	double *x = drv_calloc(NB, sizeof(double)), *alloc = drv_calloc(NB, sizeof(double)),
	       *queue = drv_calloc(NB, sizeof(double)), *run = drv_calloc(NB, sizeof(double));
	double span = end > 0 ? (double)end : 1, bw = span / NB, unit = 1;
	const char *ulabel = "time (s)";
	size_t i;
	int b;
	struct series s[2];

	if (span > 3 * 86400) {
		unit = 86400;
		ulabel = "time (days)";
	} else if (span > 3 * 3600) {
		unit = 3600;
		ulabel = "time (hours)";
	}
	/* integrate each step over the buckets it covers */
	for (i = 0; i < r->nsamples; i++) {
		double t0 = (double)r->samples[i].t;
		double t1 = i + 1 < r->nsamples ? (double)r->samples[i + 1].t : span;
		if (t1 > span)
			t1 = span;
		while (t0 < t1) {
			int bk = (int)(t0 / bw);
			double be, d;
			if (bk >= NB)
				break;
			be = (bk + 1) * bw;
			d = DRV_MIN(t1, be) - t0;
			alloc[bk] += d * (double)r->samples[i].alloc_milli / 1000.0;
			queue[bk] += d * r->samples[i].queued;
			run[bk] += d * r->samples[i].running;
			t0 += d;
			if (d <= 0)
				break;
		}
	}
	for (b = 0; b < NB; b++) {
		x[b] = (b + 0.5) * bw / unit;
		alloc[b] /= bw;
		queue[b] /= bw;
		run[b] /= bw;
	}
	s[0] = (struct series){ "allocated GPUs", x, alloc, NB, 0 };
	line_chart(f, "GPU allocation over time (time-averaged per interval)", ulabel,
		   "allocated GPUs", s, 1, false, false, (double)r->total_gpus);
	s[0] = (struct series){ "pending jobs", x, queue, NB, 0 };
	s[1] = (struct series){ "running jobs", x, run, NB, 0 };
	line_chart(f, "Queue depth over time (time-averaged per interval)", ulabel, "jobs", s, 2,
		   false, false, 0);
	drv_free(x);
	drv_free(alloc);
	drv_free(queue);
	drv_free(run);
}

static void jct_cdf(FILE *f, const struct drv_sim_workload *w, const struct drv_sim_result *r)
{
	static const struct {
		const char *name;
		int64_t lo, hi;
	} cls[] = { { "1 GPU", 1, 1 },       { "2-4 GPUs", 2, 4 },    { "5-8 GPUs", 5, 8 },
		    { "9-32 GPUs", 9, 32 }, { "33+ GPUs", 33, INT64_MAX }, { "no GPU", 0, 0 } };
	enum { NC = 6, NP = 200 };
	double *jct[NC], *px[NC], *py[NC];
	size_t n[NC] = { 0 }, i;
	struct series s[NC];
	int c, ns = 0;

	for (c = 0; c < NC; c++) {
		jct[c] = drv_malloc(sizeof(double) * (size_t)(w->njobs + 1));
		px[c] = drv_malloc(sizeof(double) * NP);
		py[c] = drv_malloc(sizeof(double) * NP);
	}
	for (i = 0; i < r->nruns; i++) {
		const struct drv_sim_run *run = &r->runs[i];
		int64_t g;
		if (run->outcome != DRV_SIM_COMPLETED)
			continue;
		g = job_gpus(&w->jobs[run->job].job);
		for (c = 0; c < NC; c++)
			if (g >= cls[c].lo && g <= cls[c].hi)
				break;
		if (c < NC)
			jct[c][n[c]++] = (double)(run->end - w->jobs[run->job].job.submit_time);
	}
	for (c = 0; c < NC; c++) {
		size_t k, m;
		if (!n[c])
			continue;
		qsort(jct[c], n[c], sizeof(double), cmp_double);
		m = n[c] < NP ? n[c] : NP;
		for (k = 0; k < m; k++) {
			size_t idx = m == n[c] ? k : (size_t)((double)k * (n[c] - 1) / (m - 1));
			px[c][k] = DRV_MAX(jct[c][idx], 1.0);
			py[c][k] = (double)(idx + 1) / n[c];
		}
		s[ns++] = (struct series){ cls[c].name, px[c], py[c], m, n[c] };
	}
	line_chart(f, "Job completion time CDF by job size (jobs per class)", "JCT (s, log scale)",
		   "fraction of jobs", s, ns, true, false, 1.0);
	for (c = 0; c < NC; c++) {
		drv_free(jct[c]);
		drv_free(px[c]);
		drv_free(py[c]);
	}
}

static void wait_by_priority(FILE *f, const struct drv_sim_workload *w,
			     const struct drv_sim_result *r)
{
	enum { MAXP = 16 };
	int prios[MAXP], np = 0, i, k;
	double *waits;
	size_t nw, run;
	double v[MAXP * 2];
	char *cats[MAXP];
	static const char *const vn[] = { "mean wait (s)", "p99 wait (s)" };
	char buf[MAXP][32];

	for (i = 0; i < w->njobs; i++) {
		int p = w->jobs[i].job.priority;
		for (k = 0; k < np; k++)
			if (prios[k] == p)
				break;
		if (k == np && np < MAXP)
			prios[np++] = p;
	}
	qsort(prios, (size_t)np, sizeof(int), cmp_int);
	waits = drv_malloc(sizeof(double) * (size_t)(w->njobs + 1));
	for (k = 0; k < np; k++) {
		double sum = 0;
		nw = 0;
		/* wait: submit to first start, from each job's attempt 0 */
		for (run = 0; run < r->nruns; run++) {
			const struct drv_sim_run *ru = &r->runs[run];
			if (ru->attempt != 0 || ru->start < 0 ||
			    w->jobs[ru->job].job.priority != prios[k])
				continue;
			waits[nw] = (double)(ru->start - w->jobs[ru->job].job.submit_time);
			sum += waits[nw++];
		}
		if (nw)
			qsort(waits, nw, sizeof(double), cmp_double);
		v[k * 2] = nw ? sum / nw : 0;
		v[k * 2 + 1] = nw ? waits[(size_t)ceil(0.99 * nw) - 1] : 0;
		snprintf(buf[k], sizeof(buf[k]), "priority %d (%zu)", prios[k], nw);
		cats[k] = buf[k];
	}
	bar_chart(f, "Wait (submit to first start) by priority", "seconds", cats, np, vn, 2, v);
	drv_free(waits);
}

static void cost_by_pool(FILE *f, const struct drv_cluster *c, const struct drv_sim_result *r,
			 int64_t end)
{
	int np = c->npools ? c->npools : 1, p;
	double *cost = drv_calloc((size_t)np, sizeof(double)),
	       *gpuh = drv_calloc((size_t)np, sizeof(double)), *v;
	char **cats = drv_calloc((size_t)np, sizeof(char *));
	static const char *const vn[] = { "cost (USD)" };
	size_t i;
	int32_t t;

	for (i = 0; i < r->nruns; i++) {
		const struct drv_sim_run *run = &r->runs[i];
		double dur;
		if (run->start < 0)
			continue;
		dur = (double)((run->end >= 0 ? run->end : end) - run->start);
		for (t = 0; t < run->place.ntasks; t++) {
			const struct drv_task_place *tp = &run->place.tasks[t];
			int pool = c->nodes[tp->node].pool;
			double g = (double)__builtin_popcountll(tp->gpu_mask) * tp->gpu_milli / 1000.0;
			if (pool < 0 || pool >= np)
				pool = 0;
			gpuh[pool] += g * dur / 3600.0;
			if (c->npools)
				cost[pool] += g * dur / 3600.0 *
					      (double)c->pools[pool].price_micro_per_gpu_hour / 1e6;
		}
	}
	v = drv_calloc((size_t)np, sizeof(double));
	for (p = 0; p < np; p++) {
		char b[DRV_NAME_MAX + 48];
		snprintf(b, sizeof(b), "%s (%.0f GPU-h)", c->npools ? c->pools[p].name : "cluster",
			 gpuh[p]);
		cats[p] = drv_strdup(b);
		v[p] = cost[p];
	}
	bar_chart(f, "Cost by pool", "USD", cats, np, vn, 1, v);
	for (p = 0; p < np; p++)
		drv_free(cats[p]);
	drv_free(cats);
	drv_free(cost);
	drv_free(gpuh);
	drv_free(v);
}

/* One row per tenant, busiest (GPU-hours) first: what each one got. */
static void tenant_table(FILE *f, const struct drv_sim_workload *w, const struct drv_sim_result *r)
{
	int32_t i, *order, n = r->ntenants < w->ntenants ? r->ntenants : w->ntenants;

	if (n <= 0)
		return;
	order = drv_malloc(sizeof(int32_t) * (size_t)n);
	for (i = 0; i < n; i++) {
		int32_t k = i;
		while (k > 0 && r->tenants[order[k - 1]].gpu_hours < r->tenants[i].gpu_hours) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	fprintf(f, "<figure><figcaption>Per tenant</figcaption>\n<table>\n<tr><th>tenant</th>"
		   "<th>jobs</th><th>completed</th><th>never started</th><th>preempted</th>"
		   "<th>mean wait</th><th>p99 wait</th><th>mean JCT</th><th>GPU-hours</th>"
		   "<th>mean GPUs</th><th>peak GPUs</th><th>quota GPUs</th></tr>\n");
	for (i = 0; i < n; i++) {
		const struct drv_sim_tenant_sum *t = &r->tenants[order[i]];
		fprintf(f, "<tr><th>");
		html_text(f, w->tenants[order[i]]);
		fprintf(f, "</th><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%.0f s</td>"
			   "<td>%.0f s</td><td>%.0f s</td><td>%.1f</td><td>%.1f</td><td>%.4g</td>",
			(long long)t->jobs, (long long)t->completed, (long long)t->never_started,
			(long long)t->preempted, t->avg_wait_s, t->p99_wait_s, t->avg_jct_s,
			t->gpu_hours, t->avg_gpus, t->peak_gpus);
		if (t->quota_gpus >= 0)
			fprintf(f, "<td>%.4g</td></tr>\n", t->quota_gpus);
		else
			fprintf(f, "<td>none</td></tr>\n");
	}
	fprintf(f, "</table></figure>\n");
	drv_free(order);
}

int drv_sim_write_report(FILE *f, const struct drv_cluster *c, const struct drv_sim_workload *w,
			 const struct drv_sim_result *r, const char *title)
{
	const struct drv_sim_summary *s = &r->sum;
	int64_t end = s->makespan_s;

	if (r->nsamples && r->samples[r->nsamples - 1].t > end)
		end = r->samples[r->nsamples - 1].t;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
	html_text(f, title);
	fprintf(f, "</title>\n<style>\n"
		   "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;"
		   "margin:2em auto;max-width:800px;color:#222}\n"
		   "table{border-collapse:collapse;margin:1em 0}td,th{padding:3px 12px;"
		   "border-bottom:1px solid #ddd;text-align:right}th{text-align:left}\n"
		   "figure{margin:1.5em 0}figcaption{font-weight:600;margin-bottom:4px}\n"
		   "svg{font-size:11px;max-width:100%%;height:auto}.tick{fill:#555}.lab{fill:#222;"
		   "font-size:12px}\n</style></head><body>\n<h1>");
	html_text(f, title);
	fprintf(f, "</h1>\n<table>\n");
#define ROW(name, fmt, val) fprintf(f, "<tr><th>%s</th><td>" fmt "</td></tr>\n", name, val)
	ROW("jobs", "%lld", (long long)s->jobs);
	ROW("completed", "%lld", (long long)s->completed);
	ROW("rejected", "%lld", (long long)s->rejected);
	ROW("malformed rows", "%lld", (long long)s->malformed);
	ROW("mean JCT", "%.0f s", s->avg_jct_s);
	fprintf(f, "<tr><th>p50 / p99 JCT</th><td>%.0f s / %.0f s</td></tr>\n", s->p50_jct_s,
		s->p99_jct_s);
	ROW("mean wait", "%.0f s", s->avg_wait_s);
	ROW("p99 wait", "%.0f s", s->p99_wait_s);
	ROW("makespan", "%.2f days", (double)s->makespan_s / 86400.0);
	ROW("GPU allocation (while work waits or runs)", "%.1f%%", s->gpu_alloc_ratio * 100);
	ROW("preemptions", "%lld", (long long)s->preemptions);
	ROW("node failures", "%lld", (long long)s->failures);
	ROW("lost GPU-hours", "%.1f", s->lost_gpu_hours);
	ROW("cost", "$%.2f", s->cost_usd);
	ROW("cluster GPUs", "%lld", (long long)r->total_gpus);
#undef ROW
	fprintf(f, "</table>\n");
	time_series(f, r, end);
	jct_cdf(f, w, r);
	wait_by_priority(f, w, r);
	cost_by_pool(f, c, r, end);
	tenant_table(f, w, r);
	fprintf(f, "</body></html>\n");
	return ferror(f) ? DRV_EIO : 0;
}
