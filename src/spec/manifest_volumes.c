/*
 * manifest_volumes.c: a Pod's volumes as the container runtime acts on
 * them: each of the main container's volumeMounts joined with the volume
 * it names, when that is a hostPath or an emptyDir (medium Memory and its
 * sizeLimit too); and hostIPC. Other volume kinds (configMap, secret,
 * persistentVolumeClaim, ...) and the mounts of them are kept with a
 * warning each, never silently dropped.
 */
#include "drover/common.h"
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <string.h>

static bool is_true(struct mf_ctx *c, struct fy_node *n, const char *path)
{
	const char *v = mf_scalar(n);

	if (v && !strcmp(v, "true"))
		return true;
	if (!v || strcmp(v, "false"))
		mf_err(c, n, path, "found %s, expected true or false", v ? v : drv_yaml_kind(n));
	return false;
}

/* The volume named name in the Pod's volumes list; NULL when none. */
static struct fy_node *find_volume(struct fy_node *vols, const char *name, int *idx)
{
	void *it = NULL;
	struct fy_node *v;

	*idx = 0;
	while (vols && fy_node_is_sequence(vols) && (v = fy_node_sequence_iterate(vols, &it))) {
		const char *vn = mf_scalar(mf_field(v, "name"));

		if (vn && !strcmp(vn, name))
			return v;
		(*idx)++;
	}
	return NULL;
}

/* hostPath or emptyDir source of volume vn (at vp) into m; false when the
 * volume is of another kind (kept, with a warning). */
static bool volume_source(struct mf_ctx *c, struct drv_jobspec *s, struct fy_node *vn,
			  const char *vp, struct drv_mount *m)
{
	struct fy_node *hp = mf_field(vn, "hostPath"), *ed = mf_field(vn, "emptyDir"), *n;
	char fp[700];

	if (hp) {
		mf_join(fp, sizeof(fp), vp, "hostPath.path");
		m->type = drv_strdup("hostPath");
		m->host_path = mf_str(c, mf_field(hp, "path"), fp);
		if (m->host_path && m->host_path[0] != '/')
			mf_err(c, mf_field(hp, "path"), fp, "found \"%.128s\", expected an absolute "
			       "path", m->host_path);
		return true;
	}
	if (ed) {
		m->type = drv_strdup("emptyDir");
		if ((n = mf_field(ed, "medium")) && mf_scalar(n) && *mf_scalar(n)) {
			mf_join(fp, sizeof(fp), vp, "emptyDir.medium");
			m->medium = mf_str(c, n, fp);
			if (m->medium && strcmp(m->medium, "Memory"))
				mf_err(c, n, fp, "found \"%.64s\", expected Memory or \"\"", m->medium);
		}
		if ((n = mf_field(ed, "sizeLimit"))) {
			mf_join(fp, sizeof(fp), vp, "emptyDir.sizeLimit");
			if (!mf_scalar(n) || drv_quantity_mib(mf_scalar(n), &m->size_mib) ||
			    m->size_mib < 1)
				mf_err(c, n, fp, "found \"%.64s\", expected a memory quantity such as "
				       "16Gi", mf_scalar(n) ? mf_scalar(n) : "?");
		}
		return true;
	}
	drv_spec_keep_ignored(s, vp, drv_yaml_node_json(vn));
	return false;
}

/* One volumeMount (at mp) into run->mounts, with the volume it names. */
static void read_mount(struct mf_ctx *c, struct drv_jobspec *s, struct drv_task_run *run,
		       struct fy_node *mn, const char *mp, struct fy_node *vols, const char *path)
{
	static const char *const known[] = { "name", "mountPath", "readOnly", "subPath", NULL };
	struct drv_mount m;
	struct fy_node *vn, *n;
	char fp[700], vp[700];
	int vi;

	memset(&m, 0, sizeof(m));
	mf_join(fp, sizeof(fp), mp, "name");
	m.name = mf_str(c, mf_field(mn, "name"), fp);
	mf_join(fp, sizeof(fp), mp, "mountPath");
	m.mount_path = mf_str(c, mf_field(mn, "mountPath"), fp);
	if ((n = mf_field(mn, "readOnly"))) {
		mf_join(fp, sizeof(fp), mp, "readOnly");
		m.read_only = is_true(c, n, fp);
	}
	if ((n = mf_field(mn, "subPath"))) {
		mf_join(fp, sizeof(fp), mp, "subPath");
		m.sub_path = mf_str(c, n, fp);
		if (m.sub_path && (m.sub_path[0] == '/' || strstr(m.sub_path, "..")))
			mf_err(c, n, fp, "found \"%.128s\", expected a relative path without ..",
			       m.sub_path);
	}
	mf_keep_unknown(s, mn, mp, known);
	vn = m.name ? find_volume(vols, m.name, &vi) : NULL;
	if (m.name && !vn) {
		mf_err(c, mf_field(mn, "name"), mp, "found volume \"%.64s\", expected the name of "
		       "one of the Pod's volumes", m.name);
	} else if (vn && (mf_field(vn, "secret") || mf_field(vn, "configMap"))) {
		/* files the agent writes (manifest_pod.c's read_mounts, kube_config.c) */
	} else if (vn) {
		snprintf(vp, sizeof(vp), "%s.volumes[%d]", path, vi);
		if (volume_source(c, s, vn, vp, &m)) {
			DRV_GROW(run->mounts, (size_t)run->nmounts + 1, run->mounts_cap);
			run->mounts[run->nmounts++] = m;
			return;
		}
		drv_jobspec_warn(s, "%s: mounts volume %s, of a kind the container runtime does not "
				 "mount (hostPath and emptyDir only): not mounted", mp, m.name);
	}
	drv_free(m.name);
	drv_free(m.mount_path);
	drv_free(m.sub_path);
	drv_free(m.type);
	drv_free(m.medium);
	drv_free(m.host_path);
}

void mf_read_volumes(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
		     const char *path)
{
	struct drv_task_run *run = &s->run[g];
	struct fy_node *vols = mf_field(ps, "volumes"), *n;
	void *it = NULL;
	char fp[700];
	int i = 0;

	if ((n = mf_field(ps, "hostIPC"))) {
		mf_join(fp, sizeof(fp), path, "hostIPC");
		run->host_ipc = is_true(c, n, fp);
	}
	if (vols && !fy_node_is_sequence(vols)) {
		mf_join(fp, sizeof(fp), path, "volumes");
		mf_err(c, vols, fp, "found %s, expected a list of volumes", drv_yaml_kind(vols));
		vols = NULL;
	}
	if (c->mounts && !fy_node_is_sequence(c->mounts)) {
		mf_err(c, c->mounts, c->mounts_path, "found %s, expected a list of volume mounts",
		       drv_yaml_kind(c->mounts));
		return;
	}
	while (c->mounts && (n = fy_node_sequence_iterate(c->mounts, &it))) {
		snprintf(fp, sizeof(fp), "%s[%d]", c->mounts_path, i++);
		read_mount(c, s, run, n, fp, vols, path);
	}
	c->mounts = NULL;
	for (int32_t k = 0; run->host_ipc && k < run->nmounts; k++)
		if (run->mounts[k].medium && !strcmp(run->mounts[k].mount_path, "/dev/shm"))
			drv_jobspec_warn(s, "%s.hostIPC: true with a Memory emptyDir at /dev/shm: the "
					 "host's IPC namespace has its own /dev/shm; the volume's "
					 "size is not acted on (podman refuses both)", path);
	/* a volume no mount names is not acted on either */
	it = NULL;
	i = 0;
	while (vols && (n = fy_node_sequence_iterate(vols, &it))) {
		const char *vn = mf_scalar(mf_field(n, "name"));
		bool used = false;

		for (int32_t k = 0; vn && k < run->nmounts; k++)
			used |= !strcmp(run->mounts[k].name, vn);
		if (!used && vn && (mf_field(n, "hostPath") || mf_field(n, "emptyDir")))
			drv_jobspec_warn(s, "%s.volumes[%d]: volume %s is mounted by no volumeMount of "
					 "the main container: not acted on", path, i, vn);
		i++;
	}
}

/*
 * A securityContext at path (the main container's, read first, or the
 * Pod's, which fills only what the container left unset): runAsUser,
 * runAsGroup and runAsNonRoot act (docs/agent.md, "Who"); its other keys
 * are kept, one warning each.
 */
void mf_read_security(struct mf_ctx *c, struct drv_jobspec *s, int g, struct fy_node *sc,
		      const char *path)
{
	static const char *const known[] = { "runAsUser", "runAsGroup", "runAsNonRoot", NULL };
	struct drv_task_run *run = &s->run[g];
	struct fy_node *n;
	char fp[700];
	int64_t v;

	if (!fy_node_is_mapping(sc)) {
		mf_err(c, sc, path, "found %s, expected a securityContext mapping", drv_yaml_kind(sc));
		return;
	}
	mf_keep_unknown(s, sc, path, known);
	if ((n = mf_field(sc, "runAsUser")) && run->run_as_user < 0) {
		mf_join(fp, sizeof(fp), path, "runAsUser");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			run->run_as_user = v;
	}
	if ((n = mf_field(sc, "runAsGroup")) && run->run_as_group < 0) {
		mf_join(fp, sizeof(fp), path, "runAsGroup");
		if (mf_int(c, n, fp, INT32_MAX, &v))
			run->run_as_group = v;
	}
	if ((n = mf_field(sc, "runAsNonRoot")) && run->run_as_non_root < 0) {
		mf_join(fp, sizeof(fp), path, "runAsNonRoot");
		run->run_as_non_root = is_true(c, n, fp);
	}
}
