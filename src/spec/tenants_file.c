/*
 * tenants_file.c: the tenants file (include/drover/tenants.h, format in
 * docs/simulator.md, "Tenants file"): priority classes and tenants with
 * per-GPU-model quotas, fair-share weights, cohorts and borrowing limits,
 * read with libfyaml into plain data that drv_tenants_apply hands to the
 * scheduler. Owner: sim (issue 4); kept in src/spec so that the controller
 * can read the same file with the same code.
 *
 * Like the cluster file, every problem is reported at the line and column
 * of the value (of its key when the value is a collection or missing),
 * with its field path, what was found and what was expected; checking goes
 * on past errors, and on any error nothing is kept.
 */
#include "drover/fsutil.h"
#include "drover/tenants.h"
#include "spec_int.h"

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_LEN 200
#define MAX_GPUS_MILLI (INT64_C(10000000) * DRV_MILLI) /* ten million GPUs */

struct loader {
	struct drv_tenants *t;
	struct drv_diags *d;
	size_t ccap, tcap, ucap;
};

/* Class names start with a letter, so a trace's priority column can hold a
 * number or a class name without doubt. */
static bool class_name_ok(const char *s)
{
	size_t i, n = strlen(s);
	if (!n || n >= DRV_NAME_MAX || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (i = 1; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
			return false;
	}
	return true;
}

static bool read_int(struct loader *L, struct fy_node *at, struct fy_node *n, const char *path,
		     int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char *end, f[80];
	long long v;

	if (s && *s) {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (!errno && !*end && v >= lo && v <= hi) {
			*out = v;
			return true;
		}
	}
	drv_yaml_found(n, f, sizeof(f));
	drv_yaml_err(L->d, at, path, "found %s, expected a whole number from %lld to %lld", f, (long long)lo,
	    (long long)hi);
	return false;
}

/* GPUs: a number >= 0 with at most 3 decimals ("16", "0.5"), into milli. */
static bool parse_gpus(const char *s, int64_t *milli)
{
	int64_t whole = 0, frac = 0;
	int nd = 0, nf = 0;

	for (; *s >= '0' && *s <= '9'; s++, nd++) {
		whole = whole * 10 + (*s - '0');
		if (whole > MAX_GPUS_MILLI / DRV_MILLI)
			return false;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, nf++) {
			if (nf == 3)
				return false;
			frac = frac * 10 + (*s - '0');
		}
		if (!nf)
			return false;
		for (int k = nf; k < 3; k++)
			frac *= 10;
	}
	if (*s || !nd)
		return false;
	*milli = whole * DRV_MILLI + frac;
	return true;
}

static bool read_gpus(struct loader *L, struct fy_node *at, struct fy_node *n, const char *path,
		      int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char f[80];

	if (s && parse_gpus(s, out))
		return true;
	drv_yaml_found(n, f, sizeof(f));
	drv_yaml_err(L->d, at, path,
	    "found %s, expected a number of GPUs >= 0 (at most 3 decimals: 0.5 is half a GPU)", f);
	return false;
}

static void model_list(char *buf, size_t sz)
{
	size_t len = 0;
	int i;
	buf[0] = 0;
	for (i = 0; i < drv_gpu_model_count() && len < sz; i++) {
		int k = snprintf(buf + len, sz - len, "%s%s", i ? ", " : "",
				 drv_gpu_model_at(i)->short_name);
		if (k > 0)
			len += (size_t)k;
	}
}

/*
 * quota / borrowingLimit: a number (GPUs of every model) or a mapping of
 * GPU model to GPUs. Fills out[] (already -1).
 */
static void read_model_gpus(struct loader *L, struct fy_node_pair *pr, const char *path,
			    int64_t out[DRV_MAX_MODELS])
{
	struct fy_node *v = fy_node_pair_value(pr);
	struct fy_node_pair *p;
	void *it = NULL;
	char f[80], sub[PATH_LEN];
	int64_t milli;
	int m;

	if (v && fy_node_is_mapping(v)) {
		while ((p = fy_node_mapping_iterate(v, &it))) {
			const char *k = drv_yaml_scalar(fy_node_pair_key(p));
			m = k ? drv_gpu_model_find(k) : -1;
			drv_yaml_join(sub, sizeof(sub), path, k ? k : "?");
			if (m < 0) {
				char list[512];
				model_list(list, sizeof(list));
				drv_yaml_found(fy_node_pair_key(p), f, sizeof(f));
				drv_yaml_err(L->d, fy_node_pair_key(p), sub,
				    "found %s, expected a GPU model (%s, or any of their aliases)", f,
				    list);
				continue;
			}
			if (out[m] >= 0) {
				drv_yaml_err(L->d, fy_node_pair_key(p), sub,
				    "found '%s', a GPU model already given (%s), expected each GPU "
				    "model once", k, drv_gpu_model_at(m)->short_name);
				continue;
			}
			if (read_gpus(L, drv_yaml_pair_at(p), fy_node_pair_value(p), sub, &milli))
				out[m] = milli;
		}
		return;
	}
	if (v && drv_yaml_scalar(v) && *drv_yaml_scalar(v)) {
		if (!read_gpus(L, v, v, path, &milli))
			return;
		for (m = 0; m < drv_gpu_model_count() && m < DRV_MAX_MODELS; m++)
			out[m] = milli;
		return;
	}
	drv_yaml_found(v, f, sizeof(f));
	drv_yaml_err(L->d, drv_yaml_pair_at(pr), path,
	    "found %s, expected GPUs of every model (16) or a mapping of GPU model to GPUs "
	    "({H100: 16, A100: 8})", f);
}

/* Unknown keys of a mapping: one error each. */
static void check_keys(struct loader *L, struct fy_node *n, const char *path,
		       const char *const *known, const char *list)
{
	struct fy_node_pair *p;
	void *it = NULL;
	char sub[PATH_LEN], f[80];

	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(p));
		int i;
		for (i = 0; k && known[i]; i++)
			if (!strcmp(known[i], k))
				break;
		if (k && known[i])
			continue;
		drv_yaml_found(fy_node_pair_key(p), f, sizeof(f));
		drv_yaml_join(sub, sizeof(sub), path, k ? k : "?");
		drv_yaml_err(L->d, fy_node_pair_key(p), path && *path ? sub : k,
		    "found the unknown field %s, expected one of: %s", f, list);
	}
}

static void read_class(struct loader *L, struct fy_node_pair *pr)
{
	static const char *const known[] = { "value", "preemptionPolicy", "description", NULL };
	struct fy_node *key = fy_node_pair_key(pr), *v = fy_node_pair_value(pr), *x;
	const char *name = drv_yaml_scalar(key);
	struct drv_tenant_class c;
	char path[PATH_LEN], sub[PATH_LEN], f[80];
	int64_t val;
	bool ok = true;

	memset(&c, 0, sizeof(c));
	drv_yaml_join(path, sizeof(path), "priorityClasses", name ? name : "?");
	if (!name || !class_name_ok(name)) {
		drv_yaml_found(key, f, sizeof(f));
		drv_yaml_err(L->d, key, path,
		    "found %s, expected a class name: a letter, then letters, digits and -_. "
		    "(at most 63)", f);
		ok = false;
	}
	if (!v || !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(pr), path, "found %s, expected a mapping such as {value: 1000}", f);
		return;
	}
	check_keys(L, v, path, known, "value, preemptionPolicy, description");
	c.policy = DRV_PREEMPT_LOWER;
	drv_yaml_join(sub, sizeof(sub), path, "value");
	if (!(x = fy_node_mapping_lookup_by_string(v, "value", -1))) {
		drv_yaml_err(L->d, key, sub, "found nothing, expected the class's priority value, a whole number");
		ok = false;
	} else if (read_int(L, x, x, sub, INT32_MIN, INT32_MAX, &val)) {
		c.value = (int32_t)val;
	} else {
		ok = false;
	}
	if ((x = fy_node_mapping_lookup_by_string(v, "preemptionPolicy", -1))) {
		const char *s = drv_yaml_scalar(x);
		drv_yaml_join(sub, sizeof(sub), path, "preemptionPolicy");
		if (!s || drv_preempt_policy_parse(s, &c.policy)) {
			drv_yaml_found(x, f, sizeof(f));
			drv_yaml_err(L->d, x, sub, "found %s, expected PreemptLowerPriority or Never", f);
			ok = false;
		}
	}
	if ((x = fy_node_mapping_lookup_by_string(v, "description", -1)) && !drv_yaml_scalar(x)) {
		drv_yaml_join(sub, sizeof(sub), path, "description");
		drv_yaml_found(x, f, sizeof(f));
		drv_yaml_err(L->d, x, sub, "found %s, expected text", f);
		ok = false;
	}
	if (!ok)
		return;
	c.name = drv_strdup(name);
	drv_spec_node_mark(key, &c.line, &c.col);
	DRV_GROW(L->t->classes, (size_t)L->t->nclasses + 1, L->ccap);
	L->t->classes[L->t->nclasses++] = c;
}

/* budget: {monthlyUsd: 5000, hold: true}, a month being a calendar month
 * (UTC); the controller acts on it, the simulator does not. */
static void read_budget(struct loader *L, struct fy_node_pair *pr, const char *path,
			struct drv_tenant_conf *tc)
{
	static const char *const known[] = { "monthlyUsd", "hold", NULL };
	struct fy_node *v = fy_node_pair_value(pr), *x;
	char sub[PATH_LEN], f[80], *end;
	const char *s;
	double usd;

	if (!v || !fy_node_is_mapping(v) || !(x = fy_node_mapping_lookup_by_string(v, "monthlyUsd", -1))) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(pr), path,
		    "found %s, expected a mapping with monthlyUsd such as {monthlyUsd: 5000, hold: true}", f);
		return;
	}
	check_keys(L, v, path, known, "monthlyUsd, hold");
	drv_yaml_join(sub, sizeof(sub), path, "monthlyUsd");
	s = drv_yaml_scalar(x);
	errno = 0;
	usd = s && *s ? strtod(s, &end) : -1;
	if (!s || !*s || errno || *end || !isfinite(usd) || usd < 0 || usd > 1e12) {
		drv_yaml_found(x, f, sizeof(f));
		drv_yaml_err(L->d, x, sub, "found %s, expected dollars per calendar month from 0 to 1e12 such as 5000", f);
	} else {
		tc->budget_micro = (int64_t)llround(usd * 1e6);
	}
	if ((x = fy_node_mapping_lookup_by_string(v, "hold", -1))) {
		drv_yaml_join(sub, sizeof(sub), path, "hold");
		s = drv_yaml_scalar(x);
		if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
			tc->budget_hold = !strcmp(s, "true");
		} else {
			drv_yaml_found(x, f, sizeof(f));
			drv_yaml_err(L->d, x, sub, "found %s, expected true or false", f);
		}
	}
}

static void free_names(char **v, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		drv_free(v[i]);
	drv_free(v);
}

static void free_tenant(struct drv_tenant_conf *tc)
{
	free_names(tc->users, tc->nusers);
	free_names(tc->allowed, tc->nallowed);
	drv_free(tc->name);
	drv_free(tc->cohort);
	drv_free(tc->priority_class);
}

/* A list of names (users: or allowedClasses:) into *out; classes must be
 * classes of the file. */
static void read_names(struct loader *L, struct fy_node_pair *pr, const char *path, bool classes,
		       char ***out, int32_t *n)
{
	struct fy_node *v = fy_node_pair_value(pr), *e;
	char sub[PATH_LEN], f[80];
	void *it = NULL;
	size_t cap = 0;
	int32_t i = 0;

	if (!v || !fy_node_is_sequence(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(pr), path, "found %s, expected a list such as [%s]",
			     f, classes ? "low, high" : "alice, bob");
		return;
	}
	while ((e = fy_node_sequence_iterate(v, &it))) {
		const char *s = drv_yaml_scalar(e);
		bool ok = s && drv_spec_name_ok(s, strlen(s));

		snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
		drv_yaml_found(e, f, sizeof(f));
		if (ok && classes && !drv_tenants_class(L->t, s)) {
			drv_yaml_err(L->d, e, sub, "found %s, expected a class of priorityClasses", f);
			continue;
		}
		if (!ok) {
			drv_yaml_err(L->d, e, sub, "found %s, expected a %s name", f,
				     classes ? "class" : "user");
			continue;
		}
		DRV_GROW(*out, (size_t)*n + 1, cap);
		(*out)[(*n)++] = drv_strdup(s);
	}
}

static void read_tenant(struct loader *L, struct fy_node_pair *pr)
{
	static const char *const known[] = { "weight", "cohort", "quota", "borrowingLimit",
					     "priorityClass", "budget", "users",
					     "allowedClasses", NULL };
	struct fy_node *key = fy_node_pair_key(pr), *v = fy_node_pair_value(pr), *x;
	const char *name = drv_yaml_scalar(key);
	struct drv_tenant_conf tc;
	char path[PATH_LEN], sub[PATH_LEN], f[80];
	struct fy_node_pair *p;
	void *it = NULL;
	int64_t val;
	int before = L->d->nerrors, m;

	memset(&tc, 0, sizeof(tc));
	tc.weight = 1;
	tc.budget_micro = -1;
	for (m = 0; m < DRV_MAX_MODELS; m++)
		tc.quota_milli[m] = tc.borrow_limit_milli[m] = -1;
	drv_yaml_join(path, sizeof(path), "tenants", name ? name : "?");
	if (!name || !drv_spec_name_ok(name, strlen(name))) {
		drv_yaml_found(key, f, sizeof(f));
		drv_yaml_err(L->d, key, path,
		    "found %s, expected a tenant name of letters, digits and -_.:/@ (at most 63)", f);
	}
	if (!v || !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(pr), path, "found %s, expected a mapping such as {quota: {H100: 16}}",
		    f);
		return;
	}
	check_keys(L, v, path, known,
		   "weight, cohort, quota, borrowingLimit, priorityClass, budget, users, "
		   "allowedClasses");
	while ((p = fy_node_mapping_iterate(v, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(p));
		x = fy_node_pair_value(p);
		if (!k)
			continue;
		drv_yaml_join(sub, sizeof(sub), path, k);
		if (!strcmp(k, "weight")) {
			if (read_int(L, drv_yaml_pair_at(p), x, sub, 1, 1000000, &val))
				tc.weight = (int32_t)val;
		} else if (!strcmp(k, "cohort")) {
			const char *s = drv_yaml_scalar(x);
			if (!s || !drv_spec_name_ok(s, strlen(s))) {
				drv_yaml_found(x, f, sizeof(f));
				drv_yaml_err(L->d, drv_yaml_pair_at(p), sub,
				    "found %s, expected a cohort name of letters, digits and -_.:/@", f);
			} else {
				tc.cohort = drv_strdup(s);
			}
		} else if (!strcmp(k, "quota")) {
			read_model_gpus(L, p, sub, tc.quota_milli);
		} else if (!strcmp(k, "borrowingLimit")) {
			read_model_gpus(L, p, sub, tc.borrow_limit_milli);
		} else if (!strcmp(k, "budget")) {
			read_budget(L, p, sub, &tc);
		} else if (!strcmp(k, "users")) {
			tc.has_users = true;
			read_names(L, p, sub, false, &tc.users, &tc.nusers);
		} else if (!strcmp(k, "allowedClasses")) {
			tc.has_allowed = true;
			read_names(L, p, sub, true, &tc.allowed, &tc.nallowed);
		} else if (!strcmp(k, "priorityClass")) {
			const char *s = drv_yaml_scalar(x);
			if (s && *s && drv_tenants_class(L->t, s)) {
				tc.priority_class = drv_strdup(s);
			} else {
				char list[256];
				size_t len = 0;
				int32_t i;
				list[0] = 0;
				for (i = 0; i < L->t->nclasses && len < sizeof(list); i++) {
					int n = snprintf(list + len, sizeof(list) - len, "%s%s",
							 i ? ", " : "", L->t->classes[i].name);
					if (n > 0)
						len += (size_t)n;
				}
				drv_yaml_found(x, f, sizeof(f));
				if (L->t->nclasses)
					drv_yaml_err(L->d, drv_yaml_pair_at(p), sub,
					    "found %s, expected a class of priorityClasses (%s)", f,
					    list);
				else
					drv_yaml_err(L->d, drv_yaml_pair_at(p), sub,
					    "found %s, expected a class of priorityClasses (the file "
					    "defines none)", f);
			}
		}
	}
	if (!tc.cohort && (x = fy_node_mapping_lookup_by_string(v, "borrowingLimit", -1))) {
		drv_yaml_join(sub, sizeof(sub), path, "borrowingLimit");
		drv_yaml_err(L->d, x, sub,
		    "found a borrowing limit, expected it only with a cohort to borrow from "
		    "(cohort: NAME)");
	}
	if (name && drv_tenants_tenant(L->t, name)) {
		const struct drv_tenant_conf *o = drv_tenants_tenant(L->t, name);
		drv_yaml_err(L->d, key, path, "found tenant %s again, expected each tenant once (first at line %d)",
		    name, o->line);
	}
	if (L->d->nerrors > before) {
		free_tenant(&tc);
		return;
	}
	tc.name = drv_strdup(name);
	drv_spec_node_mark(key, &tc.line, &tc.col);
	DRV_GROW(L->t->tenants, (size_t)L->t->ntenants + 1, L->tcap);
	L->t->tenants[L->t->ntenants++] = tc;
}

/* users: NAME: {maxRunningJobs: N, maxGpus: G, maxSubmittedJobs: N} */
static void read_user(struct loader *L, struct fy_node_pair *pr)
{
	static const char *const known[] = { "maxRunningJobs", "maxGpus", "maxSubmittedJobs", NULL };
	struct fy_node *key = fy_node_pair_key(pr), *v = fy_node_pair_value(pr), *x;
	const char *name = drv_yaml_scalar(key);
	struct drv_user_conf uc = { NULL, -1, -1, -1, 0, 0 };
	char path[PATH_LEN], sub[PATH_LEN], f[80];
	int before = L->d->nerrors;
	int64_t val;

	drv_yaml_join(path, sizeof(path), "users", name ? name : "?");
	if (!name || !drv_spec_name_ok(name, strlen(name))) {
		drv_yaml_found(key, f, sizeof(f));
		drv_yaml_err(L->d, key, path, "found %s, expected a user name", f);
	}
	if (!v || !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, drv_yaml_pair_at(pr), path,
		    "found %s, expected a mapping such as {maxRunningJobs: 4, maxGpus: 16}", f);
		return;
	}
	check_keys(L, v, path, known, "maxRunningJobs, maxGpus, maxSubmittedJobs");
	if ((x = fy_node_mapping_lookup_by_string(v, "maxRunningJobs", -1))) {
		drv_yaml_join(sub, sizeof(sub), path, "maxRunningJobs");
		if (read_int(L, x, x, sub, 0, 1000000000, &val))
			uc.max_running = (int32_t)val;
	}
	if ((x = fy_node_mapping_lookup_by_string(v, "maxGpus", -1))) {
		drv_yaml_join(sub, sizeof(sub), path, "maxGpus");
		read_gpus(L, x, x, sub, &uc.max_milli);
	}
	if ((x = fy_node_mapping_lookup_by_string(v, "maxSubmittedJobs", -1))) {
		drv_yaml_join(sub, sizeof(sub), path, "maxSubmittedJobs");
		if (read_int(L, x, x, sub, 1, 1000000000, &val))
			uc.max_submitted = (int32_t)val;
	}
	for (int32_t i = 0; name && i < L->t->nusers; i++)
		if (!strcmp(L->t->users[i].name, name))
			drv_yaml_err(L->d, key, path,
			    "found user %s again, expected each user once (first at line %d)", name,
			    L->t->users[i].line);
	if (L->d->nerrors > before)
		return;
	uc.name = drv_strdup(name);
	drv_spec_node_mark(key, &uc.line, &uc.col);
	DRV_GROW(L->t->users, (size_t)L->t->nusers + 1, L->ucap);
	L->t->users[L->t->nusers++] = uc;
}

static void read_root(struct loader *L, struct fy_node *root)
{
	static const char *const known[] = { "kind", "priorityClasses", "tenants", "users", NULL };
	struct fy_node *v;
	struct fy_node_pair *p;
	void *it;
	char f[80];
	int before = L->d->nerrors;

	if (!fy_node_is_mapping(root)) {
		drv_yaml_found(root, f, sizeof(f));
		drv_yaml_err(L->d, root, NULL, "found %s, expected a mapping with tenants: and priorityClasses:",
		    f);
		return;
	}
	check_keys(L, root, NULL, known, "kind, priorityClasses, tenants, users");
	if ((v = fy_node_mapping_lookup_by_string(root, "kind", -1)) &&
	    !(drv_yaml_scalar(v) && !strcmp(drv_yaml_scalar(v), "Tenants"))) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, v, "kind", "found %s, expected Tenants (or no kind)", f);
	}
	/* classes first: tenants name them */
	v = fy_node_mapping_lookup_by_string(root, "priorityClasses", -1);
	if (v && !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, v, "priorityClasses",
		    "found %s, expected a mapping of class name to {value, preemptionPolicy}", f);
	} else if (v) {
		it = NULL;
		while ((p = fy_node_mapping_iterate(v, &it)))
			read_class(L, p);
	}
	v = fy_node_mapping_lookup_by_string(root, "tenants", -1);
	if (v && !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, v, "tenants",
		    "found %s, expected a mapping of tenant name to {quota, weight, cohort, ...}", f);
	} else if (v) {
		it = NULL;
		while ((p = fy_node_mapping_iterate(v, &it)))
			read_tenant(L, p);
	}
	v = fy_node_mapping_lookup_by_string(root, "users", -1);
	if (v && !fy_node_is_mapping(v)) {
		drv_yaml_found(v, f, sizeof(f));
		drv_yaml_err(L->d, v, "users",
		    "found %s, expected a mapping of user name to {maxRunningJobs, maxGpus, "
		    "maxSubmittedJobs}", f);
	} else if (v) {
		it = NULL;
		while ((p = fy_node_mapping_iterate(v, &it)))
			read_user(L, p);
	}
	/* (a misspelt key is error enough) */
	if (L->d->nerrors == before && !fy_node_mapping_lookup_by_string(root, "tenants", -1) &&
	    !fy_node_mapping_lookup_by_string(root, "priorityClasses", -1) &&
	    !fy_node_mapping_lookup_by_string(root, "users", -1))
		drv_yaml_err(L->d, root, NULL, "found neither, expected tenants: or priorityClasses:");
}

void drv_tenants_init(struct drv_tenants *t)
{
	memset(t, 0, sizeof(*t));
}

void drv_tenants_release(struct drv_tenants *t)
{
	int32_t i;
	for (i = 0; i < t->nclasses; i++)
		drv_free(t->classes[i].name);
	drv_free(t->classes);
	for (i = 0; i < t->ntenants; i++)
		free_tenant(&t->tenants[i]);
	for (i = 0; i < t->nusers; i++)
		drv_free(t->users[i].name);
	drv_free(t->users);
	drv_free(t->tenants);
	memset(t, 0, sizeof(*t));
}

int drv_tenants_load_buffer(const char *buf, size_t len, struct drv_tenants *t,
			    struct drv_diags *d)
{
	struct fy_document *fyd = NULL;
	struct loader L;
	int rc = 0, before = d->nerrors;

	drv_tenants_init(t);
	memset(&L, 0, sizeof(L));
	L.t = t;
	L.d = d;
	/* the shared reader: the text check libfyaml 0.7.12 needs, then the
	 * document, syntax errors at their positions (spec.h) */
	rc = drv_yaml_load(buf, len, d, &fyd);
	if (rc < 0)
		goto out;
	if (!fyd || !fy_document_root(fyd)) {
		/* no document at all (an empty file) or an empty one (comments) */
		drv_diag_err(d, 1, 1, NULL,
			     "found an empty file, expected tenants: or priorityClasses:");
		rc = DRV_EINVAL;
		goto out;
	}
	read_root(&L, fy_document_root(fyd));
	if (d->nerrors > before)
		rc = DRV_EINVAL;
out:
	if (fyd)
		fy_document_destroy(fyd);
	if (rc)
		drv_tenants_release(t);
	return rc;
}

int drv_tenants_load_file(const char *path, struct drv_tenants *t, struct drv_diags *d)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	drv_tenants_init(t);
	rc = drv_file_read(path, (size_t)16 << 20, &buf, &len);
	if (rc == DRV_ELIMIT) {
		drv_diag_err(d, 0, 0, NULL, "found a file larger than 16 MiB, expected a tenants file");
		return rc;
	}
	if (rc) {
		drv_diag_err(d, 0, 0, NULL, "cannot read: %s", strerror(errno));
		return DRV_EIO;
	}
	rc = drv_tenants_load_buffer(buf, len, t, d);
	free(buf);
	return rc;
}

static bool has_name(char *const *v, int32_t n, const char *name)
{
	for (int32_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

bool drv_tenant_user_ok(const struct drv_tenant_conf *tc, const char *user)
{
	return !tc || !tc->has_users || has_name(tc->users, tc->nusers, user);
}

bool drv_tenant_class_ok(const struct drv_tenant_conf *tc, const char *cls)
{
	return !tc || !tc->has_allowed || has_name(tc->allowed, tc->nallowed, cls);
}

int32_t drv_tenant_priority_cap(const struct drv_tenants *t, const struct drv_tenant_conf *tc)
{
	int32_t cap = INT32_MIN;

	if (!tc || !tc->has_allowed)
		return INT32_MAX;
	for (int32_t i = 0; i < tc->nallowed; i++) {
		const struct drv_tenant_class *c = drv_tenants_class(t, tc->allowed[i]);
		if (c && c->value > cap)
			cap = c->value;
	}
	return cap == INT32_MIN ? 0 : cap;
}

const struct drv_tenant_class *drv_tenants_class(const struct drv_tenants *t, const char *name)
{
	int32_t i;
	for (i = 0; i < t->nclasses; i++)
		if (!strcmp(t->classes[i].name, name))
			return &t->classes[i];
	return NULL;
}

const struct drv_tenant_conf *drv_tenants_tenant(const struct drv_tenants *t, const char *name)
{
	int32_t i;
	for (i = 0; i < t->ntenants; i++)
		if (!strcmp(t->tenants[i].name, name))
			return &t->tenants[i];
	return NULL;
}

int drv_tenants_apply(const struct drv_tenants *t, struct drv_sched *s)
{
	int32_t i;
	int rc;

	for (i = 0; i < t->nclasses; i++) {
		rc = drv_sched_add_class(s, t->classes[i].name, t->classes[i].value,
					 t->classes[i].policy);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < t->ntenants; i++) {
		const struct drv_tenant_conf *tc = &t->tenants[i];
		struct drv_sched_tenant st;
		drv_sched_tenant_default(&st, tc->name);
		st.cohort = tc->cohort;
		st.weight = tc->weight;
		memcpy(st.quota_milli, tc->quota_milli, sizeof(st.quota_milli));
		memcpy(st.borrow_limit_milli, tc->borrow_limit_milli, sizeof(st.borrow_limit_milli));
		rc = drv_sched_set_tenant(s, &st);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < t->nusers; i++) {
		const struct drv_user_conf *uc = &t->users[i];
		struct drv_sched_user su = { uc->name, uc->max_running, uc->max_milli,
					     uc->max_submitted };
		rc = drv_sched_set_user(s, &su);
		if (rc < 0)
			return rc;
	}
	return 0;
}

size_t drv_tenants_format_gpus(const int64_t milli[DRV_MAX_MODELS], char *buf, size_t bufsz)
{
	size_t len = 0;
	int m, n = 0;

	if (bufsz)
		buf[0] = 0;
	/* the same figure for every model: what "quota: 16" wrote */
	for (m = 1; m < DRV_MAX_MODELS && m < drv_gpu_model_count(); m++)
		if (milli[m] != milli[0])
			break;
	if (milli[0] >= 0 && (m == DRV_MAX_MODELS || m == drv_gpu_model_count()))
		return (size_t)snprintf(buf, bufsz, "%lld%s%.*lld GPUs of each model",
					(long long)(milli[0] / DRV_MILLI),
					milli[0] % DRV_MILLI ? "." : "", milli[0] % DRV_MILLI ? 3 : 0,
					milli[0] % DRV_MILLI ? (long long)(milli[0] % DRV_MILLI) : 0LL);
	for (m = 0; m < DRV_MAX_MODELS && m < drv_gpu_model_count(); m++) {
		char tmp[96];
		int k;
		if (milli[m] < 0)
			continue;
		if (milli[m] % DRV_MILLI)
			k = snprintf(tmp, sizeof(tmp), "%s%lld.%03lld %s", n ? " + " : "",
				     (long long)(milli[m] / DRV_MILLI),
				     (long long)(milli[m] % DRV_MILLI), drv_gpu_model_at(m)->short_name);
		else
			k = snprintf(tmp, sizeof(tmp), "%s%lld %s", n ? " + " : "",
				     (long long)(milli[m] / DRV_MILLI), drv_gpu_model_at(m)->short_name);
		n++;
		if (len < bufsz)
			snprintf(buf + len, bufsz - len, "%s", tmp);
		len += (size_t)k;
	}
	if (!n) {
		if (bufsz)
			snprintf(buf, bufsz, "none");
		len = 4;
	}
	return len;
}
