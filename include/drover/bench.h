/*
 * bench.h: the benchmarks behind 'drover bench' (src/bench/). Each takes
 * argv with argv[0] = its name, prints one JSON object on stdout and
 * returns an exit code.
 */
#ifndef DROVER_BENCH_H
#define DROVER_BENCH_H

#include "drover/options.h"

int drv_bench_place(int argc, char **argv);
int drv_bench_pack(int argc, char **argv);
int drv_bench_sched(int argc, char **argv);
int drv_bench_api(int argc, char **argv);
int drv_bench_agent(int argc, char **argv);
int drv_bench_agents(int argc, char **argv);
int drv_bench_control(int argc, char **argv);
int drv_bench_soak(int argc, char **argv);
int drv_bench_sbatch(int argc, char **argv);

/* The choices of every --placement option (drover place, sim, bench place
 * and pack): bestfit, fgd, multi, with best-fit as an alias; the values are
 * enum drv_place_strategy. */
extern const struct drv_opt_choice drv_place_choices[];

#endif
