/*
 * sbatch.c: Slurm batch scripts to drover jobs.
 *
 * Reads the #SBATCH directives at the top of a script the way sbatch does:
 * they stop at the first line that is neither blank nor a comment; each
 * directive line is split into words (quotes removed, '#' starts a comment)
 * and parsed like sbatch's getopt_long: short options (-N 4, -N4, -HQ),
 * long options with '=' or a space before the value, unambiguous
 * abbreviations (--gpus-per-n), repeated options (the last wins).
 * `#SBATCH hetjob` starts the next component of a heterogeneous job. The
 * options given to drover submit (drv_spec_opts) are applied after the
 * first component's directives, so they win.
 *
 * Each component becomes one task group; the whole job is one gang (a
 * Slurm allocation starts whole). A task is what lands on one node: with
 * --nodes (or any per-node request) a task is a node's share, otherwise it
 * is a Slurm task. docs/job-format.md gives the rules. The script body is
 * kept with each group; the server runs it once, on the first node of the
 * allocation (the batch step), and srun starts the rest (src/server/steps.c).
 * What each option does is sbatch_opts.c's.
 */
#include "drover/hostlist.h"
#include "drover/spec.h"
#include "spec_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct word {
	char *text;
	int line, col;
};

void sb_err(struct sb_ctx *c, int line, int col, const char *opt, const char *fmt, ...)
{
	char buf[1024], where[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (line == 0) {
		/* an option given on the command line, not in the script */
		snprintf(where, sizeof(where), "command line%s%s", opt ? " " : "", opt ? opt : "");
		opt = where;
	}
	drv_diag_err(c->d, line, col, opt, "%s", buf);
}

void sb_gpureq_clear(struct sb_gpureq *g)
{
	drv_free(g->type);
	g->type = NULL;
	g->n = -1;
}

static struct sb_comp *new_comp(struct sb_ctx *c, int line, int col)
{
	struct sb_comp *k;
	DRV_GROW(c->comps, (size_t)c->ncomps + 1, c->ccap);
	k = &c->comps[c->ncomps++];
	memset(k, 0, sizeof(*k));
	k->nodes = k->ntasks = k->tpn = k->cpt = k->cpg = -1;
	k->mem = k->mem_per_gpu = k->mem_per_cpu = -1;
	k->gpus.n = k->gpn.n = k->gpt.n = k->gres.n = -1;
	k->line = line;
	k->col = col;
	return k;
}

/* getopt_long over words; returns the number of words consumed. */
static void parse_words(struct sb_ctx *c, struct word *w, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		const char *t = w[i].text;
		struct sb_comp *k = &c->comps[c->ncomps - 1];
		if (t[0] == '-' && t[1] == '-' && t[2]) {
			const char *eq = strchr(t + 2, '=');
			size_t len = eq ? (size_t)(eq - t - 2) : strlen(t + 2);
			const struct sb_opt *o = sb_find_long(c, t + 2, len, w[i].line, w[i].col);
			if (!o)
				continue;
			if (o->arg == 0 && eq) {
				sb_err(c, w[i].line, w[i].col, NULL, "found a value for --%s, which takes none",
				       o->name);
				continue;
			}
			if (o->arg == 1 && !eq) {
				if (i + 1 >= n) {
					sb_err(c, w[i].line, w[i].col, NULL, "found --%s without a value, "
					       "expected --%s=VALUE or --%s VALUE", o->name, o->name, o->name);
					continue;
				}
				i++;
				sb_apply(c, k, o, w[i].text, w[i].line, w[i].col);
				continue;
			}
			sb_apply(c, k, o, eq ? eq + 1 : NULL, w[i].line, w[i].col);
		} else if (t[0] == '-' && t[1] && t[1] != '-') {
			const char *p;
			for (p = t + 1; *p; p++) {
				const struct sb_opt *o = sb_find_short(*p);
				if (!o) {
					sb_err(c, w[i].line, w[i].col + (int)(p - t), NULL,
					       "found unknown option \"-%c\", expected an sbatch option", *p);
					break;
				}
				if (o->arg == 1) {
					if (p[1]) {
						sb_apply(c, k, o, p[1] == '=' ? p + 2 : p + 1, w[i].line, w[i].col);
					} else if (i + 1 < n) {
						i++;
						sb_apply(c, k, o, w[i].text, w[i].line, w[i].col);
					} else {
						sb_err(c, w[i].line, w[i].col, NULL, "found -%c without a value", *p);
					}
					break;
				}
				sb_apply(c, k, o, NULL, w[i].line, w[i].col);
			}
		} else {
			sb_err(c, w[i].line, w[i].col, NULL, "found \"%.64s\", expected an option "
			       "starting with - or --", t);
		}
	}
}

/* Splits one directive line (after "#SBATCH") into words. */
static int split_words(struct sb_ctx *c, const char *p, const char *end, int line, int col0,
		       struct word **out, size_t *cap, int nw)
{
	const char *start = p;
	while (p < end) {
		char *buf;
		size_t bl = 0;
		int col;
		char q = 0;
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p >= end || *p == '#')
			break;
		col = col0 + (int)(p - start);
		buf = drv_malloc((size_t)(end - p) + 1);
		while (p < end) {
			if (q) {
				if (*p == q)
					q = 0;
				else
					buf[bl++] = *p;
			} else if (*p == '"' || *p == '\'') {
				q = *p;
			} else if (*p == ' ' || *p == '\t' || *p == '\r') {
				break;
			} else {
				buf[bl++] = *p;
			}
			p++;
		}
		buf[bl] = '\0';
		if (q)
			sb_err(c, line, col, NULL, "found an unclosed quote, expected a closing %c", q);
		if (nw >= DRV_SPEC_MAX_ITEMS) {
			sb_err(c, line, col, NULL, "found more than %d words of directives",
			       DRV_SPEC_MAX_ITEMS);
			drv_free(buf);
			break;
		}
		DRV_GROW(*out, (size_t)nw + 1, *cap);
		(*out)[nw].text = buf;
		(*out)[nw].line = line;
		(*out)[nw].col = col;
		nw++;
	}
	return nw;
}

static void free_words(struct word *w, int n)
{
	int i;
	for (i = 0; i < n; i++)
		drv_free(w[i].text);
	drv_free(w);
}

static int model_of(struct sb_ctx *c, struct sb_gpureq *g, const char *opt, int8_t *model,
		    int grp)
{
	int m;
	if (!g->type)
		return 0;
	m = drv_gpu_model_find(g->type);
	if (m < 0) {
		/* a type the catalog lacks may still be on a node: kept, a warning */
		char *prev = c->s->run[grp].gpu_model_name;
		if (prev && strcmp(prev, g->type) != 0) {
			sb_err(c, g->line, g->col, opt, "found GPU type \"%s\" unlike the one asked "
			       "for before", g->type);
			return -1;
		}
		drv_diag_warn(c->d, g->line, g->col, opt, "GPU type \"%s\" is not in drover's "
			      "catalog: kept; the job runs only where a node has it", g->type);
		drv_free(prev);
		c->s->run[grp].gpu_model_name = drv_strdup(g->type);
		return 0;
	}
	if (*model >= 0 && *model != m) {
		sb_err(c, g->line, g->col, opt, "found GPU type \"%s\" unlike the one asked for before",
		       g->type);
		return -1;
	}
	*model = (int8_t)m;
	return 0;
}

/* Component k -> task group g (see the file comment and docs/job-format.md). */
static void resolve(struct sb_ctx *c, struct sb_comp *k, int g)
{
	struct drv_task_group *tg = &c->s->job.groups[g];
	bool per_node = k->nodes > 0 || k->gpn.n >= 0 || k->gres.n >= 0 || k->tpn > 0;
	int64_t count, tpn, gpus = 0, cpus;
	int8_t model = -1;

	model_of(c, &k->gres, "--gres", &model, g);
	model_of(c, &k->gpn, "--gpus-per-node", &model, g);
	model_of(c, &k->gpt, "--gpus-per-task", &model, g);
	model_of(c, &k->gpus, "--gpus", &model, g);
	tg->model = model;
	if (per_node) {
		count = k->nodes > 0 ? k->nodes
				     : (k->ntasks > 0 && k->tpn > 0 ? (k->ntasks + k->tpn - 1) / k->tpn : 1);
		tpn = k->tpn > 0 ? k->tpn : (k->ntasks > 0 ? (k->ntasks + count - 1) / count : 1);
		if (k->gpn.n >= 0)
			gpus = k->gpn.n;
		else if (k->gres.n >= 0)
			gpus = k->gres.n;
		else if (k->gpt.n >= 0)
			gpus = k->gpt.n * tpn;
		else if (k->gpus.n >= 0) {
			if (k->gpus.n % count)
				sb_err(c, k->gpus.line, k->gpus.col, "--gpus", "found %lld GPUs over %lld "
				       "nodes, expected a multiple of the node count", (long long)k->gpus.n,
				       (long long)count);
			gpus = k->gpus.n / count;
		}
	} else {
		count = k->ntasks > 0 ? k->ntasks : 1;
		tpn = 1;
		if (k->gpt.n >= 0)
			gpus = k->gpt.n;
		else if (k->gpus.n >= 0) {
			if (k->gpus.n % count)
				sb_err(c, k->gpus.line, k->gpus.col, "--gpus", "found %lld GPUs over %lld "
				       "tasks, expected a multiple of the task count", (long long)k->gpus.n,
				       (long long)count);
			gpus = k->gpus.n / count;
		}
	}
	if (gpus > DRV_MAX_NODE_GPUS)
		sb_err(c, k->line, k->col, "--gpus", "found %lld GPUs on one node, expected at most %d "
		       "(ask for more nodes)", (long long)gpus, DRV_MAX_NODE_GPUS);
	if (count > DRV_SPEC_MAX_TASKS)
		sb_err(c, k->line, k->col, "--nodes", "found %lld tasks, over the limit of %d",
		       (long long)count, DRV_SPEC_MAX_TASKS);
	tg->count = (int32_t)DRV_MIN(count, DRV_SPEC_MAX_TASKS);
	/* a task is a node's share: -N 2 means two nodes */
	tg->distinct_nodes = per_node;
	tg->gpus = (int32_t)DRV_MIN(gpus, DRV_MAX_NODE_GPUS);
	cpus = k->cpg > 0 ? k->cpg * gpus : (k->cpt > 0 ? k->cpt : 1) * tpn;
	tg->cpu_milli = cpus * 1000;
	if (k->mem >= 0)
		tg->mem_mib = k->mem;
	else if (k->mem_per_gpu >= 0)
		tg->mem_mib = k->mem_per_gpu * gpus;
	else if (k->mem_per_cpu >= 0)
		tg->mem_mib = k->mem_per_cpu * cpus;
}

static void apply_export(struct sb_ctx *c)
{
	struct drv_jobspec *s = c->s;
	char *copy, *p, *next;
	const char *mode = NULL;
	int g, first = 1;
	if (!c->export_raw)
		return;
	copy = drv_strdup(c->export_raw);
	for (p = copy; p; p = next, first = 0) {
		char *eq;
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		if (first && (strcmp(p, "ALL") == 0 || strcmp(p, "NONE") == 0 || strcmp(p, "NIL") == 0)) {
			mode = strcmp(p, "ALL") == 0 ? "ALL" : "NONE";
			continue;
		}
		if (!*p)
			continue;
		eq = strchr(p, '=');
		if (eq)
			*eq = '\0';
		if (!*p || strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
				   strlen(p) || (*p >= '0' && *p <= '9')) {
			sb_err(c, c->export_line, c->export_col, "--export", "found \"%s\", expected "
			       "ALL, NONE, or NAME[=VALUE] entries", p);
			continue;
		}
		for (g = 0; g < s->job.ngroups; g++) {
			if (s->run[g].nenv >= DRV_SPEC_MAX_ITEMS)
				continue;
			drv_jobspec_add_env(s, g, p, eq ? eq + 1 : NULL);
		}
	}
	/* Slurm: a list of names without ALL exports only those (plus SLURM_*) */
	if (!mode)
		mode = "NONE";
	for (g = 0; g < s->job.ngroups; g++) {
		drv_free(s->run[g].export_mode);
		s->run[g].export_mode = drv_strdup(mode);
	}
	drv_free(copy);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* Is the directive at a..eol the hetjob (or packjob) separator? */
static bool is_hetjob_sep(const char *a, const char *eol)
{
	return (eol - a >= 6 && memcmp(a, "hetjob", 6) == 0 &&
		(a + 6 == eol || a[6] == ' ' || a[6] == '\t' || a[6] == '\r')) ||
	       (eol - a >= 7 && memcmp(a, "packjob", 7) == 0);
}

/* The #SBATCH lines before the first command, parsed component by
 * component; the last component's words are left in *w (count returned). */
static int read_directives(struct sb_ctx *c, const char *buf, size_t len, struct word **w,
			   size_t *wcap)
{
	const char *p = buf, *end = buf + len;
	int nw = 0, line = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q;
		if (!eol)
			eol = end;
		line++;
		for (q = p; q < eol && (*q == ' ' || *q == '\t' || *q == '\r'); q++)
			;
		if (line == 1 || q == eol) {
			/* the #! line, blank lines */
		} else if (*q != '#') {
			break; /* the first command ends the directives */
		} else if (eol - q >= 7 && memcmp(q, "#SBATCH", 7) == 0 &&
			   (q + 7 == eol || q[7] == ' ' || q[7] == '\t')) {
			const char *a = q + 7;
			while (a < eol && (*a == ' ' || *a == '\t'))
				a++;
			if (is_hetjob_sep(a, eol)) {
				parse_words(c, *w, nw);
				free_words(*w, nw);
				*w = NULL;
				nw = 0;
				*wcap = 0;
				if (c->ncomps >= DRV_SPEC_MAX_GROUPS)
					sb_err(c, line, (int)(a - p) + 1, NULL, "found more than %d hetjob "
					       "components", DRV_SPEC_MAX_GROUPS);
				else
					new_comp(c, line, (int)(a - p) + 1);
			} else {
				nw = split_words(c, a, eol, line, (int)(a - p) + 1, w, wcap, nw);
			}
		}
		p = eol < end ? eol + 1 : end;
	}
	return nw;
}

/* Appends the command line's sbatch options to w (line 0: no position). */
static int add_cmdline(const struct drv_spec_opts *opts, struct word **w, size_t *wcap, int nw)
{
	for (int i = 0; i < opts->sbatch_argc; i++) {
		DRV_GROW(*w, (size_t)nw + 1, *wcap);
		(*w)[nw].text = drv_strdup(opts->sbatch_argv[i]);
		(*w)[nw].line = 0;
		(*w)[nw].col = 0;
		nw++;
	}
	return nw;
}

/* The words of the last component; command-line options after component
 * 0's, so they win over its directives. Frees w. */
static void parse_last(struct sb_ctx *c, const struct drv_spec_opts *opts, struct word *w,
		       size_t wcap, int nw)
{
	if (c->ncomps == 1) {
		if (opts)
			nw = add_cmdline(opts, &w, &wcap, nw);
		parse_words(c, w, nw);
	} else {
		parse_words(c, w, nw);
		if (opts && opts->sbatch_argc) {
			/* component 0 again */
			struct word *cw = NULL;
			size_t ccap = 0;
			int cn = add_cmdline(opts, &cw, &ccap, 0), last = c->ncomps;

			c->ncomps = 1;
			parse_words(c, cw, cn);
			c->ncomps = last;
			free_words(cw, cn);
		}
	}
	free_words(w, nw);
}

/* A host list of -w or -x into node_selector entries keyed key; the count
 * of names, or -1 after an error. */
static int64_t hosts_into(struct sb_ctx *c, const char *list, const char *key, const char *opt,
			  int line, int col)
{
	char **names = NULL;
	size_t n = 0;

	if (strchr(list, '/')) {
		sb_err(c, line, col, opt, "found \"%s\", a file name; expected a host list such as "
		       "gpu-[01-04] (drover reads no node file)", list);
		return -1;
	}
	if (drv_hostlist_expand(list, &names, &n, 4096) < 0 || n == 0) {
		sb_err(c, line, col, opt, "found \"%s\", expected a host list such as gpu-[01-04],cpu-1",
		       list);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		drv_job_add_node_label(&c->s->job, key, names[i]);
	drv_hostlist_free(names, n);
	return (int64_t)n;
}

/*
 * -w, -x and -C: the nodes the job may use (node_selector entries the
 * placement reads, drv_job_node_ok). -w without -N asks for as many nodes
 * as it names, as sbatch does; with a larger -N the named nodes are
 * required and the placement adds others (DRV_LABEL_INCLUDE); more names
 * than -N is refused with sbatch's words.
 */
static void node_choice(struct sb_ctx *c)
{
	struct sb_comp *k = c->ncomps > 0 ? &c->comps[0] : NULL;
	size_t at;

	if (c->nodelist) {
		char **names = NULL;
		size_t n = 0;
		bool include = false, refused = false;

		if (!strchr(c->nodelist, '/') &&
		    drv_hostlist_expand(c->nodelist, &names, &n, 4096) == 0 && n > 0) {
			if (k && k->nodes > 0 && k->nodes < (int64_t)n) {
				sb_err(c, c->nodelist_line, c->nodelist_col, "--nodelist",
				       "invalid number of nodes (-N %lld-%lld): \"%s\" names %lld "
				       "nodes, more than --nodes=%lld", (long long)n,
				       (long long)k->nodes, c->nodelist, (long long)n,
				       (long long)k->nodes);
				refused = true;
			}
			include = k && k->nodes > (int64_t)n;
		}
		drv_hostlist_free(names, n);
		if (!refused) {
			int64_t got = hosts_into(c, c->nodelist,
						 include ? DRV_LABEL_INCLUDE : DRV_LABEL_HOST,
						 "--nodelist", c->nodelist_line, c->nodelist_col);

			if (got > 0 && k && k->nodes <= 0)
				k->nodes = got;
		}
	}
	if (c->exclude)
		hosts_into(c, c->exclude, DRV_LABEL_EXCLUDE, "--exclude", c->exclude_line,
			   c->exclude_col);
	if (c->constraint) {
		if (drv_constraint_check(c->constraint, &at) < 0)
			sb_err(c, c->constraint_line, c->constraint_col, "--constraint",
			       "found \"%s\", which does not read at \"%s\"; expected features "
			       "joined by & and |, grouped with () or [] (no counts)", c->constraint,
			       c->constraint + at);
		else
			drv_job_add_node_label(&c->s->job, DRV_LABEL_CONSTRAINT, c->constraint);
	}
}

/* The job from the components read: name, one group per component (the
 * script runs in each), export, and what Slurm's options mean to drover. */
static void build_job(struct sb_ctx *c, const char *buf, size_t len, const char *name)
{
	struct drv_jobspec *s = c->s;
	char gname[64];
	int64_t tasks = 0;
	int i;

	/* a script read from standard input is named "sbatch", as Slurm does */
	s->job.name = drv_strdup(c->name ? c->name : !name || !strcmp(name, "-") ||
				 !strcmp(name, "<stdin>") ? "sbatch" : base_name(name));
	node_choice(c);
	for (i = 0; i < c->ncomps; i++) {
		int g;
		if (c->ncomps == 1)
			snprintf(gname, sizeof(gname), "%.60s", s->job.name);
		else
			snprintf(gname, sizeof(gname), "het%d", i);
		g = drv_jobspec_add_group(s, gname);
		if (g < 0)
			break;
		resolve(c, &c->comps[i], g);
		s->run[g].script = drv_strndup(buf, len);
		s->run[g].working_dir = drv_strdup(c->workdir);
	}
	for (i = 0; i < s->job.ngroups; i++)
		tasks += s->job.groups[i].count;
	if (c->ncomps > 0) {
		const struct sb_comp *k = &c->comps[0];

		s->slurm.ntasks = k->ntasks > 0 ? (int32_t)DRV_MIN(k->ntasks, INT32_MAX) : 0;
		s->slurm.ntasks_per_node = k->tpn > 0 ? (int32_t)DRV_MIN(k->tpn, INT32_MAX) : 0;
		s->slurm.cpus_per_task = k->cpt > 0 ? (int32_t)DRV_MIN(k->cpt, INT32_MAX) : 0;
		s->slurm.per_node = k->nodes > 0 || k->gpn.n >= 0 || k->gres.n >= 0 || k->tpn > 0;
	}
	/* -o/-e/--open-mode: the agent writes them for a job whose client says
	 * where it was submitted (the server warns when none did) */
	if (s->slurm.input)
		drv_jobspec_warn(s, "#SBATCH --input: kept, not acted on (the batch step reads "
			"nothing on stdin)");
	if (tasks > DRV_SPEC_MAX_TASKS)
		drv_diag_err(c->d, 0, 0, NULL, "found %lld tasks in all, over the limit of %d",
			     (long long)tasks, DRV_SPEC_MAX_TASKS);
	apply_export(c);
	s->job.gang_min = 0;
	if (c->time > 0)
		s->job.time_limit = c->time;
	if (s->slurm.partition) {
		/* -p names pools: the job may run in any of them (-p a,b); the
		 * server refuses a name that is not one of its pools */
		char *list = drv_strdup(s->slurm.partition), *save = NULL, *p;

		for (p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
			drv_job_add_node_label(&s->job, DRV_LABEL_POOL, p);
		drv_free(list);
	}
	if (s->slurm.qos)
		s->priority_class = drv_strdup(s->slurm.qos);
	if (s->slurm.account)
		s->job.tenant = drv_strdup(s->slurm.account);
	if (s->array.spec && c->ncomps > 1)
		drv_diag_err(c->d, 0, 0, "--array", "found an array of a heterogeneous job, "
			     "which Slurm does not allow either");
}

static void sctx_release(struct sb_ctx *c)
{
	for (int i = 0; i < c->ncomps; i++) {
		sb_gpureq_clear(&c->comps[i].gpus);
		sb_gpureq_clear(&c->comps[i].gpn);
		sb_gpureq_clear(&c->comps[i].gpt);
		sb_gpureq_clear(&c->comps[i].gres);
	}
	drv_free(c->comps);
	drv_free(c->name);
	drv_free(c->export_raw);
	drv_free(c->workdir);
	drv_free(c->nodelist);
	drv_free(c->exclude);
	drv_free(c->constraint);
}

int drv_spec_parse_sbatch(const char *buf, size_t len, const char *name,
			  const struct drv_spec_opts *opts, struct drv_specset *set,
			  struct drv_diags *d)
{
	struct sb_ctx c;
	struct word *w = NULL;
	size_t wcap = 0;
	int nw, errs0 = d->nerrors;

	if (len > DRV_SPEC_MAX_STRING) {
		drv_diag_err(d, 0, 0, NULL, "found a script of %zu bytes, over the limit of %d", len,
			     DRV_SPEC_MAX_STRING);
		return DRV_ELIMIT;
	}
	if (!drv_spec_check_text(buf, len, true, d))
		return DRV_EPARSE;
	memset(&c, 0, sizeof(c));
	c.d = d;
	c.time = -1;
	c.s = drv_specset_add(set);
	c.s->format = DRV_FMT_SBATCH;
	c.s->api_version = drv_strdup("slurm");
	c.s->kind = drv_strdup("BatchScript");
	new_comp(&c, 1, 1);
	nw = read_directives(&c, buf, len, &w, &wcap);
	parse_last(&c, opts, w, wcap, nw);
	build_job(&c, buf, len, name);
	sctx_release(&c);
	return d->nerrors > errs0 ? DRV_EPARSE : 0;
}
