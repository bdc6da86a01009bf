/*
 * conf.c: where the client talks to. The server URL, the bearer token and
 * the CA file (https) are resolved each on its own, first match wins: the
 * --server flag, the token read from --token-file (cli.c; never a token on
 * the command line, CONTRACTS.md §6) and --tls-ca, then DROVER_SERVER/
 * DROVER_TOKEN/DROVER_CA_FILE, then the config
 * file that `drover up` writes ($XDG_CONFIG_HOME/drover/config, a small
 * YAML mapping read with libfyaml), then the default server and no token.
 *
 * A config file that exists but cannot be read or parsed is an error the
 * user sees, not skipped: a silently ignored token turns into a confusing
 * "unauthorized" later. A bad one is bad input: "file:line:col: error:
 * ...", exit 2 (cli.c); an unreadable one is a runtime failure, exit 1.
 */
#include "drover/client.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/fsutil.h"
#include "drover/spec.h"

#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *drv_client_config_path(void)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *p;
	size_t n;

	if (x && *x) {
		n = strlen(x) + sizeof("/drover/config");
		p = drv_malloc(n);
		snprintf(p, n, "%s/drover/config", x);
		return p;
	}
	if (home && *home) {
		n = strlen(home) + sizeof("/.config/drover/config");
		p = drv_malloc(n);
		snprintf(p, n, "%s/.config/drover/config", home);
		return p;
	}
	return NULL;
}

/* The string value of key in map into *out (NULL when absent or null);
 * DRV_EPARSE with "line:col: error: key: found X, expected a string". */
static int scalar_value(struct fy_node *map, const char *key, char **out, char *err,
			size_t errsz)
{
	struct fy_node *v = fy_node_mapping_lookup_by_string(map, key, FY_NT);
	const char *s;
	size_t len;

	*out = NULL;
	if (!v || fy_node_is_null(v))
		return 0;
	if (!fy_node_is_scalar(v)) {
		char f[80];
		int line, col;

		drv_yaml_found(v, f, sizeof(f));
		drv_spec_node_mark(v, &line, &col);
		snprintf(err, errsz, "%d:%d: error: %s: found %s, expected a string", line, col,
			 key, f);
		return DRV_EPARSE;
	}
	s = fy_node_get_scalar(v, &len);
	if (!s)
		return 0;
	*out = drv_strndup(s, len);
	return 0;
}

/* `server:` is a URL or a list of them (controllers of one cluster,
 * docs/ha.md): *out gets them comma-separated. */
static int server_value(struct fy_node *map, char **out, char *err, size_t errsz)
{
	struct fy_node *v = fy_node_mapping_lookup_by_string(map, "server", FY_NT), *it;
	struct drv_dynbuf b = DRV_DYNBUF_INIT(1 << 16);
	void *iter = NULL;

	if (!v || !fy_node_is_sequence(v))
		return scalar_value(map, "server", out, err, errsz);
	*out = NULL;
	while ((it = fy_node_sequence_iterate(v, &iter))) {
		size_t len = 0;
		const char *s = fy_node_is_scalar(it) ? fy_node_get_scalar(it, &len) : NULL;

		if (!s || !len || memchr(s, ',', len)) {
			char f[80];
			int line, col;

			drv_yaml_found(it, f, sizeof(f));
			drv_spec_node_mark(it, &line, &col);
			snprintf(err, errsz, "%d:%d: error: server[]: found %s, expected a URL", line,
				 col, f);
			drv_dynbuf_release(&b);
			return DRV_EPARSE;
		}
		if (drv_dynbuf_len(&b))
			drv_dynbuf_add(&b, ",", 1);
		drv_dynbuf_add(&b, s, len);
	}
	*out = drv_dynbuf_len(&b) ? drv_dynbuf_take(&b, NULL) : NULL;
	drv_dynbuf_release(&b);
	return 0;
}

int drv_client_conf_parse(const char *text, size_t len, struct drv_client_conf *out,
			  char *err, size_t errsz)
{
	struct fy_document *d = NULL;
	struct fy_node *root;
	struct drv_diags dg;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	/* An empty file is an empty configuration. */
	if (strspn(text, " \t\r\n") == len)
		return 0;
	/* the shared reader: the tab check libfyaml 0.7.12 needs, syntax errors
	 * with their positions (spec.h) */
	drv_diags_init(&dg, NULL);
	rc = drv_yaml_load(text, len, &dg, &d);
	if (rc < 0) {
		const struct drv_diag *e = dg.n ? &dg.v[0] : NULL;
		const char *m = e ? e->msg : "YAML syntax error";
		snprintf(err, errsz, "%d:%d: error: %s%s", e ? e->line : 1, e ? e->col : 1, m,
			 strncmp(m, "YAML syntax", 11) ? ""
			 : "; expected lines like 'server: URL' and 'token: TOKEN'");
		drv_diags_release(&dg);
		return DRV_EPARSE;
	}
	drv_diags_release(&dg);
	root = d ? fy_document_root(d) : NULL;
	if (!root || fy_node_is_null(root))
		goto out;
	if (!fy_node_is_mapping(root)) {
		char f[80];
		int line, col;

		drv_yaml_found(root, f, sizeof(f));
		drv_spec_node_mark(root, &line, &col);
		snprintf(err, errsz, "%d:%d: error: found %s, expected a mapping with 'server' and "
			 "'token'", line, col, f);
		rc = DRV_EPARSE;
		goto out;
	}
	rc = server_value(root, &out->server, err, errsz);
	if (rc == 0)
		rc = scalar_value(root, "token", &out->token, err, errsz);
	if (rc == 0)
		rc = scalar_value(root, "ca_file", &out->ca_file, err, errsz);
	if (rc)
		drv_client_conf_release(out);
out:
	if (d)
		fy_document_destroy(d);
	return rc;
}

/* Each of "URL[,URL...]" without trailing slashes, http:// when it names
 * no scheme. */
static char *normalize_server(const char *s)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(1 << 16);
	const char *p = s;
	char *u;

	do {
		const char *e = strchr(p, ','), *end = e ? e : p + strlen(p);
		size_t n;

		while (p < end && *p == ' ')
			p++;
		n = (size_t)(end - p);
		while (n > 0 && (p[n - 1] == '/' || p[n - 1] == ' '))
			n--;
		if (drv_dynbuf_len(&b))
			drv_dynbuf_add(&b, ",", 1);
		if (!memmem(p, n, "://", 3))
			drv_dynbuf_add(&b, "http://", 7);
		drv_dynbuf_add(&b, p, n);
		p = e ? e + 1 : NULL;
	} while (p);
	u = drv_dynbuf_take(&b, NULL);
	drv_dynbuf_release(&b);
	return u;
}

/* A relative path in the config file is relative to the file's folder. */
static char *beside(const char *path, const char *file)
{
	const char *slash = strrchr(file, '/');
	size_t n;
	char *p;

	if (path[0] == '/' || !slash)
		return drv_strdup(path);
	n = (size_t)(slash - file) + 1 + strlen(path) + 1;
	p = drv_malloc(n);
	snprintf(p, n, "%.*s/%s", (int)(slash - file), file, path);
	return p;
}

/* The first non-empty of a flag and an environment variable, or NULL. */
static const char *flag_or_env(const char *flag, const char *var)
{
	const char *e = getenv(var);

	if (flag && *flag)
		return flag;
	return e && *e ? e : NULL;
}

/* The config file's values into *file (nothing when there is none). */
static int read_file(const char *path, struct drv_client_conf *file, char *err, size_t errsz)
{
	char *text = NULL, msg[256];
	size_t len = 0;
	int rc, eno = 0;

	memset(file, 0, sizeof(*file));
	/* a config file is a few lines */
	if (path && drv_file_read(path, 1u << 20, &text, &len) < 0)
		eno = errno;
	if (path && !text && eno != ENOENT && eno != ENOTDIR) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(eno));
		return DRV_EIO;
	}
	if (!text)
		return 0;
	rc = drv_client_conf_parse(text, len, file, msg, sizeof(msg));
	if (rc)
		snprintf(err, errsz, "%s:%s", path, msg); /* file:line:col: */
	drv_free(text);
	return rc;
}

int drv_client_conf_resolve(struct drv_client_conf *conf, const char *flag_server,
			    const char *flag_token, const char *flag_ca, char *err, size_t errsz)
{
	const char *server = flag_or_env(flag_server, "DROVER_SERVER");
	const char *token = flag_or_env(flag_token, "DROVER_TOKEN");
	const char *ca = flag_or_env(flag_ca, "DROVER_CA_FILE");
	const char *source = !server ? NULL : flag_server && *flag_server ? "--server"
									  : "DROVER_SERVER";
	struct drv_client_conf file = { 0 };
	char *path = NULL;
	int rc = 0;

	memset(conf, 0, sizeof(*conf));
	/* server and token both given: the file (whose CA is for its own
	 * server) is not read */
	if (!server || !token) {
		path = drv_client_config_path();
		rc = read_file(path, &file, err, errsz);
		if (rc)
			goto out;
		if (!server && file.server && *file.server) {
			server = file.server;
			source = path;
		}
		if (!token && file.token && *file.token)
			token = file.token;
	}
	if (!server) {
		server = DRV_CLIENT_DEFAULT_SERVER;
		source = "default";
	}
	conf->server = normalize_server(server);
	conf->token = drv_strdup(token);
	conf->source = drv_strdup(source);
	if (ca)
		conf->ca_file = drv_strdup(ca);
	else if (file.ca_file && *file.ca_file)
		conf->ca_file = beside(file.ca_file, path);
out:
	drv_free(path);
	drv_client_conf_release(&file);
	return rc;
}

void drv_client_conf_release(struct drv_client_conf *conf)
{
	drv_free(conf->server);
	drv_free(conf->token);
	drv_free(conf->ca_file);
	drv_free(conf->source);
	memset(conf, 0, sizeof(*conf));
}
