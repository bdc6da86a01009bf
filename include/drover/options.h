/*
 * options.h: the one command-line option parser every drover command uses
 * (git's parse-options is the model). A command describes its options once,
 * as a table of struct drv_option rows; the same table parses argv, writes
 * the values, reports every mistake in one uniform line, and prints the
 * help, so `drover CMD --help` and `drover help CMD` cannot drift from what
 * the parser accepts. The table keeps every option's argument name and help
 * line so that a later tool can write a man page's OPTIONS section from it.
 *
 * What the parser accepts, for every command:
 *   --name VALUE and --name=VALUE; -n VALUE and -nVALUE; bundled short
 *   flags (-Nf, and -Nfo json: a short option that takes a value ends the
 *   bundle); options and positional arguments in any order (GNU style)
 *   unless DRV_OPTS_STOP_AT_ARG; "--" ends the options; "-" alone is a
 *   positional argument (stdin). -h and --help are built in. Long names
 *   match exactly: no abbreviations, so adding an option never breaks a
 *   script. A value that begins with '-' is still a value (--seed -1).
 *   A repeated option: the last one wins, except DRV_OPTK_LIST, which
 *   collects every one.
 *
 * Errors, each one line on stderr, then the parse returns DRV_OPTS_ERROR
 * (exit code 2 through drv_opts_exit):
 *   drover sim: unknown option '--x' (see drover sim --help)
 *   drover sim: option '--cluster' needs a value (see drover sim --help)
 *   drover sim: option '--json' takes no value (see drover sim --help)
 *   drover sim: unexpected argument 'x' (see drover sim --help)
 *   drover sim: option '--cluster' is required (see drover sim --help)
 *   drover sim: option '--jobs': found 'ten', expected a whole number from 1 to 100000000
 *   drover sim: option '--policy': found 'lifo', expected fifo, sjf, las or fair
 *   drover place: option '--region': given more than 16 times
 * The option is named as the user wrote it ('-o' or '--output'). What
 * follows "expected" is the row's .expect when set, else it is derived
 * from the kind, its range or its choices.
 *
 * Help (stdout, exit 0): "usage: " and .usage, a blank line and .about when
 * set, then the options under their group headings (rows before the first
 * DRV_OPT_GROUP go under "options:"), each as "  -s, --long ARG" padded to
 * a column and its help line word-wrapped to 80 columns, then -h, --help.
 *
 * Man pages: the hidden built-in --help-man, handled like --help, prints
 * the same table as scdoc(5) source (drv_opts_man); scripts/man-pages
 * builds drover-CMD(1) from it, so a page cannot drift from the parser.
 * The hidden --help-complete prints the table for shell completion
 * (drv_opts_complete), read by `drover completion bash|zsh`.
 *
 * Ownership: the parser allocates nothing. String values point into argv
 * (borrowed); positional arguments are moved, in order, to argv[0..n-1].
 * The table, its choices and its texts are the caller's and must outlive
 * the parse. libc only (layer 0).
 */
#ifndef DROVER_OPTIONS_H
#define DROVER_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

enum drv_opt_kind {
	DRV_OPTK_END = 0, /* ends the table */
	DRV_OPTK_GROUP,   /* a heading in the help; .help is its text ("policy") */
	DRV_OPTK_FLAG,    /* no value; sets *(bool *)value to true */
	DRV_OPTK_INT,     /* *(int *)value, a whole number in [.min, .max] */
	DRV_OPTK_LLONG,   /* *(long long *)value, a whole number in [.min, .max] */
	DRV_OPTK_DOUBLE,  /* *(double *)value, finite, in [.dmin, .dmax] */
	DRV_OPTK_STRING,  /* *(const char **)value = the argument (borrowed) */
	DRV_OPTK_ENUM,    /* *(int *)value = the .choices row's value (names match
			   * without regard to ASCII case) */
	DRV_OPTK_LIST,    /* appends the argument to *(struct drv_opt_list *)value */
	DRV_OPTK_CALLBACK,/* .cb(row, argument); argument NULL with DRV_OPTF_NOARG */
	DRV_OPTK_UNKNOWN, /* no option: .pass is offered every option no row
			   * knows (faces that pass another tool's options on) */
};

/* Row flags. */
#define DRV_OPTF_HIDDEN 0x1    /* parsed, but left out of the help */
#define DRV_OPTF_REQUIRED 0x2  /* STRING only: an error when absent after the parse */
#define DRV_OPTF_MIN_EXCL 0x4  /* DOUBLE: .dmin itself is out of range (> .dmin) */
#define DRV_OPTF_NOARG 0x8     /* CALLBACK: takes no value; .cb gets NULL */

/* What a callback returns besides 0. */
#define DRV_OPT_BAD -1     /* the value is wrong: "found 'X', expected <.expect>" */
#define DRV_OPT_DECLINE 1  /* not this row's after all: treated as an unknown option */

/* One choice of an ENUM. A name whose value an earlier row has is an alias:
 * accepted, but not shown in the help or in "expected". Ends with { NULL }. */
struct drv_opt_choice {
	const char *name;
	int value;
};

/* Where a LIST collects its arguments: a caller-owned array of max items. */
struct drv_opt_list {
	const char **items;
	int max;
	int n;
};

struct drv_option;
typedef int drv_opt_cb(const struct drv_option *opt, const char *arg);
/*
 * The UNKNOWN row's hook: argv[0] is the option no row knows (as written,
 * "-N2" or "--gres=gpu:8"), argc counts what is left including it, nargs is
 * how many positional arguments came before it. Returns how many elements
 * of argv it consumed (>= 1), or -1 after printing its own error.
 */
typedef int drv_opt_pass(const struct drv_option *opt, int nargs, int argc, char **argv);

struct drv_option {
	enum drv_opt_kind kind;
	int short_name;          /* 'o', or 0 */
	const char *long_name;   /* "output" (no dashes), or NULL */
	void *value;             /* where the value goes; see the kinds */
	const char *argh;        /* the argument's name in help: "FILE"; ENUM: from choices */
	const char *help;        /* one line; wrapped when printed */
	unsigned flags;          /* DRV_OPTF_* */
	long long min, max;      /* INT, LLONG */
	double dmin, dmax;       /* DOUBLE */
	const char *expect;      /* after "expected" in a bad-value error; NULL: derived */
	const struct drv_opt_choice *choices; /* ENUM */
	drv_opt_cb *cb;          /* CALLBACK */
	drv_opt_pass *pass;      /* UNKNOWN */
};

/*
 * The rows, as macros (git's OPT_*). S is the short letter or 0, L the long
 * name or NULL, V a pointer to the value (its type is checked), A the
 * argument's name in the help, H the help line. Trailing arguments are more
 * designated initializers: DRV_OPT_STRING(0, "state", &dir, "DIR", "...",
 * .flags = DRV_OPTF_REQUIRED).
 */
#define DRV_OPT_TYPED_(T, v) ((void *)(1 ? (v) : (T *)0))
#define DRV_OPT_END() { .kind = DRV_OPTK_END }
#define DRV_OPT_GROUP(H) { .kind = DRV_OPTK_GROUP, .help = (H) }
#define DRV_OPT_FLAG(S, L, V, H, ...)                                                       \
	{ .kind = DRV_OPTK_FLAG, .short_name = (S), .long_name = (L),                      \
	  .value = DRV_OPT_TYPED_(bool, V), .help = (H), __VA_ARGS__ }
#define DRV_OPT_INT(S, L, V, LO, HI, A, H, ...)                                             \
	{ .kind = DRV_OPTK_INT, .short_name = (S), .long_name = (L),                       \
	  .value = DRV_OPT_TYPED_(int, V), .min = (LO), .max = (HI), .argh = (A),           \
	  .help = (H), __VA_ARGS__ }
#define DRV_OPT_LLONG(S, L, V, LO, HI, A, H, ...)                                           \
	{ .kind = DRV_OPTK_LLONG, .short_name = (S), .long_name = (L),                     \
	  .value = DRV_OPT_TYPED_(long long, V), .min = (LO), .max = (HI), .argh = (A),     \
	  .help = (H), __VA_ARGS__ }
#define DRV_OPT_DOUBLE(S, L, V, LO, HI, A, H, ...)                                          \
	{ .kind = DRV_OPTK_DOUBLE, .short_name = (S), .long_name = (L),                    \
	  .value = DRV_OPT_TYPED_(double, V), .dmin = (LO), .dmax = (HI), .argh = (A),      \
	  .help = (H), __VA_ARGS__ }
#define DRV_OPT_STRING(S, L, V, A, H, ...)                                                  \
	{ .kind = DRV_OPTK_STRING, .short_name = (S), .long_name = (L),                    \
	  .value = DRV_OPT_TYPED_(const char *, V), .argh = (A), .help = (H), __VA_ARGS__ }
#define DRV_OPT_ENUM(S, L, V, C, H, ...)                                                    \
	{ .kind = DRV_OPTK_ENUM, .short_name = (S), .long_name = (L),                      \
	  .value = DRV_OPT_TYPED_(int, V), .choices = (C), .help = (H), __VA_ARGS__ }
#define DRV_OPT_LIST(S, L, V, A, H, ...)                                                    \
	{ .kind = DRV_OPTK_LIST, .short_name = (S), .long_name = (L),                      \
	  .value = DRV_OPT_TYPED_(struct drv_opt_list, V), .argh = (A), .help = (H),        \
	  __VA_ARGS__ }
#define DRV_OPT_CALLBACK(S, L, V, CB, A, H, ...)                                            \
	{ .kind = DRV_OPTK_CALLBACK, .short_name = (S), .long_name = (L), .value = (V),    \
	  .cb = (CB), .argh = (A), .help = (H), __VA_ARGS__ }
#define DRV_OPT_UNKNOWN(V, FN) { .kind = DRV_OPTK_UNKNOWN, .value = (V), .pass = (FN) }

/* Command flags. */
#define DRV_OPTS_STOP_AT_ARG 0x1 /* the first positional argument ends the options;
				  * it and everything after it are positional */

/* .args_max: how many positional arguments the command takes. */
#define DRV_OPTS_ANY_ARGS (-1)

/* A command's description: what the help prints and how argv is read. */
struct drv_opts {
	const char *name;    /* "drover sim": begins every error line */
	const char *usage;   /* after "usage: "; continuation lines as written */
	const char *about;   /* a paragraph after the usage, or NULL */
	const struct drv_option *options; /* ends with DRV_OPT_END() */
	int args_max;        /* 0 (the default): none; DRV_OPTS_ANY_ARGS: any */
	unsigned flags;      /* DRV_OPTS_* */
};

/* What drv_opts_parse returns when the command should stop. */
#define DRV_OPTS_HELP (-1)  /* the help was printed (stdout): exit 0 */
#define DRV_OPTS_ERROR (-2) /* an error was printed (stderr): exit 2 */

/*
 * Parses argv[1..argc-1] (argv[0], the command's name, is skipped) against
 * cmd->options. Returns how many positional arguments there are, now in
 * argv[0..n-1] in their order; or DRV_OPTS_HELP after printing the help
 * for -h/--help; or DRV_OPTS_ERROR after printing one error line.
 */
int drv_opts_parse(const struct drv_opts *cmd, int argc, char **argv);

/* DRV_OPTS_HELP -> 0, DRV_OPTS_ERROR -> 2 (the exit codes). */
int drv_opts_exit(int parse_rc);

/* Prints the help for cmd to f: usage, about, the option table. */
void drv_opts_help(const struct drv_opts *cmd, FILE *f);
/* The same table as a man page's SYNOPSIS, DESCRIPTION and OPTIONS
 * sections in scdoc(5) source: what `drover CMD --help-man` (a hidden
 * built-in beside --help) prints for scripts/man-pages. */
void drv_opts_man(const struct drv_opts *cmd, FILE *f);
/* The shown rows for `drover completion` (what --help-complete prints), one
 * line each, five tab-separated fields: the short letter or empty, the long
 * name or empty, the argument's name (empty: the option takes no value),
 * an ENUM's choices separated by spaces (else empty), the help line. */
void drv_opts_complete(const struct drv_opts *cmd, FILE *f);

/*
 * Prints "NAME: " and the message, then " (see NAME --help)", to stderr.
 * For a command's own usage errors after the parse
 * ("give either --trace FILE or --generate"), so they read like the
 * parser's. Returns 2, the usage exit code.
 */
int drv_opts_usage_error(const struct drv_opts *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
