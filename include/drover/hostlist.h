/*
 * hostlist.h: Slurm's compressed forms of node lists and counts.
 *
 * drv_hostlist_compress sorts names (prefix, then the number they end in)
 * and writes them the way Slurm's SLURM_JOB_NODELIST does: names that
 * share a prefix and a zero-padded width become one bracketed range list,
 * "gpu-[01-03,05]"; a lone name stays as it is, "login1"; groups are
 * comma-separated. drv_counts_compress writes counts as Slurm's
 * SLURM_TASKS_PER_NODE does: a run of equal counts as "2(x3)", e.g.
 * { 2, 2, 2, 1 } -> "2(x3),1".
 *
 * Both write into out (cap bytes, NUL-terminated) and return the length
 * they needed; a result that did not fit is cut (check ret < cap).
 */
#ifndef DROVER_HOSTLIST_H
#define DROVER_HOSTLIST_H

#include <stddef.h>

size_t drv_hostlist_compress(const char *const *names, size_t n, char *out, size_t cap);
size_t drv_counts_compress(const int *counts, size_t n, char *out, size_t cap);
/* The order drv_hostlist_compress sorts names in (prefix, then the number
 * they end in: "gpu-2" before "gpu-10"): <0, 0 or >0, as strcmp. */
int drv_hostname_cmp(const char *a, const char *b);

/*
 * The other way: "gpu-[01-03,05],login1" -> { "gpu-01", "gpu-02", "gpu-03",
 * "gpu-05", "login1" } (ranges keep their zero padding; items separated by
 * commas, spaces or newlines; one bracket an item, with a suffix after it
 * allowed). *names (malloc'd, each name too; drv_hostlist_free) and *n get
 * them, at most max. Returns 0, DRV_EINVAL for a malformed list (nothing
 * returned) or DRV_ELIMIT past max.
 */
int drv_hostlist_expand(const char *list, char ***names, size_t *n, size_t max);
void drv_hostlist_free(char **names, size_t n);

#endif
