/*
 * test_gpu.c: the GPU backends and the HCA reader.
 *
 * The nvml backend is run against build/nvml-standin/libnvidia-ml.so.1, a
 * stand-in library with NVML's symbols and known answers (built by the
 * Makefile from tests/nvml-standin/nvml.c), through the same dlopen path
 * a real driver takes. The HCA reader is run on a sysfs tree the test
 * builds.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drover/gpu.h"
#include "drover/model.h"

#define STANDIN "build/nvml-standin/libnvidia-ml.so.1"

Test(gpu, fake_spec_parsing)
{
	char err[256];
	int n, m;

	cr_assert(eq(int, drv_gpu_parse_fake_spec("8xH100", &n, &m, err, sizeof(err)), 0));
	cr_assert(eq(int, n, 8));
	cr_assert(eq(int, m, drv_gpu_model_find("H100-SXM-80GB")));
	cr_assert(eq(int, drv_gpu_parse_fake_spec("2xnvidia-h200", &n, &m, err, sizeof(err)), 0));
	cr_assert(eq(int, m, drv_gpu_model_find("H200")));
	cr_assert(eq(int, drv_gpu_parse_fake_spec("L4", &n, &m, err, sizeof(err)), 0));
	cr_assert(eq(int, n, 1));
	cr_assert(lt(int, drv_gpu_parse_fake_spec("8xH900", &n, &m, err, sizeof(err)), 0));
	cr_assert(not(eq(ptr, strstr(err, "unknown GPU model 'H900'"), NULL)), "%s", err);
	cr_assert(lt(int, drv_gpu_parse_fake_spec("0xH100", &n, &m, err, sizeof(err)), 0));
	cr_assert(lt(int, drv_gpu_parse_fake_spec("65xH100", &n, &m, err, sizeof(err)), 0));
	cr_assert(lt(int, drv_gpu_parse_fake_spec("8x", &n, &m, err, sizeof(err)), 0));
	cr_assert(lt(int, drv_gpu_parse_fake_spec("", &n, &m, err, sizeof(err)), 0));
}

Test(gpu, fake_readings_follow_tasks_and_repeat)
{
	struct drv_gpu_set s, s2;
	struct drv_gpu_sample a, b, c;
	char err[256], ln[16];

	cr_assert(eq(int, drv_gpu_open(&s, "fake", "8xH100", err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, s.ngpus, 8));
	cr_assert(eq(str, s.gpus[3].name, "NVIDIA H100 80GB HBM3"));
	cr_assert(eq(u64, s.gpus[3].mem_total_mib, 81920));
	cr_assert(eq(str, (char *)drv_gpu_link_name(s.link[0][7], s.nvlinks[0][7], ln, sizeof(ln)),
		     "NV18"));
	cr_assert(eq(int, s.link[2][2], DRV_LINK_SELF));

	cr_assert(eq(int, drv_gpu_sample(&s, 3, 1000, &a), 0));
	cr_assert(eq(int, a.util_pct, 0));
	cr_assert(eq(i64, a.fb_used_mib, 0));
	drv_gpu_set_use(&s, 3, "42", 1000);
	cr_assert(eq(int, drv_gpu_sample(&s, 3, 2000, &b), 0));
	cr_assert(ge(int, b.util_pct, 83));
	cr_assert(le(int, b.util_pct, 93));
	cr_assert(gt(i64, b.fb_used_mib, 81920 / 2));
	cr_assert(eq(i64, b.fb_used_mib + b.fb_free_mib + b.fb_reserved_mib, 81920));
	cr_assert(gt(dbl, b.power_w, a.power_w * 4));
	cr_assert(gt(i64, b.energy_mj, 0));
	/* other GPUs stay idle */
	cr_assert(eq(int, drv_gpu_sample(&s, 4, 2000, &c), 0));
	cr_assert(eq(int, c.util_pct, 0));

	/* the same inputs give the same readings */
	cr_assert(eq(int, drv_gpu_open(&s2, "fake", "8xH100", err, sizeof(err)), 0));
	drv_gpu_set_use(&s2, 3, "42", 1000);
	drv_gpu_sample(&s2, 3, 1000, &c);
	drv_gpu_sample(&s2, 3, 2000, &c);
	cr_assert(eq(int, c.util_pct, b.util_pct));
	cr_assert(eq(i64, c.fb_used_mib, b.fb_used_mib));

	drv_gpu_set_use(&s, 3, NULL, 3000);
	drv_gpu_sample(&s, 3, 4000, &c);
	cr_assert(eq(int, c.util_pct, 0));
	drv_gpu_close(&s);
	drv_gpu_close(&s2);
}

Test(gpu, fake_pcie_model_topology)
{
	struct drv_gpu_set s;
	char err[256];

	cr_assert(eq(int, drv_gpu_open(&s, "fake", "4xL40S", err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, s.link[0][1], DRV_LINK_PIX));
	cr_assert(eq(int, s.link[0][3], DRV_LINK_SYS));
	drv_gpu_close(&s);
}

Test(gpu, nvml_standin_known_answers)
{
	struct drv_gpu_set s;
	struct drv_gpu_sample o;
	char err[512], ln[16];
	int i;

	cr_assert(eq(int, access(STANDIN, R_OK), 0), "missing %s (make builds it)", STANDIN);
	cr_assert(eq(int, drv_gpu_open(&s, "nvml", STANDIN, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(str, s.driver_version, "550.54.15-standin"));
	cr_assert(eq(int, s.ngpus, 4));
	for (i = 0; i < 4; i++) {
		char uuid[64];
		snprintf(uuid, sizeof(uuid), "GPU-5a1d0000-0000-0000-0000-00000000000%d", i);
		cr_assert(eq(str, s.gpus[i].uuid, uuid));
		cr_assert(eq(str, s.gpus[i].name, "NVIDIA H100 80GB HBM3"));
		cr_assert(eq(int, s.gpus[i].model, drv_gpu_model_find("H100")));
		cr_assert(eq(u64, s.gpus[i].mem_total_mib, 81559));
	}
	cr_assert(eq(str, s.gpus[1].pci_bus_id, "00000000:43:00.0"));
	/* topology: direct NVLinks, NVSwitch links, PCIe levels */
	cr_assert(eq(str, (char *)drv_gpu_link_name(s.link[0][1], s.nvlinks[0][1], ln, sizeof(ln)),
		     "NV4"));
	cr_assert(eq(str, (char *)drv_gpu_link_name(s.link[2][3], s.nvlinks[2][3], ln, sizeof(ln)),
		     "NV18"));
	cr_assert(eq(int, s.link[0][2], DRV_LINK_NODE));
	cr_assert(eq(int, s.link[0][3], DRV_LINK_SYS));
	cr_assert(eq(int, s.link[1][3], DRV_LINK_NODE));
	cr_assert(eq(int, s.link[3][3], DRV_LINK_SELF));

	cr_assert(eq(int, drv_gpu_sample(&s, 0, 0, &o), 0));
	cr_assert(eq(int, o.util_pct, 10));
	cr_assert(eq(i64, o.fb_used_mib, 1024));
	cr_assert(eq(i64, o.fb_free_mib, 81559 - 512 - 1024));
	cr_assert(eq(i64, o.fb_reserved_mib, 512));
	cr_assert(eq(int, o.mem_temp_c, 50));
	cr_assert(eq(int, o.mem_copy_util_pct, 5));
	cr_assert(eq(int, o.enc_util_pct, 3));
	cr_assert(eq(int, o.dec_util_pct, 7));
	cr_assert(eq(i64, o.pcie_replays, 0));
	cr_assert(eq(i64, o.pcie_tx_bps, 1000 * 1024));
	cr_assert(eq(i64, o.pcie_rx_bps, 2000 * 1024));
	cr_assert(eq(i64, o.nvlink_kib, 4000));
	cr_assert(eq(i64, o.remap_corr, 0));
	cr_assert(eq(i64, o.remap_unc, 0));
	cr_assert(eq(int, o.remap_failure, 0));
	cr_assert(eq(int, o.vgpu_license, 0));
	cr_assert(eq(int, o.temp_c, 40));
	cr_assert(eq(dbl, o.power_w, 100.0));
	cr_assert(eq(int, o.sm_clock_mhz, 1980));
	cr_assert(eq(int, o.mem_clock_mhz, 2619));
	cr_assert(eq(i64, o.energy_mj, 123456789));
	cr_assert(eq(int, drv_gpu_sample(&s, 1, 0, &o), 0));
	cr_assert(eq(i64, o.xid_last, 31));
	cr_assert(eq(i64, o.xid_count, 1));
	cr_assert(eq(int, o.nxids, 1));
	cr_assert(eq(int, o.xids[0].xid, 31));
	cr_assert(eq(i64, o.xids[0].n, 1));
	cr_assert(eq(i64, o.remap_corr, 1));
	cr_assert(eq(i64, o.ecc_sbe, 1));
	cr_assert(eq(dbl, o.power_w, 101.0));
	drv_gpu_close(&s);
}

Test(gpu, nvml_without_driver_says_so)
{
	struct drv_gpu_set s;
	char err[512];

	cr_assert(lt(int, drv_gpu_open(&s, "nvml", "/nonexistent/libnvidia-ml.so.1", err,
				       sizeof(err)), 0));
	cr_assert(not(eq(ptr, strstr(err, "cannot load NVIDIA's /nonexistent/libnvidia-ml.so.1"), NULL)), "%s", err);
	setenv("DROVER_NVML_STANDIN_FAIL", "1", 1);
	cr_assert(lt(int, drv_gpu_open(&s, "nvml", STANDIN, err, sizeof(err)), 0));
	unsetenv("DROVER_NVML_STANDIN_FAIL");
	cr_assert(not(eq(ptr, strstr(err, "Driver Not Loaded"), NULL)), "%s", err);
	drv_gpu_close(&s);
}

static void put(const char *dir, const char *file, const char *text)
{
	char p[1024];
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	f = fopen(p, "w");
	cr_assert(not(eq(ptr, f, NULL)), "%s", p);
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *path)
{
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	cr_assert(eq(int, system(cmd), 0));
}

Test(gpu, hca_sysfs_tree_and_nearest)
{
	char root[] = "/tmp/drv-ib-XXXXXX", p[1024], q[1024], list[128];
	struct drv_hca_set h;
	struct drv_gpu_set g;
	char err[256];
	int k;

	cr_assert(not(eq(ptr, mkdtemp(root), NULL)));
	/* PCI tree: two root ports, each with a switch holding a GPU and an HCA */
	for (k = 0; k < 2; k++) {
		const char *gpu = k ? "0000:43:00.0" : "0000:1b:00.0";
		const char *hca = k ? "0000:44:00.0" : "0000:1c:00.0";
		const char *name = k ? "mlx5_1" : "mlx5_0";
		char sw[512];
		snprintf(sw, sizeof(sw), "%s/sys/devices/pci0000:%s/0000:%s:01.0/sw", root,
			 k ? "40" : "10", k ? "40" : "10");
		snprintf(p, sizeof(p), "%s/%s", sw, gpu);
		mkdirs(p);
		snprintf(p, sizeof(p), "%s/%s", sw, hca);
		mkdirs(p);
		put(p, "numa_node", k ? "1\n" : "0\n");
		snprintf(p, sizeof(p), "%s/sys/bus/pci/devices", root);
		mkdirs(p);
		snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s", root, gpu);
		snprintf(q, sizeof(q), "%s/%s", sw, gpu);
		cr_assert(eq(int, symlink(q, p), 0));
		snprintf(p, sizeof(p), "%s/sys/class/infiniband/%s/ports/1/counters", root, name);
		mkdirs(p);
		put(p, "port_rcv_data", "1000\n");
		put(p, "port_xmit_data", "250\n");
		snprintf(p, sizeof(p), "%s/sys/class/infiniband/%s/ports/1", root, name);
		put(p, "state", k ? "1: DOWN\n" : "4: ACTIVE\n");
		put(p, "rate", "400 Gb/sec (4X NDR)\n");
		put(p, "link_layer", k ? "Ethernet\n" : "InfiniBand\n");
		snprintf(p, sizeof(p), "%s/sys/class/infiniband/%s/device", root, name);
		snprintf(q, sizeof(q), "%s/%s", sw, hca);
		cr_assert(eq(int, symlink(q, p), 0));
	}
	cr_assert(eq(int, drv_hca_scan(&h, root), 0));
	cr_assert(eq(int, h.nhcas, 2));
	cr_assert(eq(str, h.hcas[0].name, "mlx5_0"));
	cr_assert(eq(str, h.hcas[0].ports[0].state, "ACTIVE"));
	cr_assert(eq(int, h.hcas[0].ports[0].rate_gbps, 400));
	cr_assert(eq(str, h.hcas[0].ports[0].link_layer, "InfiniBand"));
	cr_assert(eq(u64, h.hcas[0].ports[0].rx_bytes, 4000));
	cr_assert(eq(u64, h.hcas[0].ports[0].tx_bytes, 1000));
	cr_assert(eq(str, h.hcas[1].ports[0].link_layer, "Ethernet"));
	cr_assert(eq(str, h.hcas[1].ports[0].state, "DOWN"));
	drv_hca_active_list(&h, list, sizeof(list));
	cr_assert(eq(str, list, "mlx5_0"));

	/* GPUs from the stand-in NVML: bus 1B and 43 */
	cr_assert(eq(int, drv_gpu_open(&g, "nvml", STANDIN, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(int, drv_hca_nearest(&h, &g, 0), 0));
	cr_assert(eq(int, drv_hca_nearest(&h, &g, 1), 1));
	cr_assert(eq(int, drv_hca_nearest(&h, &g, 2), -1)); /* not in this sysfs */
	drv_gpu_close(&g);

	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	cr_assert(eq(int, system(p), 0));
}

Test(gpu, hca_missing_and_fake)
{
	struct drv_hca_set h;
	struct drv_gpu_set g;
	char list[128], err[128];

	cr_assert(eq(int, drv_hca_scan(&h, "/nonexistent-root"), 0));
	cr_assert(eq(int, h.nhcas, 0));
	drv_hca_active_list(&h, list, sizeof(list));
	cr_assert(eq(str, list, ""));
	drv_hca_fake(&h, 4);
	drv_hca_active_list(&h, list, sizeof(list));
	cr_assert(eq(str, list, "mlx5_0,mlx5_1,mlx5_2,mlx5_3"));
	cr_assert(eq(int, drv_gpu_open(&g, "fake", "8xH100", err, sizeof(err)), 0));
	cr_assert(eq(int, drv_hca_nearest(&h, &g, 7), 3));
	drv_hca_refresh(&h, 2, 1000);
	cr_assert(eq(u64, h.hcas[0].ports[0].rx_bytes, 0), "no time has passed yet");
	drv_hca_refresh(&h, 2, 2000); /* 2 busy GPUs x 5 GB/s x 1 s over 4 HCAs */
	cr_assert(eq(u64, h.hcas[0].ports[0].rx_bytes, 2500000000ULL));
	cr_assert(eq(int, h.hcas[0].ports[0].state_id, 4));
	drv_gpu_close(&g);
}
