/*
 * curl_dl.c: the libcurl functions drover-slurm's library code calls,
 * each loading libcurl (dlopen, DRV_CURL_SONAME: the library the Makefile
 * found, libcurl-gnutls.so.4 on Debian) on first use and calling its own.
 * drover-slurm is linked without -lcurl, so a face that only calls http://
 * URLs (drv_http_client_plain, src/http/http_plain.c) never loads libcurl
 * and its 30 libraries; one that calls https:// loads it then and runs
 * exactly the code drover does (TLS, CA checks, errors).
 *
 * Where libcurl cannot be loaded, curl_easy_init returns NULL and
 * curl_easy_strerror(CURLE_FAILED_INIT) says what the loader said, which
 * http_client.c puts in its "cannot reach drover at URL: ..." line.
 *
 * curl_easy_setopt's third argument is one of five kinds, told by the
 * option's number (CURLOPTTYPE_*: long, object pointer, function pointer,
 * curl_off_t, blob pointer); curl_easy_getinfo's is always a pointer.
 */
/* (curl.h would make curl_easy_setopt a type-checking macro) */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#ifndef DRV_CURL_SONAME
#define DRV_CURL_SONAME "libcurl.so.4"
#endif

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} fn;
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen(DRV_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	void **slot = (void **)&fn;
	static const char *const names[] = {
		"curl_global_init", "curl_easy_init", "curl_easy_cleanup", "curl_easy_reset",
		"curl_easy_perform", "curl_easy_setopt", "curl_easy_getinfo", "curl_easy_strerror",
		"curl_slist_append", "curl_slist_free_all",
	};

	if (!h) {
		snprintf(why, sizeof(why), "https:// needs libcurl, which cannot be loaded (%s)",
			 dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* (POSIX: a function pointer is read through dlsym's void *) */
		slot[i] = dlsym(h, names[i]);
		if (!slot[i]) {
			snprintf(why, sizeof(why), "https:// needs libcurl: %s has no %s",
				 DRV_CURL_SONAME, names[i]);
			fn.easy_init = NULL;
			return;
		}
	}
}

/* Whether libcurl is there (loaded now if it was not). */
static int loaded(void)
{
	pthread_once(&once, load);
	return fn.easy_init != NULL;
}

CURLcode curl_global_init(long flags)
{
	return loaded() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return loaded() ? fn.easy_init() : NULL;
}

/* (a handle exists only once libcurl is loaded: no check below) */
void curl_easy_cleanup(CURL *e)
{
	fn.easy_cleanup(e);
}

void curl_easy_reset(CURL *e)
{
	fn.easy_reset(e);
}

CURLcode curl_easy_perform(CURL *e)
{
	return fn.easy_perform(e);
}

CURLcode curl_easy_setopt(CURL *e, CURLoption opt, ...)
{
	va_list ap;
	CURLcode cc;

	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		cc = fn.easy_setopt(e, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		cc = fn.easy_setopt(e, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		cc = fn.easy_setopt(e, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		cc = fn.easy_setopt(e, opt, va_arg(ap, curl_off_t));
	else
		cc = fn.easy_setopt(e, opt, va_arg(ap, void *));
	va_end(ap);
	return cc;
}

CURLcode curl_easy_getinfo(CURL *e, CURLINFO info, ...)
{
	va_list ap;
	void *p;

	va_start(ap, info);
	p = va_arg(ap, void *);
	va_end(ap);
	return fn.easy_getinfo(e, info, p);
}

const char *curl_easy_strerror(CURLcode cc)
{
	return loaded() ? fn.easy_strerror(cc) : why;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return loaded() ? fn.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
	if (l)
		fn.slist_free_all(l);
}
