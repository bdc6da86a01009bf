/*
 * fuzz_quantity.c: libFuzzer target for Kubernetes quantities. Checks
 * that scaling is monotonic where it must be: a quantity in milli-units
 * is at least the plain value times 1000 minus rounding.
 */
#include "drover/spec.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int64_t a = 0, b = 0, m = 0;
	int ra, rb;

	memcpy(s, data, size);
	s[size] = '\0';
	ra = drv_quantity_parse(s, 1, &a);
	rb = drv_quantity_parse(s, 1000, &b);
	drv_quantity_mib(s, &m);
	if (ra == 0 && rb == 0) {
		/* ceil(x) * 1000 >= ceil(1000 x) > (ceil(x) - 1) * 1000, in 128
		 * bits: ceil(x) may be just over INT64_MAX / 1000 when 1000 x fits */
		__int128 a1000 = (__int128)a * 1000;

		if (a < 0 || b < 0 || b > a1000 || (a > 0 && b <= a1000 - 1000))
			abort();
	}
	if (rb == 0 && ra != 0)
		abort(); /* what fits scaled by 1000 fits unscaled */
	free(s);
	return 0;
}
