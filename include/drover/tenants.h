/*
 * tenants.h: the tenants file (src/spec/tenants_file.c, owner: sim, issue
 * 4): who may use how much of a cluster, in YAML. Tenants (teams, queues)
 * with per-GPU-model quotas, fair-share weights, cohorts and borrowing
 * limits, and the priority classes jobs may name. docs/simulator.md
 * ("Tenants file") documents the format.
 *
 *     struct drv_tenants t;
 *     drv_tenants_init(&t);
 *     rc = drv_tenants_load_file("tenants.yaml", &t, &diags);
 *     ...
 *     drv_tenants_apply(&t, sched);   // classes, then tenants
 *     drv_tenants_release(&t);
 *
 * It lives in src/spec (files in, model out) so that both the simulator
 * (`drover sim --tenants`) and the controller can read the same file with
 * the same code; today only the simulator does.
 *
 * Ownership: struct drv_tenants owns every string it holds. The loader
 * reports every problem into the caller's struct drv_diags with the line
 * and column of the offending value and its field path, checks on past the
 * first error, and on any error leaves t empty (nothing half-built).
 */
#ifndef DROVER_TENANTS_H
#define DROVER_TENANTS_H

#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"
#include "drover/sched.h"

/* A priority class, Kubernetes style. */
struct drv_tenant_class {
	char *name;
	int32_t value;
	enum drv_preempt_policy policy;
	int line, col;               /* where its name is, 1-based */
};

/* A tenant's settings; the fields mean what struct drv_sched_tenant's do. */
struct drv_tenant_conf {
	char *name;
	char *cohort;                /* NULL = none */
	int32_t weight;              /* fair-share weight, >= 1 (default 1) */
	int64_t quota_milli[DRV_MAX_MODELS];        /* per catalog model, -1 = none */
	int64_t borrow_limit_milli[DRV_MAX_MODELS]; /* -1 = no limit */
	char *priority_class;        /* the class of its jobs that give no priority;
				      * NULL = none. Always one of the file's classes. */
	int64_t budget_micro;        /* budget.monthlyUsd in micro-dollars; -1 = none */
	bool budget_hold;            /* budget.hold: hold new jobs once it is spent */
	/* Who may submit to it (tenant key users: [NAME, ...]; not the file's
	 * top-level users: map of per-user limits); has_users false: anyone. */
	char **users;
	int32_t nusers;
	bool has_users;
	/* The classes its users may use (allowedClasses: [CLASS, ...], each one
	 * of the file's); has_allowed false: any, and any priority. */
	char **allowed;
	int32_t nallowed;
	bool has_allowed;
	int line, col;               /* where its name is, 1-based */
};

/* A user's limits (users: NAME: {maxRunningJobs, maxGpus, maxSubmittedJobs});
 * the fields mean what struct drv_sched_user's do, -1 = none. */
struct drv_user_conf {
	char *name;
	int32_t max_running;
	int64_t max_milli;
	int32_t max_submitted;
	int line, col;
};

struct drv_tenants {
	struct drv_tenant_class *classes; /* in file order */
	int32_t nclasses;
	struct drv_tenant_conf *tenants;  /* in file order */
	int32_t ntenants;
	struct drv_user_conf *users;      /* in file order */
	int32_t nusers;
};

void drv_tenants_init(struct drv_tenants *t);
/* Frees everything and leaves t empty (safe to release twice). */
void drv_tenants_release(struct drv_tenants *t);

/*
 * Parses buf (len bytes, YAML) into t, which must be empty (just
 * initialised or released). Errors go to d (d->file names the file).
 * Returns 0, DRV_EPARSE (not YAML) or DRV_EINVAL (YAML, but a field is
 * wrong); on error t is left empty.
 */
int drv_tenants_load_buffer(const char *buf, size_t len, struct drv_tenants *t,
			    struct drv_diags *d);
/* The same from a file; DRV_EIO when it cannot be read, DRV_ELIMIT when
 * larger than 16 MiB. */
int drv_tenants_load_file(const char *path, struct drv_tenants *t, struct drv_diags *d);

/* The class or tenant of that name, or NULL. */
const struct drv_tenant_class *drv_tenants_class(const struct drv_tenants *t, const char *name);
const struct drv_tenant_conf *drv_tenants_tenant(const struct drv_tenants *t, const char *name);
/* Whether the tenant's users: list lets user in (true without a list). */
bool drv_tenant_user_ok(const struct drv_tenant_conf *tc, const char *user);
/* Whether class is one of the tenant's allowedClasses (true without them). */
bool drv_tenant_class_ok(const struct drv_tenant_conf *tc, const char *cls);
/* The highest value of the tenant's allowedClasses in t (INT32_MAX without
 * them). */
int32_t drv_tenant_priority_cap(const struct drv_tenants *t, const struct drv_tenant_conf *tc);

/*
 * Gives s the file's priority classes (drv_sched_add_class), then its
 * tenants (drv_sched_set_tenant) and users (drv_sched_set_user). Returns 0 or the scheduler's negative
 * drv_err (DRV_EEXIST: s already has a class of that name).
 */
int drv_tenants_apply(const struct drv_tenants *t, struct drv_sched *s);

/* "16 H100 + 8 A100" for a per-model milli array (quota or limit) into
 * buf; "none" when every entry is -1. snprintf-like. */
size_t drv_tenants_format_gpus(const int64_t milli[DRV_MAX_MODELS], char *buf, size_t bufsz);

#endif
