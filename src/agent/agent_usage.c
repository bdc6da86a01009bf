/*
 * agent_usage.c: what each running task uses, for its job's efficiency
 * (the seff line): every AGENT_USAGE_MS the supervisor reads the GPUs the
 * tasks run on and their cgroups. Per GPU a task keeps the sum of its
 * share of the utilisation (for the mean) and the high-water mark of its
 * share of the framebuffer; per task, the cgroup's CPU time and memory
 * high-water mark. The syncer sends the figures with each running task's
 * state and, final, with its end report (include/drover/proto.h).
 *
 * On a GPU that several tasks share (fractions), each gets the part of a
 * reading its gpu_milli is of the sum of the running tasks' gpu_milli on
 * that GPU, so the parts add up to the GPU's reading and a sum over jobs
 * never counts a GPU twice (docs/agent.md). NVML on a GPU without MIG
 * does not split utilisation by process reliably, hence the split by
 * allocation. NEEDSWORK: nvmlDeviceGetComputeRunningProcesses gives each
 * process's framebuffer; the memory split could use it where the driver
 * has it.
 */
#include "drover/clock.h"
#include "agent_int.h"

#include <math.h>
#include <string.h>

double agent_gpu_share(const struct drv_agent *a, const struct task *t, int g)
{
	int64_t sum = 0;

	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *o = a->tasks[k];

		if (o->state != T_RUNNING)
			continue;
		for (int q = 0; q < o->ngpus; q++)
			if (o->gpus[q] == g)
				sum += o->gpu_milli > 0 ? o->gpu_milli : 1000;
	}
	return sum > 0 ? (double)(t->gpu_milli > 0 ? t->gpu_milli : 1000) / (double)sum : 1;
}

/* One task's sample: its GPUs (read once each into s[], ok[]) and cgroup. */
static void sample_task(struct drv_agent *a, struct task *t, struct drv_gpu_sample *s,
			const bool *ok)
{
	int64_t cpu, mem;

	for (int k = 0; k < t->ngpus; k++) {
		int g = t->gpus[k];
		double share = agent_gpu_share(a, t, g);

		if (!ok[g])
			continue;
		if (s[g].util_pct >= 0)
			t->use.util_sum[k] += s[g].util_pct * share;
		if (s[g].fb_used_mib >= 0)
			t->use.fb_max_mib[k] = DRV_MAX(t->use.fb_max_mib[k],
						       (int64_t)llround((double)s[g].fb_used_mib * share));
	}
	t->use.samples++;
	drv_cgroup_usage(t->proc.cgroup, &cpu, &mem);
	t->use.cpu_us = DRV_MAX(t->use.cpu_us, cpu);
	t->use.mem_max_bytes = DRV_MAX(t->use.mem_max_bytes, mem);
}

int64_t agent_sample_usage(struct drv_agent *a, int64_t now_ms)
{
	struct drv_gpu_sample s[DRV_GPU_MAX];
	bool want[DRV_GPU_MAX] = { false }, ok[DRV_GPU_MAX] = { false }, any = false;

	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];

		if (t->state != T_RUNNING)
			continue;
		any = true;
		for (int q = 0; q < t->ngpus; q++)
			want[t->gpus[q]] = true;
	}
	if (!any)
		return INT64_MAX;
	if (now_ms < a->next_usage_ms)
		return a->next_usage_ms;
	a->next_usage_ms = now_ms + AGENT_USAGE_MS;
	for (int g = 0; g < a->gpus.ngpus; g++)
		if (want[g])
			ok[g] = drv_gpu_sample(&a->gpus, g, now_ms, &s[g]) == 0;
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k]->state == T_RUNNING)
			sample_task(a, a->tasks[k], s, ok);
	return a->next_usage_ms;
}

struct drv_proto_usage *agent_usage_msg(const struct task *t)
{
	const struct task_use *u = &t->use;
	struct drv_proto_usage *m;
	int64_t cpu = DRV_MAX(u->cpu_us, t->proc.cpu_us);
	int64_t mem = DRV_MAX(u->mem_max_bytes, t->proc.mem_peak_bytes);

	if (!u->samples && cpu < 0 && mem < 0)
		return NULL;
	m = drv_calloc(1, sizeof(*m));
	m->cpu_s = cpu >= 0 ? (double)cpu / 1e6 : -1;
	m->mem_max_mib = mem >= 0 ? (mem + (1 << 20) - 1) >> 20 : -1;
	if (u->samples && t->ngpus) {
		m->gpus = drv_calloc((size_t)t->ngpus, sizeof(*m->gpus));
		m->ngpus = (size_t)t->ngpus;
		for (int k = 0; k < t->ngpus; k++)
			m->gpus[k] = (struct drv_proto_gpu_use){
				.gpu = t->gpus[k], .util_pct = u->util_sum[k] / (double)u->samples,
				.mem_max_mib = u->fb_max_mib[k], .samples = u->samples };
	}
	return m;
}
