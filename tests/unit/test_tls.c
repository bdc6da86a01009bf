/*
 * test_tls.c: TLS in src/http over real loopback sockets: a CA and a
 * server certificate made with drv_tls_*, checked by GnuTLS's own
 * verifier and by certtool where installed; a server on them answering a
 * client that trusts the CA; and the refusals a person must be able to
 * read: a client trusting another CA, a certificate that does not name
 * the host, plain http:// to the TLS port, a key file others may read, a
 * key that is not the certificate's.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "drover/http.h"

static char dir[64];

static void mkdirs(void)
{
	snprintf(dir, sizeof(dir), "/tmp/drover-tls-XXXXXX");
	cr_assert(ne(ptr, mkdtemp(dir), NULL));
}

static void rmdirs(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert(eq(int, system(cmd), 0));
}

TestSuite(tls, .init = mkdirs, .fini = rmdirs);

static const char *at(const char *leaf)
{
	static char p[8][160];
	static int i;

	i = (i + 1) % 8;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, leaf);
	return p[i];
}

static int h_hello(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	drv_http_resp_json(resp, 200, json_pack("{s:s}", "hello", "tls"));
	return 0;
}

static const struct drv_http_route routes[] = {
	{ "GET", "/hello", h_hello, 0 },
	{ NULL, NULL, NULL, 0 },
};

static mode_t mode_of(const char *p)
{
	struct stat st;

	cr_assert(eq(int, stat(p, &st), 0), "%s", p);
	return st.st_mode & 07777;
}

/* GnuTLS's verdict on cert against ca, and whether it names host. */
static unsigned verify(const char *cert, const char *ca, const char *host)
{
	gnutls_datum_t c, a;
	gnutls_x509_crt_t crt, cacrt;
	unsigned status = 0;

	cr_assert(eq(int, gnutls_load_file(cert, &c), 0));
	cr_assert(eq(int, gnutls_load_file(ca, &a), 0));
	gnutls_x509_crt_init(&crt);
	gnutls_x509_crt_init(&cacrt);
	cr_assert(eq(int, gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM), 0));
	cr_assert(eq(int, gnutls_x509_crt_import(cacrt, &a, GNUTLS_X509_FMT_PEM), 0));
	cr_assert(eq(int, gnutls_x509_crt_verify(crt, &cacrt, 1, 0, &status), 0));
	if (host && !gnutls_x509_crt_check_hostname(crt, host))
		status |= 0x80000000u;
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_crt_deinit(cacrt);
	gnutls_free(c.data);
	gnutls_free(a.data);
	return status;
}

Test(tls, init_dir_makes_a_ca_and_a_server_certificate)
{
	char err[512];
	bool made = false;

	cr_assert(eq(int, drv_tls_init_dir(dir, "localhost,127.0.0.1,::1,node1.example", &made,
					   err, sizeof(err)), 0), "%s", err);
	cr_assert(made);
	cr_assert(eq(u32, mode_of(at("ca-key.pem")), 0600));
	cr_assert(eq(u32, mode_of(at("server-key.pem")), 0600));
	cr_assert(eq(u32, mode_of(at("ca.pem")), 0644));
	cr_assert(eq(u32, mode_of(at("server.pem")), 0644));
	cr_assert(eq(u32, mode_of(dir), 0700));
	cr_assert(eq(u32, verify(at("server.pem"), at("ca.pem"), "127.0.0.1"), 0));
	cr_assert(eq(u32, verify(at("server.pem"), at("ca.pem"), "node1.example"), 0));
	cr_assert(eq(u32, verify(at("server.pem"), at("ca.pem"), "::1"), 0));
	cr_assert(ne(u32, verify(at("server.pem"), at("ca.pem"), "other.example"), 0));
	/* a second call keeps what is there */
	cr_assert(eq(int, drv_tls_init_dir(dir, "localhost", &made, err, sizeof(err)), 0));
	cr_assert(not(made));
}

Test(tls, certtool_agrees)
{
	char cmd[512];

	if (access("/usr/bin/certtool", X_OK) != 0)
		cr_skip_test("certtool not installed (gnutls-bin)");
	cr_assert(eq(int, drv_tls_init_dir(dir, "localhost,10.1.2.3", NULL, cmd, sizeof(cmd)), 0));
	snprintf(cmd, sizeof(cmd),
		 "certtool --verify --load-ca-certificate %s/ca.pem --infile %s/server.pem "
		 "--verify-hostname 10.1.2.3 >/dev/null 2>&1", dir, dir);
	cr_assert(eq(int, system(cmd), 0), "%s", cmd);
	snprintf(cmd, sizeof(cmd),
		 "certtool --verify --load-ca-certificate %s/ca.pem --infile %s/server.pem "
		 "--verify-hostname 10.1.2.4 >/dev/null 2>&1", dir, dir);
	cr_assert(ne(int, system(cmd), 0), "a name not in the certificate passed");
}

Test(tls, bad_names_are_refused)
{
	char err[512];

	cr_assert(eq(int, drv_tls_make_ca(at("ca.pem"), at("ca-key.pem"), "t", err, sizeof(err)),
		     0), "%s", err);
	cr_assert(eq(int, drv_tls_make_cert(at("ca.pem"), at("ca-key.pem"), "a,,b", at("s.pem"),
					    at("s-key.pem"), err, sizeof(err)), DRV_EINVAL));
	cr_assert(ne(ptr, strstr(err, "separated by commas"), NULL), "%s", err);
	cr_assert(eq(int, drv_tls_make_cert(at("nope.pem"), at("ca-key.pem"), "a", at("s.pem"),
					    at("s-key.pem"), err, sizeof(err)), DRV_EIO));
	cr_assert(ne(ptr, strstr(err, "nope.pem"), NULL), "%s", err);
}

/* A TLS server on dir's server.pem; its https URL in url. */
static struct drv_http_server *serve(char *url, size_t n)
{
	struct drv_http_server_opts o = { at("server.pem"), at("server-key.pem") };
	struct drv_http_server *s = NULL;
	char err[512];

	cr_assert(eq(int, drv_tls_init_dir(dir, "localhost,127.0.0.1", NULL, err, sizeof(err)), 0),
		  "%s", err);
	cr_assert(eq(int, drv_http_server_start_opts("127.0.0.1:0", &o, routes, NULL, NULL, &s,
						     err, sizeof(err)), 0), "%s", err);
	cr_assert(drv_http_server_tls(s));
	snprintf(url, n, "https://127.0.0.1:%d", drv_http_server_port(s));
	return s;
}

/* GET /hello on url trusting ca (NULL: the system's): rc, status, c.err. */
static int get(const char *url, const char *ca, long *status, char *err, size_t errsz)
{
	struct drv_http_client c;
	json_t *j = NULL;
	int rc;

	drv_http_client_init(&c, url, NULL);
	drv_http_client_set_ca(&c, ca);
	c.timeout_ms = 5000;
	*status = 0;
	rc = drv_http_json(&c, "GET", "/hello", NULL, -1, status, &j);
	if (rc == 0)
		cr_assert(eq(str, (char *)drv_json_str(j, "hello"), "tls"));
	snprintf(err, errsz, "%s", c.err);
	json_decref(j);
	drv_http_client_release(&c);
	return rc;
}

Test(tls, https_with_the_ca_answers)
{
	char url[96], err[1024];
	struct drv_http_server *s = serve(url, sizeof(url));
	long st;

	cr_assert(eq(int, get(url, at("ca.pem"), &st, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(long, st, 200));
	/* the certificate names localhost too */
	snprintf(url, sizeof(url), "https://localhost:%d", drv_http_server_port(s));
	cr_assert(eq(int, get(url, at("ca.pem"), &st, err, sizeof(err)), 0), "%s", err);
	drv_http_server_stop(s);
}

Test(tls, another_ca_or_none_is_refused_in_words)
{
	char url[96], err[1024], other[160];
	struct drv_http_server *s = serve(url, sizeof(url));
	long st;

	snprintf(other, sizeof(other), "%s", at("other-ca.pem"));
	cr_assert(eq(int, drv_tls_make_ca(other, at("other-ca-key.pem"), "x", err, sizeof(err)), 0));
	cr_assert(eq(int, get(url, other, &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "certificate is not trusted by the CA in"), NULL), "%s", err);
	cr_assert(ne(ptr, strstr(err, other), NULL), "%s", err);
	cr_assert(eq(int, get(url, NULL, &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "the system's CAs"), NULL), "%s", err);
	cr_assert(eq(int, get(url, at("missing.pem"), &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "missing.pem"), NULL), "%s", err);
	drv_http_server_stop(s);
}

Test(tls, a_name_not_in_the_certificate_is_refused)
{
	char url[96], err[1024];
	struct drv_http_server *s = serve(url, sizeof(url));
	long st;

	/* the same CA, a certificate that does not name 127.0.0.1 */
	drv_http_server_stop(s);
	cr_assert(eq(int, drv_tls_make_cert(at("ca.pem"), at("ca-key.pem"), "node9.example",
					    at("server.pem"), at("server-key.pem"), err,
					    sizeof(err)), 0));
	s = serve(url, sizeof(url));
	cr_assert(eq(int, get(url, at("ca.pem"), &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "does not name this host"), NULL), "%s", err);
	drv_http_server_stop(s);
}

Test(tls, plain_http_to_the_tls_port_fails_cleanly)
{
	char url[96], err[1024];
	struct drv_http_server *s = serve(url, sizeof(url));
	long st;

	memmove(url + 4, url + 5, strlen(url + 5) + 1);   /* https -> http */
	cr_assert(eq(int, get(url, NULL, &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "use an https:// URL"), NULL), "%s", err);
	/* and the server still answers https afterwards */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", drv_http_server_port(s));
	cr_assert(eq(int, get(url, at("ca.pem"), &st, err, sizeof(err)), 0), "%s", err);
	drv_http_server_stop(s);
}

Test(tls, only_tls_1_2_and_1_3_are_offered)
{
	char url[96], cmd[512];
	struct drv_http_server *s = serve(url, sizeof(url));
	int port = drv_http_server_port(s);

	if (access("/usr/bin/gnutls-cli", X_OK) != 0) {
		drv_http_server_stop(s);
		cr_skip_test("gnutls-cli not installed (gnutls-bin)");
	}
	snprintf(cmd, sizeof(cmd), "gnutls-cli --x509cafile %s/ca.pem --priority "
		 "NORMAL:-VERS-ALL:+VERS-TLS1.1 -p %d 127.0.0.1 </dev/null >/dev/null 2>&1",
		 dir, port);
	cr_assert(ne(int, system(cmd), 0), "TLS 1.1 was accepted");
	snprintf(cmd, sizeof(cmd), "gnutls-cli --x509cafile %s/ca.pem --priority "
		 "NORMAL:-VERS-ALL:+VERS-TLS1.2 -p %d 127.0.0.1 </dev/null >/dev/null 2>&1",
		 dir, port);
	cr_assert(eq(int, system(cmd), 0), "TLS 1.2 was refused");
	drv_http_server_stop(s);
}

Test(tls, https_to_a_plain_server_fails_cleanly)
{
	struct drv_http_server *s = NULL;
	char url[96], err[1024];
	long st;

	cr_assert(eq(int, drv_http_server_start("127.0.0.1:0", routes, NULL, NULL, &s, err,
						sizeof(err)), 0));
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", drv_http_server_port(s));
	cr_assert(eq(int, get(url, NULL, &st, err, sizeof(err)), DRV_ECONN));
	cr_assert(ne(ptr, strstr(err, "TLS handshake failed"), NULL), "%s", err);
	drv_http_server_stop(s);
}

Test(tls, a_lax_key_file_or_a_wrong_key_is_refused)
{
	struct drv_http_server_opts o = { at("server.pem"), at("server-key.pem") };
	struct drv_http_server *s = NULL;
	char err[512];

	cr_assert(eq(int, drv_tls_init_dir(dir, "localhost", NULL, err, sizeof(err)), 0));
	chmod(at("server-key.pem"), 0644);
	cr_assert(eq(int, drv_http_server_start_opts("127.0.0.1:0", &o, routes, NULL, NULL, &s,
						     err, sizeof(err)), DRV_EPERM));
	cr_assert(ne(ptr, strstr(err, "server-key.pem"), NULL), "%s", err);
	chmod(at("server-key.pem"), 0600);
	o.tls_key_file = at("ca-key.pem");
	cr_assert(eq(int, drv_http_server_start_opts("127.0.0.1:0", &o, routes, NULL, NULL, &s,
						     err, sizeof(err)), DRV_EINVAL));
	cr_assert(ne(ptr, strstr(err, "the key is not this certificate's"), NULL), "%s", err);
	o.tls_key_file = NULL;
	cr_assert(eq(int, drv_http_server_start_opts("127.0.0.1:0", &o, routes, NULL, NULL, &s,
						     err, sizeof(err)), DRV_EINVAL));
	cr_assert(ne(ptr, strstr(err, "both"), NULL), "%s", err);
}

Test(tls, loopback_addresses)
{
	cr_assert(drv_http_addr_loopback("127.0.0.1:8080"));
	cr_assert(drv_http_addr_loopback("127.1.2.3:1"));
	cr_assert(drv_http_addr_loopback("localhost:8080"));
	cr_assert(not(drv_http_addr_loopback("0.0.0.0:8080")));
	cr_assert(not(drv_http_addr_loopback(":8080")));
	cr_assert(not(drv_http_addr_loopback("10.0.0.1:8080")));
}

Test(tls, local_names_hold_loopback_and_this_host)
{
	char names[600], host[256] = "", err[512], *copy, *tok, *save = NULL;

	drv_tls_local_names(names, sizeof(names));
	cr_assert(eq(int, strncmp(names, "localhost,127.0.0.1,::1", 23), 0), "%s", names);
	gethostname(host, sizeof(host) - 1);
	if (host[0] && strcmp(host, "localhost"))
		cr_assert(ne(ptr, strstr(names, host), NULL), "%s lacks %s", names, host);
	/* every one of them goes into a certificate that names it */
	cr_assert(eq(int, drv_tls_init_dir(dir, names, NULL, err, sizeof(err)), 0), "%s", err);
	copy = strdup(names);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		cr_assert(eq(u32, verify(at("server.pem"), at("ca.pem"), tok), 0), "%s", tok);
	free(copy);
}
