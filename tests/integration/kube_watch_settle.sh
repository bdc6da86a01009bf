# kube_watch_settle.sh: a Kubernetes watch from a version is told what
# changed since, even a change the controller shows before it is on disk.
# With every store commit slowed (DROVER_STORE_SLOW=commit:700), a pod is
# deleted the way kubectl delete --wait does it: DELETE, a list while it
# is terminating (its version), then, once its tasks have ended and GET
# says 404 (shown from memory, its event not yet written), a watch from
# the list's version: it must say DELETED. The watch took the pod as
# already gone and the event, written later, as nothing new: kubectl
# waited out its timeout.
. "$ROOT/tests/integration/lib.sh"

DROVER_STORE_SLOW=commit:700 start_up --tls
grep -q 'slow store armed: commit' "$TEST_TMP/up.out" || fail "the slow store is not armed: $(cat "$TEST_TMP/up.out")"
SERVER_URL="https://127.0.0.1:$SERVER_PORT"
CA="$TEST_TMP/state/tls/ca.pem"
TOKEN=$(sed -n 's/^token: //p' "$XDG_CONFIG_HOME/drover/config")
[ -n "$TOKEN" ] || fail "no token in the client config"
export CA TOKEN SERVER_URL

python3 - <<'PY' || fail "the watch from a terminating pod's list"
import json, os, ssl, sys, time, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile=os.environ["CA"])
base = os.environ["SERVER_URL"]
def call(method, path, body=None, timeout=30):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + os.environ["TOKEN"])
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
def want(cond, what):
    if not cond:
        print("FAIL:", what, file=sys.stderr); sys.exit(1)
pods = "/api/v1/namespaces/default/pods"
for n in range(2):
    name = "w%d" % n
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox",
                    "command": ["sh", "-c", "trap 'sleep 2; exit 0' TERM; while :; do sleep 0.1; done"]}]}}
    st, b = call("POST", pods, pod); want(st == 201, "create %s: %s" % (name, b))
    for _ in range(300):
        st, b = call("GET", pods + "/" + name)
        if json.loads(b).get("status", {}).get("phase") == "Running":
            break
        time.sleep(0.1)
    want(json.loads(b)["status"]["phase"] == "Running", "%s never ran: %s" % (name, b))
    st, b = call("DELETE", pods + "/" + name, {"gracePeriodSeconds": 30}); want(st == 200, "delete %s: %s" % (name, b))
    st, b = call("GET", pods + "?fieldSelector=metadata.name%3D" + name)
    o = json.loads(b); rv = int(o["metadata"]["resourceVersion"])
    want(len(o["items"]) == 1 and o["items"][0]["metadata"].get("deletionTimestamp"), "%s terminating: %s" % (name, b))
    for _ in range(600):
        if call("GET", pods + "/" + name)[0] == 404:
            break
        time.sleep(0.02)
    # the first at once (its end not on disk yet), the second once it is
    if n == 1:
        time.sleep(2)
    st, b = call("GET", pods + "?watch=true&timeoutSeconds=4&fieldSelector=metadata.name%%3D%s&resourceVersion=%d" % (name, rv), timeout=30)
    evs = [json.loads(l) for l in b.decode().splitlines() if l.strip()]
    types = [e["type"] for e in evs]
    print("%s: watch from %d: %s" % (name, rv, types))
    want(types == ["DELETED"] and evs[0]["object"]["metadata"]["name"] == name, "%s: watch from the list's version %d: %s" % (name, rv, types))
PY
