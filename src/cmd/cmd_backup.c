/*
 * cmd_backup.c: 'drover backup --state DIR FILE': an online copy of the
 * controller's SQLite state (SQLite's backup API), safe while the server
 * runs. A PostgreSQL store is backed up with pg_dump (docs/ha.md).
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/options.h"
#include "drover/store.h"

#include <stdio.h>
#include <string.h>

int cmd_backup(int argc, char **argv)
{
	const char *state = NULL, *store = NULL;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "state", &state, "DIR", "the server's state directory",
			       .flags = DRV_OPTF_REQUIRED),
		DRV_OPT_STRING(0, "store", &store, "URL",
			       "sqlite (default); a postgres:// store is refused: use pg_dump"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover backup",
		.usage = "drover backup --state DIR FILE",
		.about = "An online copy of the SQLite state (DIR/state.db) into FILE (created, mode "
			 "0600), consistent while the server runs.",
		.options = table,
		.args_max = 1,
	};
	char src[4200], err[600];
	int rc = drv_opts_parse(&cmd, argc, argv);

	if (rc < 0)
		return drv_opts_exit(rc);
	if (store && drv_store_is_pg_url(store)) {
		fprintf(stderr, "drover backup: a PostgreSQL store is backed up with pg_dump, e.g. "
			"pg_dump --format=custom -d DB -f FILE (docs/ha.md)\n");
		return DRV_EXIT_USAGE;
	}
	if (rc != 1) {
		fprintf(stderr, "drover backup: expected one FILE to write (usage: %s)\n", cmd.usage);
		return DRV_EXIT_USAGE;
	}
	snprintf(src, sizeof(src), "%s/state.db", state);
	rc = drv_store_sqlite_backup(src, argv[0], err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover backup: %s\n", err);
		return rc == DRV_EINVAL ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	printf("drover backup: %s copied to %s\n", src, argv[0]);
	return DRV_EXIT_OK;
}
