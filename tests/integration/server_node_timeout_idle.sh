# server_node_timeout_idle.sh: a node's heartbeats stop before any job has
# run. The controller marks it down and stays up. Its list of running jobs
# is still empty then (no memory behind it), and the walk over it once
# copied from a NULL pointer: UBSan stopped the server there (CI, under
# tests/run-integration's sanitizer check with DROVER=build/asan/drover).
# A second node that keeps beating stays up, and a job submitted after
# the timeout is placed on it.
. "$ROOT/tests/integration/lib.sh"

server_config "heartbeat_interval_s: 1" "heartbeat_timeout_s: 2" "agent_lease_s: 2" "sched_delay_ms: 5"
start_server

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import *

silent = register("node-a")
live = register("node-b")
wait_until("node-a down", lambda: call("GET", "/v1/nodes/node-a", token="ops-t")[1]["state"] == "down",
           10, tick=lambda: heartbeat("node-b", live))
expect("node-b", call("GET", "/v1/nodes/node-b", token="ops-t")[1]["state"], "up")
st, j = call("POST", "/v1/jobs", {"apiVersion": "drover/v1", "kind": "Job", "name": "after",
                                  "groups": [{"name": "w", "count": 1, "gpus": 1, "command": ["true"]}]},
             token="ops-t")
expect("submit after the timeout", st, 201)
b = wait_until("placed", lambda: (lambda b: b if b["state"] == "scheduled" else None)(job(j["id"])), 10,
               tick=lambda: heartbeat("node-b", live))
expect("placed on the live node", [p["node"] for p in b["placement"]], ["node-b"])
print("ok: node-a down with no job ever run, server up, the next job placed on node-b")
PY
