/*
 * main.c: drover's entry point. It looks the first argument up in the
 * commands table and calls its handler; everything else is in libdrover.
 */
#include "drover/cmd.h"
#include "drover/common.h"

#include <stdio.h>
#include <string.h>

#ifndef DROVER_VERSION
#define DROVER_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	const struct drv_command *c;
	fprintf(f, "usage: drover <command> [options]\n\ncommands:\n");
	for (c = drv_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->help);
	fprintf(f, "\nRun 'drover <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	const struct drv_command *c;

	if (argc < 2) {
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return DRV_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("drover %s\n", DROVER_VERSION);
		return DRV_EXIT_OK;
	}
	for (c = drv_commands; c->name; c++)
		if (!strcmp(c->name, argv[1]))
			return c->fn(argc - 1, argv + 1);
	fprintf(stderr, "drover: '%s' is not a drover command; see 'drover --help'\n", argv[1]);
	return DRV_EXIT_USAGE;
}
