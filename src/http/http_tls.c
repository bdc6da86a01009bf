/*
 * http_tls.c: TLS for src/http on GnuTLS: the certificate and key a server
 * serves https with (read, checked against each other, handed to
 * libmicrohttpd), and a small CA with certificates signed by it for a
 * first cluster (drover up --tls, drover tls): GnuTLS's x509 API, ECDSA
 * P-256 keys, SHA-256 signatures.
 *
 * A key is a secret like a token (CONTRACTS.md §6): read only from a file
 * no one else may read, written 0600.
 */
#include "http_int.h"

#include "drover/fsutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#define PEM_MAX (1u << 20)

/* GnuTLS's message for g without its final period, for our sentences. */
static const char *gnutls_why(int g, char *buf, size_t n)
{
	size_t len;

	snprintf(buf, n, "%s", gnutls_strerror(g));
	len = strlen(buf);
	if (len && buf[len - 1] == '.')
		buf[len - 1] = '\0';
	return buf;
}

bool drv_http_token_eq(const char *want, const char *got)
{
	size_t n = want ? strlen(want) : 0;

	return want && got && strlen(got) == n && gnutls_memcmp(want, got, n) == 0;
}

/* --- a server's certificate and key --------------------------------------- */

/* The key file: owner-only (as a token file), PEM; into *out. */
static int read_key(const char *path, char **out, char *err, size_t errsz)
{
	char why[600];
	int rc = drv_secret_file_read(path, out, why, sizeof(why));

	if (rc == 0)
		return 0;
	snprintf(err, errsz, "TLS key: %s", why);
	return rc == DRV_EPERM ? DRV_EPERM : DRV_EINVAL;
}

/* Whether GnuTLS takes cert and key together: a clear line if not. */
static int check_pair(const struct drv_http_tls_pem *p, char *err, size_t errsz)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t c = { (unsigned char *)p->cert, (unsigned)strlen(p->cert) };
	gnutls_datum_t k = { (unsigned char *)p->key, (unsigned)strlen(p->key) };
	char why[200];
	int g;

	if (gnutls_certificate_allocate_credentials(&cred) < 0) {
		snprintf(err, errsz, "TLS: cannot allocate GnuTLS credentials");
		return DRV_EIO;
	}
	g = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	if (g >= 0)
		return 0;
	snprintf(err, errsz, "TLS certificate %s with key %s: %s%s", p->cert_file, p->key_file,
		 gnutls_why(g, why, sizeof(why)),
		 g == GNUTLS_E_CERTIFICATE_KEY_MISMATCH ? " (the key is not this certificate's)"
							: "; expected PEM files");
	return DRV_EINVAL;
}

int http_tls_load(struct drv_http_tls_pem *p, const char *cert_file, const char *key_file,
		  char *err, size_t errsz)
{
	int rc;

	memset(p, 0, sizeof(*p));
	if (!cert_file || !key_file || !*cert_file || !*key_file) {
		snprintf(err, errsz, "TLS needs both a certificate file and a key file");
		return DRV_EINVAL;
	}
	p->cert_file = cert_file;
	p->key_file = key_file;
	if (drv_file_read(cert_file, PEM_MAX, &p->cert, NULL) < 0) {
		snprintf(err, errsz, "TLS certificate: cannot read %s: %s", cert_file,
			 strerror(errno));
		return DRV_EINVAL;
	}
	rc = read_key(key_file, &p->key, err, errsz);
	if (rc == 0)
		rc = check_pair(p, err, errsz);
	if (rc < 0)
		http_tls_release(p);
	return rc;
}

void http_tls_release(struct drv_http_tls_pem *p)
{
	drv_free(p->cert);
	if (p->key) {
		explicit_bzero(p->key, strlen(p->key));
		drv_free(p->key);
	}
	memset(p, 0, sizeof(*p));
}

/* --- addresses ------------------------------------------------------------ */

bool drv_http_addr_loopback(const char *addr)
{
	char host[256];
	struct in_addr a4;
	int port;

	if (drv_http_parse_addr(addr, host, sizeof(host), &port) < 0)
		return false;
	if (strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "[::1]") == 0)
		return true;
	return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* --- making a CA and certificates ----------------------------------------- */

/* A GnuTLS failure as one line; returns DRV_EINVAL. */
static int gerr(char *err, size_t errsz, const char *what, const char *path, int g)
{
	char why[200];

	snprintf(err, errsz, "%s%s%s: %s", what, path ? " " : "", path ? path : "",
		 gnutls_why(g, why, sizeof(why)));
	return DRV_EINVAL;
}

struct pem_out {
	gnutls_datum_t d;
};

static int put_pem(FILE *f, void *arg)
{
	const struct pem_out *o = arg;

	return fwrite(o->d.data, 1, o->d.size, f) == o->d.size ? 0 : DRV_EIO;
}

/* Writes d (then frees it) to path with mode. */
static int write_datum(const char *path, gnutls_datum_t *d, mode_t mode, char *err,
		       size_t errsz)
{
	struct pem_out o = { *d };
	int rc = drv_file_write_atomic(path, mode, put_pem, &o);

	if (rc < 0)
		snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
	gnutls_memset(d->data, 0, d->size);
	gnutls_free(d->data);
	d->data = NULL;
	return rc < 0 ? DRV_EIO : 0;
}

static int new_key(gnutls_x509_privkey_t *key, char *err, size_t errsz)
{
	int g = gnutls_x509_privkey_init(key);

	if (g >= 0)
		g = gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA,
						 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	return g < 0 ? gerr(err, errsz, "cannot make a key", NULL, g) : 0;
}

/* A fresh certificate of key: version 3, random serial, validity, CN. */
static int new_crt(gnutls_x509_crt_t *crt, gnutls_x509_privkey_t key, const char *cn,
		   int days, char *err, size_t errsz)
{
	unsigned char serial[16];
	time_t now = time(NULL);
	int g;

	if ((g = gnutls_x509_crt_init(crt)) < 0)
		return gerr(err, errsz, "cannot make a certificate", NULL, g);
	if ((g = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		return gerr(err, errsz, "cannot make a serial number", NULL, g);
	serial[0] &= 0x7f;   /* a positive number */
	serial[0] |= 0x01;   /* of the full length */
	g = gnutls_x509_crt_set_version(*crt, 3);
	if (g >= 0)
		g = gnutls_x509_crt_set_serial(*crt, serial, sizeof(serial));
	if (g >= 0)
		g = gnutls_x509_crt_set_activation_time(*crt, now - 3600);
	if (g >= 0)
		g = gnutls_x509_crt_set_expiration_time(*crt, now + (time_t)days * 86400);
	if (g >= 0)
		g = gnutls_x509_crt_set_dn_by_oid(*crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
						  (unsigned)strlen(cn));
	if (g >= 0)
		g = gnutls_x509_crt_set_key(*crt, key);
	return g < 0 ? gerr(err, errsz, "cannot fill a certificate", NULL, g) : 0;
}

/* The subject key id of crt (from its key) set on it. */
static int set_key_id(gnutls_x509_crt_t crt)
{
	unsigned char id[64];
	size_t n = sizeof(id);
	int g = gnutls_x509_crt_get_key_id(crt, 0, id, &n);

	return g < 0 ? g : gnutls_x509_crt_set_subject_key_id(crt, id, n);
}

/* Signs crt with the issuer's certificate and key. */
static int sign(gnutls_x509_crt_t crt, gnutls_x509_crt_t issuer, gnutls_x509_privkey_t ikey)
{
	gnutls_privkey_t pk;
	int g = gnutls_privkey_init(&pk);

	if (g < 0)
		return g;
	g = gnutls_privkey_import_x509(pk, ikey, 0);
	if (g >= 0)
		g = gnutls_x509_crt_privkey_sign(crt, issuer, pk, GNUTLS_DIG_SHA256, 0);
	gnutls_privkey_deinit(pk);
	return g;
}

/* Exports crt and key to their files (0644, 0600). */
static int save(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cert_path,
		const char *key_path, char *err, size_t errsz)
{
	gnutls_datum_t c = { 0 }, k = { 0 };
	int g = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c), rc;

	if (g >= 0)
		g = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL,
						      GNUTLS_PKCS_PLAIN, &k);
	if (g < 0) {
		gnutls_free(c.data);
		return gerr(err, errsz, "cannot export", cert_path, g);
	}
	rc = write_datum(key_path, &k, 0600, err, errsz);
	if (rc == 0)
		rc = write_datum(cert_path, &c, 0644, err, errsz);
	gnutls_free(k.data);
	gnutls_free(c.data);
	return rc;
}

int drv_tls_make_ca(const char *cert_path, const char *key_path, const char *cn, char *err,
		    size_t errsz)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	int g, rc;

	rc = new_key(&key, err, errsz);
	if (rc == 0)
		rc = new_crt(&crt, key, cn, DRV_TLS_CA_DAYS, err, errsz);
	if (rc < 0)
		goto out;
	g = gnutls_x509_crt_set_basic_constraints(crt, 1, 0);
	if (g >= 0)
		g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN |
							       GNUTLS_KEY_CRL_SIGN);
	if (g >= 0)
		g = set_key_id(crt);
	if (g >= 0)
		g = sign(crt, crt, key);
	rc = g < 0 ? gerr(err, errsz, "cannot make the CA", cert_path, g)
		   : save(crt, key, cert_path, key_path, err, errsz);
out:
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return rc;
}

/* Reads a PEM file into a datum (gnutls_free it): 0 or DRV_EIO. */
static int load_datum(const char *path, gnutls_datum_t *d, char *err, size_t errsz)
{
	int g = gnutls_load_file(path, d);

	if (g < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno ? errno : EIO));
		return DRV_EIO;
	}
	return 0;
}

/* The CA's certificate and key from their files. */
static int load_ca(const char *ca_cert, const char *ca_key, gnutls_x509_crt_t *crt,
		   gnutls_x509_privkey_t *key, char *err, size_t errsz)
{
	gnutls_datum_t c = { 0 }, k = { 0 };
	int g, rc = load_datum(ca_cert, &c, err, errsz);

	if (rc == 0)
		rc = load_datum(ca_key, &k, err, errsz);
	if (rc < 0)
		goto out;
	if ((g = gnutls_x509_crt_init(crt)) >= 0)
		g = gnutls_x509_crt_import(*crt, &c, GNUTLS_X509_FMT_PEM);
	if (g < 0) {
		rc = gerr(err, errsz, "not a PEM certificate:", ca_cert, g);
		goto out;
	}
	if ((g = gnutls_x509_privkey_init(key)) >= 0)
		g = gnutls_x509_privkey_import2(*key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (g < 0)
		rc = gerr(err, errsz, "not a PEM private key:", ca_key, g);
out:
	if (k.data) {
		gnutls_memset(k.data, 0, k.size);
		gnutls_free(k.data);
	}
	gnutls_free(c.data);
	return rc;
}

/* Each name of the comma-separated list into crt's subjectAltName. */
static int set_names(gnutls_x509_crt_t crt, const char *names, char *err, size_t errsz)
{
	const char *p = names;

	while (*p) {
		size_t n = strcspn(p, ",");
		char name[256];
		unsigned char ip[16];
		int g;

		if (n == 0 || n >= sizeof(name)) {
			snprintf(err, errsz, "names '%s': expected DNS names and IP addresses "
				 "separated by commas", names);
			return DRV_EINVAL;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (inet_pton(AF_INET, name, ip) == 1)
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
								 GNUTLS_FSAN_APPEND);
		else if (inet_pton(AF_INET6, name, ip) == 1)
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
								 GNUTLS_FSAN_APPEND);
		else
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name,
								 (unsigned)n, GNUTLS_FSAN_APPEND);
		if (g < 0)
			return gerr(err, errsz, "cannot add the name", name, g);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The leaf's extensions: not a CA, signing, server and client use, the
 * issuer's key id. */
static int leaf_extensions(gnutls_x509_crt_t crt, gnutls_x509_crt_t ca)
{
	unsigned char id[64];
	size_t n = sizeof(id);
	int g = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);

	if (g >= 0)
		g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
	if (g >= 0)
		g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (g >= 0)
		g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0);
	if (g >= 0)
		g = set_key_id(crt);
	if (g >= 0 && gnutls_x509_crt_get_subject_key_id(ca, id, &n, NULL) >= 0)
		g = gnutls_x509_crt_set_authority_key_id(crt, id, n);
	return g;
}

int drv_tls_make_cert(const char *ca_cert, const char *ca_key, const char *names,
		      const char *cert_path, const char *key_path, char *err, size_t errsz)
{
	gnutls_x509_crt_t ca = NULL, crt = NULL;
	gnutls_x509_privkey_t cakey = NULL, key = NULL;
	char cn[256];
	int g, rc;

	if (!names || !*names) {
		snprintf(err, errsz, "a certificate needs at least one name");
		return DRV_EINVAL;
	}
	snprintf(cn, sizeof(cn), "%.*s", (int)strcspn(names, ","), names);
	rc = load_ca(ca_cert, ca_key, &ca, &cakey, err, errsz);
	if (rc == 0)
		rc = new_key(&key, err, errsz);
	if (rc == 0)
		rc = new_crt(&crt, key, cn, DRV_TLS_CERT_DAYS, err, errsz);
	if (rc == 0)
		rc = set_names(crt, names, err, errsz);
	if (rc < 0)
		goto out;
	g = leaf_extensions(crt, ca);
	if (g >= 0)
		g = sign(crt, ca, cakey);
	rc = g < 0 ? gerr(err, errsz, "cannot sign", cert_path, g)
		   : save(crt, key, cert_path, key_path, err, errsz);
out:
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	if (ca)
		gnutls_x509_crt_deinit(ca);
	if (cakey)
		gnutls_x509_privkey_deinit(cakey);
	return rc;
}

/* Whether the certificate at path was signed by the CA at ca_path. */
static bool signed_by(const char *path, const char *ca_path)
{
	gnutls_datum_t c = { 0 }, a = { 0 };
	gnutls_x509_crt_t crt = NULL, ca = NULL;
	unsigned status = 1;

	if (gnutls_load_file(path, &c) >= 0 && gnutls_load_file(ca_path, &a) >= 0 &&
	    gnutls_x509_crt_init(&crt) >= 0 && gnutls_x509_crt_init(&ca) >= 0 &&
	    gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM) >= 0 &&
	    gnutls_x509_crt_import(ca, &a, GNUTLS_X509_FMT_PEM) >= 0 &&
	    gnutls_x509_crt_verify(crt, &ca, 1, 0, &status) < 0)
		status = 1;
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (ca)
		gnutls_x509_crt_deinit(ca);
	gnutls_free(c.data);
	gnutls_free(a.data);
	return status == 0;
}

static bool exists(const char *dir, const char *leaf, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", dir, leaf);
	return access(path, F_OK) == 0;
}

int drv_tls_init_dir(const char *dir, const char *names, bool *made, char *err, size_t errsz)
{
	char ca[4096], cakey[4096], crt[4096], key[4096];
	bool have_ca, have_crt;
	int rc = 0;

	if (made)
		*made = false;
	if (drv_mkdir_p(dir, 0700) < 0) {
		snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
		return DRV_EIO;
	}
	have_ca = exists(dir, "ca.pem", ca, sizeof(ca)) & exists(dir, "ca-key.pem", cakey, sizeof(cakey));
	have_crt = exists(dir, "server.pem", crt, sizeof(crt)) &
		   exists(dir, "server-key.pem", key, sizeof(key));
	if (!have_ca)
		rc = drv_tls_make_ca(ca, cakey, "drover CA", err, errsz);
	if (rc == 0 && (!have_ca || !have_crt || !signed_by(crt, ca))) {
		rc = drv_tls_make_cert(ca, cakey, names, crt, key, err, errsz);
		if (made)
			*made = true;
	}
	if (made && !have_ca)
		*made = true;
	return rc;
}

/* ",ADDR" for each address of a non-loopback interface (IPv4, and IPv6
 * but link-local), while buf has room for it. */
static void add_addresses(char *buf, size_t bufsz)
{
	struct ifaddrs *ifs, *i;

	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;
		char a[INET6_ADDRSTRLEN];
		size_t n = strlen(buf);

		if (!sa || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
		else if (sa->sa_family == AF_INET6 &&
			 !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr))
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
		else
			continue;
		if (n + strlen(a) + 2 <= bufsz)
			snprintf(buf + n, bufsz - n, ",%s", a);
	}
	freeifaddrs(ifs);
}

const char *drv_tls_local_names(char *buf, size_t bufsz)
{
	char host[256] = "";
	size_t n;

	snprintf(buf, bufsz, "localhost,127.0.0.1,::1");
	if (gethostname(host, sizeof(host) - 1) == 0 && host[0] && strcmp(host, "localhost")) {
		n = strlen(buf);
		snprintf(buf + n, bufsz - n, ",%s", host);
		if (strchr(host, '.')) {
			n = strlen(buf);
			snprintf(buf + n, bufsz - n, ",%.*s", (int)strcspn(host, "."), host);
		}
	}
	add_addresses(buf, bufsz);
	return buf;
}

/* --- base64 ----------------------------------------------------------------- */

char *drv_base64_encode(const void *data, size_t len)
{
	gnutls_datum_t in = { (unsigned char *)data, (unsigned)len }, out = { NULL, 0 };
	char *r;

	if (len == 0)
		return drv_strdup("");
	if (len > UINT32_MAX / 2 || gnutls_base64_encode2(&in, &out) < 0)
		abort();   /* out of memory: as drv_malloc */
	r = drv_strndup((const char *)out.data, out.size);
	gnutls_free(out.data);
	return r;
}

int drv_base64_decode(const char *in, unsigned char **out, size_t *n)
{
	gnutls_datum_t b = { (unsigned char *)in, (unsigned)strlen(in) }, o = { NULL, 0 };

	*out = NULL;
	*n = 0;
	if (b.size == 0) {
		*out = drv_calloc(1, 1);
		return 0;
	}
	if (strlen(in) > UINT32_MAX / 2 || strlen(in) % 4 != 0 ||
	    gnutls_base64_decode2(&b, &o) < 0)
		return DRV_EINVAL;
	*out = drv_malloc((size_t)o.size + 1);
	memcpy(*out, o.data, o.size);
	(*out)[o.size] = 0;
	*n = o.size;
	gnutls_free(o.data);
	return 0;
}
