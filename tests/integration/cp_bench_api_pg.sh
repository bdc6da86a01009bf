# cp_bench_api_pg.sh: 'drover bench api --store postgres' starts a
# PostgreSQL of its own (initdb and pg_ctl as the postgres user through
# runuser) and measures on it, at a small size: the submit figures, the
# failover figure (two controllers, leader_lease_s 2, the leader SIGKILLed
# 3 times: each time the standby leads and takes a submit, within the
# 5 s bound of ha_failover.sh), and the restart figure with 20,000 jobs
# written with COPY (19,800 finished, 200 unfinished). Its PostgreSQL is
# gone afterwards. Skips, saying what is missing, where PostgreSQL cannot
# run (as pglib.sh does).
. "$ROOT/tests/integration/lib.sh"
PG_BIN=${DROVER_PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$PG_BIN/initdb" ] || skip "needs PostgreSQL 15's initdb in $PG_BIN (scripts/install-deps installs postgresql-15)"
id postgres >/dev/null 2>&1 || skip "needs the postgres user (made by the postgresql-15 package)"
command -v runuser >/dev/null 2>&1 || skip "needs runuser (util-linux) to run initdb as postgres"
[ "$(id -u)" = 0 ] || skip "needs root to run initdb as the postgres user (runuser)"
ls -d /tmp/drover-bench-pg.* 2>/dev/null | sort >"$TEST_TMP/pg-before"
"$DROVER" bench api --json --store postgres --nodes 2 --serial 10 --clients 2 --concurrent 20 \
	--batch 100 --batch-size 50 --procs 2 --latency 5 --workload 26 --many-clients 0 --no-slurm \
	--restart-jobs 20000 --failovers 3 >"$TEST_TMP/bench.json" 2>"$TEST_TMP/bench.err" ||
	{ tail -30 "$TEST_TMP/bench.err"; fail "drover bench api --store postgres failed"; }
cat "$TEST_TMP/bench.json"
python3 - "$TEST_TMP/bench.json" <<'PY' || fail "bench api's PostgreSQL figures are not what they should be"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["store"] == "postgres" and "started by the bench" in b["postgres"], b["store"]
s = b["durable_submits"]
for k, n in (("one_client", 10), ("concurrent", 20), ("batch", 100), ("process_per_job", 2)):
    assert s[k]["jobs"] == n and s[k]["failed"] == 0 and s[k]["per_s"] > 0, (k, s[k])
f = b["failover"]
assert f["failovers"] == 3 and f["measured"] == 3 and f["leader_lease_s"] == 2, f
assert 0 < f["leader_p50_s"] <= f["failover_p50_s"] <= f["failover_p99_s"] <= f["failover_max_s"] <= 5, f
assert f["leader_p99_s"] <= f["failover_p99_s"], f
r = b["restart_1m_jobs"]
assert r["finished_jobs"] == 19800 and r["unfinished_jobs"] == 200, r
assert 0 < b["restart_1m_jobs_s"] == r["seconds"] < 30, r
PY
ls -d /tmp/drover-bench-pg.* 2>/dev/null | sort >"$TEST_TMP/pg-after"
cmp -s "$TEST_TMP/pg-before" "$TEST_TMP/pg-after" || fail "the bench left its PostgreSQL behind: $(comm -13 "$TEST_TMP/pg-before" "$TEST_TMP/pg-after")"
echo "ok: bench api ran on a PostgreSQL of its own"
