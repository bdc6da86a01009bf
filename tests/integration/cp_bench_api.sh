# cp_bench_api.sh: 'drover bench api' runs end to end at a small size (3
# simulated nodes, a short workload, no Slurm) and reports what it
# measured: every submit answered, every latency job seen running, the
# workload drained, a restart from SIGKILL timed, figures that are numbers;
# clients_1000 at 50 clients (the submits as a plain user with
# Idempotency-Keys, under the tenants file's authorization): no errors.
. "$ROOT/tests/integration/lib.sh"
"$DROVER" bench api --json --nodes 3 --serial 20 --clients 4 --concurrent 40 --batch 200 \
	--batch-size 100 --procs 5 --latency 10 --workload 26 --no-slurm --restart-jobs 2000 --many-clients 50 \
	>"$TEST_TMP/bench.json" ||
	fail "drover bench api failed"
cat "$TEST_TMP/bench.json"
python3 - "$TEST_TMP/bench.json" <<'PY' || fail "bench api's figures are not what they should be"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["bench"] == "api"
s = b["durable_submits"]
for k, n in (("one_client", 20), ("concurrent", 40), ("batch", 200), ("process_per_job", 5)):
    assert s[k]["jobs"] == n and s[k]["failed"] == 0, (k, s[k])
    assert s[k]["per_s"] > 0, (k, s[k])
assert s["concurrent"]["clients"] == 4
m = b["clients_1000"]
assert m["clients"] == 50 and m["requests"] == 100 and m["errors"] == 0, m
for k in ("get_p50_ms", "get_p99_ms", "post_p50_ms", "post_p99_ms"):
    assert 0 < m[k] < 60000, (k, m)
assert m["get_p50_ms"] <= m["get_p99_ms"] and m["post_p50_ms"] <= m["post_p99_ms"], m
assert m["server_cpu_ms"] >= 0 and m["server_cpu_ms_per_request"] >= 0, m
l = b["latency_submit_to_running"]
assert l["jobs"] == 10 and l["failed_submits"] == 0 and l["seen_running"] == 10, l
assert 0 < l["min_ms"] <= l["p50_ms"] <= l["p99_ms"] <= l["max_ms"], l
w = b["workload"]
for k in ("drover_batch", "drover_process_per_job"):
    assert w[k]["jobs"] == 26 and w[k]["failed"] == 0, (k, w[k])
    assert w[k]["all_done_s"] >= w[k]["submit_s"] > 0, (k, w[k])
assert "error" in w["slurm"]
r = b["restart_1m_jobs"]
assert r["finished_jobs"] == 1980 and r["unfinished_jobs"] == 20, r
assert 0 < b["restart_1m_jobs_s"] == r["seconds"] < 30, r
PY
echo "ok: bench api ran"
