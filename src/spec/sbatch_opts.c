/*
 * sbatch_opts.c: what each sbatch option does: sbatch's own option table
 * (so abbreviations are judged against the set Slurm judges them
 * against), the value grammars (counts, sizes, GPU requests, signals,
 * dependencies) and sb_apply, which records one option occurrence in the
 * component or the job, or reports "found X, expected Y" where it was
 * written. sbatch.c reads the script and turns the components into groups.
 */
#include "drover/spec.h"
#include "spec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* sbatch's long options (Slurm 23.x/24.x man page), so that abbreviations
 * are judged against the same set Slurm judges them against. */
static const struct sb_opt opts_tab[] = {
	{ "account", 'A', 1, O_ACCOUNT }, { "acctg-freq", 0, 1, O_IGNORED },
	{ "array", 'a', 1, O_ARRAY }, { "batch", 0, 1, O_IGNORED }, { "bb", 0, 1, O_IGNORED },
	{ "bbf", 0, 1, O_IGNORED }, { "begin", 'b', 1, O_BEGIN }, { "chdir", 'D', 1, O_CHDIR },
	{ "cluster-constraint", 0, 1, O_IGNORED }, { "clusters", 'M', 1, O_IGNORED },
	{ "comment", 0, 1, O_IGNORED }, { "constraint", 'C', 1, O_CONSTRAINT },
	{ "container", 0, 1, O_IGNORED }, { "container-id", 0, 1, O_IGNORED },
	{ "contiguous", 0, 0, O_IGNORED }, { "core-spec", 'S', 1, O_IGNORED },
	{ "cores-per-socket", 0, 1, O_IGNORED }, { "cpu-freq", 0, 1, O_IGNORED },
	{ "cpus-per-gpu", 0, 1, O_CPUS_PER_GPU }, { "cpus-per-task", 'c', 1, O_CPUS_PER_TASK },
	{ "deadline", 0, 1, O_IGNORED }, { "delay-boot", 0, 1, O_IGNORED },
	{ "dependency", 'd', 1, O_DEPENDENCY }, { "distribution", 'm', 1, O_IGNORED },
	{ "error", 'e', 1, O_ERROR }, { "exclude", 'x', 1, O_EXCLUDE },
	{ "exclusive", 0, 2, O_EXCLUSIVE }, { "export", 0, 1, O_EXPORT },
	{ "export-file", 0, 1, O_IGNORED }, { "extra", 0, 1, O_IGNORED },
	{ "extra-node-info", 'B', 1, O_IGNORED }, { "get-user-env", 0, 2, O_IGNORED },
	{ "gid", 0, 1, O_IGNORED }, { "gpu-bind", 0, 1, O_IGNORED }, { "gpu-freq", 0, 1, O_IGNORED },
	{ "gpus", 'G', 1, O_GPUS }, { "gpus-per-node", 0, 1, O_GPUS_PER_NODE },
	{ "gpus-per-socket", 0, 1, O_IGNORED }, { "gpus-per-task", 0, 1, O_GPUS_PER_TASK },
	{ "gres", 0, 1, O_GRES }, { "gres-flags", 0, 1, O_IGNORED }, { "help", 'h', 0, O_HELP_LIKE },
	{ "hint", 0, 1, O_IGNORED }, { "hold", 'H', 0, O_HOLD }, { "ignore-pbs", 0, 0, O_IGNORED },
	{ "input", 'i', 1, O_INPUT }, { "job-name", 'J', 1, O_JOB_NAME },
	{ "kill-on-invalid-dep", 0, 1, O_IGNORED }, { "licenses", 'L', 1, O_IGNORED },
	{ "mail-type", 0, 1, O_IGNORED }, { "mail-user", 0, 1, O_IGNORED },
	{ "mcs-label", 0, 1, O_IGNORED }, { "mem", 0, 1, O_MEM }, { "mem-bind", 0, 1, O_IGNORED },
	{ "mem-per-cpu", 0, 1, O_MEM_PER_CPU }, { "mem-per-gpu", 0, 1, O_MEM_PER_GPU },
	{ "mincpus", 0, 1, O_IGNORED }, { "network", 0, 1, O_IGNORED }, { "nice", 0, 2, O_IGNORED },
	{ "no-kill", 'k', 2, O_IGNORED }, { "no-requeue", 0, 0, O_NO_REQUEUE },
	{ "nodefile", 'F', 1, O_IGNORED }, { "nodelist", 'w', 1, O_NODELIST },
	{ "nodes", 'N', 1, O_NODES }, { "ntasks", 'n', 1, O_NTASKS },
	{ "ntasks-per-core", 0, 1, O_IGNORED }, { "ntasks-per-gpu", 0, 1, O_IGNORED },
	{ "ntasks-per-node", 0, 1, O_NTASKS_PER_NODE }, { "ntasks-per-socket", 0, 1, O_IGNORED },
	{ "open-mode", 0, 1, O_OPEN_MODE }, { "output", 'o', 1, O_OUTPUT },
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
static bool parse_gpureq(const char *v, bool count_optional, struct sb_gpureq *g)
{
	const char *colon = strrchr(v, ':');
	int64_t n;
	sb_gpureq_clear(g);
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

static void parse_dependency(struct sb_ctx *c, const char *v, int line, int col)
{
	struct drv_jobspec *s = c->s;
	char *copy = drv_strdup(v), *p = copy;
	int i;
	bool any = strchr(v, '?') != NULL;
	static const char *const types[] = { "after", "afterany", "afterburstbuffer", "aftercorr",
					     "afternotok", "afterok", "singleton" };

	if (any && strchr(v, ','))
		sb_err(c, line, col, "--dependency", "found both ',' and '?' in \"%s\", expected one "
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
			sb_err(c, line, col, "--dependency", "found \"%s\", expected afterok:JOBID[:JOBID], "
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
					sb_err(c, line, col, "--dependency", "found \"+%s\", expected after:"
					       "JOBID+MINUTES", plus);
					delay = 0;
				}
			}
			if (!*id || s->ndeps >= DRV_SPEC_MAX_ITEMS) {
				sb_err(c, line, col, "--dependency", "found an empty or excess job id in "
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

/* --nodes=N or N-M (the minimum is allocated). */
static void opt_nodes(struct sb_ctx *c, struct sb_comp *k, const char *on, const char *v, int line,
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
	sb_err(c, line, col, on, "found \"%s\", expected a node count such as 4 or 2-4", v);
}

/* The positive counts: tasks, tasks per node, CPUs per task or GPU, segment. */
static void opt_count(struct sb_ctx *c, struct sb_comp *k, const struct sb_opt *o, const char *on,
		      const char *v, int line, int col)
{
	int64_t x;

	if (!num(v, DRV_SPEC_MAX_TASKS * 64LL, &x) || x == 0) {
		sb_err(c, line, col, on, "found \"%s\", expected a positive integer", v);
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
static void opt_gres(struct sb_ctx *c, struct sb_comp *k, const char *on, const char *v, int line,
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
				sb_gpureq_clear(&k->gres);
				k->gres.n = 1;
			} else if (!parse_gpureq(p + 4, true, &k->gres)) {
				sb_err(c, line, col, on, "found \"%s\", expected gpu[:type]:count", p);
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
		sb_err(c, line, col, on, "found \"%s\", expected gpu[:type]:count", v);
	drv_free(copy);
}

/* --mem, --mem-per-gpu, --mem-per-cpu. */
static void opt_mem(struct sb_ctx *c, struct sb_comp *k, const struct sb_opt *o, const char *on,
		    const char *v, int line, int col)
{
	int64_t x;

	if (!mem_mib(v, &x)) {
		sb_err(c, line, col, on, "found \"%s\", expected a size such as 64G or 500M", v);
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
static void opt_signal(struct sb_ctx *c, const char *on, const char *v, int line, int col)
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
		sb_err(c, line, col, on, "found \"%s\", expected [B:]SIGNAL[@seconds]", v);
		return;
	}
	snprintf(sig, sizeof(sig), "%.*s", (int)(at ? at - p : (long)strlen(p)), p);
	n = signal_number(sig);
	if (n < 0) {
		sb_err(c, line, col, on, "found \"%s\", expected a signal name or number "
		       "(USR1, 10, SIGTERM)", v);
		return;
	}
	s->slurm.signal = n;
	s->slurm.signal_secs = (int32_t)secs;
	s->slurm.signal_batch_only = batch;
}

/* --switches=COUNT[@TIME]. */
static void opt_switches(struct sb_ctx *c, const char *on, const char *v, int line, int col)
{
	const char *at = strchr(v, '@');
	char buf[32];
	int64_t x, wait = 0;

	snprintf(buf, sizeof(buf), "%.*s", (int)(at ? at - v : 31), v);
	if (!num(buf, INT32_MAX, &x) || x == 0 || (at && drv_slurm_time_parse(at + 1, &wait))) {
		sb_err(c, line, col, on, "found \"%s\", expected COUNT[@TIME]", v);
		return;
	}
	c->s->slurm.switches = (int32_t)x;
	c->s->slurm.switches_wait_s = wait;
}

/* --array=RANGES[%MAX]. */
static void opt_array(struct sb_ctx *c, const char *on, const char *v, int line, int col)
{
	int rc = drv_array_parse(v, &c->s->array);

	if (rc == DRV_ELIMIT)
		sb_err(c, line, col, on, "found \"%s\", over the limit of %d array tasks", v,
		       DRV_SPEC_MAX_ARRAY);
	else if (rc)
		sb_err(c, line, col, on, "found \"%s\", expected ranges such as 0-15, 1,3,5, "
		       "0-15:4 or 0-99%%10", v);
}

/* --exclusive[=user|mcs|topo]: whole nodes for the job (acted on); the
 * kinds that share nodes with some other jobs are kept and warned about. */
static void opt_exclusive(struct sb_ctx *c, const char *v, int line, int col)
{
	if (!v) {
		c->s->job.exclusive = true;
		return;
	}
	if (strcmp(v, "user") && strcmp(v, "mcs") && strcmp(v, "topo")) {
		sb_err(c, line, col, "--exclusive", "found \"%s\", expected nothing, user, mcs or topo",
		       v);
		return;
	}
	if (!c->s->ignored)
		c->s->ignored = json_object();
	json_object_set_new(c->s->ignored, "#SBATCH --exclusive", json_string(v));
	drv_jobspec_warn(c->s, "#SBATCH --exclusive=%s: kept, not acted on by drover (the job "
			 "shares its nodes as without it; plain --exclusive gives it whole nodes)", v);
}

/* Options that set one string or flag. False: o is not one of them. */
static bool opt_plain(struct sb_ctx *c, const struct sb_opt *o, const char *v, int line, int col)
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
	case O_OUTPUT:
		str = &s->slurm.output;
		break;
	case O_ERROR:
		str = &s->slurm.error;
		break;
	case O_INPUT:
		str = &s->slurm.input;
		break;
	case O_OPEN_MODE:
		if (!v || (strcmp(v, "append") && strcmp(v, "truncate") && strcmp(v, "a") &&
			   strcmp(v, "t"))) {
			sb_err(c, line, col, "--open-mode", "found \"%s\", expected append or truncate",
			       v ? v : "");
			return true;
		}
		str = &s->slurm.open_mode;
		v = v[0] == 'a' ? "append" : "truncate";
		break;
	case O_EXPORT:
		str = &c->export_raw;
		c->export_line = line;
		c->export_col = col;
		break;
	case O_NODELIST:
		str = &c->nodelist;
		c->nodelist_line = line;
		c->nodelist_col = col;
		break;
	case O_EXCLUDE:
		str = &c->exclude;
		c->exclude_line = line;
		c->exclude_col = col;
		break;
	case O_CONSTRAINT:
		str = &c->constraint;
		c->constraint_line = line;
		c->constraint_col = col;
		break;
	case O_REQUEUE:
	case O_NO_REQUEUE:
		s->slurm.requeue = o->id == O_REQUEUE;
		s->slurm.no_requeue = o->id == O_NO_REQUEUE;
		return true;
	case O_HOLD:
		s->slurm.hold = true;   /* submitted with a user hold (CONTRACTS.md section 4) */
		return true;
	case O_EXCLUSIVE:
		opt_exclusive(c, v, line, col);
		return true;
	default:
		return false;
	}
	drv_free(*str);
	*str = drv_strdup(v);
	return true;
}

/* Acts on one option occurrence. */
void sb_apply(struct sb_ctx *c, struct sb_comp *k, const struct sb_opt *o, const char *v,
	      int line, int col)
{
	struct drv_jobspec *s = c->s;
	char on[48];
	int64_t x;

	snprintf(on, sizeof(on), "--%s", o->name);
	if (v && strlen(v) > DRV_SPEC_MAX_STRING) {
		sb_err(c, line, col, on, "found a value over the length limit");
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
		sb_err(c, line, col, on, "found an option that only prints, expected job options");
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
		struct sb_gpureq *g = o->id == O_GPUS ? &k->gpus : o->id == O_GPUS_PER_NODE ? &k->gpn
											 : &k->gpt;
		if (!parse_gpureq(v, false, g))
			sb_err(c, line, col, on, "found \"%s\", expected a GPU count such as 8 or h100:8", v);
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
			sb_err(c, line, col, on, "found \"%s\", expected a time: MM, MM:SS, HH:MM:SS, "
			       "D-HH, D-HH:MM or D-HH:MM:SS", v);
		else
			c->time = x;
		break;
	case O_SIGNAL:
		opt_signal(c, on, v, line, col);
		break;
	case O_BEGIN: {
		int64_t at;

		if (drv_slurm_begin_parse(v, 0, &at) < 0) {
			sb_err(c, line, col, on, "found \"%s\", expected now[+N[seconds|minutes|hours|"
			       "days|weeks]], YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], midnight, noon, "
			       "teatime, today or tomorrow", v);
			break;
		}
		drv_free(c->s->slurm.begin);
		c->s->slurm.begin = drv_strdup(v);
		break;
	}
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
			sb_err(c, line, col, on, "found \"%s\", expected a non-negative integer", v);
		else
			s->job.priority = (int32_t)x;
		break;
	default: /* opt_plain's */
		break;
	}
}

const struct sb_opt *sb_find_long(struct sb_ctx *c, const char *name, size_t len, int line,
				  int col)
{
	const struct sb_opt *hit = NULL;
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
	if (n == 0 && len > 10 && !strncmp(name, "container-", 10))
		/* pyxis': drover runs the batch script itself on the host */
		sb_err(c, line, col, NULL, "found pyxis' option \"--%.*s\" on the batch script, "
		       "expected it on srun: the script runs on the host, and "
		       "`srun --%.*s ...` runs a step in a container", (int)DRV_MIN(len, 64), name,
		       (int)DRV_MIN(len, 64), name);
	else if (n == 0)
		sb_err(c, line, col, NULL, "found unknown option \"--%.*s\", expected an sbatch option",
		       (int)DRV_MIN(len, 64), name);
	else
		sb_err(c, line, col, NULL, "found ambiguous option \"--%.*s\", expected one of: %s",
		       (int)DRV_MIN(len, 64), name, cands);
	return NULL;
}

const struct sb_opt *sb_find_short(char ch)
{
	size_t i;
	for (i = 0; i < DRV_ARRAY_SIZE(opts_tab); i++)
		if (opts_tab[i].shrt == ch)
			return &opts_tab[i];
	return NULL;
}
