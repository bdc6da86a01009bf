/*
 * cmd_tls.c: 'drover tls': certificates for a cluster's https, made with
 * GnuTLS (include/drover/http.h, "Certificates for a first cluster").
 *
 *   drover tls init DIR [--names LIST]
 *       DIR/ca.pem and DIR/ca-key.pem (a CA, kept when there) and
 *       DIR/server.pem and DIR/server-key.pem for LIST (default: this
 *       machine's names), as `drover up --tls` makes in STATE/tls.
 *   drover tls cert DIR NAME [--names LIST]
 *       DIR/NAME.pem and DIR/NAME-key.pem signed by DIR's CA, for LIST
 *       (default: NAME): one per agent node, or for a server's real names.
 *
 * Keys are written 0600, certificates 0644. docs/security.md says where
 * each file goes.
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/http.h"
#include "drover/options.h"

#include <stdio.h>
#include <string.h>

static int tls_init(const char *dir, const char *names)
{
	char local[600], err[1024];
	bool made = false;

	if (!names)
		names = drv_tls_local_names(local, sizeof(local));
	if (drv_tls_init_dir(dir, names, &made, err, sizeof(err)) < 0) {
		fprintf(stderr, "drover tls init: %s\n", err);
		return DRV_EXIT_FAIL;
	}
	printf("%s: ca.pem, ca-key.pem, server.pem, server-key.pem (%s; names %s)\n", dir,
	       made ? "made" : "already there, kept", names);
	return DRV_EXIT_OK;
}

static int tls_cert(const char *dir, const char *name, const char *names)
{
	char ca[1100], cakey[1100], crt[1400], key[1400], err[1024];

	if (!*name || strchr(name, '/')) {
		fprintf(stderr, "drover tls cert: NAME '%s': expected a file name without '/'\n",
			name);
		return DRV_EXIT_USAGE;
	}
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cakey, sizeof(cakey), "%s/ca-key.pem", dir);
	snprintf(crt, sizeof(crt), "%s/%s.pem", dir, name);
	snprintf(key, sizeof(key), "%s/%s-key.pem", dir, name);
	if (drv_tls_make_cert(ca, cakey, names ? names : name, crt, key, err, sizeof(err)) < 0) {
		fprintf(stderr, "drover tls cert: %s%s\n", err,
			strstr(err, "ca.pem") ? " (make the CA first: drover tls init DIR)" : "");
		return DRV_EXIT_FAIL;
	}
	printf("%s, %s: signed by %s for %s\n", crt, key, ca, names ? names : name);
	return DRV_EXIT_OK;
}

int cmd_tls(int argc, char **argv)
{
	const char *names = NULL;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "names", &names, "LIST",
			       "DNS names and IP addresses the certificate is for, comma-separated "
			       "(init: this machine's; cert: NAME)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover tls",
		.usage = "drover tls init DIR [--names LIST]\n"
			 "       drover tls cert DIR NAME [--names LIST]",
		.about = "Certificates for https: a CA and the server's certificate (init), "
			 "or one more certificate signed by that CA (cert). Keys are 0600.",
		.options = table,
		.args_max = 3,
	};
	int n = drv_opts_parse(&cmd, argc, argv);

	if (n < 0)
		return drv_opts_exit(n);
	if (n == 2 && strcmp(argv[0], "init") == 0)
		return tls_init(argv[1], names);
	if (n == 3 && strcmp(argv[0], "cert") == 0)
		return tls_cert(argv[1], argv[2], names);
	fprintf(stderr, "drover tls: expected 'init DIR' or 'cert DIR NAME' (see drover tls "
		"--help)\n");
	return DRV_EXIT_USAGE;
}
