/*
 * agent_jobmap.c: dcgm-exporter's HPC job mapping directory
 * (--hpc-job-mapping-dir), so that a site's own dcgm-exporter, started with
 * its --hpc-job-mapping-dir pointing at the same directory, labels its GPU
 * series with drover's jobs (hpc_job).
 *
 * The format is dcgm-exporter's (release 4.5.3-4.8.2, its HPC mapper): a
 * regular file per GPU, named by the GPU's index ("0", "1", ...; names
 * that are not digits, such as our temporary files, are skipped by it),
 * holding the ids of the jobs on that GPU, one per line. dcgm-exporter
 * copies each series once per job listed, so two jobs sharing a GPU give
 * two series. A GPU with no job has no file. Files are replaced whole
 * (write, then rename) and only when what they say changes, so a reader
 * never sees half a list.
 */
#include "drover/dynbuf.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether the line "job\n" is already in list. */
static bool listed(const char *list, const char *job)
{
	size_t n = strlen(job);

	for (const char *p = list; (p = strstr(p, job)); p += n)
		if ((p == list || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* The jobs of the running tasks on GPU g, one per line, into b. */
static void jobs_on(const struct drv_agent *a, int g, struct drv_dynbuf *b)
{
	drv_dynbuf_reset(b);
	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];

		if (t->state != T_RUNNING || listed(drv_dynbuf_str(b), t->job_id))
			continue;
		for (int i = 0; i < t->ngpus; i++) {
			if (t->gpus[i] == g) {
				drv_dynbuf_addf(b, "%s\n", t->job_id);
				break;
			}
		}
	}
}

static int put_text(FILE *f, void *arg)
{
	return fputs(arg, f) < 0 ? DRV_EIO : 0;
}

/* GPU g's file says text now ("": no file); a failure is logged once. */
static void write_one(struct drv_agent *a, int g, const char *text)
{
	char path[PATH_MAX];
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%d", a->hpc_dir, g);
	if (!*text) {
		if (unlink(path) < 0 && errno != ENOENT)
			rc = DRV_EIO;
	} else {
		rc = drv_file_write_atomic(path, 0644, put_text, (void *)text);
	}
	if (rc < 0 && !a->jobmap_warned) {
		a->jobmap_warned = true;
		drv_log(&a->log, "cannot write the HPC job mapping file %s: %s (dcgm-exporter will "
			"not label GPU %d with its jobs)", path, strerror(errno), g);
	}
	drv_free(a->jobmap[g]);
	a->jobmap[g] = drv_strdup(text);
}

void agent_write_job_map(struct drv_agent *a)
{
	struct drv_dynbuf b;

	if (!a->hpc_dir)
		return;
	drv_dynbuf_init(&b, 1 << 16);
	for (int g = 0; g < a->gpus.ngpus; g++) {
		jobs_on(a, g, &b);
		if (!a->jobmap[g] || strcmp(a->jobmap[g], drv_dynbuf_str(&b)))
			write_one(a, g, drv_dynbuf_str(&b));
	}
	drv_dynbuf_release(&b);
}

int agent_open_job_map(struct drv_agent *a, char *err, size_t errsz)
{
	if (!a->hpc_dir)
		return 0;
	if (drv_mkdir_p(a->hpc_dir, 0755) < 0 || access(a->hpc_dir, W_OK) < 0) {
		snprintf(err, errsz, "--hpc-job-mapping-dir %s: cannot create or write it: %s",
			 a->hpc_dir, strerror(errno));
		return DRV_EINVAL;
	}
	/* files a previous agent left name jobs that are gone */
	for (int g = 0; g < DRV_GPU_MAX; g++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%d", a->hpc_dir, g);
		unlink(path);
	}
	return 0;
}

void agent_close_job_map(struct drv_agent *a)
{
	for (int g = 0; g < DRV_GPU_MAX; g++) {
		if (a->jobmap[g] && a->jobmap[g][0]) {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%d", a->hpc_dir, g);
			unlink(path);
		}
		drv_free(a->jobmap[g]);
		a->jobmap[g] = NULL;
	}
}
