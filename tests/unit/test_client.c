/*
 * test_client.c: the client's pieces that need no server: where it talks
 * to (flags > environment > config file > default), the config file's
 * format, the output formats (YAML keeps types, tables align), the
 * readers of the server's JSON, and the content type a file is sent with.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drover/client.h"
#include "drover/common.h"

static char dir[] = "/tmp/drover-client-test.XXXXXX";

static void write_config(const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/drover", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/drover/config", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	cr_assert(mkdtemp(dir) != NULL);
	setenv("XDG_CONFIG_HOME", dir, 1);
	unsetenv("DROVER_SERVER");
	unsetenv("DROVER_TOKEN");
	unsetenv("DROVER_CA_FILE");
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(eq(int, system(cmd), 0));
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

TestSuite(client, .init = setup, .fini = teardown);

Test(client, default_server_without_anything)
{
	struct drv_client_conf c;
	char err[256];
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(str, c.server, "http://127.0.0.1:8080"));
	cr_assert(eq(ptr, c.token, NULL));
	cr_assert(eq(str, c.source, "default"));
	drv_client_conf_release(&c);
}

Test(client, config_file_then_env_then_flags_win)
{
	struct drv_client_conf c;
	char err[256];

	write_config("server: http://10.0.0.1:9000/\ntoken: file-token\nextra: ignored\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(str, c.server, "http://10.0.0.1:9000"));
	cr_assert(eq(str, c.token, "file-token"));
	drv_client_conf_release(&c);

	setenv("DROVER_SERVER", "10.0.0.2:9001", 1);
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(str, c.server, "http://10.0.0.2:9001"));
	cr_assert(eq(str, c.token, "file-token"), "the token still comes from the file");
	cr_assert(eq(str, c.source, "DROVER_SERVER"));
	drv_client_conf_release(&c);

	setenv("DROVER_TOKEN", "env-token", 1);
	cr_assert(eq(int, drv_client_conf_resolve(&c, "https://x:1", "flag-token", NULL, err,
						  sizeof(err)), 0));
	cr_assert(eq(str, c.server, "https://x:1"));
	cr_assert(eq(str, c.token, "flag-token"));
	drv_client_conf_release(&c);

	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(str, c.token, "env-token"));
	drv_client_conf_release(&c);
}

Test(client, ca_file_from_flag_env_or_file)
{
	struct drv_client_conf c;
	char err[256], want[512];

	write_config("server: https://10.0.0.1:9000\nca_file: tls/ca.pem\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	snprintf(want, sizeof(want), "%s/drover/tls/ca.pem", dir);
	cr_assert(eq(str, c.ca_file, want), "relative to the config file's folder");
	drv_client_conf_release(&c);

	setenv("DROVER_CA_FILE", "/etc/env-ca.pem", 1);
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(str, c.ca_file, "/etc/env-ca.pem"));
	drv_client_conf_release(&c);

	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, "/flag-ca.pem", err,
						  sizeof(err)), 0));
	cr_assert(eq(str, c.ca_file, "/flag-ca.pem"));
	drv_client_conf_release(&c);
	unsetenv("DROVER_CA_FILE");

	write_config("server: http://h:1\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), 0));
	cr_assert(eq(ptr, c.ca_file, NULL), "none: the system's CAs");
	drv_client_conf_release(&c);
}

Test(client, bad_config_file_is_an_error_not_ignored)
{
	struct drv_client_conf c;
	char err[256] = "";

	char want[512];

	write_config("- server\n- token\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), DRV_EPARSE));
	snprintf(want, sizeof(want), "%s/drover/config:1:3: error: found a list, expected a "
		 "mapping with 'server' and 'token'", dir);
	cr_assert(eq(str, err, want), "file:line:col: error: ...");

	write_config("server: http://h:1\ntoken:\n  {a: 1}\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), DRV_EPARSE));
	snprintf(want, sizeof(want), "%s/drover/config:3:4: error: token: found a mapping, "
		 "expected a string", dir);
	cr_assert(eq(str, err, want));

	write_config("server: http://h:1\ntoken: 'x\n");
	cr_assert(eq(int, drv_client_conf_resolve(&c, NULL, NULL, NULL, err, sizeof(err)), DRV_EPARSE));
	snprintf(want, sizeof(want), "%s/drover/config:", dir);
	cr_assert(eq(int, strncmp(err, want, strlen(want)), 0), "%s", err);
	cr_assert(strstr(err, ": error: YAML syntax: ") != NULL, "%s", err);

	/* flags for both: the file is not read at all */
	cr_assert(eq(int, drv_client_conf_resolve(&c, "h:1", "t", NULL, err, sizeof(err)), 0));
	drv_client_conf_release(&c);
}

Test(client, empty_config_file_is_empty)
{
	struct drv_client_conf f;
	char err[128];
	cr_assert(eq(int, drv_client_conf_parse("\n  \n", 4, &f, err, sizeof(err)), 0));
	cr_assert(eq(ptr, f.server, NULL));
	cr_assert(eq(ptr, f.token, NULL));
	cr_assert(eq(ptr, f.ca_file, NULL));
}

Test(client, several_servers_from_a_list_or_commas)
{
	struct drv_client_conf f, c;
	const char *list = "server: [http://a:1, 'b:2/']\ntoken: t\n";
	char err[256];

	cr_assert(eq(int, drv_client_conf_parse(list, strlen(list), &f, err, sizeof(err)), 0), "%s",
		  err);
	cr_assert(eq(str, f.server, "http://a:1,b:2/"));
	drv_client_conf_release(&f);
	list = "server: [http://a:1, [x]]\n";
	cr_assert(eq(int, drv_client_conf_parse(list, strlen(list), &f, err, sizeof(err)),
		     DRV_EPARSE));
	cr_assert(ne(ptr, strstr(err, "server[]: found"), NULL), "%s", err);
	/* each URL normalised: a scheme added, trailing slashes dropped */
	cr_assert(eq(int, drv_client_conf_resolve(&c, "a:1/, https://b:2/", "t", NULL, err,
						  sizeof(err)), 0));
	cr_assert(eq(str, c.server, "http://a:1,https://b:2"));
	drv_client_conf_release(&c);
}

static char *capture(int (*fn)(FILE *, const json_t *), const json_t *v)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	cr_assert(eq(int, fn(f, v), 0));
	fclose(f);
	return buf;
}

Test(client, yaml_keeps_the_types_json_has)
{
	json_t *v = json_pack("{s:[{s:s,s:i,s:b,s:s,s:s,s:n,s:s,s:s,s:[]}]}", "items", "id", "42",
			      "n", 42, "b", 1, "s", "true", "e", "", "nul", "name", "training-job",
			      "m", "a: b", "arr");
	char *y = capture(drv_emit_yaml, v);
	cr_assert(strstr(y, "id: \"42\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "n: 42\n") != NULL, "%s", y);
	cr_assert(strstr(y, "b: true\n") != NULL, "%s", y);
	cr_assert(strstr(y, "s: \"true\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "e: \"\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "nul: null\n") != NULL, "%s", y);
	cr_assert(strstr(y, "name: training-job\n") != NULL, "%s", y);
	cr_assert(strstr(y, "m: \"a: b\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "arr: []\n") != NULL, "%s", y);
	free(y);
	json_decref(v);
	/* strings the emitter would leave plain although they read back wrong */
	v = json_pack("{s:s,s:s,s:s,s:s}", "c", "#not a comment", "t", "!tag", "b", "|block",
		      "img", "pytorch/pytorch:2.4-cuda12.4");
	y = capture(drv_emit_yaml, v);
	cr_assert(strstr(y, "c: \"#not a comment\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "t: \"!tag\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "b: \"|block\"\n") != NULL, "%s", y);
	cr_assert(strstr(y, "img: pytorch/pytorch:2.4-cuda12.4\n") != NULL, "%s", y);
	free(y);
	y = capture(drv_emit_json, v);
	cr_assert(strstr(y, "\"c\": \"#not a comment\"") != NULL, "%s", y);
	free(y);
	json_decref(v);
}

Test(client, table_pads_columns_and_dashes_empty_cells)
{
	static const char *const h[] = { "ID", "NAME", "STATE" };
	const char *r1[] = { "1", "a-long-name", "running" };
	const char *r2[] = { "12", "", NULL };
	struct drv_table t;
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	drv_table_init(&t, 3, h);
	drv_table_add(&t, r1);
	drv_table_add(&t, r2);
	drv_table_print(&t, f);
	fclose(f);
	cr_assert(eq(str, buf,
		     "ID  NAME         STATE\n"
		     "1   a-long-name  running\n"
		     "12  -            -\n"));
	drv_table_release(&t);
	free(buf);
}

Test(client, durations_print_like_squeue)
{
	char b[32];
	cr_assert(eq(str, drv_fmt_duration(0, b, sizeof(b)), "0:00"));
	cr_assert(eq(str, drv_fmt_duration(65, b, sizeof(b)), "1:05"));
	cr_assert(eq(str, drv_fmt_duration(3600 + 120 + 3, b, sizeof(b)), "1:02:03"));
	cr_assert(eq(str, drv_fmt_duration(86400 * 2 + 5, b, sizeof(b)), "2-00:00:05"));
	cr_assert(eq(str, drv_fmt_duration(-5, b, sizeof(b)), "0:00"));
}

Test(client, json_readers)
{
	json_t *o = json_pack("{s:s,s:i,s:s,s:n,s:f}", "t", "2026-11-30T01:02:03Z", "i", 7, "si",
			      "12", "z", "r", 2.5);
	char b[64];
	cr_assert(eq(i64, drv_json_time(o, "t"), 1796000523LL));
	cr_assert(eq(i64, drv_json_time(o, "z"), 0));
	cr_assert(eq(i64, drv_json_time(o, "missing"), 0));
	cr_assert(eq(i64, drv_json_int(o, "i", -1), 7));
	cr_assert(eq(i64, drv_json_int(o, "si", -1), 12));
	cr_assert(eq(i64, drv_json_int(o, "t", -1), -1));
	cr_assert(eq(str, (char *)drv_json_text(o, "i", b, sizeof(b)), "7"));
	cr_assert(eq(str, (char *)drv_json_text(o, "z", b, sizeof(b)), ""));
	cr_assert(eq(str, (char *)drv_json_text(o, "r", b, sizeof(b)), "2.5"));
	json_decref(o);
}

Test(client, content_type_by_content)
{
	const char *pod = "apiVersion: v1\nkind: Pod\n";
	const char *sb = "#!/bin/bash\n#SBATCH -N 2\nsrun x\n";
	const char *sb2 = "# comment\n#SBATCH --gres=gpu:1\n";
	const char *canon = "{\"apiVersion\":\"drover/v1\",\"kind\":\"Job\"}";
	const char *k8sjson = " {\"apiVersion\":\"v1\",\"kind\":\"Pod\"}";
	cr_assert(eq(str, (char *)drv_client_content_type(pod, strlen(pod)), "application/yaml"));
	cr_assert(eq(str, (char *)drv_client_content_type(sb, strlen(sb)), "text/x-slurm"));
	cr_assert(eq(str, (char *)drv_client_content_type(sb2, strlen(sb2)), "text/x-slurm"));
	cr_assert(eq(str, (char *)drv_client_content_type(canon, strlen(canon)), "application/json"));
	cr_assert(eq(str, (char *)drv_client_content_type(k8sjson, strlen(k8sjson)),
		     "application/yaml"));
}

Test(client, server_errors_read_as_one_message)
{
	struct drv_client_reply r = { 0 };
	char *m;

	r.status = 400;
	r.json = json_loads("{\"error\":{\"code\":\"invalid\",\"message\":\"job.yaml is not a job\","
			    "\"details\":[\"job.yaml:3:1: error: kind: found Foo\"]}}", 0, NULL);
	m = drv_client_reply_error(&r);
	cr_assert(eq(str, m, "job.yaml is not a job\n  job.yaml:3:1: error: kind: found Foo"));
	free(m);
	json_decref(r.json);
	cr_assert(eq(int, drv_client_status_exit(400), 2));
	cr_assert(eq(int, drv_client_status_exit(404), 1));
	cr_assert(eq(int, drv_client_status_exit(409), 1));
	cr_assert(eq(int, drv_client_status_exit(201), 0));
}

Test(client, unreachable_server_says_so)
{
	struct drv_client_conf c = { .server = "http://127.0.0.1:1" };
	struct drv_client *cl = drv_client_new(&c);
	struct drv_client_reply r;
	char err[256];

	cr_assert(eq(int, drv_client_call(cl, "GET", "/v1/jobs", NULL, NULL, 0, 2000, &r, err,
					  sizeof(err)), DRV_ECONN));
	cr_assert(eq(str, err, "cannot reach drover at http://127.0.0.1:1: connection refused"));
	drv_client_free(cl);
}

Test(client, urlencode)
{
	char *s = drv_client_urlencode("a b/c&d=é");
	cr_assert(eq(str, s, "a%20b%2Fc%26d%3D%C3%A9"));
	free(s);
}
