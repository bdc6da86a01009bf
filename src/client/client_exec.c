/*
 * client_exec.c: 'drover exec JOB [--task N] [-i] [-t] -- CMD ARG...', a
 * command in a running task of a job, as kubectl exec is in a pod: the
 * server's GET /v1/jobs/ID/exec WebSocket (docs/api.md) with Kubernetes'
 * channel frames (v5.channel.k8s.io: 0 stdin, 1 stdout, 2 stderr, 3 the
 * end as a Status, 4 the terminal's size, 255 0 stdin's end). Bytes go as
 * they come: stdout and stderr to ours, ours stdin (-i) to the command.
 * With -t the command gets a terminal, ours is put in raw mode (restored
 * at the end) and its size follows ours (SIGWINCH). drover exits with the
 * command's exit code; 1 when it could not run it.
 */
#include "client_int.h"

#include "drover/fsutil.h"
#include "drover/dynbuf.h"
#include "drover/http.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define EXEC_PROTO "v5.channel.k8s.io"

static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

/* The path of the exec route for job id, task and argv. */
static char *exec_path(const char *id, const char *task, char **argv, int argc, bool in,
		       bool tty)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(1u << 20);
	char *e = drv_client_urlencode(id), *p;

	drv_dynbuf_addf(&b, "/v1/jobs/%s/exec?task=", e);
	drv_free(e);
	e = drv_client_urlencode(task);
	drv_dynbuf_addf(&b, "%s&stdout=true%s%s%s", e, tty ? "" : "&stderr=true",
			in ? "&stdin=true" : "", tty ? "&tty=true" : "");
	drv_free(e);
	for (int i = 0; i < argc; i++) {
		e = drv_client_urlencode(argv[i]);
		drv_dynbuf_addf(&b, "&command=%s", e);
		drv_free(e);
	}
	p = drv_strndup(b.buf, b.len);
	drv_dynbuf_release(&b);
	return p;
}

static void send_size(struct drv_ws *w)
{
	struct winsize ws;
	char b[64];

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		return;
	snprintf(b, sizeof(b), "{\"Width\":%u,\"Height\":%u}", ws.ws_col, ws.ws_row);
	drv_ws_send_channel(w, 4, b, strlen(b));
}

/* The exit code a Status (channel 3) says; its message to stderr when
 * it is no exit code. */
static int status_code(const char *who, const unsigned char *p, size_t n)
{
	json_t *o = json_loadb((const char *)p, n, 0, NULL);
	const char *st = drv_json_str(o, "status"), *reason = drv_json_str(o, "reason");
	json_t *c = json_array_get(json_object_get(json_object_get(o, "details"), "causes"), 0);
	int code = DRV_EXIT_FAIL;

	if (st && strcmp(st, "Success") == 0)
		code = 0;
	else if (reason && strcmp(reason, "NonZeroExitCode") == 0 && drv_json_str(c, "message"))
		code = atoi(drv_json_str(c, "message"));
	else
		fprintf(stderr, "%s: %s\n", who, drv_json_str(o, "message") ?: "the command failed");
	json_decref(o);
	return code;
}

int drv_client_ws_relay(const char *who, struct drv_ws *w, bool in, bool tty)
{
	int code = -1;

	if (tty)
		send_size(w);
	for (;;) {
		struct pollfd p[2] = { { drv_ws_fd(w), POLLIN, 0 },
				       { in ? STDIN_FILENO : -1, POLLIN, 0 } };

		if (winch) {
			winch = 0;
			send_size(w);
		}
		if (!drv_ws_buffered(w) && poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			unsigned char buf[32768];
			ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));

			if (r > 0) {
				drv_ws_send_channel(w, 0, buf, (size_t)r);
			} else if (r == 0 || errno != EINTR) {
				drv_ws_send_channel(w, 255, "", 1);   /* 255 0: stdin's end */
				in = false;
			}
		}
		if (drv_ws_buffered(w) || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			unsigned char *m;
			size_t len;
			int op, rc = drv_ws_read(w, &op, &m, &len, 100);

			if (rc == DRV_ETIMEDOUT)
				continue;
			if (rc != 0)
				break;
			if (len && m[0] == 1)
				(void)drv_fd_write_all(STDOUT_FILENO, m + 1, len - 1);
			else if (len && m[0] == 2)
				(void)drv_fd_write_all(STDERR_FILENO, m + 1, len - 1);
			else if (len && m[0] == 3)
				code = status_code(who, m + 1, len - 1);
			drv_free(m);
		}
	}
	if (code < 0) {
		fprintf(stderr, "%s: the connection to the server ended before the command did\n",
			who);
		code = DRV_EXIT_FAIL;
	}
	return code;
}

bool drv_client_tty_raw(struct termios *saved)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, saved) != 0)
		return false;
	t = *saved;
	cfmakeraw(&t);
	signal(SIGWINCH, on_winch);
	return tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
}

int drv_client_cmd_exec(int argc, char **argv)
{
	const char *task = "0";
	bool in = false, tty = false;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "task", &task, "RANK", "the task's rank in the job (default 0)"),
		DRV_OPT_FLAG('i', "stdin", &in, "pass stdin to the command"),
		DRV_OPT_FLAG('t', "tty", &tty, "give the command a terminal (stdin must be one)"),
		DRV_OPT_GROUP("server"),
		CLI_OUTPUT_OPT(&cli, DRV_OPTF_HIDDEN),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover exec",
		.usage = "drover exec ID [--task RANK] [-i] [-t] [--server URL] [--token-file FILE] "
			 "-- CMD ARG...",
		.about = "Runs a command in a running task of a job, in its environment (a "
			 "container task: in its container), as kubectl exec does in a pod. Exits "
			 "with the command's exit code.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	struct termios saved;
	struct drv_ws *w = NULL;
	char err[1024], *path;
	bool raw = false;
	long status = 0;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (cli.nargs < 2)
		return drv_opts_usage_error(&cmd, cli.nargs ? "which command? give it after --"
							    : "which job? give its id");
	if (tty && !isatty(STDIN_FILENO))
		return drv_opts_usage_error(&cmd, "-t: stdin is not a terminal");
	if ((code = cli_connect(&cli)))
		return code;
	path = exec_path(cli.args[0], task, cli.args + 1, cli.nargs - 1, in, tty);
	if (drv_ws_connect(cli.conf.server, path, cli.conf.token, cli.conf.ca_file, EXEC_PROTO, &w,
			   &status, err, sizeof(err)) != 0) {
		cli_err(&cli, "%s", err);
		code = status >= 400 ? drv_client_status_exit(status) : DRV_EXIT_FAIL;
		goto out;
	}
	raw = tty && drv_client_tty_raw(&saved);
	code = drv_client_ws_relay(cli.cmd, w, in, tty);
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	drv_ws_close(w, 1000, NULL);
	drv_ws_free(w);
out:
	drv_free(path);
	cli_release(&cli);
	return code;
}
