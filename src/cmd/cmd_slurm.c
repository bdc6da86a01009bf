/*
 * cmd_slurm.c: the Slurm faces (sbatch, squeue, sacct, scancel, sinfo,
 * scontrol), thin entries into the client (src/client/slurm_*.c), and
 * 'drover slurm-path', the directory `make install` puts their links in.
 */
#include "drover/client.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/options.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DROVER_PREFIX
#define DROVER_PREFIX "/usr/local"
#endif

#define SLURM_LINKS "lib/drover/slurm/bin"

int cmd_sbatch(int argc, char **argv) { return drv_client_cmd_sbatch(argc, argv); }
int cmd_squeue(int argc, char **argv) { return drv_client_cmd_squeue(argc, argv); }
int cmd_sacct(int argc, char **argv) { return drv_client_cmd_sacct(argc, argv); }
int cmd_scancel(int argc, char **argv) { return drv_client_cmd_scancel(argc, argv); }
int cmd_sinfo(int argc, char **argv) { return drv_client_cmd_sinfo(argc, argv); }
int cmd_scontrol(int argc, char **argv) { return drv_client_cmd_scontrol(argc, argv); }

/*
 * The links live in PREFIX/lib/drover/slurm/bin beside PREFIX/bin/drover:
 * found from where this binary is (so `make install PREFIX=/opt/x` and a
 * package both answer right), else the PREFIX it was built with.
 */
int cmd_slurm_path(int argc, char **argv)
{
	char exe[PATH_MAX], dir[PATH_MAX + 32];
	ssize_t n;
	struct stat st;

	static const struct drv_option opts[] = { DRV_OPT_END() };
	static const struct drv_opts cmd = {
		.name = "drover slurm-path",
		.usage = "drover slurm-path",
		.about = "Prints the directory of the links named sbatch, srun, squeue, sacct, "
			 "scancel, sinfo, scontrol and salloc that `make install` makes; put it "
			 "first in PATH to use Slurm's commands against drover: export "
			 "PATH=$(drover slurm-path):$PATH",
		.options = opts,
	};
	int rc = drv_opts_parse(&cmd, argc, argv);

	if (rc < 0)
		return drv_opts_exit(rc);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash && slash - exe >= 4 && !strncmp(slash - 4, "/bin", 4)) {
			slash[-4] = '\0';
			snprintf(dir, sizeof(dir), "%s/" SLURM_LINKS, exe);
			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
				printf("%s\n", dir);
				return DRV_EXIT_OK;
			}
		}
	}
	printf("%s/" SLURM_LINKS "\n", DROVER_PREFIX);
	return DRV_EXIT_OK;
}
