/*
 * test_metrics_dcgm.c: the agent's /metrics against dcgm-exporter's list
 * of default counters (release 4.5.3-4.8.2, kept in
 * tests/unit/data/dcgm-exporter-default-counters.csv): every counter NVML
 * can give is there under its name and type for every GPU, with the
 * DCGM_FI_DRIVER_VERSION and pci_bus_id labels; the profiling fields only
 * DCGM measures are not. Run for the nvml backend (against the stand-in
 * libnvidia-ml.so.1, whose known answers are checked too) and the fake one.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/metrics.h"

#define STANDIN "build/nvml-standin/libnvidia-ml.so.1"
#define LIST "tests/unit/data/dcgm-exporter-default-counters.csv"

/* The agent's /metrics text with backend nvml (fake NULL) or fake GPUs. */
static char *render(const char *fake)
{
	char state[] = "/tmp/drv-dcgm-XXXXXX", err[512], cmd[64];
	struct drv_agent_config c;
	struct drv_agent *a = NULL;
	struct drv_prom w;
	char *text;

	cr_assert(not(eq(ptr, mkdtemp(state), NULL)));
	memset(&c, 0, sizeof(c));
	c.server_url = "http://127.0.0.1:1";
	c.token = "t";
	c.name = "dcgm-node";
	c.listen = "none";
	c.state_dir = state;
	c.quiet = true;
	c.run_as_self = true;
	c.fake_gpus = fake;
	c.nvml_lib = STANDIN;
	cr_assert(eq(int, drv_agent_start(&c, &a, err, sizeof(err)), 0), "%s", err);
	drv_prom_init(&w);
	drv_agent_render_metrics(a, &w, drv_mono_ms());
	text = strdup(drv_prom_text(&w));
	drv_prom_release(&w);
	drv_agent_stop(a);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	cr_assert(eq(int, system(cmd), 0));
	return text;
}

/* How many samples of name text has (lines "name{"). */
static int samples(const char *text, const char *name)
{
	char key[160];
	int n = 0;

	snprintf(key, sizeof(key), "\n%s{", name);
	for (const char *p = text; (p = strstr(p, key)); p++)
		n++;
	return n;
}

/* Checks text against every row of the list for ngpus GPUs. */
static void check_list(const char *text, int ngpus, const char *driver)
{
	FILE *f = fopen(LIST, "r");
	char line[256], want[200];
	int rows = 0, nvml = 0;

	cr_assert(not(eq(ptr, f, NULL)), "cannot open %s", LIST);
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *name = strtok_r(line, ",\n", &save);
		char *type = strtok_r(NULL, ",\n", &save), *how = strtok_r(NULL, ",\n", &save);

		if (!name || name[0] == '#' || !type || !how)
			continue;
		rows++;
		if (!strcmp(type, "label")) {
			snprintf(want, sizeof(want), "DCGM_FI_DRIVER_VERSION=\"%s\"", driver);
			cr_assert(eq(int, samples(text, "DCGM_FI_DEV_GPU_UTIL"), ngpus));
			cr_assert(not(eq(ptr, strstr(text, want), NULL)), "no %s label", want);
			continue;
		}
		if (!strcmp(how, "dcgm")) {
			cr_assert(eq(int, samples(text, name), 0), "%s needs DCGM", name);
			continue;
		}
		nvml++;
		snprintf(want, sizeof(want), "# TYPE %s %s\n", name, type);
		cr_assert(not(eq(ptr, strstr(text, want), NULL)), "no '%s'", want);
		cr_assert(eq(int, samples(text, name), ngpus), "%s: one sample per GPU", name);
	}
	fclose(f);
	cr_assert(eq(int, rows, 26), "the pinned list has 25 counters and 1 label");
	cr_assert(eq(int, nvml, 22));
}

Test(metrics_dcgm, nvml_exports_every_default_counter_nvml_gives)
{
	char *t = render(NULL);

	check_list(t, 4, "550.54.15-standin");
	/* the stand-in's known answers (tests/nvml-standin/nvml.c) */
	cr_assert(not(eq(ptr, strstr(t, "DCGM_FI_DEV_FB_RESERVED{gpu=\"0\",UUID=\"GPU-5a1d0000-0000-"
					"0000-0000-000000000000\",pci_bus_id=\"00000000:1B:00.0\","
					"device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
					"Hostname=\"dcgm-node\",DCGM_FI_DRIVER_VERSION=\"550.54.15-"
					"standin\"} 512\n"), NULL)), "%s", t);
	cr_assert(not(eq(ptr, strstr(t, "\nDCGM_FI_DEV_MEMORY_TEMP{gpu=\"2\","), NULL)));
	cr_assert(not(eq(ptr, strstr(t, "standin\"} 52\nDCGM_FI_DEV_MEMORY_TEMP{gpu=\"3\""), NULL)));
	cr_assert(not(eq(ptr, strstr(t, "standin\"} 1024000\nDCGM_FI_PROF_PCIE_TX_BYTES{gpu=\"1\""),
			 NULL)));
	cr_assert(not(eq(ptr, strstr(t, "standin\"} 8000\nDCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"2\""),
			 NULL)));
	cr_assert(not(eq(ptr, strstr(t, "standin\"} 6\n# HELP DCGM_FI_DEV_DEC_UTIL"), NULL)));
	/* the XID the stand-in raises on GPU 1, as a counter by XID */
	cr_assert(not(eq(ptr, strstr(t, "# TYPE drover_gpu_xid_errors_total counter\n"
					"drover_gpu_xid_errors_total{gpu=\"1\","), NULL)), "%s", t);
	cr_assert(not(eq(ptr, strstr(t, "xid=\"31\"} 1\n"), NULL)));
	free(t);
}

Test(metrics_dcgm, fake_gpus_export_the_same_counters)
{
	char *t = render("2xH100");

	check_list(t, 2, "fake");
	cr_assert(eq(ptr, strstr(t, "drover_gpu_xid_errors_total{"), NULL), "no XID on fake GPUs");
	free(t);
}
