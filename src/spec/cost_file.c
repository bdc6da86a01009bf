/*
 * cost_file.c: the assumptions file of `drover cost` (format in
 * docs/cost.md, example examples/cost/h100.yaml), read with libfyaml.
 * Every key is known or refused by name; every value is checked against
 * its range; errors at the value's line:col with the field path.
 */
#include "drover/costmodel.h"
#include "drover/fsutil.h"
#include "drover/spec.h"

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum fkind { F_NUM, F_INT, F_COOLING, F_COMPARE, F_CLOUD };

struct field {
	const char *key;
	enum fkind kind;
	size_t off;
	double lo, hi;
	bool required;
};

#define NUM(k, m, lo, hi) { k, F_NUM, offsetof(struct drv_cost_in, m), lo, hi, true }
#define INT(k, m, lo, hi) { k, F_INT, offsetof(struct drv_cost_in, m), lo, hi, true }

static const struct field top[] = {
	INT("servers", servers, 1, 1000000),
	NUM("serverPriceUsd", server_price_usd, 0, 1e9),
	INT("gpusPerServer", gpus_per_server, 1, 1024),
	NUM("depreciationYears", depreciation_years, 0.25, 30),
	NUM("powerKwPerServer", power_kw, 0, 1000),
	{ "pue", F_NUM, offsetof(struct drv_cost_in, pue), 1.0, 5.0, false },
	NUM("pricePerKwh", usd_per_kwh, 0, 100),
	{ "cooling", F_COOLING, 0, 0, 0, true },
	NUM("coloUsdPerServerMonth", colo_usd_month, 0, 1e8),
	NUM("networkUsdPerServerMonth", network_usd_month, 0, 1e8),
	NUM("staffUsdPerMonth", staff_usd_month, 0, 1e10),
	{ "utilisation", F_NUM, offsetof(struct drv_cost_in, utilisation), 0.0, 1.0, true },
	{ "cloud", F_CLOUD, 0, 0, 0, true },
	{ NULL, 0, 0, 0, 0, false },
};

static const struct field cloud[] = {
	NUM("onDemand", cloud_usd_gpuh[DRV_CLOUD_ONDEMAND], 0, 1e4),
	NUM("reserved", cloud_usd_gpuh[DRV_CLOUD_RESERVED], 0, 1e4),
	NUM("spot", cloud_usd_gpuh[DRV_CLOUD_SPOT], 0, 1e4),
	{ "compareWith", F_COMPARE, 0, 0, 0, false },
	{ NULL, 0, 0, 0, 0, false },
};

struct rd {
	struct drv_cost_in *in;
	struct drv_diags *d;
	bool pue_set;
};

static void read_map(struct rd *R, struct fy_node *map, const char *path, const struct field *tab);

static void bad(struct rd *R, struct fy_node *n, const char *path, const char *what)
{
	char f[80];
	drv_yaml_found(n, f, sizeof(f));
	drv_yaml_err(R->d, n, path, "found %s, expected %s", f, what);
}

static bool read_number(struct rd *R, struct fy_node *n, const char *path, const struct field *fd)
{
	const char *s = drv_yaml_scalar(n);
	char *end, want[120];
	double v;

	if (s && *s) {
		errno = 0;
		v = strtod(s, &end);
		if (!errno && !*end && isfinite(v) && v >= fd->lo && v <= fd->hi &&
		    (fd->kind == F_NUM || v == floor(v))) {
			if (fd->kind == F_INT)
				*(int *)(void *)((char *)R->in + fd->off) = (int)v;
			else
				*(double *)(void *)((char *)R->in + fd->off) = v;
			return true;
		}
	}
	snprintf(want, sizeof(want), "%s from %g to %g",
		 fd->kind == F_INT ? "a whole number" : "a number", fd->lo, fd->hi);
	bad(R, n, path, want);
	return false;
}

static void read_value(struct rd *R, struct fy_node *v, const char *path, const struct field *fd)
{
	const char *s = drv_yaml_scalar(v);
	int c;

	switch (fd->kind) {
	case F_NUM:
	case F_INT:
		if (read_number(R, v, path, fd) && fd->off == offsetof(struct drv_cost_in, pue))
			R->pue_set = true;
		return;
	case F_COOLING:
		if (s && (!strcmp(s, "air") || !strcmp(s, "liquid")))
			R->in->liquid = !strcmp(s, "liquid");
		else
			bad(R, v, path, "air or liquid");
		return;
	case F_COMPARE:
		for (c = 0; s && c < DRV_CLOUD_N; c++)
			if (!strcmp(s, drv_cost_cloud_names[c])) {
				R->in->compare = (enum drv_cost_cloud)c;
				return;
			}
		bad(R, v, path, "onDemand, reserved or spot");
		return;
	case F_CLOUD:
		if (v && fy_node_is_mapping(v))
			read_map(R, v, path, cloud);
		else
			bad(R, v, path, "a mapping {onDemand: .., reserved: .., spot: ..} (USD per GPU-hour)");
		return;
	}
}

static void key_list(const struct field *tab, char *buf, size_t sz)
{
	size_t len = 0;
	int i;
	buf[0] = 0;
	for (i = 0; tab[i].key && len < sz; i++) {
		int k = snprintf(buf + len, sz - len, "%s%s", i ? ", " : "", tab[i].key);
		if (k > 0)
			len += (size_t)k;
	}
}

static void read_map(struct rd *R, struct fy_node *map, const char *path, const struct field *tab)
{
	struct fy_node_pair *p;
	void *it = NULL;
	char sub[200], list[400], f[80];
	int i;

	while ((p = fy_node_mapping_iterate(map, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(p));
		for (i = 0; k && tab[i].key && strcmp(tab[i].key, k); i++)
			;
		drv_yaml_join(sub, sizeof(sub), path, k ? k : "?");
		if (!k || !tab[i].key) {
			key_list(tab, list, sizeof(list));
			drv_yaml_found(fy_node_pair_key(p), f, sizeof(f));
			drv_yaml_err(R->d, fy_node_pair_key(p), sub,
				     "found the unknown key %s, expected one of: %s", f, list);
			continue;
		}
		read_value(R, fy_node_pair_value(p), sub, &tab[i]);
	}
	for (i = 0; tab[i].key; i++)
		if (tab[i].required && !fy_node_mapping_lookup_by_string(map, tab[i].key, -1)) {
			drv_yaml_join(sub, sizeof(sub), path, tab[i].key);
			drv_yaml_err(R->d, map, sub, "found nothing, expected %s (a required key)",
				     tab[i].key);
		}
}

int drv_cost_load_buffer(const char *buf, size_t len, struct drv_cost_in *in,
			 struct drv_diags *d)
{
	struct fy_document *fyd = NULL;
	struct fy_node *root;
	struct rd R = { in, d, false };
	int rc, before = d->nerrors;

	memset(in, 0, sizeof(*in));
	in->compare = DRV_CLOUD_RESERVED;
	rc = drv_yaml_load(buf, len, d, &fyd);
	if (rc < 0)
		goto out;
	root = fyd ? fy_document_root(fyd) : NULL;
	if (!root || !fy_node_is_mapping(root)) {
		drv_diag_err(d, 1, 1, NULL, "found %s, expected a mapping of cost assumptions "
			     "(see examples/cost/h100.yaml)", root ? drv_yaml_kind(root) : "an empty file");
		rc = DRV_EINVAL;
		goto out;
	}
	read_map(&R, root, "", top);
	if (!R.pue_set)
		in->pue = in->liquid ? 1.2 : 1.5; /* docs/cost.md: defaults by cooling */
	if (d->nerrors > before)
		rc = DRV_EINVAL;
out:
	if (fyd)
		fy_document_destroy(fyd);
	return rc;
}

int drv_cost_load_file(const char *path, struct drv_cost_in *in, struct drv_diags *d)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = drv_file_read(path, (size_t)1 << 20, &buf, &len);
	if (rc) {
		drv_diag_err(d, 0, 0, NULL, "cannot read: %s",
			     rc == DRV_ELIMIT ? "larger than 1 MiB" : strerror(errno));
		return DRV_EIO;
	}
	rc = drv_cost_load_buffer(buf, len, in, d);
	free(buf);
	return rc;
}
