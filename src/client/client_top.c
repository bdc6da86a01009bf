/*
 * client_top.c: 'drover top', a live terminal view of the cluster: the GPU
 * totals, one bar per node (allocated GPUs, utilisation and memory from the
 * agents' GPU health), and the queue, redrawn every --delay seconds until
 * Ctrl-C or, with -n N, after N frames. When stdout is not a terminal it
 * prints the frames one after another without escape codes, so it can be
 * piped or tested.
 */
#include "client_int.h"

#include "drover/clock.h"
#include "drover/common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SMALL 256

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void bar(char *buf, size_t n, long long used, long long total, int width)
{
	int k, fill = total > 0 ? (int)((used * width + total - 1) / total) : 0;

	if (fill > width)
		fill = width;
	if ((size_t)width + 3 > n)
		width = (int)n - 3;
	buf[0] = '[';
	for (k = 0; k < width; k++)
		buf[1 + k] = k < fill ? '#' : '.';
	buf[1 + width] = ']';
	buf[2 + width] = '\0';
}

/* The first lines: GPUs, nodes and jobs by state from /v1/cluster. */
static void print_summary(FILE *f, struct drv_client_reply *rc_, int have_c, const char *err)
{
	const json_t *g, *nd, *jb, *x;
	const char *key;
	long long total, alloc;
	size_t k = 0;
	char gb[64], b[512];

	if (!have_c) {
		char *m = rc_->body ? drv_client_reply_error(rc_) : drv_strdup(err);
		fprintf(f, "(cluster summary unavailable: %s)\n", m);
		drv_free(m);
		return;
	}
	g = json_object_get(rc_->json, "gpus");
	nd = json_object_get(rc_->json, "nodes");
	jb = json_object_get(rc_->json, "jobs");
	total = drv_json_int(g, "total", 0);
	alloc = drv_json_int(g, "allocated", 0);
	bar(gb, sizeof(gb), alloc, total, 40);
	fprintf(f, "GPUs   %s %lld/%lld allocated, %lld free, %lld unavailable\n", gb, alloc,
		total, (long long)drv_json_int(g, "free", 0),
		(long long)drv_json_int(g, "unavailable", 0));
	fprintf(f, "Nodes  %lld up, %lld draining, %lld down\n",
		(long long)drv_json_int(nd, "up", 0),
		(long long)drv_json_int(nd, "draining", 0),
		(long long)drv_json_int(nd, "down", 0));
	b[0] = '\0';
	json_object_foreach((json_t *)jb, key, x) if (k + 40 < sizeof(b)) k +=
		snprintf(b + k, sizeof(b) - k, "%s%s %lld", k ? ", " : "", key,
			 (long long)drv_json_int(jb, key, 0));
	fprintf(f, "Jobs   %s\n", b[0] ? b : "none");
}

/* One node: its GPUs as a bar, mean utilisation, memory used, its jobs. */
static void print_node_row(FILE *f, const json_t *x)
{
	char name[SMALL], state[32], model[SMALL], gb[64], jobs[SMALL] = "";
	const json_t *h = json_object_get(x, "gpu_health"), *gh, *jl;
	long long util = 0, mem = 0, n = 0;
	size_t j, k = 0;

	json_array_foreach(h, j, gh) {
		util += drv_json_int(gh, "utilization", 0);
		mem += drv_json_int(gh, "memory_used_mib", 0);
		n++;
	}
	jl = json_object_get(x, "jobs");
	json_array_foreach(jl, j, gh)
		if (k + 24 < sizeof(jobs))
			k += snprintf(jobs + k, sizeof(jobs) - k, k ? ",%lld" : "%lld",
				      (long long)json_integer_value(gh));
	bar(gb, sizeof(gb), drv_json_int(x, "gpus_allocated", 0), drv_json_int(x, "gpus", 0), 8);
	snprintf(gb + strlen(gb), sizeof(gb) - strlen(gb), " %lld/%lld",
		 (long long)drv_json_int(x, "gpus_allocated", 0),
		 (long long)drv_json_int(x, "gpus", 0));
	fprintf(f, "%-16s %-9s %-18s %-12s %4lld%% %7.1f  %s\n",
		drv_json_text(x, "name", name, sizeof(name)),
		drv_json_text(x, "state", state, sizeof(state)), gb,
		drv_json_text(x, "model", model, sizeof(model)), n ? util / n : 0,
		(double)mem / 1024.0, jobs[0] ? jobs : "-");
}

static void print_nodes(FILE *f, const json_t *items)
{
	const json_t *x;
	size_t i;

	fprintf(f, "%-16s %-9s %-18s %-12s %5s %7s  %s\n", "NODE", "STATE", "GPUS", "MODEL",
		"UTIL", "MEM(G)", "JOBS");
	json_array_foreach(items, i, x)
		print_node_row(f, x);
	if (!items)
		fprintf(f, "(nodes unavailable)\n");
}

/* One unfinished job, squeue-like: the node list, or the reason it waits. */
static void print_job_row(FILE *f, const json_t *x, time_t now)
{
	char id[32], name[SMALL], user[SMALL], state[32], tm_[32], rn_[512], nodes[SMALL], b[512];

	drv_json_text(x, "state", state, sizeof(state));
	drv_json_text(x, "nodelist", nodes, sizeof(nodes));
	if (!strcmp(state, "pending"))
		snprintf(rn_, sizeof(rn_), "(%s)", drv_json_text(x, "reason", b, sizeof(b)));
	else
		snprintf(rn_, sizeof(rn_), "%s", nodes);
	fprintf(f, "%-8s %-20.20s %-10.10s %-10s %10s %5lld  %s\n",
		drv_json_text(x, "id", id, sizeof(id)), drv_json_text(x, "name", name, sizeof(name)),
		drv_json_text(x, "user", user, sizeof(user)), state,
		drv_fmt_duration(job_elapsed(x, (long long)now), tm_, sizeof(tm_)), job_gpus(x),
		rn_);
}

/* The first page of the queue (max_jobs items) and its total. */
static void print_queue(FILE *f, const json_t *page, int max_jobs, time_t now)
{
	const json_t *items = page ? cli_items(page) : NULL, *x;
	long long total = page ? drv_json_int(page, "total", 0) : 0;
	size_t i;

	fprintf(f, "%-8s %-20s %-10s %-10s %10s %5s  %s\n", "ID", "NAME", "USER", "STATE", "TIME",
		"GPUS", "NODELIST(REASON)");
	json_array_foreach(items, i, x) {
		if ((int)i >= max_jobs)
			break;
		print_job_row(f, x, now);
	}
	if (items && total > (long long)DRV_MIN(json_array_size(items), (size_t)max_jobs))
		fprintf(f, "... and %lld more\n",
			total - (long long)DRV_MIN(json_array_size(items), (size_t)max_jobs));
	if (!items)
		fprintf(f, "(queue unavailable)\n");
	else if (!json_array_size(items))
		fprintf(f, "(no unfinished jobs)\n");
}

/* One frame: three GETs (cluster, nodes, queue), each shown or said missing. */
static void frame(struct cli *cli, FILE *f, int tty, int max_jobs)
{
	struct drv_client_reply rc_, rn, rq;
	char err[512], b[64], qpath[64];
	int have_c, have_n, have_q;
	time_t now = time(NULL);

	have_c = !drv_client_call(cli->client, "GET", "/v1/cluster", NULL, NULL, 0, 5000, &rc_,
				  err, sizeof(err)) && rc_.status == 200;
	if (!have_c && rc_.body == NULL) {
		if (tty)
			fputs("\033[H\033[2J", f);
		fprintf(f, "drover top: %s\n", err);
		fflush(f);
		return;
	}
	have_n = !drv_client_call(cli->client, "GET", "/v1/nodes", NULL, NULL, 0, 5000, &rn, err,
				  sizeof(err)) && rn.status == 200;
	snprintf(qpath, sizeof(qpath), "/v1/queue?limit=%d", DRV_MAX(1, DRV_MIN(max_jobs, 10000)));
	have_q = !drv_client_call(cli->client, "GET", qpath, NULL, NULL, 0, 5000, &rq, err,
				  sizeof(err)) && rq.status == 200;
	if (tty)
		fputs("\033[H\033[2J", f);
	drv_rfc3339((int64_t)now, b, sizeof(b));
	fprintf(f, "drover top  %s  %s\n", drv_client_server(cli->client), b);
	print_summary(f, &rc_, have_c, err);
	fputc('\n', f);
	print_nodes(f, have_n ? cli_items(rn.json) : NULL);
	fputc('\n', f);
	print_queue(f, have_q ? rq.json : NULL, max_jobs, now);
	if (!tty)
		fputs("\n", f);
	fflush(f);
	if (rc_.body)
		drv_client_reply_release(&rc_);
	if (rn.body)
		drv_client_reply_release(&rn);
	if (rq.body)
		drv_client_reply_release(&rq);
}

int drv_client_cmd_top(int argc, char **argv)
{
	double delay = 2;
	int iters = -1;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_DOUBLE('d', "delay", &delay, 0, 3600, "SECONDS",
			       "redraw every SECONDS (default 2)", .flags = DRV_OPTF_MIN_EXCL,
			       .expect = "seconds, more than 0, at most 3600"),
		DRV_OPT_INT('n', "iterations", &iters, 1, INT32_MAX, "N",
			    "stop after N frames (default: at Ctrl-C)",
			    .expect = "a positive count"),
		DRV_OPT_GROUP("server"),
		CLI_OUTPUT_OPT(&cli, DRV_OPTF_HIDDEN),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover top",
		.usage = "drover top [-d|--delay SECONDS] [-n|--iterations N] [--server URL] "
			 "[--token-file FILE]",
		.about = "A live view of GPUs, nodes and the queue, redrawn until Ctrl-C; frames "
			 "follow one another without escape codes when stdout is not a terminal.",
		.options = table,
	};
	int code = 0, tty, k;
	struct sigaction sa;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if ((code = cli_connect(&cli)))
		return code;
	/* Fail fast, with the human error, when the server is not there. */
	{
		struct drv_client_reply r;
		code = cli_call(&cli, "GET", "/v1/whoami", NULL, NULL, 0, &r);
		if (code)
			goto out;
		drv_client_reply_release(&r);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tty = isatty(STDOUT_FILENO);
	if (tty)
		fputs("\033[?25l", stdout); /* hide the cursor while drawing */
	for (k = 0; !stop && (iters < 0 || k < iters); k++) {
		struct timespec ts;
		frame(&cli, stdout, tty, 30);
		if (iters >= 0 && k + 1 >= iters)
			break;
		ts.tv_sec = (time_t)delay;
		ts.tv_nsec = (long)((delay - (double)ts.tv_sec) * 1e9);
		while (!stop && nanosleep(&ts, &ts))
			;
	}
	if (tty)
		fputs("\033[?25h", stdout);
out:
	cli_release(&cli);
	return code;
}
