/*
 * cmd_completion.c: 'drover completion bash|zsh' prints a completion script
 * for that shell. The commands come from the commands table; each
 * command's options, what their values are (a file, a directory, one of
 * some words) and their help lines come from the command's own option
 * table, read through the hidden --help-complete (drv_opts_complete) of a
 * forked copy of this process, so the script cannot drift from the parser
 * any more than the man pages can. A face with a parser of its own (srun,
 * salloc) has its option lines read from its --help instead. What a
 * command's positional arguments are (job files, job ids, a subcommand) is
 * the one table below. Job ids and node names are asked of the server when
 * the user presses Tab (`drover queue`, `drover nodes -N`, cut off after 2 s),
 * so an unreachable server costs at most that and offers nothing.
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/options.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * What each positional argument of a command is, in order; the last kind
 * repeats. Kinds: "file", "dir", "jobs" (ids from `drover queue`),
 * "subject" (job ids, or node names after a first argument "node(s)"),
 * "command" (a program), "commands" (a drover command), "none", or
 * "word W1 W2 ..." (one of the words). A command not listed takes none.
 * tests/integration/completion.sh checks the word lists against --help.
 */
static const struct {
	const char *cmd;
	const char *pos[2];
} positional[] = {
	{ "submit", { "file" } },
	{ "validate", { "file" } },
	{ "place", { "file" } },
	{ "cost", { "file" } },
	{ "backup", { "file" } },
	{ "sbatch", { "file" } },
	{ "cancel", { "jobs" } },
	{ "logs", { "jobs" } },
	{ "scancel", { "jobs" } },
	{ "get", { "word jobs nodes", "subject" } },
	{ "describe", { "word job node", "subject" } },
	{ "tls", { "word init cert", "dir" } },
	/* bench: its table's names (pos_kinds) */
	{ "scontrol", { "word show hold release requeue update", "jobs" } },
	{ "srun", { "command" } },
	{ "salloc", { "command" } },
	{ "completion", { "word bash zsh", "none" } },
	{ "help", { "commands", "none" } },
};

/* One option of a command, as drv_opts_complete prints it. */
struct opt {
	char shrt;         /* the short letter, or 0 */
	const char *lng;   /* the long name, or "" */
	const char *arg;   /* the argument's name; "" for a flag */
	const char *words; /* an ENUM's choices, space-separated, or "" */
	const char *help;
};

struct cmd_opts {
	const struct drv_command *c;
	char *text; /* what the fields of opts point into */
	struct opt *opts;
	int n;
};

/* c's handler run with {name, flag} in a child whose stdout is a pipe: its
 * output (the caller frees it), or NULL when it did not exit 0. */
static char *capture(const struct drv_command *c, const char *flag)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(1 << 20);
	char chunk[4096];
	int fd[2], st = 0;
	ssize_t got;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	if (pipe(fd))
		return NULL;
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (pid == 0) {
		char *argv[] = { (char *)c->name, (char *)flag, NULL };
		int null = open("/dev/null", O_RDWR);

		dup2(fd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		close(fd[0]);
		close(fd[1]);
		st = c->fn(2, argv);
		fflush(stdout);
		_exit(st);
	}
	close(fd[1]);
	while ((got = read(fd[0], chunk, sizeof(chunk))) > 0)
		if (drv_dynbuf_add(&b, chunk, (size_t)got) < 0)
			break;
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		drv_dynbuf_release(&b);
		return NULL;
	}
	return drv_dynbuf_take(&b, NULL);
}

static void add_opt(struct cmd_opts *co, const struct opt *o)
{
	co->opts = drv_realloc(co->opts, (size_t)(co->n + 1) * sizeof(*co->opts));
	co->opts[co->n++] = *o;
}

/* The five tab-separated fields of drv_opts_complete, line by line. */
static void parse_table(struct cmd_opts *co)
{
	char *line = co->text, *next, *f[5];
	int i;

	for (; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = 0;
		for (i = 0; i < 5; i++) {
			f[i] = line;
			line += strcspn(line, "\t");
			if (*line)
				*line++ = 0;
		}
		add_opt(co, &(struct opt){ f[0][0], f[1], f[2], f[3], f[4] });
	}
}

/* A face's own --help (srun): its lines "  -n, --ntasks=N   help" and
 * "      --overlap   help"; a line of another shape is no option. */
static void parse_help(struct cmd_opts *co)
{
	char *line = co->text, *next, *p;
	struct opt o;

	for (; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = 0;
		p = line + strspn(line, " ");
		if (p - line < 2 || *p != '-')
			continue;
		o = (struct opt){ 0, "", "", "", "" };
		if (isalnum((unsigned char)p[1]) && !strncmp(p + 2, ", --", 4)) {
			o.shrt = p[1];
			p += 4;
		} else if (isalnum((unsigned char)p[1]) && p[2] == ' ') {
			o.shrt = p[1];
			p += 2;
			o.help = p + strspn(p, " ");
			add_opt(co, &o);
			continue;
		}
		if (strncmp(p, "--", 2) || !isalnum((unsigned char)p[2]))
			continue;
		p += 2;
		o.lng = p;
		p += strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
		if (*p == '=') {
			*p++ = 0;
			o.arg = p;
			p += strcspn(p, " ");
		}
		if (*p && *p != ' ')
			continue;
		if (*p)
			*p++ = 0;
		o.help = p + strspn(p, " ");
		add_opt(co, &o);
	}
}

static void load(struct cmd_opts *co, const struct drv_command *c)
{
	*co = (struct cmd_opts){ .c = c };
	co->text = capture(c, "--help-complete");
	if (co->text) {
		parse_table(co);
		return;
	}
	co->text = capture(c, "--help");
	if (co->text)
		parse_help(co);
}

/* Lower-case words joined by '|' ("json|yaml|wide"): the words. */
static bool arg_is_words(const char *arg)
{
	if (!*arg)
		return false;
	for (const char *p = arg; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '|' ||
		      *p == '-' || *p == '_'))
			return false;
	return strchr(arg, '|') != NULL;
}

/* What an option's value is, as a kind of the positional table. */
static void value_kind(const struct opt *o, char *buf, size_t n)
{
	if (o->words[0]) {
		snprintf(buf, n, "word %s", o->words);
	} else if (arg_is_words(o->arg)) {
		snprintf(buf, n, "word %s", o->arg);
		for (char *p = buf; *p; p++)
			if (*p == '|')
				*p = ' ';
	} else if (!strcmp(o->arg, "DIR")) {
		snprintf(buf, n, "dir");
	} else if (strstr(o->arg, "FILE") || strstr(o->arg, "PATH") || strstr(o->arg, "JSON") ||
		   strstr(o->arg, ".html") || strstr(o->arg, "SCRIPT")) {
		snprintf(buf, n, "file");
	} else if (!strcmp(o->arg, "IDS")) {
		snprintf(buf, n, "jobs");
	} else {
		snprintf(buf, n, "any");
	}
}

static const char *const *pos_kinds(const char *cmd)
{
	static const char *const none[2] = { "none", NULL };
	static const char *bench[2] = { NULL, "none" };

	if (!strcmp(cmd, "bench")) {
		bench[0] = cmd_bench_words();   /* from bench's own table: no drift */
		return bench;
	}
	for (size_t i = 0; i < DRV_ARRAY_SIZE(positional); i++)
		if (!strcmp(positional[i].cmd, cmd))
			return positional[i].pos;
	return none;
}

/* A command's name as a shell identifier: slurm-path -> slurm_path. */
static void ident(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s", name);
	for (char *p = buf; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '_';
}

/* ---- bash ---------------------------------------------------------------- */

static const char bash_head[] =
	"# bash completion for drover, printed by `drover completion bash` from\n"
	"# this build's option tables: source it, or install it as\n"
	"# /usr/share/bash-completion/completions/drover (make install does).\n"
	"\n"
	"# the first column of `drover queue` or `drover nodes -N`, nothing when\n"
	"# the server does not answer within 2 s\n"
	"_drover_ids() {\n"
	"\ttimeout 2 \"$@\" 2>/dev/null </dev/null |\n"
	"\t\tawk 'NR > 1 && $1 != \"\" { print $1 } NR > 2000 { exit }'\n"
	"}\n"
	"\n"
	"# COMPREPLY for a kind of value ($2) of drover ($1), the word being $cur\n"
	"_drover_reply() {\n"
	"\tcase $2 in\n"
	"\tfile) compopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$cur\") ;;\n"
	"\tdir) compopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -d -- \"$cur\") ;;\n"
	"\tjobs) mapfile -t COMPREPLY < <(compgen -W \"$(_drover_ids \"$1\" queue)\" -- \"$cur\") "
	";;\n"
	"\tnodes) mapfile -t COMPREPLY < <(compgen -W \"$(_drover_ids \"$1\" nodes -N)\" -- \"$cur\") "
	";;\n"
	"\tcommand) mapfile -t COMPREPLY < <(compgen -c -- \"$cur\") ;;\n"
	"\tcommands) mapfile -t COMPREPLY < <(compgen -W \"$_drover_commands\" -- \"$cur\") ;;\n"
	"\t\"word \"*) mapfile -t COMPREPLY < <(compgen -W \"${2#word }\" -- \"$cur\") ;;\n"
	"\tesac\n"
	"}\n"
	"\n";

static const char bash_main[] =
	"_drover() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= d=${COMP_WORDS[0]}\n"
	"\tlocal cmd= c= i w kind opt= first= npos=0 dashdash=\n"
	"\t[[ $d == \"~/\"* ]] && d=$HOME/${d#\"~/\"}\n"
	"\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	"\tCOMPREPLY=()\n"
	"\t# the command, then how many positional arguments precede the cursor\n"
	"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif [[ -z $cmd ]]; then\n"
	"\t\t\t[[ $w == -* ]] && continue\n"
	"\t\t\tcmd=$w c=${w//[^a-zA-Z0-9]/_}\n"
	"\t\t\tdeclare -F \"_drover_value_$c\" >/dev/null || return 0\n"
	"\t\t\tcontinue\n"
	"\t\tfi\n"
	"\t\tif [[ -z $dashdash && $w == -- ]]; then dashdash=1; continue; fi\n"
	"\t\tif [[ -z $dashdash && $w == -?* ]]; then\n"
	"\t\t\t# an option with its value in the next word(s): skip them\n"
	"\t\t\tif [[ $w != *=* ]] && \"_drover_value_$c\" \"$w\" >/dev/null; then\n"
	"\t\t\t\tif [[ ${COMP_WORDS[i+1]} == = ]]; then ((i += 2)); else ((i++)); fi\n"
	"\t\t\tfi\n"
	"\t\t\tcontinue\n"
	"\t\tfi\n"
	"\t\t[[ $w == = ]] && { ((i++)); continue; }\n"
	"\t\t[[ $npos == 0 ]] && first=$w\n"
	"\t\t((npos++))\n"
	"\tdone\n"
	"\tif [[ -z $cmd ]]; then\n"
	"\t\tif [[ $cur == -* ]]; then\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -W '--help --version' -- \"$cur\")\n"
	"\t\telse\n"
	"\t\t\tmapfile -t COMPREPLY < <(compgen -W \"$_drover_commands\" -- \"$cur\")\n"
	"\t\tfi\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\t# the value of an option: --opt VALUE, --opt=VALUE (bash splits at =)\n"
	"\tif [[ -z $dashdash ]]; then\n"
	"\t\tif [[ $cur == = ]]; then opt=$prev cur=\n"
	"\t\telif [[ $prev == = ]] && ((COMP_CWORD > 1)); then opt=${COMP_WORDS[COMP_CWORD-2]}\n"
	"\t\telif [[ $prev == -?* && $prev != *=* ]]; then opt=$prev\n"
	"\t\tfi\n"
	"\tfi\n"
	"\tif [[ -n $opt ]] && kind=$(\"_drover_value_$c\" \"$opt\"); then\n"
	"\t\t_drover_reply \"$d\" \"$kind\"\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tif [[ -z $dashdash && $cur == -* ]]; then\n"
	"\t\tw=_drover_flags_$c\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -W \"${!w} --help\" -- \"$cur\")\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tw=\"_drover_pos_$c[@]\"\n"
	"\tlocal kinds=(\"${!w}\")\n"
	"\t((${#kinds[@]})) || return 0\n"
	"\tkind=${kinds[npos < ${#kinds[@]} ? npos : ${#kinds[@]} - 1]}\n"
	"\tif [[ $kind == subject ]]; then\n"
	"\t\tkind=jobs\n"
	"\t\t[[ $first == node* ]] && kind=nodes\n"
	"\tfi\n"
	"\t_drover_reply \"$d\" \"$kind\"\n"
	"\treturn 0\n"
	"}\n"
	"complete -F _drover drover\n";

static void bash_command(FILE *f, const struct cmd_opts *co)
{
	const char *const *pos = pos_kinds(co->c->name);
	char id[64], kind[512];
	int i;

	ident(co->c->name, id, sizeof(id));
	fprintf(f, "# drover %s\n_drover_flags_%s='", co->c->name, id);
	for (i = 0; i < co->n; i++) {
		if (co->opts[i].shrt)
			fprintf(f, "%s-%c", i ? " " : "", co->opts[i].shrt);
		if (co->opts[i].lng[0])
			fprintf(f, "%s--%s", i || co->opts[i].shrt ? " " : "", co->opts[i].lng);
	}
	fprintf(f, "'\n_drover_pos_%s=(", id);
	for (i = 0; i < 2 && pos[i]; i++)
		fprintf(f, "%s'%s'", i ? " " : "", pos[i]);
	fprintf(f, ")\n_drover_value_%s() {\n\tcase $1 in\n", id);
	for (i = 0; i < co->n; i++) {
		const struct opt *o = &co->opts[i];

		if (!o->arg[0])
			continue;
		value_kind(o, kind, sizeof(kind));
		fprintf(f, "\t");
		if (o->shrt)
			fprintf(f, "-%c%s", o->shrt, o->lng[0] ? "|" : "");
		if (o->lng[0])
			fprintf(f, "--%s", o->lng);
		fprintf(f, ") echo '%s' ;;\n", kind);
	}
	fprintf(f, "\t*) return 1 ;;\n\tesac\n}\n");
}

/* ---- zsh ----------------------------------------------------------------- */

/* text for inside '...' in an _arguments spec: quotes closed and reopened;
 * in an explanation brackets escaped, in a message (esc_colon) colons */
static void zsh_text(FILE *f, const char *text, bool esc_colon)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else if (esc_colon ? *p == ':' || *p == '\\' : *p == '[' || *p == ']' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else
			fputc(*p, f);
	}
}

static void zsh_action(FILE *f, const char *kind)
{
	if (!strcmp(kind, "file"))
		fputs("_files", f);
	else if (!strcmp(kind, "dir"))
		fputs("_files -/", f);
	else if (!strcmp(kind, "jobs"))
		fputs("_drover_jobs", f);
	else if (!strcmp(kind, "subject"))
		fputs("_drover_subject", f);
	else if (!strcmp(kind, "command"))
		fputs("_command_names -e", f);
	else if (!strcmp(kind, "commands"))
		fputs("_drover_commands", f);
	else if (!strncmp(kind, "word ", 5))
		fprintf(f, "(%s)", kind + 5);
	else
		fputs(" ", f);
}

static void zsh_command(FILE *f, const struct cmd_opts *co)
{
	const char *const *pos = pos_kinds(co->c->name);
	char id[64], kind[512];
	int i;

	ident(co->c->name, id, sizeof(id));
	fprintf(f, "_drover_cmd_%s() {\n\t_arguments -s -S \\\n", id);
	for (i = 0; i < co->n; i++) {
		const struct opt *o = &co->opts[i];
		const char *v = o->arg[0] ? "=" : "";

		fputs("\t\t", f);
		if (o->shrt && o->lng[0])
			fprintf(f, "'(-%c --%s)'{-%c%s,--%s%s}'[", o->shrt, o->lng, o->shrt,
				o->arg[0] ? "+" : "", o->lng, v);
		else if (o->shrt)
			fprintf(f, "'-%c%s[", o->shrt, o->arg[0] ? "+" : "");
		else
			fprintf(f, "'--%s%s[", o->lng, v);
		zsh_text(f, o->help, false);
		fputs("]", f);
		if (o->arg[0]) {
			value_kind(o, kind, sizeof(kind));
			fputs(":", f);
			zsh_text(f, o->arg, true);
			fputs(":", f);
			zsh_action(f, kind);
		}
		fputs("' \\\n", f);
	}
	fputs("\t\t'(- *)'{-h,--help}'[print the help and exit]'", f);
	for (i = 0; i < 2 && pos[i]; i++) {
		if (!strcmp(pos[i], "none"))
			break;
		if (i + 1 < 2 && pos[i + 1])
			fprintf(f, " \\\n\t\t'%d:%s:", i + 1, strncmp(pos[i], "word ", 5) ? pos[i] : "word");
		else
			fprintf(f, " \\\n\t\t'*:%s:", strncmp(pos[i], "word ", 5) ? pos[i] : "word");
		zsh_action(f, pos[i]);
		fputs("'", f);
	}
	fputs("\n}\n", f);
}

static const char zsh_head[] =
	"#compdef drover\n"
	"# zsh completion for drover, printed by `drover completion zsh` from this\n"
	"# build's option tables: source it after compinit, or install it as _drover\n"
	"# in a directory of $fpath (make install does).\n"
	"\n"
	"# ids or names: the first column of `drover queue` or `drover nodes -N`,\n"
	"# nothing when the server does not answer within 2 s\n"
	"_drover_ids() {\n"
	"\ttimeout 2 ${_drover_bin:-drover} \"$@\" 2>/dev/null </dev/null |\n"
	"\t\tawk 'NR > 1 && $1 != \"\" { print $1 } NR > 2000 { exit }'\n"
	"}\n"
	"_drover_jobs() {\n"
	"\tlocal -a ids expl\n"
	"\tids=(${(f)\"$(_drover_ids queue)\"})\n"
	"\t_wanted jobs expl 'job id' compadd -a ids\n"
	"}\n"
	"_drover_nodes() {\n"
	"\tlocal -a ids expl\n"
	"\tids=(${(f)\"$(_drover_ids nodes -N)\"})\n"
	"\t_wanted nodes expl 'node' compadd -a ids\n"
	"}\n"
	"# get/describe job(s) ID..., node(s) NAME...\n"
	"_drover_subject() {\n"
	"\tif [[ ${words[2]} == node* ]]; then _drover_nodes; else _drover_jobs; fi\n"
	"}\n";

static const char zsh_main[] =
	"_drover() {\n"
	"\tlocal curcontext=$curcontext state line ret=1\n"
	"\ttypeset -A opt_args\n"
	"\t_drover_bin=${~words[1]}\n"
	"\t_arguments -C \\\n"
	"\t\t'(- *)'{-h,--help}'[print the commands and exit]' \\\n"
	"\t\t'(- *)--version[print the version and exit]' \\\n"
	"\t\t'1:command:_drover_commands' \\\n"
	"\t\t'*::argument:->args' && ret=0\n"
	"\tif [[ $state == args ]]; then\n"
	"\t\tlocal f=_drover_cmd_${words[1]//[^a-zA-Z0-9]/_}\n"
	"\t\tcurcontext=${curcontext%:*:*}:drover-${words[1]}:\n"
	"\t\t(( $+functions[$f] )) && $f && ret=0\n"
	"\tfi\n"
	"\treturn ret\n"
	"}\n"
	"\n"
	"if [[ ${funcstack[1]} == _drover ]]; then\n"
	"\t_drover \"$@\"   # autoloaded from $fpath: this file is _drover's body\n"
	"else\n"
	"\tcompdef _drover drover\n"
	"fi\n";

static void zsh_commands(FILE *f)
{
	const struct drv_command *c;

	fputs("_drover_commands() {\n\tlocal -a cmds\n\tcmds=(\n", f);
	for (c = drv_commands; c->name; c++) {
		if (!c->help)
			continue;
		fprintf(f, "\t\t'%s:", c->name);
		zsh_text(f, c->help, false);
		fputs("'\n", f);
	}
	fputs("\t\t'help:a command'\\''s help'\n", f);
	fputs("\t)\n\t_describe -t commands 'drover command' cmds\n}\n", f);
}

int cmd_completion(int argc, char **argv)
{
	static const struct drv_opt_choice shells[] = { { "bash", 0 }, { "zsh", 1 }, { NULL } };
	static const struct drv_option table[] = { DRV_OPT_END() };
	const struct drv_opts cmd = {
		.name = "drover completion",
		.usage = "drover completion bash|zsh",
		.about = "Prints a completion script for bash or zsh: the commands, each "
			 "command's options from its option table, job files and directories, "
			 "job ids and node names from the server (drover queue, drover nodes; "
			 "nothing when it does not answer within 2 s).\n"
			 "  bash: source <(drover completion bash), or install it as\n"
			 "    /usr/share/bash-completion/completions/drover\n"
			 "  zsh: source <(drover completion zsh) after compinit, or install it\n"
			 "    as _drover in a directory of $fpath",
		.options = table,
		.args_max = 1,
	};
	const struct drv_command *c;
	struct cmd_opts co;
	int n, shell = -1;
	FILE *f = stdout;

	n = drv_opts_parse(&cmd, argc, argv);
	if (n < 0)
		return drv_opts_exit(n);
	for (int i = 0; n == 1 && shells[i].name; i++)
		if (!strcmp(argv[0], shells[i].name))
			shell = shells[i].value;
	if (shell < 0)
		return drv_opts_usage_error(&cmd, n ? "found '%s', expected bash or zsh"
						    : "which shell? expected bash or zsh",
					    n ? argv[0] : "");
	fputs(shell ? zsh_head : bash_head, f);
	if (shell)
		zsh_commands(f);
	else
		fputs("_drover_commands='", f);
	for (c = drv_commands; c->name; c++) {
		if (!c->help)
			continue;
		if (!shell)
			fprintf(f, "%s ", c->name);
	}
	if (!shell)
		fputs("help'\n", f);
	for (c = drv_commands; c->name; c++) {
		if (!c->help)
			continue;
		load(&co, c);
		if (shell)
			zsh_command(f, &co);
		else
			bash_command(f, &co);
		drv_free(co.opts);
		drv_free(co.text);
	}
	if (!shell)
		fputs("_drover_flags_help=''\n_drover_pos_help=('commands' 'none')\n"
		      "_drover_value_help() { return 1; }\n\n",
		      f);
	else
		fputs("_drover_cmd_help() { _arguments '1:command:_drover_commands'; }\n\n",
		      f);
	fputs(shell ? zsh_main : bash_main, f);
	return fflush(f) ? DRV_EXIT_FAIL : DRV_EXIT_OK;
}
