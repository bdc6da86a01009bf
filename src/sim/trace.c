/*
 * trace.c: workloads for the simulator: the Philly CSV reader, drover's
 * native workload CSV (reader and writer), and the workload container.
 *
 * Both readers share one discipline: blank lines are skipped, a malformed
 * row is reported with its line and column and counted, not fatal, unless
 * the caller asks for strict reading; the jobs are then sorted by submit
 * time (rows need not be in order) and renumbered from the first submit.
 *
 * The native format is deliberately plain: a header naming the columns,
 * one row per task group, no quoting (no field may hold a comma or a
 * quote); lists inside a field are separated by '|'. docs/simulator.md is
 * its manual.
 */
#include "drover/sim.h"
#include "drover/spec.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Task groups need a name; workload jobs share this one (never freed). */
static char group_name[] = "tasks";

void drv_sim_workload_init(struct drv_sim_workload *w)
{
	memset(w, 0, sizeof(*w));
}

static void job_free_fields(struct drv_sim_job *sj)
{
	struct drv_job *j = &sj->job;
	int i;
	drv_free(j->name);
	drv_free(j->groups);
	drv_free(j->topo_level);
	for (i = 0; i < j->nregions; i++)
		drv_free(j->regions[i]);
	drv_free(j->regions);
	drv_free(sj->reject);
}

void drv_sim_workload_release(struct drv_sim_workload *w)
{
	int32_t i;
	for (i = 0; i < w->njobs; i++)
		job_free_fields(&w->jobs[i]);
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

static struct drv_sim_job *new_job(struct drv_sim_workload *w)
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
	j->groups[0].name = group_name;
	j->groups[0].model = -1;
	if (n <= node_gpus) {
		j->groups[0].count = 1;
		j->groups[0].gpus = (int32_t)n;
		return;
	}
	j->groups[0].count = (int32_t)(n / node_gpus);
	j->groups[0].gpus = node_gpus;
	if (ng == 2) {
		j->groups[1].name = group_name;
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
static bool parse_int(const char *s, size_t len, int64_t *out)
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

#define MAX_FIELDS 32

struct field {
	const char *s;
	size_t len;
	int col; /* 1-based */
};

/* Splits line on commas; returns the field count (MAX_FIELDS + 1 when more). */
static int split(const char *line, size_t len, struct field *f)
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
static size_t chomp(char *line, size_t len)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	return len;
}

static bool is_blank(const char *s, size_t len)
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
static void finish_workload(struct drv_sim_workload *w, int32_t first_new)
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
static char *line_name(int line)
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
static void drop_jobs(struct drv_sim_workload *w, int32_t first_new)
{
	while (w->njobs > first_new)
		job_free_fields(&w->jobs[--w->njobs]);
}

#define SHOW(fd) (int)DRV_MIN((fd).len, 40), (fd).s

static void bad_row(struct drv_diags *d, bool strict, struct drv_sim_workload *w, int line,
		    int col, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void bad_row(struct drv_diags *d, bool strict, struct drv_sim_workload *w, int line,
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

int drv_sim_read_philly(FILE *f, int node_gpus, bool strict, struct drv_sim_workload *w,
			struct drv_diags *d)
{
	static const char *const names[] = { "timestamp", "duration", "num_gpus", "gpu_time",
					     "cluster" };
	char *line = NULL;
	size_t lcap = 0;
	ssize_t got;
	int lineno = 0;
	int32_t first_new = w->njobs;
	int64_t malformed0 = w->malformed;
	int rc = 0;
	struct field fl[MAX_FIELDS];
	struct prow *rows = NULL;
	size_t nrows = 0, rcap = 0, k;

	if (node_gpus < 1)
		return DRV_EINVAL;
	while ((got = getline(&line, &lcap, f)) >= 0) {
		size_t len = chomp(line, (size_t)got);
		int nf, c;
		int64_t ts, n;
		double dur, ngf, gt;
		char tenant[DRV_NAME_MAX];

		lineno++;
		if (is_blank(line, len)) {
			w->blank++;
			continue;
		}
		nf = split(line, len, fl);
		if (lineno == 1 && nf == 5) {
			bool hdr = true;
			for (c = 0; c < 5; c++)
				if (fl[c].len != strlen(names[c]) ||
				    strncasecmp(fl[c].s, names[c], fl[c].len))
					hdr = false;
			if (hdr)
				continue;
		}
		if (nf != 5) {
			bad_row(d, strict, w, lineno, 1, NULL,
				"expected 5 fields (timestamp,duration,num_gpus,gpu_time,cluster), "
				"found %s%d", nf > MAX_FIELDS ? "more than " : "",
				nf > MAX_FIELDS ? MAX_FIELDS : nf);
			continue;
		}
		if (!parse_timestamp(fl[0].s, fl[0].len, &ts)) {
			bad_row(d, strict, w, lineno, fl[0].col, "timestamp",
				"expected YYYY-MM-DD HH:MM:SS, found '%.*s'", SHOW(fl[0]));
			continue;
		}
		if (!parse_num(fl[1].s, fl[1].len, &dur) || dur < 0 || dur > 1e10) {
			bad_row(d, strict, w, lineno, fl[1].col, "duration",
				"expected seconds >= 0, found '%.*s'", SHOW(fl[1]));
			continue;
		}
		if (!parse_num(fl[2].s, fl[2].len, &ngf) || ngf < 1 || ngf > 1e6 ||
		    ngf != floor(ngf)) {
			bad_row(d, strict, w, lineno, fl[2].col, "num_gpus",
				"expected a whole number of GPUs >= 1, found '%.*s'", SHOW(fl[2]));
			continue;
		}
		if (!parse_num(fl[3].s, fl[3].len, &gt) || gt < 0) {
			bad_row(d, strict, w, lineno, fl[3].col, "gpu_time",
				"expected GPU-seconds >= 0, found '%.*s'", SHOW(fl[3]));
			continue;
		}
		if (!fl[4].len || fl[4].len >= sizeof(tenant) || is_blank(fl[4].s, fl[4].len)) {
			bad_row(d, strict, w, lineno, fl[4].col, "cluster",
				"expected a virtual cluster name of 1 to 63 characters, found '%.*s'",
				SHOW(fl[4]));
			continue;
		}
		n = (int64_t)ngf;
		memcpy(tenant, fl[4].s, fl[4].len);
		tenant[fl[4].len] = 0;

		/* a compact row now; jobs are built once the rows are sorted */
		DRV_GROW(rows, nrows + 1, rcap);
		rows[nrows].ts = ts;
		rows[nrows].line = lineno;
		rows[nrows].tenant = drv_sim_tenant(w, tenant);
		rows[nrows].gpus = n;
		/* whole seconds; a job of a fraction of a second still takes one */
		rows[nrows].dur = (int64_t)llround(dur);
		if (rows[nrows].dur < 1)
			rows[nrows].dur = 1;
		nrows++;
	}
	if (ferror(f))
		rc = DRV_EIO;
	free(line);
	if (!rc && strict && w->malformed > malformed0)
		rc = DRV_EPARSE;
	if (!rc) {
		/* rows are not in time order: sort the small rows, not the jobs */
		for (k = 1; k < nrows; k++)
			if (cmp_prow(&rows[k - 1], &rows[k]) > 0)
				break;
		if (k < nrows)
			qsort(rows, nrows, sizeof(*rows), cmp_prow);
		DRV_GROW(w->jobs, (size_t)w->njobs + nrows, w->cap);
		for (k = 0; k < nrows; k++) {
			struct drv_sim_job *sj = new_job(w);
			sj->line = rows[k].line;
			sj->tenant = rows[k].tenant;
			sj->duration = rows[k].dur;
			sj->job.name = line_name(rows[k].line);
			set_gang(&sj->job, rows[k].gpus, node_gpus);
			sj->job.preemptible = true;
			sj->job.submit_time = rows[k].ts;
			sj->job.runtime_estimate = sj->duration;
		}
		finish_workload(w, first_new);
	}
	drv_free(rows);
	return rc;
}

/* ------------------------------------------------------------------------
 * Native CSV.
 */

enum col {
	C_NAME, C_SUBMIT, C_DURATION, C_LIMIT, C_ESTIMATE, C_TASKS, C_GPUS, C_MILLI, C_GPUMEM,
	C_MODEL, C_CPU, C_MEM, C_PRIO, C_PREEMPT, C_TENANT, C_TOPO, C_REGIONS, C_GANGMIN,
	C_NCOLS
};

static const char *const col_names[C_NCOLS] = {
	"name", "submit_s", "duration_s", "time_limit_s", "estimate_s", "tasks", "gpus",
	"gpu_milli", "gpu_mem_mib", "gpu_model", "cpu_milli", "mem_mib", "priority",
	"preemptible", "tenant", "topology", "regions", "gang_min",
};

/* Columns of a task group; the rest are the job's. */
static bool group_col(int c)
{
	return c == C_TASKS || c == C_GPUS || c == C_MILLI || c == C_GPUMEM || c == C_MODEL ||
	       c == C_CPU || c == C_MEM;
}

struct row {
	struct field v[C_NCOLS]; /* len 0 and s NULL when the column is absent */
};

/* Parses an optional integer column in [lo, hi]; empty gives def. */
static bool opt_int(const struct field *fd, int64_t lo, int64_t hi, int64_t def, int64_t *out)
{
	if (!fd->len) {
		*out = def;
		return true;
	}
	return parse_int(fd->s, fd->len, out) && *out >= lo && *out <= hi;
}

static bool same_text(const struct field *a, const char *b, size_t blen)
{
	return a->len == blen && !memcmp(a->s, b, blen);
}

/* Fills group g from the row; returns the failing column or -1. */
static int parse_group(const struct row *r, struct drv_task_group *g)
{
	int64_t v;
	g->name = group_name;
	if (!opt_int(&r->v[C_TASKS], 1, 1000000, -1, &v) || v < 1)
		return C_TASKS;
	g->count = (int32_t)v;
	if (!opt_int(&r->v[C_GPUS], 0, DRV_MAX_NODE_GPUS, 0, &v))
		return C_GPUS;
	g->gpus = (int32_t)v;
	if (!opt_int(&r->v[C_MILLI], 0, 1000, 0, &v))
		return C_MILLI;
	if (v == 1000) {
		/* 1000 milli is one whole GPU */
		if (g->gpus > 1)
			return C_MILLI;
		g->gpus = 1;
		v = 0;
	}
	if (v && g->gpus)
		return C_MILLI;
	g->gpu_milli = (int32_t)v;
	if (!opt_int(&r->v[C_GPUMEM], 0, 1 << 24, 0, &v))
		return C_GPUMEM;
	g->gpu_mem_mib = (int32_t)v;
	g->model = -1;
	if (r->v[C_MODEL].len) {
		char buf[DRV_NAME_MAX];
		int m;
		if (r->v[C_MODEL].len >= sizeof(buf))
			return C_MODEL;
		memcpy(buf, r->v[C_MODEL].s, r->v[C_MODEL].len);
		buf[r->v[C_MODEL].len] = 0;
		m = drv_gpu_model_find(buf);
		if (m < 0)
			return C_MODEL;
		g->model = (int8_t)m;
	}
	if (!opt_int(&r->v[C_CPU], 0, INT64_C(1) << 40, 0, &g->cpu_milli))
		return C_CPU;
	if (!opt_int(&r->v[C_MEM], 0, INT64_C(1) << 40, 0, &g->mem_mib))
		return C_MEM;
	return -1;
}

static const char *const col_expect[C_NCOLS] = {
	[C_NAME] = "a name of letters, digits and -_.:/@ (at most 63)",
	[C_SUBMIT] = "whole seconds",
	[C_DURATION] = "whole seconds >= 0, or empty for a service",
	[C_LIMIT] = "whole seconds >= 0, or empty",
	[C_ESTIMATE] = "whole seconds >= 0, or empty",
	[C_TASKS] = "a task count >= 1",
	[C_GPUS] = "whole GPUs per task, 0 to 64",
	[C_MILLI] = "a share of one GPU, 1 to 1000 milli, only when gpus is 0 or 1",
	[C_GPUMEM] = "MiB of GPU memory per GPU, or empty",
	[C_MODEL] = "a GPU model from the catalog (H100, A100-SXM4-80GB, ...), or empty",
	[C_CPU] = "milli-CPUs per task, or empty",
	[C_MEM] = "MiB of memory per task, or empty",
	[C_PRIO] = "an integer priority, a priority class of the tenants file, or empty",
	[C_PREEMPT] = "true or false, or empty",
	[C_TENANT] = "a tenant name of letters, digits and -_.:/@, or empty",
	[C_TOPO] = "required:LEVEL or preferred:LEVEL, or empty",
	[C_REGIONS] = "region names separated by '|', or empty",
	[C_GANGMIN] = "tasks that must start together, 0 = all, or empty",
};

/* What column c expects; for priority, the class names w knows. */
static void expectation(const struct drv_sim_workload *w, int c, char *buf, size_t sz)
{
	size_t len;
	int32_t k;

	if (c != C_PRIO) {
		snprintf(buf, sz, "%s", col_expect[c]);
		return;
	}
	if (!w->nclasses) {
		snprintf(buf, sz, "an integer priority, or empty (a priority class name needs "
				  "--tenants FILE defining it)");
		return;
	}
	len = (size_t)snprintf(buf, sz, "an integer priority, a priority class of the tenants "
					"file (");
	for (k = 0; k < w->nclasses && len < sz; k++)
		len += (size_t)snprintf(buf + len, sz - len, "%s%s", k ? ", " : "", w->classes[k]);
	if (len < sz)
		snprintf(buf + len, sz - len, "), or empty");
}

/* Fills the job-level fields of sj; returns the failing column or -1. */
static int parse_job(struct drv_sim_workload *w, const struct row *r, struct drv_sim_job *sj)
{
	struct drv_job *j = &sj->job;
	const struct field *fd;
	int64_t v;
	char buf[DRV_NAME_MAX];

	if (!parse_int(r->v[C_SUBMIT].s, r->v[C_SUBMIT].len, &j->submit_time) ||
	    j->submit_time < -(INT64_C(1) << 50) || j->submit_time > (INT64_C(1) << 50))
		return C_SUBMIT;
	if (r->v[C_DURATION].len) {
		if (!parse_int(r->v[C_DURATION].s, r->v[C_DURATION].len, &sj->duration) ||
		    sj->duration < 0 || sj->duration > (INT64_C(1) << 40))
			return C_DURATION;
	} else {
		sj->duration = DRV_SIM_SERVICE;
	}
	if (!opt_int(&r->v[C_LIMIT], 0, INT64_C(1) << 40, 0, &j->time_limit))
		return C_LIMIT;
	if (!opt_int(&r->v[C_ESTIMATE], 0, INT64_C(1) << 40, 0, &j->runtime_estimate))
		return C_ESTIMATE;
	fd = &r->v[C_PRIO];
	if (fd->len && ((fd->s[0] >= 'a' && fd->s[0] <= 'z') || (fd->s[0] >= 'A' && fd->s[0] <= 'Z'))) {
		/* a priority class name (class names start with a letter) */
		int32_t k;
		for (k = 0; k < w->nclasses; k++)
			if (same_text(fd, w->classes[k], strlen(w->classes[k])))
				break;
		if (k == w->nclasses)
			return C_PRIO;
		sj->pclass = k;
		j->priority = w->class_values[k];
	} else {
		if (!opt_int(fd, -1000000000, 1000000000, 0, &v))
			return C_PRIO;
		j->priority = (int32_t)v;
	}
	fd = &r->v[C_PREEMPT];
	if (!fd->len || same_text(fd, "false", 5) || same_text(fd, "0", 1))
		j->preemptible = false;
	else if (same_text(fd, "true", 4) || same_text(fd, "1", 1))
		j->preemptible = true;
	else
		return C_PREEMPT;
	fd = &r->v[C_TENANT];
	if (fd->len) {
		if (!drv_spec_name_ok(fd->s, fd->len))
			return C_TENANT;
		memcpy(buf, fd->s, fd->len);
		buf[fd->len] = 0;
		sj->tenant = drv_sim_tenant(w, buf);
	} else {
		sj->tenant = drv_sim_tenant(w, "default");
	}
	fd = &r->v[C_TOPO];
	if (fd->len) {
		const char *colon = memchr(fd->s, ':', fd->len);
		size_t ml, ll;
		if (!colon)
			return C_TOPO;
		ml = (size_t)(colon - fd->s);
		ll = fd->len - ml - 1;
		if (ml == 8 && !memcmp(fd->s, "required", 8))
			j->topo_mode = DRV_TOPO_REQUIRED;
		else if (ml == 9 && !memcmp(fd->s, "preferred", 9))
			j->topo_mode = DRV_TOPO_PREFERRED;
		else
			return C_TOPO;
		if (!drv_spec_name_ok(colon + 1, ll))
			return C_TOPO;
		j->topo_level = drv_strndup(colon + 1, ll);
	}
	fd = &r->v[C_REGIONS];
	if (fd->len) {
		size_t i, start = 0;
		for (i = 0; i <= fd->len; i++) {
			if (i == fd->len || fd->s[i] == '|') {
				if (!drv_spec_name_ok(fd->s + start, i - start))
					return C_REGIONS;
				j->regions = drv_realloc(j->regions,
							 sizeof(char *) * (size_t)(j->nregions + 1));
				j->regions[j->nregions++] = drv_strndup(fd->s + start, i - start);
				start = i + 1;
			}
		}
	}
	if (!opt_int(&r->v[C_GANGMIN], 0, 1000000, 0, &v))
		return C_GANGMIN;
	j->gang_min = (int32_t)v;
	return -1;
}

/* The native reader's state between lines. */
struct native {
	struct drv_sim_workload *w;
	struct drv_diags *d;
	bool strict;
	int lineno;
	int colmap[MAX_FIELDS]; /* field index -> column */
	int ncols;              /* 0 until the header is read */
	/* the previous job's first row, for task groups continuing it */
	int32_t prev_job;       /* -1: the next row starts a job */
	char *prev_text;
	struct row prev;
};

/* The header line: known column names, each once, the required ones. */
static int read_header(struct native *nr, struct field *fl, int nf)
{
	bool seen[C_NCOLS] = { false };
	int rc = 0;

	if (nf > MAX_FIELDS) {
		drv_diag_err(nr->d, nr->lineno, 1, NULL, "expected at most %d columns", MAX_FIELDS);
		return DRV_EPARSE;
	}
	for (int k = 0; k < nf; k++) {
		int c;
		for (c = 0; c < C_NCOLS; c++)
			if (fl[k].len == strlen(col_names[c]) && !memcmp(fl[k].s, col_names[c], fl[k].len))
				break;
		if (c == C_NCOLS || seen[c]) {
			drv_diag_err(nr->d, nr->lineno, fl[k].col, "header",
				     "%s column '%.*s'; expected a header of columns "
				     "from: name,submit_s,duration_s,time_limit_s,"
				     "estimate_s,tasks,gpus,gpu_milli,gpu_mem_mib,"
				     "gpu_model,cpu_milli,mem_mib,priority,preemptible,"
				     "tenant,topology,regions,gang_min",
				     c == C_NCOLS ? "unknown" : "repeated",
				     (int)(fl[k].len > 40 ? 40 : fl[k].len), fl[k].s);
			rc = DRV_EPARSE;
			continue;
		}
		seen[c] = true;
		nr->colmap[k] = c;
	}
	if (!rc && (!seen[C_SUBMIT] || !seen[C_TASKS] || (!seen[C_GPUS] && !seen[C_MILLI]))) {
		drv_diag_err(nr->d, nr->lineno, 1, "header",
			     "expected the columns submit_s, tasks and gpus or "
			     "gpu_milli at least");
		rc = DRV_EPARSE;
	}
	if (!rc)
		nr->ncols = nf;
	return rc;
}

/* A row naming the previous job again: another task group of it, its job
 * columns empty or equal to the first row's; else the job is dropped. */
static void add_group_row(struct native *nr, const struct row *r)
{
	struct drv_sim_workload *w = nr->w;
	struct drv_job *j = &w->jobs[nr->prev_job].job;
	const struct row *prev = &nr->prev;
	struct drv_task_group g;
	int c, bad;

	for (c = 0; c < C_NCOLS; c++)
		if (!group_col(c) && c != C_NAME && r->v[c].len &&
		    !same_text(&r->v[c], prev->v[c].s, prev->v[c].len))
			break;
	if (c < C_NCOLS) {
		bad_row(nr->d, nr->strict, w, nr->lineno, r->v[c].col, col_names[c],
			"expected a task group row to leave job columns empty or equal "
			"to the job's first row, found '%.*s'; job dropped",
			SHOW(r->v[c]));
		/* the whole job is bad: nothing half-accepted */
		job_free_fields(&w->jobs[--w->njobs]);
		nr->prev_job = -1;
		return;
	}
	memset(&g, 0, sizeof(g));
	bad = parse_group(r, &g);
	if (bad >= 0) {
		bad_row(nr->d, nr->strict, w, nr->lineno, r->v[bad].col ? r->v[bad].col : 1,
			col_names[bad], "expected %s, found '%.*s'; job dropped",
			col_expect[bad], SHOW(r->v[bad]));
		job_free_fields(&w->jobs[--w->njobs]);
		nr->prev_job = -1;
		return;
	}
	j->groups = drv_realloc(j->groups, sizeof(*j->groups) * (size_t)(j->ngroups + 1));
	j->groups[j->ngroups++] = g;
}

/* A row starting a job with its first group; false (row reported) when
 * a field is bad. */
static bool add_job_row(struct native *nr, const struct row *r)
{
	struct drv_sim_workload *w = nr->w;
	struct drv_sim_job *sj = new_job(w);
	int bad = -1;

	sj->line = nr->lineno;
	if (!r->v[C_SUBMIT].len)
		bad = C_SUBMIT;
	else if (r->v[C_NAME].len && !drv_spec_name_ok(r->v[C_NAME].s, r->v[C_NAME].len))
		bad = C_NAME;
	if (bad < 0)
		bad = parse_job(w, r, sj);
	if (bad < 0) {
		sj->job.groups = drv_calloc(1, sizeof(*sj->job.groups));
		sj->job.ngroups = 1;
		bad = parse_group(r, &sj->job.groups[0]);
	}
	if (bad >= 0) {
		char want[256];
		expectation(w, bad, want, sizeof(want));
		bad_row(nr->d, nr->strict, w, nr->lineno, r->v[bad].col ? r->v[bad].col : 1,
			col_names[bad], "expected %s, found '%.*s'", want, SHOW(r->v[bad]));
		job_free_fields(sj);
		w->njobs--;
		return false;
	}
	if (r->v[C_NAME].len)
		sj->job.name = drv_strndup(r->v[C_NAME].s, r->v[C_NAME].len);
	else
		sj->job.name = line_name(nr->lineno);
	return true;
}

/* Keeps the text of the job's first row for its continuation rows. */
static void remember_row(struct native *nr, const char *line, size_t len, bool named)
{
	struct field fl[MAX_FIELDS];
	int nf;

	drv_free(nr->prev_text);
	nr->prev_text = drv_strndup(line, len);
	nf = split(nr->prev_text, len, fl);
	memset(&nr->prev, 0, sizeof(nr->prev));
	for (int k = 0; k < nf; k++)
		nr->prev.v[nr->colmap[k]] = fl[k];
	nr->prev_job = nr->w->njobs - 1;
	if (!named)
		nr->prev_job = -1; /* unnamed jobs have one group */
}

/* One non-blank line (the header first). 0, or an error that ends the read. */
static int native_line(struct native *nr, const char *line, size_t len)
{
	struct field fl[MAX_FIELDS];
	const char *quote = memchr(line, '"', len);
	struct row r;
	int nf;

	if (quote) {
		int qcol = (int)(quote - line) + 1;
		if (!nr->ncols) {
			drv_diag_err(nr->d, nr->lineno, qcol, "header",
				     "expected unquoted column names, found '\"'");
			return DRV_EPARSE;
		}
		bad_row(nr->d, nr->strict, nr->w, nr->lineno, qcol, NULL,
			"expected unquoted fields (the native format has no quoting), "
			"found '\"'");
		nr->prev_job = -1;
		return 0;
	}
	nf = split(line, len, fl);
	if (!nr->ncols)
		return read_header(nr, fl, nf);
	if (nf != nr->ncols) {
		bad_row(nr->d, nr->strict, nr->w, nr->lineno, 1, NULL,
			"expected %d fields as the header has, found %s%d", nr->ncols,
			nf > MAX_FIELDS ? "more than " : "", nf > MAX_FIELDS ? MAX_FIELDS : nf);
		nr->prev_job = -1;
		return 0;
	}
	memset(&r, 0, sizeof(r));
	for (int k = 0; k < nf; k++)
		r.v[nr->colmap[k]] = fl[k];
	if (nr->prev_job >= 0 && r.v[C_NAME].len &&
	    same_text(&r.v[C_NAME], nr->prev.v[C_NAME].s, nr->prev.v[C_NAME].len))
		add_group_row(nr, &r);
	else if (add_job_row(nr, &r))
		remember_row(nr, line, len, r.v[C_NAME].len > 0);
	else
		nr->prev_job = -1;
	return 0;
}

int drv_sim_read_native(FILE *f, bool strict, struct drv_sim_workload *w, struct drv_diags *d)
{
	struct native nr = { .w = w, .d = d, .strict = strict, .prev_job = -1 };
	char *line = NULL;
	size_t lcap = 0;
	ssize_t got;
	int32_t first_new = w->njobs;
	int64_t malformed0 = w->malformed;
	int rc = 0;

	while ((got = getline(&line, &lcap, f)) >= 0) {
		size_t len = chomp(line, (size_t)got);

		nr.lineno++;
		if (is_blank(line, len)) {
			w->blank++;
			continue;
		}
		if ((rc = native_line(&nr, line, len)))
			break;
	}
	if (!rc && ferror(f))
		rc = DRV_EIO;
	if (!rc && !nr.ncols) {
		drv_diag_err(d, nr.lineno ? nr.lineno : 1, 1, "header",
			     "expected a header line naming the columns, found an empty file");
		rc = DRV_EPARSE;
	}
	free(line);
	drv_free(nr.prev_text);
	if (!rc && strict && w->malformed > malformed0)
		rc = DRV_EPARSE;
	if (rc) {
		drop_jobs(w, first_new);
		return rc;
	}
	finish_workload(w, first_new);
	return 0;
}

int drv_sim_write_native(FILE *f, const struct drv_sim_workload *w)
{
	int32_t i, g;
	fprintf(f, "name,submit_s,duration_s,time_limit_s,estimate_s,tasks,gpus,gpu_milli,"
		   "gpu_mem_mib,gpu_model,cpu_milli,mem_mib,priority,preemptible,tenant,topology,"
		   "regions,gang_min\n");
	for (i = 0; i < w->njobs; i++) {
		const struct drv_sim_job *sj = &w->jobs[i];
		const struct drv_job *j = &sj->job;
		for (g = 0; g < j->ngroups; g++) {
			const struct drv_task_group *tg = &j->groups[g];
			const struct drv_gpu_model *m = tg->model >= 0 ? drv_gpu_model_at(tg->model)
								       : NULL;
			int r;
			/* a job of several groups needs a name to join its rows */
			fprintf(f, "%s,", j->name ? j->name : "");
			if (g == 0) {
				fprintf(f, "%lld,", (long long)j->submit_time);
				if (sj->duration != DRV_SIM_SERVICE)
					fprintf(f, "%lld", (long long)sj->duration);
				fprintf(f, ",");
				if (j->time_limit)
					fprintf(f, "%lld", (long long)j->time_limit);
				fprintf(f, ",");
				if (j->runtime_estimate)
					fprintf(f, "%lld", (long long)j->runtime_estimate);
				fprintf(f, ",");
			} else {
				fprintf(f, ",,,,");
			}
			fprintf(f, "%d,%d,", tg->count, tg->gpus);
			if (tg->gpu_milli)
				fprintf(f, "%d", tg->gpu_milli);
			fprintf(f, ",");
			if (tg->gpu_mem_mib)
				fprintf(f, "%d", tg->gpu_mem_mib);
			fprintf(f, ",%s,", m ? m->id : "");
			if (tg->cpu_milli)
				fprintf(f, "%lld", (long long)tg->cpu_milli);
			fprintf(f, ",");
			if (tg->mem_mib)
				fprintf(f, "%lld", (long long)tg->mem_mib);
			fprintf(f, ",");
			if (g == 0) {
				if (sj->pclass >= 0)
					fprintf(f, "%s,", w->classes[sj->pclass]);
				else
					fprintf(f, "%d,", j->priority);
				fprintf(f, "%s,%s,", j->preemptible ? "true" : "false",
					w->tenants[sj->tenant]);
				if (j->topo_mode != DRV_TOPO_NONE && j->topo_level)
					fprintf(f, "%s:%s",
						j->topo_mode == DRV_TOPO_REQUIRED ? "required"
										  : "preferred",
						j->topo_level);
				fprintf(f, ",");
				for (r = 0; r < j->nregions; r++)
					fprintf(f, "%s%s", r ? "|" : "", j->regions[r]);
				fprintf(f, ",");
				if (j->gang_min)
					fprintf(f, "%d", j->gang_min);
			} else {
				fprintf(f, ",,,,,");
			}
			fprintf(f, "\n");
		}
	}
	return ferror(f) ? DRV_EIO : 0;
}
