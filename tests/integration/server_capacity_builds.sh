# server_capacity_builds.sh: the tables behind a submit's "can never run"
# check are built again only when the cluster changed. Submits on an
# unchanged cluster build nothing (drover_capacity_builds_total stays), a
# node that registers makes the next submit build once, and the submits
# after that build nothing. (3e8015d built them on every submit after the
# first change; this test fails on it.)
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 5"
start_server --cluster "$ROOT/examples/clusters/h100-256.yaml"

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import os, re, sys, urllib.request
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import URL, call, fail, expect

POD = b"""apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: main
    image: busybox
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}
"""

def builds():
    r = urllib.request.Request(URL + "/metrics", headers={"Authorization": "Bearer ops-t"})
    text = urllib.request.urlopen(r, timeout=10).read().decode()
    m = re.search(r"^drover_capacity_builds_total (\S+)$", text, re.M)
    if not m:
        fail("no drover_capacity_builds_total on /metrics")
    return float(m.group(1))

def submit(n):
    for _ in range(n):
        st, j = call("POST", "/v1/jobs", POD, token="ops-t", ctype="application/yaml")
        expect("submit", st, 201)

submit(1)
b0 = builds()
expect("builds after the first submit", b0 >= 1, True)
submit(5)
expect("builds after 5 submits on the same cluster", builds(), b0)

st, nodes = call("GET", "/v1/nodes", token="ops-t")
name = nodes["items"][0]["name"]
gpus = [{"index": i, "uuid": "GPU-%s-%d" % (name, i), "model": "NVIDIA H100 80GB HBM3"}
        for i in range(8)]
st, b = call("POST", "/v1/agent/register", {"name": name, "gpus": gpus, "cpu_milli": 224000,
                                            "mem_mib": 2097152, "protocol": 2})
expect("register", st, 200)
submit(1)
b1 = builds()
expect("one build after the node came up", b1, b0 + 1)
submit(5)
expect("builds after 5 more submits", builds(), b1)
print("ok: %d builds for 12 submits and one registration" % b1)
PY
echo "ok: the capacity is built again only when the cluster changed"
