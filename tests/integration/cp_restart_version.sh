# cp_restart_version.sh: an agent's task-set version from an earlier life
# of the controller never reads as current. One agent, played by this
# script over the protocol, registers; the controller is SIGKILLed and
# restarted on the same state, and the agent's next sync takes the task
# set at that life's version V. A job is placed on the node (state
# scheduled, on disk) before the agent syncs again, and the controller
# is SIGKILLed and restarted once more. The agent's sync with V must get
# the task set with the job's task: before, every restored node started
# again at version 0, the same V, so the answer said "unchanged" and the
# job stayed scheduled for ever (bench soak: 8 jobs never started).
. "$ROOT/tests/integration/lib.sh"

# long timeouts: nothing here may go down or be requeued on its own
server_config "heartbeat_interval_s: 1" "heartbeat_timeout_s: 60" "agent_lease_s: 120" \
	"sched_delay_ms: 5"
start_server

step() {
	URL="$SERVER_URL" STEP="$1" STATE="$TEST_TMP/sim.json" python3 - <<'PY'
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import call, fail, expect, register, sync

step, path = os.environ["STEP"], os.environ["STATE"]
st = json.load(open(path)) if os.path.exists(path) else {}

def save():
    json.dump(st, open(path, "w"))

if step == "register":
    st["session"] = register("na")
    st["version"] = sync("na", st["session"], -1)[1]["version"]
elif step == "sync-then-place":
    code, a = sync("na", st["session"], st["version"])
    expect("sync after the first restart", (code, a.get("tasks")), (200, []))
    st["version"] = a["version"]
    code, j = call("POST", "/v1/jobs", {"apiVersion": "drover/v1", "kind": "Job", "name": "v",
                                        "groups": [{"name": "g", "count": 1, "gpus": 1,
                                                    "command": ["true"]}]}, token="ops-t")
    expect("submit", code, 201)
    st["job"] = j["id"]
    end = time.time() + 10
    while call("GET", "/v1/jobs/%d" % j["id"], token="ops-t")[1]["state"] != "scheduled":
        if time.time() > end:
            fail("the job was not placed on na")
        time.sleep(0.05)
    time.sleep(0.5)   # its placement is on disk well before this
elif step == "sync-after-restart":
    code, j = call("GET", "/v1/jobs/%d" % st["job"], token="ops-t")
    expect("restored placement", (j["state"], j["nodelist"]), ("scheduled", "na"))
    code, a = sync("na", st["session"], st["version"])
    expect("sync status", code, 200)
    got = [t["task_id"] for t in a.get("tasks", [])]
    print("version held %d, the controller's %d, tasks %r" % (st["version"], a["version"], got))
    expect("the task set of the restarted controller", got, ["%d.0" % st["job"]])
save()
PY
}

step register || fail "register"
stop_server KILL
start_server
step sync-then-place || fail "first life after the restart"
stop_server KILL
start_server
step sync-after-restart || fail "the agent's old version read as current"
