/*
 * cdi.c: the Container Device Interface specs a node has (what
 * nvidia-container-toolkit's `nvidia-ctk cdi generate` writes to
 * /etc/cdi/nvidia.yaml), read to name a container's GPUs as podman's
 * --device wants them: KIND=NAME, NAME being the device's name in the
 * spec (nvidia-ctk names each GPU by its index, its UUID, and "all").
 *
 * A spec is YAML or JSON (JSON is YAML): "kind" and "devices[].name" are
 * what is read; the container edits are podman's business. A GPU of the
 * placement is named by its UUID when the spec has that name, else by its
 * index; a GPU the spec does not name is an error that says which, so a
 * task never runs with fewer GPUs, or others, than it was placed on.
 */
#include "drover/agent.h"
#include "drover/common.h"
#include "drover/diag.h"
#include "drover/fsutil.h"
#include "drover/spec.h"

#include <dirent.h>
#include <errno.h>
#include <libfyaml.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CDI_FILE_MAX (4 << 20)

void drv_cdi_release(struct drv_cdi *c)
{
	for (size_t i = 0; i < c->n; i++)
		drv_free(c->names[i]);
	drv_free(c->names);
	drv_free(c->file);
	memset(c, 0, sizeof(*c));
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

/* The spec in path as JSON (new reference); NULL and err when it cannot
 * be read or parsed. */
static json_t *spec_json(const char *path, char *err, size_t errsz)
{
	struct fy_document *doc = NULL;
	struct drv_diags d;
	char *buf = NULL;
	size_t len = 0;
	json_t *j = NULL;

	if (drv_file_read(path, CDI_FILE_MAX, &buf, &len) < 0) {
		snprintf(err, errsz, "%.300s: %.100s", path, strerror(errno));
		return NULL;
	}
	drv_diags_init(&d, path);
	if (drv_yaml_load(buf, len, &d, &doc) < 0 || !doc || !fy_document_root(doc)) {
		snprintf(err, errsz, "%.300s: %.200s", path, d.n ? d.v[0].msg : "empty");
	} else {
		j = drv_yaml_node_json(fy_document_root(doc));
	}
	if (doc)
		fy_document_destroy(doc);
	drv_diags_release(&d);
	drv_free(buf);
	return j;
}

/* Adds spec j's device names to c when its kind is kind. */
static void take_devices(struct drv_cdi *c, const json_t *j, const char *path)
{
	const json_t *devs = json_object_get(j, "devices"), *dv;
	size_t i;

	if (!c->file)
		c->file = drv_strdup(path);
	json_array_foreach(devs, i, dv) {
		const char *nm = json_string_value(json_object_get(dv, "name"));

		if (!nm || !*nm)
			continue;
		c->names = drv_realloc(c->names, (c->n + 1) * sizeof(*c->names));
		c->names[c->n++] = drv_strdup(nm);
	}
}

int drv_cdi_load(const char *const *dirs, const char *kind, struct drv_cdi *c, char *err,
		 size_t errsz)
{
	memset(c, 0, sizeof(*c));
	err[0] = '\0';
	for (size_t k = 0; dirs && dirs[k]; k++) {
		struct dirent **ents = NULL;
		int n = scandir(dirs[k], &ents, NULL, alphasort);

		for (int i = 0; i < n; i++) {
			char path[PATH_MAX], why[512];
			const char *nm = ents[i]->d_name;
			json_t *j;

			if (nm[0] != '.' && (has_suffix(nm, ".yaml") || has_suffix(nm, ".json"))) {
				snprintf(path, sizeof(path), "%s/%s", dirs[k], nm);
				j = spec_json(path, why, sizeof(why));
				if (!j && !err[0])
					snprintf(err, errsz, "%s", why);
				if (j && json_is_string(json_object_get(j, "kind")) &&
				    !strcmp(json_string_value(json_object_get(j, "kind")), kind))
					take_devices(c, j, path);
				json_decref(j);
			}
			free(ents[i]);
		}
		free(ents);
	}
	if (c->file)
		return 0;
	if (!err[0])
		snprintf(err, errsz, "no CDI spec of kind %s", kind);
	return DRV_ENOENT;
}

static bool named(const struct drv_cdi *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return true;
	return false;
}

int drv_cdi_gpu_devices(const struct drv_cdi *c, const char *kind, const int *index,
			const char *const *uuid, int n, char (*out)[DRV_CDI_NAME_MAX], char *err,
			size_t errsz)
{
	for (int k = 0; k < n; k++) {
		char ix[16];

		snprintf(ix, sizeof(ix), "%d", index[k]);
		if (uuid && uuid[k] && *uuid[k] && named(c, uuid[k])) {
			snprintf(out[k], DRV_CDI_NAME_MAX, "%s=%s", kind, uuid[k]);
		} else if (named(c, ix)) {
			snprintf(out[k], DRV_CDI_NAME_MAX, "%s=%s", kind, ix);
		} else {
			snprintf(err, errsz, "the CDI spec %s names no device for GPU %d (%s) of kind "
				 "%s: regenerate it (nvidia-ctk cdi generate)", c->file ? c->file :
				 "(none)", index[k], uuid && uuid[k] && *uuid[k] ? uuid[k] : "no UUID",
				 kind);
			return DRV_ENOENT;
		}
	}
	return 0;
}
