/*
 * agent_routes.c: the agent's own HTTP endpoints over src/http: /metrics
 * (dcgm-exporter's names) and /healthz, open; /v1/inventory and task logs
 * (GET /v1/tasks/ID/logs) only with the cluster token as a bearer token,
 * since they tell what runs where and what every task printed (issue 12).
 */
#include "drover/clock.h"
#include "drover/metrics.h"
#include "agent_int.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const xid_help = "Value of the last XID error encountered.";

/* dcgm-exporter's metric families, in the order render_gpus knows them. */
static const struct {
	const char *name, *type, *help;
} fam[] = {
	{ "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)." },
	{ "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)." },
	{ "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)." },
	{ "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)." },
	{ "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)." },
	{ "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)." },
	{ "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)." },
	{ "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
	  "Total energy consumption since boot (in mJ)." },
	{ "DCGM_FI_DEV_XID_ERRORS", "gauge", NULL },
};

/* One family's value for GPU sample s; < 0 when the GPU does not say. */
static double gpu_value(size_t f, const struct drv_gpu_sample *s)
{
	switch (f) {
	case 0: return s->util_pct;
	case 1: return (double)s->fb_used_mib;
	case 2: return (double)s->fb_free_mib;
	case 3: return s->temp_c;
	case 4: return s->power_w == s->power_w ? s->power_w : -1;
	case 5: return s->sm_clock_mhz;
	case 6: return s->mem_clock_mhz;
	case 7: return (double)s->energy_mj;
	default: return (double)s->xid_last;
	}
}

/* The GPUs' families, with the job each GPU runs; returns the busy GPUs. */
static int render_gpus(struct drv_agent *a, struct drv_prom *w, int64_t now_ms)
{
	struct drv_gpu_sample s[DRV_GPU_MAX];
	bool ok[DRV_GPU_MAX];
	char idx[DRV_GPU_MAX][8], dev[DRV_GPU_MAX][16];
	int g, busy = 0;

	for (g = 0; g < a->gpus.ngpus; g++) {
		ok[g] = drv_gpu_sample(&a->gpus, g, now_ms, &s[g]) == 0;
		busy += a->gpus.use[g].job[0] != '\0';
		snprintf(idx[g], sizeof(idx[g]), "%d", g);
		snprintf(dev[g], sizeof(dev[g]), "nvidia%d", g);
	}
	for (size_t f = 0; a->gpu_metrics && f < DRV_ARRAY_SIZE(fam); f++) {
		bool any = false;

		for (g = 0; g < a->gpus.ngpus; g++) {
			double v = ok[g] ? gpu_value(f, &s[g]) : -1;

			if (v < 0)
				continue;
			if (!any)
				drv_prom_family(w, fam[f].name, fam[f].type,
						fam[f].help ? fam[f].help : xid_help);
			any = true;
			drv_prom_sample(w, fam[f].name,
					DRV_PROM_LABELS("gpu", idx[g], "UUID", a->gpus.gpus[g].uuid,
							"device", dev[g], "modelName",
							a->gpus.gpus[g].name, "Hostname", a->name,
							"hpc_job", a->gpus.use[g].job[0] ?
							a->gpus.use[g].job : NULL),
					v);
		}
	}
	return busy;
}

/* The InfiniBand/RoCE ports: bytes both ways, and whether each is up. */
static void render_ports(struct drv_agent *a, struct drv_prom *w, int busy)
{
	static const char *const names[] = { "drover_ib_port_receive_bytes_total",
		"drover_ib_port_transmit_bytes_total", "drover_ib_port_active" };
	static const char *const helps[] = {
		"Bytes received on an InfiniBand/RoCE port (port_rcv_data x 4).",
		"Bytes sent on an InfiniBand/RoCE port (port_xmit_data x 4).",
		"1 when the InfiniBand/RoCE port is ACTIVE." };
	char port[8];

	drv_hca_refresh(&a->hcas, busy);
	for (int f = 0; f < 3; f++) {
		for (int h = 0; h < a->hcas.nhcas; h++) {
			const struct drv_hca *hc = &a->hcas.hcas[h];

			for (int p = 0; p < hc->nports; p++) {
				const struct drv_hca_port *pp = &hc->ports[p];
				double v = f == 0 ? (double)pp->rx_bytes : f == 1 ? (double)pp->tx_bytes :
					   !strcmp(pp->state, "ACTIVE");

				drv_prom_family(w, names[f], f < 2 ? "counter" : "gauge", helps[f]);
				snprintf(port, sizeof(port), "%d", pp->port);
				drv_prom_sample(w, names[f],
						DRV_PROM_LABELS("Hostname", a->name, "hca", hc->name,
								"port", port, "link_layer",
								pp->link_layer),
						v);
			}
		}
	}
}

/* Per task its OOM kills; the tasks by state; the agent's own gauges. */
static void render_tasks(struct drv_agent *a, struct drv_prom *w)
{
	int running = 0, exited = 0, failed = 0;

	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		running += t->state == T_RUNNING;
		exited += t->state == T_EXITED;
		failed += t->state == T_FAILED;
		if (t->state == T_FAILED)
			continue;
		drv_prom_family(w, "drover_task_oom_kills_total", "counter",
				"OOM kills of a task's processes (cgroup memory.events).");
		drv_prom_sample(w, "drover_task_oom_kills_total",
				DRV_PROM_LABELS("Hostname", a->name, "hpc_job", t->job_id, "task",
						t->id),
				t->proc.oom_killed ? 1 : 0);
	}
	drv_prom_family(w, "drover_agent_tasks", "gauge", "Tasks the agent knows, by state.");
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "running"), running);
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "exited"), exited);
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "failed"), failed);
	drv_prom_metric(w, "drover_agent_registered", "gauge",
			"1 while the agent holds a session with the controller.",
			DRV_PROM_LABELS("Hostname", a->name),
			a->session && !a->need_register ? 1 : 0);
	drv_prom_metric(w, "drover_agent_cgroup_limits", "gauge",
			"1 when task memory/CPU limits are enforced with cgroup v2.",
			DRV_PROM_LABELS("Hostname", a->name), a->cg.enabled ? 1 : 0);
}

void drv_agent_render_metrics(struct drv_agent *a, struct drv_prom *w, int64_t now_ms)
{
	pthread_mutex_lock(&a->mu);
	render_ports(a, w, render_gpus(a, w, now_ms));
	render_tasks(a, w);
	pthread_mutex_unlock(&a->mu);
}

static int h_metrics(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_prom w;

	drv_prom_init(&w);
	drv_agent_render_metrics(ctx, &w, drv_mono_ms());
	drv_http_resp_bytes(resp, 200, DRV_PROM_CONTENT_TYPE, drv_prom_text(&w), drv_prom_len(&w));
	drv_prom_release(&w);
	return 0;
}

static int h_healthz(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	json_t *o;

	pthread_mutex_lock(&a->mu);
	o = json_pack("{s:s, s:s, s:s, s:i, s:b}", "status", "ok", "version", DRV_AGENT_VERSION,
		      "backend", a->backend, "gpus", a->gpus.ngpus, "registered",
		      a->session && !a->need_register);
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

/* Whether req carries "Authorization: Bearer <the cluster token>"; else a
 * 401 with the message why. Compared in time that does not depend on where
 * the first difference is. */
static bool cluster_token_ok(const struct drv_agent *a, struct drv_http_req *req,
			     struct drv_http_resp *resp, const char *why)
{
	const char *auth = drv_http_req_header(req, "Authorization");
	size_t n = strlen(a->token), m;
	unsigned char diff = 0;

	if (auth && !strncmp(auth, "Bearer ", 7)) {
		auth += 7;
		m = strlen(auth);
		diff = m != n;
		for (size_t i = 0; i < n; i++)
			diff |= (unsigned char)a->token[i] ^ (unsigned char)auth[i < m ? i : 0];
		if (!diff)
			return true;
	}
	drv_http_resp_error(resp, 401, "unauthorized", NULL, "%s", why);
	return false;
}

static int h_logs(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0);
	const char *stream = drv_http_req_query(req, "stream");
	int64_t offset, limit;
	char path[PATH_MAX], next[32];
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	if (!cluster_token_ok(a, req, resp, "task logs need the cluster token"))
		return 0;
	if (!stream)
		stream = "stdout";
	if (strcmp(stream, "stdout") && strcmp(stream, "stderr")) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "stream: '%s', expected stdout or stderr", stream);
		return 0;
	}
	if (drv_http_req_query_int(req, "offset", 0, 0, INT64_MAX, &offset, resp) < 0 ||
	    drv_http_req_query_int(req, "limit", 1 << 20, 0, 16 << 20, &limit, resp) < 0)
		return 0;
	if (!agent_valid_task_id(id)) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
				    id ? id : "", a->name);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/tasks/%s/%s.%s", a->state_dir, id, id,
		 strcmp(stream, "stdout") ? "err" : "out");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s", id,
				    a->name);
		return 0;
	}
	if (offset > st.st_size)
		offset = st.st_size;
	if (limit > st.st_size - offset)
		limit = st.st_size - offset;
	buf = drv_malloc((size_t)limit + 1);
	n = pread(fd, buf, (size_t)limit, offset);
	close(fd);
	if (n < 0)
		n = 0;
	drv_http_resp_bytes(resp, 200, "text/plain; charset=utf-8", buf, (size_t)n);
	snprintf(next, sizeof(next), "%lld", (long long)(offset + n));
	drv_http_resp_header(resp, "X-Drover-Next-Offset", next);
	drv_free(buf);
	return 0;
}

/* What the agent tells the controller at register: GPUs, matrix, HCAs, and
 * the tasks running now (cluster token). */
static int h_inventory(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	json_t *o;

	if (!cluster_token_ok(a, req, resp, "the inventory needs the cluster token"))
		return 0;
	pthread_mutex_lock(&a->mu);
	o = agent_register_body(a);
	json_object_set_new(o, "cgroup_limits", json_boolean(a->cg.enabled));
	if (!a->cg.enabled)
		json_object_set_new(o, "cgroup_why", json_string(a->cg.why));
	json_object_set_new(o, "driver_version", json_string(a->gpus.driver_version));
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

const struct drv_http_route agent_http_routes[] = {
	{ "GET", "/metrics", h_metrics, 0 },
	{ "GET", "/v1/inventory", h_inventory, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ "GET", "/v1/tasks/{}/logs", h_logs, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct drv_http_route agent_private_routes[] = {
	{ "GET", "/v1/inventory", h_inventory, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ "GET", "/v1/tasks/{}/logs", h_logs, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct drv_http_route agent_metrics_routes[] = {
	{ "GET", "/metrics", h_metrics, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ NULL, NULL, NULL, 0 },
};

