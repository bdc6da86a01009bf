# server_fencing.sh: node liveness and fencing at the protocol level, with
# a real `drover server` and two agents played by this script over HTTP
# (so every step is exact): a node that stops heartbeating is declared
# down, its gang keeps its GPUs (saying why) until the agent's lease is
# surely over, then is requeued whole and started elsewhere under a new
# epoch; the dead node's old session is refused; when it comes back, its
# old task is in the sync reply's stale list (as a running task and as a
# report) and absent from its task set; past the retry limit the job fails
# with the reason.
. "$ROOT/tests/integration/lib.sh"

server_config "heartbeat_interval_s: 1" "heartbeat_timeout_s: 2" "agent_lease_s: 2" "retry_limit: 1" "sched_delay_ms: 5"
start_server

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import *

sess = {"node-a": register("node-a"), "node-b": register("node-b")}
pod = b"""apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: ["sleep", "600"]
    resources: {limits: {nvidia.com/gpu: 8}}
"""
st, j = call("POST", "/v1/jobs", pod, token="ops-t", ctype="application/yaml")
expect("submit", st, 201)
jid = j["id"]

def placed():
    b = job(jid)
    return b if b["state"] == "scheduled" else None

b = wait_until("the job to be placed", placed, 10)
first = b["placement"][0]["node"]
other = "node-b" if first == "node-a" else "node-a"
st, a = tasks_of(first, sess[first])
expect("assignments", st, 200)
expect("one task", len(a["tasks"]), 1)
t = a["tasks"][0]
expect("assignment", (t["task_id"], t["desired"], t["argv"], t["gpus"], t["rank"], t["world_size"],
                      t["master_addr"], t["image"]),
       ("%d.0" % jid, "run", ["sleep", "600"], list(range(8)), 0, 1,
        "10.0.0.1" if first == "node-a" else "10.0.0.2", "busybox:1.36"))
e1 = t["epoch"]
st, r = report(first, sess[first], [{"task_id": t["task_id"], "epoch": e1, "state": "running", "pid": 4242}])
expect("report running", (st, r["stale"]), (200, []))
expect("job running", job(jid)["state"], "running")

# The first node goes silent; the other keeps heartbeating.
def down():
    st, n = call("GET", "/v1/nodes/" + first, token="ops-t")
    return n["state"] == "down"
wait_until(first + " down", down, 10, tick=lambda: heartbeat(other, sess[other]))
# Down is not gone: until its agent's lease is surely over (agent_lease_s +
# 5 s after the last reply), the task may still run there; the gang keeps
# its GPUs and says why.
b = job(jid)
expect("still running while the lease may hold", b["state"], "running")
if "GPUs stay held" not in b["reason"] or "lease" not in b["reason"]:
    fail("reason while the node is down: " + b["reason"])

def moved():
    b = job(jid)
    return b if b["state"] == "scheduled" and b["placement"][0]["node"] == other else None
b = wait_until("the gang to restart on " + other, moved, 15, tick=lambda: heartbeat(other, sess[other]))
ev = [e["to"] for e in b["events"]]
expect("events", ev, ["pending", "scheduled", "running", "pending", "scheduled"])
if "requeued (retry 1 of 1)" not in b["events"][3]["reason"]:
    fail("requeue reason: " + b["events"][3]["reason"])
st, a2 = tasks_of(other, sess[other])
e2 = a2["tasks"][0]["epoch"]
if not e2 > e1:
    fail("new epoch %d not above %d" % (e2, e1))

# The dead node's old session is refused, whatever the sync carries.
expect("old session heartbeat", heartbeat(first, sess[first])[0], 409)
expect("old session report", report(first, sess[first], [])[0], 409)
expect("old session poll", assignments(first, sess[first], 0, 1)[0], 409)

# It comes back still running the old task: fenced off.
s2 = register(first, running=[{"task_id": "%d.0" % jid, "epoch": e1, "pid": 4242}])
st, hb = heartbeat(first, s2, tasks=[{"task_id": "%d.0" % jid, "epoch": e1, "state": "running"}])
expect("stale list", [(k["task_id"], k["epoch"], k["reason"]) for k in hb["stale"]],
       [("%d.0" % jid, e1, "stale epoch")])
st, a = assignments(first, s2)
expect("not in its assignments", a["tasks"], [])
st, r = report(first, s2, [{"task_id": "%d.0" % jid, "epoch": e1, "state": "exited", "exit_code": 0}])
expect("stale report", [(x["task_id"], x["epoch"]) for x in r["stale"]], [("%d.0" % jid, e1)])
expect("the stale exit changed nothing", job(jid)["state"], "scheduled")

# Past the retry limit: the second node dies too, the job fails with the reason.
report(other, sess[other], [{"task_id": "%d.0" % jid, "epoch": e2, "state": "running"}])
wait_until("failed", lambda: job(jid)["state"] == "failed", 20, tick=lambda: heartbeat(first, s2))
b = job(jid)
if "retry limit 1 reached" not in b["reason"]:
    fail("reason: " + b["reason"])
print("ok: node down -> gang requeued under epoch %d (was %d); old session refused; "
      "old task fenced; retry limit -> failed: %s" % (e2, e1, b["reason"]))
PY
