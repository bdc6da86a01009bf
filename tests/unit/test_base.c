/*
 * test_base.c: layer 0 (src/base/): the capped dynbuf (growth, the cap
 * leaves the buffer as it was), the whole-file reader (cap, missing file),
 * mkdir -p, the atomic writer, the write-everything loop, the clocks (and a pthread deadline), RFC
 * 3339 both ways, the log line, and the JSON getters (missing key, wrong
 * type).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drover/clock.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/fsutil.h"
#include "drover/json.h"
#include "drover/log.h"

/* --- dynbuf ------------------------------------------------------------ */

Test(dynbuf, grows_and_stays_terminated)
{
	struct drv_dynbuf b;
	size_t len;
	char *s;

	drv_dynbuf_init(&b, 1 << 20);
	cr_assert(eq(str, (char *)drv_dynbuf_str(&b), ""));
	for (int i = 0; i < 1000; i++)
		cr_assert(eq(int, drv_dynbuf_addstr(&b, "0123456789"), 0));
	cr_assert(eq(sz, drv_dynbuf_len(&b), 10000));
	cr_assert(eq(sz, strlen(drv_dynbuf_str(&b)), 10000));
	cr_assert(ge(sz, b.cap, 10001));
	cr_assert(eq(int, drv_dynbuf_addf(&b, "-%d-", 42), 0));
	cr_assert(eq(str, (char *)drv_dynbuf_str(&b) + 10000, "-42-"));
	drv_dynbuf_trim(&b, 4);
	cr_assert(eq(sz, drv_dynbuf_len(&b), 10000));
	s = drv_dynbuf_take(&b, &len);
	cr_assert(eq(sz, len, 10000));
	cr_assert(eq(sz, drv_dynbuf_len(&b), 0));
	cr_assert(eq(sz, b.max, 1 << 20));
	drv_free(s);
	s = drv_dynbuf_take(&b, NULL); /* empty: "" and not NULL */
	cr_assert(eq(str, s, ""));
	drv_free(s);
}

Test(dynbuf, cap_refuses_and_keeps_content)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(8);

	cr_assert(eq(int, drv_dynbuf_addstr(&b, "abcde"), 0));
	cr_assert(eq(int, drv_dynbuf_addstr(&b, "fghi"), DRV_ELIMIT));
	cr_assert(eq(str, (char *)drv_dynbuf_str(&b), "abcde"));
	cr_assert(eq(int, drv_dynbuf_addf(&b, "%s", "xyzw"), DRV_ELIMIT));
	cr_assert(eq(str, (char *)drv_dynbuf_str(&b), "abcde"));
	cr_assert(eq(int, drv_dynbuf_addstr(&b, "fgh"), 0)); /* exactly max */
	cr_assert(eq(sz, drv_dynbuf_len(&b), 8));
	cr_assert(eq(int, drv_dynbuf_add(&b, "", 0), 0));
	cr_assert(eq(int, drv_dynbuf_add(&b, "x", 1), DRV_ELIMIT));
	cr_assert(eq(int, drv_dynbuf_add(&b, "x", (size_t)-1), DRV_ELIMIT)); /* no overflow */
	drv_dynbuf_reset(&b);
	cr_assert(eq(str, (char *)drv_dynbuf_str(&b), ""));
	cr_assert(eq(int, drv_dynbuf_addstr(&b, "12345678"), 0));
	drv_dynbuf_release(&b);
	cr_assert(eq(int, drv_dynbuf_addstr(&b, "again"), 0));
	drv_dynbuf_release(&b);
}

/* --- files -------------------------------------------------------------- */

static char dir[64];

static void mkscratch(void)
{
	snprintf(dir, sizeof(dir), "/tmp/drv-test-base.XXXXXX");
	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(not(eq(ptr, f, NULL)));
	fputs(text, f);
	fclose(f);
}

Test(fsutil, read_whole_file_under_cap)
{
	char path[128], *buf = (char *)"x";
	size_t len = 0;

	mkscratch();
	snprintf(path, sizeof(path), "%s/f", dir);
	put(path, "hello\n");
	cr_assert(eq(int, drv_file_read(path, 6, &buf, &len), 0));
	cr_assert(eq(str, buf, "hello\n"));
	cr_assert(eq(sz, len, 6));
	drv_free(buf);
	cr_assert(eq(int, drv_file_read(path, 5, &buf, &len), DRV_ELIMIT));
	cr_assert(eq(ptr, buf, NULL));
	cr_assert(eq(int, errno, EFBIG));
	put(path, "");
	cr_assert(eq(int, drv_file_read(path, 5, &buf, NULL), 0));
	cr_assert(eq(str, buf, ""));
	drv_free(buf);
	unlink(path);
	rmdir(dir);
}

Test(fsutil, secret_file_owner_only)
{
	char path[128], err[256], *tok = (char *)"x";

	mkscratch();
	snprintf(path, sizeof(path), "%s/token", dir);
	put(path, "s3cret \n");
	chmod(path, 0600);
	cr_assert(eq(int, drv_secret_file_read(path, &tok, err, sizeof(err)), 0));
	cr_assert(eq(str, tok, "s3cret")); /* trailing whitespace dropped */
	drv_free(tok);
	chmod(path, 0400);
	cr_assert(eq(int, drv_secret_file_read(path, &tok, err, sizeof(err)), 0));
	drv_free(tok);
	chmod(path, 0640);
	cr_assert(eq(int, drv_secret_file_read(path, &tok, err, sizeof(err)), DRV_EPERM));
	cr_assert(eq(ptr, tok, NULL));
	cr_assert(not(eq(ptr, strstr(err, "has mode 0640"), NULL)), "%s", err);
	chmod(path, 0600);
	put(path, "\n");
	cr_assert(eq(int, drv_secret_file_read(path, &tok, err, sizeof(err)), DRV_EINVAL));
	unlink(path);
	cr_assert(eq(int, drv_secret_file_read(path, &tok, err, sizeof(err)), DRV_EIO));
	cr_assert(eq(int, drv_secret_file_read(dir, &tok, err, sizeof(err)), DRV_EINVAL));
	rmdir(dir);
}

Test(fsutil, read_missing_file)
{
	char *buf;

	cr_assert(eq(int, drv_file_read("/nonexistent/drover/x", 100, &buf, NULL), DRV_EIO));
	cr_assert(eq(int, errno, ENOENT));
	cr_assert(eq(ptr, buf, NULL));
}

Test(fsutil, mkdir_p_makes_parents)
{
	char path[128];
	struct stat st;

	mkscratch();
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	cr_assert(eq(int, drv_mkdir_p(path, 0700), 0));
	cr_assert(eq(int, stat(path, &st), 0));
	cr_assert(eq(int, S_ISDIR(st.st_mode) ? 1 : 0, 1));
	cr_assert(eq(int, drv_mkdir_p(path, 0700), 0)); /* exists: fine */
	cr_assert(eq(int, drv_mkdir_p("", 0700), DRV_EINVAL));
	snprintf(path, sizeof(path), "%s/f", dir);
	put(path, "x");
	snprintf(path, sizeof(path), "%s/f/g", dir);
	cr_assert(eq(int, drv_mkdir_p(path, 0700), DRV_EIO)); /* under a file */
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	cr_assert(eq(int, system(path), 0));
}

static int write_hello(FILE *f, void *arg)
{
	fputs(arg, f);
	return 0;
}

static int write_fail(FILE *f, void *arg)
{
	fputs("half", f);
	return DRV_EINVAL;
}

Test(fsutil, write_atomic_replaces_or_keeps)
{
	char path[128], tmp[160], *buf;
	struct stat st;

	mkscratch();
	snprintf(path, sizeof(path), "%s/out", dir);
	cr_assert(eq(int, drv_file_write_atomic(path, 0600, write_hello, "one"), 0));
	cr_assert(eq(int, stat(path, &st), 0));
	cr_assert(eq(int, st.st_mode & 0777, 0600));
	cr_assert(eq(int, drv_file_write_atomic(path, 0600, write_fail, NULL), DRV_EINVAL));
	cr_assert(eq(int, drv_file_read(path, 100, &buf, NULL), 0));
	cr_assert(eq(str, buf, "one"));
	drv_free(buf);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	cr_assert(eq(int, access(tmp, F_OK), -1)); /* the temporary is gone */
	snprintf(tmp, sizeof(tmp), "%s/nodir/out", dir);
	cr_assert(eq(int, drv_file_write_atomic(tmp, 0600, write_hello, "x"), DRV_EIO));
	unlink(path);
	rmdir(dir);
}

/* --- clock -------------------------------------------------------------- */

/* All of a write larger than a pipe's buffer arrives, read meanwhile by a
 * child that sends back its count and sum; a pipe whose reader is gone is
 * DRV_EIO with errno EPIPE. */
Test(fsutil, fd_write_all_writes_everything_or_says_eio)
{
	enum { N = 256 * 1024 };
	char *buf = malloc(N);
	unsigned long long want = 0, got[2] = { 0, 0 };
	int fds[2], back[2];
	pid_t pid;

	for (size_t i = 0; i < N; i++) {
		buf[i] = (char)(i * 7 + 3);
		want += (unsigned char)buf[i];
	}
	cr_assert(eq(int, pipe(fds), 0));
	cr_assert(eq(int, pipe(back), 0));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		unsigned long long r[2] = { 0, 0 };
		unsigned char b[4096];
		ssize_t k;

		close(fds[1]);
		close(back[0]);
		while ((k = read(fds[0], b, sizeof(b))) > 0) {
			r[0] += (unsigned long long)k;
			for (ssize_t i = 0; i < k; i++)
				r[1] += b[i];
		}
		_exit(drv_fd_write_all(back[1], r, sizeof(r)) == 0 ? 0 : 1);
	}
	close(fds[0]);
	close(back[1]);
	cr_assert(eq(int, drv_fd_write_all(fds[1], buf, N), 0));
	close(fds[1]);
	cr_assert(eq(long, (long)read(back[0], got, sizeof(got)), (long)sizeof(got)));
	close(back[0]);
	waitpid(pid, NULL, 0);
	cr_assert(eq(u64, got[0], (unsigned long long)N));
	cr_assert(eq(u64, got[1], want));

	signal(SIGPIPE, SIG_IGN);
	cr_assert(eq(int, pipe(fds), 0));
	close(fds[0]);
	cr_assert(eq(int, drv_fd_write_all(fds[1], buf, 10), DRV_EIO));
	cr_assert(eq(int, errno, EPIPE));
	close(fds[1]);
	free(buf);
}

Test(clock, monotonic_agrees_and_moves_forward)
{
	int64_t ms = drv_mono_ms(), us = drv_mono_us();
	double s = drv_mono_s();

	cr_assert(le(int, ms, us / 1000 + 1));
	cr_assert(le(dbl, (double)us / 1e6 - 1, s));
	usleep(2000);
	cr_assert(ge(int, drv_mono_us() - us, 2000));
	cr_assert(ge(int, drv_mono_ms(), ms + 2));
	cr_assert(gt(int, drv_wall_s(), 1700000000));
}

/* ms from a to b, rounded down */
static int64_t ts_diff_ms(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

Test(clock, realtime_deadline_is_normalized)
{
	struct timespec before, d, after;

	/* bounded by clock readings on both sides of the call, so that a
	 * preempted test (a loaded CI machine) cannot fail it */
	for (int64_t ms = 0; ms < 3000; ms += 999) {
		clock_gettime(CLOCK_REALTIME, &before);
		d = drv_realtime_after_ms(ms);
		clock_gettime(CLOCK_REALTIME, &after);
		cr_assert(lt(long, d.tv_nsec, 1000000000L));
		cr_assert(ge(long, d.tv_nsec, 0L));
		cr_assert(ge(i64, ts_diff_ms(&before, &d), ms - 1));
		cr_assert(le(i64, ts_diff_ms(&after, &d), ms + 1));
	}
}

Test(clock, rfc3339_both_ways)
{
	char b[DRV_RFC3339_LEN];
	int64_t t;

	cr_assert(eq(str, drv_rfc3339(0, b, sizeof(b)), "1970-01-01T00:00:00Z"));
	cr_assert(eq(str, drv_rfc3339(1795914123, b, sizeof(b)), "2026-11-29T01:02:03Z"));
	cr_assert(eq(int, drv_rfc3339_parse(b, &t), 0));
	cr_assert(eq(i64, t, 1795914123));
	cr_assert(eq(int, drv_rfc3339_parse("2026-11-29 01:02:03.75Z", &t), 0));
	cr_assert(eq(i64, t, 1795914123));
	cr_assert(eq(int, drv_rfc3339_parse("2026-11-29T03:32:03+02:30", &t), 0));
	cr_assert(eq(i64, t, 1795914123));
	cr_assert(eq(int, drv_rfc3339_parse("2026-11-28T23:02:03-02:00", &t), 0));
	cr_assert(eq(i64, t, 1795914123));
	cr_assert(eq(int, drv_rfc3339_parse("yesterday", &t), DRV_EPARSE));
	cr_assert(eq(i64, t, 0));
	cr_assert(eq(str, drv_rfc3339(0, b, 5), "")); /* too small: empty */
}

/* --- log ---------------------------------------------------------------- */

Test(log, one_line_with_prefix_and_time)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	struct drv_log lg = { f, "drover test", 0 };

	drv_log(&lg, "hello %d", 7);
	lg.flags = DRV_LOG_QUIET;
	drv_log(&lg, "dropped");
	lg.flags = DRV_LOG_TIME;
	drv_log(&lg, "stamped");
	fclose(f);
	cr_assert(eq(int, strncmp(text, "drover test: hello 7\n", 21), 0));
	cr_assert(eq(int, text[21 + 4], '-'));
	cr_assert(eq(str, text + 21 + DRV_RFC3339_LEN, "drover test: stamped\n"));
	free(text);
}

/* --- JSON getters ------------------------------------------------------- */

Test(json, getters_missing_and_wrong_type)
{
	json_t *o = json_pack("{s:s,s:I,s:f,s:b,s:n,s:s,s:I,s:s,s:s}", "s", "text", "i",
			      (json_int_t)42, "r", 2.5, "b", 1, "z", "t", "2026-11-29T01:02:03Z", "ti",
			      (json_int_t)99, "si", "-12", "sx", "12x");
	char buf[8];

	cr_assert(eq(str, (char *)drv_json_str(o, "s"), "text"));
	cr_assert(eq(ptr, (void *)drv_json_str(o, "i"), NULL)); /* wrong type */
	cr_assert(eq(ptr, (void *)drv_json_str(o, "nope"), NULL));
	cr_assert(eq(ptr, (void *)drv_json_str(NULL, "s"), NULL));
	cr_assert(eq(i64, drv_json_int(o, "i", -1), 42));
	cr_assert(eq(i64, drv_json_int(o, "r", -1), 2));
	cr_assert(eq(i64, drv_json_int(o, "s", -1), -1));
	cr_assert(eq(i64, drv_json_int(o, "si", -1), -12)); /* a whole decimal string */
	cr_assert(eq(i64, drv_json_int(o, "sx", -1), -1));
	cr_assert(eq(i64, drv_json_int(o, "nope", -1), -1));
	cr_assert(eq(dbl, drv_json_num(o, "r", 0), 2.5));
	cr_assert(eq(dbl, drv_json_num(o, "b", 7), 7));
	cr_assert(eq(int, drv_json_bool(o, "b", 0), 1));
	cr_assert(eq(int, drv_json_bool(o, "i", -1), -1));
	cr_assert(eq(str, (char *)drv_json_text(o, "i", buf, sizeof(buf)), "42"));
	cr_assert(eq(str, (char *)drv_json_text(o, "r", buf, sizeof(buf)), "2.5"));
	cr_assert(eq(str, (char *)drv_json_text(o, "b", buf, sizeof(buf)), "true"));
	cr_assert(eq(str, (char *)drv_json_text(o, "z", buf, sizeof(buf)), ""));
	cr_assert(eq(str, (char *)drv_json_text(o, "nope", buf, sizeof(buf)), ""));
	cr_assert(eq(str, (char *)drv_json_text(o, "t", buf, sizeof(buf)), "2026-11"));
	cr_assert(eq(i64, drv_json_time(o, "t"), 1795914123));
	cr_assert(eq(i64, drv_json_time(o, "ti"), 99));
	cr_assert(eq(i64, drv_json_time(o, "s"), 0));
	cr_assert(eq(i64, drv_json_time(o, "b"), 0));
	cr_assert(eq(i64, drv_json_time(o, "nope"), 0));
	json_decref(o);
}
