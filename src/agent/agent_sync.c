/*
 * agent_sync.c: the syncer thread: everything the agent says to the
 * controller, on one kept-alive connection (docs/api.md, "Agent protocol";
 * messages: include/drover/proto.h): register, then one sync exchange
 * after another (task states, reports and GPU health up; the task set
 * down), cut short when a report is owed.
 */
#include "drover/clock.h"
#include "agent_int.h"

#include <string.h>

static void proto_log(void *cls, const char *line)
{
	struct drv_agent *a = cls;

	drv_log(&a->log, "%s", line);
}

static void dec_init(struct drv_agent *a, struct drv_proto_dec *d)
{
	memset(d, 0, sizeof(*d));
	d->peer = "controller";
	d->seen = a->seen;
	d->log = proto_log;
	d->log_cls = a;
}

/* A register answered with an error: DRV_EPERM (refused) or DRV_EIO. */
static int register_refused(struct drv_agent *a, long status, json_t *reply)
{
	struct drv_http_reply r = { .status = status };
	char msg[512];

	r.body = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
	r.len = r.body ? strlen(r.body) : 0;
	drv_log(&a->log, "register refused (HTTP %ld): %s", status,
	      drv_http_error_message(&r, msg, sizeof(msg)));
	free(r.body);
	return status == 401 || status == 400 || status == 409 ? DRV_EPERM : DRV_EIO;
}

/* Protocol 2 on: the agent checks the controller's version as the
 * controller checks the agent's (absent: a version 1 controller). Version
 * 1 made no such check. 0, or DRV_EPERM (ok released). */
static int controller_version_ok(struct drv_agent *a, struct drv_proto_registered *ok)
{
	char msg[200];

	if (a->proto < 2 || drv_proto_versions_check(a->proto, ok->protocol ? ok->protocol : 1,
						     "controller", "agent", msg, sizeof(msg)) == 0)
		return 0;
	drv_log(&a->log, "register refused by this agent: %s", msg);
	drv_proto_registered_release(ok);
	return DRV_EPERM;
}

/* Registers (again). 0, or DRV_EPERM/DRV_EIO (refused), DRV_ECONN (unreachable). */
static int do_register(struct drv_agent *a)
{
	struct drv_proto_registered ok;
	struct drv_proto_dec d;
	json_t *body, *reply = NULL;
	long status = 0;
	int64_t sent = drv_boottime_ms();
	int rc;

	pthread_mutex_lock(&a->mu);
	body = agent_register_body(a);
	pthread_mutex_unlock(&a->mu);
	rc = drv_http_json(&a->ctl, "POST", "/v1/agent/register", body, 10000, &status, &reply);
	json_decref(body);
	if (rc == 0 && status != 200)
		rc = register_refused(a, status, reply);
	dec_init(a, &d);
	if (rc == 0 && drv_proto_registered_decode(reply, &ok, &d) < 0) {
		drv_log(&a->log, "register: the controller's answer is not understood: %s", d.err);
		rc = DRV_EIO;
	}
	json_decref(reply);
	if (rc == 0)
		rc = controller_version_ok(a, &ok);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&a->mu);
	a->session = ok.session;
	a->heartbeat_s = (int)DRV_MAX(ok.heartbeat_interval_s, 1);
	agent_lease_renew(a, sent, ok.agent_lease_s);
	a->allow_root_tasks = ok.allow_root_tasks;
	agent_endpoints_set(a, ok.endpoints_closed);
	a->version = 0;
	a->need_register = false;
	agent_wake(a);
	pthread_mutex_unlock(&a->mu);
	drv_log(&a->log, "registered with %s as %s (session %lld, %d GPUs, backend %s)", a->server, a->name,
	      (long long)ok.session, a->gpus.ngpus, a->backend);
	drv_proto_registered_release(&ok);
	return 0;
}

static void session_gone(struct drv_agent *a)
{
	if (!a->need_register)
		drv_log(&a->log, "sync: the controller no longer knows session %lld; registering again",
		      (long long)a->session);
	a->need_register = true;
	agent_wake(a);
}

static int gpu_healthy(const struct drv_gpu_sample *s)
{
	/* XIDs that mean the GPU needs a reset or is gone (not app faults) */
	static const int bad[] = { 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 };
	size_t i;

	if (s->ecc_dbe > 0)
		return 0;
	for (i = 0; i < DRV_ARRAY_SIZE(bad); i++)
		if (s->xid_last == bad[i])
			return 0;
	return 1;
}

/* The GPUs' health now, into m. Caller holds a->mu. */
static void sync_health(struct drv_agent *a, struct drv_proto_sync *m)
{
	int64_t now = drv_mono_ms();

	m->gpus = drv_calloc((size_t)a->gpus.ngpus, sizeof(*m->gpus));
	for (int g = 0; g < a->gpus.ngpus; g++) {
		struct drv_gpu_sample s;

		if (drv_gpu_sample(&a->gpus, g, now, &s) < 0)
			continue;
		m->gpus[m->ngpus++] = (struct drv_proto_gpu_health){
			.index = g, .healthy = gpu_healthy(&s), .xid = s.xid_last,
			.ecc_uncorrected = s.ecc_dbe > 0 ? s.ecc_dbe : 0,
			.temperature_c = s.temp_c >= 0 ? s.temp_c : -1,
			.utilization = s.util_pct >= 0 ? s.util_pct : -1,
			.memory_used_mib = s.fb_used_mib >= 0 ? s.fb_used_mib : -1,
			.power_w = s.power_w };
	}
}

/* A sync being made: the message, and which reports it carries. */
struct sync_out {
	struct drv_proto_sync m;
	struct sent { struct task *t; bool running, end; } *sent;
	size_t nsent;
	char now[32];
	char (*signames)[16];
	char (*pulls)[160];     /* image pull states (agent_container_msg), one per use */
	size_t npulls;
	int64_t sent_boot_ms;   /* when it was built: the lease counts from there */
};

/* The reports task t owes, into x. */
static void sync_reports(struct task *t, struct sync_out *x)
{
	struct drv_proto_report *r;

	if (t->rep_running && t->proc.pid)
		x->m.reports[x->m.nreports++] = (struct drv_proto_report){
			.task_id = t->id, .epoch = t->epoch, .state = DRV_PROTO_RUNNING,
			.pid = t->proc.pid, .time = x->now, .exit_code = -1 };
	if (t->rep_end && !t->hook_wait) {
		struct drv_proto_container c;

		agent_container_msg(t, &c, x->pulls[x->npulls++], sizeof(x->pulls[0]));
		r = &x->m.reports[x->m.nreports++];
		*r = (struct drv_proto_report){ .task_id = t->id, .epoch = t->epoch,
						.state = DRV_PROTO_FAILED, .time = x->now,
						.exit_code = -1, .reason = t->reason,
						.requeue = t->requeue,
						.drain = t->drain[0] ? t->drain : NULL };
		if (t->state != T_FAILED) {
			r->state = DRV_PROTO_EXITED;
			r->signal = t->proc.signal;
			r->signal_name = t->proc.signal ? drv_signal_name(t->proc.signal,
					 x->signames[x->nsent], sizeof(x->signames[0])) : NULL;
			r->exit_code = t->proc.signal ? -1 : t->proc.exit_code;
			r->oom_killed = t->proc.oom_killed;
			r->timed_out = t->timed_out && !t->proc.oom_killed;
			r->fenced = t->fenced || t->proc.fenced;
			r->reason = t->reason[0] ? t->reason : NULL;
			r->usage = agent_usage_msg(t);
		}
		r->container = c;
	}
	x->sent[x->nsent++] = (struct sent){ t, t->rep_running, t->rep_end && !t->hook_wait };
}

/* The sync to send now: task states, owed reports, GPU health. It waits
 * at the controller unless it carries reports. Caller holds a->mu. */
static void sync_build(struct drv_agent *a, struct sync_out *x)
{
	memset(x, 0, sizeof(*x));
	x->sent_boot_ms = drv_boottime_ms();
	drv_proto_sync_init(&x->m);
	x->m.node = a->name;
	x->m.session = a->session;
	x->m.version = a->version;
	drv_rfc3339(drv_wall_s(), x->now, sizeof(x->now));
	x->m.tasks = drv_calloc(a->ntasks, sizeof(*x->m.tasks));
	x->m.reports = drv_calloc(2 * a->ntasks, sizeof(*x->m.reports));
	x->sent = drv_calloc(a->ntasks, sizeof(*x->sent));
	x->signames = drv_calloc(a->ntasks, sizeof(*x->signames));
	x->pulls = drv_calloc(2 * a->ntasks + 1, sizeof(*x->pulls));
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		if (t->state == T_RUNNING) {
			struct drv_proto_ref *r = &x->m.tasks[x->m.ntasks++];

			*r = (struct drv_proto_ref){ .task_id = t->id, .epoch = t->epoch,
						     .state = "running", .usage = agent_usage_msg(t) };
			agent_container_msg(t, &r->container, x->pulls[x->npulls++],
					    sizeof(x->pulls[0]));
		}
		if (t->rep_running || (t->rep_end && !t->hook_wait))
			sync_reports(t, x);
	}
	sync_health(a, &x->m);
	x->m.wait_s = x->m.nreports || a->stopping ? 0 : a->heartbeat_s;
	a->sync_waiting = x->m.wait_s > 0;
}

static void sync_out_free(struct sync_out *x)
{
	drv_proto_sync_release(&x->m);
	drv_free(x->sent);
	drv_free(x->signames);
	drv_free(x->pulls);
}

/* The controller answered x with r: clear what it has, kill what it does
 * not want, keep its new task set. Caller holds a->mu. */
static void sync_done(struct drv_agent *a, struct sync_out *x, struct drv_proto_sync_reply *r)
{
	for (size_t k = 0; k < x->nsent; k++) {
		size_t i;

		/* the tasks may have moved on meanwhile: clear only what was sent */
		for (i = 0; i < a->ntasks && a->tasks[i] != x->sent[k].t; i++)
			;
		if (i == a->ntasks)
			continue;
		if (x->sent[k].running)
			a->tasks[i]->rep_running = false;
		if (x->sent[k].end) {
			a->tasks[i]->rep_end = false;
			agent_journal_end(a, a->tasks[i]);
		}
	}
	for (size_t k = 0; k < r->nstale; k++) {
		struct task *t = agent_find_task(a, r->stale[k].task_id, r->stale[k].epoch);

		if (t)
			agent_stop_task(a, t, 0, r->stale[k].reason ? r->stale[k].reason : "stale epoch");
	}
	a->heartbeat_s = (int)DRV_MAX(r->heartbeat_interval_s, 1);
	agent_lease_renew(a, x->sent_boot_ms, r->agent_lease_s);
	a->allow_root_tasks = r->allow_root_tasks;
	agent_endpoints_set(a, r->endpoints_closed);
	if (r->has_tasks && a->session == x->m.session) {
		drv_proto_sync_reply_release(&a->desired);
		a->desired = *r;
		memset(r, 0, sizeof(*r));
		a->have_desired = true;
		a->desired_new = true;
		a->version = a->desired.version;
	}
	agent_wake(a);
}

/* The answer to a sync, decoded and applied; <0 when refused. Caller
 * holds a->mu. */
static int sync_answer(struct drv_agent *a, struct sync_out *x, long status, json_t *reply)
{
	struct drv_proto_sync_reply r;
	struct drv_proto_dec d;

	if (status == 409) {
		session_gone(a);
		return 0;
	}
	if (status != 200) {
		drv_log(&a->log, "sync refused (HTTP %ld)", status);
		return DRV_EIO;
	}
	dec_init(a, &d);
	if (drv_proto_sync_reply_decode(reply, &r, &d) < 0) {
		drv_log(&a->log, "sync: the controller's answer is not understood: %s", d.err);
		return DRV_EIO;
	}
	sync_done(a, x, &r);
	drv_proto_sync_reply_release(&r);
	return 0;
}

/* One sync exchange. 0, or <0 after a transport error or a refusal. */
int agent_sync_once(struct drv_agent *a)
{
	struct sync_out x;
	json_t *body, *reply = NULL;
	long status = 0, timeout;
	int rc;

	pthread_mutex_lock(&a->mu);
	sync_build(a, &x);
	body = drv_proto_sync_encode(&x.m);
	timeout = (long)(x.m.wait_s + 10) * 1000;
	pthread_mutex_unlock(&a->mu);
	rc = drv_http_json(&a->ctl, "POST", "/v1/agent/sync", body, timeout, &status, &reply);
	json_decref(body);
	pthread_mutex_lock(&a->mu);
	a->sync_waiting = false;
	if (rc < 0 && !a->interrupted && !a->stopping)
		drv_log(&a->log, "sync: %s", a->ctl.err);
	if (rc == 0)
		rc = sync_answer(a, &x, status, reply);
	pthread_mutex_unlock(&a->mu);
	json_decref(reply);
	sync_out_free(&x);
	return rc;
}

/* Cuts a sync that waits at the controller short: the agent has
 * something to say. Caller holds a->mu. */
void agent_kick_sync(struct drv_agent *a)
{
	if (!a->sync_waiting)
		return;
	a->sync_waiting = false;
	a->interrupted = true;
	drv_http_client_interrupt(&a->ctl);
}

/*
 * The syncer: registers (again after a 409) and keeps one sync going.
 * It never sleeps between syncs (the controller holds each one until it
 * has news or the heartbeat interval passed), only after failures.
 */
void *agent_sync_main(void *arg)
{
	struct drv_agent *a = arg;
	int64_t backoff = 0;
	bool said_unreachable = false;

	pthread_mutex_lock(&a->mu);
	while (!a->stopping) {
		bool reg = !a->session || a->need_register;
		int rc;

		pthread_mutex_unlock(&a->mu);
		rc = reg ? do_register(a) : agent_sync_once(a);
		pthread_mutex_lock(&a->mu);
		if (rc == 0 || a->interrupted) {
			/* a kick that came after this sync ended is owed to the
			 * next one, which is built now and says it all anyway */
			if (rc == 0 && a->interrupted)
				drv_http_client_forget_interrupt(&a->ctl);
			a->interrupted = false;
			backoff = 0;
			said_unreachable = false;
			continue;
		}
		if (reg && !said_unreachable && rc != DRV_EPERM && rc != DRV_EIO)
			drv_log(&a->log, "%s; retrying", a->ctl.err);
		said_unreachable |= reg;
		backoff = backoff ? DRV_MIN(backoff * 2, reg ? 10000 : 5000) : 500;
		if (!a->stopping)
			agent_wait_ms(a, backoff);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

