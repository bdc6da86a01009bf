/*
 * cmd_bench.c: 'drover bench NAME [options]': dispatches to the benchmarks in
 * src/bench/, one row per benchmark. Each prints one JSON object and has
 * its own options ('drover bench NAME --help').
 */
#include "drover/bench.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/options.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} benches[] = {
	{ "place", drv_bench_place, "placement latency on 1k, 10k and 100k-GPU clusters" },
	{ "pack", drv_bench_pack, "GPU allocation per placement scorer at 100-130% offered load" },
	{ "sched", drv_bench_sched, "one scheduling pass over 50,000 pending jobs" },
	{ "api", drv_bench_api, "durable submits per second and submit-to-running latency" },
	{ "agent", drv_bench_agent, "an idle agent's memory and CPU footprint" },
	{ "agents", drv_bench_agents, "many agents' sync exchanges against one server" },
	{ "control", drv_bench_control, "12,500 simulated agents and jobs flowing on one controller" },
	{ "soak", drv_bench_soak, "exactly-once under controller and agent SIGKILLs: lost, twice, stuck" },
	{ "sbatch", drv_bench_sbatch, "sbatch processes a second: drover-slurm beside Slurm's sbatch" },
};

const char *cmd_bench_words(void)
{
	static char words[512];

	if (!words[0]) {
		size_t l = (size_t)snprintf(words, sizeof(words), "word");

		for (size_t i = 0; i < DRV_ARRAY_SIZE(benches) && l < sizeof(words); i++)
			l += (size_t)snprintf(words + l, sizeof(words) - l, " %s", benches[i].name);
	}
	return words;
}

int cmd_bench(int argc, char **argv)
{
	static const struct drv_option table[] = { DRV_OPT_END() };
	char about[1024];
	const struct drv_opts cmd = {
		.name = "drover bench",
		.usage = "drover bench NAME [options]",
		.about = about,
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
		.flags = DRV_OPTS_STOP_AT_ARG,
	};
	size_t i, len;
	int n;

	len = (size_t)snprintf(about, sizeof(about),
			       "Runs a benchmark and prints one JSON object; 'drover bench NAME "
			       "--help' for its options.\n\nbenchmarks:\n");
	for (i = 0; i < DRV_ARRAY_SIZE(benches) && len < sizeof(about); i++)
		len += (size_t)snprintf(about + len, sizeof(about) - len, "  %-8s %s\n",
					benches[i].name, benches[i].help);
	n = drv_opts_parse(&cmd, argc, argv);
	if (n < 0)
		return drv_opts_exit(n);
	if (n == 0)
		return drv_opts_usage_error(&cmd, "which benchmark?");
	for (i = 0; i < DRV_ARRAY_SIZE(benches); i++)
		if (!strcmp(argv[0], benches[i].name))
			return benches[i].fn(n, argv);
	return drv_opts_usage_error(&cmd, "'%s' is not a benchmark", argv[0]);
}
