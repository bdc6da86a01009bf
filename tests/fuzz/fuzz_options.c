/*
 * fuzz_options.c: libFuzzer target for the option parser
 * (src/base/options.c). The input is a command line, one word per line;
 * it is parsed against a table with every kind of row. Whatever it says,
 * the parse must return a count of positional arguments within argc (each
 * one a word of the input, in order) or DRV_OPTS_HELP / DRV_OPTS_ERROR,
 * and every value it set must be in its row's range.
 */
#include "drover/options.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct {
	bool flag, other;
	int n, e;
	long long ll;
	double d;
	const char *s, *cb;
	const char *items[3];
	struct drv_opt_list list;
} v;

static const struct drv_opt_choice choices[] = {
	{ "a", 0 }, { "bb", 1 }, { "A2", 0 }, { NULL, 0 },
};

static int cb(const struct drv_option *o, const char *arg)
{
	if (!strcmp(arg, "no"))
		return DRV_OPT_DECLINE;
	if (!*arg)
		return DRV_OPT_BAD;
	*(const char **)o->value = arg;
	return 0;
}

static int pass(const struct drv_option *o, int nargs, int argc, char **argv)
{
	if (argv[0][1] == 'Z')
		return -1;
	return argv[0][1] == 'Y' && argc > 1 ? 2 : 1;
}

static const struct drv_option table[] = {
	DRV_OPT_FLAG('f', "flag", &v.flag, "a flag"),
	DRV_OPT_FLAG('g', NULL, &v.other, "a short flag"),
	DRV_OPT_INT('n', "num", &v.n, -5, 5, "N", "an int"),
	DRV_OPT_ENUM('e', "enum", &v.e, choices, "an enum"),
	DRV_OPT_GROUP("more"),
	DRV_OPT_LLONG(0, "ll", &v.ll, 0, 9223372036854775807LL, "N", "a long long"),
	DRV_OPT_DOUBLE(0, "d", &v.d, 0, 10, "X", "a double", .flags = DRV_OPTF_MIN_EXCL),
	DRV_OPT_STRING('s', "str", &v.s, "S", "a string"),
	DRV_OPT_LIST('l', "list", &v.list, "L", "a list"),
	DRV_OPT_CALLBACK('c', "cb", &v.cb, cb, "C", "a callback"),
	DRV_OPT_UNKNOWN(NULL, pass),
	DRV_OPT_END(),
};

static int quiet;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drv_opts cmd = { .name = "drover fuzz", .usage = "drover fuzz", .options = table,
				.args_max = size & 1 ? DRV_OPTS_ANY_ARGS : 2,
				.flags = size & 2 ? DRV_OPTS_STOP_AT_ARG : 0 };
	char *text = malloc(size + 1), *words[64], *orig[64], *p;
	int argc = 0, n, i;

	memcpy(text, data, size);
	text[size] = '\0';
	words[argc++] = "fuzz";
	for (p = text; argc < 63;) {
		char *nl = strchr(p, '\n');
		words[argc++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	words[argc] = NULL;
	memcpy(orig, words, sizeof(words));
	memset(&v, 0, sizeof(v));
	v.list = (struct drv_opt_list){ v.items, 3, 0 };
	if (!quiet++ && !freopen("/dev/null", "w", stdout)) /* the help; errors stay on stderr */
		abort();
	n = drv_opts_parse(&cmd, argc, words);
	if (n != DRV_OPTS_HELP && n != DRV_OPTS_ERROR && (n < 0 || n >= argc))
		abort();
	/* positional arguments keep their order: each is a later word than the last */
	for (i = 0, p = NULL; i < n; i++) {
		int k;
		for (k = 1; k < argc && orig[k] != words[i]; k++)
			;
		if (k == argc || (p && words[i] <= p))
			abort();
		p = words[i];
	}
	if (v.n < -5 || v.n > 5 || v.ll < 0 || v.d < 0 || v.d > 10 || v.list.n > 3 ||
	    (v.e != 0 && v.e != 1))
		abort();
	drv_opts_help(&cmd, stdout);
	free(text);
	return 0;
}
