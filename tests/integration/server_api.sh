# server_api.sh: a real `drover server` on loopback, spoken to over HTTP as
# docs/api.md says: tokens and roles, the error shape, submit by
# Content-Type, batch, apply, cancel, the watch stream (long-poll and SSE),
# /metrics through promtool, a SIGKILL and restart with every job where it
# was, and an injected store failure that answers 503 and keeps nothing.
. "$ROOT/tests/integration/lib.sh"

server_config "allow_root_tasks: false" "sched_delay_ms: 5"
URL=$SERVER_URL

# req TOKEN METHOD PATH [CTYPE BODYFILE]: prints "STATUS BODY" (body one line)
req() {
	_t=$1 _m=$2 _p=$3
	shift 3
	if [ $# -ge 2 ]; then
		curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X "$_m" -H "Authorization: Bearer $_t" \
			-H "Content-Type: $1" --data-binary "@$2" "$URL$_p" >"$TEST_TMP/code"
	else
		curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X "$_m" -H "Authorization: Bearer $_t" \
			"$URL$_p" >"$TEST_TMP/code"
	fi
	CODE=$(cat "$TEST_TMP/code")
}

# js EXPR: evaluates EXPR over the last body (as b)
js() {
	python3 -c "import json,sys; b=json.load(open('$TEST_TMP/body')); v=($1); print(v)"
}

start_server

# --- auth and the error shape ---
req nobody GET /v1/jobs
expect_eq "bad token" "$CODE" 401
expect_eq "error code" "$(js 'b["error"]["code"]')" unauthorized
expect_eq "details list" "$(js 'type(b["error"]["details"]).__name__')" list
curl -sS -o /dev/null -w '%{http_code}' "$URL/v1/jobs" >"$TEST_TMP/code"
expect_eq "no token" "$(cat "$TEST_TMP/code")" 401
req alice-t GET /v1/whoami
expect_eq whoami "$(js 'b["user"], b["admin"]')" "('alice', False)"

# --- submit by Content-Type ---
req alice-t POST "/v1/jobs?filename=training-job.yaml" application/yaml "$ROOT/examples/jobs/training-job.yaml"
expect_eq "submit pod" "$CODE" 201
seed_id=$(js 'b["id"]')
expect_eq "seed fields" "$(js 'b["name"], b["user"], b["state"], b["gpus"], b["placement"]')" \
	"('training-job', 'alice', 'pending', 8, [])"
# no agent runs here: the pending job's task never started, so no logs
req alice-t GET "/v1/jobs/$seed_id/logs"
expect_eq "logs of a task that never started" "$CODE" 404
req alice-t POST /v1/jobs text/x-slurm "$ROOT/examples/jobs/training-job.sbatch"
expect_eq "submit slurm" "$CODE" 201
slurm_id=$(js 'b["id"]')
req alice-t POST /v1/jobs application/json "$ROOT/examples/jobs/training-job.json"
expect_eq "submit canonical" "$CODE" 201
req alice-t POST /v1/jobs application/x-frobnicate "$ROOT/examples/jobs/training-job.yaml"
expect_eq "415" "$CODE" 415
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: lots}}\n' >"$TEST_TMP/bad.yaml"
req alice-t POST "/v1/jobs?filename=bad.yaml" application/yaml "$TEST_TMP/bad.yaml"
expect_eq "bad manifest" "$CODE" 400
expect_eq "diagnostic names the file" "$(js 'b["error"]["details"][0].startswith("bad.yaml:")')" True

# --- root tasks refused without allow_root_tasks ---
python3 - "$ROOT/examples/jobs/training-job.json" >"$TEST_TMP/root.json" <<'PY'
import json,sys
j=json.load(open(sys.argv[1])); j["user"]="root"; print(json.dumps(j))
PY
req ops-t POST /v1/jobs application/json "$TEST_TMP/root.json"
expect_eq "root refused" "$CODE" 403

# --- users see their own jobs; admins everything ---
req bob-t GET "/v1/jobs/$seed_id"
expect_eq "bob cannot see alice's job" "$CODE" 404
req bob-t GET /v1/jobs
expect_eq "bob's list" "$(js 'len(b["items"])')" 0
req ops-t GET "/v1/jobs?user=alice&state=pending"
expect_eq "admin sees alice's" "$(js 'len(b["items"])')" 3
req alice-t POST /v1/nodes/x/drain
expect_eq "drain is admin-only" "$CODE" 403
req ops-t POST /v1/nodes/nosuch/drain
expect_eq "drain unknown node" "$CODE" 404
req alice-t GET "/v1/jobs?state=bogus"
expect_eq "bad filter" "$CODE" 400

# --- batch ---
python3 - "$ROOT/examples/jobs/training-job.json" >"$TEST_TMP/batch.json" <<'PY'
import json,sys
j=json.load(open(sys.argv[1]))
items=[]
for i in range(100):
    k=dict(j); k["name"]="b%d" % i; items.append(k)
print(json.dumps({"items": items}))
PY
req alice-t POST /v1/jobs/batch application/json "$TEST_TMP/batch.json"
expect_eq "batch" "$CODE" 201
expect_eq "batch items" "$(js 'len(b["items"]), b["items"][0]["state"]')" "(100, 'pending')"
b0=$(js 'b["items"][0]["id"]')

# --- a listing shows every change of a job it listed before (the text a
# pending job keeps between listings, state_json.c), as GET /v1/jobs/ID does ---
listed_as_get() {
	req ops-t GET "/v1/jobs?after=$((b0 - 1))&limit=1"
	cp "$TEST_TMP/body" "$TEST_TMP/listed"
	req ops-t GET "/v1/jobs/$b0"
	python3 - "$TEST_TMP/listed" "$TEST_TMP/body" "$1" <<'PY'
import json,sys
item=json.load(open(sys.argv[1]))["items"][0]
one={k: v for k, v in json.load(open(sys.argv[2])).items()
     if k not in ("spec", "env", "task_states", "events")}
if item != one:
    sys.exit("listed %s differs from GET: %s" % (sys.argv[3],
             {k: (item.get(k), one.get(k)) for k in set(item) | set(one) if item.get(k) != one.get(k)}))
print(item["hold"], item["reason_code"], item["time_limit_s"], item["state"])
PY
}
expect_eq "listed" "$(listed_as_get first)" "None RuntimeUnavailable None pending"
expect_eq "listed again" "$(listed_as_get again)" "None RuntimeUnavailable None pending"
req ops-t POST "/v1/jobs/$b0/hold"
expect_eq "listed held" "$(listed_as_get held)" "admin JobHeldAdmin None pending"
req ops-t POST "/v1/jobs/$b0/release"
expect_eq "listed released" "$(listed_as_get released)" "None RuntimeUnavailable None pending"
printf '{"time_limit_s": 600}' >"$TEST_TMP/patch.json"
req ops-t PATCH "/v1/jobs/$b0" application/json "$TEST_TMP/patch.json"
expect_eq "patch" "$CODE" 200
expect_eq "listed patched" "$(listed_as_get patched)" "None RuntimeUnavailable 600 pending"
req ops-t POST "/v1/jobs/$b0/cancel"
expect_eq "listed cancelled" "$(listed_as_get cancelled)" "None None 600 cancelled"

# --- apply: created, unchanged, configured ---
pod() {
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: svc}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    command: ["sleep", "%s"]\n    resources: {limits: {nvidia.com/gpu: 1}}\n' "$1"
}
pod 10 >"$TEST_TMP/svc.yaml"
req alice-t POST /v1/apply application/yaml "$TEST_TMP/svc.yaml"
expect_eq "apply create" "$CODE $(js 'b["action"]')" "201 created"
svc_id=$(js 'b["job"]["id"]')
req alice-t POST /v1/apply application/yaml "$TEST_TMP/svc.yaml"
expect_eq "apply same" "$CODE $(js 'b["action"]')" "200 unchanged"
pod 20 >"$TEST_TMP/svc.yaml"
req alice-t POST /v1/apply application/yaml "$TEST_TMP/svc.yaml"
expect_eq "apply changed" "$CODE $(js 'b["action"], b["job"]["id"]')" "200 ('configured', $svc_id)"

# --- cancel ---
req bob-t POST "/v1/jobs/$slurm_id/cancel"
expect_eq "bob cannot cancel alice's" "$CODE" 404
req alice-t POST "/v1/jobs/$slurm_id/cancel"
expect_eq "cancel" "$CODE $(js 'b["state"]')" "200 cancelled"
req alice-t POST "/v1/jobs/$slurm_id/cancel"
expect_eq "cancel twice" "$CODE" 409
req alice-t GET "/v1/jobs/$slurm_id"
expect_eq "events recorded" "$(js '[e["to"] for e in b["events"]]')" "['pending', 'cancelled']"

# --- watch: long-poll and SSE ---
req alice-t GET "/v1/watch?since=0&timeout=1"
expect_eq "watch from 0" "$(js 'b["items"][0]["type"], b["items"][0]["to"], b["next"] > 0')" "('job', 'pending', True)"
next=$(js 'b["next"]')
t0=$(date +%s)
req alice-t GET "/v1/watch?since=$next&timeout=1"
expect_eq "watch times out empty" "$(js 'len(b["items"])')" 0
( sleep 0.5; curl -sS -o /dev/null -X POST -H "Authorization: Bearer alice-t" "$URL/v1/jobs/$svc_id/cancel" ) &
req alice-t GET "/v1/watch?since=$next&timeout=10"
expect_eq "watch wakes on a change" "$(js 'b["items"][0]["job"], b["items"][0]["to"]')" "($svc_id, 'cancelled')"
curl -sS -N -m 2 -H "Accept: text/event-stream" -H "Authorization: Bearer alice-t" \
	"$URL/v1/watch?since=0" >"$TEST_TMP/sse" 2>/dev/null
grep -q '^event: job$' "$TEST_TMP/sse" || fail "SSE stream has no job event: $(head -c 300 "$TEST_TMP/sse")"
grep -q '^id: 1$' "$TEST_TMP/sse" || fail "SSE stream lacks ids"
req bob-t GET "/v1/watch?since=0&timeout=0"
expect_eq "bob sees no alice events" "$(js 'len(b["items"])')" 0

# --- metrics ---
curl -fsS "$URL/metrics" >"$TEST_TMP/metrics.txt" || fail "/metrics"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$TEST_TMP/metrics.txt" || fail "promtool check metrics complains"
fi
req ops-t GET "/v1/queue?state=pending"
pending=$(js 'b["total"]')
expect_eq "items of the first page" "$(js 'len(b["items"])')" 100
depth=$(awk '/^drover_queue_depth\{/ {s += $2} END {print s}' "$TEST_TMP/metrics.txt")
expect_eq "queue depth metric = the queue's total" "$depth" "$pending"
grep -q '^drover_jobs{state="cancelled"} 3$' "$TEST_TMP/metrics.txt" || fail "drover_jobs cancelled"

# --- SIGKILL and restart: every job where it was, ids never reused ---
req ops-t GET "/v1/jobs?limit=10000"
js '[(j["id"], j["state"], j["name"]) for j in b["items"]]' >"$TEST_TMP/before"
stop_server KILL
start_server
req ops-t GET "/v1/jobs?limit=10000"
js '[(j["id"], j["state"], j["name"]) for j in b["items"]]' >"$TEST_TMP/after"
cmp -s "$TEST_TMP/before" "$TEST_TMP/after" || fail "jobs differ after restart: $(diff "$TEST_TMP/before" "$TEST_TMP/after" | head -5)"
last=$(python3 -c "import ast; print(max(i for i,_,_ in ast.literal_eval(open('$TEST_TMP/before').read())))")
req alice-t POST /v1/jobs application/yaml "$ROOT/examples/jobs/training-job.yaml"
expect_eq "new id after restart" "$(js 'b["id"]')" "$((last + 1))"
req alice-t GET "/v1/jobs/$slurm_id"
expect_eq "history kept" "$(js '[e["to"] for e in b["events"]]')" "['pending', 'cancelled']"

# --- a failing store answers 503 and keeps nothing ---
stop_server
req_count() { req ops-t GET "/v1/jobs?limit=10000"; js 'len(b["items"])'; }
start_server DROVER_STORE_FAULT=put_job:0
n0=$(req_count)
req alice-t POST /v1/jobs application/yaml "$ROOT/examples/jobs/training-job.yaml"
expect_eq "store failure" "$CODE $(js 'b["error"]["code"]')" "503 unavailable"
expect_eq "nothing kept" "$(req_count)" "$n0"
stop_server
start_server
expect_eq "nothing kept after restart" "$(req_count)" "$n0"
req alice-t POST /v1/jobs application/yaml "$ROOT/examples/jobs/training-job.yaml"
expect_eq "accepted again" "$CODE $(js 'b["id"]')" "201 $((last + 2))"
echo "ok: API contract, roles, watch, metrics, restart and store failure"
