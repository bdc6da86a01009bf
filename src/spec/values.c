/*
 * values.c: the small value grammars job files are made of: Kubernetes
 * resource quantities ("500m", "16Gi", "1e3"), Slurm time limits
 * ("D-HH:MM:SS" and the rest) and Slurm --array specifications
 * ("0-15:2%4"), and the names traces and tenants files use. Pure
 * functions over strings, exact integer arithmetic
 * (no floating point), every overflow reported.
 */
#include "drover/spec.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef __int128 i128;

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Quantity: [+]digits[.digits][suffix] where suffix is a binary SI suffix
 * (Ki..Ei), a decimal SI suffix (n u m k M G T P E) or an exponent
 * (e3, E-2). The result is ceil(value * scale).
 */
int drv_quantity_parse(const char *s, int64_t scale, int64_t *out)
{
	const char *p = s;
	i128 mant = 0, v;
	int e10 = 0, ndig = 0, sig = 0, bin = 0;
	bool lost = false, frac = false;

	if (!s || !*s || scale <= 0)
		return DRV_EINVAL;
	if (*p == '+')
		p++;
	if (!is_digit(*p) && !(*p == '.' && is_digit(p[1])))
		return DRV_EINVAL;
	for (; is_digit(*p) || (*p == '.' && !frac); p++) {
		if (*p == '.') {
			frac = true;
			continue;
		}
		ndig++;
		if (mant == 0 && *p == '0') {
			if (frac)
				e10--;
			continue;
		}
		if (sig < 30) {
			mant = mant * 10 + (*p - '0');
			sig++;
			if (frac)
				e10--;
		} else {
			if (*p != '0')
				lost = true;
			if (!frac)
				e10++;
		}
	}
	if (ndig == 0)
		return DRV_EINVAL;
	/* suffix */
	if (*p == '\0') {
	} else if ((*p == 'e' || *p == 'E') && (is_digit(p[1]) ||
		   ((p[1] == '+' || p[1] == '-') && is_digit(p[2])))) {
		int neg = 0, x = 0;
		p++;
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		for (; is_digit(*p); p++) {
			x = x * 10 + (*p - '0');
			if (x > 400)
				return DRV_ELIMIT;
		}
		if (*p)
			return DRV_EINVAL;
		e10 += neg ? -x : x;
	} else if (p[1] == 'i' && p[2] == '\0') {
		static const char bins[] = "KMGTPE";
		const char *k = strchr(bins, *p);
		if (!k || !*p)
			return DRV_EINVAL;
		bin = 10 * (int)(k - bins + 1);
	} else if (p[1] == '\0') {
		switch (*p) {
		case 'n': e10 -= 9; break;
		case 'u': e10 -= 6; break;
		case 'm': e10 -= 3; break;
		case 'k': e10 += 3; break;
		case 'M': e10 += 6; break;
		case 'G': e10 += 9; break;
		case 'T': e10 += 12; break;
		case 'P': e10 += 15; break;
		case 'E': e10 += 18; break;
		default: return DRV_EINVAL;
		}
	} else {
		return DRV_EINVAL;
	}
	if (mant == 0) {
		*out = lost ? 1 : 0;
		return 0;
	}
	/* v = mant * scale * 2^bin * 10^e10, rounded up; mant < 1e30 < 2^100 */
	v = mant;
	{
		const i128 cap = (i128)INT64_MAX * 1000000000;
		int i;
		if (v > cap / scale)
			return DRV_ELIMIT;
		v *= scale;
		for (i = 0; i < bin; i++) {
			if (v > cap / 2)
				return DRV_ELIMIT;
			v *= 2;
		}
		for (; e10 > 0; e10--) {
			if (v > cap / 10)
				return DRV_ELIMIT;
			v *= 10;
		}
		for (; e10 < 0 && v > 0; e10++) {
			if (v % 10)
				lost = true;
			v /= 10;
		}
	}
	if (lost)
		v++;
	if (v > INT64_MAX)
		return DRV_ELIMIT;
	*out = (int64_t)v;
	return 0;
}

int drv_quantity_mib(const char *s, int64_t *mib)
{
	int64_t b;
	int rc = drv_quantity_parse(s, 1, &b);
	if (rc)
		return rc;
	*mib = b / (1 << 20) + (b % (1 << 20) ? 1 : 0);
	return 0;
}

/* Reads a non-negative decimal number of at most 9 digits; returns the
 * position after it or NULL. */
static const char *read_num(const char *p, int64_t *v)
{
	int n = 0;
	*v = 0;
	while (is_digit(*p)) {
		if (++n > 9)
			return NULL;
		*v = *v * 10 + (*p++ - '0');
	}
	return n ? p : NULL;
}

int drv_slurm_time_parse(const char *s, int64_t *secs)
{
	int64_t d = 0, part[3];
	int n = 0;
	const char *p = s;
	bool days = false;

	if (!s)
		return DRV_EINVAL;
	if (drv_strcaseeq(s, "UNLIMITED") || drv_strcaseeq(s, "INFINITE")) {
		*secs = 0;
		return 0;
	}
	if (!(p = read_num(p, &part[0])))
		return DRV_EINVAL;
	if (*p == '-') {
		days = true;
		d = part[0];
		if (!(p = read_num(p + 1, &part[0])))
			return DRV_EINVAL;
	}
	n = 1;
	while (*p == ':' && n < 3) {
		if (!(p = read_num(p + 1, &part[n])))
			return DRV_EINVAL;
		n++;
	}
	if (*p)
		return DRV_EINVAL;
	if (days) {
		/* D-HH, D-HH:MM, D-HH:MM:SS */
		*secs = d * 86400 + part[0] * 3600 + (n > 1 ? part[1] * 60 : 0) +
			(n > 2 ? part[2] : 0);
	} else if (n == 1) {
		*secs = part[0] * 60;                       /* MM */
	} else if (n == 2) {
		*secs = part[0] * 60 + part[1];             /* MM:SS */
	} else {
		*secs = part[0] * 3600 + part[1] * 60 + part[2]; /* HH:MM:SS */
	}
	return 0;
}

/* A clock time today (local) at h:m:s, or tomorrow when it has passed. */
static int64_t next_clock(int64_t now, int h, int m, int sec, bool roll, int days)
{
	time_t t = (time_t)now;
	struct tm tm;
	int64_t at;

	localtime_r(&t, &tm);
	tm.tm_mday += days;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	at = (int64_t)mktime(&tm);
	if (roll && at <= now) {
		tm.tm_mday++;
		tm.tm_isdst = -1;
		at = (int64_t)mktime(&tm);
	}
	return at;
}

int drv_slurm_begin_parse(const char *s, int64_t now, int64_t *at)
{
	static const struct {
		const char *name;
		int h;
		bool roll;
		int days;
	} words[] = { { "midnight", 0, false, 1 }, { "noon", 12, true, 0 },
		      { "elevenses", 11, true, 0 }, { "fika", 15, true, 0 },
		      { "teatime", 16, true, 0 }, { "today", 0, false, 0 },
		      { "tomorrow", 0, false, 1 } };
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;

	if (!s || !*s)
		return DRV_EINVAL;
	if (strncasecmp(s, "now", 3) == 0) {
		const char *p = s + 3, *u;
		static const struct {
			const char *unit;
			int64_t secs;
		} units[] = { { "seconds", 1 }, { "minutes", 60 }, { "hours", 3600 },
			      { "days", 86400 }, { "weeks", 604800 } };
		int64_t k = 0, mult = 1;
		size_t ul;

		if (!*p) {
			*at = now;
			return 0;
		}
		if (*p != '+' || !(u = read_num(p + 1, &k)))
			return DRV_EINVAL;
		ul = strlen(u);
		if (ul) {
			mult = 0;
			for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !mult; i++)
				if (ul <= strlen(units[i].unit) && strncasecmp(u, units[i].unit, ul) == 0)
					mult = units[i].secs;
			if (!mult)
				return DRV_EINVAL;
		}
		if (k > INT64_C(100) * 365 * 86400 / mult)
			return DRV_EINVAL;
		*at = now + k * mult;
		return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i].name) == 0) {
			*at = next_clock(now, words[i].h, 0, 0, words[i].roll, words[i].days);
			return 0;
		}
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10) {
		struct tm tm = { 0 };
		int m2 = 0;

		if (s[n] == 'T') {
			if (sscanf(s + n + 1, "%2d:%2d%n", &h, &mi, &m2) != 2)
				return DRV_EINVAL;
			n += 1 + m2;
			if (s[n] == ':') {
				if (sscanf(s + n + 1, "%2d%n", &sec, &m2) != 1)
					return DRV_EINVAL;
				n += 1 + m2;
			}
		}
		if (s[n] || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59)
			return DRV_EINVAL;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		*at = (int64_t)mktime(&tm);
		return 0;
	}
	n = 0;
	if (sscanf(s, "%2d:%2d%n", &h, &mi, &n) == 2) {
		int m2 = 0;

		if (s[n] == ':') {
			if (sscanf(s + n + 1, "%2d%n", &sec, &m2) != 1)
				return DRV_EINVAL;
			n += 1 + m2;
		}
		if (s[n] || h > 23 || mi > 59 || sec > 59 || h < 0 || mi < 0 || sec < 0)
			return DRV_EINVAL;
		*at = next_clock(now, h, mi, sec, true, 0);
		return 0;
	}
	return DRV_EINVAL;
}

void drv_array_release(struct drv_array *a)
{
	drv_free(a->spec);
	drv_free(a->ranges);
	memset(a, 0, sizeof(*a));
}

int drv_array_parse(const char *s, struct drv_array *a)
{
	const char *p = s;
	size_t cap = 0;
	int64_t count = 0;
	int rc = DRV_EINVAL;

	drv_array_release(a);
	if (!s || !*s)
		goto out;
	for (;;) {
		int64_t first, last, step = 1;
		struct drv_array_range *r;
		if (!(p = read_num(p, &first)))
			goto out;
		last = first;
		if (*p == '-') {
			if (!(p = read_num(p + 1, &last)))
				goto out;
			if (*p == ':') {
				if (!(p = read_num(p + 1, &step)) || step == 0)
					goto out;
			}
		}
		if (last < first)
			goto out;
		count += (last - first) / step + 1;
		if (count > DRV_SPEC_MAX_ARRAY || a->nranges >= DRV_SPEC_MAX_ITEMS) {
			rc = DRV_ELIMIT;
			goto out;
		}
		DRV_GROW(a->ranges, (size_t)a->nranges + 1, cap);
		r = &a->ranges[a->nranges++];
		r->first = (int32_t)first;
		r->last = (int32_t)last;
		r->step = (int32_t)step;
		if (*p == ',') {
			p++;
			continue;
		}
		break;
	}
	if (*p == '%') {
		int64_t lim;
		if (!(p = read_num(p + 1, &lim)) || lim == 0)
			goto out;
		a->max_parallel = (int32_t)lim;
	}
	if (*p)
		goto out;
	a->count = (int32_t)count;
	a->spec = drv_strdup(s);
	return 0;
out:
	drv_array_release(a);
	return rc;
}

int32_t drv_array_index(const struct drv_array *a, int32_t k)
{
	for (int32_t i = 0; i < a->nranges; i++) {
		const struct drv_array_range *r = &a->ranges[i];
		int32_t n = (r->last - r->first) / r->step + 1;

		if (k < n)
			return r->first + k * r->step;
		k -= n;
	}
	return -1;
}

int32_t drv_array_min(const struct drv_array *a)
{
	int32_t m = INT32_MAX;

	for (int32_t i = 0; i < a->nranges; i++)
		m = a->ranges[i].first < m ? a->ranges[i].first : m;
	return a->nranges ? m : 0;
}

int32_t drv_array_max(const struct drv_array *a)
{
	int32_t m = 0;

	for (int32_t i = 0; i < a->nranges; i++) {
		const struct drv_array_range *r = &a->ranges[i];
		int32_t last = r->first + (r->last - r->first) / r->step * r->step;

		m = last > m ? last : m;
	}
	return m;
}

int32_t drv_array_step(const struct drv_array *a)
{
	return a->nranges == 1 ? a->ranges[0].step : 1;
}

bool drv_spec_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= DRV_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '/' ||
		      ch == ':' || ch == '@'))
			return false;
	}
	return true;
}
