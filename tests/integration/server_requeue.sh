# server_requeue.sh: a 2-node gang loses one node: the node is marked down
# after the heartbeat timeout, but the job keeps running (its GPUs held,
# the reason says why) until the dead node's agent lease is surely over
# (agent_lease_s + 5 s after the last reply it got); then the job goes back
# to pending, its task on the surviving node is told to stop with no
# grace, and the gang's GPUs stay held until that task is reported gone, so
# the restart (a new epoch, on the survivor and a third node) never
# overlaps the old process. Protocol level, agents played by this script.
. "$ROOT/tests/integration/lib.sh"

server_config "heartbeat_interval_s: 1" "heartbeat_timeout_s: 2" "agent_lease_s: 2" "retry_limit: 3" \
	"sched_delay_ms: 5"
start_server

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import *

sess = {n: register(n) for n in ("node-a", "node-b", "node-c")}
gang = {"apiVersion": "drover/v1", "kind": "Job", "name": "gang",
        "groups": [{"name": "w", "count": 2, "gpus": 8, "command": ["sleep", "600"]}]}
st, j = call("POST", "/v1/jobs", json.dumps(gang).encode(), token="ops-t")
expect("submit", st, 201)
jid = j["id"]

def beat(names):
    for n in names:
        heartbeat(n, sess[n])

b = wait_until("placed", lambda: (lambda b: b if b["state"] == "scheduled" else None)(job(jid)), 10)
placed = [p["node"] for p in b["placement"]]
dead, survivor = placed
spare = [n for n in sess if n not in placed][0]
e1 = None
for n in placed:
    st, a = tasks_of(n, sess[n])
    t = a["tasks"][0]
    e1 = t["epoch"]
    report(n, sess[n], [{"task_id": t["task_id"], "epoch": e1, "state": "running"}])
expect("running", job(jid)["state"], "running")

alive = [survivor, spare]
wait_until(dead + " down", lambda: call("GET", "/v1/nodes/" + dead, token="ops-t")[1]["state"] == "down",
           10, tick=lambda: beat(alive))
down_at = time.time()
b = job(jid)
expect("running while the dead node's lease may hold", b["state"], "running")
if "restarts in" not in b["reason"]:
    fail("reason while waiting for the lease: " + b["reason"])
b = wait_until("back to pending after the lease", lambda: (lambda b: b if b["state"] == "pending" else None)(job(jid)),
               12, tick=lambda: beat(alive))
waited = time.time() - down_at
if waited < 3:
    fail("requeued %.1f s after the node went down: before its lease (2 s + 5 s after the last reply) ended" % waited)
if "lease" not in b["reason"]:
    fail("requeue reason: " + b["reason"])
st, a = assignments(survivor, sess[survivor])
expect("survivor told to stop now", [(t["desired"], t["grace_s"], t["epoch"]) for t in a["tasks"]],
       [("stop", 0, e1)])
surv_task = a["tasks"][0]["task_id"]
for _ in range(10):
    beat(alive)
    time.sleep(0.1)
expect("GPUs held while the old task lives", job(jid)["state"], "pending")
st, n = call("GET", "/v1/nodes/" + survivor, token="ops-t")
expect("survivor's GPUs still allocated", n["gpus_allocated"], 8)
report(survivor, sess[survivor], [{"task_id": surv_task, "epoch": e1, "state": "exited", "signal": 9}])
b = wait_until("restarted", lambda: (lambda b: b if b["state"] == "scheduled" else None)(job(jid)), 10,
               tick=lambda: beat(alive))
expect("restarted on the survivor and the spare", sorted(p["node"] for p in b["placement"]), sorted(alive))
expect("events", [e["to"] for e in b["events"]], ["pending", "scheduled", "running", "pending", "scheduled"])
st, a = tasks_of(survivor, sess[survivor])
if not a["tasks"][0]["epoch"] > e1:
    fail("new epoch not above the old")
print("ok: gang requeued %.1f s after its node went down (past the lease)," % waited,
      " survivor stopped with grace 0, GPUs held until it was gone, "
      "restarted on %s" % ",".join(sorted(alive)))
PY
