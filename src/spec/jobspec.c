/*
 * jobspec.c: the lifecycle of struct drv_jobspec and struct drv_specset,
 * reading files under the size cap, telling formats apart by content, and
 * handing a buffer to the parser of its format (manifest.c, sbatch.c,
 * canonical.c).
 */
#include "drover/clusterfile.h"
#include "drover/fsutil.h"
#include "drover/spec.h"
#include "spec_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *drv_spec_format_name(enum drv_spec_format f)
{
	switch (f) {
	case DRV_FMT_MANIFEST: return "manifest";
	case DRV_FMT_SBATCH: return "sbatch";
	case DRV_FMT_CANONICAL: return "canonical";
	case DRV_FMT_CLUSTER: return "cluster";
	default: return "unknown";
	}
}

void drv_jobspec_init(struct drv_jobspec *s)
{
	memset(s, 0, sizeof(*s));
	s->k8s.parallelism = -1;
	s->k8s.completions = -1;
	s->k8s.backoff_limit = -1;
	s->k8s.active_deadline_s = -1;
	s->k8s.min_available = -1;
	s->k8s.indexed = -1;
	s->k8s.suspend = -1;
	s->k8s.ttl_after_finished_s = -1;
}

static void free_strv(char **v, int32_t n)
{
	int32_t i;
	for (i = 0; i < n; i++)
		drv_free(v[i]);
	drv_free(v);
}

static void free_labels(struct drv_label *l, int32_t n)
{
	int32_t i;
	for (i = 0; i < n; i++) {
		drv_free(l[i].key);
		drv_free(l[i].value);
	}
	drv_free(l);
}

void drv_spec_run_release(struct drv_task_run *r)
{
	int32_t i;
	drv_free(r->container);
	drv_free(r->gpu_model_name);
	drv_free(r->image);
	free_strv(r->command, r->ncommand);
	free_strv(r->args, r->nargs);
	for (i = 0; i < r->nenv; i++) {
		drv_free(r->env[i].name);
		drv_free(r->env[i].value);
		json_decref(r->env[i].value_from);
	}
	drv_free(r->env);
	json_decref(r->env_from);
	json_decref(r->volumes);
	drv_free(r->working_dir);
	drv_free(r->script);
	drv_free(r->export_mode);
	drv_free(r->restart_policy);
	drv_free(r->image_pull_policy);
	drv_free(r->runtime);
	for (int32_t k = 0; k < r->nmounts; k++) {
		struct drv_mount *m = &r->mounts[k];

		drv_free(m->name);
		drv_free(m->type);
		drv_free(m->medium);
		drv_free(m->host_path);
		drv_free(m->mount_path);
		drv_free(m->sub_path);
	}
	drv_free(r->mounts);
	memset(r, 0, sizeof(*r));
}

void drv_spec_class_release(struct drv_priority_class *c)
{
	drv_free(c->name);
	drv_free(c->preemption_policy);
	drv_free(c->description);
	memset(c, 0, sizeof(*c));
}

void drv_jobspec_release(struct drv_jobspec *s)
{
	int32_t i;
	if (s->run)
		for (i = 0; i < s->job.ngroups; i++)
			drv_spec_run_release(&s->run[i]);
	drv_free(s->run);
	drv_job_release(&s->job);
	drv_free(s->api_version);
	drv_free(s->kind);
	drv_free(s->namespace_);
	drv_free(s->queue);
	drv_free(s->priority_class);
	free_labels(s->labels, s->nlabels);
	free_labels(s->annotations, s->nannotations);
	drv_array_release(&s->array);
	for (i = 0; i < s->ndeps; i++) {
		drv_free(s->deps[i].type);
		drv_free(s->deps[i].job);
	}
	drv_free(s->deps);
	drv_free(s->slurm.qos);
	drv_free(s->slurm.account);
	drv_free(s->slurm.begin);
	drv_free(s->slurm.partition);
	drv_free(s->slurm.output);
	drv_free(s->slurm.error);
	drv_free(s->slurm.input);
	drv_free(s->slurm.open_mode);
	drv_free(s->slurm.submit_dir);
	drv_free(s->slurm.submit_host);
	drv_free(s->slurm.umask);
	for (i = 0; i < s->nclasses; i++)
		drv_spec_class_release(&s->classes[i]);
	drv_free(s->classes);
	if (s->ignored)
		json_decref(s->ignored);
	free_strv(s->warnings, s->nwarnings);
	memset(s, 0, sizeof(*s));
	s->k8s.parallelism = -1;
	s->k8s.completions = -1;
	s->k8s.backoff_limit = -1;
	s->k8s.active_deadline_s = -1;
	s->k8s.min_available = -1;
	s->k8s.indexed = -1;
	s->k8s.suspend = -1;
	s->k8s.ttl_after_finished_s = -1;
}

int32_t drv_jobspec_elements(const struct drv_jobspec *s)
{
	if (s->array.spec && s->array.count > 0)
		return s->array.count;   /* a Slurm array: an element per index */
	if (s->format != DRV_FMT_MANIFEST || !s->api_version || !s->kind ||
	    strcmp(s->api_version, "batch/v1") != 0 || strcmp(s->kind, "Job") != 0)
		return 0;
	if (s->k8s.completions > 0)
		return s->k8s.completions;
	return s->k8s.parallelism > 1 ? s->k8s.parallelism : 1;
}

int32_t drv_jobspec_parallelism(const struct drv_jobspec *s)
{
	int32_t n = drv_jobspec_elements(s), p = s->k8s.parallelism >= 0 ? s->k8s.parallelism : 1;

	if (s->array.spec && s->array.count > 0)   /* --array's %N throttle, else all at once */
		p = s->array.max_parallel > 0 ? s->array.max_parallel : n;

	return p < n ? p : n;
}

int drv_jobspec_add_group(struct drv_jobspec *s, const char *name)
{
	int32_t n = s->job.ngroups;
	if (n >= DRV_SPEC_MAX_GROUPS)
		return DRV_ELIMIT;
	s->job.groups = drv_realloc(s->job.groups, sizeof(*s->job.groups) * (size_t)(n + 1));
	s->run = drv_realloc(s->run, sizeof(*s->run) * (size_t)(n + 1));
	memset(&s->job.groups[n], 0, sizeof(s->job.groups[n]));
	memset(&s->run[n], 0, sizeof(s->run[n]));
	s->job.groups[n].name = drv_strdup(name);
	s->job.groups[n].model = -1;
	s->run[n].termination_grace_s = -1;
	s->run[n].run_as_user = s->run[n].run_as_group = -1;
	s->run[n].run_as_non_root = -1;
	s->job.ngroups = n + 1;
	return n;
}

void drv_jobspec_add_env(struct drv_jobspec *s, int g, const char *name, const char *value)
{
	struct drv_task_run *r = &s->run[g];
	DRV_GROW(r->env, (size_t)r->nenv + 1, r->envcap);
	r->env[r->nenv].name = drv_strdup(name);
	r->env[r->nenv].value = drv_strdup(value);
	r->env[r->nenv].value_from = NULL;
	r->nenv++;
}

void drv_jobspec_add_env_from(struct drv_jobspec *s, int g, const char *name, json_t *value_from)
{
	struct drv_task_run *r = &s->run[g];
	DRV_GROW(r->env, (size_t)r->nenv + 1, r->envcap);
	r->env[r->nenv].name = drv_strdup(name);
	r->env[r->nenv].value = NULL;
	r->env[r->nenv].value_from = value_from;
	r->nenv++;
}

const char *drv_jobspec_env(const struct drv_jobspec *s, int g, const char *name)
{
	int32_t i;
	if (g < 0 || g >= s->job.ngroups)
		return NULL;
	for (i = s->run[g].nenv - 1; i >= 0; i--)
		if (strcmp(s->run[g].env[i].name, name) == 0)
			return s->run[g].env[i].value;
	return NULL;
}

void drv_jobspec_warn(struct drv_jobspec *s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (s->nwarnings >= DRV_SPEC_MAX_ITEMS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s->warnings = drv_realloc(s->warnings, sizeof(char *) * (size_t)(s->nwarnings + 1));
	s->warnings[s->nwarnings++] = drv_strdup(buf);
}

void drv_specset_init(struct drv_specset *set)
{
	memset(set, 0, sizeof(*set));
}

void drv_specset_release(struct drv_specset *set)
{
	int32_t i;
	for (i = 0; i < set->njobs; i++)
		drv_jobspec_release(&set->jobs[i]);
	drv_free(set->jobs);
	for (i = 0; i < set->nclasses; i++)
		drv_spec_class_release(&set->classes[i]);
	drv_free(set->classes);
	memset(set, 0, sizeof(*set));
}

struct drv_jobspec *drv_specset_add(struct drv_specset *set)
{
	struct drv_jobspec *s;
	DRV_GROW(set->jobs, (size_t)set->njobs + 1, set->cap);
	s = &set->jobs[set->njobs++];
	drv_jobspec_init(s);
	return s;
}

/* Start of line i-th content: skips a UTF-8 BOM. */
static size_t skip_bom(const char *b, size_t n)
{
	return n >= 3 && (unsigned char)b[0] == 0xEF && (unsigned char)b[1] == 0xBB &&
	       (unsigned char)b[2] == 0xBF ? 3 : 0;
}

/* Does a line of buf start with key (at column 0)? */
static bool has_line_key(const char *b, size_t n, const char *key)
{
	size_t kl = strlen(key), i = 0;
	while (i < n) {
		if (n - i >= kl && memcmp(b + i, key, kl) == 0)
			return true;
		while (i < n && b[i] != '\n')
			i++;
		i++;
	}
	return false;
}

/* Finds "key" then : then "value-prefix in a JSON text. */
static bool json_has(const char *b, size_t n, const char *key, const char *valpre)
{
	size_t kl = strlen(key), vl = valpre ? strlen(valpre) : 0, i;
	for (i = 0; i + kl + 2 <= n; i++) {
		size_t j;
		if (b[i] != '"' || memcmp(b + i + 1, key, kl) != 0 || b[i + 1 + kl] != '"')
			continue;
		if (!valpre)
			return true;
		j = i + kl + 2;
		while (j < n && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r'))
			j++;
		if (j >= n || b[j] != ':')
			continue;
		j++;
		while (j < n && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r'))
			j++;
		if (j + 1 + vl <= n && b[j] == '"' && memcmp(b + j + 1, valpre, vl) == 0)
			return true;
	}
	return false;
}

bool drv_spec_check_text(const char *buf, size_t len, bool controls, struct drv_diags *d)
{
	const unsigned char *b = (const unsigned char *)buf;
	size_t i = 0;
	int line = 1, col = 1;
	while (i < len) {
		unsigned char ch = b[i];
		size_t n = ch < 0x80 ? 1 : (ch & 0xE0) == 0xC0 ? 2 : (ch & 0xF0) == 0xE0 ? 3
			 : (ch & 0xF8) == 0xF0 ? 4 : 0;
		uint32_t cp = n == 1 ? ch : n == 2 ? ch & 0x1F : n == 3 ? ch & 0x0F : ch & 0x07;
		size_t k;
		bool ok = n > 0 && i + n <= len;
		for (k = 1; ok && k < n; k++) {
			if ((b[i + k] & 0xC0) != 0x80)
				ok = false;
			else
				cp = (cp << 6) | (b[i + k] & 0x3F);
		}
		if (ok && ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
			   cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
			ok = false;
		if (ok && n == 1 && !(controls && cp != 0) && ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7F))
			ok = false;
		if (!ok) {
			drv_diag_err(d, line, col, NULL, "found byte 0x%02x, expected UTF-8 text "
				     "without control characters", ch);
			return false;
		}
		if (ch == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
		i += n;
	}
	return true;
}

enum drv_spec_format drv_spec_sniff(const char *buf, size_t len)
{
	size_t i = skip_bom(buf, len);
	const char *b = buf + i;
	size_t n = len - i, k = 0;

	if (n >= 2 && b[0] == '#' && b[1] == '!')
		return DRV_FMT_SBATCH;
	if (drv_cluster_file_sniff(b, n))
		return DRV_FMT_CLUSTER;
	/* first significant character, skipping blank and comment lines */
	while (k < n) {
		if (b[k] == ' ' || b[k] == '\t' || b[k] == '\r' || b[k] == '\n') {
			k++;
		} else if (b[k] == '#') {
			while (k < n && b[k] != '\n')
				k++;
		} else {
			break;
		}
	}
	if (k >= n)
		return DRV_FMT_UNKNOWN;
	if (b[k] == '{' || b[k] == '[') {
		if (json_has(b, n, "apiVersion", "drover/"))
			return DRV_FMT_CANONICAL;
		if (json_has(b, n, "kind", NULL) || json_has(b, n, "apiVersion", NULL))
			return DRV_FMT_MANIFEST;
		return DRV_FMT_UNKNOWN;
	}
	if (has_line_key(b, n, "apiVersion:") || has_line_key(b, n, "kind:") ||
	    has_line_key(b, n, "- apiVersion:") || has_line_key(b, n, "  apiVersion:"))
		return DRV_FMT_MANIFEST;
	return DRV_FMT_UNKNOWN;
}

int drv_spec_parse_all(const char *buf, size_t len, const char *name,
		       const struct drv_spec_opts *opts, struct drv_specset *set,
		       struct drv_diags *d)
{
	enum drv_spec_format f;
	char *copy;
	int rc;

	if (len > DRV_SPEC_MAX_BYTES) {
		drv_diag_err(d, 0, 0, NULL, "input is %zu bytes, over the limit of %d bytes",
			     len, DRV_SPEC_MAX_BYTES);
		return DRV_ELIMIT;
	}
	copy = drv_malloc(len + 1);
	memcpy(copy, buf, len);
	copy[len] = '\0';
	f = drv_spec_sniff(copy, len);
	switch (f) {
	case DRV_FMT_SBATCH:
		rc = drv_spec_parse_sbatch(copy, len, name, opts, set, d);
		break;
	case DRV_FMT_CANONICAL:
		rc = drv_spec_parse_canonical(copy, len, set, d);
		break;
	case DRV_FMT_MANIFEST:
		rc = drv_spec_parse_manifest(copy, len, name, set, d);
		break;
	case DRV_FMT_CLUSTER:
		drv_diag_err(d, 0, 0, NULL, "found a cluster file, expected a job (a Kubernetes "
			     "manifest, a Slurm batch script or a drover JSON job)");
		rc = DRV_EPARSE;
		break;
	default:
		if (strspn(copy, " \t\r\n") == len)
			drv_diag_err(d, 1, 1, NULL, "found an empty file, expected a job or a cluster file");
		else if (has_line_key(copy, len, "#SBATCH"))
			drv_diag_err(d, 1, 1, NULL, "found #SBATCH lines but no #! first line, expected "
				     "a batch script starting with an interpreter such as #!/bin/bash "
				     "(sbatch requires it too)");
		else
			drv_diag_err(d, 1, 1, NULL, "found neither a job nor a cluster file, expected a "
				     "Kubernetes manifest (apiVersion, kind), a Slurm batch script (#!), "
				     "a drover JSON job (\"apiVersion\": \"drover/v1\") or a cluster "
				     "file (kind: Cluster)");
		rc = DRV_EPARSE;
		break;
	}
	drv_free(copy);
	if (rc == 0 && f != DRV_FMT_CANONICAL) {
		/* what the core will be handed must be well-formed */
		int32_t i;
		for (i = 0; i < set->njobs; i++) {
			char why[256];
			if (drv_job_check(&set->jobs[i].job, why, sizeof(why)) != 0)
				drv_diag_err(d, 0, 0, set->jobs[i].job.name, "%s", why);
		}
	}
	for (int32_t i = 0; rc == 0 && f != DRV_FMT_CANONICAL && i < set->njobs; i++) {
		size_t n = set->jobs[i].job.name ? strlen(set->jobs[i].job.name) : 0;

		/* every row of a listing carries the name: 400 jobs of 200 KB
		 * names made one GET /v1/queue 80 MB (the server checks
		 * canonical jobs itself, jobs_api.c) */
		if (n > DRV_SPEC_MAX_NAME)
			drv_diag_err(d, 0, 0, "name", "found a job name of %zu bytes, expected at "
				     "most %d", n, DRV_SPEC_MAX_NAME);
	}
	if (rc == 0 && d->nerrors)
		rc = DRV_EPARSE;
	if (rc)
		drv_specset_release(set);
	return rc;
}

int drv_spec_parse_buffer_opts(const char *buf, size_t len, const char *name,
			       const struct drv_spec_opts *opts,
			       struct drv_jobspec *spec, struct drv_diags *d)
{
	struct drv_specset set;
	int rc;

	drv_specset_init(&set);
	rc = drv_spec_parse_all(buf, len, name, opts, &set, d);
	if (rc)
		goto out;
	if (set.njobs != 1) {
		drv_diag_err(d, 0, 0, NULL, "found %d jobs, expected exactly one%s", set.njobs,
			     set.njobs ? " (submit each job from its own file)" : "");
		rc = DRV_EPARSE;
		goto out;
	}
	drv_jobspec_release(spec);
	*spec = set.jobs[0];
	set.njobs = 0;
out:
	drv_specset_release(&set);
	return rc;
}

int drv_spec_parse_buffer(const char *buf, size_t len, const char *name,
			  struct drv_jobspec *spec, struct drv_diags *d)
{
	return drv_spec_parse_buffer_opts(buf, len, name, NULL, spec, d);
}

int drv_spec_load_file_opts(const char *path, const struct drv_spec_opts *opts,
			    struct drv_jobspec *spec, struct drv_diags *d)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = drv_file_read(path, DRV_SPEC_MAX_BYTES, &buf, &len);
	if (rc == DRV_ELIMIT) {
		drv_diag_err(d, 0, 0, NULL, "file is over the limit of %d bytes", DRV_SPEC_MAX_BYTES);
		return rc;
	}
	if (rc) {
		drv_diag_err(d, 0, 0, NULL, "cannot read: %s", strerror(errno));
		return rc;
	}
	rc = drv_spec_parse_buffer_opts(buf, len, path, opts, spec, d);
	drv_free(buf);
	return rc;
}

int drv_spec_load_file(const char *path, struct drv_jobspec *spec, struct drv_diags *d)
{
	return drv_spec_load_file_opts(path, NULL, spec, d);
}

const char *drv_pull_policy_default(const char *image)
{
	const char *slash, *colon;

	if (!image || strchr(image, '@'))
		return "IfNotPresent";
	slash = strrchr(image, '/');
	colon = strrchr(slash ? slash : image, ':');
	if (!colon || !strcmp(colon, ":latest"))
		return "Always";
	return "IfNotPresent";
}
