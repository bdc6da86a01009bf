/*
 * sched_format.c: the scheduler's words. The policy names and their
 * parsing (fifo/sjf/las/fair, strict/backfill/greedy, cheapest/fastest, the
 * Kubernetes preemption policies) and the one-line text of a decision, as
 * the simulator's log, the golden scenarios and the server print it.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- policy ------------------------------------------------------------- */

void drv_sched_policy_default(struct drv_sched_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->order = DRV_ORDER_FIFO;
	p->mode = DRV_MODE_BACKFILL;
	p->preemption = false;
	p->pools = DRV_POOLS_CHEAPEST;
	p->place = DRV_PLACE_DEFAULT;
	p->aging_step = 1;
	/* queues ten times apart from 300 GPU-s (5 minutes of one GPU) to
	 * 3,000,000 (about 35 GPU-days): on the heavy-tailed Philly trace the
	 * long jobs sink below the short ones (docs/scheduling.md) */
	p->las_threshold[0] = 300;
	p->las_threshold[1] = 3000;
	p->las_threshold[2] = 30000;
	p->las_threshold[3] = 300000;
	p->las_threshold[4] = 3000000;
	p->nlas = 5;
	p->grace_s = 30;
	p->max_preempt_tries = 16;
}

static const char *const order_names[] = { "fifo", "sjf", "las", "fair" };
static const char *const mode_names[] = { "strict", "backfill", "greedy" };
static const char *const pools_names[] = { "cheapest", "fastest" };

const char *drv_sched_order_name(enum drv_sched_order o)
{
	return (unsigned)o < DRV_ARRAY_SIZE(order_names) ? order_names[o] : "?";
}

const char *drv_sched_mode_name(enum drv_sched_mode m)
{
	return (unsigned)m < DRV_ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

const char *drv_sched_pools_name(enum drv_sched_pools p)
{
	return (unsigned)p < DRV_ARRAY_SIZE(pools_names) ? pools_names[p] : "?";
}

static int parse_name(const char *s, const char *const *names, int n)
{
	int i;
	if (!s)
		return -1;
	for (i = 0; i < n; i++)
		if (drv_strcaseeq(s, names[i]))
			return i;
	return -1;
}

int drv_sched_order_parse(const char *s, enum drv_sched_order *out)
{
	int i = parse_name(s, order_names, (int)DRV_ARRAY_SIZE(order_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_order)i;
	return 0;
}

int drv_sched_mode_parse(const char *s, enum drv_sched_mode *out)
{
	int i = parse_name(s, mode_names, (int)DRV_ARRAY_SIZE(mode_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_mode)i;
	return 0;
}

int drv_sched_pools_parse(const char *s, enum drv_sched_pools *out)
{
	int i = parse_name(s, pools_names, (int)DRV_ARRAY_SIZE(pools_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_pools)i;
	return 0;
}

int drv_preempt_policy_parse(const char *s, enum drv_preempt_policy *out)
{
	if (s && drv_strcaseeq(s, "PreemptLowerPriority")) {
		*out = DRV_PREEMPT_LOWER;
		return 0;
	}
	if (s && drv_strcaseeq(s, "Never")) {
		*out = DRV_PREEMPT_NEVER;
		return 0;
	}
	return DRV_EINVAL;
}

/* ---- formatting --------------------------------------------------------- */

static void fput_place(struct fbuf *f, const struct drv_sched *s, const struct drv_placement *p)
{
	size_t need;
	if (!p || p->ntasks == 0) {
		fput(f, "-");
		return;
	}
	need = drv_placement_format(s->c, p, f->len < f->sz ? f->buf + f->len : NULL,
				    f->len < f->sz ? f->sz - f->len : 0);
	f->len += need;
}

static const char *pool_name(const struct drv_sched *s, int32_t p)
{
	return p >= 0 && p < s->c->npools ? s->c->pools[p].name : "-";
}

static void fput_start(struct fbuf *f, const struct drv_sched *s,
		       const struct drv_sched_decision *d)
{
	fput(f, "start %" PRIu64 " on ", d->job);
	fput_place(f, s, d->placement);
	if (d->pool >= 0)
		fput(f, " pool %s", pool_name(s, d->pool));
	if (d->n[0] > 0)
		fput(f, " $%" PRId64 ".%02" PRId64 "/h", d->n[0] / 1000000,
		     d->n[0] % 1000000 / 10000);
	if (d->flags & DRV_DEC_BACKFILLED)
		fput(f, " backfilled");
	if (d->flags & DRV_DEC_BORROWING)
		fput(f, " borrowing");
	if (d->flags & DRV_DEC_SPOT)
		fput(f, " spot");
}

static void fput_preempt(struct fbuf *f, const struct drv_sched *s,
			 const struct drv_sched_decision *d)
{
	int32_t i;
	fput(f, "preempt");
	for (i = 0; i < d->nvictims; i++)
		fput(f, "%s%" PRIu64, i ? "," : " ", d->victims[i]);
	fput(f, " for %" PRIu64 " grace until %" PRId64 " (lost %" PRId64
		" GPU-s, top victim priority %" PRId64 "%s) then on ",
	     d->job, d->at, d->n[0], d->n[1],
	     (d->flags & DRV_DEC_RECLAIM) ? ", reclaiming quota" : "");
	fput_place(f, s, d->placement);
}

/* "pending 7: Resources: needs 8 GPUs ...": the code, then the sentence. */
static void fput_pending(struct fbuf *f, const struct drv_sched *s,
			 const struct drv_sched_decision *d)
{
	fput(f, "pending %" PRIu64 ": %s: ", d->job, drv_sched_reason_code(d));
	f->len += drv_sched_reason_text(s->c, d, s->last_now, f->len < f->sz ? f->buf + f->len : NULL,
					f->len < f->sz ? f->sz - f->len : 0);
}

size_t drv_sched_decision_format(const struct drv_sched *s, const struct drv_sched_decision *d,
				 char *buf, size_t bufsz)
{
	struct fbuf f = { buf, bufsz, 0 };
	const struct drv_gpu_model *gm;

	if (bufsz)
		buf[0] = '\0';
	switch (d->kind) {
	case DRV_DEC_START:
		fput_start(&f, s, d);
		break;
	case DRV_DEC_PREEMPT:
		fput_preempt(&f, s, d);
		break;
	case DRV_DEC_RESERVE:
		fput(&f, "reserve for %" PRIu64 " at %" PRId64 " on ", d->job, d->at);
		fput_place(&f, s, d->placement);
		break;
	case DRV_DEC_PROVISION:
		gm = drv_gpu_model_at(d->model);
		fput(&f, "provision %d node%s of %" PRId64 " %s in pool %s for %" PRIu64, d->count,
		     d->count == 1 ? "" : "s", d->n[0], gm ? gm->short_name : "GPUs",
		     pool_name(s, d->pool), d->job);
		break;
	case DRV_DEC_RELEASE:
		fput(&f, "release node %s of pool %s",
		     d->node >= 0 && d->node < s->c->nnodes ? s->c->nodes[d->node].name : "?",
		     pool_name(s, d->pool));
		break;
	case DRV_DEC_PENDING:
		fput_pending(&f, s, d);
		break;
	default:
		fput(&f, "?");
		break;
	}
	return f.len;
}
