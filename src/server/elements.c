/*
 * elements.c: parent jobs and their elements (CONTRACTS.md section 2), as
 * a batch/v1 Job runs: the Job is a parent that is never scheduled; each
 * of its `completions` pods is an element, a job of its own (one task)
 * with the parent's id and its index. At most `parallelism` elements are
 * past their gate at once; the others wait, not scheduled, with reason
 * code JobArrayTaskLimit, and take the turn of an element that ends. A
 * failed pod is retried as a new attempt of the same element while the
 * Job's pod failures stay within `backoffLimit`; past it the Job fails
 * (BackoffLimitExceeded) and its other elements are cancelled, as they are
 * when the Job's activeDeadlineSeconds passes (DeadlineExceeded) or the
 * Job is cancelled. The Job succeeds once `completions` elements did.
 *
 * A Slurm array (sbatch --array) is a parent the same way: an element per
 * array task id, at most the %N throttle past their gate at once; a failed
 * element is final (Slurm never retries it) and does not affect its
 * siblings; the parent ends once every element has, succeeded when all
 * did. Elements keep the array's name; slurm_env.c gives them
 * SLURM_ARRAY_*.
 *
 * Indexed Jobs give each element JOB_COMPLETION_INDEX, the label and
 * annotation batch.kubernetes.io/job-completion-index and the hostname
 * JOB-INDEX (env HOSTNAME), as the Job controller and kubelet do.
 *
 * Everything here runs under s->mu.
 */
#include "server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANN_COMPLETION_INDEX "batch.kubernetes.io/job-completion-index"
#define K8S_DEFAULT_BACKOFF 6   /* batch/v1 Job's backoffLimit when not given */

static struct drv_label *label_add(struct drv_label *v, int32_t *n, const char *k,
				   const char *val)
{
	v = drv_realloc(v, (size_t)(*n + 1) * sizeof(*v));
	v[*n].key = drv_strdup(k);
	v[*n].value = drv_strdup(val);
	(*n)++;
	return v;
}

/* Element index of the parent's spec: a deep copy with its own name, and
 * for Indexed Jobs the index in env, label, annotation and hostname. */
static struct srv_job *make_element(struct drv_server *s, const struct drv_jobspec *ps,
				    const json_t *canon, int32_t index, bool indexed, bool array)
{
	struct srv_job *e = drv_calloc(1, sizeof(*e));
	struct drv_diags d;
	char idx[16], name[DRV_NAME_MAX * 2 + 16];

	drv_jobspec_init(&e->spec);
	drv_diags_init(&d, "element");
	if (drv_jobspec_from_json(canon, &e->spec, &d) < 0)
		drv_log(&s->log, "job %s: element %d does not copy", ps->job.name, index);
	drv_diags_release(&d);
	e->events = json_array();
	e->index = index;
	if (array) {   /* an array task: the array's name; not an array itself */
		drv_array_release(&e->spec.array);
		return e;
	}
	snprintf(idx, sizeof(idx), "%d", index);
	snprintf(name, sizeof(name), "%s-%d", ps->job.name ? ps->job.name : "job", index);
	srv_set_str(&e->spec.job.name, name);
	if (indexed) {
		for (int32_t g = 0; g < e->spec.job.ngroups; g++) {
			drv_jobspec_add_env(&e->spec, g, "JOB_COMPLETION_INDEX", idx);
			drv_jobspec_add_env(&e->spec, g, "HOSTNAME", name);
		}
		e->spec.labels = label_add(e->spec.labels, &e->spec.nlabels, ANN_COMPLETION_INDEX, idx);
		e->spec.annotations = label_add(e->spec.annotations, &e->spec.nannotations,
						ANN_COMPLETION_INDEX, idx);
	}
	return e;
}

size_t srv_elements_expand(struct drv_server *s, struct drv_jobspec *spec, struct srv_job ***js)
{
	int32_t n = drv_jobspec_elements(spec), par = drv_jobspec_parallelism(spec);
	struct srv_job *p, **v;
	json_t *canon;

	if (n <= 0)
		return 0;
	p = drv_calloc(1, sizeof(*p));
	p->spec = *spec;                  /* moved */
	drv_jobspec_init(spec);
	p->events = json_array();
	p->par = drv_calloc(1, sizeof(*p->par));
	p->par->n = n;
	p->par->parallelism = par;
	p->par->array = p->spec.array.spec != NULL;
	p->par->backoff_limit = p->par->array ? INT32_MAX
			      : p->spec.k8s.backoff_limit >= 0 ? p->spec.k8s.backoff_limit
							       : K8S_DEFAULT_BACKOFF;
	p->par->deadline_s = !p->par->array && p->spec.k8s.active_deadline_s > 0
			     ? p->spec.k8s.active_deadline_s : 0;
	p->par->indexed = !p->par->array && p->spec.k8s.indexed == 1;
	p->par->suspended = !p->par->array && p->spec.k8s.suspend == 1;
	v = drv_calloc((size_t)n + 1, sizeof(*v));
	v[0] = p;
	canon = drv_jobspec_to_json(&p->spec);
	for (int32_t i = 0; i < n; i++) {
		int32_t index = p->par->array ? drv_array_index(&p->spec.array, i) : i;

		v[i + 1] = make_element(s, &p->spec, canon, index, p->par->indexed, p->par->array);
		v[i + 1]->parent_new = p;
		v[i + 1]->gated = i >= par || p->par->suspended;
	}
	json_decref(canon);
	*js = v;
	return (size_t)n + 1;
}

/* Why an element of p waits (JobArrayTaskLimit). */
static void turn_reason(const struct srv_job *p, char *why, size_t n)
{
	if (p->par->array)
		snprintf(why, n, "waiting for its turn: at most %d of array %llu's tasks at once "
			 "(--array=%s)", p->par->parallelism, (unsigned long long)p->id,
			 p->spec.array.spec);
	else
		snprintf(why, n, "waiting for its turn: at most %d of Job %llu's pods at once "
			 "(parallelism)", p->par->parallelism, (unsigned long long)p->id);
}

void srv_elements_added(struct drv_server *s, struct srv_job *j)
{
	char why[256];

	if (j->par) {
		j->par->first = j->id + 1;  /* add_jobs numbers the elements next */
		j->par->active_since = j->submit_time;
		DRV_GROW(s->parents, s->nparents + 1, s->parentcap);
		s->parents[s->nparents++] = j->id;
	}
	if (!j->parent_new)
		return;
	j->parent = j->parent_new->id;
	if (j->parent_new->par->suspended) {
		snprintf(why, sizeof(why), "held: Job %llu is suspended (spec.suspend: true); "
			 "POST /v1/jobs/%llu/release resumes it", (unsigned long long)j->parent,
			 (unsigned long long)j->parent);
		srv_set_str(&j->reason, why);
	} else if (j->gated) {
		turn_reason(j->parent_new, why, sizeof(why));
		srv_set_str(&j->reason, why);
	}
	j->parent_new = NULL;
}

/* The parent's elements still in memory (finished ones may have left). */
#define FOR_ELEMENTS(s, p, e)                                                            \
	for (uint64_t id_ = (p)->par->first; id_ < (p)->par->first + (uint64_t)(p)->par->n;  \
	     id_++)                                                                      \
		if (((e) = srv_job_get((s), id_)) != NULL && (e)->parent == (p)->id)

void srv_job_cancel(struct drv_server *s, struct srv_job *j, const char *why)
{
	j->requeue_on_stop = false;
	j->requeue_quiet = false;
	srv_job_transition(s, j, J_CANCELLED, why);
	if (j->holding) {
		srv_job_stop_tasks(s, j, "cancelled");
	} else if (j->in_sched) {
		drv_sched_finish(s->sched, j->id, drv_wall_s());
		j->in_sched = false;
		srv_sched_kick(s);
	}
}

/* Ungates elements, lowest index first, while fewer than parallelism run. */
static void fill(struct drv_server *s, struct srv_job *p)
{
	struct srv_job *e;
	int32_t active = 0;
	char why[256];

	if (p->par->suspended)
		return;
	FOR_ELEMENTS(s, p, e)
		active += !srv_jstate_final(e->state) && !e->gated;
	FOR_ELEMENTS(s, p, e) {
		if (active >= p->par->parallelism)
			break;
		if (!e->gated || srv_jstate_final(e->state))
			continue;
		e->gated = false;
		active++;
		snprintf(why, sizeof(why), "its turn: fewer than %d of %s %llu's %s run",
			 p->par->parallelism, p->par->array ? "array" : "Job",
			 (unsigned long long)p->id, p->par->array ? "tasks" : "pods");
		srv_set_str(&e->reason, why);
		srv_job_queue(s, e);
		srv_job_mark(s, e);
		srv_sched_kick(s);
	}
}

/* The parent's end: its unfinished elements are cancelled with why. */
static void end_elements(struct drv_server *s, struct srv_job *p, const char *why)
{
	struct srv_job *e;
	char r[512];

	snprintf(r, sizeof(r), "Job %llu ended: %s", (unsigned long long)p->id, why);
	FOR_ELEMENTS(s, p, e)
		if (!srv_jstate_final(e->state))
			srv_job_cancel(s, e, r);
}

/* Element e ended (to); the parent p's counts and state follow. */
static void element_ended(struct drv_server *s, struct srv_job *p, struct srv_job *e,
			  enum jstate to)
{
	struct srv_job *x;
	int32_t left = 0;
	char why[512];

	if (to == J_SUCCEEDED)
		p->par->succeeded++;
	else if (p->par->array && to != J_CANCELLED)
		p->par->failed++;   /* final: an array task is never retried */
	srv_job_mark(s, p);
	if (to != J_SUCCEEDED && to != J_CANCELLED && p->par->failed > p->par->backoff_limit) {
		snprintf(why, sizeof(why), "BackoffLimitExceeded: %d pod failures, backoffLimit %d; "
			 "last: element %llu (index %d): %s", p->par->failed, p->par->backoff_limit,
			 (unsigned long long)e->id, e->index, e->reason ? e->reason : "failed");
		srv_job_transition(s, p, J_FAILED, why);
		return;
	}
	if (p->par->succeeded >= p->par->n) {
		snprintf(why, sizeof(why), "Completed: %d of %d %s succeeded", p->par->succeeded,
			 p->par->n, p->par->array ? "array tasks" : "pods");
		p->has_exit = true;
		p->exit_code = 0;
		srv_job_transition(s, p, J_SUCCEEDED, why);
		return;
	}
	fill(s, p);
	FOR_ELEMENTS(s, p, x)
		left += !srv_jstate_final(x->state);
	if (!left) {
		snprintf(why, sizeof(why), "%d of %d %s succeeded; element %llu (index %d) ended "
			 "%s: %s", p->par->succeeded, p->par->n, p->par->array ? "array tasks" : "pods",
			 (unsigned long long)e->id, e->index, srv_jstate_name(to),
			 e->reason ? e->reason : "");
		srv_job_transition(s, p, J_FAILED, why);
	}
}

void srv_elements_transition(struct drv_server *s, struct srv_job *j, enum jstate from,
			     enum jstate to)
{
	struct srv_job *p;
	char why[256];

	if (j->par) {
		if (srv_jstate_final(to) && !srv_jstate_final(from))
			end_elements(s, j, j->reason ? j->reason : srv_jstate_name(to));
		return;
	}
	p = j->parent ? srv_job_get(s, j->parent) : NULL;
	if (!p || !p->par || srv_jstate_final(p->state))
		return;
	if (to == J_RUNNING && p->state == J_PENDING) {
		snprintf(why, sizeof(why), "its first pod runs: element %llu (index %d)",
			 (unsigned long long)j->id, j->index);
		if (!p->start_time)
			p->start_time = drv_wall_s();
		srv_job_transition(s, p, J_RUNNING, why);
	}
	if (srv_jstate_final(to) && !srv_jstate_final(from))
		element_ended(s, p, j, to);
}

bool srv_element_retry(struct drv_server *s, struct srv_job *j, const char *why)
{
	struct srv_job *p = j->parent ? srv_job_get(s, j->parent) : NULL;
	char r[640];

	if (!p || !p->par || p->par->array || srv_jstate_final(p->state))
		return false;   /* Slurm never retries a failed array task */
	p->par->failed++;
	srv_job_mark(s, p);
	if (p->par->failed > p->par->backoff_limit)
		return false;
	snprintf(r, sizeof(r), "%s; retried: pod failure %d of the Job's backoffLimit %d", why,
		 p->par->failed, p->par->backoff_limit);
	srv_job_transition(s, j, J_PENDING, r);
	j->requeue_on_stop = true;
	j->requeue_quiet = true;
	srv_set_str(&j->stop_reason, NULL);
	srv_job_stop_tasks(s, j, "its pod failed; retried");
	srv_sched_kick(s);
	return true;
}

void srv_elements_tick(struct drv_server *s, int64_t now)
{
	size_t k = 0;
	char why[256];

	while (k < s->nparents) {
		struct srv_job *p = srv_job_get(s, s->parents[k]);

		if (!p || !p->par || srv_jstate_final(p->state)) {
			s->parents[k] = s->parents[--s->nparents];
			continue;
		}
		k++;
		if (p->par->deadline_s > 0 && !p->par->suspended &&
		    now >= p->par->active_since + p->par->deadline_s) {
			snprintf(why, sizeof(why), "DeadlineExceeded: the Job was active longer than "
				 "its activeDeadlineSeconds %lld", (long long)p->par->deadline_s);
			srv_job_transition(s, p, J_FAILED, why);
		}
	}
}

void srv_elements_json(struct drv_server *s, const struct srv_job *j, json_t *o)
{
	struct srv_job *e;
	int32_t active = 0, pending = 0;

	if (j->parent) {
		json_object_set_new(o, "array_job_id", json_integer((json_int_t)j->parent));
		json_object_set_new(o, "array_task_id", json_integer(j->index));
		json_object_set_new(o, "completion_index", json_integer(j->index));
	}
	if (!j->par)
		return;
	FOR_ELEMENTS(s, j, e) {
		if (srv_jstate_final(e->state))
			continue;
		if (e->state == J_PENDING)
			pending++;
		else
			active++;
	}
	if (j->par->array) {
		json_object_set_new(o, "elements",
				    json_pack("{s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:s}", "first",
					      (json_int_t)j->par->first, "count", j->par->n,
					      "parallelism", j->par->parallelism, "active", active,
					      "pending", pending, "succeeded", j->par->succeeded,
					      "failed", j->par->failed, "array", j->spec.array.spec));
		return;
	}
	json_object_set_new(o, "elements",
			    json_pack("{s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s}", "first",
				      (json_int_t)j->par->first, "count", j->par->n, "parallelism",
				      j->par->parallelism, "backoff_limit", j->par->backoff_limit,
				      "active", active, "pending", pending, "succeeded",
				      j->par->succeeded, "failed", j->par->failed,
				      "completion_mode", j->par->indexed ? "Indexed" : "NonIndexed"));
}

bool srv_elements_resume(struct drv_server *s, struct srv_job *j, const char *why)
{
	struct srv_job *e;
	char r[256];

	if (!j->par || !j->par->suspended || srv_jstate_final(j->state))
		return false;
	j->par->suspended = false;
	j->par->active_since = drv_wall_s();
	srv_job_transition(s, j, j->state, why);
	turn_reason(j, r, sizeof(r));
	FOR_ELEMENTS(s, j, e)
		if (e->gated)
			srv_set_str(&e->reason, r);
	fill(s, j);
	return true;
}

/* canon without what may change after submission (and who, which):
 * labels, annotations and what drover keeps without acting on too; an
 * imagePullPolicy equal to the image's default is none (the Kubernetes
 * API shows the default, and a patch of what it showed sends it back). */
static char *fixed_part(const json_t *canon)
{
	static const char *const drop[] = { "user", "id", "submitTime", "labels", "annotations",
					    "ignored", "warnings", "source", NULL };
	json_t *c = json_deep_copy(canon), *k, *g;
	size_t gi;
	char *t;

	for (int i = 0; drop[i]; i++)
		json_object_del(c, drop[i]);
	json_array_foreach(json_object_get(c, "groups"), gi, g) {
		const char *pp = drv_json_str(g, "imagePullPolicy");

		if (pp && strcmp(pp, drv_pull_policy_default(drv_json_str(g, "image"))) == 0)
			json_object_del(g, "imagePullPolicy");
	}
	if ((k = json_object_get(c, "kubernetes"))) {
		/* Kubernetes' defaults, which its API shows, are none */
		if (json_integer_value(json_object_get(k, "backoffLimit")) == 6)
			json_object_del(k, "backoffLimit");
		if (drv_json_str(k, "completionMode") &&
		    strcmp(drv_json_str(k, "completionMode"), "NonIndexed") == 0)
			json_object_del(k, "completionMode");
		json_object_del(k, "parallelism");
		json_object_del(k, "suspend");
	}
	t = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(c);
	return t;
}

/* Suspends parent p: its pending pods wait; those that run stop and wait
 * too, as a new attempt (CONTRACTS.md section 4: Kueue preempts so). */
static bool suspend(struct drv_server *s, struct srv_job *p, char *why, size_t n)
{
	struct srv_job *e;

	FOR_ELEMENTS(s, p, e)
		if (!srv_jstate_final(e->state) && e->state != J_PENDING && e->holding) {
			char r[200];

			snprintf(r, sizeof(r), "stopped: Job %llu is suspended (spec.suspend: true)",
				 (unsigned long long)p->id);
			srv_job_transition(s, e, J_PENDING, r);
			e->requeue_on_stop = true;
			e->requeue_quiet = true;
			srv_set_str(&e->stop_reason, NULL);
			srv_job_stop_tasks(s, e, r);
		}
	p->par->suspended = true;
	snprintf(why, n, "held: Job %llu is suspended (spec.suspend: true); POST "
		 "/v1/jobs/%llu/release resumes it", (unsigned long long)p->id,
		 (unsigned long long)p->id);
	FOR_ELEMENTS(s, p, e) {
		if (srv_jstate_final(e->state))
			continue;
		if (e->in_sched) {
			drv_sched_finish(s->sched, e->id, drv_wall_s());
			e->in_sched = false;
		}
		e->gated = true;
		srv_set_str(&e->reason, why);
		srv_job_mark(s, e);
	}
	srv_sched_kick(s);
	return true;
}

int srv_elements_update(struct drv_server *s, struct srv_job *p, struct drv_jobspec *ns,
			json_t *canon, char *why, size_t n)
{
	char *a = fixed_part(p->canon), *b = fixed_part(canon);
	bool same = strcmp(a, b) == 0;
	int32_t par = ns->k8s.parallelism >= 0 ? ns->k8s.parallelism : 1;
	bool sus = ns->k8s.suspend == 1;

	free(a);
	free(b);
	if (!same || srv_jstate_final(p->state)) {
		snprintf(why, n, "job %llu is a Kubernetes Job%s; of its spec only parallelism and "
			 "suspend change after submission", (unsigned long long)p->id,
			 srv_jstate_final(p->state) ? " that has ended" : "");
		return -1;
	}
	if (sus && !p->par->suspended && !suspend(s, p, why, n))
		return -1;
	p->par->parallelism = DRV_MIN(par, p->par->n);
	drv_jobspec_release(&p->spec);
	p->spec = *ns;            /* moved */
	drv_jobspec_init(ns);
	json_decref(p->canon);
	p->canon = canon;
	snprintf(why, n, "spec updated by apply: parallelism %d%s", p->par->parallelism,
		 p->par->suspended ? ", suspended" : "");
	if (!sus && p->par->suspended)
		srv_elements_resume(s, p, why);
	else
		srv_job_transition(s, p, p->state, why);
	fill(s, p);
	return 0;
}

struct srv_job *srv_parent_first_pending(struct drv_server *s, const struct srv_job *p)
{
	struct srv_job *e;

	if (!p->par)
		return NULL;
	FOR_ELEMENTS(s, p, e)
		if (e->state == J_PENDING)
			return e;
	return NULL;
}

void srv_elements_restored(struct drv_server *s, struct srv_job *j)
{
	if (j->par && !srv_jstate_final(j->state)) {
		DRV_GROW(s->parents, s->nparents + 1, s->parentcap);
		s->parents[s->nparents++] = j->id;
	}
}
