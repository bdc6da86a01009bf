/*
 * gpu.h: the node's GPUs and fabric, as the agent sees them. Owned by the
 * agent engineer (src/agent/gpu*.c, src/agent/ib.c).
 *
 * GPU backends sit behind one table of functions (struct drv_gpu_ops), as
 * SQLite's VFS does:
 *   - "nvml": NVIDIA's libnvidia-ml.so.1, loaded with dlopen at run time
 *     (no build-time NVIDIA dependency);
 *   - "fake": N GPUs of any catalog model ("8xH100"), with deterministic,
 *     plausible utilization, memory, power and clocks that follow the
 *     tasks placed on them (drv_gpu_set_use).
 *
 * InfiniBand/RoCE HCAs come from /sys/class/infiniband (under a sysfs root
 * that tests override), or from a fake list.
 *
 * Not thread-safe: the agent holds one lock around a set.
 */
#ifndef DROVER_GPU_H
#define DROVER_GPU_H

#include <stdint.h>
#include <stddef.h>

#define DRV_GPU_MAX 64
#define DRV_HCA_MAX 32
#define DRV_GPU_XIDS 8   /* distinct XIDs counted per GPU (later kinds share the last) */

/* How two GPUs are connected, as `nvidia-smi topo -m` shows it. */
enum drv_gpu_link {
	DRV_LINK_SELF = 0, /* X   */
	DRV_LINK_NVLINK,   /* NV# (nvlinks = #) */
	DRV_LINK_PIX,      /* at most one PCIe switch */
	DRV_LINK_PXB,      /* several PCIe switches, no host bridge */
	DRV_LINK_PHB,      /* through a PCIe host bridge */
	DRV_LINK_NODE,     /* host bridges within one NUMA node */
	DRV_LINK_SYS,      /* across NUMA nodes (SMP interconnect) */
	DRV_LINK_UNKNOWN,
};

/* "X", "NV18", "PIX", ... into buf; returns buf. */
const char *drv_gpu_link_name(enum drv_gpu_link l, int nvlinks, char *buf, size_t bufsz);

/* What does not change while the agent runs. */
struct drv_gpu_info {
	int index;
	char name[96];        /* NVML device name: "NVIDIA H100 80GB HBM3" */
	char uuid[96];        /* "GPU-…" */
	char pci_bus_id[32];  /* "00000000:18:00.0"; "" when unknown */
	int model;            /* catalog index (drv_gpu_model_find(name)); -1 if unknown */
	uint64_t mem_total_mib;
	int numa_node;        /* -1 when unknown */
};

/* One reading: what dcgm-exporter's default counters ask of NVML. A field
 * the device does not report is -1 (or NaN for power), and the metric is
 * then left out. */
struct drv_gpu_sample {
	int util_pct;              /* GPU utilization, % */
	int mem_copy_util_pct;     /* memory interface utilization, % */
	int enc_util_pct;          /* encoder utilization, % */
	int dec_util_pct;          /* decoder utilization, % */
	int64_t fb_used_mib;
	int64_t fb_free_mib;
	int64_t fb_reserved_mib;   /* held by the driver and firmware */
	int temp_c;
	int mem_temp_c;            /* memory (HBM) temperature */
	double power_w;
	int sm_clock_mhz;
	int mem_clock_mhz;
	int64_t energy_mj;         /* since driver load, millijoules */
	int64_t pcie_replays;      /* PCIe replays since driver load */
	int64_t pcie_tx_bps;       /* PCIe throughput now, bytes/s (NVML: KB/s over 20 ms) */
	int64_t pcie_rx_bps;
	int64_t nvlink_kib;        /* NVLink data sent + received since driver load, KiB */
	int vgpu_license;          /* vGPU license status; 0 when not a vGPU guest */
	int64_t remap_corr;        /* rows remapped for correctable errors */
	int64_t remap_unc;         /* ... for uncorrectable errors */
	int remap_failure;         /* 1 when row remapping has failed */
	int64_t ecc_sbe;           /* volatile corrected ECC errors */
	int64_t ecc_dbe;           /* volatile uncorrected ECC errors */
	int64_t xid_last;          /* last XID error seen (0 = none) */
	int64_t xid_count;         /* XID errors seen since the agent started */
	struct {
		int xid;
		int64_t n;
	} xids[DRV_GPU_XIDS];      /* ... by XID, in the order first seen */
	int nxids;
};

/* Counts one more XID error x in s->xids (the last slot takes the rest
 * when DRV_GPU_XIDS kinds were seen). */
void drv_gpu_count_xid(struct drv_gpu_sample *s, int x);

struct drv_gpu_set;

struct drv_gpu_ops {
	const char *name;
	/* Opens the backend; arg is backend-specific (fake: "8xH100"; nvml:
	 * NULL or a library path). On failure writes a sentence to err. */
	int (*open)(struct drv_gpu_set *s, const char *arg, char *err, size_t errsz);
	void (*close)(struct drv_gpu_set *s);
	/* Fills s->gpus, s->ngpus and the link matrix. */
	int (*discover)(struct drv_gpu_set *s, char *err, size_t errsz);
	/* Reads GPU i at now_ms (a monotonic clock the caller passes). */
	int (*sample)(struct drv_gpu_set *s, int i, int64_t now_ms, struct drv_gpu_sample *out);
};

struct drv_gpu_use {
	char job[64];        /* job id on the GPU ("" = idle) */
	int64_t since_ms;
	int64_t mem_limit_mib; /* the task's GPU memory share hint, 0 = none */
};

struct drv_gpu_set {
	const struct drv_gpu_ops *ops;
	void *priv;                  /* the backend's own state */
	char driver_version[64];     /* "" when unknown; "fake" for fake */
	struct drv_gpu_info gpus[DRV_GPU_MAX];
	int ngpus;
	/* link[i][j] and nvlinks[i][j]: the topology matrix */
	uint8_t link[DRV_GPU_MAX][DRV_GPU_MAX];
	uint8_t nvlinks[DRV_GPU_MAX][DRV_GPU_MAX];
	struct drv_gpu_use use[DRV_GPU_MAX];
};

extern const struct drv_gpu_ops drv_gpu_nvml_ops;
extern const struct drv_gpu_ops drv_gpu_fake_ops;

/*
 * Opens backend name ("nvml" or "fake") with arg and discovers the GPUs.
 * Returns 0, or a negative drv_err with a sentence in err (for nvml
 * without a driver: "NVIDIA driver library libnvidia-ml.so.1 not found:
 * …"). drv_gpu_close releases everything; it is safe on a set whose open
 * failed.
 */
int drv_gpu_open(struct drv_gpu_set *s, const char *name, const char *arg, char *err,
		 size_t errsz);
void drv_gpu_close(struct drv_gpu_set *s);
int drv_gpu_sample(struct drv_gpu_set *s, int i, int64_t now_ms, struct drv_gpu_sample *out);
/* Marks GPU i as used by job (NULL or "" = idle) since now_ms. The fake
 * backend's readings follow it; every backend reports it as hpc_job. */
void drv_gpu_set_use(struct drv_gpu_set *s, int i, const char *job, int64_t now_ms);

/*
 * Parses a fake GPU spec "8xH100" / "2xh200-141gb" / "H100" (one GPU):
 * count 1..64 and any catalog model or alias. Returns 0 and sets *count
 * and *model, or DRV_EINVAL with what was wrong in err.
 */
int drv_gpu_parse_fake_spec(const char *spec, int *count, int *model, char *err, size_t errsz);

/* ---------------------------------------------------------------------------
 * InfiniBand / RoCE host channel adapters.
 */
struct drv_hca_port {
	int port;
	char state[24];        /* "ACTIVE", "DOWN", ... */
	int state_id;          /* its number: 4 ACTIVE, 1 DOWN, ... (0 unknown) */
	int rate_gbps;         /* 400 for "400 Gb/sec (4X NDR)"; 0 unknown */
	char link_layer[16];   /* "InfiniBand" or "Ethernet" (RoCE) */
	uint64_t rx_bytes;     /* port_rcv_data * 4 (the counter counts 32-bit words) */
	uint64_t tx_bytes;
};

struct drv_hca {
	char name[32];         /* "mlx5_0" */
	char pci_path[256];    /* the resolved sysfs device path; "" when unknown */
	int numa_node;
	struct drv_hca_port ports[4];
	int nports;
};

struct drv_hca_set {
	char sysfs_root[256];  /* "" = "/" (the real one) */
	int fake;              /* >0: this many fake HCAs */
	struct drv_hca hcas[DRV_HCA_MAX];
	int nhcas;
	uint64_t fake_bytes;   /* fake counters' running total */
	int64_t fake_ms;       /* when the fake counters last grew */
};

/*
 * Reads every HCA under <root>/sys/class/infiniband (root NULL or "" =
 * the real sysfs). A missing directory is not an error: nhcas is 0.
 */
int drv_hca_scan(struct drv_hca_set *s, const char *root);
/* nfake HCAs mlx5_0.. with 400 Gb/s InfiniBand ports, ACTIVE. */
void drv_hca_fake(struct drv_hca_set *s, int nfake);
/* Re-reads the ports (fake counters grow by 5 GB/s per busy GPU, spread
 * over the HCAs, from the last call to now_ms, a monotonic clock). */
void drv_hca_refresh(struct drv_hca_set *s, int busy_gpus, int64_t now_ms);
/* Comma-separated names of HCAs with an ACTIVE port ("mlx5_0,mlx5_1"),
 * the form NCCL_IB_HCA takes; "" when none. */
void drv_hca_active_list(const struct drv_hca_set *s, char *buf, size_t bufsz);

/*
 * The HCA nearest GPU g: the one whose PCI path shares the longest prefix
 * with the GPU's (found under <root>/sys/bus/pci/devices/<bus id>), ties
 * broken by NUMA node then name. For fake sets, GPU g maps to HCA
 * g * nhcas / ngpus. Returns an index into s->hcas, or -1 when sysfs does
 * not tell.
 */
int drv_hca_nearest(const struct drv_hca_set *s, const struct drv_gpu_set *g, int gpu);

#endif
