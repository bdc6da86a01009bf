# kube_conventions.sh: the API conventions of drover's Kubernetes face,
# over https with the admin token (no kubectl needed): Status objects for
# 401/404/405/422, discovery in the legacy and aggregated (v2, v2beta1)
# forms, Tables, resourceVersion monotonic, list paging with
# limit/continue only when limit is sent, a watch resuming from a
# resourceVersion with bookmarks, and 410 Expired for a version older than
# the event log the server holds (after a restart); PriorityClasses from
# the tenants file, read only.
. "$ROOT/tests/integration/lib.sh"

start_up --tls
SERVER_URL="https://127.0.0.1:$SERVER_PORT"
CA="$TEST_TMP/state/tls/ca.pem"
TOKEN=$(sed -n 's/^token: //p' "$XDG_CONFIG_HOME/drover/config")
[ -n "$TOKEN" ] || fail "no token in the client config"
export CA TOKEN SERVER_URL

check() {
	python3 - "$1" <<'PY' || fail "kube conventions, step $1"
import json, os, ssl, sys, time, urllib.request, urllib.error
step = sys.argv[1]
ctx = ssl.create_default_context(cafile=os.environ["CA"])
base = os.environ["SERVER_URL"]
def call(method, path, body=None, token=None, accept="application/json", ctype="application/json", timeout=30):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + (token or os.environ["TOKEN"]))
    req.add_header("Accept", accept)
    if body is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
def js(b): return json.loads(b)
def want(cond, what):
    if not cond:
        print("FAIL:", what, file=sys.stderr); sys.exit(1)
def pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"set": "p"}},
            "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "30"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}

if step == "status":
    st, h, b = call("GET", "/api/v1/namespaces/default/pods", token="wrong")
    o = js(b); want(st == 401 and o["kind"] == "Status" and o["reason"] == "Unauthorized" and o["code"] == 401, "401: %s" % b)
    st, h, b = call("GET", "/api/v1/services")
    o = js(b); want(st == 404 and o["kind"] == "Status" and o["reason"] == "NotFound", "404: %s" % b)
    st, h, b = call("DELETE", "/api/v1/namespaces/default/pods")
    o = js(b); want(st == 405 and o["reason"] == "MethodNotAllowed", "405: %s" % b)
    bad = pod("no-image"); del bad["spec"]["containers"][0]["image"]
    st, h, b = call("POST", "/api/v1/namespaces/default/pods", bad)
    o = js(b); want(st == 422 and o["reason"] == "Invalid" and o["details"]["causes"][0]["field"].startswith("spec.containers[0]"), "422: %s" % b)
    st, h, b = call("GET", "/version", token="wrong")
    want(st == 200 and js(b)["minor"] == "32" and js(b)["gitVersion"].startswith("v1.32.0+drover-"), "/version: %s" % b)
elif step == "discovery":
    v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    st, h, b = call("GET", "/apis", accept=v2)
    want(st == 200 and "v=v2;as=APIGroupDiscoveryList" in h["Content-Type"], "aggregated v2 content type: %s" % h["Content-Type"])
    o = js(b); want(o["apiVersion"] == "apidiscovery.k8s.io/v2" and any(g["metadata"]["name"] == "batch" for g in o["items"]), "v2 body: %s" % b)
    st, h, b = call("GET", "/api", accept="application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    o = js(b); want(o["apiVersion"] == "apidiscovery.k8s.io/v2beta1" and "pods" in [r["resource"] for r in o["items"][0]["versions"][0]["resources"]], "v2beta1: %s" % b)
    st, h, b = call("GET", "/api")
    want(js(b)["kind"] == "APIVersions", "legacy /api: %s" % b)
    st, h, b = call("GET", "/apis/batch/v1")
    want([r["name"] for r in js(b)["resources"]] == ["jobs", "jobs/status"], "legacy /apis/batch/v1: %s" % b)
    st, h, b = call("GET", "/api/v1/nodes", accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    o = js(b); want(o["kind"] == "Table" and [c["name"] for c in o["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"], "node table: %s" % b)
elif step == "versions":
    st, h, b = call("GET", "/api/v1/namespaces/default/pods")
    rv0 = int(js(b)["metadata"]["resourceVersion"])
    open(os.environ["TEST_TMP"] + "/rv0", "w").write(str(rv0))
    for n in ("pa", "pb", "pc"):
        st, h, b = call("POST", "/api/v1/namespaces/default/pods", pod(n))
        want(st == 201 and js(b)["metadata"]["name"] == n, "create %s: %s %s" % (n, st, b))
    time.sleep(1)
    st, h, b = call("GET", "/api/v1/namespaces/default/pods")
    o = js(b); rv1 = int(o["metadata"]["resourceVersion"])
    want(rv1 > rv0, "list resourceVersion did not move: %d -> %d" % (rv0, rv1))
    want(all(int(i["metadata"]["resourceVersion"]) <= rv1 for i in o["items"]), "an item newer than its list")
    want("continue" not in o["metadata"] and len(o["items"]) == 3, "a list without limit is whole: %s" % o["metadata"])
    st, h, b = call("GET", "/api/v1/namespaces/default/pods?limit=2&labelSelector=set%3Dp")
    o = js(b); want(len(o["items"]) == 2 and o["metadata"].get("continue"), "first page: %s" % o["metadata"])
    st, h, b = call("GET", "/api/v1/namespaces/default/pods?limit=2&labelSelector=set%3Dp&continue=" + urllib.parse.quote(o["metadata"]["continue"]))
    o2 = js(b); want([i["metadata"]["name"] for i in o2["items"]] == ["pc"] and "continue" not in o2["metadata"], "second page: %s" % b)
    # a watch from rv0 resumes: the three pods come, then a bookmark
    st, h, b = call("GET", "/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=7&resourceVersion=%d" % rv0, timeout=20)
    evs = [json.loads(l) for l in b.decode().splitlines() if l.strip()]
    names = {e["object"]["metadata"].get("name") for e in evs if e["type"] in ("ADDED", "MODIFIED")}
    want({"pa", "pb", "pc"} <= names, "resumed watch: %s" % [e["type"] for e in evs])
    want(any(e["type"] == "BOOKMARK" for e in evs), "no bookmark in 7 s: %s" % [e["type"] for e in evs])
    # a live watch sees a new pod ADDED and its deletion DELETED
    import threading
    out = {}
    def w():
        out["b"] = call("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=6&fieldSelector=metadata.name%%3Dpd&resourceVersion=%d" % rv1, timeout=20)[2]
    t = threading.Thread(target=w); t.start(); time.sleep(1)
    st, h, b = call("POST", "/api/v1/namespaces/default/pods", pod("pd")); want(st == 201, "create pd: %s" % b)
    time.sleep(1.5)
    st, h, b = call("DELETE", "/api/v1/namespaces/default/pods/pd", {"gracePeriodSeconds": 0}); want(st == 200, "delete pd: %s" % b)
    t.join()
    types = [json.loads(l)["type"] for l in out["b"].decode().splitlines() if l.strip()]
    want(types[:1] == ["ADDED"] and "DELETED" in types, "live watch: %s" % types)
    # a watch from a version read before a deletion that has ended since
    # (what kubectl delete --wait does) is told DELETED
    st, h, b = call("POST", "/api/v1/namespaces/default/pods", pod("pe")); want(st == 201, "create pe: %s" % b)
    rv2 = int(js(b)["metadata"]["resourceVersion"])
    st, h, b = call("DELETE", "/api/v1/namespaces/default/pods/pe", {"gracePeriodSeconds": 0}); want(st == 200, "delete pe: %s" % b)
    for _ in range(100):
        if call("GET", "/api/v1/namespaces/default/pods/pe")[0] == 404:
            break
        time.sleep(0.2)
    b = call("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=2&fieldSelector=metadata.name%%3Dpe&resourceVersion=%d" % rv2, timeout=20)[2]
    evs = [json.loads(l) for l in b.decode().splitlines() if l.strip()]
    want([e["type"] for e in evs] == ["DELETED"] and evs[0]["object"]["metadata"]["name"] == "pe",
         "watch from before a finished deletion: %s" % [e["type"] for e in evs])
    # kubectl delete --wait lists the terminating pod, then watches from
    # the list's version; its tasks ending in between (completing ends)
    # is a change the watch is told: DELETED
    p = pod("pt"); p["spec"]["containers"][0]["command"] = ["sh", "-c", "trap 'sleep 3; exit 0' TERM; while :; do sleep 0.1; done"]
    st, h, b = call("POST", "/api/v1/namespaces/default/pods", p); want(st == 201, "create pt: %s" % b)
    for _ in range(150):
        if js(call("GET", "/api/v1/namespaces/default/pods/pt")[2]).get("status", {}).get("phase") == "Running":
            break
        time.sleep(0.2)
    st, h, b = call("DELETE", "/api/v1/namespaces/default/pods/pt", {"gracePeriodSeconds": 20}); want(st == 200, "delete pt: %s" % b)
    st, h, b = call("GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dpt")
    o = js(b); rv4 = int(o["metadata"]["resourceVersion"])
    want(len(o["items"]) == 1 and o["items"][0]["metadata"].get("deletionTimestamp"), "pt terminating after delete: %s" % b)
    for _ in range(150):
        if call("GET", "/api/v1/namespaces/default/pods/pt")[0] == 404:
            break
        time.sleep(0.2)
    b = call("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=2&fieldSelector=metadata.name%%3Dpt&resourceVersion=%d" % rv4, timeout=20)[2]
    evs = [json.loads(l) for l in b.decode().splitlines() if l.strip()]
    want([e["type"] for e in evs] == ["DELETED"], "watch from a terminating pod's list, its tasks ended since: %s" % [e["type"] for e in evs])
    # a watch from a list's version tells objects created after it as
    # ADDED first (pg, and ph, gone since: ADDED then DELETED); one created
    # before (pf) as MODIFIED, if at all
    st, h, b = call("POST", "/api/v1/namespaces/default/pods", pod("pf")); want(st == 201, "create pf: %s" % b)
    st, h, b = call("GET", "/api/v1/namespaces/default/pods")
    rv3 = int(js(b)["metadata"]["resourceVersion"])
    for n in ("pg", "ph"):
        st, h, b = call("POST", "/api/v1/namespaces/default/pods", pod(n)); want(st == 201, "create %s: %s" % (n, b))
    st, h, b = call("DELETE", "/api/v1/namespaces/default/pods/ph", {"gracePeriodSeconds": 0}); want(st == 200, "delete ph: %s" % b)
    for _ in range(100):
        if call("GET", "/api/v1/namespaces/default/pods/ph")[0] == 404:
            break
        time.sleep(0.2)
    b = call("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=2&resourceVersion=%d" % rv3, timeout=20)[2]
    evs = [json.loads(l) for l in b.decode().splitlines() if l.strip()]
    of = lambda n: [e["type"] for e in evs if e["type"] != "BOOKMARK" and e["object"]["metadata"]["name"] == n]
    want(of("pg")[:1] == ["ADDED"], "watch from before a creation, pg: %s" % of("pg"))
    want(of("ph")[:1] == ["ADDED"] and of("ph")[-1:] == ["DELETED"], "watch from before a creation, ph: %s" % of("ph"))
    want(of("pf")[:1] in ([], ["MODIFIED"]), "watch from after a creation, pf: %s" % of("pf"))
elif step == "classes":
    st, h, b = call("GET", "/apis/scheduling.k8s.io/v1/priorityclasses")
    o = js(b); want(st == 200 and {(i["metadata"]["name"], i["value"], i["preemptionPolicy"]) for i in o["items"]} ==
                    {("production", 1000, "PreemptLowerPriority"), ("best-effort", -10, "Never")}, "priority classes: %s" % b)
    st, h, b = call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}, "value": 1})
    want(st == 405 and js(b)["reason"] == "MethodNotAllowed", "create a class: %s" % b)
elif step == "gone":
    rv0 = int(open(os.environ["TEST_TMP"] + "/rv0").read())
    st, h, b = call("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=%d" % rv0)
    o = js(b); want(st == 410 and o["reason"] == "Expired" and o["code"] == 410, "watch from a version before the restart: %s %s" % (st, b))
PY
}

check status
check discovery
check versions
stop_up
printf 'priorityClasses:\n  production: {value: 1000}\n  best-effort: {value: -10, preemptionPolicy: Never}\n' >"$TEST_TMP/state/tenants.yaml"
echo 'tenants: tenants.yaml' >>"$TEST_TMP/state/config.yaml"
start_up --tls
SERVER_URL="https://127.0.0.1:$SERVER_PORT"
check gone
check classes
