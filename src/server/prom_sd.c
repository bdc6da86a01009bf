/*
 * prom_sd.c: GET /v1/prometheus/targets, Prometheus' HTTP service
 * discovery (http_sd_configs) of the agents' /metrics, so that adding a
 * node needs no change to Prometheus' configuration.
 *
 * The answer is http_sd's bare JSON array (the one route that does not
 * answer {"items": ...}): one entry per node whose agent serves /metrics
 * (at agent_url, or at metrics_url when it serves them apart; none with
 * --metrics-listen none), down nodes included, so that `up == 0` shows
 * them:
 *
 *	[{"targets": ["10.0.0.5:9400"],
 *	  "labels": {"__scheme__": "https", "__metrics_path__": "/metrics",
 *	             "pool": "dc1", "__meta_drover_node": "node-a",
 *	             "__meta_drover_node_state": "up"}}]
 *
 * __scheme__ is the URL's: https when the agent serves TLS. Any user's
 * token opens it (Prometheus' authorization block).
 */
#include "server_int.h"

#include <string.h>

/* Where node i's /metrics is, as the agent registered it; NULL: nowhere. */
static const char *metrics_url(const struct srv_node *n)
{
	const char *u = drv_json_str(n->inventory, "metrics_url");

	if (u && *u)
		return u;
	if (drv_json_bool(n->inventory, "no_metrics", 0))
		return NULL;
	return n->agent_url;
}

/* One http_sd entry for url ("https://host:port"), or NULL when it is not
 * a URL drover wrote. */
static json_t *target(struct drv_server *s, int32_t i, const char *url)
{
	const struct srv_node *n = &s->nodes[i];
	const struct drv_node *cn = &s->cluster.nodes[i];
	const char *hostport = strstr(url, "://");
	json_t *labels;

	if (!hostport || !hostport[3])
		return NULL;
	labels = json_pack("{s:s#,s:s,s:s,s:s}", "__scheme__", url, (int)(hostport - url),
			   "__metrics_path__", "/metrics", "__meta_drover_node", n->name,
			   "__meta_drover_node_state", srv_nstate_name(n->state));
	if (cn->pool >= 0 && cn->pool < s->cluster.npools)
		json_object_set_new(labels, "pool", json_string(s->cluster.pools[cn->pool].name));
	return json_pack("{s:[s#],s:o}", "targets", hostport + 3,
			 (int)strcspn(hostport + 3, "/"), "labels", labels);
}

int srv_api_prometheus_targets(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	json_t *all = json_array();

	(void)r;
	pthread_mutex_lock(&s->mu);
	for (int32_t i = 0; i < s->nnodes; i++) {
		const char *url = metrics_url(&s->nodes[i]);
		json_t *t = url ? target(s, i, url) : NULL;

		if (t)
			json_array_append_new(all, t);
	}
	pthread_mutex_unlock(&s->mu);
	drv_http_resp_json(o, 200, all);
	return 0;
}
