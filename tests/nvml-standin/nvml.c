/*
 * nvml.c: a stand-in libnvidia-ml.so.1 for drover's tests. It exports the
 * NVML entry points drover's nvml backend loads, under their real names,
 * and answers with fixed, known values, so the tests run the backend's
 * real dlopen/dlsym path on a machine without a GPU.
 *
 * The machine it describes: 4 GPUs "NVIDIA H100 80GB HBM3" (81559 MiB).
 *   GPU 0 and 1: 4 direct NVLinks to each other.
 *   GPU 2 and 3: 18 NVLinks each to NVSwitches.
 *   PCIe common ancestors: 0-2 NODE, 0-3 SYS, 1-2 SYS, 1-3 NODE, 2-3 PXB.
 *   GPU i: utilization 10*(i+1) %, memory utilization 5 %, encoder 3+i %,
 *   decoder 7+i %, memory used 1024*(i+1) MiB, reserved 512 MiB (free:
 *   the rest of 81559 MiB; the v1 call counts reserved as free),
 *   temperature 40+i C, memory temperature 50+i C, power 100+i W, SM clock
 *   1980 MHz, memory clock 2619 MHz, energy 123456789+i mJ, PCIe replays i,
 *   PCIe TX 1000*(i+1) KB/s and RX 2000*(i+1) KB/s, NVLink data TX
 *   1000*(i+1) KiB and RX 3000*(i+1) KiB, remapped rows i correctable and
 *   0 uncorrectable (no failure), no vGPU, corrected ECC i, uncorrected 0.
 *   One XID 31 event (an application's page fault) on GPU 1, delivered once.
 * Environment: DROVER_NVML_STANDIN_FAIL=1 makes nvmlInit fail as a
 * machine without a loaded driver does (NVML_ERROR_DRIVER_NOT_LOADED);
 * DROVER_NVML_STANDIN_GPUS=N (1..4) shows only N GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
struct nvmlDevice_st {
	int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;
struct nvmlEventSet_st {
	int xid_pending;
};
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
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
		unsigned long long ullVal;
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

#define OK 0
#define E_INVALID 2
#define E_NOT_SUPPORTED 3
#define E_DRIVER_NOT_LOADED 9
#define E_TIMEOUT 10
#define E_UNINITIALIZED 1

static struct nvmlDevice_st devs[4] = { { 0 }, { 1 }, { 2 }, { 3 } };
static struct nvmlEventSet_st evset;
static int inited;
static const unsigned bus[4] = { 0x1B, 0x43, 0x52, 0x61 };
static const int ancestor[4][4] = {
	{ 0, 0, 40, 50 },
	{ 0, 0, 50, 40 },
	{ 40, 50, 0, 20 },
	{ 50, 40, 20, 0 },
};

static int ngpus(void)
{
	const char *e = getenv("DROVER_NVML_STANDIN_GPUS");
	int n = e ? atoi(e) : 4;
	return n < 1 || n > 4 ? 4 : n;
}

static int valid(nvmlDevice_t d)
{
	return inited && d && d >= devs && d < devs + ngpus();
}

nvmlReturn_t nvmlInit_v2(void)
{
	const char *f = getenv("DROVER_NVML_STANDIN_FAIL");
	if (f && *f && *f != '0')
		return E_DRIVER_NOT_LOADED;
	inited = 1;
	evset.xid_pending = 1;
	return OK;
}

nvmlReturn_t nvmlShutdown(void)
{
	inited = 0;
	return OK;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case OK: return "Success";
	case E_UNINITIALIZED: return "Uninitialized";
	case E_INVALID: return "Invalid Argument";
	case E_NOT_SUPPORTED: return "Not Supported";
	case E_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case E_TIMEOUT: return "Timeout";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len)
{
	snprintf(v, len, "550.54.15-standin");
	return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (!inited)
		return E_UNINITIALIZED;
	*n = (unsigned)ngpus();
	return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (!inited || i >= (unsigned)ngpus())
		return E_INVALID;
	*d = &devs[i];
	return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len)
{
	if (!valid(d))
		return E_INVALID;
	snprintf(name, len, "NVIDIA H100 80GB HBM3");
	return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
	if (!valid(d))
		return E_INVALID;
	snprintf(uuid, len, "GPU-5a1d0000-0000-0000-0000-00000000000%d", d->index);
	return OK;
}

static void fill_pci(nvmlPciInfo_t *p, unsigned b)
{
	memset(p, 0, sizeof(*p));
	p->bus = b;
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "0000:%02X:00.0", b);
	snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", b);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	if (!valid(d))
		return E_INVALID;
	fill_pci(p, bus[d->index]);
	return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	if (!valid(d))
		return E_INVALID;
	m->total = 81559ULL << 20;
	m->used = (1024ULL * (unsigned)(d->index + 1)) << 20;
	m->free = m->total - m->used;
	return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	if (!valid(d))
		return E_INVALID;
	u->gpu = 10u * (unsigned)(d->index + 1);
	u->memory = 5;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
	if (!valid(d) || sensor != 0)
		return E_INVALID;
	*t = 40u + (unsigned)d->index;
	return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	if (!valid(d))
		return E_INVALID;
	*mw = 100000u + 1000u * (unsigned)d->index;
	return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
	if (!valid(d))
		return E_INVALID;
	if (type == 1)
		*mhz = 1980;
	else if (type == 2)
		*mhz = 2619;
	else
		return E_NOT_SUPPORTED;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
	if (!valid(d))
		return E_INVALID;
	*mj = 123456789ULL + (unsigned)d->index;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
					 unsigned long long *n)
{
	if (!valid(d) || counter != 0)
		return E_INVALID;
	*n = type == 0 ? (unsigned long long)d->index : 0;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level)
{
	if (!valid(a) || !valid(b))
		return E_INVALID;
	*level = ancestor[a->index][b->index];
	return OK;
}

/* GPU 0/1: links 0-3 go to each other. GPU 2/3: links 0-17 to switches. */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active)
{
	if (!valid(d) || link >= 18)
		return E_INVALID;
	*active = d->index < 2 ? link < 4 : 1;
	return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned int link, int *type)
{
	if (!valid(d) || link >= 18)
		return E_INVALID;
	*type = d->index < 2 ? 0 : 2;
	return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link,
						 nvmlPciInfo_t *p)
{
	if (!valid(d) || link >= 18)
		return E_INVALID;
	if (d->index < 2)
		fill_pci(p, bus[1 - d->index]);
	else
		fill_pci(p, 0xC0 + link); /* a switch */
	return OK;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *s)
{
	if (!inited)
		return E_UNINITIALIZED;
	*s = &evset;
	return OK;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t s)
{
	return valid(d) ? OK : E_INVALID;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t s, nvmlEventData_t *ev, unsigned int ms)
{
	if (!inited)
		return E_UNINITIALIZED;
	if (s->xid_pending && ngpus() > 1) {
		s->xid_pending = 0;
		memset(ev, 0, sizeof(*ev));
		ev->device = &devs[1];
		ev->eventType = 0x8;
		ev->eventData = 31;
		return OK;
	}
	return E_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t s)
{
	return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	if (!valid(d) || m->version != ((unsigned)sizeof(*m) | 2u << 24))
		return E_INVALID;
	m->total = 81559ULL << 20;
	m->reserved = 512ULL << 20;
	m->used = (1024ULL * (unsigned)(d->index + 1)) << 20;
	m->free = m->total - m->reserved - m->used;
	return OK;
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *us)
{
	if (!valid(d))
		return E_INVALID;
	*u = 3u + (unsigned)d->index;
	*us = 167000;
	return OK;
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *us)
{
	if (!valid(d))
		return E_INVALID;
	*u = 7u + (unsigned)d->index;
	*us = 167000;
	return OK;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *n)
{
	if (!valid(d))
		return E_INVALID;
	*n = (unsigned)d->index;
	return OK;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *kbps)
{
	if (!valid(d) || counter < 0 || counter > 1)
		return E_INVALID;
	*kbps = (counter ? 2000u : 1000u) * (unsigned)(d->index + 1);
	return OK;
}

/* 82: memory temperature; 138/139: NVLink data TX/RX, KiB (every link) */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
	if (!valid(d) || n < 0)
		return E_INVALID;
	for (int k = 0; k < n; k++) {
		v[k].nvmlReturn = OK;
		switch (v[k].fieldId) {
		case 82:
			v[k].valueType = 1;
			v[k].value.uiVal = 50u + (unsigned)d->index;
			break;
		case 138:
		case 139:
			v[k].valueType = 3;
			v[k].value.ullVal = (v[k].fieldId == 138 ? 1000ULL : 3000ULL) *
					    (unsigned)(d->index + 1);
			break;
		default:
			v[k].nvmlReturn = E_NOT_SUPPORTED;
		}
	}
	return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failed)
{
	if (!valid(d))
		return E_INVALID;
	*corr = (unsigned)d->index;
	*unc = *pending = *failed = 0;
	return OK;
}

nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t d, int *mode)
{
	if (!valid(d))
		return E_INVALID;
	*mode = 0; /* NVML_GPU_VIRTUALIZATION_MODE_NONE */
	return OK;
}
