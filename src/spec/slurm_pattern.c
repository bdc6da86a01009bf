/*
 * slurm_pattern.c: Slurm's filename patterns (%j, %3a, ...) for the
 * output, error and input files of batch steps and srun (spec.h,
 * drv_slurm_pattern_expand). The agent expands the batch step's; srun its
 * own.
 */
#include "drover/spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
	char *p;
	size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->cap ? o->p + o->len : NULL, o->len < o->cap ? o->cap - o->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void num(struct out *o, int width, unsigned long long v)
{
	put(o, "%0*llu", width, v);
}

size_t drv_slurm_pattern_expand(const char *pat, const struct drv_slurm_pattern *v, char *out,
				size_t cap)
{
	struct out o = { out, cap, 0 };
	const char *p = pat;

	if (cap)
		out[0] = '\0';
	while (*p) {
		const char *start = p;
		int width = 0;

		if (*p != '%') {
			put(&o, "%c", *p++);
			continue;
		}
		p++;
		while (*p >= '0' && *p <= '9' && width < 64)
			width = width * 10 + (*p++ - '0');
		switch (*p) {
		case '%':
			put(&o, "%%");
			break;
		case 'j':
			num(&o, width, v->job_id);
			break;
		case 'J':
			num(&o, width, v->job_id);
			if (v->step_id >= 0)
				put(&o, ".%lld", (long long)v->step_id);
			break;
		case 'A':
			num(&o, width, v->array_job_id ? v->array_job_id : v->job_id);
			break;
		case 'a':
			num(&o, width, v->array_task_id >= 0 ? (unsigned long long)v->array_task_id
							     : 4294967294ull);
			break;
		case 'x':
			put(&o, "%s", v->job_name ? v->job_name : "");
			break;
		case 'u':
			put(&o, "%s", v->user ? v->user : "");
			break;
		case 'N':
			put(&o, "%s", v->node ? v->node : "");
			break;
		case 'n':
		case 't':
			if ((*p == 'n' ? v->node_id : v->task_id) < 0)
				goto keep;
			num(&o, width, (unsigned long long)(*p == 'n' ? v->node_id : v->task_id));
			break;
		case 's':
			if (v->step_id < 0)
				put(&o, "batch");
			else
				num(&o, width, (unsigned long long)v->step_id);
			break;
		default:
			goto keep;
		}
		p++;
		continue;
keep:
		/* not a pattern drover knows: as written */
		put(&o, "%.*s", (int)(p - start) + (*p ? 1 : 0), start);
		if (*p)
			p++;
	}
	return o.len;
}
