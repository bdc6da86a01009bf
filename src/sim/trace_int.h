/*
 * trace_int.h: what the trace readers (trace.c: Philly; trace_native.c:
 * drover's native CSV) share and nobody else uses: splitting a CSV line
 * into fields, adding and dropping workload jobs, and the one way a
 * malformed row is reported.
 */
#ifndef DROVER_SIM_TRACE_INT_H
#define DROVER_SIM_TRACE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drover/diag.h"
#include "drover/sim.h"

#define MAX_FIELDS 32

/* One field of a line: borrowed from the line, not NUL-terminated. */
struct field {
	const char *s;
	size_t len;
	int col; /* 1-based */
};

/* A field for a message: "%.*s" with at most 40 bytes of it. */
#define SHOW(fd) (int)DRV_MIN((fd).len, 40), (fd).s

/* Task groups need a name; workload jobs share this one (never freed). */
extern char trace_group_name[];

/* Splits line on commas; returns the field count (MAX_FIELDS + 1 when more). */
int trace_split(const char *line, size_t len, struct field *f);
/* Strips the line end (\n, \r\n); returns the length left. */
size_t trace_chomp(char *line, size_t len);
/* Only spaces and tabs? */
bool trace_is_blank(const char *s, size_t len);
/* A whole number filling the field; false when it is not one. */
bool trace_parse_int(const char *s, size_t len, int64_t *out);

/* A new zeroed job at the end of w; its fields are freed by
 * trace_job_free_fields. */
struct drv_sim_job *trace_new_job(struct drv_sim_workload *w);
void trace_job_free_fields(struct drv_sim_job *sj);
/* The decimal text of a line number, for an unnamed job's name (caller frees). */
char *trace_line_name(int line);
/* After a read: the jobs from first_new on sorted by submit time, times made
 * relative to the first, jobs numbered. */
void trace_finish_workload(struct drv_sim_workload *w, int32_t first_new);
/* Drops the jobs added since first_new (a strict read that failed). */
void trace_drop_jobs(struct drv_sim_workload *w, int32_t first_new);
/* A malformed row: an error when strict, else a warning "(row skipped)";
 * counted in w->malformed either way. */
void trace_bad_row(struct drv_diags *d, bool strict, struct drv_sim_workload *w, int line,
		   int col, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

#endif
