/*
 * agent_int.h: helpers shared by the files of src/agent/ and nothing else.
 */
#ifndef DROVER_AGENT_INTERNAL_H
#define DROVER_AGENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "drover/agent.h"

/* Paths and error sentences are cut at their buffer's size on purpose:
 * a truncated message is better than none. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* cgroup.c */
int drv_cgroup_make_task(const struct drv_cgroup *cg, const char *task_id, int64_t mem_mib,
			 int64_t cpu_milli, char *out, size_t outsz, char *err, size_t errsz);
long drv_cgroup_oom_kills(const char *cgroup);
void drv_cgroup_kill(const char *cgroup);

#endif
