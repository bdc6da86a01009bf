/*
 * agent_node.c: what the agent says about its node: its address, memory, and
 * the register message (include/drover/proto.h) with the GPUs, their link
 * matrix, the HCAs and the tasks running now.
 */

#include "agent_int.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* --- node facts ------------------------------------------------------------ */

/* host part of "http://host:port/…" into out */
static void url_host(const char *url, char *out, size_t outsz, char *port, size_t portsz)
{
	const char *p = strstr(url, "://");
	const char *end;

	p = p ? p + 3 : url;
	snprintf(port, portsz, "%s", strncmp(url, "https", 5) ? "80" : "443");
	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			end = p + strlen(p);
		snprintf(out, outsz, "%.*s", (int)(end - p - 1), p + 1);
		p = *end ? end + 1 : end;
	} else {
		end = p + strcspn(p, ":/");
		snprintf(out, outsz, "%.*s", (int)(end - p), p);
		p = end;
	}
	if (*p == ':')
		snprintf(port, portsz, "%.*s", (int)strcspn(p + 1, "/"), p + 1);
}

/*
 * The address peers reach this node on: the local address of a (UDP,
 * nothing sent) route to the controller; and the interface that holds it,
 * for NCCL_SOCKET_IFNAME.
 */
void agent_find_address(struct drv_agent *a)
{
	char host[256], port[16];
	struct addrinfo hints, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ifaddrs *ifs = NULL, *i;
	int fd;

	if (a->advertise_cfg)
		snprintf(a->address, sizeof(a->address), "%s", a->advertise_cfg);
	if (!a->address[0]) {
		url_host(a->server, host, sizeof(host), port, sizeof(port));
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_DGRAM;
		if (getaddrinfo(host, port, &hints, &res) == 0 && res) {
			fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
			    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
				getnameinfo((struct sockaddr *)&ss, sl, a->address, sizeof(a->address),
					    NULL, 0, NI_NUMERICHOST);
			if (fd >= 0)
				close(fd);
			freeaddrinfo(res);
		}
	}
	if (!a->address[0])
		snprintf(a->address, sizeof(a->address), "127.0.0.1");
	if (getifaddrs(&ifs) == 0) {
		for (i = ifs; i; i = i->ifa_next) {
			char h[128];
			if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
					     i->ifa_addr->sa_family != AF_INET6))
				continue;
			if (getnameinfo(i->ifa_addr, i->ifa_addr->sa_family == AF_INET ?
					sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
					h, sizeof(h), NULL, 0, NI_NUMERICHOST) == 0 &&
			    !strcmp(h, a->address)) {
				snprintf(a->ifname, sizeof(a->ifname), "%s", i->ifa_name);
				break;
			}
		}
		freeifaddrs(ifs);
	}
}

static int64_t mem_mib(void)
{
	struct sysinfo si;

	if (sysinfo(&si) < 0)
		return 0;
	return (int64_t)((uint64_t)si.totalram * si.mem_unit >> 20);
}

/* --- the register message ---------------------------------------------------- */

/* A register message and the storage its strings live in. */
struct reg_msg {
	struct drv_proto_register m;
	char *labels;               /* a copy of --labels, cut in place */
	char (*cells)[16];          /* the gpu_matrix cells */
};

/* --labels "k=v,k2=v2" into the message's labels. */
static void reg_labels(struct drv_agent *a, struct reg_msg *r)
{
	char *save = NULL, *kv;
	size_t n = 2;   /* + the runtime's */

	for (const char *p = a->labels ? a->labels : ""; *p; p++)
		n += *p == ',';
	r->labels = drv_strdup(a->labels ? a->labels : "");
	r->m.labels = drv_calloc(n, sizeof(*r->m.labels));
	for (kv = strtok_r(r->labels, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq || !strncmp(kv, "drover.io/runtime=", 18))
			continue;   /* the runtime's label is the agent's to say */
		*eq = '\0';
		r->m.labels[r->m.nlabels++] = (struct drv_proto_kv){ kv, eq + 1 };
	}
	/* what the controller places container jobs by (docs/agent.md, "Runtimes") */
	r->m.labels[r->m.nlabels++] = (struct drv_proto_kv){ "drover.io/runtime",
							       a->podman_on ? "podman" : "host" };
}

/* The GPUs and their link matrix. */
static void reg_gpus(struct drv_agent *a, struct reg_msg *r)
{
	size_t n = (size_t)a->gpus.ngpus;

	r->m.gpus = drv_calloc(n, sizeof(*r->m.gpus));
	r->m.gpu_matrix = drv_calloc(n, sizeof(*r->m.gpu_matrix));
	r->m.matrix_len = drv_calloc(n, sizeof(*r->m.matrix_len));
	r->cells = drv_calloc(n * n, sizeof(*r->cells));
	for (size_t i = 0; i < n; i++) {
		const struct drv_gpu_info *g = &a->gpus.gpus[i];
		const char **row = drv_calloc(n, sizeof(*row));

		r->m.gpus[i] = (struct drv_proto_gpu){ .index = (int64_t)i, .uuid = g->uuid,
						       .model = g->name,
						       .memory_mib = g->mem_total_mib,
						       .pci_bus_id = g->pci_bus_id };
		for (size_t j = 0; j < n; j++)
			row[j] = drv_gpu_link_name(a->gpus.link[i][j], a->gpus.nvlinks[i][j],
						   r->cells[i * n + j], sizeof(r->cells[0]));
		r->m.gpu_matrix[i] = row;
		r->m.matrix_len[i] = n;
	}
	r->m.ngpus = r->m.nmatrix = n;
}

/* The HCAs and the GPUs nearest to each. */
static void reg_nics(struct drv_agent *a, struct reg_msg *r)
{
	r->m.nics = drv_calloc((size_t)a->hcas.nhcas, sizeof(*r->m.nics));
	for (int i = 0; i < a->hcas.nhcas; i++) {
		const struct drv_hca *h = &a->hcas.hcas[i];
		struct drv_proto_nic *x = &r->m.nics[r->m.nnics++];

		x->name = h->name;
		x->link_layer = h->nports ? h->ports[0].link_layer : "";
		x->state = h->nports ? h->ports[0].state : "";
		x->rate_gbps = h->nports ? h->ports[0].rate_gbps : 0;
		x->near_gpus = drv_calloc((size_t)a->gpus.ngpus, sizeof(*x->near_gpus));
		for (int j = 0; j < a->gpus.ngpus; j++)
			if (drv_hca_nearest(&a->hcas, &a->gpus, j) == i)
				x->near_gpus[x->nnear++] = j;
	}
}

/* The register message: inventory and the tasks running now. Strings are
 * borrowed from a; free with reg_msg_free. Caller holds a->mu. */
static void reg_msg(struct drv_agent *a, struct reg_msg *r)
{
	memset(r, 0, sizeof(*r));
	drv_proto_register_init(&r->m);
	r->m.protocol = a->proto;
	r->m.name = a->name;
	r->m.hostname = a->hostname;
	r->m.address = a->address;
	r->m.agent_url = a->agent_url[0] ? a->agent_url : NULL;
	r->m.metrics_url = a->metrics_url[0] ? a->metrics_url : NULL;
	r->m.no_metrics = !strcmp(a->metrics_listen, "none");
	r->m.version = DRV_AGENT_VERSION;
	r->m.backend = a->backend;
	r->m.cpu_milli = sysconf(_SC_NPROCESSORS_ONLN) * 1000;
	r->m.mem_mib = mem_mib();
	reg_labels(a, r);
	reg_gpus(a, r);
	reg_nics(a, r);
	r->m.running = drv_calloc(a->ntasks, sizeof(*r->m.running));
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		/* every task it knows of: running, or ended with the end
		 * still to report (the next sync carries it) */
		if (t->state == T_RUNNING)
			r->m.running[r->m.nrunning++] = (struct drv_proto_ref){
				.task_id = t->id, .epoch = t->epoch, .pid = t->proc.pid };
		else if (t->rep_end)
			r->m.running[r->m.nrunning++] = (struct drv_proto_ref){
				.task_id = t->id, .epoch = t->epoch, .state = "exited" };
	}
}

static void reg_msg_free(struct reg_msg *r)
{
	drv_proto_register_release(&r->m);
	drv_free(r->labels);
	drv_free(r->cells);
}

/* The register message as JSON. Caller holds a->mu. */
json_t *agent_register_body(struct drv_agent *a)
{
	struct reg_msg r;
	json_t *o;

	reg_msg(a, &r);
	o = drv_proto_register_encode(&r.m);
	reg_msg_free(&r);
	return o;
}

