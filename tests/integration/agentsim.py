"""
agentsim.py: protocol-level agents for integration tests. Tests that check
the controller's side of the agent protocol (docs/api.md) play the agents
themselves with these calls, so they control every sync. heartbeat(),
assignments() and report() are each one sync exchange (POST /v1/agent/sync)
carrying only that part.
The server's URL comes from the environment (URL); tokens are the tests'
usual agents-t (cluster) and ops-t (admin).
"""
import json, os, sys, time, urllib.request, urllib.error

URL = os.environ["URL"]

def call(method, path, body=None, token="agents-t", ctype="application/json"):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = urllib.request.Request(URL + path, data=data, method=method,
                               headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
    try:
        with urllib.request.urlopen(r, timeout=30) as f:
            body = f.read()
            if "json" not in f.headers.get("Content-Type", ""):
                return f.status, None   # /metrics, logs: the test reads them otherwise
            return f.status, json.loads(body or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")

def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def expect(what, got, want):
    if got != want:
        fail("%s: got %r, want %r" % (what, got, want))

def register(name, running=()):
    gpus = [{"index": i, "uuid": "GPU-%s-%d" % (name, i), "model": "NVIDIA H100 80GB HBM3",
             "memory_mib": 81559} for i in range(8)]
    st, b = call("POST", "/v1/agent/register",
                 {"name": name, "address": "10.0.0.%d" % (ord(name[-1]) - ord("a") + 1),
                  "gpus": gpus, "cpu_milli": 64000, "mem_mib": 512000, "labels": {"zone": name},
                  "backend": "fake", "running": list(running), "protocol": 1})
    expect("register " + name, st, 200)
    return b["session"]

def sync(name, session, version=0, wait=0, tasks=(), reports=(), gpus=()):
    """One sync; the reply has version, heartbeat_interval_s, stale, and tasks
    when version is not the node's."""
    return call("POST", "/v1/agent/sync", {"node": name, "session": session, "version": version,
                                           "wait_s": wait, "tasks": list(tasks),
                                           "reports": list(reports), "gpus": list(gpus)})

def heartbeat(name, session, tasks=()):
    return sync(name, session, tasks=tasks, gpus=[{"index": 0, "healthy": True}])

def assignments(name, session, version=0, wait=0):
    return sync(name, session, version, wait)

def tasks_of(name, session, secs=10):
    """The node's assignments once they list a task (starts reach agents once on disk)."""
    end = time.time() + secs
    while time.time() < end:
        st, a = assignments(name, session, 0, 0)
        if st == 200 and a["tasks"]:
            return st, a
        time.sleep(0.05)
    fail("no task assigned to " + name)

def report(name, session, reps):
    return sync(name, session, reports=reps)

def job(jid):
    st, b = call("GET", "/v1/jobs/%d" % jid, token="ops-t")
    expect("get job", st, 200)
    return b

def wait_until(what, fn, secs, tick=None):
    end = time.time() + secs
    while time.time() < end:
        if tick:
            tick()
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    fail("timed out waiting for " + what)
