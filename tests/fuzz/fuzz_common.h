/*
 * fuzz_common.h: the invariant every fuzz target checks on what parses:
 * canonical -> model -> canonical gives the same bytes.
 */
#ifndef DROVER_FUZZ_COMMON_H
#define DROVER_FUZZ_COMMON_H

#include "drover/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_check_round_trip(const struct drv_jobspec *s)
{
	struct drv_jobspec t;
	struct drv_diags d;
	json_t *j = drv_jobspec_to_json(s);
	char *a = drv_jobspec_dumps(s, 0), *b;

	drv_jobspec_init(&t);
	drv_diags_init(&d, "round-trip");
	if (drv_jobspec_from_json(j, &t, &d) != 0) {
		drv_diags_print(&d, stderr);
		fprintf(stderr, "canonical form does not read back: %s\n", a);
		abort();
	}
	b = drv_jobspec_dumps(&t, 0);
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "round trip differs:\n%s\n%s\n", a, b);
		abort();
	}
	free(a);
	free(b);
	json_decref(j);
	drv_jobspec_release(&t);
	drv_diags_release(&d);
}

#endif
