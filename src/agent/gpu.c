/*
 * gpu.c: the GPU set front (backend selection, use marks, link names) and
 * the "fake" backend.
 *
 * The fake backend gives N GPUs of one catalog model. Its readings are a
 * pure function of the GPU index, the model's published figures, whether a
 * job is on the GPU, and the time the caller passes in, so tests and the
 * simulator-like demo see the same numbers run after run: an idle GPU sits
 * at 0 % and ~10 % of board power; a busy one at 83-93 % utilization,
 * ~72 % of its memory, ~80 % of board power and boost clocks, wobbling a
 * little every 5 seconds. Energy is the integral of that power over the
 * sampling times.
 */
#include "drover/gpu.h"
#include "drover/common.h"
#include "drover/model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *drv_gpu_link_name(enum drv_gpu_link l, int nvlinks, char *buf, size_t bufsz)
{
	static const char *const names[] = { "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?" };

	if (l == DRV_LINK_NVLINK)
		snprintf(buf, bufsz, "NV%d", nvlinks);
	else
		snprintf(buf, bufsz, "%s", names[l <= DRV_LINK_UNKNOWN ? l : DRV_LINK_UNKNOWN]);
	return buf;
}

int drv_gpu_parse_fake_spec(const char *spec, int *count, int *model, char *err, size_t errsz)
{
	const char *name = spec;
	long n = 1;

	if (!spec || !*spec) {
		snprintf(err, errsz, "empty GPU spec, expected COUNTxMODEL such as 8xH100");
		return DRV_EINVAL;
	}
	if (isdigit((unsigned char)spec[0])) {
		char *end;
		errno = 0;
		n = strtol(spec, &end, 10);
		if (errno || (*end != 'x' && *end != 'X') || end[1] == '\0') {
			snprintf(err, errsz, "'%s': expected COUNTxMODEL such as 8xH100", spec);
			return DRV_EINVAL;
		}
		name = end + 1;
	}
	if (n < 1 || n > DRV_GPU_MAX) {
		snprintf(err, errsz, "'%s': GPU count %ld, expected 1 to %d", spec, n, DRV_GPU_MAX);
		return DRV_EINVAL;
	}
	*model = drv_gpu_model_find(name);
	if (*model < 0) {
		snprintf(err, errsz, "'%s': unknown GPU model '%s', expected a catalog model such "
			 "as H100, H200, B200, GB200, A100, L40S", spec, name);
		return DRV_EINVAL;
	}
	*count = (int)n;
	return 0;
}

int drv_gpu_open(struct drv_gpu_set *s, const char *name, const char *arg, char *err,
		 size_t errsz)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (!strcmp(name, "nvml"))
		s->ops = &drv_gpu_nvml_ops;
	else if (!strcmp(name, "fake"))
		s->ops = &drv_gpu_fake_ops;
	else {
		snprintf(err, errsz, "unknown GPU backend '%s', expected nvml or fake", name);
		return DRV_EINVAL;
	}
	rc = s->ops->open(s, arg, err, errsz);
	if (rc < 0) {
		s->ops = NULL;
		return rc;
	}
	rc = s->ops->discover(s, err, errsz);
	if (rc < 0)
		drv_gpu_close(s);
	return rc;
}

void drv_gpu_close(struct drv_gpu_set *s)
{
	if (s->ops)
		s->ops->close(s);
	s->ops = NULL;
	s->priv = NULL;
}

int drv_gpu_sample(struct drv_gpu_set *s, int i, int64_t now_ms, struct drv_gpu_sample *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->ops || i < 0 || i >= s->ngpus)
		return DRV_EINVAL;
	return s->ops->sample(s, i, now_ms, out);
}

void drv_gpu_count_xid(struct drv_gpu_sample *s, int x)
{
	int k;

	for (k = 0; k < s->nxids && s->xids[k].xid != x; k++)
		;
	if (k == s->nxids) {
		if (k == DRV_GPU_XIDS)
			k--;
		else
			s->nxids++;
		s->xids[k].xid = x;
	}
	s->xids[k].n++;
	s->xid_last = x;
	s->xid_count++;
}

void drv_gpu_set_use(struct drv_gpu_set *s, int i, const char *job, int64_t now_ms)
{
	if (i < 0 || i >= s->ngpus)
		return;
	snprintf(s->use[i].job, sizeof(s->use[i].job), "%s", job ? job : "");
	s->use[i].since_ms = now_ms;
}

/* --------------------------------------------------------------------------
 * The fake backend.
 */

struct fake {
	int model;
	int64_t last_ms[DRV_GPU_MAX];
	double energy_mj[DRV_GPU_MAX];
	double nvlink_kib[DRV_GPU_MAX];
};

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int fake_open(struct drv_gpu_set *s, const char *arg, char *err, size_t errsz)
{
	struct fake *f;
	int n, model, rc;

	rc = drv_gpu_parse_fake_spec(arg, &n, &model, err, errsz);
	if (rc < 0)
		return rc;
	f = drv_calloc(1, sizeof(*f));
	f->model = model;
	s->priv = f;
	s->ngpus = n;
	snprintf(s->driver_version, sizeof(s->driver_version), "fake");
	return 0;
}

static void fake_close(struct drv_gpu_set *s)
{
	drv_free(s->priv);
}

static int fake_discover(struct drv_gpu_set *s, char *err, size_t errsz)
{
	struct fake *f = s->priv;
	const struct drv_gpu_model *m = drv_gpu_model_at(f->model);
	int i, j, n = s->ngpus;
	int nvl = m->nvlink_gen >= 5 ? m->nvlink_gbps / 100 : m->nvlink_gbps / 50;

	for (i = 0; i < n; i++) {
		struct drv_gpu_info *g = &s->gpus[i];
		g->index = i;
		snprintf(g->name, sizeof(g->name), "%s", m->nvml_name);
		snprintf(g->uuid, sizeof(g->uuid), "GPU-fa4e0000-0000-4000-8000-%012x", i);
		snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "00000000:%02X:00.0",
			 0x18 + 0x10 * i);
		g->model = f->model;
		g->mem_total_mib = (uint64_t)m->mem_mib;
		g->numa_node = n > 1 && i >= n / 2 ? 1 : 0;
		for (j = 0; j < n; j++) {
			if (i == j)
				s->link[i][j] = DRV_LINK_SELF;
			else if (nvl > 0) {
				s->link[i][j] = DRV_LINK_NVLINK;
				s->nvlinks[i][j] = (uint8_t)nvl;
			} else if (i / 2 == j / 2)
				s->link[i][j] = DRV_LINK_PIX;
			else if ((i >= n / 2) == (j >= n / 2))
				s->link[i][j] = DRV_LINK_NODE;
			else
				s->link[i][j] = DRV_LINK_SYS;
		}
	}
	return 0;
}

static int fake_mem_clock(const struct drv_gpu_model *m)
{
	if (m->nvlink_gen >= 5)
		return 3996;
	if (m->nvlink_gen == 4)
		return 2619;
	if (m->nvlink_gen == 3)
		return 1593;
	if (m->nvlink_gen > 0)
		return 877;
	return 6251; /* GDDR boards */
}

/* The readings that follow the work on GPU i: busy or idle. */
static void fake_load(const struct drv_gpu_model *m, int i, bool busy, int wob, uint64_t h,
		      struct drv_gpu_sample *o)
{
	o->util_pct = busy ? 88 + wob : 0;
	o->mem_copy_util_pct = busy ? 36 + wob : 0;
	o->power_w = busy ? m->tdp_w * 0.8 + wob * m->tdp_w / 200.0 : m->tdp_w * 0.1 + (double)(h % 3);
	o->temp_c = busy ? 64 + wob / 2 + i % 3 : 31 + i % 3;
	o->mem_temp_c = o->temp_c + (busy ? 8 : 3);
	o->sm_clock_mhz = !busy ? 345 : m->nvlink_gen >= 4 ? 1980 : 1410;
	o->pcie_tx_bps = busy ? 2000000000LL + wob * 50000000LL : 1000000;
	o->pcie_rx_bps = busy ? 3000000000LL + wob * 50000000LL : 2000000;
}

static int fake_sample(struct drv_gpu_set *s, int i, int64_t now_ms, struct drv_gpu_sample *o)
{
	struct fake *f = s->priv;
	const struct drv_gpu_model *m = drv_gpu_model_at(f->model);
	bool busy = s->use[i].job[0] != '\0';
	uint64_t h = mix64((uint64_t)i * 1000003u + (uint64_t)(now_ms / 5000));
	int wob = (int)(h % 11) - 5;       /* -5..5 */
	int64_t total = m->mem_mib;
	double dt = f->last_ms[i] && now_ms > f->last_ms[i] ? (double)(now_ms - f->last_ms[i]) : 0;

	fake_load(m, i, busy, wob, h, o);
	o->fb_reserved_mib = total * 6 / 1000;
	o->fb_used_mib = 0;
	if (busy) {
		o->fb_used_mib = total * 72 / 100 + (int64_t)(h % 7) * total / 1000;
		if (s->use[i].mem_limit_mib > 0 && o->fb_used_mib > s->use[i].mem_limit_mib)
			o->fb_used_mib = s->use[i].mem_limit_mib;
	}
	o->fb_free_mib = total - o->fb_reserved_mib - o->fb_used_mib;
	o->mem_clock_mhz = fake_mem_clock(m);
	f->energy_mj[i] += o->power_w * dt;
	/* busy NVLink GPUs move a tenth of their link bandwidth (GB/s) */
	if (busy && m->nvlink_gbps > 0)
		f->nvlink_kib[i] += m->nvlink_gbps / 10.0 * 1e9 / 1024.0 * dt / 1000.0;
	f->last_ms[i] = now_ms;
	o->energy_mj = (int64_t)f->energy_mj[i];
	o->nvlink_kib = m->nvlink_gbps > 0 ? (int64_t)f->nvlink_kib[i] : -1;
	o->enc_util_pct = o->dec_util_pct = 0;
	o->pcie_replays = o->remap_corr = o->remap_unc = 0;
	o->vgpu_license = o->remap_failure = 0;
	return 0;
}

const struct drv_gpu_ops drv_gpu_fake_ops = {
	.name = "fake",
	.open = fake_open,
	.close = fake_close,
	.discover = fake_discover,
	.sample = fake_sample,
};
