/*
 * test_catalog.c: the GPU catalog answers to every name a model goes by.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "drover/model.h"

Test(catalog, every_alias_finds_its_model)
{
	int h100 = drv_gpu_model_find("H100-SXM-80GB");
	cr_assert(ge(int, h100, 0));
	cr_assert(eq(int, drv_gpu_model_find("h100"), h100));
	cr_assert(eq(int, drv_gpu_model_find("NVIDIA-H100-80GB-HBM3"), h100));
	cr_assert(eq(int, drv_gpu_model_find("nvidia h100 80gb hbm3"), h100));
	cr_assert(eq(int, drv_gpu_model_find("H100"), h100));
	cr_assert(eq(int, drv_gpu_model_find("H200"), drv_gpu_model_find("h200-141gb")));
	cr_assert(eq(int, drv_gpu_model_find("nosuchgpu"), -1));
	cr_assert(eq(int, drv_gpu_model_find(""), -1));
}

Test(catalog, required_models_present_with_figures)
{
	static const char *const need[] = { "H100-SXM-80GB", "H200-141GB", "B200-180GB", "GB200",
		"A100-SXM4-80GB", "A100-SXM4-40GB", "L40S", "V100", "P100", "T4" };
	size_t i;
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int k = drv_gpu_model_find(need[i]);
		const struct drv_gpu_model *m;
		cr_assert(ge(int, k, 0), "%s missing", need[i]);
		m = drv_gpu_model_at(k);
		cr_assert(gt(int, m->mem_mib, 0));
		cr_assert(gt(int, m->bf16_tflops, 0));
		cr_assert(gt(int, m->tdp_w, 0));
	}
	cr_assert(le(int, drv_gpu_model_count(), DRV_MAX_MODELS));
}

Test(catalog, names_are_unique_across_models)
{
	int i, n = drv_gpu_model_count();
	for (i = 0; i < n; i++) {
		const struct drv_gpu_model *m = drv_gpu_model_at(i);
		cr_assert(eq(int, drv_gpu_model_find(m->id), i), "%s", m->id);
		cr_assert(eq(int, drv_gpu_model_find(m->short_name), i), "%s", m->short_name);
		cr_assert(eq(int, drv_gpu_model_find(m->gfd_product), i), "%s", m->gfd_product);
		cr_assert(eq(int, drv_gpu_model_find(m->nvml_name), i), "%s", m->nvml_name);
		cr_assert(eq(int, drv_gpu_model_find(m->slurm_gres), i), "%s", m->slurm_gres);
	}
}
