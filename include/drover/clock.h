/*
 * clock.h: time as drover reads and writes it outside the core (layer 0,
 * src/base/clock.c; libc only). The core never reads a clock: its callers
 * read one here and pass the time in.
 *
 * Two clocks: the monotonic one (CLOCK_MONOTONIC) for intervals, timeouts
 * and benchmarks, which never jumps but means nothing across processes;
 * and the wall clock, integer seconds since the epoch (UTC), for what is
 * stored or shown. Wall times are written and read as RFC 3339 in UTC,
 * "2026-11-30T01:02:03Z".
 */
#ifndef DROVER_CLOCK_H
#define DROVER_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The monotonic clock in milliseconds, microseconds, and (for benchmarks)
 * seconds as a double. */
int64_t drv_mono_ms(void);
int64_t drv_mono_us(void);
double drv_mono_s(void);

/* The wall clock: seconds since the epoch. */
int64_t drv_wall_s(void);

/*
 * The wall-clock (CLOCK_REALTIME) time ms milliseconds from now: the
 * deadline pthread_cond_timedwait() takes for a condition variable with
 * the default clock.
 */
struct timespec drv_realtime_after_ms(int64_t ms);

/* Bytes an RFC 3339 time of drv_rfc3339() needs, the NUL included. */
#define DRV_RFC3339_LEN 21

/*
 * Formats t (seconds since the epoch) as RFC 3339 in UTC,
 * "2026-11-30T01:02:03Z", into buf of n bytes (DRV_RFC3339_LEN is enough).
 * Returns buf.
 */
char *drv_rfc3339(int64_t t, char *buf, size_t n);

/*
 * Reads an RFC 3339 time: "YYYY-MM-DDTHH:MM:SS" ('T', 't' or a space
 * between), an optional fraction (dropped), then "Z" or a "+HH:MM"/"-HH:MM"
 * offset (none means UTC). Sets *t to seconds since the epoch; returns 0,
 * or DRV_EPARSE (then *t is 0).
 */
int drv_rfc3339_parse(const char *s, int64_t *t);

#endif
