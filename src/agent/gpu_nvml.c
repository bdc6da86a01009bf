/*
 * gpu_nvml.c: the "nvml" GPU backend. It loads NVIDIA's management
 * library, libnvidia-ml.so.1, with dlopen at run time, so drover builds and
 * runs on machines without NVIDIA software; the few NVML prototypes and
 * structures used are declared here, from NVML's public API reference.
 *
 * Read: device count, name, UUID, PCI bus id, memory (used, free,
 * reserved), utilization (GPU, memory, encoder, decoder), temperatures
 * (GPU, memory), power, SM and memory clocks, total energy, PCIe replays
 * and throughput, NVLink data counters, remapped rows, the vGPU mode,
 * volatile ECC counts, XID errors by XID (through an NVML event set,
 * polled without waiting at each sample), and the topology matrix of `nvidia-smi topo -m`: NVLink
 * (direct GPU-GPU links counted per pair; GPUs both wired to NVSwitches are
 * joined by the smaller of their switch link counts) or else the PCIe
 * common ancestor level.
 *
 * A call the device does not support leaves that reading at -1; it is not
 * an error.
 */
#include "drover/gpu.h"
#include "drover/common.h"
#include "drover/model.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the subset of nvml.h used (ABI-stable since the v2 entry points) --- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_TIMEOUT 10
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_NVLINK_DEVICE_TYPE_GPU 0
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2
#define NVML_EVENT_TYPE_XID_CRITICAL 0x0000000000000008ULL
#define NVML_TOPOLOGY_INTERNAL 0
#define NVML_TOPOLOGY_SINGLE 10
#define NVML_TOPOLOGY_MULTIPLE 20
#define NVML_TOPOLOGY_HOSTBRIDGE 30
#define NVML_TOPOLOGY_NODE 40
#define NVML_TOPOLOGY_SYSTEM 50
#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_VALUE_TYPE_DOUBLE 0
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define NVML_VALUE_TYPE_SIGNED_INT 5
#define NVML_GPU_VIRTUALIZATION_MODE_VGPU 2

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlMemory_v2_t: version is its size | 2 << 24 (NVML_STRUCT_VERSION) */
typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		signed long long sllVal;
		signed int siVal;
	} value;
} nvmlFieldValue_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

struct nvml_fns {
	nvmlReturn_t (*Init)(void);
	nvmlReturn_t (*Shutdown)(void);
	const char *(*ErrorString)(nvmlReturn_t);
	nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
	nvmlReturn_t (*DeviceGetCount)(unsigned int *);
	nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*DeviceGetEncoderUtilization)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*DeviceGetDecoderUtilization)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned int *, unsigned int *,
					      unsigned int *, unsigned int *);
	nvmlReturn_t (*DeviceGetVirtualizationMode)(nvmlDevice_t, int *);
	nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*DeviceGetTopologyCommonAncestor)(nvmlDevice_t, nvmlDevice_t, int *);
	nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*DeviceGetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
	nvmlReturn_t (*DeviceGetNvLinkRemoteDeviceType)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
	nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
	nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
};

/* symbol name, offset in struct nvml_fns, required */
static const struct {
	const char *sym;
	const char *alt;
	size_t off;
	int required;
} syms[] = {
#define F(field, sym, alt, req) { sym, alt, offsetof(struct nvml_fns, field), req }
	F(Init, "nvmlInit_v2", "nvmlInit", 1),
	F(Shutdown, "nvmlShutdown", NULL, 1),
	F(ErrorString, "nvmlErrorString", NULL, 1),
	F(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", NULL, 0),
	F(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", 1),
	F(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", 1),
	F(DeviceGetName, "nvmlDeviceGetName", NULL, 1),
	F(DeviceGetUUID, "nvmlDeviceGetUUID", NULL, 1),
	F(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", NULL, 0),
	F(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", NULL, 1),
	F(DeviceGetMemoryInfo_v2, "nvmlDeviceGetMemoryInfo_v2", NULL, 0),
	F(DeviceGetEncoderUtilization, "nvmlDeviceGetEncoderUtilization", NULL, 0),
	F(DeviceGetDecoderUtilization, "nvmlDeviceGetDecoderUtilization", NULL, 0),
	F(DeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter", NULL, 0),
	F(DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput", NULL, 0),
	F(DeviceGetFieldValues, "nvmlDeviceGetFieldValues", NULL, 0),
	F(DeviceGetRemappedRows, "nvmlDeviceGetRemappedRows", NULL, 0),
	F(DeviceGetVirtualizationMode, "nvmlDeviceGetVirtualizationMode", NULL, 0),
	F(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", NULL, 0),
	F(DeviceGetTemperature, "nvmlDeviceGetTemperature", NULL, 0),
	F(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", NULL, 0),
	F(DeviceGetClockInfo, "nvmlDeviceGetClockInfo", NULL, 0),
	F(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption", NULL, 0),
	F(DeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", NULL, 0),
	F(DeviceGetTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor", NULL, 0),
	F(DeviceGetNvLinkState, "nvmlDeviceGetNvLinkState", NULL, 0),
	F(DeviceGetNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2", NULL, 0),
	F(DeviceGetNvLinkRemoteDeviceType, "nvmlDeviceGetNvLinkRemoteDeviceType", NULL, 0),
	F(EventSetCreate, "nvmlEventSetCreate", NULL, 0),
	F(DeviceRegisterEvents, "nvmlDeviceRegisterEvents", NULL, 0),
	F(EventSetWait, "nvmlEventSetWait_v2", NULL, 0),
	F(EventSetFree, "nvmlEventSetFree", NULL, 0),
#undef F
};

struct nvml {
	void *dl;
	struct nvml_fns f;
	int inited;
	nvmlDevice_t dev[DRV_GPU_MAX];
	nvmlEventSet_t events;
	struct drv_gpu_sample xid[DRV_GPU_MAX]; /* only the XID fields are used */
};

static int nvml_open(struct drv_gpu_set *s, const char *arg, char *err, size_t errsz)
{
	const char *lib = arg && *arg ? arg : "libnvidia-ml.so.1";
	struct nvml *n;
	nvmlReturn_t r;
	size_t i;

	n = drv_calloc(1, sizeof(*n));
	n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		snprintf(err, errsz, "cannot load NVIDIA's %s, so no NVIDIA driver here (%s)", lib,
			 dlerror());
		drv_free(n);
		return DRV_EUNSUPP;
	}
	for (i = 0; i < DRV_ARRAY_SIZE(syms); i++) {
		void *p = dlsym(n->dl, syms[i].sym);
		if (!p && syms[i].alt)
			p = dlsym(n->dl, syms[i].alt);
		if (!p && syms[i].required) {
			snprintf(err, errsz, "%s lacks %s; driver too old?", lib, syms[i].sym);
			dlclose(n->dl);
			drv_free(n);
			return DRV_EUNSUPP;
		}
		memcpy((char *)&n->f + syms[i].off, &p, sizeof(p));
	}
	r = n->f.Init();
	if (r != NVML_SUCCESS) {
		snprintf(err, errsz, "NVML could not start: %s (is the NVIDIA driver loaded?)",
			 n->f.ErrorString(r));
		dlclose(n->dl);
		drv_free(n);
		return DRV_EUNSUPP;
	}
	n->inited = 1;
	s->priv = n;
	if (n->f.SystemGetDriverVersion)
		n->f.SystemGetDriverVersion(s->driver_version, sizeof(s->driver_version));
	return 0;
}

static void nvml_close(struct drv_gpu_set *s)
{
	struct nvml *n = s->priv;

	if (!n)
		return;
	if (n->events && n->f.EventSetFree)
		n->f.EventSetFree(n->events);
	if (n->inited)
		n->f.Shutdown();
	dlclose(n->dl);
	drv_free(n);
}

/* NVLink picture of one GPU: direct GPU peers and link counts, and how
 * many links go to NVSwitches. */
struct nvl_view {
	char peer_bus[NVML_NVLINK_MAX_LINKS][32];
	int npeer_links;
	int switch_links;
};

static void nvlink_view(struct nvml *n, nvmlDevice_t d, struct nvl_view *v)
{
	unsigned int l;

	memset(v, 0, sizeof(*v));
	if (!n->f.DeviceGetNvLinkState)
		return;
	for (l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		int active = 0, type = NVML_NVLINK_DEVICE_TYPE_GPU;
		nvmlPciInfo_t pci;
		if (n->f.DeviceGetNvLinkState(d, l, &active) != NVML_SUCCESS || !active)
			continue;
		if (n->f.DeviceGetNvLinkRemoteDeviceType &&
		    n->f.DeviceGetNvLinkRemoteDeviceType(d, l, &type) == NVML_SUCCESS &&
		    type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
			v->switch_links++;
			continue;
		}
		memset(&pci, 0, sizeof(pci));
		if (n->f.DeviceGetNvLinkRemotePciInfo &&
		    n->f.DeviceGetNvLinkRemotePciInfo(d, l, &pci) == NVML_SUCCESS)
			snprintf(v->peer_bus[v->npeer_links++], 32, "%s", pci.busId);
	}
}

/* PCI bus ids compare case-insensitively; NVML pads the domain to 8
 * digits in busId but some paths use 4. Compare from the bus onwards. */
static int same_bus(const char *a, const char *b)
{
	const char *pa = strchr(a, ':'), *pb = strchr(b, ':');
	if (!pa || !pb)
		return 0;
	return drv_strcaseeq(pa, pb);
}

static int nvml_discover(struct drv_gpu_set *s, char *err, size_t errsz)
{
	struct nvml *n = s->priv;
	struct nvl_view *views;
	unsigned int count = 0, i, j;
	nvmlReturn_t r;

	r = n->f.DeviceGetCount(&count);
	if (r != NVML_SUCCESS) {
		snprintf(err, errsz, "NVML could not count GPUs: %s", n->f.ErrorString(r));
		return DRV_EIO;
	}
	if (count > DRV_GPU_MAX)
		count = DRV_GPU_MAX;
	for (i = 0; i < count; i++) {
		struct drv_gpu_info *g = &s->gpus[i];
		nvmlMemory_t mem;
		nvmlPciInfo_t pci;

		r = n->f.DeviceGetHandleByIndex(i, &n->dev[i]);
		if (r != NVML_SUCCESS) {
			snprintf(err, errsz, "NVML could not open GPU %u: %s", i,
				 n->f.ErrorString(r));
			return DRV_EIO;
		}
		g->index = (int)i;
		g->numa_node = -1;
		if (n->f.DeviceGetName(n->dev[i], g->name, sizeof(g->name)) != NVML_SUCCESS)
			snprintf(g->name, sizeof(g->name), "unknown");
		if (n->f.DeviceGetUUID(n->dev[i], g->uuid, sizeof(g->uuid)) != NVML_SUCCESS)
			g->uuid[0] = '\0';
		memset(&pci, 0, sizeof(pci));
		if (n->f.DeviceGetPciInfo && n->f.DeviceGetPciInfo(n->dev[i], &pci) == NVML_SUCCESS)
			snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci.busId);
		if (n->f.DeviceGetMemoryInfo(n->dev[i], &mem) == NVML_SUCCESS)
			g->mem_total_mib = mem.total >> 20;
		g->model = drv_gpu_model_find(g->name);
	}
	s->ngpus = (int)count;

	views = drv_calloc(count ? count : 1, sizeof(*views));
	for (i = 0; i < count; i++)
		nvlink_view(n, n->dev[i], &views[i]);
	for (i = 0; i < count; i++) {
		for (j = 0; j < count; j++) {
			int direct = 0, k, level = -1;
			if (i == j) {
				s->link[i][j] = DRV_LINK_SELF;
				continue;
			}
			for (k = 0; k < views[i].npeer_links; k++)
				direct += same_bus(views[i].peer_bus[k], s->gpus[j].pci_bus_id);
			if (!direct && views[i].switch_links && views[j].switch_links)
				direct = DRV_MIN(views[i].switch_links, views[j].switch_links);
			if (direct) {
				s->link[i][j] = DRV_LINK_NVLINK;
				s->nvlinks[i][j] = (uint8_t)direct;
				continue;
			}
			s->link[i][j] = DRV_LINK_UNKNOWN;
			if (n->f.DeviceGetTopologyCommonAncestor &&
			    n->f.DeviceGetTopologyCommonAncestor(n->dev[i], n->dev[j], &level) ==
				    NVML_SUCCESS) {
				if (level <= NVML_TOPOLOGY_SINGLE)
					s->link[i][j] = DRV_LINK_PIX;
				else if (level <= NVML_TOPOLOGY_MULTIPLE)
					s->link[i][j] = DRV_LINK_PXB;
				else if (level <= NVML_TOPOLOGY_HOSTBRIDGE)
					s->link[i][j] = DRV_LINK_PHB;
				else if (level <= NVML_TOPOLOGY_NODE)
					s->link[i][j] = DRV_LINK_NODE;
				else
					s->link[i][j] = DRV_LINK_SYS;
			}
		}
	}
	drv_free(views);

	/* XID errors arrive as events; a failure here only loses XIDs. */
	if (n->f.EventSetCreate && n->f.DeviceRegisterEvents && n->f.EventSetWait &&
	    n->f.EventSetCreate(&n->events) == NVML_SUCCESS) {
		for (i = 0; i < count; i++)
			n->f.DeviceRegisterEvents(n->dev[i], NVML_EVENT_TYPE_XID_CRITICAL,
						  n->events);
	}
	return 0;
}

static void drain_xids(struct nvml *n, int ngpus)
{
	nvmlEventData_t ev;
	int guard = 0, i;

	if (!n->events)
		return;
	while (guard++ < 256) {
		memset(&ev, 0, sizeof(ev));
		if (n->f.EventSetWait(n->events, &ev, 0) != NVML_SUCCESS)
			break;
		if (!(ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL))
			continue;
		for (i = 0; i < ngpus; i++)
			if (n->dev[i] == ev.device)
				drv_gpu_count_xid(&n->xid[i], (int)ev.eventData);
	}
}

/* An unsigned reading through fn, or -1 when the device does not say. */
#define READ_U(fn, ...) \
	(n->f.fn && n->f.fn(__VA_ARGS__, &v) == NVML_SUCCESS ? (int64_t)v : -1)

/* A field value as an integer; -1 when the device does not say. */
static int64_t field_int(const nvmlFieldValue_t *f)
{
	if (f->nvmlReturn != NVML_SUCCESS)
		return -1;
	switch (f->valueType) {
	case NVML_VALUE_TYPE_DOUBLE: return (int64_t)f->value.dVal;
	case NVML_VALUE_TYPE_UNSIGNED_INT: return f->value.uiVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: return (int64_t)f->value.ulVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (int64_t)f->value.ullVal;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f->value.sllVal;
	case NVML_VALUE_TYPE_SIGNED_INT: return f->value.siVal;
	default: return -1;
	}
}

/* Memory: used, free and (NVML 11.5+) reserved; the v1 call otherwise. */
static void sample_memory(struct nvml *n, nvmlDevice_t d, struct drv_gpu_sample *o)
{
	nvmlMemory_v2_t m2 = { .version = (unsigned)sizeof(nvmlMemory_v2_t) | 2u << 24 };
	nvmlMemory_t mem;

	o->fb_used_mib = o->fb_free_mib = o->fb_reserved_mib = -1;
	if (n->f.DeviceGetMemoryInfo_v2 && n->f.DeviceGetMemoryInfo_v2(d, &m2) == NVML_SUCCESS) {
		o->fb_used_mib = (int64_t)(m2.used >> 20);
		o->fb_free_mib = (int64_t)(m2.free >> 20);
		o->fb_reserved_mib = (int64_t)(m2.reserved >> 20);
	} else if (n->f.DeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS) {
		o->fb_used_mib = (int64_t)(mem.used >> 20);
		o->fb_free_mib = (int64_t)(mem.free >> 20);
	}
}

/* The field-value readings: memory temperature, NVLink data counters. */
static void sample_fields(struct nvml *n, nvmlDevice_t d, struct drv_gpu_sample *o)
{
	nvmlFieldValue_t f[3];

	o->mem_temp_c = -1;
	o->nvlink_kib = -1;
	if (!n->f.DeviceGetFieldValues)
		return;
	memset(f, 0, sizeof(f));
	f[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
	f[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	f[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	f[1].scopeId = f[2].scopeId = UINT32_MAX; /* every link */
	if (n->f.DeviceGetFieldValues(d, 3, f) != NVML_SUCCESS)
		return;
	o->mem_temp_c = (int)field_int(&f[0]);
	if (field_int(&f[1]) >= 0 && field_int(&f[2]) >= 0)
		o->nvlink_kib = field_int(&f[1]) + field_int(&f[2]);
}

/* Utilizations, PCIe, rows, the vGPU mode. */
static void sample_more(struct nvml *n, nvmlDevice_t d, struct drv_gpu_sample *o)
{
	unsigned int v, period, corr, unc, pending, failed;
	nvmlUtilization_t u;
	int mode;

	o->mem_copy_util_pct = -1;
	if (n->f.DeviceGetUtilizationRates && n->f.DeviceGetUtilizationRates(d, &u) == NVML_SUCCESS)
		o->mem_copy_util_pct = (int)u.memory;
	o->enc_util_pct = n->f.DeviceGetEncoderUtilization &&
				  n->f.DeviceGetEncoderUtilization(d, &v, &period) == NVML_SUCCESS ?
			  (int)v : -1;
	o->dec_util_pct = n->f.DeviceGetDecoderUtilization &&
				  n->f.DeviceGetDecoderUtilization(d, &v, &period) == NVML_SUCCESS ?
			  (int)v : -1;
	o->pcie_replays = READ_U(DeviceGetPcieReplayCounter, d);
	o->pcie_tx_bps = READ_U(DeviceGetPcieThroughput, d, NVML_PCIE_UTIL_TX_BYTES);
	o->pcie_rx_bps = READ_U(DeviceGetPcieThroughput, d, NVML_PCIE_UTIL_RX_BYTES);
	o->pcie_tx_bps = o->pcie_tx_bps < 0 ? -1 : o->pcie_tx_bps * 1024;
	o->pcie_rx_bps = o->pcie_rx_bps < 0 ? -1 : o->pcie_rx_bps * 1024;
	o->remap_corr = o->remap_unc = o->remap_failure = -1;
	if (n->f.DeviceGetRemappedRows &&
	    n->f.DeviceGetRemappedRows(d, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
		o->remap_corr = corr;
		o->remap_unc = unc;
		o->remap_failure = failed ? 1 : 0;
	}
	/* a vGPU guest's license is beyond NVML's plain calls: left out there */
	o->vgpu_license = -1;
	if (n->f.DeviceGetVirtualizationMode &&
	    n->f.DeviceGetVirtualizationMode(d, &mode) == NVML_SUCCESS &&
	    mode != NVML_GPU_VIRTUALIZATION_MODE_VGPU)
		o->vgpu_license = 0;
}

static int nvml_sample(struct drv_gpu_set *s, int i, int64_t now_ms, struct drv_gpu_sample *o)
{
	struct nvml *n = s->priv;
	nvmlDevice_t d = n->dev[i];
	nvmlUtilization_t u;
	unsigned int v;
	unsigned long long e;

	(void)now_ms;
	if (i == 0)
		drain_xids(n, s->ngpus);
	o->util_pct = n->f.DeviceGetUtilizationRates &&
			      n->f.DeviceGetUtilizationRates(d, &u) == NVML_SUCCESS ?
		      (int)u.gpu : -1;
	sample_memory(n, d, o);
	sample_fields(n, d, o);
	sample_more(n, d, o);
	o->temp_c = (int)READ_U(DeviceGetTemperature, d, NVML_TEMPERATURE_GPU);
	o->power_w = n->f.DeviceGetPowerUsage && n->f.DeviceGetPowerUsage(d, &v) == NVML_SUCCESS ?
			     v / 1000.0 : NAN;
	o->sm_clock_mhz = (int)READ_U(DeviceGetClockInfo, d, NVML_CLOCK_SM);
	o->mem_clock_mhz = (int)READ_U(DeviceGetClockInfo, d, NVML_CLOCK_MEM);
	o->energy_mj = n->f.DeviceGetTotalEnergyConsumption &&
			       n->f.DeviceGetTotalEnergyConsumption(d, &e) == NVML_SUCCESS ?
		       (int64_t)e : -1;
	o->ecc_sbe = n->f.DeviceGetTotalEccErrors &&
			     n->f.DeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
							  NVML_VOLATILE_ECC, &e) == NVML_SUCCESS ?
		     (int64_t)e : -1;
	o->ecc_dbe = n->f.DeviceGetTotalEccErrors &&
			     n->f.DeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
							  NVML_VOLATILE_ECC, &e) == NVML_SUCCESS ?
		     (int64_t)e : -1;
	o->xid_last = n->xid[i].xid_last;
	o->xid_count = n->xid[i].xid_count;
	o->nxids = n->xid[i].nxids;
	memcpy(o->xids, n->xid[i].xids, sizeof(o->xids));
	return 0;
}

const struct drv_gpu_ops drv_gpu_nvml_ops = {
	.name = "nvml",
	.open = nvml_open,
	.close = nvml_close,
	.discover = nvml_discover,
	.sample = nvml_sample,
};
