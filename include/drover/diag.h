/*
 * diag.h: diagnostics for bad input. Every parser reports into a struct
 * drv_diags: where (file:line:col, or a field path), what was found, what
 * was expected. Several errors in one file are all kept, up to a cap, so
 * a user fixes them in one go. Printing is the caller's business.
 */
#ifndef DROVER_DIAG_H
#define DROVER_DIAG_H

#include "drover/common.h"
#include <stdio.h>

#define DRV_DIAG_MAX 20  /* errors kept per input; more are counted */

enum drv_severity { DRV_SEV_ERROR = 0, DRV_SEV_WARNING = 1 };

struct drv_diag {
	enum drv_severity sev;
	int line, col;   /* 1-based; 0 when not known */
	char *path;      /* field path such as spec.containers[0].image, or NULL */
	char *msg;       /* "expected ..., found ..." */
	int doc;         /* 1-based document of a multi-document YAML stream; 0 = not one */
};

struct drv_diags {
	const char *file;        /* borrowed: name shown in messages */
	struct drv_diag *v;
	int n;
	size_t cap;
	int nerrors, nwarnings;  /* all reported, including those over the cap */
};

void drv_diags_init(struct drv_diags *d, const char *file);
void drv_diags_release(struct drv_diags *d);
/* Adds one diagnostic; fmt is printf-like. path may be NULL. */
void drv_diag_add(struct drv_diags *d, enum drv_severity sev, int line, int col,
		  const char *path, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
#define drv_diag_err(d, line, col, path, ...) \
	drv_diag_add((d), DRV_SEV_ERROR, (line), (col), (path), __VA_ARGS__)
#define drv_diag_warn(d, line, col, path, ...) \
	drv_diag_add((d), DRV_SEV_WARNING, (line), (col), (path), __VA_ARGS__)
/*
 * Prints every diagnostic as "file:line:col: error: document N: path: msg"
 * (parts that are unknown are left out; "document N" only in streams of
 * several documents), then "and N more" when over the cap.
 */
void drv_diags_print(const struct drv_diags *d, FILE *f);

#endif
