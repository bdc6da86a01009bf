/*
 * trace_native.c: drover's native workload CSV (docs/simulator.md is its
 * manual), reader and writer. The format is deliberately plain: a header
 * naming the columns, one row per task group (a row naming the previous
 * job again is another group of it), no quoting (no field may hold a
 * comma or a quote); lists inside a field are separated by '|'. It reads
 * under the discipline of trace.c: malformed rows reported and counted,
 * or fatal when strict.
 */
#include "drover/sim.h"
#include "drover/spec.h"
#include "trace_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum col {
	C_NAME, C_SUBMIT, C_DURATION, C_LIMIT, C_ESTIMATE, C_TASKS, C_GPUS, C_MILLI, C_GPUMEM,
	C_MODEL, C_CPU, C_MEM, C_PRIO, C_PREEMPT, C_TENANT, C_TOPO, C_REGIONS, C_GANGMIN,
	C_USER, C_NCOLS
};

static const char *const col_names[C_NCOLS] = {
	"name", "submit_s", "duration_s", "time_limit_s", "estimate_s", "tasks", "gpus",
	"gpu_milli", "gpu_mem_mib", "gpu_model", "cpu_milli", "mem_mib", "priority",
	"preemptible", "tenant", "topology", "regions", "gang_min", "user",
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
	return trace_parse_int(fd->s, fd->len, out) && *out >= lo && *out <= hi;
}

static bool same_text(const struct field *a, const char *b, size_t blen)
{
	return a->len == blen && !memcmp(a->s, b, blen);
}

/* Fills group g from the row; returns the failing column or -1. */
static int parse_group(const struct row *r, struct drv_task_group *g)
{
	int64_t v;
	g->name = trace_group_name;
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
	[C_TOPO] = "required:LEVEL or preferred:LEVEL, slice:LEVEL:N, both joined by +, or empty",
	[C_REGIONS] = "region names separated by '|', or empty",
	[C_GANGMIN] = "tasks that must start together, 0 = all, or empty",
	[C_USER] = "a user name of letters, digits and -_.:/@ (per-user limits), or empty",
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

/* MODE:LEVEL into j's topology; false when it is not one. */
static bool read_mode(struct drv_job *j, const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	size_t ml;

	if (!colon)
		return false;
	ml = (size_t)(colon - s);
	if (ml == 8 && !memcmp(s, "required", 8))
		j->topo_mode = DRV_TOPO_REQUIRED;
	else if (ml == 9 && !memcmp(s, "preferred", 9))
		j->topo_mode = DRV_TOPO_PREFERRED;
	else
		return false;
	if (!drv_spec_name_ok(colon + 1, len - ml - 1))
		return false;
	drv_free(j->topo_level);
	j->topo_level = drv_strndup(colon + 1, len - ml - 1);
	return true;
}

/* slice:LEVEL:N into j's slices; false when it is not one. */
static bool read_slice(struct drv_job *j, const char *s, size_t len)
{
	const char *colon;
	char num[12];
	size_t ll, nl;
	char *end;
	long n;

	if (len < 6 || memcmp(s, "slice:", 6))
		return false;
	s += 6, len -= 6;
	colon = memchr(s, ':', len);
	if (!colon)
		return false;
	ll = (size_t)(colon - s);
	nl = len - ll - 1;
	if (!drv_spec_name_ok(s, ll) || nl == 0 || nl >= sizeof(num))
		return false;
	memcpy(num, colon + 1, nl);
	num[nl] = 0;
	n = strtol(num, &end, 10);
	if (*end || n < 1 || n > 1000000)
		return false;
	drv_free(j->slice_level);
	j->slice_level = drv_strndup(s, ll);
	j->slice_size = (int32_t)n;
	return true;
}

/* The topology column: MODE:LEVEL, slice:LEVEL:N, or MODE:LEVEL+slice:LEVEL:N. */
static bool read_topo(struct drv_job *j, const char *s, size_t len)
{
	const char *plus = memchr(s, '+', len);

	if (plus)
		return read_mode(j, s, (size_t)(plus - s)) &&
		       read_slice(j, plus + 1, len - (size_t)(plus - s) - 1);
	return read_slice(j, s, len) || read_mode(j, s, len);
}

static int parse_job(struct drv_sim_workload *w, const struct row *r, struct drv_sim_job *sj)
{
	struct drv_job *j = &sj->job;
	const struct field *fd;
	int64_t v;
	char buf[DRV_NAME_MAX];

	if (!trace_parse_int(r->v[C_SUBMIT].s, r->v[C_SUBMIT].len, &j->submit_time) ||
	    j->submit_time < -(INT64_C(1) << 50) || j->submit_time > (INT64_C(1) << 50))
		return C_SUBMIT;
	if (r->v[C_DURATION].len) {
		if (!trace_parse_int(r->v[C_DURATION].s, r->v[C_DURATION].len, &sj->duration) ||
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
	fd = &r->v[C_USER];
	if (fd->len) {
		if (!drv_spec_name_ok(fd->s, fd->len))
			return C_USER;
		drv_free(j->user);
		j->user = drv_strndup(fd->s, fd->len);
	}
	fd = &r->v[C_TOPO];
	if (fd->len && !read_topo(j, fd->s, fd->len))
		return C_TOPO;
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
				     "tenant,topology,regions,gang_min,user",
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
		trace_bad_row(nr->d, nr->strict, w, nr->lineno, r->v[c].col, col_names[c],
			      "expected a task group row to leave job columns empty or equal "
			      "to the job's first row, found '%.*s'; job dropped",
			      SHOW(r->v[c]));
		/* the whole job is bad: nothing half-accepted */
		trace_job_free_fields(&w->jobs[--w->njobs]);
		nr->prev_job = -1;
		return;
	}
	memset(&g, 0, sizeof(g));
	bad = parse_group(r, &g);
	if (bad >= 0) {
		trace_bad_row(nr->d, nr->strict, w, nr->lineno, r->v[bad].col ? r->v[bad].col : 1,
			      col_names[bad], "expected %s, found '%.*s'; job dropped",
			      col_expect[bad], SHOW(r->v[bad]));
		trace_job_free_fields(&w->jobs[--w->njobs]);
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
	struct drv_sim_job *sj = trace_new_job(w);
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
		trace_bad_row(nr->d, nr->strict, w, nr->lineno, r->v[bad].col ? r->v[bad].col : 1,
			      col_names[bad], "expected %s, found '%.*s'", want, SHOW(r->v[bad]));
		trace_job_free_fields(sj);
		w->njobs--;
		return false;
	}
	if (r->v[C_NAME].len)
		sj->job.name = drv_strndup(r->v[C_NAME].s, r->v[C_NAME].len);
	else
		sj->job.name = trace_line_name(nr->lineno);
	return true;
}

/* Keeps the text of the job's first row for its continuation rows. */
static void remember_row(struct native *nr, const char *line, size_t len, bool named)
{
	struct field fl[MAX_FIELDS];
	int nf;

	drv_free(nr->prev_text);
	nr->prev_text = drv_strndup(line, len);
	nf = trace_split(nr->prev_text, len, fl);
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
		trace_bad_row(nr->d, nr->strict, nr->w, nr->lineno, qcol, NULL,
			      "expected unquoted fields (the native format has no quoting), "
			      "found '\"'");
		nr->prev_job = -1;
		return 0;
	}
	nf = trace_split(line, len, fl);
	if (!nr->ncols)
		return read_header(nr, fl, nf);
	if (nf != nr->ncols) {
		trace_bad_row(nr->d, nr->strict, nr->w, nr->lineno, 1, NULL,
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
		size_t len = trace_chomp(line, (size_t)got);

		nr.lineno++;
		if (trace_is_blank(line, len)) {
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
		trace_drop_jobs(w, first_new);
		return rc;
	}
	trace_finish_workload(w, first_new);
	return 0;
}

int drv_sim_write_native(FILE *f, const struct drv_sim_workload *w)
{
	int32_t i, g;
	fprintf(f, "name,submit_s,duration_s,time_limit_s,estimate_s,tasks,gpus,gpu_milli,"
		   "gpu_mem_mib,gpu_model,cpu_milli,mem_mib,priority,preemptible,tenant,topology,"
		   "regions,gang_min,user\n");
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
				if (j->slice_size > 0 && j->slice_level)
					fprintf(f, "%sslice:%s:%d",
						j->topo_mode != DRV_TOPO_NONE ? "+" : "",
						j->slice_level, (int)j->slice_size);
				fprintf(f, ",");
				for (r = 0; r < j->nregions; r++)
					fprintf(f, "%s%s", r ? "|" : "", j->regions[r]);
				fprintf(f, ",");
				if (j->gang_min)
					fprintf(f, "%d", j->gang_min);
				fprintf(f, ",%s", j->user ? j->user : "");
			} else {
				fprintf(f, ",,,,,,");
			}
			fprintf(f, "\n");
		}
	}
	return ferror(f) ? DRV_EIO : 0;
}
