/*
 * kubeconfig.c: a kubeconfig for kubectl pointing at a drover server
 * (docs/kubernetes.md), written by `drover up` next to the client config
 * and by `drover kubeconfig`: one cluster, one user with the bearer token,
 * one context, all named "drover". kubectl sends a token over https only,
 * so a plain-http server gets a kubeconfig with a warning.
 */
#include "drover/client.h"
#include "drover/common.h"
#include "drover/fsutil.h"

#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kc {
	const char *server, *token, *ca;
};

/* A YAML double-quoted scalar: JSON's string syntax is YAML's. */
static void put_str(FILE *f, const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *t = json_dumps(j, JSON_ENCODE_ANY);

	fputs(t ? t : "\"\"", f);
	free(t);
	json_decref(j);
}

static int put_kubeconfig(FILE *f, void *arg)
{
	const struct kc *k = arg;

	fprintf(f, "# kubectl's config for drover's Kubernetes-compatible API (docs/kubernetes.md)\n"
		   "apiVersion: v1\nkind: Config\nclusters:\n- name: drover\n  cluster:\n    server: ");
	put_str(f, k->server);
	fputc('\n', f);
	if (k->ca) {
		fputs("    certificate-authority: ", f);
		put_str(f, k->ca);
		fputc('\n', f);
	}
	fputs("users:\n- name: drover\n  user:\n", f);
	if (k->token) {
		fputs("    token: ", f);
		put_str(f, k->token);
		fputc('\n', f);
	}
	fputs("contexts:\n- name: drover\n  context:\n    cluster: drover\n    user: drover\n"
	      "current-context: drover\n", f);
	return 0;
}

int drv_kubeconfig_write(const char *path, const char *server, const char *token,
			 const char *ca_file)
{
	struct kc k = { server, token, ca_file };

	if (!path)
		return put_kubeconfig(stdout, &k);
	return drv_file_write_atomic(path, 0600, put_kubeconfig, &k) < 0 ? DRV_EIO : 0;
}

int drv_client_cmd_kubeconfig(int argc, char **argv)
{
	const char *file = NULL;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "file", &file, "PATH",
			       "write it to PATH (mode 0600) rather than standard output"),
		DRV_OPT_GROUP("server"),
		CLI_OUTPUT_OPT(&cli, DRV_OPTF_HIDDEN),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover kubeconfig",
		.usage = "drover kubeconfig [--file PATH] [--server URL] [--token-file FILE] "
			 "[--tls-ca FILE]",
		.about = "A kubeconfig for kubectl with this client's server, token and CA: "
			 "KUBECONFIG=PATH kubectl get nodes then needs no flags.",
		.options = table,
	};
	char *ca = NULL;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if ((code = cli_connect(&cli)))
		goto out;
	if (!cli.conf.token)
		fprintf(stderr, "drover kubeconfig: warning: no token (DROVER_TOKEN, --token-file or "
				"the config file): kubectl will get 401\n");
	if (strncmp(cli.conf.server, "https://", 8) != 0)
		fprintf(stderr, "drover kubeconfig: warning: %s is plain http, over which kubectl "
				"sends no token; serve https (drover up --tls, or tls: in the server "
				"config)\n", cli.conf.server);
	if (cli.conf.ca_file)
		ca = realpath(cli.conf.ca_file, NULL);
	if (drv_kubeconfig_write(file, cli.conf.server, cli.conf.token,
				 ca ? ca : cli.conf.ca_file) < 0) {
		fprintf(stderr, "drover kubeconfig: cannot write %s: %s\n", file, strerror(errno));
		code = DRV_EXIT_FAIL;
	} else if (file) {
		printf("wrote %s: KUBECONFIG=%s kubectl get nodes\n", file, file);
	}
out:
	free(ca);
	cli_release(&cli);
	return code;
}
