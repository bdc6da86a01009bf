/*
 * costmodel.h: owning versus renting GPUs (`drover cost`, docs/cost.md).
 * The assumptions file (examples/cost/h100.yaml) is read into struct
 * drv_cost_in; drv_cost_compute turns it into monthly costs, break-even
 * months and the amortised price per used GPU-hour. The arithmetic is
 * plain libc; the reader uses libfyaml (layer spec).
 */
#ifndef DROVER_COSTMODEL_H
#define DROVER_COSTMODEL_H

#include "drover/diag.h"

#include <stdbool.h>
#include <stdio.h>

#define DRV_COST_HOURS_PER_MONTH 730.0
#define DRV_COST_HORIZON_MONTHS 120 /* break-even searched up to this month */

enum drv_cost_cloud { DRV_CLOUD_ONDEMAND = 0, DRV_CLOUD_RESERVED, DRV_CLOUD_SPOT, DRV_CLOUD_N };

struct drv_cost_in {
	double server_price_usd;   /* one server, GPUs included */
	int gpus_per_server;
	int servers;
	double depreciation_years;
	double power_kw;           /* per server */
	double pue;
	double usd_per_kwh;
	bool liquid;               /* cooling: liquid (else air); sets the default PUE */
	double colo_usd_month;     /* per server */
	double network_usd_month;  /* per server */
	double staff_usd_month;    /* total */
	double utilisation;        /* 0..1: used share of the GPU-hours */
	double cloud_usd_gpuh[DRV_CLOUD_N];
	enum drv_cost_cloud compare; /* the cloud price the headline break-even uses */
};

struct drv_cost_out {
	double gpus;
	double used_gpuh_month;    /* GPUs x 730 h x utilisation */
	double capex_usd;          /* paid up front */
	double capex_month;        /* capex / (years x 12) */
	double power_month, colo_month, network_month, staff_month;
	double opex_month;         /* power + colo + network + staff */
	double onprem_month;       /* capex_month + opex_month */
	double onprem_usd_gpuh;    /* onprem_month / used GPU-hours */
	double cloud_month[DRV_CLOUD_N];
	int break_even[DRV_CLOUD_N]; /* first month, or -1: not within the horizon */
};

/* Fills out from in (in is assumed checked by the reader). */
void drv_cost_compute(const struct drv_cost_in *in, struct drv_cost_out *out);

/*
 * The first month m (1..DRV_COST_HORIZON_MONTHS) where capex + m x opex
 * <= m x cloud; -1 when there is none.
 */
int drv_cost_break_even(double capex, double opex_month, double cloud_month);

extern const char *const drv_cost_cloud_names[DRV_CLOUD_N]; /* onDemand, reserved, spot */

/* One row of the sensitivity table: what is varied ("utilisation",
 * "cloud_price", "power_price"), its value (the utilisation, else the
 * factor applied) and the break-even month then (-1 never). */
struct drv_cost_sens {
	const char *what;
	double value;
	int break_even;
};

/*
 * `drover cost --html`: one self-contained page (inline SVG and CSS, no
 * scripts, nothing fetched) with the cumulative cost of owning (capex at
 * month 0, then the running costs) against renting at each cloud price,
 * months 0 to at least 36 and past the break-even, a marker at each
 * break-even, the monthly figures and the sensitivity table. source names
 * the assumptions file (its figures' sources are its comments). Writes to
 * f; returns 0, or DRV_EIO when f failed.
 */
int drv_cost_html(FILE *f, const char *source, const struct drv_cost_in *in,
		  const struct drv_cost_out *o, const struct drv_cost_sens *rows, size_t nrows);

/* Reads an assumptions file; errors at file:line:col into d, DRV_EINVAL
 * (or DRV_EIO, DRV_EPARSE) when any. */
int drv_cost_load_buffer(const char *buf, size_t len, struct drv_cost_in *in,
			 struct drv_diags *d);
int drv_cost_load_file(const char *path, struct drv_cost_in *in, struct drv_diags *d);

#endif
