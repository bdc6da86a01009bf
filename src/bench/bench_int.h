/*
 * bench_int.h: what the benchmarks in src/bench/ share and nothing else.
 */
#ifndef DROVER_BENCH_INT_H
#define DROVER_BENCH_INT_H

/*
 * A loopback TCP port free at the time of the call (bound to port 0, read
 * back, closed), for a server the bench is about to start; 0 if none could
 * be had. Another process may take it in between: the starts that follow
 * fail loudly if so.
 */
int bench_free_port(void);

#endif
