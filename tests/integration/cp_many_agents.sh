# cp_many_agents.sh: 500 simulated agents, each on one kept-alive
# connection doing sync exchanges (docs/api.md, "Agent protocol"), against
# a real `drover server` ('drover bench agents' at a small size): every
# agent registers and is served, nothing fails, and the server keeps a
# small, fixed number of threads (waiting syncs are deferred replies, not
# threads) while it holds one connection per agent.
. "$ROOT/tests/integration/lib.sh"
"$DROVER" bench agents --agents 500 --procs 2 --seconds 4 --wait 1 --max-threads 16 \
	>"$TEST_TMP/bench.json" || { cat "$TEST_TMP/bench.json"; fail "drover bench agents failed"; }
cat "$TEST_TMP/bench.json"
python3 - "$TEST_TMP/bench.json" <<'PY' || fail "bench agents' figures are not what they should be"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["bench"] == "agents" and b["pass"] is True, b
assert b["registered"] == 500 and b["served"] == 500 and b["errors"] == 0, b
assert b["exchanges_per_s"] > 100, b
s = b["server"]
assert 0 < s["threads_max"] <= 16, s
assert s["fds_max"] >= 500, s   # one connection per agent, held
PY
echo "ok: 500 agents served on one connection each"
