/*
 * agent_forward.c: GET /v1/tasks/ID/portforward?port=N (cluster token,
 * Upgrade: drover-tcp), the node's end of kubectl port-forward (the
 * controller's kube_forward.c), as kubelet's: a task runs in the node's
 * network namespace (a host task, or a container with host networking),
 * so its port is the node's loopback port. The connection is made before
 * the answer, so a port nothing listens on is a 409 saying so; then the
 * upgraded connection and the port's are piped both ways, each end's
 * close passed on as a half-close, on the upgrade's session thread.
 */
#include "agent_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIPE_BUF_SZ (64u << 10)

/* A connected socket to the loopback's port (IPv4, then IPv6), or -errno. */
static int dial_loopback(int port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int e = ECONNREFUSED, one = 1;

	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 2; i++) {
		int fd = socket(i ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, i ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			    i ? sizeof(a6) : sizeof(a4)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		if (i == 0)
			e = errno;
		close(fd);
	}
	return -e;
}

static int write_fd(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The session: until both directions have ended (or one fails). */
static void pipe_session(void *cls, struct drv_ws *w)
{
	int pfd = *(int *)cls;
	char *buf = drv_malloc(PIPE_BUF_SZ);
	bool up_open = true, down_open = true;   /* controller->port, port->controller */

	while (up_open || down_open) {
		bool buffered = drv_ws_buffered(w);
		struct pollfd p[2] = { { drv_ws_fd(w), up_open ? POLLIN : 0, 0 },
				       { pfd, down_open ? POLLIN : 0, 0 } };

		if (!buffered && poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		if (up_open && (buffered || (p[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
			ssize_t k = drv_ws_read_raw(w, buf, PIPE_BUF_SZ);

			if (k < 0)
				break;
			if (k == 0) {
				up_open = false;
				shutdown(pfd, SHUT_WR);
			} else if (write_fd(pfd, buf, (size_t)k) < 0) {
				break;
			}
		}
		if (down_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = read(pfd, buf, PIPE_BUF_SZ);

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				break;
			if (k == 0) {
				down_open = false;
				shutdown(drv_ws_fd(w), SHUT_WR);
			} else if (drv_ws_write_raw(w, buf, (size_t)k) < 0) {
				break;
			}
		}
	}
	drv_free(buf);
}

static void pipe_free(void *cls)
{
	close(*(int *)cls);
	drv_free(cls);
}

int agent_h_portforward(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0), *ps = drv_http_req_query(req, "port");
	char *end = NULL;
	long port = ps ? strtol(ps, &end, 10) : 0;
	struct task *t;
	bool running;
	int fd, *cls;

	if (!ps || end == ps || *end || port < 1 || port > 65535) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "port: found \"%s\", expected a "
				    "TCP port from 1 to 65535", ps ? ps : "");
		return 0;
	}
	pthread_mutex_lock(&a->mu);
	t = agent_valid_task_id(id) ? agent_find_task(a, id, -1) : NULL;
	running = t && t->state == T_RUNNING && t->proc.pid;
	pthread_mutex_unlock(&a->mu);
	if (!t) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
				    id ? id : "", a->name);
		return 0;
	}
	if (!running) {
		drv_http_resp_error(resp, 409, "conflict", NULL, "task %s on node %s is not running",
				    id, a->name);
		return 0;
	}
	if ((fd = dial_loopback((int)port)) < 0) {
		drv_http_resp_error(resp, 409, "conflict", NULL, "nothing listens on port %ld of "
				    "node %s (task %s): connect to localhost:%ld: %s", port, a->name,
				    id, port, strerror(-fd));
		return 0;
	}
	cls = drv_malloc(sizeof(*cls));
	*cls = fd;
	return drv_http_resp_upgrade(req, resp, "drover-tcp", pipe_session, cls, pipe_free);
}
