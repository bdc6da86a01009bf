# server_cluster.sh: `drover server --cluster FILE`: the file's nodes exist
# (down until their agent registers) in their pools with their prices; an
# agent under a name the file lacks lands in the default pool and leaf with
# its labels; an agent whose GPUs disagree with the file is refused; jobs
# are placed on registered nodes only; /metrics counts GPUs by pool and, with
# open_endpoints: false, answers only callers with a token.
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 5" "open_endpoints: false"
start_server --cluster "$ROOT/examples/clusters/h100-256.yaml"
# open_endpoints: false closes /healthz and /metrics to callers without a token
expect_eq "closed /metrics" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/metrics")" 401
expect_eq "closed /healthz" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/healthz")" 401

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import URL, call, fail, expect, heartbeat, sync

def register(name, n, model="NVIDIA H100 80GB HBM3", labels=None):
    gpus = [{"index": i, "uuid": "GPU-%s-%d" % (name, i), "model": model} for i in range(n)]
    return call("POST", "/v1/agent/register", {"name": name, "gpus": gpus, "labels": labels or {},
                                               "cpu_milli": 224000, "mem_mib": 2097152,
                                               "protocol": 1})

st, nodes = call("GET", "/v1/nodes", token="ops-t")
expect("nodes from the file", len(nodes["items"]), 32)
n0 = nodes["items"][0]
expect("unregistered node", (n0["state"], n0["reason"], n0["pool"], n0["gpus"]),
       ("down", "no agent has registered", "dc1", 8))
name = n0["name"]

st, b = register(name, 4)
expect("GPU count differs from the file", st, 409)
if "8 x H100-SXM-80GB" not in b["error"]["message"]:
    fail("409 message: " + b["error"]["message"])
st, b = register(name, 8)
expect("register a file node", (st, b["pool"]), (200, "dc1"))
st, n = call("GET", "/v1/nodes/" + name, token="ops-t")
expect("file node up", (n["state"], n["path"]), ("up", ["h100-256", "dc1", "leaf1", name]))

st, b = register("lab-box-1", 2, model="NVIDIA A100-SXM4-80GB", labels={"rack": "r7", "owner": "lab"})
expect("unknown node joins", (st, b["pool"]), (200, "default"))
st, n = call("GET", "/v1/nodes/lab-box-1", token="ops-t")
expect("default pool and leaf, labels", (n["pool"], n["path"], n["labels"], n["model"], n["gpus"]),
       ("default", ["h100-256", "default", "default", "lab-box-1"], {"rack": "r7", "owner": "lab"},
        "A100-SXM4-80GB", 2))

pod = b"""apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers:
  - name: main
    image: busybox
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 8}}
"""
st, j = call("POST", "/v1/jobs", pod, token="ops-t", ctype="application/yaml")
expect("submit", st, 201)
for _ in range(100):
    st, j = call("GET", "/v1/jobs/%d" % j["id"], token="ops-t")
    if j["state"] != "pending":
        break
    time.sleep(0.1)
expect("placed on the one registered 8-GPU node", (j["state"], j["nodelist"]), ("scheduled", name))

# The protocol's types (include/drover/proto.h): a version more than one apart is
# refused naming both, a missing required key or a wrong type names its path, an
# unknown key is ignored (and logged once).
st, b = call("POST", "/v1/agent/register", {"name": "old-box", "protocol": 4})
expect("protocol 4", (st, b["error"]["message"]),
       (409, "node old-box: agent speaks protocol 4; this controller speaks 2 (at most one apart)"))
st, b = call("POST", "/v1/agent/register", {"name": "old-box"})
expect("no protocol", (st, b["error"]["message"]), (400, "protocol: missing (expected an integer)"))
st, b = call("POST", "/v1/agent/register", {"name": "old-box", "protocol": 1,
                                            "gpus": [{"index": "0", "model": "H100"}]})
expect("wrong type", (st, b["error"]["message"]),
       (400, "gpus[0].index: expected an integer, found a string"))
a100 = [{"index": i, "model": "NVIDIA A100-SXM4-80GB"} for i in range(2)]
st, b = call("POST", "/v1/agent/register", {"name": "lab-box-1", "protocol": 2, "colour": "red",
                                            "gpus": a100, "labels": {"rack": "r7", "owner": "lab"}})
expect("protocol 2 with an unknown key", st, 200)
st, b = call("POST", "/v1/agent/sync", {"node": "lab-box-1", "session": b["session"],
                                        "version": "x"})
expect("sync: wrong type", (st, b["error"]["message"]),
       (400, "version: expected an integer, found a string"))

# GPU health: an unhealthy GPU drains the node (it keeps its job); an admin resumes it.
st, b = register("lab-box-2", 2, model="NVIDIA A100-SXM4-80GB")
sess = b["session"]
st, hb = sync("lab-box-2", sess, gpus=[{"index": 0, "healthy": True},
                                      {"index": 1, "healthy": False, "xid": 79}])
expect("heartbeat", st, 200)
st, n = call("GET", "/v1/nodes/lab-box-2", token="ops-t")
expect("drained by health", (n["state"], n["reason"]), ("draining", "GPU 1 unhealthy (xid 79, 0 uncorrectable ECC)"))
st, _ = call("POST", "/v1/nodes/lab-box-2/resume", token="ops-t")
st, n = call("GET", "/v1/nodes/lab-box-2", token="ops-t")
expect("resumed", n["state"], "up")
# ... and each health change is an event on /v1/watch, even one that leaves the node's state alone
st, hb = sync("lab-box-2", sess, gpus=[{"index": 0, "healthy": True}, {"index": 1, "healthy": True}])
expect("heartbeat", st, 200)
for _ in range(50):
    st, w = call("GET", "/v1/watch?since=0&timeout=1", token="alice-t")
    gh = [(e["node"], e["from"], e["to"], e["reason"]) for e in w["items"] if e["type"] == "gpu_health"]
    if len(gh) >= 2:
        break
    time.sleep(0.1)
expect("GPU health events", gh,
       [("lab-box-2", "unknown", "unhealthy", "GPU 1 unhealthy (xid 79, 0 uncorrectable ECC)"),
        ("lab-box-2", "unhealthy", "healthy", "GPU 1 healthy again (xid 0, 0 uncorrectable ECC)")])

# Prometheus service discovery: a bare http_sd array of the agents' /metrics
# (metrics_url when served apart, none with no_metrics), https when the agent
# serves TLS, the pool as a label; any user's token opens it
def reg_sd(name, **kw):
    body = {"name": name, "protocol": 1, "gpus": [{"index": 0, "model": "NVIDIA A100-SXM4-80GB"}]}
    body.update(kw)
    st, b = call("POST", "/v1/agent/register", body)
    expect("register " + name, st, 200)
reg_sd("sd-tls", agent_url="https://10.9.8.7:9400")
reg_sd("sd-apart", agent_url="http://10.9.8.8:9400", metrics_url="http://10.9.8.8:9401")
reg_sd("sd-none", agent_url="http://10.9.8.9:9400", no_metrics=True)
st, t = call("GET", "/v1/prometheus/targets", token="alice-t")
expect("targets status", st, 200)
if not isinstance(t, list):
    fail("targets: not a bare array: %r" % t)
sd = {x["labels"]["__meta_drover_node"]: (x["targets"], x["labels"]["__scheme__"], x["labels"].get("pool"))
      for x in t}
expect("https target", sd.get("sd-tls"), (["10.9.8.7:9400"], "https", "default"))
expect("metrics apart", sd.get("sd-apart"), (["10.9.8.8:9401"], "http", "default"))
expect("no metrics, no target", "sd-none" in sd, False)
st, _ = call("GET", "/v1/prometheus/targets")
expect("targets with the agents' token, not a user's", st, 401)

# GPUs of down and draining nodes are never free: total = allocated + free + unavailable
st, _ = call("POST", "/v1/nodes/lab-box-1/drain", token="ops-t")
st, c = call("GET", "/v1/cluster", token="ops-t")
expect("cluster GPUs", c["gpus"], {"total": 263, "allocated": 8, "free": 5, "unavailable": 250})
dc1 = [p for p in c["pools"] if p["name"] == "dc1"][0]
expect("pool dc1 GPUs", (dc1["total"], dc1["allocated"], dc1["free"], dc1["unavailable"]),
       (256, 8, 0, 248))
st, n = call("GET", "/v1/nodes/lab-box-1", token="ops-t")
expect("drained node", (n["gpus_allocated"], n["gpus_free"], n["gpus_unavailable"]), (0, 0, 2))

text = urllib.request.urlopen(urllib.request.Request(
    URL + "/metrics", headers={"Authorization": "Bearer ops-t"})).read().decode()
for line in ('drover_gpus{pool="dc1",model="H100-SXM-80GB",status="total"} 256',
             'drover_gpus{pool="default",model="A100-SXM4-80GB",status="total"} 7',
             'drover_nodes{state="up"} 5', 'drover_nodes{state="down"} 31',
             'drover_gpus{pool="dc1",model="H100-SXM-80GB",status="unavailable"} 248',
             'drover_gpus{pool="dc1",model="H100-SXM-80GB",status="free"} 0',
             'drover_gpus{pool="default",model="A100-SXM4-80GB",status="free"} 5',
             'drover_gpus{pool="default",model="A100-SXM4-80GB",status="unavailable"} 2'):
    if line not in text.splitlines():
        fail("metrics lack: " + line)
PY
# drover nodes: the sinfo summary counts A/F/U/T
"$DROVER" nodes >"$TEST_TMP/nodes.txt" || fail "drover nodes"
grep -q 'GPUS(A/F/U/T)' "$TEST_TMP/nodes.txt" || fail "no GPUS(A/F/U/T) column: $(cat "$TEST_TMP/nodes.txt")"
grep -Eq '^dc1 +down +31 +0/0/248/248 ' "$TEST_TMP/nodes.txt" || fail "down nodes not unavailable: $(cat "$TEST_TMP/nodes.txt")"
grep -Eq '^default +draining +1 +0/0/2/2 ' "$TEST_TMP/nodes.txt" || fail "draining node not unavailable: $(cat "$TEST_TMP/nodes.txt")"
"$DROVER" top -n 1 >"$TEST_TMP/top.txt" 2>&1 || fail "drover top -n 1: $(cat "$TEST_TMP/top.txt")"
grep -q '8/263 allocated, 5 free, 250 unavailable' "$TEST_TMP/top.txt" || fail "drover top: $(head -3 "$TEST_TMP/top.txt")"
echo "ok: cluster file nodes, default pool, 409 on a GPU mismatch, placement, GPUs of down and draining nodes unavailable"
