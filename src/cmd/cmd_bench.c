/*
 * cmd_bench.c: 'drover bench NAME [options]': dispatches to the benchmarks in
 * src/bench/, one row per benchmark. Each prints one JSON object.
 */
#include "drover/bench.h"
#include "drover/cmd.h"
#include "drover/common.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} benches[] = {
	{ "place", drv_bench_place, "placement latency on 1k, 10k and 100k-GPU clusters" },
	{ "sched", drv_bench_sched, "one scheduling pass over 50,000 pending jobs" },
	{ "api", drv_bench_api, "durable submits per second and submit-to-running latency" },
	{ "agent", drv_bench_agent, "an idle agent's memory and CPU footprint" },
};

int cmd_bench(int argc, char **argv)
{
	size_t i;
	if (argc >= 2)
		for (i = 0; i < DRV_ARRAY_SIZE(benches); i++)
			if (!strcmp(argv[1], benches[i].name))
				return benches[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "usage: drover bench NAME [--json]\n\nbenchmarks:\n");
	for (i = 0; i < DRV_ARRAY_SIZE(benches); i++)
		fprintf(stderr, "  %-8s %s\n", benches[i].name, benches[i].help);
	return DRV_EXIT_USAGE;
}
