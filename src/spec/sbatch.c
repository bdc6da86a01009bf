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
 * what each task runs.
 */
#include "drover/spec.h"
#include "spec_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum opt_id {
	O_IGNORED = 0, O_JOB_NAME, O_NODES, O_NTASKS, O_NTASKS_PER_NODE, O_GPUS, O_GPUS_PER_NODE,
	O_GPUS_PER_TASK, O_GRES, O_CPUS_PER_TASK, O_CPUS_PER_GPU, O_MEM, O_MEM_PER_GPU,
	O_MEM_PER_CPU, O_TIME, O_PARTITION, O_QOS, O_ACCOUNT, O_REQUEUE, O_NO_REQUEUE, O_SIGNAL,
	O_SWITCHES, O_SEGMENT, O_ARRAY, O_DEPENDENCY, O_EXPORT, O_CHDIR, O_PRIORITY,
	O_HELP_LIKE,
};

struct sopt {
	const char *name;
	char shrt;
	int arg; /* 0 none, 1 required, 2 optional (only with '=') */
	enum opt_id id;
};

/* sbatch's long options (Slurm 23.x/24.x man page), so that abbreviations
 * are judged against the same set Slurm judges them against. */
static const struct sopt opts_tab[] = {
	{ "account", 'A', 1, O_ACCOUNT }, { "acctg-freq", 0, 1, O_IGNORED },
	{ "array", 'a', 1, O_ARRAY }, { "batch", 0, 1, O_IGNORED }, { "bb", 0, 1, O_IGNORED },
	{ "bbf", 0, 1, O_IGNORED }, { "begin", 'b', 1, O_IGNORED }, { "chdir", 'D', 1, O_CHDIR },
	{ "cluster-constraint", 0, 1, O_IGNORED }, { "clusters", 'M', 1, O_IGNORED },
	{ "comment", 0, 1, O_IGNORED }, { "constraint", 'C', 1, O_IGNORED },
	{ "container", 0, 1, O_IGNORED }, { "container-id", 0, 1, O_IGNORED },
	{ "contiguous", 0, 0, O_IGNORED }, { "core-spec", 'S', 1, O_IGNORED },
	{ "cores-per-socket", 0, 1, O_IGNORED }, { "cpu-freq", 0, 1, O_IGNORED },
	{ "cpus-per-gpu", 0, 1, O_CPUS_PER_GPU }, { "cpus-per-task", 'c', 1, O_CPUS_PER_TASK },
	{ "deadline", 0, 1, O_IGNORED }, { "delay-boot", 0, 1, O_IGNORED },
	{ "dependency", 'd', 1, O_DEPENDENCY }, { "distribution", 'm', 1, O_IGNORED },
	{ "error", 'e', 1, O_IGNORED }, { "exclude", 'x', 1, O_IGNORED },
	{ "exclusive", 0, 2, O_IGNORED }, { "export", 0, 1, O_EXPORT },
	{ "export-file", 0, 1, O_IGNORED }, { "extra", 0, 1, O_IGNORED },
	{ "extra-node-info", 'B', 1, O_IGNORED }, { "get-user-env", 0, 2, O_IGNORED },
	{ "gid", 0, 1, O_IGNORED }, { "gpu-bind", 0, 1, O_IGNORED }, { "gpu-freq", 0, 1, O_IGNORED },
	{ "gpus", 'G', 1, O_GPUS }, { "gpus-per-node", 0, 1, O_GPUS_PER_NODE },
	{ "gpus-per-socket", 0, 1, O_IGNORED }, { "gpus-per-task", 0, 1, O_GPUS_PER_TASK },
	{ "gres", 0, 1, O_GRES }, { "gres-flags", 0, 1, O_IGNORED }, { "help", 'h', 0, O_HELP_LIKE },
	{ "hint", 0, 1, O_IGNORED }, { "hold", 'H', 0, O_IGNORED }, { "ignore-pbs", 0, 0, O_IGNORED },
	{ "input", 'i', 1, O_IGNORED }, { "job-name", 'J', 1, O_JOB_NAME },
	{ "kill-on-invalid-dep", 0, 1, O_IGNORED }, { "licenses", 'L', 1, O_IGNORED },
	{ "mail-type", 0, 1, O_IGNORED }, { "mail-user", 0, 1, O_IGNORED },
	{ "mcs-label", 0, 1, O_IGNORED }, { "mem", 0, 1, O_MEM }, { "mem-bind", 0, 1, O_IGNORED },
	{ "mem-per-cpu", 0, 1, O_MEM_PER_CPU }, { "mem-per-gpu", 0, 1, O_MEM_PER_GPU },
	{ "mincpus", 0, 1, O_IGNORED }, { "network", 0, 1, O_IGNORED }, { "nice", 0, 2, O_IGNORED },
	{ "no-kill", 'k', 2, O_IGNORED }, { "no-requeue", 0, 0, O_NO_REQUEUE },
	{ "nodefile", 'F', 1, O_IGNORED }, { "nodelist", 'w', 1, O_IGNORED },
	{ "nodes", 'N', 1, O_NODES }, { "ntasks", 'n', 1, O_NTASKS },
	{ "ntasks-per-core", 0, 1, O_IGNORED }, { "ntasks-per-gpu", 0, 1, O_IGNORED },
	{ "ntasks-per-node", 0, 1, O_NTASKS_PER_NODE }, { "ntasks-per-socket", 0, 1, O_IGNORED },
	{ "open-mode", 0, 1, O_IGNORED }, { "output", 'o', 1, O_IGNORED },
	{ "overcommit", 'O', 0, O_IGNORED }, { "oversubscribe", 's', 0, O_IGNORED },
	{ "parsable", 0, 0, O_IGNORED }, { "partition", 'p', 1, O_PARTITION },
	{ "power", 0, 1, O_IGNORED }, { "prefer", 0, 1, O_IGNORED }, { "priority", 0, 1, O_PRIORITY },
	{ "profile", 0, 1, O_IGNORED }, { "propagate", 0, 2, O_IGNORED }, { "qos", 'q', 1, O_QOS },
	{ "quiet", 'Q', 0, O_IGNORED }, { "reboot", 0, 0, O_IGNORED }, { "requeue", 0, 0, O_REQUEUE },
	{ "reservation", 0, 1, O_IGNORED }, { "resv-ports", 0, 2, O_IGNORED },
	{ "segment", 0, 1, O_SEGMENT }, { "signal", 0, 1, O_SIGNAL },
	{ "sockets-per-node", 0, 1, O_IGNORED }, { "spread-job", 0, 0, O_IGNORED },
	{ "switches", 0, 1, O_SWITCHES }, { "test-only", 0, 0, O_IGNORED },
	{ "thread-spec", 0, 1, O_IGNORED }, { "threads-per-core", 0, 1, O_IGNORED },
	{ "time", 't', 1, O_TIME }, { "time-min", 0, 1, O_IGNORED }, { "tmp", 0, 1, O_IGNORED },
	{ "tres-bind", 0, 1, O_IGNORED }, { "tres-per-task", 0, 1, O_IGNORED },
	{ "uid", 0, 1, O_IGNORED }, { "usage", 0, 0, O_HELP_LIKE },
	{ "use-min-nodes", 0, 0, O_IGNORED }, { "verbose", 'v', 0, O_IGNORED },
	{ "version", 'V', 0, O_HELP_LIKE }, { "wait", 'W', 0, O_IGNORED },
	{ "wait-all-nodes", 0, 1, O_IGNORED }, { "wckey", 0, 1, O_IGNORED },
	{ "wrap", 0, 1, O_IGNORED },
};

/* A GPU request: [type:]count. */
struct gpureq {
	int64_t n;   /* -1 = not given */
	char *type;
	int line, col;
};

/* One component's options as written (-1 = not given). */
struct comp {
	int64_t nodes, ntasks, tpn, cpt, cpg, mem, mem_per_gpu, mem_per_cpu;
	struct gpureq gpus, gpn, gpt, gres;
	int line, col; /* where it starts */
};

struct sctx {
	struct drv_diags *d;
	struct drv_jobspec *s;
	struct comp *comps;
	int ncomps;
	size_t ccap;
	/* job-wide */
	char *name;
	int64_t time;
	char *export_raw;
	int export_line, export_col;
	char *workdir;
};

struct word {
	char *text;
	int line, col;
};

static void serr(struct sctx *c, int line, int col, const char *opt, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void serr(struct sctx *c, int line, int col, const char *opt, const char *fmt, ...)
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

static void gpureq_clear(struct gpureq *g)
{
	drv_free(g->type);
	g->type = NULL;
	g->n = -1;
}

static struct comp *new_comp(struct sctx *c, int line, int col)
{
	struct comp *k;
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

/* Strict non-negative decimal up to max. */
static bool num(const char *s, int64_t max, int64_t *out)
{
	int64_t v = 0;
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

/* Slurm memory: N[K|M|G|T], default unit MB (MiB); result in MiB. */
static bool mem_mib(const char *s, int64_t *out)
{
	char buf[32];
	size_t n = strlen(s);
	int64_t v, mul = 1, div = 1;
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n + 1);
	switch (buf[n - 1]) {
	case 'K': case 'k': div = 1024; buf[--n] = '\0'; break;
	case 'M': case 'm': buf[--n] = '\0'; break;
	case 'G': case 'g': mul = 1024; buf[--n] = '\0'; break;
	case 'T': case 't': mul = 1024 * 1024; buf[--n] = '\0'; break;
	}
	if (!num(buf, (int64_t)1 << 40, &v))
		return false;
	*out = v * mul / div + (v * mul % div ? 1 : 0);
	return true;
}

/* [type:]count (count default 1 when a type is given alone, for --gres). */
static bool parse_gpureq(const char *v, bool count_optional, struct gpureq *g)
{
	const char *colon = strrchr(v, ':');
	int64_t n;
	gpureq_clear(g);
	if (!colon) {
		if (num(v, DRV_MAX_NODE_GPUS * (int64_t)DRV_SPEC_MAX_TASKS, &n)) {
			g->n = n;
			return true;
		}
		if (count_optional && *v) {
			g->n = 1;
			g->type = drv_strdup(v);
			return true;
		}
		return false;
	}
	if (colon == v || !num(colon + 1, DRV_MAX_NODE_GPUS * (int64_t)DRV_SPEC_MAX_TASKS, &n))
		return false;
	g->n = n;
	g->type = drv_strndup(v, (size_t)(colon - v));
	return true;
}

static int signal_number(const char *s)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = { { "HUP", 1 }, { "INT", 2 }, { "QUIT", 3 }, { "ABRT", 6 }, { "KILL", 9 },
		     { "USR1", 10 }, { "USR2", 12 }, { "ALRM", 14 }, { "TERM", 15 }, { "CONT", 18 },
		     { "STOP", 19 }, { "TSTP", 20 }, { "URG", 23 }, { "XCPU", 24 }, { "XFSZ", 25 },
		     { "VTALRM", 26 }, { "PROF", 27 }, { "WINCH", 28 } };
	int64_t n;
	size_t i;
	if (num(s, 64, &n))
		return n >= 1 ? (int)n : -1;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < DRV_ARRAY_SIZE(sigs); i++)
		if (drv_strcaseeq(s, sigs[i].name))
			return sigs[i].num;
	return -1;
}

static void parse_dependency(struct sctx *c, const char *v, int line, int col)
{
	struct drv_jobspec *s = c->s;
	char *copy = drv_strdup(v), *p = copy;
	int i;
	bool any = strchr(v, '?') != NULL;
	static const char *const types[] = { "after", "afterany", "afterburstbuffer", "aftercorr",
					     "afternotok", "afterok", "singleton" };

	if (any && strchr(v, ','))
		serr(c, line, col, "--dependency", "found both ',' and '?' in \"%s\", expected one "
		     "kind of separator", v);
	for (i = 0; i < s->ndeps; i++) {
		drv_free(s->deps[i].type);
		drv_free(s->deps[i].job);
	}
	s->ndeps = 0;
	s->deps_any = any;
	while (p && *p) {
		char *next = p + strcspn(p, ",?"), *colon, *id;
		size_t t;
		if (*next)
			*next++ = '\0';
		else
			next = NULL;
		colon = strchr(p, ':');
		if (colon)
			*colon = '\0';
		for (t = 0; t < DRV_ARRAY_SIZE(types); t++)
			if (strcmp(p, types[t]) == 0)
				break;
		if (t == DRV_ARRAY_SIZE(types) || (t == 6) != !colon) {
			serr(c, line, col, "--dependency", "found \"%s\", expected afterok:JOBID[:JOBID], "
			     "afterany, afternotok, after, aftercorr or singleton", v);
			break;
		}
		if (t == 6) {
			s->deps = drv_realloc(s->deps, sizeof(*s->deps) * (size_t)(s->ndeps + 1));
			s->deps[s->ndeps].type = drv_strdup(p);
			s->deps[s->ndeps].job = NULL;
			s->deps[s->ndeps].delay_s = 0;
			s->ndeps++;
		}
		for (id = colon ? colon + 1 : NULL; id && *id;) {
			char *nx = strchr(id, ':'), *plus;
			int64_t delay = 0;
			if (nx)
				*nx++ = '\0';
			plus = strchr(id, '+');
			if (plus) {
				*plus++ = '\0';
				if (!num(plus, 525600, &delay) || t != 0) {
					serr(c, line, col, "--dependency", "found \"+%s\", expected after:"
					     "JOBID+MINUTES", plus);
					delay = 0;
				}
			}
			if (!*id || s->ndeps >= DRV_SPEC_MAX_ITEMS) {
				serr(c, line, col, "--dependency", "found an empty or excess job id in "
				     "\"%s\"", v);
				break;
			}
			s->deps = drv_realloc(s->deps, sizeof(*s->deps) * (size_t)(s->ndeps + 1));
			s->deps[s->ndeps].type = drv_strdup(p);
			s->deps[s->ndeps].job = drv_strdup(id);
			s->deps[s->ndeps].delay_s = delay * 60;
			s->ndeps++;
			id = nx;
		}
		p = next;
	}
	drv_free(copy);
}

/* Acts on one option occurrence. */
/* --nodes=N or N-M (the minimum is allocated). */
static void opt_nodes(struct sctx *c, struct comp *k, const char *on, const char *v, int line,
		      int col)
{
	const char *dash = strchr(v, '-');
	int64_t lo, hi, x;
	char buf[32];

	if (dash && (size_t)(dash - v) < sizeof(buf)) {
		memcpy(buf, v, (size_t)(dash - v));
		buf[dash - v] = '\0';
		if (num(buf, DRV_SPEC_MAX_TASKS, &lo) && lo > 0 &&
		    num(dash + 1, DRV_SPEC_MAX_TASKS, &hi) && hi >= lo) {
			k->nodes = lo;
			if (hi != lo)
				drv_jobspec_warn(c->s, "--nodes=%s: drover allocates the minimum, %lld "
						 "nodes", v, (long long)lo);
			return;
		}
	} else if (num(v, DRV_SPEC_MAX_TASKS, &x) && x > 0) {
		k->nodes = x;
		return;
	}
	serr(c, line, col, on, "found \"%s\", expected a node count such as 4 or 2-4", v);
}

/* The positive counts: tasks, tasks per node, CPUs per task or GPU, segment. */
static void opt_count(struct sctx *c, struct comp *k, const struct sopt *o, const char *on,
		      const char *v, int line, int col)
{
	int64_t x;

	if (!num(v, DRV_SPEC_MAX_TASKS * 64LL, &x) || x == 0) {
		serr(c, line, col, on, "found \"%s\", expected a positive integer", v);
		return;
	}
	if (o->id == O_NTASKS)
		k->ntasks = x;
	else if (o->id == O_NTASKS_PER_NODE)
		k->tpn = x;
	else if (o->id == O_CPUS_PER_TASK)
		k->cpt = x;
	else if (o->id == O_CPUS_PER_GPU)
		k->cpg = x;
	else
		c->s->slurm.segment = (int32_t)x;
}

/* --gres=gpu[:type][:count], several comma-separated; only gpu acted on. */
static void opt_gres(struct sctx *c, struct comp *k, const char *on, const char *v, int line,
		     int col)
{
	char *copy = drv_strdup(v), *p = copy, *next;
	bool seen = false;

	for (; p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		if (strncmp(p, "gres/", 5) == 0)
			p += 5;
		if (strcmp(p, "gpu") == 0 || strncmp(p, "gpu:", 4) == 0) {
			seen = true;
			if (strcmp(p, "gpu") == 0) {
				gpureq_clear(&k->gres);
				k->gres.n = 1;
			} else if (!parse_gpureq(p + 4, true, &k->gres)) {
				serr(c, line, col, on, "found \"%s\", expected gpu[:type]:count", p);
			}
			k->gres.line = line;
			k->gres.col = col;
		} else if (strcmp(p, "none") != 0 && *p) {
			char key[64];
			snprintf(key, sizeof(key), "#SBATCH --gres=%.40s", p);
			drv_spec_keep_ignored(c->s, key, json_string(p));
		}
	}
	if (!seen && strstr(v, "gpu"))
		serr(c, line, col, on, "found \"%s\", expected gpu[:type]:count", v);
	drv_free(copy);
}

/* --mem, --mem-per-gpu, --mem-per-cpu. */
static void opt_mem(struct sctx *c, struct comp *k, const struct sopt *o, const char *on,
		    const char *v, int line, int col)
{
	int64_t x;

	if (!mem_mib(v, &x)) {
		serr(c, line, col, on, "found \"%s\", expected a size such as 64G or 500M", v);
		return;
	}
	if (o->id == O_MEM && x == 0)
		drv_jobspec_warn(c->s, "--mem=0 (all of a node's memory): drover asks for no "
				 "memory; give a size to reserve it");
	if (o->id == O_MEM)
		k->mem = x;
	else if (o->id == O_MEM_PER_GPU)
		k->mem_per_gpu = x;
	else
		k->mem_per_cpu = x;
}

/* --signal=[{R|B}:]SIG[@secs]. */
static void opt_signal(struct sctx *c, const char *on, const char *v, int line, int col)
{
	struct drv_jobspec *s = c->s;
	const char *p = v, *at;
	char sig[32];
	int64_t secs = 60;
	bool batch = false;
	int n;

	if ((p[0] == 'B' || p[0] == 'R') && p[1] == ':') {
		batch = p[0] == 'B';
		p += 2;
	}
	at = strchr(p, '@');
	if ((size_t)(at ? at - p : (long)strlen(p)) >= sizeof(sig) ||
	    (at && !num(at + 1, 65535, &secs))) {
		serr(c, line, col, on, "found \"%s\", expected [B:]SIGNAL[@seconds]", v);
		return;
	}
	snprintf(sig, sizeof(sig), "%.*s", (int)(at ? at - p : (long)strlen(p)), p);
	n = signal_number(sig);
	if (n < 0) {
		serr(c, line, col, on, "found \"%s\", expected a signal name or number "
		     "(USR1, 10, SIGTERM)", v);
		return;
	}
	s->slurm.signal = n;
	s->slurm.signal_secs = (int32_t)secs;
	s->slurm.signal_batch_only = batch;
}

/* --switches=COUNT[@TIME]. */
static void opt_switches(struct sctx *c, const char *on, const char *v, int line, int col)
{
	const char *at = strchr(v, '@');
	char buf[32];
	int64_t x, wait = 0;

	snprintf(buf, sizeof(buf), "%.*s", (int)(at ? at - v : 31), v);
	if (!num(buf, INT32_MAX, &x) || x == 0 || (at && drv_slurm_time_parse(at + 1, &wait))) {
		serr(c, line, col, on, "found \"%s\", expected COUNT[@TIME]", v);
		return;
	}
	c->s->slurm.switches = (int32_t)x;
	c->s->slurm.switches_wait_s = wait;
}

/* --array=RANGES[%MAX]. */
static void opt_array(struct sctx *c, const char *on, const char *v, int line, int col)
{
	int rc = drv_array_parse(v, &c->s->array);

	if (rc == DRV_ELIMIT)
		serr(c, line, col, on, "found \"%s\", over the limit of %d array tasks", v,
		     DRV_SPEC_MAX_ARRAY);
	else if (rc)
		serr(c, line, col, on, "found \"%s\", expected ranges such as 0-15, 1,3,5, "
		     "0-15:4 or 0-99%%10", v);
}

/* Options that set one string or flag. False: o is not one of them. */
static bool opt_plain(struct sctx *c, const struct sopt *o, const char *v, int line, int col)
{
	struct drv_jobspec *s = c->s;
	char **str = NULL;

	switch (o->id) {
	case O_JOB_NAME:
		str = &c->name;
		break;
	case O_PARTITION:
		str = &s->slurm.partition;
		break;
	case O_QOS:
		str = &s->slurm.qos;
		break;
	case O_ACCOUNT:
		str = &s->slurm.account;
		break;
	case O_CHDIR:
		str = &c->workdir;
		break;
	case O_EXPORT:
		str = &c->export_raw;
		c->export_line = line;
		c->export_col = col;
		break;
	case O_REQUEUE:
	case O_NO_REQUEUE:
		s->slurm.requeue = o->id == O_REQUEUE;
		return true;
	default:
		return false;
	}
	drv_free(*str);
	*str = drv_strdup(v);
	return true;
}

static void apply(struct sctx *c, struct comp *k, const struct sopt *o, const char *v,
		  int line, int col)
{
	struct drv_jobspec *s = c->s;
	char on[48];
	int64_t x;

	snprintf(on, sizeof(on), "--%s", o->name);
	if (v && strlen(v) > DRV_SPEC_MAX_STRING) {
		serr(c, line, col, on, "found a value over the length limit");
		return;
	}
	if (opt_plain(c, o, v, line, col))
		return;
	switch (o->id) {
	case O_IGNORED: {
		char key[64];
		snprintf(key, sizeof(key), "#SBATCH %s", on);
		drv_spec_keep_ignored(s, key, v ? json_string(v) : json_true());
		break;
	}
	case O_HELP_LIKE:
		serr(c, line, col, on, "found an option that only prints, expected job options");
		break;
	case O_NODES:
		opt_nodes(c, k, on, v, line, col);
		break;
	case O_NTASKS:
	case O_NTASKS_PER_NODE:
	case O_CPUS_PER_TASK:
	case O_CPUS_PER_GPU:
	case O_SEGMENT:
		opt_count(c, k, o, on, v, line, col);
		break;
	case O_GPUS:
	case O_GPUS_PER_NODE:
	case O_GPUS_PER_TASK: {
		struct gpureq *g = o->id == O_GPUS ? &k->gpus : o->id == O_GPUS_PER_NODE ? &k->gpn
											 : &k->gpt;
		if (!parse_gpureq(v, false, g))
			serr(c, line, col, on, "found \"%s\", expected a GPU count such as 8 or h100:8", v);
		g->line = line;
		g->col = col;
		break;
	}
	case O_GRES:
		opt_gres(c, k, on, v, line, col);
		break;
	case O_MEM:
	case O_MEM_PER_GPU:
	case O_MEM_PER_CPU:
		opt_mem(c, k, o, on, v, line, col);
		break;
	case O_TIME:
		if (drv_slurm_time_parse(v, &x))
			serr(c, line, col, on, "found \"%s\", expected a time: MM, MM:SS, HH:MM:SS, "
			     "D-HH, D-HH:MM or D-HH:MM:SS", v);
		else
			c->time = x;
		break;
	case O_SIGNAL:
		opt_signal(c, on, v, line, col);
		break;
	case O_SWITCHES:
		opt_switches(c, on, v, line, col);
		break;
	case O_ARRAY:
		opt_array(c, on, v, line, col);
		break;
	case O_DEPENDENCY:
		parse_dependency(c, v, line, col);
		break;
	case O_PRIORITY:
		if (!num(v, INT32_MAX, &x))
			serr(c, line, col, on, "found \"%s\", expected a non-negative integer", v);
		else
			s->job.priority = (int32_t)x;
		break;
	default: /* opt_plain's */
		break;
	}
}

static const struct sopt *find_long(struct sctx *c, const char *name, size_t len, int line,
				    int col)
{
	const struct sopt *hit = NULL;
	char cands[256] = "";
	size_t i;
	int n = 0;
	for (i = 0; i < DRV_ARRAY_SIZE(opts_tab); i++) {
		if (strncmp(opts_tab[i].name, name, len) != 0)
			continue;
		if (strlen(opts_tab[i].name) == len)
			return &opts_tab[i];
		n++;
		hit = &opts_tab[i];
		if (strlen(cands) < 200) {
			size_t l = strlen(cands);
			snprintf(cands + l, sizeof(cands) - l, "%s--%s", n > 1 ? ", " : "",
				 opts_tab[i].name);
		}
	}
	if (n == 1)
		return hit;
	if (n == 0)
		serr(c, line, col, NULL, "found unknown option \"--%.*s\", expected an sbatch option",
		     (int)DRV_MIN(len, 64), name);
	else
		serr(c, line, col, NULL, "found ambiguous option \"--%.*s\", expected one of: %s",
		     (int)DRV_MIN(len, 64), name, cands);
	return NULL;
}

static const struct sopt *find_short(char ch)
{
	size_t i;
	for (i = 0; i < DRV_ARRAY_SIZE(opts_tab); i++)
		if (opts_tab[i].shrt == ch)
			return &opts_tab[i];
	return NULL;
}

/* getopt_long over words; returns the number of words consumed. */
static void parse_words(struct sctx *c, struct word *w, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		const char *t = w[i].text;
		struct comp *k = &c->comps[c->ncomps - 1];
		if (t[0] == '-' && t[1] == '-' && t[2]) {
			const char *eq = strchr(t + 2, '=');
			size_t len = eq ? (size_t)(eq - t - 2) : strlen(t + 2);
			const struct sopt *o = find_long(c, t + 2, len, w[i].line, w[i].col);
			if (!o)
				continue;
			if (o->arg == 0 && eq) {
				serr(c, w[i].line, w[i].col, NULL, "found a value for --%s, which takes none",
				     o->name);
				continue;
			}
			if (o->arg == 1 && !eq) {
				if (i + 1 >= n) {
					serr(c, w[i].line, w[i].col, NULL, "found --%s without a value, "
					     "expected --%s=VALUE or --%s VALUE", o->name, o->name, o->name);
					continue;
				}
				i++;
				apply(c, k, o, w[i].text, w[i].line, w[i].col);
				continue;
			}
			apply(c, k, o, eq ? eq + 1 : NULL, w[i].line, w[i].col);
		} else if (t[0] == '-' && t[1] && t[1] != '-') {
			const char *p;
			for (p = t + 1; *p; p++) {
				const struct sopt *o = find_short(*p);
				if (!o) {
					serr(c, w[i].line, w[i].col + (int)(p - t), NULL,
					     "found unknown option \"-%c\", expected an sbatch option", *p);
					break;
				}
				if (o->arg == 1) {
					if (p[1]) {
						apply(c, k, o, p[1] == '=' ? p + 2 : p + 1, w[i].line, w[i].col);
					} else if (i + 1 < n) {
						i++;
						apply(c, k, o, w[i].text, w[i].line, w[i].col);
					} else {
						serr(c, w[i].line, w[i].col, NULL, "found -%c without a value", *p);
					}
					break;
				}
				apply(c, k, o, NULL, w[i].line, w[i].col);
			}
		} else {
			serr(c, w[i].line, w[i].col, NULL, "found \"%.64s\", expected an option "
			     "starting with - or --", t);
		}
	}
}

/* Splits one directive line (after "#SBATCH") into words. */
static int split_words(struct sctx *c, const char *p, const char *end, int line, int col0,
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
			serr(c, line, col, NULL, "found an unclosed quote, expected a closing %c", q);
		if (nw >= DRV_SPEC_MAX_ITEMS) {
			serr(c, line, col, NULL, "found more than %d words of directives",
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

static int model_of(struct sctx *c, struct gpureq *g, const char *opt, int8_t *model)
{
	int m;
	if (!g->type)
		return 0;
	m = drv_gpu_model_find(g->type);
	if (m < 0) {
		serr(c, g->line, g->col, opt, "found GPU type \"%s\", expected a model drover knows "
		     "(such as h100, h200, b200, a100)", g->type);
		return -1;
	}
	if (*model >= 0 && *model != m) {
		serr(c, g->line, g->col, opt, "found GPU type \"%s\" unlike the one asked for before",
		     g->type);
		return -1;
	}
	*model = (int8_t)m;
	return 0;
}

/* Component k -> task group g (see the file comment and docs/job-format.md). */
static void resolve(struct sctx *c, struct comp *k, int g)
{
	struct drv_task_group *tg = &c->s->job.groups[g];
	bool per_node = k->nodes > 0 || k->gpn.n >= 0 || k->gres.n >= 0 || k->tpn > 0;
	int64_t count, tpn, gpus = 0, cpus;
	int8_t model = -1;

	model_of(c, &k->gres, "--gres", &model);
	model_of(c, &k->gpn, "--gpus-per-node", &model);
	model_of(c, &k->gpt, "--gpus-per-task", &model);
	model_of(c, &k->gpus, "--gpus", &model);
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
				serr(c, k->gpus.line, k->gpus.col, "--gpus", "found %lld GPUs over %lld "
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
				serr(c, k->gpus.line, k->gpus.col, "--gpus", "found %lld GPUs over %lld "
				     "tasks, expected a multiple of the task count", (long long)k->gpus.n,
				     (long long)count);
			gpus = k->gpus.n / count;
		}
	}
	if (gpus > DRV_MAX_NODE_GPUS)
		serr(c, k->line, k->col, "--gpus", "found %lld GPUs on one node, expected at most %d "
		     "(ask for more nodes)", (long long)gpus, DRV_MAX_NODE_GPUS);
	if (count > DRV_SPEC_MAX_TASKS)
		serr(c, k->line, k->col, "--nodes", "found %lld tasks, over the limit of %d",
		     (long long)count, DRV_SPEC_MAX_TASKS);
	tg->count = (int32_t)DRV_MIN(count, DRV_SPEC_MAX_TASKS);
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

static void apply_export(struct sctx *c)
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
			serr(c, c->export_line, c->export_col, "--export", "found \"%s\", expected "
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
static int read_directives(struct sctx *c, const char *buf, size_t len, struct word **w,
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
					serr(c, line, (int)(a - p) + 1, NULL, "found more than %d hetjob "
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
static void parse_last(struct sctx *c, const struct drv_spec_opts *opts, struct word *w,
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

/* The job from the components read: name, one group per component (the
 * script runs in each), export, and what Slurm's options mean to drover. */
static void build_job(struct sctx *c, const char *buf, size_t len, const char *name)
{
	struct drv_jobspec *s = c->s;
	char gname[64];
	int64_t tasks = 0;
	int i;

	/* a script read from standard input is named "sbatch", as Slurm does */
	s->job.name = drv_strdup(c->name ? c->name : !name || !strcmp(name, "-") ||
				 !strcmp(name, "<stdin>") ? "sbatch" : base_name(name));
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
	if (tasks > DRV_SPEC_MAX_TASKS)
		drv_diag_err(c->d, 0, 0, NULL, "found %lld tasks in all, over the limit of %d",
			     (long long)tasks, DRV_SPEC_MAX_TASKS);
	apply_export(c);
	s->job.gang_min = 0;
	if (c->time > 0)
		s->job.time_limit = c->time;
	if (s->slurm.partition)
		s->queue = drv_strdup(s->slurm.partition);
	if (s->slurm.qos)
		s->priority_class = drv_strdup(s->slurm.qos);
	if (s->slurm.account)
		s->job.tenant = drv_strdup(s->slurm.account);
	if (s->array.spec && c->ncomps > 1)
		drv_diag_err(c->d, 0, 0, "--array", "found an array of a heterogeneous job, "
			     "which Slurm does not allow either");
}

static void sctx_release(struct sctx *c)
{
	for (int i = 0; i < c->ncomps; i++) {
		gpureq_clear(&c->comps[i].gpus);
		gpureq_clear(&c->comps[i].gpn);
		gpureq_clear(&c->comps[i].gpt);
		gpureq_clear(&c->comps[i].gres);
	}
	drv_free(c->comps);
	drv_free(c->name);
	drv_free(c->export_raw);
	drv_free(c->workdir);
}

int drv_spec_parse_sbatch(const char *buf, size_t len, const char *name,
			  const struct drv_spec_opts *opts, struct drv_specset *set,
			  struct drv_diags *d)
{
	struct sctx c;
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
