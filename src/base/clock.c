/*
 * clock.c: layer 0, libc only: the monotonic and wall clocks and RFC 3339
 * in UTC (include/drover/clock.h).
 */
#include "drover/clock.h"

#include "drover/common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static struct timespec mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts;
}

int64_t drv_mono_ms(void)
{
	struct timespec ts = mono();

	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t drv_mono_us(void)
{
	struct timespec ts = mono();

	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double drv_mono_s(void)
{
	struct timespec ts = mono();

	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t drv_wall_s(void)
{
	return (int64_t)time(NULL);
}

struct timespec drv_realtime_after_ms(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

char *drv_rfc3339(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	if (n && !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		buf[0] = '\0';
	return buf;
}

int drv_rfc3339_parse(const char *s, int64_t *t)
{
	int y, mo, d, h, mi, off_h = 0, off_m = 0;
	char tz[16] = "";
	struct tm tm;
	double sec;

	*t = 0;
	if (sscanf(s, "%d-%d-%d%*[Tt ]%d:%d:%lf%15s", &y, &mo, &d, &h, &mi, &sec, tz) < 6)
		return DRV_EPARSE;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = (int)sec;
	*t = (int64_t)timegm(&tm);
	if ((tz[0] == '+' || tz[0] == '-') && sscanf(tz + 1, "%d:%d", &off_h, &off_m) >= 1)
		*t -= (tz[0] == '+' ? 1 : -1) * (off_h * 3600LL + off_m * 60LL);
	return 0;
}
