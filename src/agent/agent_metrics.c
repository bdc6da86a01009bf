/*
 * agent_metrics.c: what the agent's /metrics says: dcgm-exporter's GPU
 * series, the InfiniBand/RoCE ports, OOM kills per node and per task, and
 * the agent's own gauges; and the bookkeeping behind the OOM counters.
 *
 * A task's series outlives the task by DRV_AGENT_KEEP_ENDED_MS (5 min), so
 * that a scrape every 15 s or 60 s still sees how it ended (an OOM kill is
 * over in well under a second); drover_node_oom_kills_total counts every
 * OOM kill since the agent started and never goes down while it runs.
 */
#include "drover/clock.h"
#include "drover/metrics.h"
#include "agent_int.h"

#include <string.h>

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

/* The record of an ended task, or NULL. */
static struct agent_ended *ended_find(struct drv_agent *a, const char *id, int64_t epoch)
{
	for (size_t k = 0; k < a->nended; k++)
		if (a->ended[k].epoch == epoch && !strcmp(a->ended[k].id, id))
			return &a->ended[k];
	return NULL;
}

void agent_note_ended(struct drv_agent *a, int64_t now_ms)
{
	size_t k, n = 0;

	for (k = 0; k < a->nended; k++) /* forget what ended long ago */
		if (now_ms - a->ended[k].ended_ms < DRV_AGENT_KEEP_ENDED_MS)
			a->ended[n++] = a->ended[k];
	a->nended = n;
	for (k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		struct agent_ended *e;

		if (t->state != T_EXITED || ended_find(a, t->id, t->epoch))
			continue;
		if (a->nended == DRV_AGENT_MAX_ENDED) /* the oldest goes first */
			memmove(a->ended, a->ended + 1, --a->nended * sizeof(*a->ended));
		e = &a->ended[a->nended++];
		snprintf(e->id, sizeof(e->id), "%s", t->id);
		snprintf(e->job, sizeof(e->job), "%s", t->job_id);
		e->epoch = t->epoch;
		e->oom = t->proc.oom_killed;
		e->ended_ms = now_ms;
		a->oom_kills += e->oom;
	}
}

static void task_oom_sample(struct drv_agent *a, struct drv_prom *w, const char *job,
			    const char *task, bool oom)
{
	drv_prom_family(w, "drover_task_oom_kills_total", "counter",
			"OOM kills of a task's processes (its cgroup's oom_kill), kept 5 minutes "
			"after the task ends.");
	drv_prom_sample(w, "drover_task_oom_kills_total",
			DRV_PROM_LABELS("Hostname", a->name, "hpc_job", job, "task", task),
			oom ? 1 : 0);
}

/* OOM kills: per task (running ones, and ended ones for a while), per node. */
static void render_oom(struct drv_agent *a, struct drv_prom *w)
{
	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];

		if (t->state == T_RUNNING)
			task_oom_sample(a, w, t->job_id, t->id, t->proc.oom_killed);
	}
	for (size_t k = 0; k < a->nended; k++)
		task_oom_sample(a, w, a->ended[k].job, a->ended[k].id, a->ended[k].oom);
	drv_prom_metric(w, "drover_node_oom_kills_total", "counter",
			"Tasks the kernel's OOM killer ended on this node since the agent started.",
			DRV_PROM_LABELS("Hostname", a->name), (double)a->oom_kills);
}

/* The tasks by state; the agent's own gauges. */
static void render_tasks(struct drv_agent *a, struct drv_prom *w)
{
	int running = 0, exited = 0, failed = 0;

	render_oom(a, w);
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		running += t->state == T_RUNNING;
		exited += t->state == T_EXITED;
		failed += t->state == T_FAILED;
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
			"1 when task memory limits are enforced (cgroup v2, or the v1 memory "
			"controller).",
			DRV_PROM_LABELS("Hostname", a->name), a->cg.enabled ? 1 : 0);
}

void drv_agent_render_metrics(struct drv_agent *a, struct drv_prom *w, int64_t now_ms)
{
	pthread_mutex_lock(&a->mu);
	render_ports(a, w, render_gpus(a, w, now_ms));
	render_tasks(a, w);
	pthread_mutex_unlock(&a->mu);
}

