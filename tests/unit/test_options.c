/*
 * test_options.c: the option parser (src/base/options.c): both long forms,
 * short options with and without a space, bundles, "--", positional
 * arguments in any order, every error line and its exit code, the UNKNOWN
 * hook and DECLINE, and the help printed from the table.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/options.h"

/* The values one parse writes; reset before each. */
static struct vals {
	bool json, verbose, all;
	int jobs, mode;
	long long seed;
	double load;
	const char *cluster, *out;
	const char *regions[2];
	struct drv_opt_list list;
	int cb_calls;
} v;

static const struct drv_opt_choice modes[] = {
	{ "strict", 0 }, { "backfill", 1 }, { "greedy", 2 }, { "easy", 1 }, { NULL, 0 },
};

static int out_cb(const struct drv_option *o, const char *arg)
{
	v.cb_calls++;
	if (!strcmp(arg, "file"))
		return DRV_OPT_DECLINE;
	if (strcmp(arg, "json") && strcmp(arg, "yaml"))
		return DRV_OPT_BAD;
	*(const char **)o->value = arg;
	return 0;
}

static const struct drv_option table[] = {
	DRV_OPT_STRING('c', "cluster", &v.cluster, "FILE", "the cluster file"),
	DRV_OPT_INT(0, "jobs", &v.jobs, 1, 1000, "N", "how many jobs"),
	DRV_OPT_GROUP("policy"),
	DRV_OPT_ENUM('m', "mode", &v.mode, modes, "head-of-line handling (default backfill)"),
	DRV_OPT_LLONG(0, "seed", &v.seed, 0, 9223372036854775807LL, "N", "the seed"),
	DRV_OPT_DOUBLE(0, "load", &v.load, 0, 100, "RHO", "offered load",
		       .flags = DRV_OPTF_MIN_EXCL, .expect = "an offered load > 0, at most 100"),
	DRV_OPT_LIST(0, "region", &v.list, "R", "an allowed region (repeatable)"),
	DRV_OPT_GROUP("output"),
	DRV_OPT_FLAG('j', "json", &v.json, "print JSON"),
	DRV_OPT_FLAG('v', NULL, &v.verbose, "say more"),
	DRV_OPT_FLAG('a', "all", &v.all, "a hidden one", .flags = DRV_OPTF_HIDDEN),
	DRV_OPT_CALLBACK('o', "output", &v.out, out_cb, "FMT",
			 "json or yaml; a longer help line that goes on and on so that it has to be "
			 "wrapped at eighty columns by the printer",
			 .expect = "json or yaml"),
	DRV_OPT_END(),
};

static const struct drv_opts cmd = {
	.name = "drover t",
	.usage = "drover t [options] FILE...",
	.about = "A command for the tests.",
	.options = table,
	.args_max = DRV_OPTS_ANY_ARGS,
};

/* argv of the last parse: positional arguments end up in av[0..n-1]. */
static char *av[32];

/* Parses the NULL-terminated words (argv[0] = "t") against c. */
static int parse_with(const struct drv_opts *c, char **words)
{
	int argc = 0;

	memset(&v, 0, sizeof(v));
	v.list = (struct drv_opt_list){ v.regions, 2, 0 };
	av[argc++] = "t";
	while (*words)
		av[argc++] = *words++;
	av[argc] = NULL;
	return drv_opts_parse(c, argc, av);
}

#define PARSE(...) parse_with(&cmd, (char *[]){ __VA_ARGS__, NULL })

/* The next line the parser wrote to the redirected stderr. */
static const char *err_line(void)
{
	static char line[512];

	fflush(stderr);
	if (!fgets(line, sizeof(line), cr_get_redirected_stderr()))
		return "";
	line[strcspn(line, "\n")] = '\0';
	return line;
}

Test(options, both_long_forms)
{
	cr_assert(eq(int, PARSE("--cluster", "a.yaml", "--jobs=7"), 0));
	cr_assert(eq(str, (char *)v.cluster, "a.yaml"));
	cr_assert(eq(int, v.jobs, 7));
	cr_assert(eq(int, PARSE("--cluster=b.yaml", "--jobs", "9", "--cluster=c=d"), 0));
	cr_assert(eq(str, (char *)v.cluster, "c=d"), "the last one wins; '=' in a value");
	cr_assert(eq(int, v.jobs, 9));
}

Test(options, short_forms_and_bundles)
{
	cr_assert(eq(int, PARSE("-c", "a.yaml", "-ojson"), 0));
	cr_assert(eq(str, (char *)v.cluster, "a.yaml"));
	cr_assert(eq(str, (char *)v.out, "json"));
	cr_assert(eq(int, PARSE("-jv", "-mgreedy"), 0));
	cr_assert(v.json && v.verbose);
	cr_assert(eq(int, v.mode, 2));
	/* a short option that takes a value ends the bundle: the rest or the next word */
	cr_assert(eq(int, PARSE("-jvo", "yaml", "-vcx.yaml"), 0));
	cr_assert(v.json && v.verbose);
	cr_assert(eq(str, (char *)v.out, "yaml"));
	cr_assert(eq(str, (char *)v.cluster, "x.yaml"));
}

Test(options, kinds, .init = cr_redirect_stderr)
{
	cr_assert(eq(int, PARSE("--seed", "-1"), DRV_OPTS_ERROR), "a value may start with '-'");
	cr_assert(eq(int, PARSE("--seed", "12345678901", "--load", "0.5", "--mode", "EASY",
				"--all"),
		     0));
	cr_assert(eq(i64, v.seed, 12345678901LL));
	cr_assert(eq(dbl, v.load, 0.5));
	cr_assert(eq(int, v.mode, 1), "an alias, any case");
	cr_assert(v.all, "hidden rows still parse");
	cr_assert(eq(int, PARSE("--region", "eu", "--region=us"), 0));
	cr_assert(eq(int, v.list.n, 2));
	cr_assert(eq(str, (char *)v.regions[0], "eu"));
	cr_assert(eq(str, (char *)v.regions[1], "us"));
}

Test(options, positional_arguments_and_double_dash)
{
	cr_assert(eq(int, PARSE("one", "--json", "two", "-", "--", "--cluster", "-j"), 5));
	cr_assert(v.json);
	cr_assert(eq(ptr, (void *)v.cluster, NULL), "after --, options are arguments");
	cr_assert(eq(str, av[0], "one"));
	cr_assert(eq(str, av[1], "two"));
	cr_assert(eq(str, av[2], "-"));
	cr_assert(eq(str, av[3], "--cluster"));
	cr_assert(eq(str, av[4], "-j"));
}

Test(options, stop_at_first_argument)
{
	struct drv_opts c = cmd;

	c.flags = DRV_OPTS_STOP_AT_ARG;
	cr_assert(eq(int, parse_with(&c, (char *[]){ "-j", "FILE", "-N", "2", "--json", NULL }), 4));
	cr_assert(v.json);
	cr_assert(eq(str, av[0], "FILE"));
	cr_assert(eq(str, av[1], "-N"));
	cr_assert(eq(str, av[3], "--json"));
}

Test(options, errors, .init = cr_redirect_stderr)
{
	struct drv_opts none = cmd;

	none.args_max = 0;
	cr_assert(eq(int, PARSE("--x"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(), "drover t: unknown option '--x' (see drover t --help)"));
	cr_assert(eq(int, PARSE("--x=3"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(), "drover t: unknown option '--x' (see drover t --help)"));
	cr_assert(eq(int, PARSE("-jq"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(), "drover t: unknown option '-q' (see drover t --help)"));
	cr_assert(eq(int, PARSE("--cluster"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--cluster' needs a value (see drover t --help)"));
	cr_assert(eq(int, PARSE("-c"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '-c' needs a value (see drover t --help)"));
	cr_assert(eq(int, PARSE("--json=yes"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--json' takes no value (see drover t --help)"));
	cr_assert(eq(int, PARSE("--jobs", "ten"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--jobs': found 'ten', expected a whole number from 1 to 1000"));
	cr_assert(eq(int, PARSE("--jobs=1001"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--jobs': found '1001', expected a whole number from 1 to 1000"));
	cr_assert(eq(int, PARSE("--seed", "-1"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--seed': found '-1', expected a whole number >= 0"));
	cr_assert(eq(int, PARSE("--load", "0"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--load': found '0', expected an offered load > 0, at most 100"));
	cr_assert(eq(int, PARSE("-m", "lifo"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '-m': found 'lifo', expected strict, backfill or greedy"));
	cr_assert(eq(int, PARSE("--output=xml"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: option '--output': found 'xml', expected json or yaml"));
	cr_assert(eq(int, PARSE("--output=file"), DRV_OPTS_ERROR), "declined: unknown");
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: unknown option '--output' (see drover t --help)"));
	cr_assert(eq(int, PARSE("--region", "a", "--region", "b", "--region", "c"), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(), "drover t: option '--region': given more than 2 times"));
	cr_assert(eq(int, parse_with(&none, (char *[]){ "--json", "extra", NULL }), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover t: unexpected argument 'extra' (see drover t --help)"));
	cr_assert(eq(int, drv_opts_usage_error(&cmd, "give %s", "a FILE"), 2));
	cr_assert(eq(str, (char *)err_line(), "drover t: give a FILE (see drover t --help)"));
	cr_assert(eq(int, drv_opts_exit(DRV_OPTS_ERROR), 2));
}

Test(options, required, .init = cr_redirect_stderr)
{
	static const char *state;
	static const struct drv_option t[] = {
		DRV_OPT_STRING(0, "state", &state, "DIR", "state", .flags = DRV_OPTF_REQUIRED),
		DRV_OPT_END(),
	};
	static const struct drv_opts c = { .name = "drover s", .usage = "drover s", .options = t };
	char *a1[] = { "s", NULL }, *a2[] = { "s", "--state", "d", NULL };

	cr_assert(eq(int, drv_opts_parse(&c, 1, a1), DRV_OPTS_ERROR));
	cr_assert(eq(str, (char *)err_line(),
		     "drover s: option '--state' is required (see drover s --help)"));
	cr_assert(eq(int, drv_opts_parse(&c, 3, a2), 0));
	cr_assert(eq(str, (char *)state, "d"));
}

/* The UNKNOWN hook sees the option no row takes and what follows it. */
static int hook_calls;
static int pass_on(const struct drv_option *o, int nargs, int argc, char **argv)
{
	hook_calls++;
	if (nargs) /* after FILE: an error, as submit has it */
		return -1;
	return !strcmp(argv[0], "-N") || !strcmp(argv[0], "-o") ? 2 : 1;
}

Test(options, unknown_hook)
{
	static const char *out;
	static const struct drv_option t[] = {
		DRV_OPT_CALLBACK('o', "output", &out, out_cb, "FMT", "json or yaml"),
		DRV_OPT_UNKNOWN(NULL, pass_on),
		DRV_OPT_END(),
	};
	struct drv_opts c = { .name = "drover u", .usage = "drover u", .options = t,
			      .args_max = DRV_OPTS_ANY_ARGS };

	hook_calls = 0;
	cr_assert(eq(int, parse_with(&c, (char *[]){ "-N", "2", "--gres=gpu:8", "-o", "file",
						  "-o", "json", "F", NULL }),
		     1));
	cr_assert(eq(int, hook_calls, 3), "-N 2, --gres=gpu:8 and -o file");
	cr_assert(eq(str, (char *)out, "json"));
	cr_assert(eq(str, av[0], "F"));
	cr_assert(eq(int, parse_with(&c, (char *[]){ "F", "--gres=x", NULL }), DRV_OPTS_ERROR));
}

Test(options, help_flag, .init = cr_redirect_stdout)
{
	cr_assert(eq(int, PARSE("--jobs", "3", "--help"), DRV_OPTS_HELP));
	cr_assert(eq(int, drv_opts_exit(DRV_OPTS_HELP), 0));
	cr_assert(eq(int, PARSE("-jh"), DRV_OPTS_HELP));
	fflush(stdout);
}

Test(options, help_text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	drv_opts_help(&cmd, f);
	fclose(f);
	cr_assert(eq(str, buf,
		     "usage: drover t [options] FILE...\n"
		     "\n"
		     "A command for the tests.\n"
		     "\n"
		     "options:\n"
		     "  -c, --cluster FILE  the cluster file\n"
		     "      --jobs N        how many jobs\n"
		     "\n"
		     "policy:\n"
		     "  -m, --mode strict|backfill|greedy\n"
		     "                      head-of-line handling (default backfill)\n"
		     "      --seed N        the seed\n"
		     "      --load RHO      offered load\n"
		     "      --region R      an allowed region (repeatable)\n"
		     "\n"
		     "output:\n"
		     "  -j, --json          print JSON\n"
		     "  -v                  say more\n"
		     "  -o, --output FMT    json or yaml; a longer help line that goes on and on so\n"
		     "                      that it has to be wrapped at eighty columns by the printer\n"));
	free(buf);
}

/* --help-complete's table: five fields a row, hidden rows and headings out,
 * an ENUM's choices without its aliases */
Test(options, complete_table)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	drv_opts_complete(&cmd, f);
	fclose(f);
	cr_assert(eq(str, buf,
		     "c\tcluster\tFILE\t\tthe cluster file\n"
		     "\tjobs\tN\t\thow many jobs\n"
		     "m\tmode\tVALUE\tstrict backfill greedy\thead-of-line handling (default backfill)\n"
		     "\tseed\tN\t\tthe seed\n"
		     "\tload\tRHO\t\toffered load\n"
		     "\tregion\tR\t\tan allowed region (repeatable)\n"
		     "j\tjson\t\t\tprint JSON\n"
		     "v\t\t\t\tsay more\n"
		     "o\toutput\tFMT\t\tjson or yaml; a longer help line that goes on and on so that "
		     "it has to be wrapped at eighty columns by the printer\n"));
	free(buf);
}
