/*
 * client_sbatch.c: a Slurm script submitted with sbatch options on the command
 * line ("drover submit -N 2 --gres=gpu:8 train.sh"). The options must win
 * over the script's #SBATCH lines, which only a parser that sees both can
 * do, so here the client parses the script itself with the spec library
 * (drv_spec_parse_buffer_opts), options applied, and submits the canonical
 * JSON. Bad options or a bad script are reported here, file:line:col,
 * exit 2, and nothing is sent.
 */
#include "client_int.h"

#include "drover/common.h"
#include "drover/diag.h"
#include "drover/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_client_post_job(struct cli *cli, const char *route, const char *file,
			const char *ctype, const char *body, size_t len, int parsable);

int drv_client_submit_sbatch(struct cli *cli, const char *file, const char *body, size_t len,
			     int sargc, char **sargv, int parsable)
{
	struct drv_spec_opts opts = { .sbatch_argc = sargc, .sbatch_argv = sargv };
	struct drv_jobspec spec;
	struct drv_diags d;
	char *json = NULL;
	int rc;

	drv_jobspec_init(&spec);
	drv_diags_init(&d, file);
	rc = drv_spec_parse_buffer_opts(body, len, file, &opts, &spec, &d);
	if (rc) {
		drv_diags_print(&d, stderr);
		if (!d.nerrors)
			cli_err(cli, "%s: %s", file, drv_strerror(rc));
		rc = rc == DRV_EIO ? DRV_EXIT_FAIL : DRV_EXIT_USAGE;
		goto out;
	}
	json = drv_jobspec_dumps(&spec, 0);
	rc = drv_client_post_job(cli, "/v1/jobs", file, "application/json", json, strlen(json),
				 parsable);
out:
	drv_free(json);
	drv_diags_release(&d);
	drv_jobspec_release(&spec);
	return rc;
}
