# server_idempotency.sh: the Idempotency-Key header of POST /v1/jobs,
# /v1/jobs/batch and /v1/apply (docs/api.md, "Idempotency keys"). A repeat
# with the same key and body gets the first answer byte for byte with
# Idempotent-Replayed: true and creates nothing; the same key with another
# body is 409; keys are per user; a key over 255 bytes is 400 naming the
# header; 20 concurrent requests with one key make one job; the key is
# written in the job's own transaction (a failing key write stores no job,
# and the key stays free); keys survive a SIGKILL and restart; past
# idempotency_ttl_s they are purged and the key makes a new job. And the
# client: `drover submit` whose first reply is lost (a proxy drops it)
# sends the same key again and the job exists once.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server

cat >"$TEST_TMP/h.py" <<'PY'
import json, os, sys, urllib.request, urllib.error
URL = os.environ["SERVER_URL"]
TOK = {"ops": "ops-t", "alice": "alice-t", "bob": "bob-t"}

def call(user, method, path, body=b"", ctype=None, key=None):
    h = {"Authorization": "Bearer " + TOK[user]}
    if ctype:
        h["Content-Type"] = ctype
    if key is not None:
        h["Idempotency-Key"] = key
    req = urllib.request.Request(URL + path, data=body if method == "POST" else None,
                                 headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()

def njobs(name=None):
    s, _, b = call("ops", "GET", "/v1/jobs?limit=10000" + ("&name=" + name if name else ""))
    assert s == 200, (s, b)
    return len(json.loads(b)["items"])

def check(what, cond, detail=""):
    if not cond:
        print("FAIL: %s %s" % (what, detail), file=sys.stderr)
        sys.exit(1)
PY

pod_yaml idem-a 1 "true" >"$TEST_TMP/a.yaml"
pod_yaml idem-b 2 "true" >"$TEST_TMP/b.yaml"

# One submit, its repeat, another body, another user, key sizes.
SERVER_URL=$SERVER_URL TEST_TMP=$TEST_TMP python3 - <<'PY' || fail "submit with a key"
import sys, os, json
sys.path.insert(0, os.environ["TEST_TMP"]); from h import *
a = open(os.environ["TEST_TMP"] + "/a.yaml", "rb").read()
b = open(os.environ["TEST_TMP"] + "/b.yaml", "rb").read()
s1, h1, b1 = call("alice", "POST", "/v1/jobs?filename=a.yaml", a, "application/yaml", "k-1")
check("first submit", s1 == 201 and "Idempotent-Replayed" not in h1, (s1, h1, b1))
s2, h2, b2 = call("alice", "POST", "/v1/jobs?filename=a.yaml", a, "application/yaml", "k-1")
check("repeat status", s2 == 201, (s2, b2))
check("repeat body byte for byte", b2 == b1, (b1, b2))
check("repeat header", h2.get("Idempotent-Replayed") == "true", h2)
check("repeat Location", h2.get("Location") == h1.get("Location"), (h1, h2))
check("one job", njobs("idem-a") == 1)
s3, _, b3 = call("alice", "POST", "/v1/jobs?filename=b.yaml", b, "application/yaml", "k-1")
check("same key, another body: 409", s3 == 409, (s3, b3))
msg = json.loads(b3)["error"]["message"]
check("409 names the header", "Idempotency-Key k-1" in msg, msg)
print("409:", msg)
check("nothing made", njobs("idem-b") == 0)
s4, h4, b4 = call("bob", "POST", "/v1/jobs?filename=a.yaml", a, "application/yaml", "k-1")
check("another user's k-1 is his own", s4 == 201 and "Idempotent-Replayed" not in h4 and
      json.loads(b4)["id"] != json.loads(b1)["id"], (s4, b4))
s5, _, b5 = call("alice", "POST", "/v1/jobs", a, "application/yaml", "x" * 256)
m5 = json.loads(b5)["error"]["message"]
check("256 bytes: 400 naming the header", s5 == 400 and "Idempotency-Key" in m5, (s5, m5))
print("400:", m5)
s6, _, _ = call("alice", "POST", "/v1/jobs", a, "application/yaml", "y" * 255)
check("255 bytes are taken", s6 == 201, s6)
s7, _, b7 = call("alice", "POST", "/v1/jobs", a, "application/yaml", "")
check("an empty key: 400", s7 == 400, (s7, b7))
check("jobs: k-1 (alice, bob), the 255-byte key", njobs("idem-a") == 3, njobs("idem-a"))
open(os.environ["TEST_TMP"] + "/k1.body", "wb").write(b1)
PY

# Batch and apply: the first answer again, nothing made twice.
SERVER_URL=$SERVER_URL TEST_TMP=$TEST_TMP python3 - <<'PY' || fail "batch and apply with a key"
import sys, os, json
sys.path.insert(0, os.environ["TEST_TMP"]); from h import *
job = {"apiVersion": "drover/v1", "kind": "Job", "name": "idem-batch",
       "groups": [{"name": "main", "count": 1, "gpus": 1, "command": ["true"]}]}
body = json.dumps({"items": [job] * 5}).encode()
s1, _, b1 = call("alice", "POST", "/v1/jobs/batch", body, "application/json", "b-1")
s2, h2, b2 = call("alice", "POST", "/v1/jobs/batch", body, "application/json", "b-1")
check("batch replay", s1 == 201 and s2 == 201 and b1 == b2 and
      h2.get("Idempotent-Replayed") == "true", (s1, s2, h2))
check("5 jobs, not 10", njobs("idem-batch") == 5, njobs("idem-batch"))
s3, _, _ = call("alice", "POST", "/v1/jobs", body, "application/json", "b-1")
check("the batch's key on another route: 409", s3 == 409, s3)
ap = json.dumps(dict(job, name="idem-apply")).encode()
s4, _, b4 = call("alice", "POST", "/v1/apply", ap, "application/json", "a-1")
s5, h5, b5 = call("alice", "POST", "/v1/apply", ap, "application/json", "a-1")
check("apply created, replayed as created", s4 == 201 and s5 == 201 and b4 == b5 and
      json.loads(b5)["action"] == "created" and h5.get("Idempotent-Replayed") == "true",
      (s4, s5, b5))
s6, h6, b6 = call("alice", "POST", "/v1/apply", ap, "application/json", "a-2")
check("a new key: unchanged", s6 == 200 and json.loads(b6)["action"] == "unchanged" and
      "Idempotent-Replayed" not in h6, (s6, b6))
check("one applied job", njobs("idem-apply") == 1)
PY

# 20 concurrent requests with one key: one job; every answer is that job
# (or 409 while the first is still being handled).
SERVER_URL=$SERVER_URL TEST_TMP=$TEST_TMP python3 - <<'PY' || fail "concurrent requests with one key"
import sys, os, json, threading
sys.path.insert(0, os.environ["TEST_TMP"]); from h import *
job = {"apiVersion": "drover/v1", "kind": "Job", "name": "idem-race",
       "groups": [{"name": "main", "count": 1, "gpus": 1, "command": ["true"]}]}
body = json.dumps(job).encode()
out = []
def go():
    out.append(call("alice", "POST", "/v1/jobs", body, "application/json", "race-1"))
ts = [threading.Thread(target=go) for _ in range(20)]
[t.start() for t in ts]
[t.join() for t in ts]
ids = {json.loads(b)["id"] for s, h, b in out if s == 201}
codes = sorted(s for s, h, b in out)
print("20 concurrent: statuses", codes, "ids", ids)
check("one job id in every 201", len(ids) == 1, ids)
check("only 201 or 409", set(codes) <= {201, 409}, codes)
check("one job made", njobs("idem-race") == 1, njobs("idem-race"))
PY

# The key is written in the job's transaction: a failing key write stores
# no job (503), and the key stays free for the retry.
stop_server
start_server DROVER_STORE_FAULT=put_idem:0
n_before=$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?limit=10000" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
code=$(curl -s -o "$TEST_TMP/f.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $ALICE_TOKEN" \
	-H 'Content-Type: application/yaml' -H 'Idempotency-Key: f-1' --data-binary @"$TEST_TMP/b.yaml" \
	"$SERVER_URL/v1/jobs")
expect_eq "a failing key write" "$code" 503
cat "$TEST_TMP/f.out"
n_after=$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?limit=10000" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
expect_eq "no job stored without its key" "$n_after" "$n_before"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ALICE_TOKEN" \
	-H 'Content-Type: application/yaml' --data-binary @"$TEST_TMP/b.yaml" "$SERVER_URL/v1/jobs")
expect_eq "a submit without a key still writes" "$code" 201

# SIGKILL and restart: the keys are on disk.
stop_server KILL
start_server
SERVER_URL=$SERVER_URL TEST_TMP=$TEST_TMP python3 - <<'PY' || fail "keys after SIGKILL"
import sys, os, json
sys.path.insert(0, os.environ["TEST_TMP"]); from h import *
a = open(os.environ["TEST_TMP"] + "/a.yaml", "rb").read()
b = open(os.environ["TEST_TMP"] + "/b.yaml", "rb").read()
first = open(os.environ["TEST_TMP"] + "/k1.body", "rb").read()
s, h, body = call("alice", "POST", "/v1/jobs?filename=a.yaml", a, "application/yaml", "k-1")
check("replayed after SIGKILL", s == 201 and body == first and
      h.get("Idempotent-Replayed") == "true", (s, h, body))
check("still 3 idem-a jobs", njobs("idem-a") == 3, njobs("idem-a"))
s, h, body = call("alice", "POST", "/v1/jobs", b, "application/yaml", "f-1")
check("the failed write's key is free", s == 201 and "Idempotent-Replayed" not in h, (s, body))
PY

# Past idempotency_ttl_s: purged (the log says so) and the key is new again.
stop_server
server_config "idempotency_ttl_s: 2"
start_server
wait_until 20 grep -q 'purged [0-9]* idempotency keys older than 2 s' "$TEST_TMP/server.log" ||
	fail "no purge of expired keys in the log"
grep 'idempotency keys' "$TEST_TMP/server.log" | tail -1
SERVER_URL=$SERVER_URL TEST_TMP=$TEST_TMP python3 - <<'PY' || fail "expired keys"
import sys, os, json
sys.path.insert(0, os.environ["TEST_TMP"]); from h import *
a = open(os.environ["TEST_TMP"] + "/a.yaml", "rb").read()
s, h, body = call("alice", "POST", "/v1/jobs?filename=a.yaml", a, "application/yaml", "k-1")
check("an expired key makes a new job", s == 201 and "Idempotent-Replayed" not in h, (s, h))
check("4 idem-a jobs", njobs("idem-a") == 4, njobs("idem-a"))
PY

# The client: the first reply is lost (the proxy closes the connection
# after forwarding the request); drover submit sends it again with the
# same key and the job exists once.
PROXY_PORT=$(free_port)
cat >"$TEST_TMP/proxy.py" <<'PY'
import socket, sys, threading
listen, target = int(sys.argv[1]), int(sys.argv[2])
seen = {"posts": 0}
def read_request(c):
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(65536)
        if not d:
            return None
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(rest) < n:
        rest += c.recv(65536)
    return head + b"\r\n\r\n" + rest
def serve(c):
    req = read_request(c)
    if req is None:
        c.close(); return
    s = socket.create_connection(("127.0.0.1", target))
    # one request a connection: the answer ends when the server closes
    req = req.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
    s.sendall(req)
    resp = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        resp += d
    s.close()
    if req.startswith(b"POST"):
        seen["posts"] += 1
        if seen["posts"] == 1:
            print("dropped the reply to the first POST", flush=True)
            c.close(); return
    c.sendall(resp)
    c.close()
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen)); ls.listen(16)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$TEST_TMP/proxy.py" "$PROXY_PORT" "$SERVER_PORT" >"$TEST_TMP/proxy.log" 2>&1 &
track $!
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$PROXY_PORT/healthz" || fail "the proxy did not start"
pod_yaml idem-client 1 "true" >"$TEST_TMP/c.yaml"
id=$(DROVER_SERVER="http://127.0.0.1:$PROXY_PORT" "$DROVER" submit --parsable "$TEST_TMP/c.yaml" 2>"$TEST_TMP/submit.err") ||
	{ cat "$TEST_TMP/submit.err"; fail "drover submit through the proxy"; }
cat "$TEST_TMP/submit.err"
grep -q 'dropped the reply' "$TEST_TMP/proxy.log" || fail "the proxy dropped nothing"
grep -q 'sending it again in 0.5 s (Idempotency-Key drover-' "$TEST_TMP/submit.err" ||
	fail "drover submit did not say it sends the request again"
n=$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?name=idem-client" |
	python3 -c 'import json,sys; print([j["id"] for j in json.load(sys.stdin)["items"]])')
expect_eq "one job from the retried submit" "$n" "[$id]"
echo "PASS"
