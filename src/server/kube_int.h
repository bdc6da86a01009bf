/*
 * kube_int.h: the Kubernetes-compatible API of the controller (docs/kubernetes.md),
 * private to src/server/kube_*.c.
 *
 * The face serves drover's own jobs and nodes as Kubernetes objects: one
 * state, no copy. kube_api.c routes /api, /apis, /version and /openapi and
 * answers discovery and errors (Status objects); kube_objects.c renders
 * jobs as Pods and batch/v1 Jobs, nodes as Nodes, job events as Events;
 * kube_list.c lists, filters (label and field selectors), pages and
 * prints tables; kube_write.c creates, patches and deletes; kube_watch.c
 * streams watches from the event ring; kube_openapi.c holds the schema of
 * the served kinds (OpenAPI v3 documents, strict field validation).
 *
 * Locking: everything that reads jobs or nodes runs under s->mu, as the
 * rest of the controller does; reads of finished jobs release it while
 * they read the store (kube_jobs_collect).
 */
#ifndef DROVER_SERVER_KUBE_INT_H
#define DROVER_SERVER_KUBE_INT_H

#include "server_int.h"

#define KUBE_MINOR "32"
#define KUBE_GIT_VERSION "v1.32.0+drover-" DRV_VERSION
/* Annotations drover sets on jobs made through this API. */
#define KUBE_ANN_API "drover.dev/created-by"      /* "kubernetes-api" */
#define KUBE_ANN_UID "drover.dev/uid"             /* the object's uid */
#define KUBE_ANN_MANAGED "drover.dev/managed-fields" /* server-side apply: {manager: [field]} */
#define KUBE_LABEL_JOB "drover.dev/job-id"        /* on every Pod and Job */
#define KUBE_LABEL_RANK "drover.dev/rank"         /* on Pods of multi-task jobs */

/* What a request is about, from its path. */
struct kube_res;
struct kube_req {
	const struct kube_res *res;    /* NULL for discovery paths */
	char ns[254];                  /* "" when not namespaced or all */
	char name[254];                /* "" for a collection */
	char sub[32];                  /* subresource ("log", "status") or "" */
	bool table;                    /* the client asked for a Table */
	bool watch;
	struct caller *c;
};

/* A served resource (the discovery table, kube_api.c). */
struct kube_res {
	const char *group, *version, *plural, *singular, *kind;
	bool namespaced;
	const char *verbs;             /* comma-separated */
	const char *short_names;       /* comma-separated or "" */
	const char *subresources;      /* comma-separated or "" */
	const char *type;              /* its schema in kube_openapi.c ("Pod", "VolcanoJob"),
					* what the code tells kinds apart by; "" none */
};
extern const struct kube_res kube_resources[];
const struct kube_res *kube_res_find(const char *group, const char *version, const char *plural);

/* --- kube_api.c --- */
/* A Status reply: code, reason ("NotFound"), message; details may be NULL (consumed). */
void kube_status(struct drv_http_resp *o, int code, const char *reason, json_t *details,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A Status for a refusal of the filter (401/403/503) made in drover's error shape. */
void kube_status_from_error(struct drv_http_resp *o);
/* The object reply (consumes obj). */
void kube_reply(struct drv_http_resp *o, int code, json_t *obj);
/* A "Warning: 299 - ..." header for each line. */
void kube_warn(struct drv_http_resp *o, const char *msg);
int srv_kube_api(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_kube_version(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);
int srv_kube_openapi(struct drv_http_req *r, struct drv_http_resp *o, void *ctx);

/* --- kube_objects.c: the objects, under s->mu --- */
/* "name-with-dashes" from any job name (lowercase, [a-z0-9-], <= 40). */
void kube_dns_name(const char *in, char *out, size_t n);
bool kube_job_from_api(const struct srv_job *j);
const char *kube_job_ns(const struct srv_job *j);
/* The pod name of task rank of j. */
void kube_pod_name(const struct srv_job *j, int32_t rank, char *out, size_t n);
/* The object name of j as a batch/v1 Job. */
void kube_job_name(const struct srv_job *j, char *out, size_t n);
/* How many pods j shows (its tasks). */
int32_t kube_job_npods(const struct srv_job *j);
/* j's uid (stored at creation through this API, else derived from its id). */
void kube_job_uid(const struct srv_job *j, char *out, size_t n);
/* Whether j is a batch/v1 Job on this face. */
bool kube_job_is_batch(const struct srv_job *j);
/* Whether j is an object of workload resource k (a Job, PyTorchJob or
 * Volcano Job: its manifest's apiVersion and kind). */
bool kube_job_is_res(const struct srv_job *j, const struct kube_res *k);
/* j as an object of workload resource k. */
json_t *kube_workload_json(struct drv_server *s, const struct kube_res *k, struct srv_job *j,
			   int64_t rv, bool deleted);
json_t *kube_pod_json(struct drv_server *s, struct srv_job *j, int32_t rank, int64_t rv,
		      bool deleted);
json_t *kube_batchjob_json(struct drv_server *s, struct srv_job *j, int64_t rv, bool deleted);
json_t *kube_node_json(struct drv_server *s, int32_t i, int64_t rv);
json_t *kube_namespace_json(const char *name, int64_t created);
/* The tenants file's priority class i. */
json_t *kube_priorityclass_json(struct drv_server *s, int32_t i);
/* j's events (state changes and, pending, the scheduler's reason) as
 * Events about its pod rank into arr. */
void kube_job_events(struct drv_server *s, struct srv_job *j, int32_t rank, json_t *arr);
/* The last seq of each job's and node's events in the ring: rv of job id
 * (0: none in the ring, then the ring's oldest seq - 1). */
struct kube_rvs {
	int64_t floor;
	uint64_t *ids;
	int64_t *seqs;
	size_t n;
	char **nodes;
	int64_t *nseqs;
	size_t nn;
};
void kube_rvs_build(struct drv_server *s, struct kube_rvs *v);
int64_t kube_rvs_job(const struct kube_rvs *v, uint64_t id);
int64_t kube_rvs_node(const struct kube_rvs *v, const char *name);
void kube_rvs_release(struct kube_rvs *v);

/* --- kube_jobs.c: every job the face shows --- */
struct kube_jobs {
	struct srv_job **v;    /* in memory (borrowed) or from the store (owned[i]) */
	bool *owned;
	bool *deleted;         /* deleted through this API */
	size_t n, cap, cap_o, cap_d;
};
/* Every job (in memory and in the store), under s->mu (released while the
 * store is read). */
void kube_jobs_collect(struct drv_server *s, struct kube_jobs *js);
void kube_jobs_release(struct kube_jobs *js);
/* Whether job id was deleted through this API (reads the store; s->mu
 * released meanwhile). */
bool kube_job_deleted(struct drv_server *s, uint64_t id);
/* The pod q names, among js (kube_jobs_collect), that the caller may
 * see, its container checked against cont (NULL: any): 0 with its job,
 * rank, JSON (*pod, the caller's) and container name (in *pod); -1 when
 * o is answered (400 for another container, 404 for no such pod). The
 * logs and exec subresources (kube_logs.c). s->mu held. */
struct kube_jobs;
int kube_find_pod(struct drv_server *s, const struct kube_req *q, const struct kube_jobs *js,
		  const char *cont, struct drv_http_resp *o, struct srv_job **jp, int32_t *rkp,
		  json_t **pod, const char **cname);
/* Whether j's Job (its parent's, for an element) finished more than its
 * ttlSecondsAfterFinished ago: then it and its pods are gone from the
 * face (a watch sends their DELETED). s->mu held; may release it. */
bool kube_job_ttl_gone(struct drv_server *s, const struct srv_job *j);
/* Marks job id deleted through this API (a row in the store's meta). */
int kube_job_mark_deleted(struct drv_server *s, uint64_t id);

/* --- kube_list.c --- */
int kube_get(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	     struct drv_http_resp *o);
/* Selectors: 0, or a 400 Status in o. */
struct kube_sel;
struct kube_sel *kube_sel_parse(const char *label, const char *field, struct drv_http_resp *o,
				bool *bad);
bool kube_sel_match(const struct kube_sel *sel, const json_t *obj);
void kube_sel_free(struct kube_sel *sel);
/* The objects of q's resource that the caller may see, matching sel, sorted
 * by namespace/name (new array), and the list's resourceVersion. */
json_t *kube_collect(struct drv_server *s, struct kube_req *q, const struct kube_sel *sel,
		     int64_t *rv);
/* The objects of q's kind that job j shows (pods, its Job, its events),
 * matching q and sel (new array). */
json_t *kube_job_objects(struct drv_server *s, const struct kube_req *q,
			 const struct kube_sel *sel, struct srv_job *j, bool deleted, int64_t rv);
/* A Table of objects (an array of objects of q's resource). */
json_t *kube_table(struct drv_server *s, const struct kube_req *q, json_t *objs, bool wide,
		   int64_t rv, bool headers);

/* --- kube_write.c --- */
int kube_create(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o);
int kube_patch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	       struct drv_http_resp *o, bool replace);
int kube_delete(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o);
/* What exec and attach share (kube_exec.c): the final Status st (taken) on
 * channel 3, then the close; a Failure Status; whether query flag name is
 * "true" or "1". */
void kube_ws_finish(struct drv_ws *w, json_t *st);
json_t *kube_ws_failure(const char *reason, int code, const char *msg);
bool kube_query_flag(struct drv_http_req *r, const char *name);

/* pods/exec over WebSocket (kube_exec.c). */
int kube_exec(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	      struct drv_http_resp *o);
/* pods/attach: the task's output as it comes, over WebSocket (kube_attach.c). */
int kube_attach(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o);
/* pods/portforward, SPDY/3.1 in WebSocket or plain (kube_forward.c). */
int kube_portforward(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		     struct drv_http_resp *o);
/* The SPDY/3 header-compression dictionary (*n bytes; static). */
const unsigned char *kube_spdy_dictionary(size_t *n);
int kube_logs(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	      struct drv_http_resp *o);
/* JSON merge patch (RFC 7386) and strategic merge patch of target by patch. */
json_t *kube_merge_patch(const json_t *target, const json_t *patch);
json_t *kube_strategic_patch(const json_t *target, const json_t *patch, const char *path);

/* --- kube_config.c: Secrets and ConfigMaps (under s->mu where said) --- */
/* Copies of the objects of q's kind the caller may see, into arr (s->mu). */
void kube_config_collect(struct drv_server *s, const struct kube_req *q, json_t *arr);
int kube_config_create(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		       struct drv_http_resp *o);
int kube_config_patch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		      struct drv_http_resp *o, bool replace);
int kube_config_delete(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		       struct drv_http_resp *o);
/* kube_pb.c: a v1 Secret or ConfigMap sent as Protocol Buffers
 * (application/vnd.kubernetes.protobuf) as JSON, or NULL with err. */
json_t *kube_pb_object(const void *buf, size_t len, char *err, size_t errsz);
/* kube_write.c's helpers it shares: dryRun=All; a new uid; a JSON or YAML
 * body; fieldValidation (false after a 400 in o; warnings added). */
bool kube_dry_run(struct drv_http_req *r);
void kube_new_uid(char *out, size_t n);
json_t *kube_load_body(const char *body, size_t len, json_error_t *je);
bool kube_check_unknown(struct drv_http_req *r, struct drv_http_resp *o, const char *kind,
			const json_t *obj);

/* --- kube_watch.c --- */
int kube_watch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	       struct drv_http_resp *o);

/* --- kube_openapi.c --- */
/* The document for "" (the root's paths), "api/v1", "apis/batch/v1"..., or NULL. */
json_t *kube_openapi_v3(const char *gv);
/* Field paths of obj (of kind) that Kubernetes does not know into bad (array). */
void kube_schema_unknown(const char *kind, const json_t *obj, json_t *bad);

#endif
