/*
 * test_yaml.c: the tab check in front of libfyaml (src/spec/yaml.c).
 * Inputs that crash Debian's libfyaml 0.7.12 (tests/unit/data/tab-crash-*,
 * found by a colleague; "? s:<TAB>?" is the smallest) must come back as one
 * error at the tab from every reader that uses libfyaml, and YAML with
 * tabs where YAML allows them must still load. And drv_yaml_node_json,
 * which replaces libfyaml's JSON emitter (it crashed on "a: |" at the end).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <libfyaml.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drover/clusterfile.h"
#include "drover/spec.h"
#include "drover/tenants.h"

#define TAB_MSG "found a tab in indentation, expected spaces (YAML forbids tabs for indentation)"

static struct drv_diags d;

static void setup(void)
{
	drv_diags_init(&d, "test");
}

static void teardown(void)
{
	drv_diags_release(&d);
}

TestSuite(yaml_guard, .init = setup, .fini = teardown);

/* d holds exactly the tab error at line:col */
static void tab_error_at(int line, int col)
{
	cr_assert(eq(int, d.nerrors, 1), "%d errors, first: %s", d.nerrors,
		  d.n ? d.v[0].msg : "");
	cr_assert(eq(str, d.v[0].msg, TAB_MSG));
	cr_assert(eq(int, d.v[0].line, line));
	cr_assert(eq(int, d.v[0].col, col));
	cr_assert(eq(ptr, d.v[0].path, NULL));
}

static bool guard(const char *text)
{
	drv_diags_release(&d);
	drv_diags_init(&d, "test");
	return drv_yaml_guard(text, strlen(text), &d);
}

Test(yaml_guard, crashing_manifest_is_one_error_at_the_tab)
{
	struct drv_jobspec s;

	drv_jobspec_init(&s);
	cr_assert(eq(int, drv_spec_load_file("tests/unit/data/tab-crash-manifest.yaml", &s, &d),
		     DRV_EPARSE));
	tab_error_at(6, 10);
	drv_jobspec_release(&s);
}

Test(yaml_guard, crashing_cluster_file_is_one_error_at_the_tab)
{
	struct drv_cluster c; /* drv_cluster_load_file initialises it */

	cr_assert(eq(int, drv_cluster_load_file("tests/unit/data/tab-crash-cluster.yaml", &c, &d),
		     DRV_EPARSE));
	tab_error_at(5, 10);
	drv_cluster_release(&c);
}

Test(yaml_guard, crashing_tenants_file_is_one_error_at_the_tab)
{
	const char *text = "tenants:\n :\n ? ilsses:\n ? hsses:\t ? ioris:2}{:\n0: pr";
	struct drv_tenants t;

	cr_assert(eq(int, drv_tenants_load_buffer(text, strlen(text), &t, &d), DRV_EPARSE));
	tab_error_at(4, 10);
	cr_assert(eq(int, t.ntenants, 0));
}

Test(yaml_guard, crash_in_a_later_document_of_a_stream_refuses_the_stream)
{
	const char *text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
			   "  containers: [{name: c, image: i}]\n---\n"
			   "k:\n  ? key:\t- x\n";
	struct drv_specset set;

	drv_specset_init(&set);
	cr_assert(eq(int, drv_spec_parse_all(text, strlen(text), "test", NULL, &set, &d),
		     DRV_EPARSE));
	tab_error_at(8, 9);
	cr_assert(eq(int, set.njobs, 0), "nothing accepted from a refused stream");
	drv_specset_release(&set);
}

Test(yaml_guard, smallest_crashers_and_their_kin)
{
	/* each crashed libfyaml 0.7.12 (SEGV in fy_indent_vacuum_internal) */
	cr_assert(not(guard("? s:\t?")));
	tab_error_at(1, 5);
	cr_assert(not(guard("? s: \t\t|\n  x\n")));
	tab_error_at(1, 6);
	cr_assert(not(guard("- ? s:\t- x\n")));
	tab_error_at(1, 7);
	cr_assert(not(guard("? a: b\n  c:\t? d\n")));
	tab_error_at(2, 5);
	cr_assert(not(guard("x: y\r\n? s:\t>\r\n  z\r\n")), "CRLF lines");
	tab_error_at(2, 5);
	cr_assert(not(guard("\xef\xbb\xbf? s:\t:")), "after a byte order mark");
	tab_error_at(1, 5);
	/* invalid YAML libfyaml refuses without crashing: same message */
	cr_assert(not(guard("- \t- x\n")));
	tab_error_at(1, 3);
	cr_assert(not(guard("a:\n  b:\t- x\n")));
	tab_error_at(2, 5);
	cr_assert(not(guard("key: \"\xc3\xa9\"\n? \xc3\xa9:\t?\n")), "columns count characters");
	tab_error_at(2, 5);
}

Test(yaml_guard, tabs_where_yaml_allows_them_pass)
{
	cr_assert(guard("a:\tb\n"));
	cr_assert(guard("a:\t|\n  text\n"), "valid YAML that libfyaml reads");
	cr_assert(guard("a:\t?x\n"), "a plain scalar starting with ?");
	cr_assert(guard("a: \"x\ty:\t- z\"\n"));
	cr_assert(guard("a: 'it''s:\t- x'\n"));
	cr_assert(guard("a: \"multi\n  line:\t- x\"\n"));
	cr_assert(guard("a: |\n  x:\t- y\n  ? s:\t?\nb: 1\n"), "block scalar body");
	cr_assert(guard("--- |\n- \t- x\n"), "top-level block scalar body");
	cr_assert(guard("a: b # c:\t- d\n"));
	cr_assert(guard("# ? s:\t?\n"));
	cr_assert(guard("a: {\t? b: c}\n"), "flow context");
	cr_assert(guard("a: [x,\n\t? y]\n"));
	cr_assert(guard("? a\n: b\nc:\t|\n  x\n"), "after the explicit key closed");
	cr_assert(guard("a: b\t\n\t\n"), "trailing blanks");
}

Test(yaml_guard, manifest_with_tabs_inside_scalars_loads)
{
	const char *text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name:\ttabbed\n"
			   "spec:\n  containers:\n  - name: main\n    image: busybox\n"
			   "    command:\t[sh, -c]\n    args:\n    - |\n      for i in 1 2; do\n"
			   "      \techo \"$i\"\n      done\n"
			   "    env:\n    - {name: SEP, value: \"a\tb\"}\n";
	struct drv_jobspec s;

	drv_jobspec_init(&s);
	cr_assert(eq(int, drv_spec_parse_buffer(text, strlen(text), "test", &s, &d), 0),
		  "%s", d.n ? d.v[0].msg : "");
	cr_assert(eq(str, s.job.name, "tabbed"));
	cr_assert(eq(int, s.run[0].nenv, 1));
	cr_assert(eq(str, s.run[0].env[0].value, "a\tb"));
	cr_assert(eq(int, s.run[0].nargs, 1));
	cr_assert(not(eq(ptr, strstr(s.run[0].args[0], "\techo"), NULL)));
	drv_jobspec_release(&s);
}

/* drv_yaml_node_json of the whole text, dumped compactly with sorted keys */
static char *as_json(const char *text)
{
	struct fy_document *fyd = fy_document_build_from_string(NULL, text, strlen(text));
	json_t *j;
	char *out;

	cr_assert(not(eq(ptr, fyd, NULL)), "%s", text);
	j = drv_yaml_node_json(fy_document_root(fyd));
	out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(j);
	fy_document_destroy(fyd);
	return out;
}

Test(yaml_guard, node_json_types_scalars_as_the_json_emitter_did)
{
	char *s = as_json("a: [~, null, Null, true, True, false, yes, 1, -1, +1, 0x1F, 1.5, "
			  "1e3, .inf, 012, '1', \"true\", !!str 2, x]\nb:\nc: ''\n"
			  "d: {k: [1, {m: n}]}\n");
	cr_assert(eq(str, s, "{\"a\":[\"~\",null,\"Null\",true,\"True\",false,\"yes\",1,-1,\"+1\","
			     "\"0x1F\",1.5,1000.0,\".inf\",\"012\",\"1\",\"true\",\"2\",\"x\"],"
			     "\"b\":null,\"c\":\"\",\"d\":{\"k\":[1,{\"m\":\"n\"}]}}"));
	free(s);
}

Test(yaml_guard, node_json_of_an_empty_block_scalar_at_the_end)
{
	/* libfyaml 0.7.12's JSON emitter crashed on each (SEGV in fy_atom_is_number),
	 * and fy_node_get_scalar gives one byte 0 for them */
	char *s = as_json("a: |\n");
	cr_assert(eq(str, s, "{\"a\":\"\"}"));
	free(s);
	s = as_json("a: 1\nb: >\n");
	cr_assert(eq(str, s, "{\"a\":1,\"b\":\"\"}"));
	free(s);
	s = as_json("- |+\n");
	cr_assert(eq(str, s, "[\"\"]"));
	free(s);
	s = as_json("a: \"x\\0y\"\n");
	cr_assert(eq(str, s, "{\"a\":\"x\\u0000y\"}"), "a NUL escape stays");
	free(s);
}

Test(yaml_guard, manifest_with_an_unknown_empty_block_scalar_last_loads)
{
	const char *text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
			   "  containers: [{name: c, image: i}]\nnotes: |\n";
	struct drv_jobspec s;
	json_t *v;

	drv_jobspec_init(&s);
	cr_assert(eq(int, drv_spec_parse_buffer(text, strlen(text), "test", &s, &d), 0));
	v = json_object_get(s.ignored, "notes");
	cr_assert(eq(int, json_typeof(v), JSON_STRING));
	cr_assert(eq(int, (int)strlen(json_string_value(v)), 0), "%s", json_string_value(v));
	drv_jobspec_release(&s);
}

Test(yaml_guard, a_long_line_is_scanned_in_linear_time)
{
	/* 3.6 MB on one line, an indicator every 3 bytes: a scan that measured
	 * columns from the line start each time took minutes, this takes ms */
	size_t n = 1200000, i;
	char *text = malloc(3 * n + 3);
	struct timespec t0, t1;

	memcpy(text, "? ", 2);
	for (i = 0; i < n; i++)
		memcpy(text + 2 + 3 * i, "a: ", 3);
	text[2 + 3 * n - 1] = '\n';
	text[2 + 3 * n] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert(guard(text));
	text[2 + 3 * n - 2] = '\t'; /* "a:\t\n": still nothing after the tab */
	cr_assert(guard(text));
	memcpy(text + 2 + 3 * (n - 1), ":\t?", 3); /* ":<TAB>?" at the very end */
	cr_assert(not(guard(text)));
	tab_error_at(1, (int)(2 + 3 * (n - 1) + 2));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(lt(dbl, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, 5.0));
	free(text);
}
