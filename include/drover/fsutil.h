/*
 * fsutil.h: files and folders, the few things drover does with them in
 * more than one place (layer 0, src/base/fsutil.c; libc only, not for the
 * core, which does no I/O).
 *
 * Errors: 0 or a negative enum drv_err (common.h). On DRV_EIO errno is
 * left as the failing call set it, so the caller can print strerror(errno)
 * in its own words; DRV_ELIMIT sets errno to EFBIG.
 */
#ifndef DROVER_FSUTIL_H
#define DROVER_FSUTIL_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * mkdir -p: creates dir and every missing parent with mode (as mkdir(2):
 * less the umask). A part that exists already is fine. Returns 0,
 * DRV_EINVAL for an empty path or one of PATH_MAX or more, DRV_EIO.
 */
int drv_mkdir_p(const char *dir, mode_t mode);

/*
 * Reads the whole of path ("-": standard input, which is not closed) into
 * a new NUL-terminated buffer; *lenp (when not NULL) gets its length, the
 * NUL not counted. A file longer than max bytes is refused whole. Returns
 * 0 (the caller frees *bufp with drv_free), DRV_ELIMIT, or DRV_EIO (cannot
 * open or read; errno says why). *bufp is NULL on error.
 */
int drv_file_read(const char *path, size_t max, char **bufp, size_t *lenp);

/*
 * Writes path through a temporary name in the same folder, so a reader
 * sees the old file or the new one, never half of one: opens
 * "PATH.tmp.PID" (created with mode, close-on-exec), calls fn(f, arg) to
 * write the content, and renames it over path only when fn returned 0 and
 * the file closed without error. On failure the temporary is removed and
 * path is untouched. Returns 0, fn's own error, or DRV_EIO (errno says why).
 */
int drv_file_write_atomic(const char *path, mode_t mode, int (*fn)(FILE *f, void *arg),
			  void *arg);

/* drv_file_write_atomic, durably: the file is fsync'd before the rename
 * and its folder after, so once this returns 0 the content survives a
 * crash of the machine. */
int drv_file_write_durable(const char *path, mode_t mode, int (*fn)(FILE *f, void *arg),
			   void *arg);

/*
 * write(2) until all n bytes of buf are written, again after EINTR (a
 * blocking fd; a pipe, a pty, a socket). Returns 0, or DRV_EIO when a
 * write fails (errno says why) or writes nothing.
 */
int drv_fd_write_all(int fd, const void *buf, size_t n);

/*
 * Reads a secret (a token) from path, CONTRACTS.md §6: the file must be a
 * regular file that neither group nor others may read or write (mode 0600,
 * 0400 or stricter), else it is refused unread. Trailing whitespace and the
 * final newline are dropped; at most 4 KiB. Returns 0 with *out (free with
 * drv_free), DRV_EPERM for a lax mode, DRV_EINVAL for an empty file or one
 * that is not regular, DRV_ELIMIT, or DRV_EIO (cannot open or read); every
 * error with one line in err that names path (and the mode, for DRV_EPERM).
 */
int drv_secret_file_read(const char *path, char **out, char *err, size_t errsz);

#endif
