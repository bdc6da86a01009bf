/*
 * catalog.c: the GPU catalog, as data. One row per GPU model with its
 * canonical id and every name the outside world uses for it: the short
 * name, the GPU feature discovery label value (nvidia.com/gpu.product),
 * NVML's device name and the Slurm gres type. Lookups are
 * case-insensitive over all of them.
 *
 * Figures are the vendor's published ones: memory per GPU in MiB, NVLink
 * generation and bandwidth per GPU (GB/s, both directions), dense bf16
 * TFLOP/s (fp16 for V100/P100/T4, which have no bf16), board power.
 */
#include "drover/model.h"

static const struct drv_gpu_model catalog[] = {
	{ "GB200", "GB200", "NVIDIA-GB200", "NVIDIA GB200", "gb200",
	  { "GB200-NVL72", "NVIDIA-GB200-186GB-HBM3e", NULL },
	  190464, 5, 1800, 2500, 1200, 100 },
	{ "B200-180GB", "B200", "NVIDIA-B200", "NVIDIA B200", "b200",
	  { "B200-SXM-180GB", NULL },
	  184320, 5, 1800, 2250, 1000, 90 },
	{ "H200-141GB", "H200", "NVIDIA-H200", "NVIDIA H200", "h200",
	  { "H200-SXM-141GB", "NVIDIA-H200-141GB-HBM3e", NULL },
	  144384, 4, 900, 989, 700, 80 },
	{ "H100-SXM-80GB", "H100", "NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3", "h100",
	  { "H100-SXM5-80GB", "H100-80GB", NULL },
	  81920, 4, 900, 989, 700, 70 },
	{ "A100-SXM4-80GB", "A100", "NVIDIA-A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "a100",
	  { "A100-80GB", NULL },
	  81920, 3, 600, 312, 400, 60 },
	{ "A100-SXM4-40GB", "A100-40GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", "a100-40gb",
	  { "A100-SXM-40GB", NULL },
	  40960, 3, 600, 312, 400, 55 },
	{ "L40S", "L40S", "NVIDIA-L40S", "NVIDIA L40S", "l40s",
	  { "L40S-48GB", NULL },
	  46068, 0, 0, 362, 350, 50 },
	{ "A10G", "A10G", "NVIDIA-A10G", "NVIDIA A10G", "a10g",
	  { NULL },
	  23028, 0, 0, 70, 300, 35 },
	{ "V100-SXM2-32GB", "V100", "Tesla-V100-SXM2-32GB", "Tesla V100-SXM2-32GB", "v100",
	  { "V100-32GB", "Tesla-V100-SXM2-16GB", NULL },
	  32768, 2, 300, 125, 300, 30 },
	{ "L4", "L4", "NVIDIA-L4", "NVIDIA L4", "l4",
	  { NULL },
	  23034, 0, 0, 121, 72, 25 },
	{ "P100-SXM2-16GB", "P100", "Tesla-P100-SXM2-16GB", "Tesla P100-SXM2-16GB", "p100",
	  { "P100-16GB", "Tesla-P100-PCIE-16GB", NULL },
	  16384, 1, 160, 21, 300, 15 },
	{ "T4", "T4", "Tesla-T4", "Tesla T4", "t4",
	  { "T4-16GB", NULL },
	  15360, 0, 0, 65, 70, 10 },
	/* Workstation, PCIe data-center and consumer cards that nodes report
	 * too (appended: the indexes above stay as they were). NVLink here is
	 * the two-card bridge. */
	{ "H100-PCIe-80GB", "H100-PCIe", "NVIDIA-H100-PCIe", "NVIDIA H100 PCIe", "h100pcie",
	  { "H100-PCIE-80GB", NULL },
	  81559, 4, 600, 756, 350, 65 },
	{ "L40", "L40", "NVIDIA-L40", "NVIDIA L40", "l40",
	  { "L40-48GB", NULL },
	  46068, 0, 0, 181, 300, 45 },
	{ "A40", "A40", "NVIDIA-A40", "NVIDIA A40", "a40",
	  { "A40-48GB", NULL },
	  46068, 3, 112, 150, 300, 42 },
	{ "RTX-A6000", "A6000", "NVIDIA-RTX-A6000", "NVIDIA RTX A6000", "a6000",
	  { "RTX A6000", "rtx_a6000", NULL },
	  49140, 3, 112, 155, 300, 40 },
	{ "RTX-4090", "RTX4090", "NVIDIA-GeForce-RTX-4090", "NVIDIA GeForce RTX 4090", "rtx4090",
	  { "4090", "GeForce-RTX-4090", "rtx_4090", NULL },
	  24564, 0, 0, 165, 450, 38 },
	{ "A10", "A10", "NVIDIA-A10", "NVIDIA A10", "a10",
	  { "A10-24GB", NULL },
	  23028, 0, 0, 125, 150, 36 },
	{ "RTX-A5000", "A5000", "NVIDIA-RTX-A5000", "NVIDIA RTX A5000", "a5000",
	  { "RTX A5000", "rtx_a5000", NULL },
	  24564, 3, 112, 111, 230, 28 },
	{ "RTX-3090", "RTX3090", "NVIDIA-GeForce-RTX-3090", "NVIDIA GeForce RTX 3090", "rtx3090",
	  { "3090", "GeForce-RTX-3090", "rtx_3090", NULL },
	  24576, 3, 112, 71, 350, 22 },
	{ "RTX-A4000", "A4000", "NVIDIA-RTX-A4000", "NVIDIA RTX A4000", "a4000",
	  { "RTX A4000", "rtx_a4000", NULL },
	  16376, 0, 0, 77, 140, 20 },
};

int32_t drv_gpu_mem_milli(int32_t mib, int m)
{
	const struct drv_gpu_model *x = drv_gpu_model_at(m);
	int64_t milli;

	if (!x || mib <= 0 || x->mem_mib < mib)
		return -1;
	milli = ((int64_t)mib * DRV_MILLI + x->mem_mib - 1) / x->mem_mib;
	return (int32_t)DRV_MAX(1, DRV_MIN(milli, DRV_MILLI));
}

int32_t drv_group_min_milli(const struct drv_task_group *g)
{
	int32_t best = DRV_MILLI, m;

	if (g->gpus > 0)
		return 0;
	if (!drv_group_mem_share(g))
		return g->gpu_milli;
	for (int i = 0; i < drv_gpu_model_count(); i++)
		if ((m = drv_gpu_mem_milli(g->gpu_mem_mib, i)) > 0 && m < best)
			best = m;
	return best;
}

int drv_gpu_model_count(void)
{
	return (int)DRV_ARRAY_SIZE(catalog);
}

const struct drv_gpu_model *drv_gpu_model_at(int i)
{
	if (i < 0 || i >= (int)DRV_ARRAY_SIZE(catalog))
		return NULL;
	return &catalog[i];
}

int drv_gpu_model_find(const char *name)
{
	size_t i;
	int k;

	if (!name || !*name)
		return -1;
	for (i = 0; i < DRV_ARRAY_SIZE(catalog); i++) {
		const struct drv_gpu_model *m = &catalog[i];
		if (drv_strcaseeq(name, m->id) || drv_strcaseeq(name, m->short_name) ||
		    drv_strcaseeq(name, m->gfd_product) || drv_strcaseeq(name, m->nvml_name) ||
		    drv_strcaseeq(name, m->slurm_gres))
			return (int)i;
		for (k = 0; k < 4 && m->more_aliases[k]; k++)
			if (drv_strcaseeq(name, m->more_aliases[k]))
				return (int)i;
	}
	return -1;
}
