/*
 * state_lock.c: one controller per state directory (issue 12). Two
 * controllers writing one SQLite state would each hand out the same job
 * ids and lose the other's jobs, so the first to start holds an exclusive
 * flock(2) on STATE_DIR/lock for as long as it runs and a second refuses
 * to start, naming the holder.
 *
 * The file (mode 0600) holds two lines for a person and for that refusal:
 * "pid PID" and "listen ADDR:PORT" (the address asked for, then the bound
 * port once the HTTP server is up). The lock, not the file, says who
 * holds the directory: a controller killed with SIGKILL leaves the file
 * behind but its lock dies with it, and the next one starts. The fd is
 * close-on-exec, so no task or helper inherits the lock.
 */
#include "server_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* Writes the two lines over whatever a previous holder left; logs a
 * failure (the lock holds all the same). */
static void lock_write(struct drv_server *s, int fd, const char *listen)
{
	char buf[400];
	int n = snprintf(buf, sizeof(buf), "pid %ld\nlisten %.300s\n", (long)getpid(), listen);

	/* new content first, then the cut: a reader never sees an empty file */
	if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
		drv_log(&s->log, "cannot write %s/lock: %s", s->state_dir, strerror(errno));
}

/* The holder's pid and address into err; it may be between taking the
 * lock and writing the file, so an empty file is read again for a second. */
static void holder_busy(int fd, const char *dir, char *err, size_t errsz)
{
	char buf[400], addr[300] = "";
	long pid = 0;
	ssize_t n = 0;

	for (int i = 0; i < 100; i++) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "pid %ld listen %299s", &pid, addr) >= 1 && pid > 0)
		snprintf(err, errsz, "state directory %s is in use by pid %ld (listening on %s)", dir,
			 pid, addr[0] ? addr : "an address not yet written");
	else
		snprintf(err, errsz, "state directory %s is in use by another drover (see %s/lock)",
			 dir, dir);
}

int srv_state_lock(struct drv_server *s, const char *listen, char *err, size_t errsz)
{
	const char *dir = s->state_dir;
	char path[1200];
	int fd;

	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errsz, "cannot open %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e == EWOULDBLOCK)
			holder_busy(fd, dir, err, errsz);
		else
			snprintf(err, errsz, "cannot lock %s: %s", path, strerror(e));
		close(fd);
		return e == EWOULDBLOCK ? DRV_ESTATE : DRV_EIO;
	}
	lock_write(s, fd, listen);
	s->lock_fd = fd;
	return 0;
}

void srv_state_lock_listening(struct drv_server *s, const char *addr)
{
	if (s->lock_fd >= 0)
		lock_write(s, s->lock_fd, addr);
}

void srv_state_unlock(struct drv_server *s)
{
	if (s->lock_fd < 0)
		return;
	/* a clean stop leaves an empty file: nobody is named as running */
	if (ftruncate(s->lock_fd, 0) != 0)
		drv_log(&s->log, "cannot empty %s/lock: %s", s->state_dir, strerror(errno));
	close(s->lock_fd); /* the lock goes with the last fd of its open file */
	s->lock_fd = -1;
}
