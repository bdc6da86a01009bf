/*
 * test_hostlist.c: Slurm's compressed node lists (SLURM_JOB_NODELIST) and
 * task counts (SLURM_TASKS_PER_NODE), as sbatch(1) writes them.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "drover/common.h"
#include "drover/hostlist.h"

static void expect_list(const char *const *names, size_t n, const char *want)
{
	char out[256];
	size_t len = drv_hostlist_compress(names, n, out, sizeof(out));

	cr_expect(eq(str, out, (char *)want));
	cr_expect(eq(sz, len, strlen(want)));
}

Test(hostlist, ranges_sorted_and_padded)
{
	const char *a[] = { "node03", "node01", "node02", "node05" };
	const char *b[] = { "gpu-1", "gpu-2", "gpu-10", "gpu-3" };
	const char *c[] = { "login", "node7" };
	const char *d[] = { "n1", "n01", "n2", "n2", "n02" };
	const char *e[] = { "node09", "node10", "node11", "node8" };

	expect_list(a, 4, "node[01-03,05]");
	expect_list(b, 4, "gpu-[1-3,10]");
	expect_list(c, 2, "login,node7");
	expect_list(a + 3, 1, "node05");
	expect_list(d, 5, "n[1-2],n[01-02]");
	expect_list(e, 4, "node8,node[09-11]");
	expect_list(NULL, 0, "");
}

Test(hostlist, too_small_a_buffer_is_cut_and_says_so)
{
	const char *a[] = { "node01", "node02", "node04" };
	char out[8];
	size_t len = drv_hostlist_compress(a, 3, out, sizeof(out));

	cr_expect(eq(sz, len, strlen("node[01-02,04]")));
	cr_expect(eq(sz, strlen(out), sizeof(out) - 1));
}

Test(hostlist, counts_in_runs)
{
	const int a[] = { 2, 2, 2, 1 }, b[] = { 4 }, c[] = { 1, 2, 1 };
	char out[64];

	drv_counts_compress(a, 4, out, sizeof(out));
	cr_expect(eq(str, out, "2(x3),1"));
	drv_counts_compress(b, 1, out, sizeof(out));
	cr_expect(eq(str, out, "4"));
	drv_counts_compress(c, 3, out, sizeof(out));
	cr_expect(eq(str, out, "1,2,1"));
}

/* scontrol show hostnames: the other way, padding kept, a suffix allowed */
Test(hostlist, expand)
{
	char **v = NULL;
	size_t n = 0;

	cr_assert(eq(int, drv_hostlist_expand("gpu-[01-03,07],login1 n[9-10]-ib", &v, &n, 100), 0));
	cr_assert(eq(sz, n, 7));
	cr_expect(eq(str, v[0], "gpu-01"));
	cr_expect(eq(str, v[2], "gpu-03"));
	cr_expect(eq(str, v[3], "gpu-07"));
	cr_expect(eq(str, v[4], "login1"));
	cr_expect(eq(str, v[5], "n9-ib"));
	cr_expect(eq(str, v[6], "n10-ib"));
	drv_hostlist_free(v, n);
	cr_expect(eq(int, drv_hostlist_expand("gpu-[03-01]", &v, &n, 100), DRV_EINVAL));
	cr_expect(eq(int, drv_hostlist_expand("gpu-[1-", &v, &n, 100), DRV_EINVAL));
	cr_expect(eq(int, drv_hostlist_expand("a[1-2]b[3]", &v, &n, 100), DRV_EINVAL));
	cr_expect(eq(int, drv_hostlist_expand("n[1-200]", &v, &n, 100), DRV_ELIMIT));
	cr_expect(eq(sz, n, 0));
}
