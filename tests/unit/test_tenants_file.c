/*
 * test_tenants_file.c: the tenants file (src/spec/tenants_file.c): a good
 * file gives the classes and tenants it says, and the scheduler gets them;
 * every kind of mistake is reported at its exact line:col with its field
 * path, what was found and what was expected, and nothing is kept.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/clusterfile.h"
#include "drover/tenants.h"

static int load(const char *text, struct drv_tenants *t, struct drv_diags *d)
{
	drv_diags_init(d, "t.yaml");
	return drv_tenants_load_buffer(text, strlen(text), t, d);
}

/* "line:col: path: msg" of diagnostic i */
static const char *msg(const struct drv_diags *d, int i, char *buf, size_t sz)
{
	snprintf(buf, sz, "%d:%d: %s: %s", d->v[i].line, d->v[i].col,
		 d->v[i].path ? d->v[i].path : "", d->v[i].msg);
	return buf;
}

static const char good[] =
	"# a quota split\n"
	"kind: Tenants\n"
	"priorityClasses:\n"
	"  high: {value: 1000}\n"
	"  batch:\n"
	"    value: -10\n"
	"    preemptionPolicy: Never\n"
	"    description: runs when nothing else does\n"
	"tenants:\n"
	"  nlp:\n"
	"    weight: 3\n"
	"    cohort: research\n"
	"    quota: {H100: 64, NVIDIA-A100-SXM4-80GB: 8.5}\n"
	"    borrowingLimit: {H100: 16}\n"
	"    priorityClass: high\n"
	"  vision:\n"
	"    cohort: research\n"
	"    quota: 32\n"
	"  interns: {quota: {h100: 0.25}, priorityClass: batch}\n"
	"  free-for-all: {}\n";

Test(tenants_file, good_file_gives_what_it_says)
{
	struct drv_tenants t;
	struct drv_diags d;
	const struct drv_tenant_conf *nlp, *vis, *in, *ffa;
	const struct drv_tenant_class *hi, *lo;
	int h100 = drv_gpu_model_find("H100"), a100 = drv_gpu_model_find("A100-SXM4-80GB");
	int m;
	char buf[256];

	cr_assert(eq(int, load(good, &t, &d), 0));
	cr_assert(eq(int, d.n, 0));
	cr_assert(eq(int, t.nclasses, 2));
	cr_assert(eq(int, t.ntenants, 4));
	hi = drv_tenants_class(&t, "high");
	lo = drv_tenants_class(&t, "batch");
	cr_assert(hi != NULL && lo != NULL);
	cr_assert(eq(int, hi->value, 1000));
	cr_assert(eq(int, hi->policy, DRV_PREEMPT_LOWER));
	cr_assert(eq(int, lo->value, -10));
	cr_assert(eq(int, lo->policy, DRV_PREEMPT_NEVER));
	cr_assert(eq(int, hi->line, 4));
	cr_assert(eq(int, hi->col, 3));

	nlp = drv_tenants_tenant(&t, "nlp");
	cr_assert(nlp != NULL);
	cr_assert(eq(int, nlp->line, 10));
	cr_assert(eq(int, nlp->weight, 3));
	cr_assert(eq(str, nlp->cohort, "research"));
	cr_assert(eq(str, nlp->priority_class, "high"));
	cr_assert(eq(i64, nlp->quota_milli[h100], 64000));
	cr_assert(eq(i64, nlp->quota_milli[a100], 8500));
	cr_assert(eq(i64, nlp->borrow_limit_milli[h100], 16000));
	cr_assert(eq(i64, nlp->borrow_limit_milli[a100], -1));
	for (m = 0; m < drv_gpu_model_count(); m++)
		if (m != h100 && m != a100)
			cr_assert(eq(i64, nlp->quota_milli[m], -1));
	drv_tenants_format_gpus(nlp->quota_milli, buf, sizeof(buf));
	cr_assert(eq(str, buf, "64 H100 + 8.500 A100"),
		  "%s", buf);

	/* a plain number is that many GPUs of every model */
	vis = drv_tenants_tenant(&t, "vision");
	for (m = 0; m < drv_gpu_model_count(); m++)
		cr_assert(eq(i64, vis->quota_milli[m], 32000));
	cr_assert(eq(int, vis->weight, 1));
	cr_assert(eq(ptr, vis->priority_class, NULL));
	drv_tenants_format_gpus(vis->quota_milli, buf, sizeof(buf));
	cr_assert(eq(str, buf, "32 GPUs of each model"));

	in = drv_tenants_tenant(&t, "interns");
	cr_assert(eq(i64, in->quota_milli[h100], 250));
	cr_assert(eq(str, in->priority_class, "batch"));
	cr_assert(eq(ptr, (void *)in->cohort, NULL));
	ffa = drv_tenants_tenant(&t, "free-for-all");
	drv_tenants_format_gpus(ffa->quota_milli, buf, sizeof(buf));
	cr_assert(eq(str, buf, "none"));
	cr_assert(eq(ptr, (void *)drv_tenants_tenant(&t, "nobody"), NULL));
	drv_tenants_release(&t);
	drv_tenants_release(&t); /* twice is safe */
	drv_diags_release(&d);
}

/* The scheduler holds the tenant to its quota and knows the classes. */
Test(tenants_file, apply_gives_the_scheduler_quota_and_classes)
{
	static const char text[] = "priorityClasses:\n  high: {value: 1000}\n"
				   "tenants:\n  a: {quota: {H100: 8}}\n";
	struct drv_tenants t;
	struct drv_diags d;
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_decisions dec;
	struct drv_sched_policy pol;
	struct drv_task_group g[3];
	struct drv_job j[3];
	struct drv_sched_job_info info;
	int i, h100 = drv_gpu_model_find("H100");
	int32_t n;

	cr_assert(eq(int, load(text, &t, &d), 0));
	cr_assert(eq(int, drv_cluster_load_file("examples/clusters/h100-256.yaml", &c, &d), 0));
	(void)h100;
	s = drv_sched_new(&c);
	cr_assert(eq(int, drv_tenants_apply(&t, s), 0));
	/* applying twice: the classes exist already */
	cr_assert(eq(int, drv_tenants_apply(&t, s), DRV_EEXIST));
	for (i = 0; i < 3; i++) {
		drv_job_init(&j[i]);
		memset(&g[i], 0, sizeof(g[i]));
		g[i].name = "t";
		g[i].count = 1;
		g[i].gpus = 8;
		g[i].model = -1;
		j[i].id = (uint64_t)i + 1;
		j[i].groups = &g[i];
		j[i].ngroups = 1;
		j[i].tenant = i < 2 ? "a" : "b";
		j[i].submit_time = i;
	}
	cr_assert(eq(int, drv_sched_submit(s, &j[0], "high"), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[1], NULL), 0));
	cr_assert(eq(int, drv_sched_submit(s, &j[2], NULL), 0));
	drv_sched_policy_default(&pol);
	pol.report_all_pending = true;
	drv_sched_decisions_init(&dec);
	n = drv_sched_pass(s, 10, &pol, &dec);
	cr_assert(ge(int, n, 0));
	cr_assert(eq(int, drv_sched_job_get(s, 1, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_RUNNING));
	cr_assert(eq(int, info.priority, 1000));
	/* a's second job waits for quota although 248 GPUs are free */
	cr_assert(eq(int, drv_sched_job_get(s, 2, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING));
	cr_assert(eq(int, info.why.reason, DRV_REASON_QUOTA));
	cr_assert(eq(int, drv_sched_job_get(s, 3, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_RUNNING));
	drv_sched_decisions_release(&dec);
	drv_sched_free(s);
	for (i = 0; i < 3; i++)
		j[i].groups = NULL;
	drv_cluster_release(&c);
	drv_tenants_release(&t);
	drv_diags_release(&d);
}

/* One bad file, one error: exact position, path and message; nothing kept. */
static void one_error(const char *text, int rc, const char *want)
{
	struct drv_tenants t;
	struct drv_diags d;
	char buf[768];

	cr_assert(eq(int, load(text, &t, &d), rc), "%s", text);
	cr_assert(eq(int, d.nerrors, 1), "%s: %d errors, first %s", text, d.nerrors,
		  d.n ? msg(&d, 0, buf, sizeof(buf)) : "");
	msg(&d, 0, buf, sizeof(buf));
	cr_assert(eq(int, strncmp(buf, want, strlen(want)), 0), "got  %s\nwant %s", buf, want);
	cr_assert(eq(int, t.ntenants, 0));
	cr_assert(eq(int, t.nclasses, 0));
	cr_assert(eq(ptr, (void *)t.tenants, NULL));
	drv_diags_release(&d);
}

Test(tenants_file, each_error_at_its_position)
{
	one_error("tenants:\n  a: {quota: {H100: 8}\n", DRV_EPARSE, "3:1: : YAML syntax: missing comma in flow mapping");
	one_error("", DRV_EINVAL, "1:1: : found an empty file");
	one_error("- a\n- b\n", DRV_EINVAL, "1:3: : found a list, expected a mapping");
	one_error("kind: Cluster\ntenants: {}\n", DRV_EINVAL,
		  "1:7: kind: found 'Cluster', expected Tenants");
	one_error("tenant:\n  a: {}\n", DRV_EINVAL,
		  "1:1: tenant: found the unknown field 'tenant', expected one of: kind, "
		  "priorityClasses, tenants");
	one_error("tenants: [a, b]\n", DRV_EINVAL,
		  "1:11: tenants: found a list, expected a mapping of tenant name");
	one_error("tenants:\n  a:\n", DRV_EINVAL, "2:3: tenants.a: found nothing, expected a mapping");
	one_error("tenants:\n  a b: {}\n", DRV_EINVAL,
		  "2:3: tenants.a b: found 'a b', expected a tenant name");
	one_error("tenants:\n  a:\n    quota: {H100: 8}\n    wieght: 2\n", DRV_EINVAL,
		  "4:5: tenants.a.wieght: found the unknown field 'wieght', expected one of: weight, "
		  "cohort, quota, borrowingLimit, priorityClass, budget, users, allowedClasses");
	one_error("tenants:\n  a:\n    quota: {H100: eight}\n", DRV_EINVAL,
		  "3:19: tenants.a.quota.H100: found 'eight', expected a number of GPUs >= 0");
	one_error("tenants:\n  a:\n    quota: {H100: 1.2345}\n", DRV_EINVAL,
		  "3:19: tenants.a.quota.H100: found '1.2345', expected a number of GPUs >= 0 (at "
		  "most 3 decimals");
	one_error("tenants:\n  a:\n    quota: {H100: -4}\n", DRV_EINVAL,
		  "3:19: tenants.a.quota.H100: found '-4', expected a number of GPUs >= 0");
	one_error("tenants:\n  a:\n    quota:\n      H200: 8\n      Z80: 4\n", DRV_EINVAL,
		  "5:7: tenants.a.quota.Z80: found 'Z80', expected a GPU model (");
	one_error("tenants:\n  a:\n    quota: {H100: 8, h100: 4}\n", DRV_EINVAL,
		  "3:22: tenants.a.quota.h100: found 'h100', a GPU model already given (H100), "
		  "expected each GPU model once");
	one_error("tenants:\n  a:\n    quota: [8]\n", DRV_EINVAL,
		  "3:13: tenants.a.quota: found a list, expected GPUs of every model (16) or a "
		  "mapping");
	one_error("tenants:\n  a:\n    quota:\n", DRV_EINVAL,
		  "3:5: tenants.a.quota: found nothing, expected GPUs of every model");
	one_error("tenants:\n  a: {weight: 0}\n", DRV_EINVAL,
		  "2:15: tenants.a.weight: found '0', expected a whole number from 1 to 1000000");
	one_error("tenants:\n  a: {weight: 1.5}\n", DRV_EINVAL,
		  "2:15: tenants.a.weight: found '1.5', expected a whole number from 1 to 1000000");
	one_error("tenants:\n  a: {cohort: 'x y'}\n", DRV_EINVAL,
		  "2:16: tenants.a.cohort: found 'x y', expected a cohort name");
	one_error("tenants:\n  a:\n    quota: 8\n    borrowingLimit: 4\n", DRV_EINVAL,
		  "4:21: tenants.a.borrowingLimit: found a borrowing limit, expected it only with a "
		  "cohort");
	one_error("priorityClasses: {high: {value: 10}}\ntenants:\n  a: {priorityClass: hihg}\n",
		  DRV_EINVAL,
		  "3:22: tenants.a.priorityClass: found 'hihg', expected a class of priorityClasses "
		  "(high)");
	one_error("tenants:\n  a: {priorityClass: high}\n", DRV_EINVAL,
		  "2:22: tenants.a.priorityClass: found 'high', expected a class of priorityClasses "
		  "(the file defines none)");
	one_error("priorityClasses:\n  high: {}\n", DRV_EINVAL,
		  "2:3: priorityClasses.high.value: found nothing, expected the class's priority "
		  "value");
	one_error("priorityClasses:\n  high: {value: 1e3}\n", DRV_EINVAL,
		  "2:17: priorityClasses.high.value: found '1e3', expected a whole number from "
		  "-2147483648 to 2147483647");
	one_error("priorityClasses:\n  high: {value: 3000000000}\n", DRV_EINVAL,
		  "2:17: priorityClasses.high.value: found '3000000000', expected a whole number");
	one_error("priorityClasses:\n  high: {value: 1, preemptionPolicy: Sometimes}\n", DRV_EINVAL,
		  "2:38: priorityClasses.high.preemptionPolicy: found 'Sometimes', expected "
		  "PreemptLowerPriority or Never");
	one_error("priorityClasses:\n  10: {value: 10}\n", DRV_EINVAL,
		  "2:3: priorityClasses.10: found '10', expected a class name: a letter, then");
	one_error("priorityClasses:\n  high: 1000\n", DRV_EINVAL,
		  "2:9: priorityClasses.high: found '1000', expected a mapping such as {value: 1000}");
	one_error("priorityClasses:\n  high: {value: 1, prio: 2}\n", DRV_EINVAL,
		  "2:20: priorityClasses.high.prio: found the unknown field 'prio'");
	/* libfyaml 0.7.12 crashed on this one (a tab where indentation goes) */
	one_error("tenants:\n :\n ? ilsses:\n ? hsses:\t ? ioris:2}{:\n0: pr", DRV_EPARSE,
		  "4:10: : found a tab in indentation, expected spaces (YAML forbids tabs for "
		  "indentation)");
	one_error("tenants:\n  a:\n    ? quota:\t- 8\n", DRV_EPARSE,
		  "3:13: : found a tab in indentation");
	one_error("tenants:\n  a:\n    cohort: 'x\n\n      y'\n", DRV_EINVAL,
		  "3:14: tenants.a.cohort: found 'x y', expected a cohort name");
	one_error("kind: Tenants\n", DRV_EINVAL,
		  "1:1: : found neither, expected tenants: or priorityClasses:");
}

Test(tenants_file, budget_in_micro_dollars)
{
	struct drv_tenants t;
	struct drv_diags d;

	drv_tenants_init(&t);
	cr_assert(eq(int, load("tenants:\n  a: {budget: {monthlyUsd: 5000.25, hold: true}}\n"
			       "  b: {budget: {monthlyUsd: 0}}\n  c: {}\n", &t, &d), 0));
	cr_assert(eq(i64, drv_tenants_tenant(&t, "a")->budget_micro, 5000250000));
	cr_assert(drv_tenants_tenant(&t, "a")->budget_hold);
	cr_assert(eq(i64, drv_tenants_tenant(&t, "b")->budget_micro, 0));
	cr_assert(not(drv_tenants_tenant(&t, "b")->budget_hold));
	cr_assert(eq(i64, drv_tenants_tenant(&t, "c")->budget_micro, -1));
	drv_tenants_release(&t);
	drv_diags_release(&d);
	one_error("tenants:\n  a: {budget: 5000}\n", DRV_EINVAL,
		  "2:15: tenants.a.budget: found '5000', expected a mapping with monthlyUsd");
	one_error("tenants:\n  a:\n    budget: {monthlyUsd: lots}\n", DRV_EINVAL,
		  "3:26: tenants.a.budget.monthlyUsd: found 'lots', expected dollars per calendar month");
	one_error("tenants:\n  a:\n    budget: {monthlyUsd: -5}\n", DRV_EINVAL,
		  "3:26: tenants.a.budget.monthlyUsd: found '-5', expected dollars");
	one_error("tenants:\n  a:\n    budget: {monthlyUsd: 5, hold: maybe}\n", DRV_EINVAL,
		  "3:35: tenants.a.budget.hold: found 'maybe', expected true or false");
	one_error("tenants:\n  a:\n    budget: {monthlyUsd: 5, hodl: true}\n", DRV_EINVAL,
		  "3:29: tenants.a.budget.hodl: found the unknown field 'hodl', expected one of: "
		  "monthlyUsd, hold");
}

Test(tenants_file, duplicates_are_errors)
{
	struct drv_tenants t;
	struct drv_diags d;
	char buf[512];

	/* libfyaml itself refuses a key twice in one mapping */
	cr_assert(eq(int, load("tenants:\n  a: {}\n  a: {weight: 2}\n", &t, &d), DRV_EPARSE));
	cr_assert(eq(int, d.nerrors, 1));
	msg(&d, 0, buf, sizeof(buf));
	cr_assert(eq(int, strncmp(buf, "3:3: : YAML syntax: duplicate key", 33), 0), "%s", buf);
	cr_assert(eq(int, t.ntenants, 0));
	drv_diags_release(&d);
}

Test(tenants_file, every_error_reported_in_one_go)
{
	struct drv_tenants t;
	struct drv_diags d;
	char buf[512];
	static const char text[] = "tenants:\n"
				   "  a: {weight: 0}\n"
				   "  b: {quota: {H100: x}}\n"
				   "  c: {quota: 4}\n";

	cr_assert(eq(int, load(text, &t, &d), DRV_EINVAL));
	cr_assert(eq(int, d.nerrors, 2));
	cr_assert(eq(int, strncmp(msg(&d, 0, buf, sizeof(buf)), "2:15: tenants.a.weight", 22), 0),
		  "%s", buf);
	cr_assert(eq(int, strncmp(msg(&d, 1, buf, sizeof(buf)), "3:21: tenants.b.quota.H100", 26),
		     0), "%s", buf);
	/* c was fine, but nothing is kept */
	cr_assert(eq(int, t.ntenants, 0));
	drv_diags_release(&d);
}

Test(tenants_file, file_errors)
{
	struct drv_tenants t;
	struct drv_diags d;

	drv_diags_init(&d, "/nonexistent/t.yaml");
	cr_assert(eq(int, drv_tenants_load_file("/nonexistent/t.yaml", &t, &d), DRV_EIO));
	cr_assert(eq(int, d.nerrors, 1));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "No such file"), NULL)), "%s", d.v[0].msg);
	drv_diags_release(&d);
	drv_diags_init(&d, "examples/tenants/philly-quota.yaml");
	cr_assert(eq(int, drv_tenants_load_file("examples/tenants/philly-quota.yaml", &t, &d), 0));
	cr_assert(gt(int, t.ntenants, 0));
	drv_tenants_release(&t);
	drv_diags_release(&d);
}

Test(tenants_file, tab_between_key_and_value_is_valid_yaml)
{
	struct drv_tenants t;
	struct drv_diags d;

	/* a tab as separation, not indentation: YAML allows it, so does the reader */
	cr_assert(eq(int, load("tenants:\n  a: {quota: 8}\n  b:\t{quota: 4}\t# four\n", &t, &d), 0),
		  "%s", d.n ? d.v[0].msg : "");
	cr_assert(eq(int, t.ntenants, 2));
	drv_tenants_release(&t);
	drv_diags_release(&d);
}

/* Tenant key users: (a list: who may submit to it) is not the top-level
 * users: map (per-user limits); allowedClasses caps the priority. */
Test(tenants_file, tenant_users_and_allowed_classes)
{
	struct drv_tenants t;
	struct drv_diags d;
	const struct drv_tenant_conf *r, *o, *n;

	drv_tenants_init(&t);
	cr_assert(eq(int, load("priorityClasses:\n  low: {value: 10}\n  high: {value: 100}\n"
			       "  top: {value: 1000}\n"
			       "tenants:\n  research: {users: [alice, bob], allowedClasses: [high, low]}\n"
			       "  open: {}\n  none: {users: [], allowedClasses: []}\n"
			       "users:\n  alice: {maxRunningJobs: 2}\n", &t, &d), 0));
	r = drv_tenants_tenant(&t, "research");
	o = drv_tenants_tenant(&t, "open");
	n = drv_tenants_tenant(&t, "none");
	cr_assert(eq(int, r->nusers, 2));
	cr_assert(drv_tenant_user_ok(r, "bob"));
	cr_assert(not(drv_tenant_user_ok(r, "carol")));
	cr_assert(drv_tenant_user_ok(o, "carol"));
	cr_assert(drv_tenant_user_ok(NULL, "carol"));
	cr_assert(not(drv_tenant_user_ok(n, "alice")));
	cr_assert(drv_tenant_class_ok(r, "low"));
	cr_assert(not(drv_tenant_class_ok(r, "top")));
	cr_assert(drv_tenant_class_ok(o, "top"));
	cr_assert(eq(i32, drv_tenant_priority_cap(&t, r), 100));
	cr_assert(eq(i32, drv_tenant_priority_cap(&t, o), INT32_MAX));
	cr_assert(eq(i32, drv_tenant_priority_cap(&t, n), 0));
	cr_assert(eq(int, t.nusers, 1));
	drv_tenants_release(&t);
	drv_diags_release(&d);
	one_error("tenants:\n  a: {users: alice}\n", DRV_EINVAL,
		  "2:14: tenants.a.users: found 'alice', expected a list such as [alice, bob]");
	one_error("tenants:\n  a: {users: [alice, 'b b']}\n", DRV_EINVAL,
		  "2:23: tenants.a.users[1]: found 'b b', expected a user name");
	one_error("priorityClasses:\n  low: {value: 1}\ntenants:\n  a: {allowedClasses: [low, hi]}\n",
		  DRV_EINVAL, "4:29: tenants.a.allowedClasses[1]: found 'hi', expected a class of "
			      "priorityClasses");
}
