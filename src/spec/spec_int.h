/*
 * spec_int.h: what the files of src/spec share and nobody else uses: the
 * per-format parsers behind drv_spec_parse_all and a few helpers.
 */
#ifndef DROVER_SPEC_INT_H
#define DROVER_SPEC_INT_H

#include "drover/spec.h"

/* Each appends the jobs (and PriorityClasses) of buf (NUL-terminated, len
 * bytes) to set; errors go to d. 0 or a negative drv_err. */
int drv_spec_parse_manifest(const char *buf, size_t len, const char *name,
			    struct drv_specset *set, struct drv_diags *d);
int drv_spec_parse_sbatch(const char *buf, size_t len, const char *name,
			  const struct drv_spec_opts *opts, struct drv_specset *set,
			  struct drv_diags *d);
int drv_spec_parse_canonical(const char *buf, size_t len, struct drv_specset *set,
			     struct drv_diags *d);

/* A new initialised spec at the end of set. */
struct drv_jobspec *drv_specset_add(struct drv_specset *set);
void drv_spec_run_release(struct drv_task_run *r);
void drv_spec_class_release(struct drv_priority_class *c);

/* Adds (or replaces) field path -> value (reference stolen) in s->ignored
 * and warns "path: kept, not acted on by drover". */
void drv_spec_keep_ignored(struct drv_jobspec *s, const char *path, json_t *value);

/*
 * Checks that buf is valid UTF-8 and, unless controls, holds no control
 * characters but tab, LF and CR (NUL is refused either way). On failure
 * reports "found byte 0x.., expected UTF-8 text" at its line:col.
 */
bool drv_spec_check_text(const char *buf, size_t len, bool controls, struct drv_diags *d);

#endif
