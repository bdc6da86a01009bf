/*
 * options.c: the command-line option parser of include/drover/options.h.
 * One pass over argv: each element is "--" (the rest is positional), a
 * positional argument, a long option or a cluster of short ones; a row of
 * the command's table takes it, or the table's UNKNOWN hook does, or it is
 * an error printed in the one uniform shape. The help printer reads the
 * same table. libc only.
 */
#include "drover/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HELP_WIDTH 80
#define HELP_COLUMN_MAX 30

/* The state of one parse. */
struct parse {
	const struct drv_opts *cmd;
	int argc;
	char **argv;
	int nargs; /* positional arguments so far, moved to argv[0..nargs-1] */
};

/* ---- errors ------------------------------------------------------------ */

static void verr(const struct drv_opts *cmd, bool see, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	if (see)
		fprintf(stderr, " (see %s --help)", cmd->name);
	fputc('\n', stderr);
}

/* A mistake in the command line's shape: ends with "(see NAME --help)". */
static int err_see(const struct drv_opts *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int err_see(const struct drv_opts *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(cmd, true, fmt, ap);
	va_end(ap);
	return DRV_OPTS_ERROR;
}

int drv_opts_usage_error(const struct drv_opts *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(cmd, true, fmt, ap);
	va_end(ap);
	return 2;
}

/* "fifo, sjf, las or fair": the choices that are not aliases. */
static void choices_text(const struct drv_opt_choice *c, const char *sep, const char *last,
			 char *buf, size_t n)
{
	size_t len = 0, i, k, shown = 0, total = 0;

	for (i = 0; c[i].name; i++) {
		for (k = 0; k < i && c[k].value != c[i].value; k++)
			;
		total += k == i;
	}
	buf[0] = '\0';
	for (i = 0; c[i].name && len < n; i++) {
		for (k = 0; k < i && c[k].value != c[i].value; k++)
			;
		if (k < i)
			continue;
		len += (size_t)snprintf(buf + len, n - len, "%s%s",
					!shown ? "" : shown + 1 == total ? last : sep, c[i].name);
		shown++;
	}
}

/* What a bad value of row should have been, when the row does not say. */
static void expect_text(const struct drv_option *o, char *buf, size_t n)
{
	if (o->expect) {
		snprintf(buf, n, "%s", o->expect);
	} else if (o->kind == DRV_OPTK_INT || o->kind == DRV_OPTK_LLONG) {
		long long hi = o->max;
		if (o->kind == DRV_OPTK_INT && hi > INT_MAX)
			hi = INT_MAX;
		if (hi == LLONG_MAX || hi == INT_MAX)
			snprintf(buf, n, "a whole number >= %lld", o->min);
		else
			snprintf(buf, n, "a whole number from %lld to %lld", o->min, hi);
	} else if (o->kind == DRV_OPTK_DOUBLE) {
		const char *lo = o->flags & DRV_OPTF_MIN_EXCL ? ">" : ">=";
		if (isinf(o->dmax) || o->dmax >= 1e300)
			snprintf(buf, n, "a number %s %g", lo, o->dmin);
		else
			snprintf(buf, n, "a number %s %g, at most %g", lo, o->dmin, o->dmax);
	} else if (o->kind == DRV_OPTK_ENUM) {
		choices_text(o->choices, ", ", " or ", buf, n);
	} else {
		snprintf(buf, n, "a valid value");
	}
}

static int err_value(const struct parse *st, const struct drv_option *o, const char *spelled,
		     const char *arg)
{
	char want[512];

	expect_text(o, want, sizeof(want));
	fprintf(stderr, "%s: option '%s': found '%s', expected %s\n", st->cmd->name, spelled, arg,
		want);
	return DRV_OPTS_ERROR;
}

/* ---- values ------------------------------------------------------------ */

static bool parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!*s || *s == ' ' || *s == '\t')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool parse_double(const struct drv_option *o, const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || *s == ' ' || *s == '\t')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v > o->dmax)
		return false;
	if (o->flags & DRV_OPTF_MIN_EXCL ? v <= o->dmin : v < o->dmin)
		return false;
	*out = v;
	return true;
}

static bool parse_enum(const struct drv_option *o, const char *s, int *out)
{
	const struct drv_opt_choice *c;

	for (c = o->choices; c->name; c++)
		if (!strcasecmp(c->name, s)) {
			*out = c->value;
			return true;
		}
	return false;
}

static bool takes_value(const struct drv_option *o)
{
	return o->kind != DRV_OPTK_FLAG &&
	       !(o->kind == DRV_OPTK_CALLBACK && (o->flags & DRV_OPTF_NOARG));
}

/* Stores arg through row o: 0, DRV_OPT_DECLINE, or DRV_OPTS_ERROR (printed). */
static int set_value(const struct parse *st, const struct drv_option *o, const char *spelled,
		     const char *arg)
{
	long long ll;
	int rc;

	switch (o->kind) {
	case DRV_OPTK_FLAG:
		*(bool *)o->value = true;
		return 0;
	case DRV_OPTK_INT:
		if (!parse_ll(arg, o->min, o->max < INT_MAX ? o->max : INT_MAX, &ll))
			return err_value(st, o, spelled, arg);
		*(int *)o->value = (int)ll;
		return 0;
	case DRV_OPTK_LLONG:
		if (!parse_ll(arg, o->min, o->max, (long long *)o->value))
			return err_value(st, o, spelled, arg);
		return 0;
	case DRV_OPTK_DOUBLE:
		return parse_double(o, arg, o->value) ? 0 : err_value(st, o, spelled, arg);
	case DRV_OPTK_STRING:
		*(const char **)o->value = arg;
		return 0;
	case DRV_OPTK_ENUM:
		return parse_enum(o, arg, o->value) ? 0 : err_value(st, o, spelled, arg);
	case DRV_OPTK_LIST: {
		struct drv_opt_list *l = o->value;
		if (l->n >= l->max) {
			fprintf(stderr, "%s: option '%s': given more than %d times\n", st->cmd->name,
				spelled, l->max);
			return DRV_OPTS_ERROR;
		}
		l->items[l->n++] = arg;
		return 0;
	}
	case DRV_OPTK_CALLBACK:
		rc = o->cb(o, arg);
		if (rc == 0 || rc == DRV_OPT_DECLINE)
			return rc;
		return err_value(st, o, spelled, arg ? arg : "");
	default:
		return DRV_OPTS_ERROR;
	}
}

/* ---- the parse --------------------------------------------------------- */

static const struct drv_option *find_long(const struct drv_opts *cmd, const char *name,
					  size_t len)
{
	const struct drv_option *o;

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++)
		if (o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, name, len))
			return o;
	return NULL;
}

static const struct drv_option *find_short(const struct drv_opts *cmd, int c)
{
	const struct drv_option *o;

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++)
		if (o->short_name && o->short_name == c)
			return o;
	return NULL;
}

static const struct drv_option *find_kind(const struct drv_opts *cmd, enum drv_opt_kind kind)
{
	const struct drv_option *o;

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++)
		if (o->kind == kind)
			return o;
	return NULL;
}

/* argv[i] is an option no row takes: the UNKNOWN hook's, or an error.
 * Returns how many elements were consumed, or DRV_OPTS_ERROR. */
static int unknown(const struct parse *st, int i, const char *spelled)
{
	const struct drv_option *hook = find_kind(st->cmd, DRV_OPTK_UNKNOWN);
	int n;

	if (!hook)
		return err_see(st->cmd, "unknown option '%s'", spelled);
	n = hook->pass(hook, st->nargs, st->argc - i, st->argv + i);
	return n < 1 ? DRV_OPTS_ERROR : n;
}

static int add_arg(struct parse *st, char *arg)
{
	if (st->cmd->args_max != DRV_OPTS_ANY_ARGS && st->nargs >= st->cmd->args_max)
		return err_see(st->cmd, "unexpected argument '%s'", arg);
	st->argv[st->nargs++] = arg;
	return 0;
}

static int help(const struct parse *st)
{
	drv_opts_help(st->cmd, stdout);
	return DRV_OPTS_HELP;
}

static int help_man(const struct parse *st)
{
	drv_opts_man(st->cmd, stdout);
	return DRV_OPTS_HELP;
}

static int help_complete(const struct parse *st)
{
	drv_opts_complete(st->cmd, stdout);
	return DRV_OPTS_HELP;
}

/* "--name", "--name=value", "--name value". Returns elements consumed, or
 * DRV_OPTS_HELP / DRV_OPTS_ERROR. */
static int parse_long(struct parse *st, int i)
{
	const char *name = st->argv[i] + 2, *eq = strchr(name, '='), *arg = NULL;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct drv_option *o = find_long(st->cmd, name, len);
	char spelled[128];
	int used = 1, rc;

	snprintf(spelled, sizeof(spelled), "--%.*s", (int)len, name);
	if (!o && len == 4 && !strncmp(name, "help", 4))
		return help(st);
	if (!o && len == 8 && !strncmp(name, "help-man", 8))
		return help_man(st);
	if (!o && len == 13 && !strncmp(name, "help-complete", 13))
		return help_complete(st);
	if (!o)
		return unknown(st, i, spelled);
	if (!takes_value(o)) {
		if (eq)
			return err_see(st->cmd, "option '%s' takes no value", spelled);
	} else if (eq) {
		arg = eq + 1;
	} else if (i + 1 < st->argc) {
		arg = st->argv[i + 1];
		used = 2;
	} else {
		return err_see(st->cmd, "option '%s' needs a value", spelled);
	}
	rc = set_value(st, o, spelled, arg);
	if (rc == DRV_OPT_DECLINE)
		return unknown(st, i, spelled);
	return rc < 0 ? rc : used;
}

/* "-o json", "-ojson", "-Nf": a cluster of short options. */
static int parse_short(struct parse *st, int i)
{
	const char *p;

	for (p = st->argv[i] + 1; *p; p++) {
		const struct drv_option *o = find_short(st->cmd, (unsigned char)*p);
		char spelled[3] = { '-', *p, '\0' };
		const char *arg = NULL;
		int used = 1, rc;

		if (!o && *p == 'h')
			return help(st);
		if (!o && p == st->argv[i] + 1)
			return unknown(st, i, spelled);
		if (!o)
			return err_see(st->cmd, "unknown option '%s'", spelled);
		if (takes_value(o)) {
			if (p[1]) {
				arg = p + 1;
			} else if (i + 1 < st->argc) {
				arg = st->argv[i + 1];
				used = 2;
			} else {
				return err_see(st->cmd, "option '%s' needs a value", spelled);
			}
		}
		rc = set_value(st, o, spelled, arg);
		if (rc == DRV_OPT_DECLINE && p == st->argv[i] + 1)
			return unknown(st, i, spelled);
		if (rc == DRV_OPT_DECLINE)
			return err_see(st->cmd, "unknown option '%s'", spelled);
		if (rc < 0)
			return rc;
		if (arg)
			return used;
	}
	return 1;
}

static int check_required(const struct drv_opts *cmd)
{
	const struct drv_option *o;

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++)
		if ((o->flags & DRV_OPTF_REQUIRED) && o->kind == DRV_OPTK_STRING &&
		    !*(const char **)o->value) {
			if (o->long_name)
				return err_see(cmd, "option '--%s' is required", o->long_name);
			return err_see(cmd, "option '-%c' is required", o->short_name);
		}
	return 0;
}

int drv_opts_parse(const struct drv_opts *cmd, int argc, char **argv)
{
	struct parse st = { cmd, argc, argv, 0 };
	int i, rc;

	for (i = 1; i < argc; i++) {
		char *a = argv[i];

		if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				if (add_arg(&st, argv[i]))
					return DRV_OPTS_ERROR;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (add_arg(&st, a))
				return DRV_OPTS_ERROR;
			if (cmd->flags & DRV_OPTS_STOP_AT_ARG) {
				for (i++; i < argc; i++)
					if (add_arg(&st, argv[i]))
						return DRV_OPTS_ERROR;
				break;
			}
			continue;
		}
		rc = a[1] == '-' ? parse_long(&st, i) : parse_short(&st, i);
		if (rc < 0)
			return rc;
		i += rc - 1;
	}
	if (check_required(cmd))
		return DRV_OPTS_ERROR;
	return st.nargs;
}

int drv_opts_exit(int parse_rc)
{
	return parse_rc == DRV_OPTS_HELP ? 0 : 2;
}

/* ---- help -------------------------------------------------------------- */

static bool shown(const struct drv_option *o)
{
	return (o->kind != DRV_OPTK_UNKNOWN && o->kind != DRV_OPTK_GROUP) &&
	       !(o->flags & DRV_OPTF_HIDDEN);
}

/* "  -o, --output FMT": the left column of a row. */
static void left_text(const struct drv_option *o, bool any_short, char *buf, size_t n)
{
	char arg[256] = "";
	size_t len;

	if (takes_value(o)) {
		if (o->kind == DRV_OPTK_ENUM && !o->argh)
			choices_text(o->choices, "|", "|", arg, sizeof(arg));
		else
			snprintf(arg, sizeof(arg), "%s", o->argh ? o->argh : "VALUE");
	}
	if (o->short_name && o->long_name)
		len = (size_t)snprintf(buf, n, "  -%c, --%s", o->short_name, o->long_name);
	else if (o->short_name)
		len = (size_t)snprintf(buf, n, "  -%c", o->short_name);
	else
		len = (size_t)snprintf(buf, n, "  %s--%s", any_short ? "    " : "", o->long_name);
	if (arg[0] && len < n)
		snprintf(buf + len, n - len, " %s", arg);
}

/* Prints text from column col (the cursor is there), wrapped at HELP_WIDTH;
 * runs of spaces inside a line are kept, '\n' breaks the line. */
static void wrap(FILE *f, const char *text, int col)
{
	int at = col;
	const char *p = text;

	while (*p) {
		size_t gap = strspn(p, " "), w;

		p += gap;
		w = strcspn(p, " \n");
		if (at > col && at + (int)gap + (int)w > HELP_WIDTH) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fprintf(f, "%*s", (int)gap, "");
			at += (int)gap;
		}
		fprintf(f, "%.*s", (int)w, p);
		at += (int)w;
		p += w;
		if (*p == '\n') {
			fprintf(f, "\n%*s", col, "");
			at = col;
			p++;
		}
	}
	fputc('\n', f);
}

/* The about paragraph: each line wrapped, its continuation lines indented
 * as the line itself is (so "  FILE: ..." lines stay a list). */
static void about(FILE *f, const char *text)
{
	char line[1024];

	while (*text) {
		size_t n = strcspn(text, "\n"), indent = strspn(text, " ");

		snprintf(line, sizeof(line), "%.*s", (int)n, text);
		fprintf(f, "%*s", (int)indent, "");
		wrap(f, line + (indent < sizeof(line) ? indent : 0), (int)indent);
		text += n;
		if (*text == '\n')
			text++;
	}
}

void drv_opts_help(const struct drv_opts *cmd, FILE *f)
{
	const struct drv_option *o;
	bool any_short = false, heading = false;
	char left[320];
	int col = 0;

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++) {
		if (!shown(o))
			continue;
		any_short |= o->short_name != 0;
	}
	for (o = cmd->options; o->kind != DRV_OPTK_END; o++) {
		if (!shown(o))
			continue;
		left_text(o, any_short, left, sizeof(left));
		/* a row too wide for the column has its help on the next line */
		if ((int)strlen(left) + 2 > col && (int)strlen(left) + 2 <= HELP_COLUMN_MAX)
			col = (int)strlen(left) + 2;
	}
	fprintf(f, "usage: %s\n", cmd->usage);
	if (cmd->about) {
		fputc('\n', f);
		about(f, cmd->about);
	}
	for (o = cmd->options; o->kind != DRV_OPTK_END; o++) {
		if (o->kind == DRV_OPTK_GROUP) {
			fprintf(f, "\n%s:\n", o->help);
			heading = true;
			continue;
		}
		if (!shown(o))
			continue;
		if (!heading)
			fprintf(f, "\noptions:\n");
		heading = true;
		left_text(o, any_short, left, sizeof(left));
		if ((int)strlen(left) + 2 > col)
			fprintf(f, "%s\n%*s", left, col, "");
		else
			fprintf(f, "%-*s", col, left);
		wrap(f, o->help ? o->help : "", col);
	}
}

/* ---- man page sections (scdoc) ----------------------------------------- */

/* text with scdoc's inline markers (* _ \\) escaped */
static void man_text(FILE *f, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '*' || *p == '_' || *p == '\\')
			fputc('\\', f);
		if (*p == '\n') {
			fputs("\n\t", f);
			continue;
		}
		fputc(*p, f);
	}
}

void drv_opts_man(const struct drv_opts *cmd, FILE *f)
{
	const struct drv_option *o;
	char arg[256];

	fprintf(f, "# SYNOPSIS\n\n```\n%s\n```\n\n", cmd->usage);
	if (cmd->about)
		fprintf(f, "# DESCRIPTION\n\n```\n%s\n```\n\n", cmd->about);
	fprintf(f, "# OPTIONS\n\n");
	for (o = cmd->options; o->kind != DRV_OPTK_END; o++) {
		if (o->kind == DRV_OPTK_GROUP) {
			fprintf(f, "## ");
			man_text(f, o->help ? o->help : "");
			fprintf(f, "\n\n");
			continue;
		}
		if (!shown(o))
			continue;
		arg[0] = 0;
		if (takes_value(o)) {
			if (o->kind == DRV_OPTK_ENUM && !o->argh)
				choices_text(o->choices, "|", "|", arg, sizeof(arg));
			else
				snprintf(arg, sizeof(arg), "%s", o->argh ? o->argh : "VALUE");
		}
		if (o->short_name)
			fprintf(f, "*-%c*%s", o->short_name, o->long_name ? ", " : "");
		if (o->long_name) {
			fprintf(f, "*--");
			man_text(f, o->long_name);
			fprintf(f, "*");
		}
		if (arg[0]) {
			fprintf(f, " _");
			man_text(f, arg);
			fprintf(f, "_");
		}
		fprintf(f, "\n\t");
		man_text(f, o->help ? o->help : "");
		fprintf(f, "\n\n");
	}
	fprintf(f, "*-h*, *--help*\n\tprint this command's help and exit\n");
}

/* ---- the table for shell completion (src/cmd/cmd_completion.c) ------- */

/* text on one line, without the field separator */
static void complete_text(FILE *f, const char *text)
{
	for (const char *p = text; *p; p++)
		fputc(*p == '\t' || *p == '\n' ? ' ' : *p, f);
}

void drv_opts_complete(const struct drv_opts *cmd, FILE *f)
{
	const struct drv_option *o;
	char choices[256];

	for (o = cmd->options; o->kind != DRV_OPTK_END; o++) {
		if (!shown(o))
			continue;
		choices[0] = 0;
		if (o->kind == DRV_OPTK_ENUM)
			choices_text(o->choices, " ", " ", choices, sizeof(choices));
		if (o->short_name)
			fprintf(f, "%c", o->short_name);
		fprintf(f, "\t%s\t", o->long_name ? o->long_name : "");
		if (takes_value(o))
			complete_text(f, o->argh ? o->argh : "VALUE");
		fprintf(f, "\t%s\t", choices);
		complete_text(f, o->help ? o->help : "");
		fputc('\n', f);
	}
}
