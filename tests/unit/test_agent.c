/*
 * test_agent.c: the in-process entry point drover up uses: the agent
 * starts on its own threads, serves /metrics on the port it bound, falls
 * back to simulated GPUs only when asked to, and stops promptly even with
 * no controller to talk to.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/http.h"
#include "drover/metrics.h"

static void rmtree(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

static struct drv_agent_config base(const char *state)
{
	struct drv_agent_config c;

	memset(&c, 0, sizeof(c));
	c.server_url = "http://127.0.0.1:1"; /* nobody listens: the agent keeps retrying */
	c.token = "t";
	c.name = "unit-node";
	c.listen = "127.0.0.1:0";
	c.state_dir = state;
	c.quiet = true;
	c.run_as_self = true;
	return c;
}

Test(agent, starts_serves_metrics_and_stops)
{
	char state[] = "/tmp/drv-agent-XXXXXX", url[64], err[512];
	struct drv_agent_config c;
	struct drv_agent *a = NULL;
	struct drv_http_client cl;
	struct drv_http_reply r;
	int64_t t0;

	cr_assert(not(eq(ptr, mkdtemp(state), NULL)));
	c = base(state);
	c.fake_gpus = "2xH200";
	cr_assert(eq(int, drv_agent_start(&c, &a, err, sizeof(err)), 0), "%s", err);
	cr_assert(gt(int, drv_agent_metrics_port(a), 0));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", drv_agent_metrics_port(a));
	drv_http_client_init(&cl, url, NULL);
	drv_http_reply_init(&r);
	cr_assert(eq(int, drv_http_request(&cl, "GET", "/metrics", NULL, NULL, 0, -1, &r), 0),
		  "%s", cl.err);
	cr_assert(eq(long, r.status, 200));
	cr_assert(not(eq(ptr, strstr(r.body, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""), NULL)));
	cr_assert(not(eq(ptr, strstr(r.body, "modelName=\"NVIDIA H200\""), NULL)));
	cr_assert(not(eq(ptr, strstr(r.body, "drover_agent_registered{Hostname=\"unit-node\"} 0"),
			 NULL)));
	drv_http_reply_release(&r);
	drv_http_client_release(&cl);
	t0 = drv_mono_ms();
	drv_agent_stop(a);
	cr_assert(lt(i64, drv_mono_ms() - t0, 2000), "stop took %lld ms",
		  (long long)(drv_mono_ms() - t0));
	rmtree(state);
}

Test(agent, nvml_missing_fails_or_falls_back)
{
	char state[] = "/tmp/drv-agent-XXXXXX", err[512];
	struct drv_agent_config c;
	struct drv_agent *a = NULL;
	struct drv_prom w;

	cr_assert(not(eq(ptr, mkdtemp(state), NULL)));
	c = base(state);
	c.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
	cr_assert(lt(int, drv_agent_start(&c, &a, err, sizeof(err)), 0));
	cr_assert(eq(ptr, a, NULL));
	cr_assert(not(eq(ptr, strstr(err, "--fake-gpus"), NULL)), "%s", err);

	c.fake_fallback = true;
	cr_assert(eq(int, drv_agent_start(&c, &a, err, sizeof(err)), 0), "%s", err);
	drv_prom_init(&w);
	drv_agent_render_metrics(a, &w, drv_mono_ms());
	cr_assert(not(eq(ptr, strstr(drv_prom_text(&w), "gpu=\"7\""), NULL)), "8 fake GPUs");
	cr_assert(not(eq(ptr, strstr(drv_prom_text(&w), "NVIDIA H100 80GB HBM3"), NULL)));
	drv_prom_release(&w);
	drv_agent_stop(a);
	rmtree(state);
}
