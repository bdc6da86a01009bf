/*
 * fsutil.c: layer 0, libc only: mkdir -p, reading a whole file under a
 * cap, writing a file through a temporary name, reading a secret from a
 * file only its owner may read (include/drover/fsutil.h).
 */
#include "drover/fsutil.h"

#include "drover/common.h"
#include "drover/dynbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int drv_mkdir_p(const char *dir, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(buf))
		return DRV_EINVAL;
	memcpy(buf, dir, n + 1);
	/* every prefix that ends before a '/', then the whole path */
	for (size_t i = 1; i <= n; i++) {
		char c = buf[i];

		if (c != '/' && c != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return DRV_EIO;
		buf[i] = c;
	}
	return 0;
}

/* Reads f to its end into b; DRV_ELIMIT past b's max, DRV_EIO. */
static int read_stream(FILE *f, struct drv_dynbuf *b)
{
	char chunk[65536];
	size_t got;

	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (drv_dynbuf_add(b, chunk, got) < 0) {
			errno = EFBIG;
			return DRV_ELIMIT;
		}
	return ferror(f) ? DRV_EIO : 0;
}

int drv_file_read(const char *path, size_t max, char **bufp, size_t *lenp)
{
	bool std = strcmp(path, "-") == 0;
	FILE *f = std ? stdin : fopen(path, "rb");
	struct drv_dynbuf b = DRV_DYNBUF_INIT(max);
	int rc, saved;

	*bufp = NULL;
	if (!f)
		return DRV_EIO;
	rc = read_stream(f, &b);
	saved = errno;
	if (!std)
		fclose(f);
	if (rc) {
		drv_dynbuf_release(&b);
		errno = saved;
		return rc;
	}
	*bufp = drv_dynbuf_take(&b, lenp);
	return 0;
}

/* fsyncs path's folder, so that a rename into it is durable. */
static int sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? drv_strndup(path, slash == path ? 1 : (size_t)(slash - path))
			  : drv_strdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	drv_free(dir);
	if (fd < 0 || fsync(fd) != 0)
		rc = DRV_EIO;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Closes f after fn wrote it (fsync'd first when durable); renames tmp
 * over path when all went well. */
static int finish(FILE *f, int rc, const char *tmp, const char *path, bool durable)
{
	int saved;

	if (durable && !rc && (fflush(f) != 0 || fsync(fileno(f)) != 0))
		rc = DRV_EIO;
	if (fclose(f) != 0 && !rc)
		rc = DRV_EIO;
	if (!rc && rename(tmp, path) != 0)
		rc = DRV_EIO;
	if (!rc && durable)
		rc = sync_dir_of(path);
	if (rc) {
		saved = errno;
		unlink(tmp);
		errno = saved;
	}
	return rc;
}

static int write_atomic(const char *path, mode_t mode, int (*fn)(FILE *f, void *arg), void *arg,
			bool durable)
{
	size_t n = strlen(path) + 32;
	char *tmp = drv_malloc(n);
	FILE *f = NULL;
	int fd, rc = DRV_EIO;

	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd >= 0)
		f = fdopen(fd, "w");
	if (!f) {
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		goto out;
	}
	rc = finish(f, fn(f, arg), tmp, path, durable);
out:
	drv_free(tmp);
	return rc;
}

int drv_file_write_atomic(const char *path, mode_t mode, int (*fn)(FILE *f, void *arg),
			  void *arg)
{
	return write_atomic(path, mode, fn, arg, false);
}

int drv_file_write_durable(const char *path, mode_t mode, int (*fn)(FILE *f, void *arg),
			   void *arg)
{
	return write_atomic(path, mode, fn, arg, true);
}

/* The checks on an open secret file: regular, owner-only. */
static int secret_mode_ok(int fd, const char *path, char *err, size_t errsz)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errsz, "%s: not a regular file", path);
		return DRV_EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errsz, "%s has mode %04o; a token file must be 0600 or stricter "
			 "(chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), path);
		return DRV_EPERM;
	}
	return 0;
}

int drv_secret_file_read(const char *path, char **out, char *err, size_t errsz)
{
	char buf[4097];
	ssize_t n;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	rc = secret_mode_ok(fd, path, err, errsz);
	n = rc ? 0 : read(fd, buf, sizeof(buf));
	close(fd);
	if (rc)
		return rc;
	if (n < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	if (n == (ssize_t)sizeof(buf)) {
		snprintf(err, errsz, "%s: longer than 4096 bytes, expected one token", path);
		return DRV_ELIMIT;
	}
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
		n--;
	if (n == 0 || memchr(buf, '\0', (size_t)n)) {
		snprintf(err, errsz, "%s: %s, expected one token", path, n ? "has a NUL byte" : "empty");
		return DRV_EINVAL;
	}
	*out = drv_strndup(buf, (size_t)n);
	return 0;
}

int drv_fd_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return DRV_EIO;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}
