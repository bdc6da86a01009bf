/*
 * diag.c: collecting and printing diagnostics for bad input (the parsers
 * in src/spec report into a struct drv_diags; commands print them). It
 * lives in src/spec, not src/core, because it writes to a FILE.
 */
#include "drover/diag.h"

#include <stdarg.h>
#include <string.h>

void drv_diags_init(struct drv_diags *d, const char *file)
{
	memset(d, 0, sizeof(*d));
	d->file = file;
}

void drv_diags_release(struct drv_diags *d)
{
	int i;
	for (i = 0; i < d->n; i++) {
		drv_free(d->v[i].path);
		drv_free(d->v[i].msg);
	}
	drv_free(d->v);
	d->v = NULL;
	d->n = 0;
	d->cap = 0;
}

void drv_diag_add(struct drv_diags *d, enum drv_severity sev, int line, int col,
		  const char *path, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];
	struct drv_diag *x;

	if (sev == DRV_SEV_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
	if (d->n >= DRV_DIAG_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	DRV_GROW(d->v, (size_t)d->n + 1, d->cap);
	x = &d->v[d->n++];
	x->sev = sev;
	x->doc = 0;
	x->line = line;
	x->col = col;
	x->path = drv_strdup(path);
	x->msg = drv_strdup(buf);
}

void drv_diags_print(const struct drv_diags *d, FILE *f)
{
	int i, shown = d->n;
	for (i = 0; i < d->n; i++) {
		const struct drv_diag *x = &d->v[i];
		if (d->file)
			fprintf(f, "%s:", d->file);
		if (x->line > 0)
			fprintf(f, "%d:", x->line);
		if (x->line > 0 && x->col > 0)
			fprintf(f, "%d:", x->col);
		fprintf(f, " %s: ", x->sev == DRV_SEV_ERROR ? "error" : "warning");
		if (x->doc > 0)
			fprintf(f, "document %d: ", x->doc);
		if (x->path)
			fprintf(f, "%s: ", x->path);
		fprintf(f, "%s\n", x->msg);
	}
	if (d->nerrors + d->nwarnings > shown)
		fprintf(f, "%s: and %d more\n", d->file ? d->file : "input",
			d->nerrors + d->nwarnings - shown);
}
