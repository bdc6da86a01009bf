/*
 * slurm_sbatch.c: the sbatch face. `sbatch [options] [SCRIPT [ARGS...]]`
 * reads the script (a file, stdin when none is named, or --wrap's
 * command), parses it with the spec library with the command line's
 * options over its #SBATCH lines, and submits the canonical job to
 * POST /v1/jobs. It answers as Slurm's sbatch does:
 *
 *   Submitted batch job 42          (--parsable: "42")
 *   sbatch: Job 42 to start at 2026-12-01T21:40:00 using 8 processors on
 *     nodes gpu-[01-02] in partition gpu          (--test-only, stderr)
 *   sbatch: error: Batch job submission failed: Requested node
 *     configuration is not available              (then drover's reason)
 *   sbatch: warning: ...            (options read but not acted on)
 *
 * and exits 0 or 1, as sbatch does (a bad script or option included).
 */
#include "slurm_int.h"

#include "drover/common.h"
#include "drover/diag.h"
#include "drover/fsutil.h"
#include "drover/spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

struct sb_pass {
	const struct drv_opts *cmd;
	char **sargv;
	int sargc;
};

/* The parser's UNKNOWN hook: every option drover's table does not know is
 * an sbatch option for the spec parser (with its value when it takes one). */
static int pass_opt(const struct drv_option *row, int nargs, int argc, char **argv)
{
	struct sb_pass *sb = row->value;

	(void)nargs;
	sb->sargv[sb->sargc++] = argv[0];
	if (!cli_sbatch_takes_value(argv[0]))
		return 1;
	if (argc < 2) {
		fprintf(stderr, "sbatch: option '%s' requires an argument\n", argv[0]);
		return -1;
	}
	sb->sargv[sb->sargc++] = argv[1];
	return 2;
}

/* The script: --wrap's command in Slurm's wrapper, the file, or stdin. */
static int read_script(const char *wrap, const char *file, char **body, size_t *len)
{
	if (wrap) {
		static const char head[] = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n";
		size_t k = strlen(wrap);

		*len = sizeof(head) - 1 + k + 1;
		*body = drv_malloc(*len + 1);
		memcpy(*body, head, sizeof(head) - 1);
		memcpy(*body + sizeof(head) - 1, wrap, k);
		memcpy(*body + sizeof(head) - 1 + k, "\n", 2);
		return 0;
	}
	if (drv_file_read(file, 16u << 20, body, len)) {
		fprintf(stderr, "sbatch: error: Unable to open file %s\n", file);
		return 1;
	}
	if (!*len) {
		fprintf(stderr, "sbatch: error: Batch script is empty!\n");
		return 1;
	}
	if (strncmp(*body, "#!", 2)) {
		fprintf(stderr, "sbatch: error: This does not look like a batch script.  The first\n"
				"sbatch: error: line must start with #! followed by the path to an "
				"interpreter.\n"
				"sbatch: error: For instance: #!/bin/sh\n");
		return 1;
	}
	return 0;
}

/* Prints the refusal as sbatch does: Slurm's line, then drover's reason. */
static void refused(const struct drv_client_reply *r)
{
	const json_t *e = r->json ? json_object_get(r->json, "error") : NULL;
	const char *code = drv_json_str(e, "code");
	char *msg = drv_client_reply_error(r);

	if (code && !strcmp(code, "unsatisfiable") && msg &&
	    strstr(msg, "Invalid node name specified"))
		fprintf(stderr, "sbatch: error: Batch job submission failed: Invalid node name "
				"specified\nsbatch: error: %s\n", msg);
	else if (code && !strcmp(code, "unsatisfiable") && msg &&
		 strstr(msg, "distinct nodes that fit a task"))
		fprintf(stderr, "sbatch: error: Batch job submission failed: Node count "
				"specification invalid\nsbatch: error: %s\n", msg);
	else if (code && !strcmp(code, "unsatisfiable"))
		fprintf(stderr, "sbatch: error: Batch job submission failed: Requested node "
				"configuration is not available\nsbatch: error: %s\n", msg);
	else if (r->status == 401 || r->status == 403)
		fprintf(stderr, "sbatch: error: Batch job submission failed: Access/permission "
				"denied\nsbatch: error: %s\n", msg);
	else
		fprintf(stderr, "sbatch: error: Batch job submission failed: %s\n", msg);
	drv_free(msg);
}

/* --test-only: the dry run's answer in sbatch's words (on stderr, as
 * sbatch's info lines go). */
static void print_test_only(const json_t *j)
{
	char when[64], nodes[4096], part[256];

	if (json_is_true(json_object_get(j, "fits_now")) || drv_json_time(j, "start_time"))
		sl_time(drv_json_time(j, "start_time"), "Unknown", when, sizeof(when));
	else
		snprintf(when, sizeof(when), "Unknown");
	drv_json_text(j, "nodelist", nodes, sizeof(nodes));
	drv_json_text(j, "partition", part, sizeof(part));
	fprintf(stderr, "sbatch: Job %lld to start at %s using %lld processors on nodes %s in "
			"partition %s\n", (long long)drv_json_int(j, "id", 0), when,
		(long long)drv_json_int(j, "cpus", 1), nodes[0] ? nodes : "(null)", part);
}

/*
 * Where sbatch ran, as Slurm's records it: the submit directory (the
 * batch step runs there, or in --chdir taken relative to it, and its
 * output files are named from there), the host, and the umask the output
 * files are created with.
 */
static void submit_place(struct drv_jobspec *spec)
{
	char cwd[PATH_MAX], host[256], abs[PATH_MAX * 2], mask[8];
	mode_t m = umask(0);

	umask(m);
	if (getcwd(cwd, sizeof(cwd))) {
		spec->slurm.submit_dir = drv_strdup(cwd);
		for (int32_t g = 0; spec->run && g < spec->job.ngroups; g++) {
			char *wd = spec->run[g].working_dir;

			if (!wd || wd[0] == '/')
				continue;
			snprintf(abs, sizeof(abs), "%s/%s", cwd, wd);
			drv_free(wd);
			spec->run[g].working_dir = drv_strdup(abs);
		}
	}
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		spec->slurm.submit_host = drv_strdup(host);
	}
	snprintf(mask, sizeof(mask), "%04o", (unsigned)m & 0777);
	spec->slurm.umask = drv_strdup(mask);
}

/* Whether the submitter's variable name=... travels with the job under
 * --export=ALL: not drover's own (credentials, server addresses: the agent
 * gives the job its own) nor Slurm's (the server sets the job's SLURM_*;
 * a copy from a job sbatch ran in would name the wrong job). */
static bool exported_var(const char *kv)
{
	return strncmp(kv, "DROVER_", 7) && strncmp(kv, "SLURM_", 6) && strncmp(kv, "SBATCH_", 7) &&
	       strncmp(kv, "_=", 2) && strchr(kv, '=') != kv;
}

/*
 * The job's environment, as sbatch sends it: under --export=ALL (the
 * default) every variable of sbatch's environment (exported_var) that the
 * script's --export entries do not set themselves; in any mode, a bare
 * name in --export (a null value) takes its value from here, or is left
 * out with a warning when this environment has none.
 */
static void submit_env(struct drv_jobspec *spec)
{
	for (int32_t g = 0; spec->run && g < spec->job.ngroups; g++) {
		struct drv_task_run *r = &spec->run[g];
		bool all = !r->export_mode || !strcmp(r->export_mode, "ALL");
		int32_t given = r->nenv;

		for (int32_t i = 0; i < given; i++) {
			const char *v;

			if (r->env[i].value)
				continue;
			v = getenv(r->env[i].name);
			if (v)
				r->env[i].value = drv_strdup(v);
			else
				sl_warn("sbatch", "--export names %s, which is not in sbatch's "
					"environment: not set", r->env[i].name);
		}
		for (char **e = environ; all && *e; e++) {
			const char *eq = strchr(*e, '=');
			bool set = false;

			if (!eq || !exported_var(*e))
				continue;
			for (int32_t i = 0; i < given && !set; i++)
				set = strlen(r->env[i].name) == (size_t)(eq - *e) &&
				      !strncmp(r->env[i].name, *e, (size_t)(eq - *e));
			if (set)
				continue;
			if (r->nenv >= DRV_SPEC_MAX_ITEMS) {
				sl_warn("sbatch", "the environment has more than %d variables: %.*s and "
					"those after it are not exported", DRV_SPEC_MAX_ITEMS,
					(int)(eq - *e), *e);
				break;
			}
			char name[4096];

			if ((size_t)(eq - *e) >= sizeof(name))
				continue;   /* no shell makes such a name */
			memcpy(name, *e, (size_t)(eq - *e));
			name[eq - *e] = '\0';
			drv_jobspec_add_env(spec, g, name, eq + 1);
		}
	}
}

/* The spec's warnings, as sbatch's. */
static void warn_spec(const struct drv_jobspec *spec)
{
	for (int32_t i = 0; i < spec->nwarnings; i++)
		sl_warn("sbatch", "%s", spec->warnings[i]);
}

static int submit(struct cli *cli, const char *file, const char *body, size_t len,
		  struct sb_pass *sb, bool parsable, bool test_only, bool quiet)
{
	struct drv_spec_opts opts = { .sbatch_argc = sb->sargc, .sbatch_argv = sb->sargv };
	struct drv_client_reply r;
	struct drv_jobspec spec;
	struct drv_diags d;
	char *json = NULL;
	int rc;

	drv_jobspec_init(&spec);
	drv_diags_init(&d, file);
	rc = drv_spec_parse_buffer_opts(body, len, file, &opts, &spec, &d);
	if (rc || d.nerrors) {
		drv_diags_print(&d, stderr);
		if (!d.nerrors)
			fprintf(stderr, "sbatch: error: %s: %s\n", file, drv_strerror(rc));
		rc = 1;
		goto out;
	}
	/* sbatch's default names: "wrap" for --wrap, "sbatch" for stdin */
	if (spec.job.name && (!strcmp(file, "--wrap") || !strcmp(file, "-")) &&
	    (!strcmp(spec.job.name, file) || !strcmp(spec.job.name, "stdin") ||
	     !strcmp(spec.job.name, "<stdin>"))) {
		drv_free(spec.job.name);
		spec.job.name = drv_strdup(!strcmp(file, "-") ? "sbatch" : "wrap");
	}
	submit_place(&spec);
	submit_env(&spec);
	if (!quiet)
		warn_spec(&spec);
	json = drv_jobspec_dumps(&spec, 0);
	cli->keep_error = true;
	if (test_only)
		rc = cli_call(cli, "POST", "/v1/jobs?dry_run=1", "application/json", json,
			      strlen(json), &r);
	else
		rc = cli_call_create(cli, "/v1/jobs", "application/json", json, strlen(json), &r);
	if (rc && r.status) {
		refused(&r);
		drv_client_reply_release(&r);
		rc = 1;
		goto out;
	}
	if (rc) {
		rc = 1;   /* cli_call printed the transport's failure */
		goto out;
	}
	if (test_only)
		print_test_only(r.json);
	else if (parsable)
		printf("%lld\n", (long long)drv_json_int(r.json, "id", 0));
	else
		printf("Submitted batch job %lld\n", (long long)drv_json_int(r.json, "id", 0));
	drv_client_reply_release(&r);
out:
	drv_free(json);
	drv_diags_release(&d);
	drv_jobspec_release(&spec);
	return rc;
}

int drv_client_cmd_sbatch(int argc, char **argv)
{
	struct cli cli;
	struct sb_pass sb = { 0 };
	bool parsable = false, test_only = false, quiet = false;
	const char *wrap = NULL, *file;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "parsable", &parsable, "print only the job's id"),
		DRV_OPT_FLAG(0, "test-only", &test_only,
			     "check the job and say when and where it would start; submit "
			     "nothing"),
		DRV_OPT_STRING(0, "wrap", &wrap, "COMMAND", "the script is sh running COMMAND"),
		DRV_OPT_FLAG('Q', "quiet", &quiet, "no warnings"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_UNKNOWN(&sb, pass_opt),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "sbatch",
		.usage = "sbatch [options] [SCRIPT [ARGS...]]",
		.about = "Slurm's sbatch over drover (docs/slurm.md): every sbatch option "
			 "docs/job-format.md lists; the command line's win over the script's "
			 "#SBATCH lines. No SCRIPT: the script is read from stdin.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
		.flags = DRV_OPTS_STOP_AT_ARG,
	};
	char *body = NULL;
	size_t len = 0;
	int code = 0;

	sb.cmd = &cmd;
	sb.sargv = drv_calloc((size_t)argc + 1, sizeof(char *));
	if (cli_parse(&cli, &cmd, argc, argv, &code)) {
		code = sl_exit(code);
		goto out;
	}
	if (wrap && cli.nargs) {
		fprintf(stderr, "sbatch: error: Script arguments not permitted with --wrap "
				"option\n");
		code = 1;
		goto out;
	}
	file = cli.nargs ? cli.args[0] : wrap ? "--wrap" : "-";
	if (cli.nargs > 1 && !quiet)
		sl_warn("sbatch", "script arguments (%s ...) are not passed to the script by "
			"drover", cli.args[1]);
	if ((code = read_script(wrap, file, &body, &len)))
		goto out;
	if ((code = sl_connect(&cli, "sbatch")))
		goto out;
	code = submit(&cli, file, body, len, &sb, parsable, test_only, quiet);
out:
	cli_release(&cli);
	drv_free(body);
	drv_free(sb.sargv);
	return code;
}
