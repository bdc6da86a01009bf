/*
 * clusterfile.h: reading a YAML cluster file into a struct drv_cluster
 * (src/spec/cluster_file.c, owned by core). The format is documented in
 * docs/cluster-format.md: kind: Cluster, a name, the level names, node
 * types, and the topology as nested entries with counts and name patterns.
 *
 * Errors go into the caller's struct drv_diags as "file:line:col: path:
 * what was found, what was expected", every one the file has (up to the
 * cap), so a user fixes them in one go.
 */
#ifndef DROVER_CLUSTERFILE_H
#define DROVER_CLUSTERFILE_H

#include "drover/diag.h"
#include "drover/model.h"

/* Most nodes and vertices one file may expand to (ELIMIT beyond). */
#define DRV_CLUSTER_MAX_NODES 1000000
#define DRV_CLUSTER_MAX_COUNT 100000

/*
 * Parses the file at path into c, which this initialises (the caller
 * releases it with drv_cluster_release on success). On failure c is left
 * released (empty, safe to release again) and diags holds the reasons.
 * diags must be initialised by the caller (drv_diags_init(&d, path)).
 * Returns 0, DRV_EIO (unreadable), DRV_EPARSE (YAML syntax) or DRV_EINVAL
 * (valid YAML, invalid cluster), DRV_ELIMIT (too large).
 */
int drv_cluster_load_file(const char *path, struct drv_cluster *c, struct drv_diags *diags);
/* The same from a buffer of len bytes (need not be NUL-terminated). */
int drv_cluster_load_buffer(const char *buf, size_t len, struct drv_cluster *c,
			    struct drv_diags *diags);
/*
 * True when the text looks like a cluster file (a top-level "kind: Cluster"
 * line), so that 'drover validate' tells cluster and job files apart by
 * content. Cheap; no YAML parse.
 */
bool drv_cluster_file_sniff(const char *buf, size_t len);

#endif
