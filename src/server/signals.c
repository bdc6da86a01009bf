/*
 * signals.c: signals to a running job's processes, as Slurm sends them:
 * `scancel -s SIG` (POST /v1/jobs/ID/signal) and sbatch's
 * --signal=[B:]SIG@SECS, sent that many seconds before the job's time
 * limit. A signal is state, not a message: the job keeps the last one
 * (number, whom, and a sequence number from the server's epoch counter,
 * which only grows), every assignment of the tasks it is for carries it,
 * and an agent delivers a sequence number it has not delivered yet to its
 * task once (docs/api.md). A task that starts later never sees an earlier
 * signal. The signal and the attempt whose --signal timer fired are
 * stored with the job (srv_job_store_doc), so a controller restart neither
 * forgets a signal nor fires a timer twice.
 */
#include "server_int.h"

void srv_job_signal(struct drv_server *s, struct srv_job *j, int sig, int to)
{
	j->sig_seq = ++s->epoch;
	s->meta_dirty = true;
	j->sig_num = sig;
	j->sig_to = (uint8_t)to;
	srv_job_mark(s, j);   /* kept with the job: a restart neither forgets nor resends it */
	srv_job_bump_nodes(s, j);
	drv_http_wake(s->http);
}

void srv_signal_tick(struct drv_server *s, int64_t now)
{
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);
		const struct drv_slurm_extra *e;
		int64_t at;

		if (!j || j->state != J_RUNNING || !j->start_time || j->stop_reason)
			continue;
		e = &j->spec.slurm;
		if (e->signal <= 0 || j->spec.job.time_limit <= 0 || j->sig_timer_epoch == j->epoch)
			continue;
		/* Slurm's default is 60 s before the limit */
		at = j->start_time + j->spec.job.time_limit - (e->signal_secs > 0 ? e->signal_secs : 60);
		if (now < at)
			continue;
		j->sig_timer_epoch = j->epoch;
		srv_job_signal(s, j, e->signal, e->signal_batch_only ? SRV_SIG_BATCH : SRV_SIG_STEPS);
	}
}
