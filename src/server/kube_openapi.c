/*
 * kube_openapi.c: drover's model of the Kubernetes kinds it serves, as one
 * table of fields, and what is made of it: the OpenAPI v3 documents
 * (/openapi/v3, /openapi/v3/api/v1, /openapi/v3/apis/batch/v1) that
 * kubectl reads for explain, apply and validation, and the unknown-field
 * check of fieldValidation=Strict.
 *
 * A field's type is "string", "integer", "boolean", "quantity" (an int or
 * a string), "object" (free form: Kubernetes knows it, drover keeps it
 * without looking inside), "map" (string to string), a type name of this
 * table, or "[T]" (a list of T). The descriptions say what drover does
 * with the field; fields drover keeps but does not act on say so.
 */
#include "kube_int.h"

#include <stdio.h>
#include <string.h>

struct field {
	const char *type_name;   /* the type this field belongs to */
	const char *name;
	const char *type;
	const char *desc;
};

static const struct field fields[] = {
	/* ObjectMeta */
	{ "ObjectMeta", "name", "string", "Name of the object, unique per namespace among live jobs. A job made through this API keeps it; other drover jobs show as <name>-<id>." },
	{ "ObjectMeta", "generateName", "string", "A prefix: the server adds five random characters when name is empty." },
	{ "ObjectMeta", "namespace", "string", "Namespace of the object; \"default\" when none is given." },
	{ "ObjectMeta", "uid", "string", "Set by drover at creation (annotation drover.dev/uid) and never changed." },
	{ "ObjectMeta", "resourceVersion", "string", "The sequence number of the object's last event in drover's event log." },
	{ "ObjectMeta", "generation", "integer", "Always 1: drover keeps a job's spec as submitted." },
	{ "ObjectMeta", "creationTimestamp", "string", "When the job was submitted (RFC 3339)." },
	{ "ObjectMeta", "deletionTimestamp", "string", "Set once the object is deleted while its tasks still stop." },
	{ "ObjectMeta", "deletionGracePeriodSeconds", "integer", "Kept, not acted on." },
	{ "ObjectMeta", "labels", "map", "Labels; may change in any state (kubectl label, apply)." },
	{ "ObjectMeta", "annotations", "map", "Annotations; may change in any state." },
	{ "ObjectMeta", "ownerReferences", "[object]", "Kept, not acted on." },
	{ "ObjectMeta", "finalizers", "[string]", "Kept, not acted on." },
	{ "ObjectMeta", "managedFields", "[object]", "Not recorded by drover (no server-side apply)." },
	/* Pod */
	{ "Pod", "apiVersion", "string", "v1" },
	{ "Pod", "kind", "string", "Pod" },
	{ "Pod", "metadata", "ObjectMeta", "Standard object metadata." },
	{ "Pod", "spec", "PodSpec", "What the pod runs: drover runs each container group as one task of a job." },
	{ "Pod", "status", "object", "Set by drover from the job's state (docs/kubernetes.md, state mapping)." },
	/* PodSpec */
	{ "PodSpec", "containers", "[Container]", "The containers of the pod; drover runs them as the job's task (image with a container runtime, else the command on the host). Required." },
	{ "PodSpec", "initContainers", "[Container]", "Kept, not acted on." },
	{ "PodSpec", "ephemeralContainers", "[object]", "Kept, not acted on." },
	{ "PodSpec", "restartPolicy", "string", "Never, OnFailure or Always; drover runs a task once (Never) unless a Job's backoffLimit retries it." },
	{ "PodSpec", "terminationGracePeriodSeconds", "integer", "Seconds between SIGTERM and SIGKILL when the pod is stopped (default 30); kubectl delete --grace-period sets it for that delete." },
	{ "PodSpec", "activeDeadlineSeconds", "integer", "The job's time limit: its tasks are stopped after this many seconds running (Slurm's --time)." },
	{ "PodSpec", "nodeSelector", "map", "Node labels the task's node must have." },
	{ "PodSpec", "nodeName", "string", "Set by drover's scheduler to the node of the task." },
	{ "PodSpec", "schedulerName", "string", "drover schedules every pod; other names are kept, not acted on." },
	{ "PodSpec", "priorityClassName", "string", "A PriorityClass (tenants file or the same stream): the job's priority and preemption." },
	{ "PodSpec", "priority", "integer", "The job's priority (from priorityClassName)." },
	{ "PodSpec", "preemptionPolicy", "string", "Kept, not acted on." },
	{ "PodSpec", "affinity", "object", "Kept, not acted on." },
	{ "PodSpec", "tolerations", "[object]", "Kept, not acted on." },
	{ "PodSpec", "volumes", "[object]", "secret and configMap volumes the main container mounts are acted on (see volumeMounts); other volumes are kept, not acted on." },
	{ "PodSpec", "serviceAccountName", "string", "Kept, not acted on." },
	{ "PodSpec", "serviceAccount", "string", "Kept, not acted on." },
	{ "PodSpec", "automountServiceAccountToken", "boolean", "Kept, not acted on." },
	{ "PodSpec", "securityContext", "object", "runAsUser, runAsGroup and runAsNonRoot act (the container's win); the rest is kept." },
	{ "PodSpec", "imagePullSecrets", "[object]", "Kept, not acted on." },
	{ "PodSpec", "hostNetwork", "boolean", "Kept; tasks use the host network." },
	{ "PodSpec", "hostPID", "boolean", "Kept, not acted on." },
	{ "PodSpec", "hostIPC", "boolean", "The host's IPC namespace for the container (runtime podman)." },
	{ "PodSpec", "shareProcessNamespace", "boolean", "Kept, not acted on." },
	{ "PodSpec", "hostname", "string", "Kept, not acted on." },
	{ "PodSpec", "subdomain", "string", "Kept, not acted on." },
	{ "PodSpec", "hostAliases", "[object]", "Kept, not acted on." },
	{ "PodSpec", "dnsPolicy", "string", "Kept, not acted on." },
	{ "PodSpec", "dnsConfig", "object", "Kept, not acted on." },
	{ "PodSpec", "enableServiceLinks", "boolean", "Kept, not acted on." },
	{ "PodSpec", "runtimeClassName", "string", "Kept, not acted on." },
	{ "PodSpec", "overhead", "map", "Kept, not acted on." },
	{ "PodSpec", "topologySpreadConstraints", "[object]", "Kept, not acted on." },
	{ "PodSpec", "readinessGates", "[object]", "Kept, not acted on." },
	{ "PodSpec", "schedulingGates", "[object]", "Kept, not acted on." },
	{ "PodSpec", "resourceClaims", "[object]", "Kept, not acted on." },
	{ "PodSpec", "resources", "ResourceRequirements", "Kept, not acted on." },
	{ "PodSpec", "os", "object", "Kept, not acted on." },
	{ "PodSpec", "setHostnameAsFQDN", "boolean", "Kept, not acted on." },
	{ "PodSpec", "hostUsers", "boolean", "Kept, not acted on." },
	/* Container */
	{ "Container", "name", "string", "Name of the container, unique in the pod. Required." },
	{ "Container", "image", "string", "Container image; drover runs it with the agent's container runtime." },
	{ "Container", "command", "[string]", "The entrypoint (argv[0..])." },
	{ "Container", "args", "[string]", "Arguments to the entrypoint." },
	{ "Container", "workingDir", "string", "The task's working directory." },
	{ "Container", "env", "[EnvVar]", "Environment variables of the task." },
	{ "Container", "envFrom", "[object]", "Every key of a Secret (secretRef) or ConfigMap (configMapRef) of the namespace as a variable, with prefix; resolved when the task is launched, before env." },
	{ "Container", "resources", "ResourceRequirements", "What one task needs: nvidia.com/gpu (whole GPUs), cpu, memory." },
	{ "Container", "ports", "[ContainerPort]", "Kept, not acted on (tasks use the host network)." },
	{ "Container", "volumeMounts", "[object]", "hostPath and emptyDir volumes are mounted into the container (runtime podman); secret and configMap volumes become files under the task's directory (0600 for a Secret), mounted at mountPath by podman, named by $DROVER_VOLUME_<NAME> on the host runtime. Other kinds are kept, not acted on." },
	{ "Container", "volumeDevices", "[object]", "Kept, not acted on." },
	{ "Container", "livenessProbe", "object", "Kept, not acted on." },
	{ "Container", "readinessProbe", "object", "Kept, not acted on." },
	{ "Container", "startupProbe", "object", "Kept, not acted on." },
	{ "Container", "lifecycle", "object", "Kept, not acted on." },
	{ "Container", "terminationMessagePath", "string", "Kept, not acted on." },
	{ "Container", "terminationMessagePolicy", "string", "Kept, not acted on." },
	{ "Container", "imagePullPolicy", "string", "Always, IfNotPresent or Never; default by tag, as Kubernetes." },
	{ "Container", "securityContext", "object", "runAsUser, runAsGroup and runAsNonRoot act; the rest is kept." },
	{ "Container", "stdin", "boolean", "Kept, not acted on." },
	{ "Container", "stdinOnce", "boolean", "Kept, not acted on." },
	{ "Container", "tty", "boolean", "Kept, not acted on." },
	{ "Container", "resizePolicy", "[object]", "Kept, not acted on." },
	{ "Container", "restartPolicy", "string", "Kept, not acted on." },
	/* EnvVar */
	{ "EnvVar", "name", "string", "Name of the variable. Required." },
	{ "EnvVar", "value", "string", "Its value." },
	{ "EnvVar", "valueFrom", "object", "secretKeyRef or configMapKeyRef {name, key, optional}: the value of that key of a Secret or ConfigMap of the pod's namespace, made by the same user, resolved when the task is launched (the pod waits while one is missing). fieldRef and resourceFieldRef are kept, not acted on." },
	/* ResourceRequirements */
	{ "ResourceRequirements", "limits", "map", "nvidia.com/gpu (whole GPUs per task), cpu, memory: what the scheduler places." },
	{ "ResourceRequirements", "requests", "map", "As limits; the larger of the two is placed." },
	{ "ResourceRequirements", "claims", "[object]", "Kept, not acted on." },
	/* ContainerPort */
	{ "ContainerPort", "containerPort", "integer", "Port number. Required." },
	{ "ContainerPort", "name", "string", "Name of the port." },
	{ "ContainerPort", "protocol", "string", "TCP, UDP or SCTP." },
	{ "ContainerPort", "hostPort", "integer", "Kept, not acted on." },
	{ "ContainerPort", "hostIP", "string", "Kept, not acted on." },
	/* v1 Secret and ConfigMap */
	{ "Secret", "apiVersion", "string", "v1" },
	{ "Secret", "kind", "string", "Secret" },
	{ "Secret", "metadata", "ObjectMeta", "Standard object metadata; the name is unique per namespace." },
	{ "Secret", "data", "map", "Keys to base64-encoded values. Kept in the controller's store (mode 0600), never logged, shown as <secret> by drover describe; resolved into a pod's env and volumes when its task is launched." },
	{ "Secret", "stringData", "map", "Write only: keys to plain values, merged into data (and winning over it)." },
	{ "Secret", "type", "string", "Kept (default Opaque); drover treats every type alike." },
	{ "Secret", "immutable", "boolean", "When true, data cannot change (delete and create again)." },
	{ "ConfigMap", "apiVersion", "string", "v1" },
	{ "ConfigMap", "kind", "string", "ConfigMap" },
	{ "ConfigMap", "metadata", "ObjectMeta", "Standard object metadata; the name is unique per namespace." },
	{ "ConfigMap", "data", "map", "Keys to values, resolved into a pod's env and volumes when its task is launched." },
	{ "ConfigMap", "binaryData", "map", "Keys to base64-encoded bytes (volumes; env takes them decoded)." },
	{ "ConfigMap", "immutable", "boolean", "When true, data and binaryData cannot change." },
	/* batch/v1 Job */
	{ "Job", "apiVersion", "string", "batch/v1" },
	{ "Job", "kind", "string", "Job" },
	{ "Job", "metadata", "ObjectMeta", "Standard object metadata." },
	{ "Job", "spec", "JobSpec", "What the Job runs: drover runs its pods as the tasks of one job." },
	{ "Job", "status", "object", "Set by drover: active, succeeded, failed, conditions Complete/Failed." },
	{ "JobSpec", "template", "PodTemplateSpec", "The pod each task runs. Required." },
	{ "JobSpec", "parallelism", "integer", "Tasks that run at once." },
	{ "JobSpec", "completions", "integer", "Tasks that must succeed." },
	{ "JobSpec", "completionMode", "string", "NonIndexed or Indexed." },
	{ "JobSpec", "backoffLimit", "integer", "Failed attempts allowed before the Job fails." },
	{ "JobSpec", "backoffLimitPerIndex", "integer", "Kept, not acted on." },
	{ "JobSpec", "maxFailedIndexes", "integer", "Kept, not acted on." },
	{ "JobSpec", "activeDeadlineSeconds", "integer", "The job's time limit." },
	{ "JobSpec", "ttlSecondsAfterFinished", "integer", "Seconds after the Job finished when it and its pods are deleted from this API (drover's own routes keep them for job_retention_s)." },
	{ "JobSpec", "suspend", "boolean", "Kept, not acted on by this version." },
	{ "JobSpec", "selector", "object", "Kept, not acted on." },
	{ "JobSpec", "manualSelector", "boolean", "Kept, not acted on." },
	{ "JobSpec", "podFailurePolicy", "object", "Kept, not acted on." },
	{ "JobSpec", "podReplacementPolicy", "string", "Kept, not acted on." },
	{ "JobSpec", "successPolicy", "object", "Kept, not acted on." },
	{ "JobSpec", "managedBy", "string", "Kept, not acted on." },
	{ "PodTemplateSpec", "metadata", "ObjectMeta", "Metadata of the pods." },
	{ "PodTemplateSpec", "spec", "PodSpec", "What each pod runs." },
	/* read-only kinds */
	{ "Node", "apiVersion", "string", "v1" },
	{ "Node", "kind", "string", "Node" },
	{ "Node", "metadata", "ObjectMeta", "Labels include nvidia.com/gpu.product, nvidia.com/gpu.count and drover.dev/pool." },
	{ "Node", "spec", "object", "unschedulable when the node is drained." },
	{ "Node", "status", "object", "capacity and allocatable (nvidia.com/gpu, cpu, memory), the Ready condition from the agent's heartbeats." },
	{ "Namespace", "apiVersion", "string", "v1" },
	{ "Namespace", "kind", "string", "Namespace" },
	{ "Namespace", "metadata", "ObjectMeta", "The namespaces drover's jobs use, and default." },
	{ "Namespace", "spec", "object", "Finalizers." },
	{ "Namespace", "status", "object", "Always Active." },
	{ "PyTorchJob", "apiVersion", "string", "kubeflow.org/v1" },
	{ "PyTorchJob", "kind", "string", "PyTorchJob" },
	{ "PyTorchJob", "metadata", "ObjectMeta", "Standard object metadata." },
	{ "PyTorchJob", "spec", "object", "pytorchReplicaSpecs (Master, Worker): each replica type one task group of the job, all started together (a gang); drover sets MASTER_ADDR, WORLD_SIZE, RANK. Read as docs/job-format.md says." },
	{ "PyTorchJob", "status", "object", "Set by drover: conditions Created, Running, Succeeded or Failed; replicaStatuses." },
	{ "VolcanoJob", "apiVersion", "string", "batch.volcano.sh/v1alpha1" },
	{ "VolcanoJob", "kind", "string", "Job" },
	{ "VolcanoJob", "metadata", "ObjectMeta", "Standard object metadata." },
	{ "VolcanoJob", "spec", "object", "tasks (each a task group), minAvailable (the gang's minimum), queue, priorityClassName. Read as docs/job-format.md says." },
	{ "VolcanoJob", "status", "object", "Set by drover: state.phase Pending, Running, Completed, Failed or Aborted; running, succeeded, failed." },
	{ "PriorityClass", "apiVersion", "string", "scheduling.k8s.io/v1" },
	{ "PriorityClass", "kind", "string", "PriorityClass" },
	{ "PriorityClass", "metadata", "ObjectMeta", "Its name: what priorityClassName names." },
	{ "PriorityClass", "value", "integer", "The priority of the jobs of this class." },
	{ "PriorityClass", "globalDefault", "boolean", "Always false: the tenants file gives each tenant its default class." },
	{ "PriorityClass", "preemptionPolicy", "string", "PreemptLowerPriority, or Never: waits, never preempts." },
	{ "PriorityClass", "description", "string", "Where it comes from." },
	{ "Event", "apiVersion", "string", "v1" },
	{ "Event", "kind", "string", "Event" },
	{ "Event", "metadata", "ObjectMeta", "Standard object metadata." },
	{ "Event", "involvedObject", "object", "The pod the event is about (kind, name, namespace, uid)." },
	{ "Event", "reason", "string", "Scheduled, Started, Completed, Failed, Killing, FailedScheduling..." },
	{ "Event", "message", "string", "drover's reason text." },
	{ "Event", "type", "string", "Normal or Warning." },
	{ "Event", "source", "object", "drover-scheduler." },
	{ "Event", "count", "integer", "1." },
	{ "Event", "firstTimestamp", "string", "When." },
	{ "Event", "lastTimestamp", "string", "When." },
	{ "Event", "eventTime", "string", "null." },
	{ "Event", "reportingComponent", "string", "drover." },
	{ "Event", "reportingInstance", "string", "drover." },
	{ "Event", "action", "string", "Kept." },
	{ "Event", "related", "object", "Kept." },
	{ "Event", "series", "object", "Kept." },
};

struct kind_doc {
	const char *type_name;   /* of the table */
	const char *schema;      /* OpenAPI component name */
	const char *desc;
};

static const struct kind_doc types[] = {
	{ "ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "Standard object metadata." },
	{ "Pod", "io.k8s.api.core.v1.Pod", "A Pod is one task of a drover job: drover runs its containers on a node with the GPUs its resources ask for." },
	{ "PodSpec", "io.k8s.api.core.v1.PodSpec", "PodSpec is what one task of a drover job runs and needs." },
	{ "Container", "io.k8s.api.core.v1.Container", "A container: the program of a task, with its image and resources." },
	{ "EnvVar", "io.k8s.api.core.v1.EnvVar", "An environment variable of a task." },
	{ "ResourceRequirements", "io.k8s.api.core.v1.ResourceRequirements", "What one task needs." },
	{ "ContainerPort", "io.k8s.api.core.v1.ContainerPort", "A network port of a container." },
	{ "Secret", "io.k8s.api.core.v1.Secret", "A Secret holds tokens and keys that pods take as env or files; drover keeps it in its store and never shows its values." },
	{ "ConfigMap", "io.k8s.api.core.v1.ConfigMap", "A ConfigMap holds settings that pods take as env or files." },
	{ "Job", "io.k8s.api.batch.v1.Job", "A Job runs pods to completion: in drover, one job whose tasks are its pods." },
	{ "JobSpec", "io.k8s.api.batch.v1.JobSpec", "What a Job runs." },
	{ "PodTemplateSpec", "io.k8s.api.core.v1.PodTemplateSpec", "The pods a Job makes." },
	{ "Node", "io.k8s.api.core.v1.Node", "A Node is a machine with a drover agent: its GPUs, CPUs and memory." },
	{ "Namespace", "io.k8s.api.core.v1.Namespace", "A namespace drover's jobs use." },
	{ "Event", "io.k8s.api.core.v1.Event", "A change of a job's state, or the scheduler's reason it waits." },
	{ "PyTorchJob", "org.kubeflow.v1.PyTorchJob", "A Kubeflow PyTorchJob: one drover job whose replica types are its task groups." },
	{ "VolcanoJob", "sh.volcano.batch.v1alpha1.Job", "A Volcano Job: one drover job whose tasks are its task groups, started as a gang." },
	{ "PriorityClass", "io.k8s.api.scheduling.v1.PriorityClass", "A priority class of the server's tenants file (read only here)." },
};

static const struct kind_doc *type_doc(const char *t)
{
	for (size_t i = 0; i < DRV_ARRAY_SIZE(types); i++)
		if (strcmp(types[i].type_name, t) == 0)
			return &types[i];
	return NULL;
}

static json_t *ref(const char *t)
{
	char r[160];

	snprintf(r, sizeof(r), "#/components/schemas/%s", type_doc(t)->schema);
	return json_pack("{s:[{s:s}]}", "allOf", "$ref", r);
}

static json_t *type_schema(const char *type)
{
	if (type[0] == '[') {
		char inner[64];

		snprintf(inner, sizeof(inner), "%.*s", (int)strlen(type) - 2, type + 1);
		return json_pack("{s:s,s:o}", "type", "array", "items", type_schema(inner));
	}
	if (strcmp(type, "string") == 0 || strcmp(type, "integer") == 0 ||
	    strcmp(type, "boolean") == 0)
		return json_pack("{s:s}", "type", type);
	if (strcmp(type, "map") == 0)
		return json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties", "type",
				 "string");
	if (strcmp(type, "object") == 0)
		return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields",
				 true);
	return ref(type);
}

static json_t *schema_of(const char *tn)
{
	const struct kind_doc *d = type_doc(tn);
	json_t *props = json_object(), *s;

	for (size_t i = 0; i < DRV_ARRAY_SIZE(fields); i++) {
		json_t *p;

		if (strcmp(fields[i].type_name, tn) != 0)
			continue;
		p = type_schema(fields[i].type);
		json_object_set_new(p, "description", json_string(fields[i].desc));
		json_object_set_new(props, fields[i].name, p);
	}
	s = json_pack("{s:s,s:s,s:o}", "description", d->desc, "type", "object", "properties", props);
	if (strcmp(tn, "Container") == 0 || strcmp(tn, "EnvVar") == 0)
		json_object_set_new(s, "required", json_pack("[s]", "name"));
	if (strcmp(tn, "PodSpec") == 0)
		json_object_set_new(s, "required", json_pack("[s]", "containers"));
	return s;
}

static json_t *gvk(const char *g, const char *v, const char *kind)
{
	return json_pack("{s:s,s:s,s:s}", "group", g, "version", v, "kind", kind);
}

static json_t *param(const char *name, const char *in, const char *desc)
{
	return json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", name, "in", in, "description", desc,
			 "schema", "type", "string");
}

static json_t *op(const struct kube_res *k, const char *action, bool body, bool patch)
{
	char id[96];
	json_t *o, *params = json_array();

	snprintf(id, sizeof(id), "%s%s", action, k->type);
	o = json_pack("{s:s,s:s,s:o,s:s,s:{s:{s:s}}}", "operationId", id, "description", action,
		      "x-kubernetes-group-version-kind", gvk(k->group, k->version, k->kind),
		      "x-kubernetes-action", action, "responses", "200", "description", "OK");
	json_array_append_new(params, param("dryRun", "query", "All: validate only, change nothing."));
	if (body) {
		json_t *content = json_object();
		/* strategic merge is served, but not announced here: kubectl then
		 * builds its patches from its own Pod and Job types, with their
		 * merge keys, which this schema does not carry */
		const char *types_[] = { patch ? "application/merge-patch+json" : "application/json",
					 NULL };
		char r[160];

		snprintf(r, sizeof(r), "#/components/schemas/%s", type_doc(k->type)->schema);
		json_array_append_new(params, param("fieldValidation", "query",
						    "Strict: refuse fields Kubernetes does not know (400); "
						    "Warn (default): a Warning header each; Ignore."));
		for (int i = 0; i < 2; i++)
			if (types_[i])
				json_object_set_new(content, types_[i],
						    json_pack("{s:{s:s}}", "schema", "$ref", r));
		json_object_set_new(o, "requestBody", json_pack("{s:o,s:b}", "content", content,
								"required", true));
	}
	json_object_set_new(o, "parameters", params);
	return o;
}

static void add_paths(json_t *paths, const struct kube_res *k)
{
	char coll[200], item[220];
	const char *pre = *k->group ? "/apis/" : "/api";

	if (k->namespaced)
		snprintf(coll, sizeof(coll), "%s%s/%s/namespaces/{namespace}/%s", pre, k->group,
			 k->version, k->plural);
	else
		snprintf(coll, sizeof(coll), "%s%s/%s/%s", pre, k->group, k->version, k->plural);
	snprintf(item, sizeof(item), "%s/{name}", coll);
	{
		json_t *c = json_object(), *i = json_object();

		json_object_set_new(c, "get", op(k, "list", false, false));
		/* create and patch are in every kind's paths, served or not (405):
		 * kubectl's apply asks the patch path of each object in a stream
		 * whether fieldValidation is served, and fails the whole file when
		 * a kind has none */
		json_object_set_new(c, "post", op(k, "post", true, false));
		json_object_set_new(i, "get", op(k, "get", false, false));
		json_object_set_new(i, "patch", op(k, "patch", true, true));
		if (strstr(k->verbs, "update"))
			json_object_set_new(i, "put", op(k, "put", true, false));
		if (strstr(k->verbs, "delete"))
			json_object_set_new(i, "delete", op(k, "delete", false, false));
		json_object_set_new(paths, coll, c);
		json_object_set_new(paths, item, i);
	}
}

/* "api/v1" or "apis/GROUP/VERSION" of k. */
static void gv_path(const struct kube_res *k, char *out, size_t n)
{
	if (*k->group)
		snprintf(out, n, "apis/%s/%s", k->group, k->version);
	else
		snprintf(out, n, "api/%s", k->version);
}

json_t *kube_openapi_v3(const char *gv)
{
	json_t *paths = json_object(), *schemas = json_object();
	bool any = false;

	if (!*gv) {
		json_t *root = json_object();

		for (const struct kube_res *k = kube_resources; k->plural; k++) {
			char p[128], url[200];

			if (!*k->type)
				continue;
			gv_path(k, p, sizeof(p));
			snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", p, DRV_VERSION);
			json_object_set_new(root, p, json_pack("{s:s}", "serverRelativeURL", url));
		}
		json_decref(paths);
		json_decref(schemas);
		return json_pack("{s:o}", "paths", root);
	}
	for (const struct kube_res *k = kube_resources; k->plural; k++) {
		char p[128];

		gv_path(k, p, sizeof(p));
		if (strcmp(p, gv) != 0 || !*k->type)
			continue;
		add_paths(paths, k);
		any = true;
	}
	if (!any) {
		json_decref(paths);
		json_decref(schemas);
		return NULL;
	}
	for (size_t i = 0; i < DRV_ARRAY_SIZE(types); i++) {
		json_t *sc = schema_of(types[i].type_name);

		for (const struct kube_res *k = kube_resources; k->plural; k++) {
			char p[128];

			gv_path(k, p, sizeof(p));
			if (strcmp(k->type, types[i].type_name) == 0 && strcmp(p, gv) == 0)
				json_object_set_new(sc, "x-kubernetes-group-version-kind",
						    json_pack("[o]", gvk(k->group, k->version, k->kind)));
		}
		json_object_set_new(schemas, types[i].schema, sc);
	}
	return json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:o}}", "openapi", "3.0.0", "info", "title",
			 "drover (Kubernetes-compatible API)", "version", KUBE_GIT_VERSION, "paths",
			 paths, "components", "schemas", schemas);
}

/* --- strict field validation --------------------------------------------------- */

static const struct field *find_field(const char *tn, const char *name)
{
	for (size_t i = 0; i < DRV_ARRAY_SIZE(fields); i++)
		if (strcmp(fields[i].type_name, tn) == 0 && strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

static void walk(const char *tn, const json_t *obj, const char *path, json_t *bad);

static void walk_value(const char *type, const json_t *v, const char *path, json_t *bad)
{
	if (type[0] == '[') {
		char inner[64];
		size_t i;
		json_t *e;

		snprintf(inner, sizeof(inner), "%.*s", (int)strlen(type) - 2, type + 1);
		json_array_foreach(v, i, e) {
			char p[512];

			snprintf(p, sizeof(p), "%s[%zu]", path, i);
			walk_value(inner, e, p, bad);
		}
		return;
	}
	if (type_doc(type) && json_is_object(v))
		walk(type, v, path, bad);
}

static void walk(const char *tn, const json_t *obj, const char *path, json_t *bad)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		const struct field *f = find_field(tn, k);
		char p[512];

		snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", k);
		if (!f) {
			json_array_append_new(bad, json_string(p));
			continue;
		}
		walk_value(f->type, v, p, bad);
	}
}

void kube_schema_unknown(const char *kind, const json_t *obj, json_t *bad)
{
	if (type_doc(kind))
		walk(kind, obj, "", bad);
}
