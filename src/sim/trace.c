/*
 * trace.c: workloads for the simulator: the workload container, the Philly
 * CSV reader, and what both readers share (trace_int.h) with drover's
 * native workload CSV (trace_native.c: reader and writer).
 *
 * Both readers share one discipline: blank lines are skipped, a malformed
 * row is reported with its line and column and counted, not fatal, unless
 * the caller asks for strict reading; the jobs are then sorted by submit
 * time (rows need not be in order) and renumbered from the first submit.
 */
#include "drover/sim.h"
#include "drover/spec.h"
#include "trace_int.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char trace_group_name[] = "tasks";

void drv_sim_workload_init(struct drv_sim_workload *w)
{
	memset(w, 0, sizeof(*w));
}

void trace_job_free_fields(struct drv_sim_job *sj)
{
	struct drv_job *j = &sj->job;
	int i;
	drv_free(j->name);
	drv_free(j->groups);
	drv_free(j->topo_level);
	drv_free(j->slice_level);
	for (i = 0; i < j->nregions; i++)
		drv_free(j->regions[i]);
	drv_free(j->regions);
	drv_free(sj->reject);
}

void drv_sim_workload_release(struct drv_sim_workload *w)
{
	int32_t i;
	for (i = 0; i < w->njobs; i++)
		trace_job_free_fields(&w->jobs[i]);
	drv_free(w->jobs);
	for (i = 0; i < w->ntenants; i++)
		drv_free(w->tenants[i]);
	drv_free(w->tenants);
	for (i = 0; i < w->nclasses; i++)
		drv_free(w->classes[i]);
	drv_free(w->classes);
	drv_free(w->class_values);
	memset(w, 0, sizeof(*w));
}

int32_t drv_sim_tenant(struct drv_sim_workload *w, const char *name)
{
	int32_t i;
	/* Workloads have tens of tenants; rows of one tenant come in runs. */
	for (i = w->ntenants - 1; i >= 0; i--)
		if (!strcmp(w->tenants[i], name))
			return i;
	DRV_GROW(w->tenants, (size_t)w->ntenants + 1, w->tcap);
	w->tenants[w->ntenants] = drv_strdup(name);
	return w->ntenants++;
}

struct drv_sim_job *trace_new_job(struct drv_sim_workload *w)
{
	struct drv_sim_job *sj;
	DRV_GROW(w->jobs, (size_t)w->njobs + 1, w->cap);
	sj = &w->jobs[w->njobs++];
	memset(sj, 0, sizeof(*sj));
	sj->pclass = -1;
	return sj;
}

/* Splits n GPUs into whole-node tasks plus one remainder task (the Philly
 * gang rule): 12 on 8-GPU nodes is 8 + 4. */
static void set_gang(struct drv_job *j, int64_t n, int node_gpus)
{
	int ng = (n <= node_gpus || n % node_gpus == 0) ? 1 : 2;
	j->groups = drv_calloc((size_t)ng, sizeof(*j->groups));
	j->ngroups = ng;
	j->groups[0].name = trace_group_name;
	j->groups[0].model = -1;
	if (n <= node_gpus) {
		j->groups[0].count = 1;
		j->groups[0].gpus = (int32_t)n;
		return;
	}
	j->groups[0].count = (int32_t)(n / node_gpus);
	j->groups[0].gpus = node_gpus;
	if (ng == 2) {
		j->groups[1].name = trace_group_name;
		j->groups[1].model = -1;
		j->groups[1].count = 1;
		j->groups[1].gpus = (int32_t)(n % node_gpus);
	}
}

/* Days since 1970-01-01 of a proleptic Gregorian date (no time zone). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dm[m - 1];
}

/* n digits at s as a number; -1 when one is not a digit */
static int digits(const char *s, int n)
{
	int v = 0, i;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* "YYYY-MM-DD HH:MM:SS" (UTC) to Unix seconds; false when malformed.
 * By hand: sscanf was a third of the time of reading the Philly trace. */
static bool parse_timestamp(const char *s, size_t len, int64_t *out)
{
	int y, mo, d, h, mi, se;
	if (len != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' ||
	    s[16] != ':')
		return false;
	y = digits(s, 4);
	mo = digits(s + 5, 2);
	d = digits(s + 8, 2);
	h = digits(s + 11, 2);
	mi = digits(s + 14, 2);
	se = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h < 0 ||
	    h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60)
		return false;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	return true;
}

/* A decimal number filling the whole field; false when not. */
static bool parse_num(const char *s, size_t len, double *out)
{
	char buf[64], *end;
	double v;
	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (end != buf + len || errno || !isfinite(v))
		return false;
	*out = v;
	return true;
}

/* A whole number filling the field. */
bool trace_parse_int(const char *s, size_t len, int64_t *out)
{
	char buf[32], *end;
	long long v;
	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (end != buf + len || errno)
		return false;
	*out = v;
	return true;
}

/* Splits line on commas; returns the field count (MAX_FIELDS + 1 when more). */
int trace_split(const char *line, size_t len, struct field *f)
{
	int n = 0;
	size_t i, start = 0;
	for (i = 0; i <= len; i++) {
		if (i == len || line[i] == ',') {
			if (n == MAX_FIELDS)
				return MAX_FIELDS + 1;
			f[n].s = line + start;
			f[n].len = i - start;
			f[n].col = (int)start + 1;
			n++;
			start = i + 1;
		}
	}
	return n;
}

/* Strips the line end (\n, \r\n) and reports whether what is left is blank. */
size_t trace_chomp(char *line, size_t len)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	return len;
}

bool trace_is_blank(const char *s, size_t len)
{
	size_t i;
	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

struct sort_key {
	int64_t t;
	int32_t line;
	int32_t idx;
};

static int cmp_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/* Sorts jobs [first, n) by (submit time, line): small keys are sorted and
 * the jobs moved once, as moving whole jobs in qsort dominated reading. */
static void sort_jobs(struct drv_sim_workload *w, int32_t first)
{
	int32_t n = w->njobs - first, i;
	struct sort_key *k;
	struct drv_sim_job *tmp;
	bool sorted = true;

	for (i = first + 1; i < w->njobs && sorted; i++)
		if (cmp_key(&(struct sort_key){ w->jobs[i - 1].job.submit_time, w->jobs[i - 1].line, 0 },
			    &(struct sort_key){ w->jobs[i].job.submit_time, w->jobs[i].line, 0 }) > 0)
			sorted = false;
	if (sorted)
		return;
	k = drv_malloc(sizeof(*k) * (size_t)n);
	for (i = 0; i < n; i++)
		k[i] = (struct sort_key){ w->jobs[first + i].job.submit_time, w->jobs[first + i].line,
					  first + i };
	qsort(k, (size_t)n, sizeof(*k), cmp_key);
	tmp = drv_malloc(sizeof(*tmp) * (size_t)n);
	for (i = 0; i < n; i++)
		tmp[i] = w->jobs[k[i].idx];
	memcpy(w->jobs + first, tmp, sizeof(*tmp) * (size_t)n);
	drv_free(tmp);
	drv_free(k);
}

/* Sorts by submit time, makes times relative to the first, numbers jobs. */
void trace_finish_workload(struct drv_sim_workload *w, int32_t first_new)
{
	int32_t i;
	int64_t epoch;
	if (w->njobs == first_new)
		return;
	sort_jobs(w, first_new);
	epoch = w->jobs[first_new].job.submit_time;
	w->epoch = epoch;
	for (i = first_new; i < w->njobs; i++) {
		struct drv_job *j = &w->jobs[i].job;
		j->submit_time -= epoch;
		j->id = (uint64_t)i + 1;
		j->tenant = w->tenants[w->jobs[i].tenant];
	}
}

/* The decimal text of a line number, for a job's name. */
char *trace_line_name(int line)
{
	char buf[16], *p = buf + sizeof(buf);
	unsigned v = (unsigned)line;
	*--p = 0;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return drv_strndup(p, (size_t)(buf + sizeof(buf) - 1 - p));
}

/* Drops the jobs added since first_new (a strict read that failed). */
void trace_drop_jobs(struct drv_sim_workload *w, int32_t first_new)
{
	while (w->njobs > first_new)
		trace_job_free_fields(&w->jobs[--w->njobs]);
}

void trace_bad_row(struct drv_diags *d, bool strict, struct drv_sim_workload *w, int line,
		   int col, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strict)
		drv_diag_err(d, line, col, field, "%s", msg);
	else
		drv_diag_warn(d, line, col, field, "%s (row skipped)", msg);
	w->malformed++;
}

/* ------------------------------------------------------------------------
 * Philly.
 */

struct prow {
	int64_t ts, dur;
	int64_t gpus;
	int32_t line, tenant;
};

static int cmp_prow(const void *a, const void *b)
{
	const struct prow *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

static const char *const philly_cols[] = { "timestamp", "duration", "num_gpus", "gpu_time",
					   "cluster" };

/* The optional header line: the five column names, any case. */
static bool philly_header(const struct field *fl, int nf)
{
	if (nf != 5)
		return false;
	for (int c = 0; c < 5; c++)
		if (fl[c].len != strlen(philly_cols[c]) ||
		    strncasecmp(fl[c].s, philly_cols[c], fl[c].len))
			return false;
	return true;
}

/* One data row's five fields into *row; false (row reported) when one is bad. */
static bool philly_row(struct drv_sim_workload *w, struct drv_diags *d, bool strict, int lineno,
		       const struct field *fl, int nf, struct prow *row)
{
	int64_t ts;
	double dur, ngf, gt;
	char tenant[DRV_NAME_MAX];

	if (nf != 5) {
		trace_bad_row(d, strict, w, lineno, 1, NULL,
			      "expected 5 fields (timestamp,duration,num_gpus,gpu_time,cluster), "
			      "found %s%d", nf > MAX_FIELDS ? "more than " : "",
			      nf > MAX_FIELDS ? MAX_FIELDS : nf);
		return false;
	}
	if (!parse_timestamp(fl[0].s, fl[0].len, &ts)) {
		trace_bad_row(d, strict, w, lineno, fl[0].col, "timestamp",
			      "expected YYYY-MM-DD HH:MM:SS, found '%.*s'", SHOW(fl[0]));
		return false;
	}
	if (!parse_num(fl[1].s, fl[1].len, &dur) || dur < 0 || dur > 1e10) {
		trace_bad_row(d, strict, w, lineno, fl[1].col, "duration",
			      "expected seconds >= 0, found '%.*s'", SHOW(fl[1]));
		return false;
	}
	if (!parse_num(fl[2].s, fl[2].len, &ngf) || ngf < 1 || ngf > 1e6 || ngf != floor(ngf)) {
		trace_bad_row(d, strict, w, lineno, fl[2].col, "num_gpus",
			      "expected a whole number of GPUs >= 1, found '%.*s'", SHOW(fl[2]));
		return false;
	}
	if (!parse_num(fl[3].s, fl[3].len, &gt) || gt < 0) {
		trace_bad_row(d, strict, w, lineno, fl[3].col, "gpu_time",
			      "expected GPU-seconds >= 0, found '%.*s'", SHOW(fl[3]));
		return false;
	}
	if (!fl[4].len || fl[4].len >= sizeof(tenant) || trace_is_blank(fl[4].s, fl[4].len)) {
		trace_bad_row(d, strict, w, lineno, fl[4].col, "cluster",
			      "expected a virtual cluster name of 1 to 63 characters, found '%.*s'",
			      SHOW(fl[4]));
		return false;
	}
	memcpy(tenant, fl[4].s, fl[4].len);
	tenant[fl[4].len] = 0;
	row->ts = ts;
	row->line = lineno;
	row->tenant = drv_sim_tenant(w, tenant);
	row->gpus = (int64_t)ngf;
	/* whole seconds; a job of a fraction of a second still takes one */
	row->dur = (int64_t)llround(dur);
	if (row->dur < 1)
		row->dur = 1;
	return true;
}

/* The rows as jobs, in time order (rows are not: sort the small rows, not
 * the jobs), gangs split into whole-node tasks. */
static void philly_jobs(struct drv_sim_workload *w, struct prow *rows, size_t nrows,
			int node_gpus)
{
	size_t k;

	for (k = 1; k < nrows; k++)
		if (cmp_prow(&rows[k - 1], &rows[k]) > 0)
			break;
	if (k < nrows)
		qsort(rows, nrows, sizeof(*rows), cmp_prow);
	DRV_GROW(w->jobs, (size_t)w->njobs + nrows, w->cap);
	for (k = 0; k < nrows; k++) {
		struct drv_sim_job *sj = trace_new_job(w);
		sj->line = rows[k].line;
		sj->tenant = rows[k].tenant;
		sj->duration = rows[k].dur;
		sj->job.name = trace_line_name(rows[k].line);
		set_gang(&sj->job, rows[k].gpus, node_gpus);
		sj->job.preemptible = true;
		sj->job.submit_time = rows[k].ts;
		sj->job.runtime_estimate = sj->duration;
	}
}

int drv_sim_read_philly(FILE *f, int node_gpus, bool strict, struct drv_sim_workload *w,
			struct drv_diags *d)
{
	char *line = NULL;
	size_t lcap = 0;
	ssize_t got;
	int lineno = 0;
	int32_t first_new = w->njobs;
	int64_t malformed0 = w->malformed;
	int rc = 0;
	struct field fl[MAX_FIELDS];
	struct prow *rows = NULL;
	size_t nrows = 0, rcap = 0;

	if (node_gpus < 1)
		return DRV_EINVAL;
	while ((got = getline(&line, &lcap, f)) >= 0) {
		size_t len = trace_chomp(line, (size_t)got);
		int nf;

		lineno++;
		if (trace_is_blank(line, len)) {
			w->blank++;
			continue;
		}
		nf = trace_split(line, len, fl);
		if (lineno == 1 && philly_header(fl, nf))
			continue;
		/* a compact row now; jobs are built once the rows are sorted */
		DRV_GROW(rows, nrows + 1, rcap);
		if (philly_row(w, d, strict, lineno, fl, nf, &rows[nrows]))
			nrows++;
	}
	if (ferror(f))
		rc = DRV_EIO;
	free(line);
	if (!rc && strict && w->malformed > malformed0)
		rc = DRV_EPARSE;
	if (!rc) {
		philly_jobs(w, rows, nrows, node_gpus);
		trace_finish_workload(w, first_new);
	}
	drv_free(rows);
	return rc;
}
