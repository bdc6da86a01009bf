/*
 * main.c: drover's entry point. It looks the first argument up in the
 * commands table and calls its handler; everything else is in libdrover.
 * Called by a name in drv_commands_by_name (a link named sbatch), it runs
 * that command with the whole argv, git-style.
 * 'drover help CMD [NAME]' is 'drover CMD [NAME] --help': the handler
 * prints its help from its option table (include/drover/options.h), so the
 * two are the same text.
 */
#include "drover/cmd.h"
#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	const struct drv_command *c;
	fprintf(f, "usage: drover <command> [options]\n\ncommands:\n");
	for (c = drv_commands; c->name; c++)
		if (c->help)   /* internal commands have none */
			fprintf(f, "  %-10s %s\n", c->name, c->help);
	fprintf(f, "\nRun 'drover <command> --help' or 'drover help <command>' for a command's "
		   "options.\n");
}

static const struct drv_command *find(const char *name)
{
	const struct drv_command *c;

	for (c = drv_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	fprintf(stderr, "drover: '%s' is not a drover command; see 'drover --help'\n", name);
	return NULL;
}

/* 'drover help CMD [NAME...]': runs 'drover CMD [NAME...] --help'. */
static int help(int argc, char **argv)
{
	const struct drv_command *c;
	char *hargv[8];
	int i, n = 0;

	if (argc < 3 || argc > 8) {
		usage(argc < 3 ? stdout : stderr);
		return argc < 3 ? DRV_EXIT_OK : DRV_EXIT_USAGE;
	}
	c = find(argv[2]);
	if (!c)
		return DRV_EXIT_USAGE;
	for (i = 2; i < argc; i++)
		hargv[n++] = argv[i];
	hargv[n++] = "--help";
	hargv[n] = NULL;
	return c->fn(n, hargv);
}

/* Called by another name ("sbatch", a link to drover)? The row that answers
 * to it, else NULL. */
static const struct drv_command *by_name(const char *argv0)
{
	const char *base = strrchr(argv0, '/');
	const struct drv_command *c;
	const char *const *n;

	base = base ? base + 1 : argv0;
	for (n = drv_commands_by_name; *n; n++)
		if (!strcmp(*n, base))
			break;
	for (c = drv_commands; *n && c->name; c++)
		if (!strcmp(c->name, base))
			return c;
	if (*n) {
		fprintf(stderr, "%s: error: drover has no %s yet (docs/slurm.md)\n", base, base);
		exit(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const struct drv_command *c;

	if (argc > 0 && (c = by_name(argv[0])))
		return c->fn(argc, argv);

	if (argc < 2) {
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return DRV_EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	if (!strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	c = find(argv[1]);
	return c ? c->fn(argc - 1, argv + 1) : DRV_EXIT_USAGE;
}
