/*
 * fuzz_json.c: libFuzzer target for the canonical JSON reader, through
 * the public entry point (format sniffed from content); what parses must
 * round-trip byte for byte.
 */
#include "drover/spec.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drv_specset set;
	struct drv_diags d;
	int i;

	drv_specset_init(&set);
	drv_diags_init(&d, "fuzz");
	if (drv_spec_parse_all((const char *)data, size, "fuzz", NULL, &set, &d) == 0)
		for (i = 0; i < set.njobs; i++)
			fuzz_check_round_trip(&set.jobs[i]);
	drv_specset_release(&set);
	drv_diags_release(&d);
	return 0;
}
