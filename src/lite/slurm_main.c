/*
 * slurm_main.c: drover-slurm, the Slurm faces that tools call once per job
 * (sbatch, squeue, sacct, scancel, sinfo, scontrol) as a binary of their
 * own. It holds the client's code only and is linked without libcurl:
 * plain http:// goes through drover's own HTTP/1.1 client
 * (drv_http_client_plain), https:// through libcurl loaded then
 * (curl_dl.c). A process start loads jansson, libfyaml and libc where
 * drover loads 39 libraries, which is what a tool submitting one job a
 * process waits for (docs/architecture.md, "Light builds"). `make install` points these faces' links at
 * it (srun and salloc stay on drover); `drover sbatch` and a link named
 * sbatch to drover still work and answer the same.
 *
 * Called by a face's name (a link), it is that face; `drover-slurm NAME
 * ARGS...` runs NAME.
 */
#include "drover/client.h"
#include "drover/common.h"
#include "drover/http.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} faces[] = {
	{ "sbatch", drv_client_cmd_sbatch },     { "squeue", drv_client_cmd_squeue },
	{ "sacct", drv_client_cmd_sacct },       { "scancel", drv_client_cmd_scancel },
	{ "sinfo", drv_client_cmd_sinfo },       { "scontrol", drv_client_cmd_scontrol },
};

static int run(const char *name, int argc, char **argv)
{
	for (size_t i = 0; i < DRV_ARRAY_SIZE(faces); i++)
		if (!strcmp(faces[i].name, name))
			return faces[i].fn(argc, argv);
	return -1;
}

int main(int argc, char **argv)
{
	const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
	int rc;

	base = base ? base + 1 : argc > 0 ? argv[0] : "";
	drv_http_client_plain(true);
	if ((rc = run(base, argc, argv)) >= 0)
		return rc;
	if (argc > 1 && (rc = run(argv[1], argc - 1, argv + 1)) >= 0)
		return rc;
	fprintf(stderr, "drover-slurm: usage: sbatch|squeue|sacct|scancel|sinfo|scontrol "
		"[ARGS...] (or a link by that name; srun and salloc: drover)\n");
	return DRV_EXIT_USAGE;
}
