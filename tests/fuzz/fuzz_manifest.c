/*
 * fuzz_manifest.c: libFuzzer target for the Kubernetes manifest parser.
 * Any input must parse or be refused with diagnostics, without a crash,
 * leak or hang; what parses and passes drv_job_check (as drv_spec_parse_all
 * requires) must survive the canonical JSON round trip.
 */
#include "drover/spec.h"
#include "../../src/spec/spec_int.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_libfyaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drv_specset set;
	struct drv_diags d;
	char *buf = malloc(size + 1);
	int i;

	memcpy(buf, data, size);
	buf[size] = '\0';
	drv_specset_init(&set);
	drv_diags_init(&d, "fuzz");
	if (drv_spec_parse_manifest(buf, size, "fuzz", &set, &d) == 0 && d.nerrors == 0)
		for (i = 0; i < set.njobs; i++) {
			char why[256];
			/* drv_spec_parse_all refuses what drv_job_check refuses (a
			 * group of 0 replicas...): only what it accepts must round-trip */
			if (drv_job_check(&set.jobs[i].job, why, sizeof(why)) == 0)
				fuzz_check_round_trip(&set.jobs[i]);
		}
	drv_specset_release(&set);
	drv_diags_release(&d);
	free(buf);
	return 0;
}
