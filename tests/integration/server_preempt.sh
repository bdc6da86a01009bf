# server_preempt.sh: preemption through the controller, with a real
# `drover server` (scheduler.preemption on) and one agent played by this
# script: a high-priority job arriving on a full node preempts the
# preemptible low-priority one; the victim's task is told to stop
# (desired "stop", reason), its GPUs stay held until the agent reports it
# gone, then it goes back to pending (running -> preempted -> pending) and
# the preemptor starts; the cancel of a running job stops its task the
# same way.
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 5" 'scheduler: {order: fifo, mode: backfill, preemption: true}'
start_server

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import call, fail, expect, sync

gpus = [{"index": i, "model": "H100"} for i in range(8)]
st, b = call("POST", "/v1/agent/register", {"name": "n1", "gpus": gpus, "cpu_milli": 64000,
                                            "mem_mib": 512000, "protocol": 1})
sess = b["session"]

def job(name, prio, preemptible):
    return {"apiVersion": "drover/v1", "kind": "Job", "name": name, "priority": prio,
            "preemptible": preemptible,
            "groups": [{"name": "g", "count": 1, "gpus": 8, "command": ["sleep", "600"]}]}

def get(jid):
    return call("GET", "/v1/jobs/%d" % jid, token="ops-t")[1]

def poll(version):
    st, a = sync("n1", sess, version, wait=5)
    expect("poll", st, 200)
    a.setdefault("tasks", [])   # absent: still the version asked about
    return a

def report(reps):
    st, r = sync("n1", sess, reports=reps)
    expect("report", (st, r["stale"]), (200, []))

def wait_for(what, fn, secs=10):
    end = time.time() + secs
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out: " + what)

st, lo = call("POST", "/v1/jobs", job("low", 0, True), token="ops-t")
expect("submit low", st, 201)
lo = lo["id"]
a = wait_for("low assigned", lambda: (lambda a: a if a["tasks"] else None)(poll(0)))
t = a["tasks"][0]
expect("low task", (t["job_id"], t["desired"]), (lo, "run"))
report([{"task_id": t["task_id"], "epoch": t["epoch"], "state": "running"}])
expect("low running", get(lo)["state"], "running")

st, hi = call("POST", "/v1/jobs", job("high", 100, False), token="ops-t")
hi = hi["id"]
wait_for("low preempted", lambda: get(lo)["state"] == "preempted")
b = get(lo)
expect("reason", b["reason"], "preempted by job %d" % hi)
a = wait_for("stop for low", lambda: (lambda a: a if a["tasks"] and a["tasks"][0]["desired"] == "stop" else None)(poll(a["version"])))
expect("stop reason", a["tasks"][0]["stop_reason"], "preempted by job %d" % hi)
time.sleep(0.3)
expect("the preemptor waits for the GPUs", get(hi)["state"], "pending")
report([{"task_id": t["task_id"], "epoch": t["epoch"], "state": "exited", "signal": 15}])
wait_for("high scheduled", lambda: get(hi)["state"] == "scheduled")
b = get(lo)
expect("victim back in the queue", b["state"], "pending")
expect("victim events", [e["to"] for e in b["events"]],
       ["pending", "scheduled", "running", "preempted", "pending"])

# cancel a running job: its task is told to stop; GPUs are held until it is gone
a = wait_for("high assigned", lambda: (lambda a: a if any(x["job_id"] == hi for x in a["tasks"]) else None)(poll(0)))
th = [x for x in a["tasks"] if x["job_id"] == hi][0]
report([{"task_id": th["task_id"], "epoch": th["epoch"], "state": "running"}])
st, c = call("POST", "/v1/jobs/%d/cancel" % hi, {"reason": "test"}, token="ops-t")
expect("cancel", (st, c["state"], c["reason"]), (200, "cancelled", "cancelled by ops: test"))
a = poll(0)
expect("cancelled task to stop", [(x["task_id"], x["desired"]) for x in a["tasks"]], [(th["task_id"], "stop")])
time.sleep(0.3)
expect("low waits while the cancelled task runs", get(lo)["state"], "pending")
report([{"task_id": th["task_id"], "epoch": th["epoch"], "state": "exited", "signal": 15}])
wait_for("low restarted", lambda: get(lo)["state"] == "scheduled")
expect("attempts", get(lo)["attempt"], 2)
st, m = call("GET", "/v1/cluster", token="ops-t")
print("ok: preempted job %d for job %d, requeued and restarted (attempt 2); cancel held GPUs until the task stopped" % (lo, hi))
PY
