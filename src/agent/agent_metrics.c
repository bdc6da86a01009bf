/*
 * agent_metrics.c: what the agent's /metrics says: dcgm-exporter's GPU
 * series (every default counter of its release 4.5.3-4.8.2 that NVML can
 * give, its names, types and labels), XID errors as a counter, the
 * InfiniBand/RoCE ports under node_exporter's names, OOM kills per node
 * and per task, and the agent's own gauges; and the bookkeeping behind the
 * OOM counters.
 *
 * A task's series outlives the task by DRV_AGENT_KEEP_ENDED_MS (5 min), so
 * that a scrape every 15 s or 60 s still sees how it ended (an OOM kill is
 * over in well under a second); drover_node_oom_kills_total counts every
 * OOM kill since the agent started and never goes down while it runs.
 */
#include "drover/clock.h"
#include "drover/metrics.h"
#include "agent_int.h"

#include <stddef.h>
#include <string.h>

/* dcgm-exporter's default counters that NVML can give (the list of its
 * release 4.5.3-4.8.2: tests/unit/data/dcgm-exporter-default-counters.csv),
 * its names and types; where each reading sits in a struct drv_gpu_sample
 * and whether it is an int ('i'), an int64_t ('l') or a double ('d'). */
struct gpu_family {
	const char *name, *type, *help;
	size_t off;
	char kind;
};

#define INT_AT(f) offsetof(struct drv_gpu_sample, f), 'i'
#define I64_AT(f) offsetof(struct drv_gpu_sample, f), 'l'
#define DBL_AT(f) offsetof(struct drv_gpu_sample, f), 'd'

static const struct gpu_family gpu_families[] = {
	{ "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", INT_AT(sm_clock_mhz) },
	{ "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
	  INT_AT(mem_clock_mhz) },
	{ "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", INT_AT(mem_temp_c) },
	{ "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", INT_AT(temp_c) },
	{ "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", DBL_AT(power_w) },
	{ "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
	  "Total energy consumption since boot (in mJ).", I64_AT(energy_mj) },
	{ "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays (retries) since boot.",
	  I64_AT(pcie_replays) },
	{ "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", INT_AT(util_pct) },
	{ "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory interface utilization (in %).",
	  INT_AT(mem_copy_util_pct) },
	{ "DCGM_FI_DEV_ENC_UTIL", "gauge", "Video encoder utilization (in %).",
	  INT_AT(enc_util_pct) },
	{ "DCGM_FI_DEV_DEC_UTIL", "gauge", "Video decoder utilization (in %).",
	  INT_AT(dec_util_pct) },
	{ "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
	  I64_AT(xid_last) },
	{ "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", I64_AT(fb_free_mib) },
	{ "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", I64_AT(fb_used_mib) },
	{ "DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved by the driver (in MiB).",
	  I64_AT(fb_reserved_mib) },
	{ "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
	  "NVLink data sent and received over all links since boot (in KiB, NVML's counters).",
	  I64_AT(nvlink_kib) },
	{ "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU license status (0: not a vGPU guest).",
	  INT_AT(vgpu_license) },
	{ "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
	  "Memory rows remapped for uncorrectable errors.", I64_AT(remap_unc) },
	{ "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
	  "Memory rows remapped for correctable errors.", I64_AT(remap_corr) },
	{ "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "1 when a memory row remapping has failed.",
	  INT_AT(remap_failure) },
	{ "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe bytes sent per second (NVML's sample).",
	  I64_AT(pcie_tx_bps) },
	{ "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe bytes received per second (NVML's sample).",
	  I64_AT(pcie_rx_bps) },
};

/* Family f's reading in s; < 0 when the GPU does not say. */
static double gpu_value(const struct gpu_family *f, const struct drv_gpu_sample *s)
{
	const char *p = (const char *)s + f->off;
	int i;
	int64_t l;
	double d;

	switch (f->kind) {
	case 'i':
		memcpy(&i, p, sizeof(i));
		return i;
	case 'l':
		memcpy(&l, p, sizeof(l));
		return (double)l;
	default:
		memcpy(&d, p, sizeof(d));
		return d == d ? d : -1;
	}
}

/* One GPU's labels as dcgm-exporter writes them (hpc_job while a job is
 * on it), or (dcgm false) for drover's own GPU series, which outlive jobs
 * and keep promtool's snake_case: no hpc_job, modelName or
 * DCGM_FI_DRIVER_VERSION. With room
 * for one more pair (name, value) at the end; returns where the list's
 * NULL is (a pair's value may be NULL: left out). */
struct gpu_labels {
	char idx[8], dev[16];
	const char *l[20];
};

static size_t gpu_labels(const struct drv_agent *a, int g, bool dcgm, struct gpu_labels *x)
{
	const struct drv_gpu_info *gi = &a->gpus.gpus[g];
	const char *job = dcgm && a->gpus.use[g].job[0] ? a->gpus.use[g].job : NULL;
	size_t n = 0;

	snprintf(x->idx, sizeof(x->idx), "%d", g);
	snprintf(x->dev, sizeof(x->dev), "nvidia%d", g);
	x->l[n++] = "gpu", x->l[n++] = x->idx;
	x->l[n++] = "UUID", x->l[n++] = gi->uuid;
	x->l[n++] = "pci_bus_id", x->l[n++] = gi->pci_bus_id[0] ? gi->pci_bus_id : NULL;
	x->l[n++] = "device", x->l[n++] = x->dev;
	x->l[n++] = "modelName", x->l[n++] = dcgm ? gi->name : NULL;
	x->l[n++] = "Hostname", x->l[n++] = a->name;
	x->l[n++] = "DCGM_FI_DRIVER_VERSION";
	x->l[n++] = dcgm && a->gpus.driver_version[0] ? a->gpus.driver_version : NULL;
	x->l[n++] = "hpc_job", x->l[n++] = job;
	x->l[n] = NULL;
	return n;
}

/* The GPU's XID errors by XID, a counter (DCGM_FI_DEV_XID_ERRORS is a
 * gauge of the last one, which increase() cannot count). */
static void render_xids(struct drv_agent *a, struct drv_prom *w, int g,
			const struct drv_gpu_sample *s)
{
	struct gpu_labels x;
	char xid[16];
	size_t n;

	n = gpu_labels(a, g, false, &x);
	for (int k = 0; k < s->nxids; k++) {
		snprintf(xid, sizeof(xid), "%d", s->xids[k].xid);
		x.l[n] = "xid", x.l[n + 1] = xid, x.l[n + 2] = NULL;
		drv_prom_family(w, "drover_gpu_xid_errors_total", "counter",
				"XID errors the driver reported since the agent started, by XID.");
		drv_prom_sample(w, "drover_gpu_xid_errors_total", x.l, (double)s->xids[k].n);
	}
}

/*
 * Each job's share of each GPU it runs on, beside the GPU's own series:
 * its allocated part (gpu_milli / 1000) and its part of the utilisation
 * and of the framebuffer used, split by allocation among the jobs running
 * on the GPU (agent_gpu_share), so that summing over jobs gives the GPU's
 * reading once, however many jobs share it (docs/agent.md).
 */
struct gpu_jobs {
	int n;
	const char *job[8];
	double milli[8], frac[8];
};

/* The jobs running on GPU g, with their gpu_milli and share of it. */
static void jobs_on(const struct drv_agent *a, int g, struct gpu_jobs *x)
{
	x->n = 0;
	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		int j;

		for (int q = 0; t->state == T_RUNNING && q < t->ngpus; q++) {
			if (t->gpus[q] != g)
				continue;
			for (j = 0; j < x->n && strcmp(x->job[j], t->job_id); j++)
				;
			if (j == x->n) {
				if (x->n == (int)DRV_ARRAY_SIZE(x->job))
					continue;
				x->job[j] = t->job_id;
				x->milli[j] = x->frac[j] = 0;
				x->n++;
			}
			x->milli[j] += t->gpu_milli > 0 ? t->gpu_milli : 1000;
			x->frac[j] += agent_gpu_share(a, t, g);
		}
	}
}

static void render_shares(struct drv_agent *a, struct drv_prom *w,
			  const struct drv_gpu_sample *s, const bool *ok)
{
	static const struct {
		const char *name, *help;
	} f[] = {
		{ "drover_job_gpu_share", "The job's allocated part of the GPU (1: the whole GPU)." },
		{ "drover_job_gpu_utilization_percent",
		  "The job's part of the GPU's utilization (DCGM_FI_DEV_GPU_UTIL split among the "
		  "jobs on the GPU by their shares; sums over jobs give the GPU's)." },
		{ "drover_job_gpu_memory_used_bytes",
		  "The job's part of the GPU's framebuffer used, split the same way." },
	};
	struct gpu_jobs x[DRV_GPU_MAX];
	char idx[8];

	for (int g = 0; g < a->gpus.ngpus; g++)
		if (ok[g] && a->gpus.use[g].job[0])
			jobs_on(a, g, &x[g]);
		else
			x[g].n = 0;
	for (size_t k = 0; k < DRV_ARRAY_SIZE(f); k++) {
		for (int g = 0; g < a->gpus.ngpus; g++) {
			snprintf(idx, sizeof(idx), "%d", g);
			for (int j = 0; j < x[g].n; j++) {
				double fr = x[g].frac[j];
				double v = k == 0 ? x[g].milli[j] / 1000.0
					 : k == 1 ? (s[g].util_pct >= 0 ? s[g].util_pct * fr : -1)
					 : (s[g].fb_used_mib >= 0 ? s[g].fb_used_mib * fr * 1048576.0 : -1);

				if (v < 0)
					continue;
				drv_prom_family(w, f[k].name, "gauge", f[k].help);
				drv_prom_sample(w, f[k].name,
						DRV_PROM_LABELS("Hostname", a->name, "gpu", idx, "UUID",
								a->gpus.gpus[g].uuid, "hpc_job",
								x[g].job[j]),
						v);
			}
		}
	}
}

/* The GPUs' families, with the job each GPU runs; returns the busy GPUs. */
static int render_gpus(struct drv_agent *a, struct drv_prom *w, int64_t now_ms)
{
	struct drv_gpu_sample s[DRV_GPU_MAX];
	bool ok[DRV_GPU_MAX];
	struct gpu_labels x;
	int g, busy = 0;

	for (g = 0; g < a->gpus.ngpus; g++) {
		ok[g] = drv_gpu_sample(&a->gpus, g, now_ms, &s[g]) == 0;
		busy += a->gpus.use[g].job[0] != '\0';
	}
	for (size_t f = 0; a->gpu_metrics && f < DRV_ARRAY_SIZE(gpu_families); f++) {
		const struct gpu_family *fam = &gpu_families[f];

		for (g = 0; g < a->gpus.ngpus; g++) {
			double v = ok[g] ? gpu_value(fam, &s[g]) : -1;

			if (v < 0)
				continue;
			drv_prom_family(w, fam->name, fam->type, fam->help);
			gpu_labels(a, g, true, &x);
			drv_prom_sample(w, fam->name, x.l, v);
		}
	}
	for (g = 0; g < a->gpus.ngpus; g++)
		if (ok[g])
			render_xids(a, w, g, &s[g]);
	render_shares(a, w, s, ok);
	return busy;
}

/* The InfiniBand/RoCE ports under node_exporter's infiniband collector's
 * names and labels (device, port; Hostname as on every agent series), so
 * its dashboards and rules work: bytes both ways, link rate, state. */
static void render_ports(struct drv_agent *a, struct drv_prom *w, int busy, int64_t now_ms)
{
	static const struct {
		const char *name, *type, *help;
	} f[] = {
		{ "node_infiniband_port_data_received_bytes_total", "counter",
		  "Data received on the port, bytes (port_rcv_data x 4)." },
		{ "node_infiniband_port_data_transmitted_bytes_total", "counter",
		  "Data sent on the port, bytes (port_xmit_data x 4)." },
		{ "node_infiniband_rate_bytes_per_second", "gauge",
		  "The port's link rate, bytes per second." },
		{ "node_infiniband_state_id", "gauge",
		  "The port's state as a number (4: ACTIVE, 1: DOWN)." },
	};
	char port[8];

	drv_hca_refresh(&a->hcas, busy, now_ms);
	for (size_t k = 0; k < DRV_ARRAY_SIZE(f); k++) {
		for (int h = 0; h < a->hcas.nhcas; h++) {
			const struct drv_hca *hc = &a->hcas.hcas[h];

			for (int p = 0; p < hc->nports; p++) {
				const struct drv_hca_port *pp = &hc->ports[p];
				const double v[] = { (double)pp->rx_bytes, (double)pp->tx_bytes,
						     pp->rate_gbps * 125000000.0, pp->state_id };

				drv_prom_family(w, f[k].name, f[k].type, f[k].help);
				snprintf(port, sizeof(port), "%d", pp->port);
				drv_prom_sample(w, f[k].name,
						DRV_PROM_LABELS("device", hc->name, "port", port,
								"Hostname", a->name),
						v[k]);
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
	render_ports(a, w, render_gpus(a, w, now_ms), now_ms);
	render_tasks(a, w);
	pthread_mutex_unlock(&a->mu);
}

