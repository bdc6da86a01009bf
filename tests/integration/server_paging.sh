# server_paging.sh: lists that page (docs/api.md, "GET /v1/queue" and
# "GET /v1/jobs"). With 2,500 unfinished jobs (16 scheduled on two nodes
# this script plays, the rest pending at seven priorities): GET /v1/queue
# pages with limit and next_cursor, says "total", lists every job once in
# the queue's order with positions 1..N; a job submitted at the head and a
# job cancelled further on between two pages neither repeat nor hide what
# lies after the cursor; a bad cursor or limit is 400 naming it; the sum
# of drover_queue_depth equals the total of state=pending; `drover queue`
# and `drover get jobs` follow the pages to the end (before, `drover get
# jobs` showed the first 1,000). And a job name over 1,024 bytes is 400
# naming the name (400 such jobs made one GET /v1/queue 80 MB in 5 s).
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 5"
start_server

URL="$SERVER_URL" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import json, os, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "integration"))
from agentsim import *

sess = {n: register(n) for n in ("node-a", "node-b")}
job = json.load(open(os.path.join(os.environ["ROOT"], "examples/jobs/training-job.json")))
job["groups"][0]["gpus"] = 1
job["groups"][0]["command"] = ["true"]   # a host task: no container runtime here
items = []
for i in range(2500):
    j = dict(job, name="p%d" % i, priority=i % 7)
    items.append(j)
st, b = call("POST", "/v1/jobs/batch", {"items": items}, token="ops-t")
expect("batch of 2,500", st, 201)

def page(q):
    st, b = call("GET", "/v1/queue" + q, token="ops-t")
    expect("GET /v1/queue" + q, st, 200)
    return b

wait_until("16 jobs scheduled", lambda: page("?state=scheduled&limit=1")["total"] == 16, 20)

# the whole queue in pages of 1,000; between the first two pages a job
# joins at the head and one from the third page is cancelled
seen, cursors, totals = [], [], []
q = "?limit=1000"
while True:
    b = page(q)
    totals.append(b["total"])
    seen += b["items"]
    if len(cursors) == 0:
        expect("first page", len(b["items"]), 1000)
        first_total = b["total"]
        st, nb = call("POST", "/v1/jobs", dict(job, name="head", priority=99), token="ops-t")
        expect("submit at the head", st, 201)
    if "next_cursor" not in b:
        break
    cursors.append(b["next_cursor"])
    q = "?limit=1000&cursor=" + b["next_cursor"]
    if len(cursors) == 1:
        # a pending job of the third page, not reached yet
        later2 = page("?limit=1&cursor=" +
                      page("?limit=1200&cursor=" + cursors[0])["next_cursor"])["items"][0]["id"]
        st, _ = call("POST", "/v1/jobs/%d/cancel" % later2, token="ops-t")
        expect("cancel a job past the cursor", st, 200)
ids = [it["id"] for it in seen]
expect("no job twice", len(ids), len(set(ids)))
expect("first total", first_total, 2500)
expect("pages", len(cursors), 2)
expect("jobs listed: all but the cancelled one, not the new head", len(ids), 2499)
if later2 in ids:
    fail("the job cancelled past the cursor was listed")
if any(it["name"] == "head" for it in seen):
    fail("the job that joined before the cursor showed on a later page")
expect("total after the changes", totals[-1], 2500)
pend = [it for it in seen if it["state"] == "pending"]
others = [it for it in seen if it["state"] != "pending"]
expect("pending first", seen[:len(pend)], pend)
expect("the others", len(others), 16)
expect("others by id", [it["id"] for it in others], sorted(it["id"] for it in others))
if any(it["position"] is not None for it in others):
    fail("a job not pending has a position")
prios = [it["priority"] for it in pend]
expect("pending in priority order", prios, sorted(prios, reverse=True))
# positions count from the head: the second and third pages start after the
# head job joined, so they are one further on
pos = [it["position"] for it in pend]
expect("positions of page 1", pos[:1000], list(range(1, 1001)))
expect("positions after it", pos[1000:1001], [1002])

# the queue now, in one page: the head job first
b = page("?limit=10000")
expect("one page of all", ("next_cursor" in b, b["total"], len(b["items"])), (False, 2500, 2500))
expect("head first", (b["items"][0]["name"], b["items"][0]["position"]), ("head", 1))

for q, word in (("?cursor=bogus", "cursor=bogus"), ("?cursor=p.1.2", "cursor=p.1.2"),
                ("?limit=0", "limit"), ("?limit=10001", "limit")):
    st, e = call("GET", "/v1/queue" + q, token="ops-t")
    expect("GET /v1/queue" + q, st, 400)
    if word not in e["error"]["message"]:
        fail("the 400 for %s does not name %s: %s" % (q, word, e["error"]["message"]))

# drover_queue_depth sums to the total of state=pending
import urllib.request
m = urllib.request.urlopen(URL + "/metrics").read().decode()
depth = sum(float(l.split()[-1]) for l in m.splitlines() if l.startswith("drover_queue_depth{"))
expect("sum of drover_queue_depth", int(depth), page("?state=pending&limit=1")["total"])

# names: 1,024 bytes are taken, 1,025 are not (400 naming the name)
st, b = call("POST", "/v1/jobs", dict(job, name="n" * 1024), token="ops-t")
expect("a 1,024-byte name", st, 201)
for body, ctype in ((json.dumps(dict(job, name="n" * 200000)).encode(), "application/json"),
                    (("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n"
                      "  - {name: c, image: busybox, command: [\"true\"]}\n" % ("n" * 1025)).encode(),
                     "application/yaml")):
    st, e = call("POST", "/v1/jobs", body, token="ops-t", ctype=ctype)
    expect("a long name", st, 400)
    if "name: found a job name of" not in json.dumps(e) or "expected at most 1024" not in json.dumps(e):
        fail("the 400 does not name the name: %s" % json.dumps(e)[:300])
PY

# the client follows the pages to the end
"$DROVER" queue -o json >"$TEST_TMP/queue.json" || fail "drover queue -o json"
n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['items']))" "$TEST_TMP/queue.json")
expect_eq "jobs in drover queue -o json" "$n" 2501
n=$("$DROVER" queue | tail -n +2 | wc -l)
expect_eq "rows of drover queue" "$n" 2501
n=$("$DROVER" get jobs | tail -n +2 | wc -l)
expect_eq "rows of drover get jobs" "$n" 2502
