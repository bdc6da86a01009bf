/*
 * fuzz_slurmtime.c: libFuzzer target for Slurm time limits and --array
 * specifications: no crash, and what parses is consistent (non-negative
 * time; array count equal to the sum over its ranges, under the limit).
 */
#include "drover/spec.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct drv_array a;
	int64_t t;

	memcpy(s, data, size);
	s[size] = '\0';
	if (drv_slurm_time_parse(s, &t) == 0 && t < 0)
		abort();
	memset(&a, 0, sizeof(a));
	if (drv_array_parse(s, &a) == 0) {
		int64_t n = 0;
		int i;
		for (i = 0; i < a.nranges; i++) {
			if (a.ranges[i].last < a.ranges[i].first || a.ranges[i].step < 1)
				abort();
			n += (a.ranges[i].last - a.ranges[i].first) / a.ranges[i].step + 1;
		}
		if (n != a.count || n > DRV_SPEC_MAX_ARRAY || !a.spec || strcmp(a.spec, s) != 0)
			abort();
	}
	drv_array_release(&a);
	free(s);
	return 0;
}
