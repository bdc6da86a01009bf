/*
 * fuzz_tenants_file.c: libFuzzer target for the tenants-file reader
 * (src/spec/tenants_file.c, owner: sim). What loads must be consistent
 * (names valid and unique, weights >= 1, quotas >= -1, every tenant's
 * priorityClass one of the file's classes) and the scheduler must accept
 * all of it; what does not load must have said why, with a position, and
 * kept nothing.
 */
#include "drover/tenants.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_libfyaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drv_tenants t;
	struct drv_diags d;
	int rc, i, m;

	drv_diags_init(&d, "fuzz");
	rc = drv_tenants_load_buffer((const char *)data, size, &t, &d);
	if (rc != 0) {
		if (d.nerrors < 1 || t.ntenants || t.nclasses || t.tenants || t.classes)
			abort();
	} else {
		struct drv_cluster c;
		struct drv_sched *s;

		if (d.nerrors)
			abort();
		for (i = 0; i < t.ntenants; i++) {
			const struct drv_tenant_conf *tc = &t.tenants[i];
			if (!tc->name || !*tc->name || tc->weight < 1 ||
			    drv_tenants_tenant(&t, tc->name) != tc || tc->line < 1)
				abort();
			if (tc->priority_class && !drv_tenants_class(&t, tc->priority_class))
				abort();
			for (m = 0; m < DRV_MAX_MODELS; m++)
				if (tc->quota_milli[m] < -1 || tc->borrow_limit_milli[m] < -1)
					abort();
		}
		for (i = 0; i < t.nclasses; i++)
			if (drv_tenants_class(&t, t.classes[i].name) != &t.classes[i])
				abort();
		drv_cluster_init(&c, "fuzz");
		s = drv_sched_new(&c);
		if (!s || drv_tenants_apply(&t, s) != 0)
			abort();
		drv_sched_free(s);
		drv_cluster_release(&c);
	}
	drv_tenants_release(&t);
	drv_diags_release(&d);
	return 0;
}
