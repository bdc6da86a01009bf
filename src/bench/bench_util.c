/*
 * bench_util.c: small helpers the benchmarks share (bench_int.h), and the
 * --placement choices every command line shares (bench.h).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_int.h"
#include "drover/bench.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/model.h"

const struct drv_opt_choice drv_place_choices[] = {
	{ "bestfit", DRV_PLACE_BESTFIT }, { "best-fit", DRV_PLACE_BESTFIT },
	{ "fgd", DRV_PLACE_FGD }, { "multi", DRV_PLACE_MULTI }, { NULL, 0 },
};

int bench_free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(s, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

pid_t bench_spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setpgid(0, 0);
		if (fd >= 0)
			dup2(fd, 1), dup2(fd, 2);
		if (null >= 0)
			dup2(null, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

double bench_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_proc_counts(pid_t pid, struct bench_counts *c)
{
	char path[64], line[256];
	struct dirent *de;
	FILE *f;
	DIR *d;

	c->threads = c->fds = c->rss_kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			c->threads = strtol(line + 8, NULL, 10);
		else if (!strncmp(line, "VmRSS:", 6))
			c->rss_kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	c->fds = 0;
	while ((de = readdir(d)))
		c->fds += de->d_name[0] != '.';
	closedir(d);
}

void bench_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void bench_remove_tree(const char *dir)
{
	char *argv[] = { "/bin/rm", "-rf", (char *)dir, NULL };
	pid_t pid = bench_spawn(argv, "/dev/null");

	if (pid > 0)
		waitpid(pid, NULL, 0);
}

void bench_child_output(const char *log)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
}

long long bench_cpu_ticks(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* after "pid (comm)": state is field 3, utime 14, stime 15 */
	for (int i = 2; p && i < 14; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

PGconn *bench_pg_connect(const char *url, const char *pw_file, char *err, size_t errsz)
{
	const char *keys[] = { "dbname", "password", NULL }, *vals[] = { url, NULL, NULL };
	char *pw = NULL;
	PGconn *c;

	if (pw_file && drv_secret_file_read(pw_file, &pw, err, errsz) < 0)
		return NULL;
	vals[1] = pw;
	if (!pw)
		keys[1] = NULL;
	c = PQconnectdbParams(keys, vals, 1);
	drv_free(pw);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errsz, "%s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}
