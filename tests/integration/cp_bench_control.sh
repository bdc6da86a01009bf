# cp_bench_control.sh: 'drover bench control' at a CI size (200 simulated
# agents on a cluster file of spines and leaves, 300 jobs pending, a submit
# stream of 10 a second), so the bench that measures one controller at
# 12,500 nodes (docs/ha.md, "Scale") cannot rot: every agent registers
# over the agent protocol from two loopback source addresses and
# heartbeats, every streamed job is placed, reported running by its
# simulated agent and seen running on the watch stream, the pending jobs
# stay pending, and the figures the issue names are in the JSON.
. "$ROOT/tests/integration/lib.sh"
"$DROVER" bench control --agents 200 --gpus-per-node 8 --procs 2 --addresses 2 --pending 300 \
	--rate 10 --seconds 6 --job-s 2 --json >"$TEST_TMP/bench.json" ||
	{ cat "$TEST_TMP/bench.json"; fail "drover bench control failed"; }
cat "$TEST_TMP/bench.json"
python3 - "$TEST_TMP/bench.json" <<'PY' || fail "bench control's figures are not what they should be"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["bench"] == "control" and b["agents"] == 200, b
assert b["cluster"] == {"spines": 1, "leaves": 10, "nodes": 200}, b
for k in ("heartbeats_per_s", "submit_to_running_p99_ms", "cpu_percent", "rss_mb"):
    assert isinstance(b[k], (int, float)) and b[k] > 0, (k, b)
a = b["agents_side"]
assert a["registered"] >= 200 and a["errors"] == 0, a
# 200 agents syncing every 5 s (the default interval): 40 a second, and
# the reports of the streamed tasks on top
assert b["heartbeats_per_s"] >= 20, b
assert b["submits"] >= 30 and b["ran"] == b["submits"] and b["failed_submits"] == 0, b
assert a["tasks_started"] >= b["submits"] and a["tasks_ended"] > 0, a
assert b["pending"] == 300, b
assert b["submit_to_running_p50_ms"] <= b["submit_to_running_p99_ms"], b
assert 0 < b["rss_mb"] < 1024, b
# the legs: each submit is sent, then seen scheduled, then seen running
# (one watch stream, in order), so neither leg of that path is above the
# whole path's; its answer may be read before or after it is seen
# scheduled, so the answer's leg is only checked for being there
l = b["legs_ms"]
for k in ("answered", "scheduled", "scheduled_to_running"):
    assert 0 < l[k + "_p50"] <= l[k + "_p99"], (k, l)
for k in ("scheduled", "scheduled_to_running"):
    assert l[k + "_p99"] <= b["submit_to_running_max_ms"] + 0.1, (k, l, b)
assert l["scheduled_p50"] <= b["submit_to_running_p50_ms"] + 0.1, (l, b)
PY
echo "ok: 200 simulated agents heartbeat, streamed jobs run, 300 stay pending"
