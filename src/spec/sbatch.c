/*
 * sbatch.c: Slurm batch scripts (placeholder until the full parser lands).
 */
#include "drover/spec.h"
#include "spec_int.h"

int drv_spec_parse_sbatch(const char *buf, size_t len, const char *name,
			  const struct drv_spec_opts *opts, struct drv_specset *set,
			  struct drv_diags *d)
{
	drv_diag_err(d, 1, 1, NULL, "Slurm batch scripts are not read yet");
	return DRV_EUNSUPP;
}
