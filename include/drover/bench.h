/*
 * bench.h: the benchmarks behind 'drover bench' (src/bench/). Each takes
 * argv with argv[0] = its name, prints one JSON object on stdout and
 * returns an exit code.
 */
#ifndef DROVER_BENCH_H
#define DROVER_BENCH_H

int drv_bench_place(int argc, char **argv);
int drv_bench_sched(int argc, char **argv);
int drv_bench_api(int argc, char **argv);
int drv_bench_agent(int argc, char **argv);
int drv_bench_agents(int argc, char **argv);

#endif
