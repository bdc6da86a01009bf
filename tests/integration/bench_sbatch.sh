# bench_sbatch.sh: `drover bench sbatch` at a small size and without Slurm
# (slurm_side_by_side.sh holds the guard against Slurm): it starts its own
# server and agent, submits through drover-slurm and drover one process a
# job, prints the JSON docs/client.md describes, and leaves nothing behind.
. "$ROOT/tests/integration/lib.sh"

out=$("$DROVER" bench sbatch --json --no-slurm --jobs 5 --rounds 2 2>"$TEST_TMP/err") ||
	fail "bench sbatch: $(cat "$TEST_TMP/err")"
echo "$out"
echo "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["benchmark"] == "sbatch" and r["jobs_per_round"] == 5 and r["rounds"] == 2, r
s = r["systems"]
for name in ("drover_slurm", "drover"):
    x = s[name]
    assert x["failed"] == 0 and x["jobs_per_s"] > 0 and len(x["rounds"]) == 2, (name, x)
    assert x["cpu_ms_per_job"] > 0, (name, x)
assert s["slurm"] == {"skipped": "--no-slurm"}, s["slurm"]
assert "drover_slurm_over_slurm" not in r
' || fail "bench sbatch JSON: $out"
left=$(find /tmp -maxdepth 1 -name 'drover-bench-sbatch.*' -newer "$TEST_TMP" 2>/dev/null)
[ -z "$left" ] || fail "left behind: $left"
echo "ok: drover bench sbatch"
