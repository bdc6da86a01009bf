/*
 * client_srun.c: `srun` (drover called by that name, or `drover srun`) and
 * `salloc`, docs/slurm.md.
 *
 * Inside a job (SLURM_JOB_ID in the environment, or --jobid) srun asks the
 * controller for a job step (POST /v1/jobs/ID/steps) with the job's own
 * credential, DROVER_JOB_TOKEN (or the user's token, for --jobid from
 * outside), relays its tasks' output (GET /v1/jobs/ID/logs?step=S&task=R,
 * followed by offset) to its stdout and stderr or to -o/-e files, waits,
 * and exits with the worst task's status as Slurm's srun does. Ctrl-C or
 * SIGTERM cancels the step. Outside a job, srun submits a job whose batch
 * script is this same srun with the step's options (an allocation and its
 * step in one go) and relays step 0 of it. salloc submits a job that only
 * holds its allocation, runs a shell (or the command given) with
 * SLURM_JOB_ID set, in which srun starts steps, and cancels the job when
 * the shell exits.
 *
 * Options are parsed as srun's (getopt_long, stopping at the command);
 * allocation options outside a job become #SBATCH lines. Every option
 * drover does not act on is named in a warning.
 */
#include "client_int.h"

#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/hostlist.h"
#include "drover/http.h"
#include "drover/json.h"
#include "drover/spec.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

struct srun {
	const char *prog;          /* "srun" or "salloc" */
	long long ntasks, nodes, tpn, cpt, gpt, gpn, het_group;
	const char *gpu_bind, *output, *error, *input, *export_, *container_image, *jobid;
	const char *container_mounts, *container_workdir;
	const char *chdir_, *nodelist;
	bool label, unbuffered, kill_on_bad_exit, overlap, pty, quiet;
	/* allocation-only options (outside a job): #SBATCH lines */
	char **alloc;
	size_t nalloc, acap;
	char **argv;               /* the command */
	int argc;
};

static void say(const struct srun *o, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(const struct srun *o, const char *kind, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s%s", o->prog, kind, *kind ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void add_alloc(struct srun *o, const char *name, const char *val)
{
	size_t n = strlen(name) + (val ? strlen(val) : 0) + 8;
	char *line = drv_malloc(n);

	snprintf(line, n, "--%s%s%s", name, val ? "=" : "", val ? val : "");
	DRV_GROW(o->alloc, o->nalloc + 1, o->acap);
	o->alloc[o->nalloc++] = line;
}

enum {
	OPT_TPN = 256, OPT_GPT, OPT_GPN, OPT_GPU_BIND, OPT_KOBE, OPT_EXPORT, OPT_HET, OPT_IMAGE,
	OPT_MOUNTS, OPT_WORKDIR, OPT_JOBID, OPT_OVERLAP, OPT_PTY, OPT_GRES, OPT_MEM, OPT_EXCLUSIVE, OPT_MPI, OPT_IGNORED,
	OPT_HELP,
};


static const struct option long_opts[] = {
	{ "ntasks", required_argument, NULL, 'n' },
	{ "nodes", required_argument, NULL, 'N' },
	{ "ntasks-per-node", required_argument, NULL, OPT_TPN },
	{ "cpus-per-task", required_argument, NULL, 'c' },
	{ "gpus-per-task", required_argument, NULL, OPT_GPT },
	{ "gpus-per-node", required_argument, NULL, OPT_GPN },
	{ "gpu-bind", required_argument, NULL, OPT_GPU_BIND },
	{ "label", no_argument, NULL, 'l' },
	{ "unbuffered", no_argument, NULL, 'u' },
	{ "output", required_argument, NULL, 'o' },
	{ "error", required_argument, NULL, 'e' },
	{ "input", required_argument, NULL, 'i' },
	{ "kill-on-bad-exit", optional_argument, NULL, 'K' },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "het-group", required_argument, NULL, OPT_HET },
	{ "container-image", required_argument, NULL, OPT_IMAGE },
	{ "container-mounts", required_argument, NULL, OPT_MOUNTS },
	{ "container-workdir", required_argument, NULL, OPT_WORKDIR },
	{ "jobid", required_argument, NULL, OPT_JOBID },
	{ "overlap", no_argument, NULL, OPT_OVERLAP },
	{ "pty", no_argument, NULL, OPT_PTY },
	{ "nodelist", required_argument, NULL, 'w' },
	{ "job-name", required_argument, NULL, 'J' },
	{ "time", required_argument, NULL, 't' },
	{ "partition", required_argument, NULL, 'p' },
	{ "account", required_argument, NULL, 'A' },
	{ "gres", required_argument, NULL, OPT_GRES },
	{ "gpus", required_argument, NULL, 'G' },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "chdir", required_argument, NULL, 'D' },
	{ "exclusive", optional_argument, NULL, OPT_EXCLUSIVE },
	{ "mpi", required_argument, NULL, OPT_MPI },
	{ "quiet", no_argument, NULL, 'Q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static const char usage_text[] =
	"usage: srun [OPTIONS] COMMAND [ARGS...]\n"
	"       salloc [OPTIONS] [COMMAND [ARGS...]]\n\n"
	"Inside a job (SLURM_JOB_ID set, or --jobid): starts a job step on the job's nodes.\n"
	"Outside one: srun allocates and runs in one go; salloc allocates and runs a shell.\n\n"
	"  -n, --ntasks=N            tasks of the step\n"
	"  -N, --nodes=N             nodes of the step\n"
	"      --ntasks-per-node=N   tasks on each node\n"
	"  -c, --cpus-per-task=N     CPUs of each task\n"
	"      --gpus-per-task=N     GPUs of each task (its own)\n"
	"      --gpus-per-node=N     GPUs of the step on each node\n"
	"      --gpu-bind=B          none, closest, single:N, map_gpu:ID[,ID...]\n"
	"  -l, --label               prefix each line with the task's rank\n"
	"  -u, --unbuffered          relay output as it comes (drover always does)\n"
	"  -o, --output=PATTERN      tasks' stdout into files (%j %s %t %n %N %u %x %%)\n"
	"  -e, --error=PATTERN       tasks' stderr into files\n"
	"  -K, --kill-on-bad-exit    stop every task when one exits non-zero\n"
	"      --export=ALL|NONE|VARS  the environment the tasks get (default ALL)\n"
	"      --het-group=N         the component of a heterogeneous job\n"
	"      --container-image=IMG run in a container of [REGISTRY#]IMAGE[:TAG] (pyxis'\n"
	"                            form; needs nodes whose agents run podman)\n"
	"      --container-mounts=SRC[:DST[:ro]][,...]  bind mounts (under host_path_allow)\n"
	"      --container-workdir=DIR  the container's working directory (default: the image's)\n"
	"      --jobid=ID            a step of job ID (from outside it)\n"
	"      --overlap             share the job's resources with other steps (always)\n"
	"      --pty                 task 0 on a terminal: ours, relayed (input, size, ^C)\n"
	"  -w, --nodelist=HOSTS      the step's nodes among the job's (outside one: the job's)\n"
	"  -J, -t, -p, -A, -G, --gres, --mem, -D: allocation options outside a job\n";

static const char salloc_usage_text[] =
	"usage: salloc [OPTIONS] [COMMAND [ARGS...]]\n\n"
	"Makes an allocation (a job that only holds it), says \"salloc: Granted job allocation N\",\n"
	"runs COMMAND (default $SHELL) with SLURM_JOB_ID set, in which srun starts steps of the\n"
	"job, and cancels the job when COMMAND ends.\n\n"
	"  -N, --nodes=N             nodes of the allocation\n"
	"  -n, --ntasks=N            tasks (SLURM_NTASKS)\n"
	"      --ntasks-per-node=N   tasks on each node\n"
	"  -c, --cpus-per-task=N     CPUs of each task\n"
	"      --gpus-per-task=N     GPUs of each task\n"
	"      --gpus-per-node=N     GPUs on each node\n"
	"  -G, --gpus=N              GPUs of the whole allocation\n"
	"      --gres=gpu[:TYPE]:N   GPUs on each node\n"
	"      --mem=SIZE            memory on each node\n"
	"  -J, --job-name=NAME       the job's name\n"
	"  -t, --time=TIME           the time limit\n"
	"  -p, --partition=PARTS     the pools it may use\n"
	"  -A, --account=NAME        the tenant\n"
	"  -D, --chdir=DIR           where COMMAND and the job run\n"
	"      --exclusive           whole nodes for a new allocation (in a job: warned)\n"
	"  -Q, --quiet               no informational lines\n"
	"  -v, --verbose             more of them\n";

static bool count(const char *v, long long min, long long *out)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(v, &end, 10);
	/* -N MIN-MAX: drover takes MIN */
	if (end != v && *end == '-' && end[1])
		end += strlen(end);
	if (errno || end == v || *end || x < min || x > 1000000)
		return false;
	*out = x;
	return true;
}

static int bad_count(struct srun *o, const char *opt, const char *v)
{
	say(o, "error", "invalid value for %s: \"%s\" (expected a whole number)", opt, v);
	return -1;
}

/* One option; -1 after an error was said. */
static int one_opt(struct srun *o, int c, const char *v)
{
	switch (c) {
	case 'n': return count(v, 1, &o->ntasks) ? 0 : bad_count(o, "--ntasks", v);
	case 'N': return count(v, 1, &o->nodes) ? 0 : bad_count(o, "--nodes", v);
	case OPT_TPN: return count(v, 1, &o->tpn) ? 0 : bad_count(o, "--ntasks-per-node", v);
	case 'c': return count(v, 1, &o->cpt) ? 0 : bad_count(o, "--cpus-per-task", v);
	case OPT_GPT: return count(v, 0, &o->gpt) ? 0 : bad_count(o, "--gpus-per-task", v);
	case OPT_GPN: return count(v, 0, &o->gpn) ? 0 : bad_count(o, "--gpus-per-node", v);
	case OPT_HET: return count(v, 0, &o->het_group) ? 0 : bad_count(o, "--het-group", v);
	case OPT_GPU_BIND: o->gpu_bind = v; return 0;
	case 'l': o->label = true; return 0;
	case 'u': o->unbuffered = true; return 0;
	case 'o': o->output = v; return 0;
	case 'e': o->error = v; return 0;
	case 'i': o->input = v; return 0;
	case 'K': o->kill_on_bad_exit = !v || strcmp(v, "0") != 0; return 0;
	case OPT_EXPORT: o->export_ = v; return 0;
	case OPT_IMAGE: o->container_image = v; return 0;
	case OPT_MOUNTS: o->container_mounts = v; return 0;
	case OPT_WORKDIR: o->container_workdir = v; return 0;
	case OPT_JOBID: o->jobid = v; return 0;
	case OPT_OVERLAP: o->overlap = true; return 0;
	case OPT_PTY: o->pty = true; return 0;
	case 'w': o->nodelist = v; return 0;
	case 'D': o->chdir_ = v; add_alloc(o, "chdir", v); return 0;
	case 'J': add_alloc(o, "job-name", v); return 0;
	case 't': add_alloc(o, "time", v); return 0;
	case 'p': add_alloc(o, "partition", v); return 0;
	case 'A': add_alloc(o, "account", v); return 0;
	case 'G': add_alloc(o, "gpus", v); return 0;
	case OPT_GRES: add_alloc(o, "gres", v); return 0;
	case OPT_MEM: add_alloc(o, "mem", v); return 0;
	case OPT_EXCLUSIVE: add_alloc(o, "exclusive", v); return 0;
	case 'Q': o->quiet = true; return 0;
	case 'v': return 0;
	case OPT_MPI:
		say(o, "warning", "--mpi=%s is not acted on: drover sets RANK, WORLD_SIZE and "
		    "SLURM_PROCID; no MPI plugin", v);
		return 0;
	default:
		return -1;
	}
}

/* Parses argv; 0 with the command in o->argv, 1 after --help, -1 on error. */
static int parse(struct srun *o, int argc, char **argv)
{
	int c;

	o->gpt = o->gpn = o->het_group = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+n:N:c:luo:e:i:KJ:t:p:A:G:D:Qvhw:", long_opts, NULL)) !=
	       -1) {
		if (c == OPT_HELP || c == 'h') {   /* Slurm's srun takes -h too */
			fputs(strcmp(o->prog, "salloc") ? usage_text : salloc_usage_text, stdout);
			return 1;
		}
		if (c == '?') {
			if (optopt)
				say(o, "error", "unrecognized option '-%c' (see %s --help)", optopt,
				    o->prog);
			else
				say(o, "error", "unrecognized option '%s' (see %s --help)",
				    argv[optind - 1], o->prog);
			return -1;
		}
		if (c == ':') {
			say(o, "error", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		}
		if (one_opt(o, c, optarg) < 0)
			return -1;
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	return 0;
}

/* --- the environment the tasks get (--export) ------------------------------ */

static bool exported(const char *mode, const char *kv, bool *set_only)
{
	size_t klen = strcspn(kv, "=");
	char *copy, *p, *next;
	bool all = false, hit = false;

	*set_only = false;
	if (!strncmp(kv, "SLURM_", 6))
		return true;
	if (!mode || !strcmp(mode, "ALL"))
		return true;
	copy = drv_strdup(mode);
	for (p = copy; p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		if (!strcmp(p, "ALL"))
			all = true;
		else if (strlen(p) == klen && !strncmp(p, kv, klen))
			hit = true;
	}
	drv_free(copy);
	return all || hit;
}

static json_t *task_env(const struct srun *o)
{
	json_t *env = json_object();
	bool dummy;

	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char *k;

		if (!eq || eq == *e || !exported(o->export_, *e, &dummy))
			continue;
		k = drv_strndup(*e, (size_t)(eq - *e));
		json_object_set_new(env, k, json_string(eq + 1));
		drv_free(k);
	}
	/* NAME=VALUE entries of --export */
	if (o->export_ && strchr(o->export_, '=')) {
		char *copy = drv_strdup(o->export_), *p, *next;

		for (p = copy; p; p = next) {
			char *eq;

			next = strchr(p, ',');
			if (next)
				*next++ = '\0';
			eq = strchr(p, '=');
			if (eq && eq != p) {
				*eq = '\0';
				json_object_set_new(env, p, json_string(eq + 1));
			}
		}
		drv_free(copy);
	}
	/* srun's umask, as Slurm's srun passes it to its tasks */
	{
		mode_t m = umask(0);
		char mask[8];

		umask(m);
		snprintf(mask, sizeof(mask), "%04o", (unsigned)m & 0777);
		json_object_set_new(env, "SLURM_UMASK", json_string(mask));
	}
	return env;
}

/* --- talking to the controller -------------------------------------------- */

struct conn {
	struct drv_client_conf conf;
	struct drv_client *c;
	const struct srun *o;
};

static int conn_open(struct conn *k, const struct srun *o, bool job_token)
{
	char err[512];
	const char *jt = job_token ? getenv("DROVER_JOB_TOKEN") : NULL;

	k->o = o;
	if (drv_client_conf_resolve(&k->conf, NULL, jt && *jt ? jt : NULL, NULL, err,
				    sizeof(err)) < 0) {
		say(o, "error", "%s", err);
		return -1;
	}
	k->c = drv_client_new(&k->conf);
	return 0;
}

static void conn_close(struct conn *k)
{
	drv_client_free(k->c);
	drv_client_conf_release(&k->conf);
}

/* One call; 0 on 2xx (reply kept), else the status (>0) or -1 (no reply), said unless quiet. */
static int call(struct conn *k, const char *method, const char *path, const char *body,
		struct drv_client_reply *rep, bool quiet)
{
	char err[512];
	char *msg;
	long st;

	memset(rep, 0, sizeof(*rep));
	if (drv_client_call(k->c, method, path, body ? "application/json" : NULL, body,
			    body ? strlen(body) : 0, 0, rep, err, sizeof(err))) {
		if (!quiet)
			say(k->o, "error", "%s", err);
		return -1;
	}
	if (rep->status >= 200 && rep->status < 300)
		return 0;
	st = rep->status;
	if (!quiet) {
		msg = drv_client_reply_error(rep);
		say(k->o, "error", "%s", msg);
		drv_free(msg);
	}
	drv_client_reply_release(rep);
	return (int)st;
}

/* --- relaying output ------------------------------------------------------ */

struct relay {
	long long off[2];
	bool mid_line[2];
	FILE *f[2];                /* -o/-e files; NULL: our stdout/stderr */
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void emit(const struct srun *o, struct relay *t, int rank, int stream, const char *b,
		 size_t n)
{
	FILE *f = t->f[stream] ? t->f[stream] : stream ? stderr : stdout;

	for (size_t i = 0; i < n; i++) {
		if (o->label && !t->mid_line[stream])
			fprintf(f, "%d: ", rank);
		fputc(b[i], f);
		t->mid_line[stream] = b[i] != '\n';
	}
	fflush(f);
}

/* New output of every task since the last look. */
static void pump(struct conn *k, const struct srun *o, unsigned long long job, int step,
		 struct relay *ts, int n)
{
	static const char *const names[2] = { "stdout", "stderr" };
	char path[256];

	for (int r = 0; r < n; r++)
		for (int s = 0; s < 2; s++)
			for (int more = 1; more;) {
				struct drv_client_reply rep;

				more = 0;
				snprintf(path, sizeof(path),
					 "/v1/jobs/%llu/logs?step=%d&task=%d&stream=%s&offset=%lld",
					 job, step, r, names[s], ts[r].off[s]);
				if (call(k, "GET", path, NULL, &rep, true) != 0)
					continue;   /* not started yet, or its agent away: later */
				if (rep.len)
					emit(o, &ts[r], r, s, rep.body, rep.len);
				if (rep.next_offset > ts[r].off[s]) {
					ts[r].off[s] = rep.next_offset;
					more = rep.len >= (1u << 20);
				}
				drv_client_reply_release(&rep);
			}
}

/* The output files of -o/-e, one per task when the pattern names the task. */
static int open_files(const struct srun *o, const json_t *step, struct relay *ts, int n)
{
	const json_t *tasks = json_object_get(step, "tasks");
	unsigned long long job = (unsigned long long)drv_json_int(step, "job", 0);
	int sid = (int)drv_json_int(step, "step", 0);
	const char *pats[2] = { o->output, o->error ? o->error : o->output };
	FILE *shared[2] = { NULL, NULL };
	char path[PATH_MAX], first[2][PATH_MAX] = { "", "" };

	for (int s = 0; s < 2; s++) {
		if (!pats[s])
			continue;
		for (int r = 0; r < n; r++) {
			const json_t *t = json_array_get(tasks, (size_t)r);
			struct drv_slurm_pattern v = {
				.job_id = job, .array_task_id = -1, .job_name = getenv("SLURM_JOB_NAME"),
				.user = getenv("USER"), .node = drv_json_str(t, "node"),
				.node_id = drv_json_int(t, "node_id", 0), .task_id = r, .step_id = sid,
			};

			drv_slurm_pattern_expand(pats[s], &v, path, sizeof(path));
			if (s == 1 && !o->error && ts[r].f[0]) {
				ts[r].f[1] = ts[r].f[0];   /* -o alone: stderr with stdout */
				continue;
			}
			if (!strcmp(path, first[s]) && shared[s]) {
				ts[r].f[s] = shared[s];
				continue;
			}
			ts[r].f[s] = fopen(path, "w");
			if (!ts[r].f[s]) {
				say(o, "error", "cannot open %s: %s", path, strerror(errno));
				return -1;
			}
			snprintf(first[s], sizeof(first[s]), "%s", path);
			shared[s] = ts[r].f[s];
		}
	}
	return 0;
}

static void close_files(struct relay *ts, int n)
{
	FILE *seen[2048];
	int ns = 0;

	for (int r = 0; r < n; r++)
		for (int s = 0; s < 2; s++) {
			bool dup = false;

			if (!ts[r].f[s])
				continue;
			for (int x = 0; x < ns; x++)
				dup |= seen[x] == ts[r].f[s];
			if (!dup && ns < 2048) {
				seen[ns++] = ts[r].f[s];
				fclose(ts[r].f[s]);
			}
		}
}

/* srun's exit status from the step's end: the worst task's, as Slurm's;
 * tasks drover stopped (--kill-on-bad-exit, a cancel) count only when no
 * task failed by itself. */
static int step_status(const struct srun *o, const json_t *step)
{
	const json_t *tasks = json_object_get(step, "tasks"), *t;
	size_t i;
	int worst = 0, stopped = 0;

	json_array_foreach(tasks, i, t) {
		const json_t *ec = json_object_get(t, "exit_code");
		int sig = (int)drv_json_int(t, "signal", 0), code;
		const char *st = drv_json_str(t, "state"), *node = drv_json_str(t, "node");
		const char *why = drv_json_str(t, "reason");

		if (json_is_integer(ec) && json_integer_value(ec) == 0 && !sig)
			continue;
		if (sig) {
			code = 128 + sig;
			say(o, "error", "%s: task %zu: %s", node ? node : "?", i,
			    sig == SIGKILL ? "Killed" : sig == SIGTERM ? "Terminated" : strsignal(sig));
		} else if (json_is_integer(ec)) {
			code = (int)json_integer_value(ec);
			say(o, "error", "%s: task %zu: Exited with exit code %d", node ? node : "?", i,
			    code);
		} else {
			code = 1;
			say(o, "error", "%s: task %zu: %s%s%s", node ? node : "?", i,
			    st ? st : "failed", why && *why ? ": " : "", why && *why ? why : "");
		}
		if (st && !strcmp(st, "cancelled"))
			stopped = code > stopped ? code : stopped;
		else if (code > worst)
			worst = code;
	}
	return worst ? worst : stopped;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Follows step sid of job until it ends; returns srun's exit status. */
static int follow(struct conn *k, const struct srun *o, unsigned long long job, int sid,
		  json_t *step)
{
	int n = (int)json_array_size(json_object_get(step, "tasks")), rc;
	struct relay *ts = drv_calloc((size_t)n + 1, sizeof(*ts));
	bool cancelled = false;
	char path[128];
	long nap = 20;

	if (open_files(o, step, ts, n) < 0) {
		rc = 1;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (;;) {
		struct drv_client_reply rep;
		const char *state;

		pump(k, o, job, sid, ts, n);
		if (interrupted && !cancelled) {
			snprintf(path, sizeof(path), "/v1/jobs/%llu/steps/%d/cancel", job, sid);
			say(o, "", "Cancelled step %llu.%d", job, sid);
			if (call(k, "POST", path, "{}", &rep, false) == 0)
				drv_client_reply_release(&rep);
			cancelled = true;
		}
		snprintf(path, sizeof(path), "/v1/jobs/%llu/steps/%d", job, sid);
		if (call(k, "GET", path, NULL, &rep, false) != 0) {
			rc = 1;
			goto out;
		}
		state = drv_json_str(rep.json, "state");
		if (state && strcmp(state, "running") != 0) {
			pump(k, o, job, sid, ts, n);
			rc = step_status(o, rep.json);
			drv_client_reply_release(&rep);
			break;
		}
		drv_client_reply_release(&rep);
		nap_ms(nap);
		nap = nap < 200 ? nap * 2 : 200;
	}
out:
	close_files(ts, n);
	drv_free(ts);
	return rc;
}

/* --- inside a job: a step -------------------------------------------------- */

static long long env_count(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long long x;

	if (!v || !*v)
		return 0;
	x = strtoll(v, &end, 10);
	return *end == '\0' || *end == '(' ? x : 0;
}

/* srun's input variable name as it applies to this step: in a
 * heterogeneous job (SLURM_HET_SIZE set) the component's, name with the
 * _HET_GROUP_<n> suffix (component 0 without --het-group, as Slurm's srun);
 * the job-wide value would count every component's nodes. */
static long long step_count(const struct srun *o, const char *name)
{
	char het[96];

	if (!getenv("SLURM_HET_SIZE"))
		return env_count(name);
	snprintf(het, sizeof(het), "%s_HET_GROUP_%lld", name, o->het_group > 0 ? o->het_group : 0);
	return env_count(het);
}

static char *step_body(struct srun *o)
{
	json_t *b = json_object(), *argv = json_array();
	long long N = o->nodes, n = o->ntasks, tpn = o->tpn;
	char cwd[PATH_MAX];
	char *text;

	/* srun's input variables, as Slurm's srun reads them */
	if (!tpn && !o->ntasks && !o->nodes)
		tpn = step_count(o, "SLURM_NTASKS_PER_NODE");
	if (!N)
		N = step_count(o, "SLURM_NNODES");
	if (!n && (o->nodes || tpn))
		n = tpn ? tpn * (N ? N : 1) : N;
	if (!n)
		n = step_count(o, "SLURM_NTASKS");
	if (n && N && n < N) {
		if (o->nodes)
			say(o, "warning", "can't run %lld processes on %lld nodes, setting nnodes to "
			    "%lld", n, N, n);
		N = n;
	}
	for (int i = 0; i < o->argc; i++)
		json_array_append_new(argv, json_string(o->argv[i]));
	json_object_set_new(b, "argv", argv);
	json_object_set_new(b, "env", task_env(o));
	if (o->chdir_)
		json_object_set_new(b, "cwd", json_string(o->chdir_));
	else if (getcwd(cwd, sizeof(cwd)))
		json_object_set_new(b, "cwd", json_string(cwd));
	if (n)
		json_object_set_new(b, "ntasks", json_integer(n));
	if (N)
		json_object_set_new(b, "nodes", json_integer(N));
	if (tpn)
		json_object_set_new(b, "ntasks_per_node", json_integer(tpn));
	if (o->cpt)
		json_object_set_new(b, "cpus_per_task", json_integer(o->cpt));
	if (o->gpt >= 0)
		json_object_set_new(b, "gpus_per_task", json_integer(o->gpt));
	if (o->gpn >= 0)
		json_object_set_new(b, "gpus_per_node", json_integer(o->gpn));
	if (o->het_group >= 0)
		json_object_set_new(b, "het_group", json_integer(o->het_group));
	if (o->gpu_bind)
		json_object_set_new(b, "gpu_bind", json_string(o->gpu_bind));
	if (o->kill_on_bad_exit)
		json_object_set_new(b, "kill_on_bad_exit", json_true());
	if (o->nodelist)
		json_object_set_new(b, "nodelist", json_string(o->nodelist));
	if (o->pty) {
		struct winsize ws;

		json_object_set_new(b, "pty", json_true());
		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
			json_object_set_new(b, "pty_rows", json_integer(ws.ws_row));
			json_object_set_new(b, "pty_cols", json_integer(ws.ws_col));
		}
	}
	if (o->container_image)
		json_object_set_new(b, "container_image", json_string(o->container_image));
	if (o->container_mounts)
		json_object_set_new(b, "container_mounts", json_string(o->container_mounts));
	if (o->container_workdir)
		json_object_set_new(b, "container_workdir", json_string(o->container_workdir));
	text = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	return text;
}

/* Slurm's srun first confirms the allocation: an unknown job, or one that
 * is over, is said in its words (exit 1). 0 when job runs (or may). */
static int confirm_job(struct conn *k, const struct srun *o, unsigned long long job)
{
	struct drv_client_reply rep;
	char path[64];
	const char *st;
	int rc;

	snprintf(path, sizeof(path), "/v1/jobs/%llu", job);
	rc = call(k, "GET", path, NULL, &rep, true);
	if (rc == 404) {
		say(o, "error", "Unable to confirm allocation for job %llu: Invalid job id specified",
		    job);
	} else if (rc == 0) {
		st = drv_json_str(rep.json, "state");
		rc = st && strcmp(st, "running") && strcmp(st, "pending") &&
		     strcmp(st, "scheduled") && strcmp(st, "preempted");
		if (rc)
			say(o, "error", "Slurm job %llu has expired", job);
		drv_client_reply_release(&rep);
		if (!rc)
			return 0;
	} else {
		return 0;   /* the step's own request says what is wrong */
	}
	say(o, "", "Check SLURM_JOB_ID environment variable. Expired or invalid job %llu", job);
	return -1;
}

/* Waits for step sid to end (its other tasks run without a terminal and
 * their output is not relayed, as Slurm's --pty sends it to /dev/null). */
static int wait_step(struct conn *k, const struct srun *o, unsigned long long job, int sid)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%llu/steps/%d", job, sid);
	for (long nap = 20;; nap = nap < 200 ? nap * 2 : 200) {
		struct drv_client_reply rep;
		const char *state;
		int rc;

		if (call(k, "GET", path, NULL, &rep, false) != 0)
			return DRV_EXIT_FAIL;
		state = drv_json_str(rep.json, "state");
		if (state && strcmp(state, "running") != 0) {
			rc = step_status(o, rep.json);
			drv_client_reply_release(&rep);
			return rc;
		}
		drv_client_reply_release(&rep);
		nap_ms(nap);
	}
}

static struct termios pty_saved;
static volatile sig_atomic_t pty_raw;

/* SIGTERM or SIGHUP while our terminal is raw: back to cooked, then the
 * default end (closing the connection hangs the step's terminal up). */
static void on_pty_signal(int sig)
{
	if (pty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &pty_saved);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* srun --pty: our terminal is task 0's (GET .../steps/S/attach), raw while
 * it runs; then the step's status as for any step. */
static int run_pty(struct conn *k, const struct srun *o, unsigned long long job, int sid)
{
	struct drv_ws *w = NULL;
	char path[128], err[1024];
	long status = 0;
	int code;

	snprintf(path, sizeof(path), "/v1/jobs/%llu/steps/%d/attach", job, sid);
	if (drv_ws_connect(k->conf.server, path, k->conf.token, k->conf.ca_file,
			   "v5.channel.k8s.io", &w, &status, err, sizeof(err)) != 0) {
		say(o, "error", "step %llu.%d: %s", job, sid, err);
		return DRV_EXIT_FAIL;
	}
	signal(SIGINT, SIG_IGN);   /* ^C is a byte for the remote terminal */
	signal(SIGTERM, on_pty_signal);
	signal(SIGHUP, on_pty_signal);
	pty_raw = drv_client_tty_raw(&pty_saved);
	code = drv_client_ws_relay("srun: error", w, true, true);
	if (pty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &pty_saved);
	pty_raw = 0;
	drv_ws_close(w, 1000, NULL);
	drv_ws_free(w);
	(void)code;   /* task 0's; the step's status below counts every task */
	return wait_step(k, o, job, sid);
}

static int run_step(struct srun *o, unsigned long long job, bool job_token)
{
	struct conn k;
	struct drv_client_reply rep;
	char path[96], *body;
	int rc, sid;

	if (conn_open(&k, o, job_token) < 0)
		return DRV_EXIT_USAGE;
	if (confirm_job(&k, o, job) < 0) {
		conn_close(&k);
		return DRV_EXIT_FAIL;
	}
	body = step_body(o);
	snprintf(path, sizeof(path), "/v1/jobs/%llu/steps", job);
	rc = call(&k, "POST", path, body, &rep, false);
	free(body);
	if (rc != 0) {
		say(o, "error", "Unable to create step for job %llu", job);
		conn_close(&k);
		return rc == 400 ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	sid = (int)drv_json_int(rep.json, "step", 0);
	rc = o->pty ? run_pty(&k, o, job, sid) : follow(&k, o, job, sid, rep.json);
	drv_client_reply_release(&rep);
	conn_close(&k);
	return rc;
}

/* --- outside a job: an allocation first ------------------------------------- */

/* s in single quotes for sh, appended to b. */
static void sh_quote(struct drv_dynbuf *b, const char *s)
{
	drv_dynbuf_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			drv_dynbuf_add(b, "'\\''", 4);
		else
			drv_dynbuf_add(b, s, 1);
	}
	drv_dynbuf_add(b, "'", 1);
}

static void sh_word(struct drv_dynbuf *b, const char *s)
{
	drv_dynbuf_add(b, " ", 1);
	sh_quote(b, s);
}

static void opt_word(struct drv_dynbuf *b, const char *name, long long v)
{
	char w[64];

	snprintf(w, sizeof(w), "--%s=%lld", name, v);
	sh_word(b, w);
}

static void sopt_word(struct drv_dynbuf *b, const char *name, const char *v)
{
	size_t n = strlen(name) + strlen(v) + 4;
	char *w = drv_malloc(n);

	snprintf(w, n, "--%s=%s", name, v);
	sh_word(b, w);
	drv_free(w);
}

/* The job: #SBATCH lines of the allocation, then `exec SELF srun STEP... CMD`
 * (or, for salloc, a wait that lasts until the job is cancelled). */
static char *alloc_script(const struct srun *o, bool salloc)
{
	struct drv_dynbuf b;
	char self[PATH_MAX], cwd[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char line[64];
	char *out;

	drv_dynbuf_init(&b, 1 << 20);
	drv_dynbuf_addstr(&b, "#!/bin/sh\n");
	if (o->nodes) {
		snprintf(line, sizeof(line), "#SBATCH --nodes=%lld\n", o->nodes);
		drv_dynbuf_addstr(&b, line);
	}
	if (o->ntasks) {
		snprintf(line, sizeof(line), "#SBATCH --ntasks=%lld\n", o->ntasks);
		drv_dynbuf_addstr(&b, line);
	}
	if (o->tpn) {
		snprintf(line, sizeof(line), "#SBATCH --ntasks-per-node=%lld\n", o->tpn);
		drv_dynbuf_addstr(&b, line);
	}
	if (o->cpt) {
		snprintf(line, sizeof(line), "#SBATCH --cpus-per-task=%lld\n", o->cpt);
		drv_dynbuf_addstr(&b, line);
	}
	if (o->gpt >= 0) {
		snprintf(line, sizeof(line), "#SBATCH --gpus-per-task=%lld\n", o->gpt);
		drv_dynbuf_addstr(&b, line);
	}
	if (o->gpn >= 0) {
		snprintf(line, sizeof(line), "#SBATCH --gpus-per-node=%lld\n", o->gpn);
		drv_dynbuf_addstr(&b, line);
	}
	if (!o->chdir_ && getcwd(cwd, sizeof(cwd))) {
		/* the batch step runs where srun/salloc ran, as in Slurm */
		drv_dynbuf_addstr(&b, "#SBATCH");
		sopt_word(&b, "chdir", cwd);
		drv_dynbuf_addstr(&b, "\n");
	}
	if (o->nodelist) {
		drv_dynbuf_addstr(&b, "#SBATCH");
		sopt_word(&b, "nodelist", o->nodelist);
		drv_dynbuf_addstr(&b, "\n");
	}
	for (size_t i = 0; i < o->nalloc; i++) {
		drv_dynbuf_addstr(&b, "#SBATCH");
		sh_word(&b, o->alloc[i]);
		drv_dynbuf_addstr(&b, "\n");
	}
	if (salloc) {
		/* holds the allocation; salloc cancels the job when its shell exits */
		drv_dynbuf_addstr(&b, "exec sleep 2147483647\n");
	} else {
		self[n > 0 ? n : 0] = '\0';
		drv_dynbuf_addstr(&b, "exec");
		sh_word(&b, n > 0 ? self : "drover");
		sh_word(&b, "srun");
		if (o->label)
			sh_word(&b, "--label");
		if (o->kill_on_bad_exit)
			sh_word(&b, "--kill-on-bad-exit");
		if (o->gpu_bind)
			sopt_word(&b, "gpu-bind", o->gpu_bind);
		if (o->export_)
			sopt_word(&b, "export", o->export_);
		if (o->container_image)
			sopt_word(&b, "container-image", o->container_image);
		if (o->container_mounts)
			sopt_word(&b, "container-mounts", o->container_mounts);
		if (o->container_workdir)
			sopt_word(&b, "container-workdir", o->container_workdir);
		if (o->ntasks)
			opt_word(&b, "ntasks", o->ntasks);
		sh_word(&b, "--");
		for (int i = 0; i < o->argc; i++)
			sh_word(&b, o->argv[i]);
		drv_dynbuf_addstr(&b, "\n");
	}
	out = drv_dynbuf_take(&b, NULL);
	return out;
}

/* Submits the allocation job: its id, or 0 after saying why not. */
static unsigned long long submit_alloc(struct conn *k, const struct srun *o, bool salloc)
{
	char *script = alloc_script(o, salloc), err[512];
	struct drv_client_reply rep;
	unsigned long long id = 0;

	memset(&rep, 0, sizeof(rep));
	if (drv_client_call(k->c, "POST", "/v1/jobs", "text/x-shellscript", script,
			    strlen(script), 0, &rep, err, sizeof(err))) {
		say(o, "error", "%s", err);
		goto out;
	}
	if (rep.status < 200 || rep.status >= 300) {
		char *msg = drv_client_reply_error(&rep);

		say(o, "error", "Unable to allocate resources: %s", msg);
		drv_free(msg);
		drv_client_reply_release(&rep);
		goto out;
	}
	id = (unsigned long long)drv_json_int(rep.json, "id", 0);
	drv_client_reply_release(&rep);
out:
	drv_free(script);
	return id;
}

/* Waits until job id runs (1), ends (0: said why) or the user interrupts (-1). */
static int wait_running(struct conn *k, const struct srun *o, unsigned long long id,
			json_t **job)
{
	char path[64];
	bool said = false;

	snprintf(path, sizeof(path), "/v1/jobs/%llu", id);
	for (long nap = 20;; nap = nap < 500 ? nap * 2 : 500) {
		struct drv_client_reply rep;
		const char *st;

		if (interrupted)
			return -1;
		if (call(k, "GET", path, NULL, &rep, false) != 0)
			return 0;
		st = drv_json_str(rep.json, "state");
		/* running, or already over after it ran (a short job) */
		if (st && (!strcmp(st, "running") ||
			   json_is_string(json_object_get(rep.json, "start_time")))) {
			*job = json_incref(rep.json);
			drv_client_reply_release(&rep);
			return 1;
		}
		if (st && strcmp(st, "pending") && strcmp(st, "scheduled") && strcmp(st, "preempted")) {
			say(o, "error", "job %llu ended %s before it ran: %s", id, st,
			    drv_json_str(rep.json, "reason") ? drv_json_str(rep.json, "reason") : "");
			drv_client_reply_release(&rep);
			return 0;
		}
		if (!said && st && !strcmp(st, "pending")) {
			say(o, "", "job %llu queued and waiting for resources", id);
			said = true;
		}
		drv_client_reply_release(&rep);
		nap_ms(nap);
	}
}

static void cancel_job(struct conn *k, unsigned long long id)
{
	struct drv_client_reply rep;
	char path[64];

	snprintf(path, sizeof(path), "/v1/jobs/%llu/cancel", id);
	if (call(k, "POST", path, "{}", &rep, true) == 0)
		drv_client_reply_release(&rep);
}

/* srun outside a job: the allocation job, then its step 0 followed. */
static int alloc_and_run(struct srun *o)
{
	struct conn k;
	unsigned long long id;
	json_t *job = NULL;
	int rc = DRV_EXIT_FAIL, w;

	if (conn_open(&k, o, false) < 0)
		return DRV_EXIT_USAGE;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* --pty: an allocation that holds (salloc's), then our step on it */
	id = submit_alloc(&k, o, o->pty);
	if (!id)
		goto out;
	w = wait_running(&k, o, id, &job);
	if (w <= 0) {
		if (w < 0)
			cancel_job(&k, id);
		goto out;
	}
	json_decref(job);
	if (o->pty) {
		rc = run_step(o, id, false);
		cancel_job(&k, id);
		goto out;
	}
	/* the batch script starts step 0 at once */
	for (long nap = 20;; nap = nap < 200 ? nap * 2 : 200) {
		struct drv_client_reply rep;
		char path[64];

		if (interrupted) {
			cancel_job(&k, id);
			goto out;
		}
		snprintf(path, sizeof(path), "/v1/jobs/%llu/steps/0", id);
		if (call(&k, "GET", path, NULL, &rep, true) == 0) {
			rc = follow(&k, o, id, 0, rep.json);
			drv_client_reply_release(&rep);
			if (interrupted)
				cancel_job(&k, id);
			break;
		}
		snprintf(path, sizeof(path), "/v1/jobs/%llu", id);
		if (call(&k, "GET", path, NULL, &rep, false) != 0)
			goto out;
		if (strcmp(drv_json_str(rep.json, "state") ? drv_json_str(rep.json, "state") : "",
			   "running")) {
			say(o, "error", "job %llu ended %s before its step started: %s", id,
			    drv_json_str(rep.json, "state"), drv_json_str(rep.json, "reason"));
			drv_client_reply_release(&rep);
			goto out;
		}
		drv_client_reply_release(&rep);
		nap_ms(nap);
	}
out:
	conn_close(&k);
	return rc;
}

/* The job's node names (its tasks'), Slurm-compressed, and their count. */
static size_t job_nodelist(const json_t *job, char *out, size_t cap)
{
	const json_t *tasks = json_object_get(job, "tasks"), *t;
	const char *names[256];
	size_t n = 0, i;

	json_array_foreach(tasks, i, t) {
		const char *nm = drv_json_str(t, "node");
		bool dup = false;

		for (size_t x = 0; nm && x < n; x++)
			dup |= !strcmp(names[x], nm);
		if (nm && !dup && n < 256)
			names[n++] = nm;
	}
	drv_hostlist_compress(names, n, out, cap);
	return n;
}

int drv_client_cmd_salloc(int argc, char **argv)
{
	struct srun o = { .prog = "salloc" };
	struct conn k;
	unsigned long long id;
	json_t *job = NULL;
	int rc, w, status;
	char num[32], list[4096];
	pid_t pid;

	rc = parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? DRV_EXIT_OK : DRV_EXIT_USAGE;
	if (conn_open(&k, &o, false) < 0)
		return DRV_EXIT_USAGE;
	signal(SIGINT, on_signal);
	id = submit_alloc(&k, &o, true);
	rc = DRV_EXIT_FAIL;
	if (!id)
		goto out;
	w = wait_running(&k, &o, id, &job);
	if (w <= 0) {
		if (w < 0)
			cancel_job(&k, id);
		goto out;
	}
	say(&o, "", "Granted job allocation %llu", id);
	snprintf(num, sizeof(num), "%llu", id);
	setenv("SLURM_JOB_ID", num, 1);
	setenv("SLURM_JOBID", num, 1);
	snprintf(num, sizeof(num), "%zu", job_nodelist(job, list, sizeof(list)));
	setenv("SLURM_JOB_NUM_NODES", num, 1);
	setenv("SLURM_NNODES", num, 1);
	setenv("SLURM_JOB_NODELIST", list, 1);
	setenv("SLURM_NODELIST", list, 1);
	if (o.ntasks) {
		snprintf(num, sizeof(num), "%lld", o.ntasks);
		setenv("SLURM_NTASKS", num, 1);
	}
	json_decref(job);
	signal(SIGINT, SIG_IGN);   /* the shell's, while it runs */
	pid = fork();
	if (pid == 0) {
		const char *sh = getenv("SHELL");
		char *def[] = { (char *)(sh && *sh ? sh : "/bin/sh"), NULL };

		signal(SIGINT, SIG_DFL);
		execvp(o.argc ? o.argv[0] : def[0], o.argc ? o.argv : def);
		fprintf(stderr, "salloc: error: cannot run %s: %s\n", o.argc ? o.argv[0] : def[0],
			strerror(errno));
		_exit(127);
	}
	status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	say(&o, "", "Relinquishing job allocation %llu", id);
	cancel_job(&k, id);
	rc = pid < 0 ? DRV_EXIT_FAIL : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	conn_close(&k);
	return rc;
}

int drv_client_cmd_srun(int argc, char **argv)
{
	struct srun o = { .prog = "srun" };
	const char *jid;
	char *end;
	unsigned long long job;
	int rc;

	rc = parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? DRV_EXIT_OK : DRV_EXIT_USAGE;
	if (o.argc == 0) {
		say(&o, "fatal", "No command given to execute.");
		return DRV_EXIT_USAGE;
	}
	if (o.pty && !isatty(STDIN_FILENO)) {   /* Slurm's srun carries on without */
		say(&o, "error", "ioctl(TIOCGWINSZ): Inappropriate ioctl for device");
		say(&o, "error", "Not using a pseudo-terminal, disregarding --pty option");
		o.pty = false;
	}
	if (o.input)
		say(&o, "warning", "--input=%s is not acted on: a step's tasks read nothing on "
		    "their standard input", o.input);
	/* -u: output is relayed as it comes, with or without it */
	jid = o.jobid ? o.jobid : getenv("SLURM_JOB_ID");
	if (!jid || !*jid)
		return alloc_and_run(&o);
	job = strtoull(jid, &end, 10);
	if (*end || !job) {
		say(&o, "error", "invalid job id \"%s\"", jid);
		return DRV_EXIT_USAGE;
	}
	for (size_t i = 0; i < o.nalloc && !o.quiet; i++)
		if (!strcmp(o.alloc[i], "--exclusive"))
			say(&o, "warning", "--exclusive for a step (CPUs no other step of job %llu "
			    "shares) is not acted on: drover's steps share the job's CPUs, as "
			    "with --overlap", job);
		else
			say(&o, "warning", "%s is an allocation option: not acted on for a step of "
			    "job %llu", o.alloc[i], job);
	/* the job's own token only for the job it belongs to */
	{
		const char *own = getenv("SLURM_JOB_ID");
		bool mine = own && !strcmp(own, jid) && getenv("DROVER_JOB_TOKEN");

		rc = run_step(&o, job, mine);
	}
	return rc;
}
