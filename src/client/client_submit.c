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
 * (--server, --token, -o json|yaml|wide, --parsable) may come anywhere.
 * "-o" with any other value is sbatch's --output.
 */
#include "client_int.h"

#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Short sbatch options that take a value. */
static const char sbatch_short_arg[] = "AabcDdeGiJLMmNnopqSTtwxF";
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

static int is_output_format(const char *v)
{
	return !strcmp(v, "json") || !strcmp(v, "yaml") || !strcmp(v, "wide");
}

int drv_client_submit_sbatch(struct cli *cli, const char *file, const char *body, size_t len,
			     int sargc, char **sargv, int parsable);
int drv_client_read_job_file(const struct cli *cli, const char *path, char **buf, size_t *len);
int drv_client_post_job(struct cli *cli, const char *route, const char *file,
			const char *ctype, const char *body, size_t len, int parsable);

int drv_client_cmd_submit(int argc, char **argv)
{
	static const char usage[] =
		"submit [sbatch options] FILE [-o json|yaml] [--parsable] [--server URL] [--token TOKEN]\n"
		"  FILE: a Kubernetes manifest (YAML), a Slurm batch script, or drover JSON; - for stdin.\n"
		"  sbatch options (Slurm scripts only) win over the script's #SBATCH lines.";
	struct cli cli;
	char **sargv = drv_calloc((size_t)argc + 1, sizeof(char *));
	const char *file = NULL, *ctype;
	char *body = NULL;
	size_t len = 0;
	int sargc = 0, parsable = 0, code = 0, i;

	memset(&cli, 0, sizeof(cli));
	cli.cmd = "drover submit";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: drover %s\n", usage);
			goto out;
		}
		if (!strcmp(a, "--server") || !strcmp(a, "--token")) {
			if (!v) {
				cli_err(&cli, "option '%s' needs a value", a);
				code = DRV_EXIT_USAGE;
				goto out;
			}
			*(a[2] == 's' ? &cli.server : &cli.token) = v;
			i++;
			continue;
		}
		if (!strncmp(a, "--server=", 9)) {
			cli.server = a + 9;
			continue;
		}
		if (!strncmp(a, "--token=", 8)) {
			cli.token = a + 8;
			continue;
		}
		if (!strcmp(a, "--parsable")) {
			parsable = 1;
			continue;
		}
		if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v && is_output_format(v)) {
			drv_output_parse(v, &cli.out);
			i++;
			continue;
		}
		if ((!strncmp(a, "--output=", 9) && is_output_format(a + 9)) ||
		    (!strncmp(a, "-o", 2) && a[2] && is_output_format(a + 2))) {
			drv_output_parse(a[1] == '-' ? a + 9 : a + 2, &cli.out);
			continue;
		}
		if (file) {
			cli_err(&cli, "unexpected argument '%s' after the file %s (options go before it)",
				a, file);
			code = DRV_EXIT_USAGE;
			goto out;
		}
		if (a[0] != '-' || !strcmp(a, "-")) {
			file = a;
			continue;
		}
		/* an sbatch option, kept with its value */
		sargv[sargc++] = argv[i];
		if (a[1] == '-') {
			if (!strchr(a, '=') && !long_is_flag(a + 2)) {
				if (!v) {
					cli_err(&cli, "option '%s' needs a value", a);
					code = DRV_EXIT_USAGE;
					goto out;
				}
				sargv[sargc++] = argv[++i];
			}
		} else if (a[1] && !a[2] && strchr(sbatch_short_arg, a[1])) {
			if (!v) {
				cli_err(&cli, "option '%s' needs a value", a);
				code = DRV_EXIT_USAGE;
				goto out;
			}
			sargv[sargc++] = argv[++i];
		}
	}
	if (!file) {
		cli_err(&cli, "which file? drover submit FILE");
		fprintf(stderr, "usage: drover %s\n", usage);
		code = DRV_EXIT_USAGE;
		goto out;
	}
	code = drv_client_read_job_file(&cli, file, &body, &len);
	if (code)
		goto out;
	ctype = drv_client_content_type(body, len);
	if (sargc && strcmp(ctype, "text/x-slurm")) {
		cli_err(&cli, "%s: sbatch options (%s) apply only to Slurm batch scripts", file,
			sargv[0]);
		code = DRV_EXIT_USAGE;
		goto out;
	}
	if ((code = cli_connect(&cli)))
		goto out;
	if (sargc)
		code = drv_client_submit_sbatch(&cli, file, body, len, sargc, sargv, parsable);
	else
		code = drv_client_post_job(&cli, "/v1/jobs", file, ctype, body, len, parsable);
out:
	cli_release(&cli);
	drv_free(body);
	drv_free(sargv);
	return code;
}
