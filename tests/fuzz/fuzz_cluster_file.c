/*
 * fuzz_cluster_file.c: libFuzzer target for the cluster-file reader (core).
 * What loads must be a consistent tree (aggregates equal a recount) on
 * which placing and releasing a small gang restores it exactly; what does
 * not load must have said why and left nothing allocated.
 *
 * Inputs whose counts could expand to huge clusters are skipped (more than
 * two "count" fields, or a number of three digits or more): the size caps
 * are tested by the unit tests, not here.
 */
#include "drover/clusterfile.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_libfyaml.h"

static int too_big(const uint8_t *d, size_t n)
{
	size_t i, run = 0, counts = 0;
	for (i = 0; i < n; i++) {
		run = (d[i] >= '0' && d[i] <= '9') ? run + 1 : 0;
		if (run >= 3)
			return 1;
		if (i + 5 <= n && !memcmp(d + i, "count", 5) && ++counts > 2)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drv_cluster c;
	struct drv_diags d;
	int rc;

	if (too_big(data, size))
		return 0;
	drv_diags_init(&d, "fuzz");
	rc = drv_cluster_load_buffer((const char *)data, size, &c, &d);
	if (rc == 0) {
		struct drv_job j;
		struct drv_placement p;
		if (drv_cluster_check(&c) != 0)
			abort();
		drv_job_init(&j);
		drv_job_add_group(&j, "w", 2, 1, 0);
		drv_placement_init(&p);
		if (drv_place_commit(&c, &j, NULL, &p, NULL, 0) == 0) {
			drv_cluster_uncommit(&c, &p);
			if (drv_cluster_check(&c) != 0 || c.vertices[0].free_gpus != c.vertices[0].total_gpus)
				abort();
		}
		drv_placement_release(&p);
		drv_job_release(&j);
		drv_cluster_release(&c);
	} else if (d.nerrors == 0) {
		abort(); /* refused without saying why */
	}
	drv_diags_release(&d);
	return 0;
}
