/*
 * cmd_version.c: 'drover version' (and 'drover --version'): the release
 * and the commit this binary was built from. The Makefile passes the
 * commit (`git describe --always --dirty` at build time, or DROVER_COMMIT
 * given to make by a packager) as DROVER_COMMIT; a build from a tarball
 * without .git has none and says so.
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/options.h"

#include <stdio.h>

#ifndef DROVER_COMMIT
#define DROVER_COMMIT ""
#endif

int cmd_version(int argc, char **argv)
{
	static const struct drv_option table[] = { DRV_OPT_END() };
	static const struct drv_opts cmd = {
		.name = "drover version",
		.usage = "drover version",
		.about = "Prints the release and the commit it is built from: drover 0.1.0 "
			 "(commit 1c74668), with -dirty when the tree had changes, or "
			 "(commit unknown) for a build outside git.",
		.options = table,
	};
	int n = drv_opts_parse(&cmd, argc, argv);

	if (n < 0)
		return drv_opts_exit(n);
	printf("drover %s (commit %s)\n", DRV_VERSION, DROVER_COMMIT[0] ? DROVER_COMMIT : "unknown");
	return DRV_EXIT_OK;
}
