/*
 * ib.c: InfiniBand and RoCE host channel adapters, read from sysfs
 * (<root>/sys/class/infiniband/<hca>/ports/<n>/{state,rate,link_layer,
 * counters/port_rcv_data,counters/port_xmit_data}), and a fake
 * counterpart for machines without any. The root is a parameter so tests
 * build a small sysfs tree of their own.
 *
 * The data counters count 32-bit words (the InfiniBand spec's PortRcvData
 * and PortXmitData), hence the factor 4 to bytes.
 *
 * Nearest HCA to a GPU: the one whose resolved PCI device path shares the
 * most leading components with the GPU's (the deepest common PCIe switch),
 * which is what `nvidia-smi topo -m` calls PIX/PXB against NODE/SYS.
 */
#include "drover/gpu.h"
#include "drover/common.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_line(const char *path, char *buf, size_t bufsz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	if (!fgets(buf, (int)bufsz, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* Copies src into dst (size dstsz), truncating; always NUL-terminates. */
static void scopy(char *dst, size_t dstsz, const char *src)
{
	size_t n = strnlen(src, dstsz - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static uint64_t read_u64(const char *path)
{
	char b[64];

	if (read_line(path, b, sizeof(b)) < 0)
		return 0;
	return strtoull(b, NULL, 10);
}

static const char *root_of(const struct drv_hca_set *s)
{
	return s->sysfs_root[0] ? s->sysfs_root : "";
}

static int cmp_hca(const void *a, const void *b)
{
	return strcmp(((const struct drv_hca *)a)->name, ((const struct drv_hca *)b)->name);
}

static void read_port(const struct drv_hca_set *s, const char *hca, struct drv_hca_port *p)
{
	char path[PATH_MAX], b[128], *colon;
	const char *r = root_of(s);

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%d/state", r, hca, p->port);
	read_line(path, b, sizeof(b));
	/* "4: ACTIVE" */
	p->state_id = atoi(b);
	colon = strchr(b, ':');
	scopy(p->state, sizeof(p->state), colon ? colon + 1 + (colon[1] == ' ') : b);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%d/rate", r, hca, p->port);
	read_line(path, b, sizeof(b));
	p->rate_gbps = atoi(b); /* "400 Gb/sec (4X NDR)" */
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%d/link_layer", r, hca,
		 p->port);
	read_line(path, b, sizeof(b));
	scopy(p->link_layer, sizeof(p->link_layer), b);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%d/counters/port_rcv_data",
		 r, hca, p->port);
	p->rx_bytes = read_u64(path) * 4;
	snprintf(path, sizeof(path),
		 "%s/sys/class/infiniband/%s/ports/%d/counters/port_xmit_data", r, hca, p->port);
	p->tx_bytes = read_u64(path) * 4;
}

int drv_hca_scan(struct drv_hca_set *s, const char *root)
{
	char path[PATH_MAX], b[64];
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	snprintf(s->sysfs_root, sizeof(s->sysfs_root), "%s", root && strcmp(root, "/") ? root : "");
	snprintf(path, sizeof(path), "%s/sys/class/infiniband", root_of(s));
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && s->nhcas < DRV_HCA_MAX) {
		struct drv_hca *h;
		struct dirent *pe;
		char real[PATH_MAX];
		DIR *pd;

		if (de->d_name[0] == '.')
			continue;
		h = &s->hcas[s->nhcas];
		memset(h, 0, sizeof(*h));
		scopy(h->name, sizeof(h->name), de->d_name);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device", root_of(s),
			 h->name);
		if (realpath(path, real))
			scopy(h->pci_path, sizeof(h->pci_path), real);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device/numa_node",
			 root_of(s), h->name);
		h->numa_node = read_line(path, b, sizeof(b)) == 0 ? atoi(b) : -1;
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports", root_of(s),
			 h->name);
		pd = opendir(path);
		while (pd && (pe = readdir(pd)) && h->nports < (int)DRV_ARRAY_SIZE(h->ports)) {
			if (pe->d_name[0] < '0' || pe->d_name[0] > '9')
				continue;
			h->ports[h->nports].port = atoi(pe->d_name);
			read_port(s, h->name, &h->ports[h->nports]);
			h->nports++;
		}
		if (pd)
			closedir(pd);
		s->nhcas++;
	}
	closedir(d);
	qsort(s->hcas, (size_t)s->nhcas, sizeof(s->hcas[0]), cmp_hca);
	return 0;
}

void drv_hca_fake(struct drv_hca_set *s, int nfake)
{
	int i;

	memset(s, 0, sizeof(*s));
	if (nfake > DRV_HCA_MAX)
		nfake = DRV_HCA_MAX;
	s->fake = nfake;
	for (i = 0; i < nfake; i++) {
		struct drv_hca *h = &s->hcas[i];
		snprintf(h->name, sizeof(h->name), "mlx5_%d", i);
		h->numa_node = nfake > 1 && i >= nfake / 2 ? 1 : 0;
		h->nports = 1;
		h->ports[0].port = 1;
		snprintf(h->ports[0].state, sizeof(h->ports[0].state), "ACTIVE");
		h->ports[0].state_id = 4;
		h->ports[0].rate_gbps = 400;
		snprintf(h->ports[0].link_layer, sizeof(h->ports[0].link_layer), "InfiniBand");
	}
	s->nhcas = nfake;
}

void drv_hca_refresh(struct drv_hca_set *s, int busy_gpus, int64_t now_ms)
{
	int i, k;

	if (s->fake) {
		/* 5 GB/s per busy GPU, split evenly over the HCAs */
		int64_t dt = s->fake_ms && now_ms > s->fake_ms ? now_ms - s->fake_ms : 0;
		uint64_t add = (uint64_t)busy_gpus * 5000000ULL * (uint64_t)dt / (uint64_t)s->nhcas;

		s->fake_ms = now_ms;
		for (i = 0; i < s->nhcas; i++) {
			s->hcas[i].ports[0].rx_bytes += add;
			s->hcas[i].ports[0].tx_bytes += add;
		}
		return;
	}
	for (i = 0; i < s->nhcas; i++)
		for (k = 0; k < s->hcas[i].nports; k++)
			read_port(s, s->hcas[i].name, &s->hcas[i].ports[k]);
}

void drv_hca_active_list(const struct drv_hca_set *s, char *buf, size_t bufsz)
{
	size_t len = 0;
	int i, k;

	if (bufsz)
		buf[0] = '\0';
	for (i = 0; i < s->nhcas; i++) {
		for (k = 0; k < s->hcas[i].nports; k++) {
			if (strcmp(s->hcas[i].ports[k].state, "ACTIVE"))
				continue;
			if (len + strlen(s->hcas[i].name) + 2 > bufsz)
				return;
			len += (size_t)snprintf(buf + len, bufsz - len, "%s%s", len ? "," : "",
						s->hcas[i].name);
			break;
		}
	}
}

static size_t common_components(const char *a, const char *b)
{
	size_t n = 0, i = 0;

	for (;; i++) {
		if (a[i] != b[i]) {
			/* count only a whole component */
			return n;
		}
		if (a[i] == '\0')
			return n + 1;
		if (a[i] == '/')
			n++;
	}
}

int drv_hca_nearest(const struct drv_hca_set *s, const struct drv_gpu_set *g, int gpu)
{
	char path[PATH_MAX], real[PATH_MAX], bus[32];
	const char *id;
	int i, best = -1;
	size_t best_n = 0;

	if (s->nhcas == 0 || gpu < 0 || gpu >= g->ngpus)
		return -1;
	if (s->fake)
		return g->ngpus ? gpu * s->nhcas / g->ngpus : -1;
	id = g->gpus[gpu].pci_bus_id;
	if (!id[0])
		return -1;
	/* NVML writes an 8-digit domain; sysfs uses 4 digits, lowercase */
	if (strlen(id) == 16)
		id += 4;
	for (i = 0; id[i] && i < (int)sizeof(bus) - 1; i++)
		bus[i] = (char)((id[i] >= 'A' && id[i] <= 'F') ? id[i] - 'A' + 'a' : id[i]);
	bus[i] = '\0';
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root_of(s), bus);
	if (!realpath(path, real))
		return -1;
	for (i = 0; i < s->nhcas; i++) {
		size_t n;
		if (!s->hcas[i].pci_path[0])
			continue;
		n = common_components(real, s->hcas[i].pci_path);
		if (n > best_n || (n == best_n && best >= 0 &&
				   s->hcas[i].numa_node == g->gpus[gpu].numa_node &&
				   s->hcas[best].numa_node != g->gpus[gpu].numa_node)) {
			best = i;
			best_n = n;
		}
	}
	return best;
}
