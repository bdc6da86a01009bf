/*
 * client_submit.c: 'drover submit [sbatch options] FILE'. Always a new job.
 *
 * The file goes to the server as it is, with the Content-Type of its
 * format, so what the server stores is what the user wrote. For a Slurm
 * script, sbatch options may come on the command line as they do for
 * sbatch ("drover submit -N 2 --gres=gpu:8 train.sh"), and they win over
 * the #SBATCH lines: then the client parses the script itself with the
 * spec library, the options applied, and sends the canonical JSON; a bad
 * option or script is reported here as file:line:col, exit 2.
 *
 * Argument rule (sbatch's): options first, then FILE; drover's own options
 * (--server, --token-file, -o json|yaml|wide, --parsable) may come anywhere.
 * "-o" with any other value is sbatch's --output.
 */
#include "client_int.h"

#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Short sbatch options that take a value. */
static const char sbatch_short_arg[] = "AaBbCcDdeGiJLMmNnopqSTtwxF";
/* Long sbatch options that take no value (the rest take one). */
static const char *const sbatch_long_flag[] = {
	"contiguous", "exclusive", "hold", "ignore-pbs", "no-kill", "no-requeue",
	"overcommit", "oversubscribe", "parsable", "quiet", "reboot", "requeue",
	"spread-job", "test-only", "use-min-nodes", "wait", "verbose", "get-user-env",
	"nice", "kill-on-invalid-dep", "exclusive=user",
};

static int long_is_flag(const char *name)
{
	size_t i;

	for (i = 0; i < DRV_ARRAY_SIZE(sbatch_long_flag); i++)
		if (!strcmp(name, sbatch_long_flag[i]))
			return 1;
	return 0;
}

bool cli_sbatch_takes_value(const char *a)
{
	if (a[1] == '-')
		return !strchr(a, '=') && !long_is_flag(a + 2);
	return a[1] && !a[2] && strchr(sbatch_short_arg, a[1]);
}

/* -o: drover's output format when the value is one, else sbatch's --output. */
static int output_or_decline(const struct drv_option *row, const char *arg)
{
	if (strcmp(arg, "json") && strcmp(arg, "yaml") && strcmp(arg, "wide"))
		return DRV_OPT_DECLINE;
	return cli_output_cb(row, arg);
}

/* The sbatch options of the command line, kept in order with their values. */
struct sbatch_args {
	const struct drv_opts *cmd;
	char **argv;  /* the parse's argv: argv[0] is FILE once it was seen */
	char **sargv;
	int sargc;
};

/* The parser's UNKNOWN hook: an option drover does not know is sbatch's. */
static int pass_sbatch(const struct drv_option *row, int nargs, int argc, char **argv)
{
	struct sbatch_args *sb = row->value;
	const char *a = argv[0];
	bool takes;

	if (nargs) {
		fprintf(stderr, "%s: unexpected argument '%s' after the file %s (options go before "
				"it)\n", sb->cmd->name, a, sb->argv[0]);
		return -1;
	}
	takes = cli_sbatch_takes_value(a);
	sb->sargv[sb->sargc++] = argv[0];
	if (!takes)
		return 1;
	if (argc < 2) {
		drv_opts_usage_error(sb->cmd, "option '%s' needs a value", a);
		return -1;
	}
	sb->sargv[sb->sargc++] = argv[1];
	return 2;
}

int drv_client_submit_sbatch(struct cli *cli, const char *file, const char *body, size_t len,
			     int sargc, char **sargv, int parsable);
int drv_client_read_job_file(const struct cli *cli, const char *path, char **buf, size_t *len);
int drv_client_post_job(struct cli *cli, const char *route, const char *file,
			const char *ctype, const char *body, size_t len, int parsable);

int drv_client_cmd_submit(int argc, char **argv)
{
	struct cli cli;
	struct sbatch_args sb = { .argv = argv };
	bool parsable = false;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "parsable", &parsable, "print only the job's id"),
		DRV_OPT_GROUP("output and server"),
		DRV_OPT_CALLBACK('o', "output", &cli, output_or_decline, "json|yaml",
				 "print the job as JSON or YAML (any other value is sbatch's "
				 "--output)"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_UNKNOWN(&sb, pass_sbatch),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover submit",
		.usage = "drover submit [sbatch options] FILE [-o json|yaml] [--parsable] "
			 "[--server URL] [--token-file FILE]",
		.about = "A new job, always. FILE: a Kubernetes manifest (YAML), a Slurm batch "
			 "script, or drover JSON; - for stdin. sbatch options (Slurm scripts "
			 "only) come before FILE and win over the script's #SBATCH lines; "
			 "drover's own options may come anywhere.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	const char *file, *ctype;
	char *body = NULL;
	size_t len = 0;
	int code = 0;

	sb.cmd = &cmd;
	sb.sargv = drv_calloc((size_t)argc + 1, sizeof(char *));
	if (cli_parse(&cli, &cmd, argc, argv, &code))
		goto out;
	if (cli.nargs > 1) {
		cli_err(&cli, "unexpected argument '%s' after the file %s (options go before it)",
			cli.args[1], cli.args[0]);
		code = DRV_EXIT_USAGE;
		goto out;
	}
	if (!cli.nargs) {
		code = drv_opts_usage_error(&cmd, "which file? drover submit FILE");
		goto out;
	}
	file = cli.args[0];
	code = drv_client_read_job_file(&cli, file, &body, &len);
	if (code)
		goto out;
	ctype = drv_client_content_type(body, len);
	if (sb.sargc && strcmp(ctype, "text/x-slurm")) {
		cli_err(&cli, "%s: sbatch options (%s) apply only to Slurm batch scripts", file,
			sb.sargv[0]);
		code = DRV_EXIT_USAGE;
		goto out;
	}
	if ((code = cli_connect(&cli)))
		goto out;
	if (sb.sargc)
		code = drv_client_submit_sbatch(&cli, file, body, len, sb.sargc, sb.sargv,
						parsable);
	else
		code = drv_client_post_job(&cli, "/v1/jobs", file, ctype, body, len, parsable);
out:
	cli_release(&cli);
	drv_free(body);
	drv_free(sb.sargv);
	return code;
}
