# server_authz.sh: who may set what (docs/api.md, "Authorization"): the
# tenants file's per-tenant users: list and allowedClasses. With two user
# tokens: alice may use tenant research, bob may not (403 naming the field
# `tenant`, on POST /v1/jobs, /v1/jobs/batch and /v1/apply); alice's
# priority is capped at her tenant's highest allowed class (403 `priority`,
# and `priorityClassName` for a class she may not use), while the admin
# token sets anything and a tenant without users: stays open to all.
. "$ROOT/tests/integration/lib.sh"

cat >"$TEST_TMP/tenants.yaml" <<'YAML'
kind: Tenants
priorityClasses:
  low: {value: 10}
  high: {value: 100}
  urgent: {value: 1000}
tenants:
  research:
    users: [alice]
    allowedClasses: [low, high]
  open: {}
users:
  bob: {maxRunningJobs: 4}
YAML
server_config "tenants: tenants.yaml" "sched_delay_ms: 5"
start_server

# req TOKEN PATH CTYPE FILE: POSTs FILE; CODE and MSG (the error's message)
req() {
	CODE=$(curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
		-H "Content-Type: $3" --data-binary "@$4" "$SERVER_URL$2")
	MSG=$(python3 -c "import json; b=json.load(open('$TEST_TMP/body')); print(b.get('error', {}).get('message', ''))")
}

# job FILE KEY=JSON...: the example job with those top-level fields
job() {
	_f=$1
	shift
	python3 - "$ROOT/examples/jobs/training-job.json" "$@" >"$TEST_TMP/$_f" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    j[k] = json.loads(v)
print(json.dumps(j))
PY
}

job research.json 'tenant="research"'
req alice-t /v1/jobs application/json "$TEST_TMP/research.json"
expect_eq "alice may use research" "$CODE" 201
req bob-t /v1/jobs application/json "$TEST_TMP/research.json"
expect_eq "bob may not use research" "$CODE $MSG" \
	"403 tenant: user bob may not use tenant research (tenants file: users)"
job open.json 'tenant="open"' 'priority=2147483647'
req bob-t /v1/jobs application/json "$TEST_TMP/open.json"
expect_eq "a tenant without users: is open to all, any priority" "$CODE" 201

job high.json 'tenant="research"' 'priority=100'
req alice-t /v1/jobs application/json "$TEST_TMP/high.json"
expect_eq "priority up to the highest allowed class" "$CODE" 201
job top.json 'tenant="research"' 'priority=2147483647'
req alice-t /v1/jobs application/json "$TEST_TMP/top.json"
expect_eq "priority above the cap" "$CODE $MSG" \
	"403 priority: user alice may set at most 100 in tenant research, found 2147483647 (tenants file: allowedClasses)"
job urgent.json 'tenant="research"' 'priorityClassName="urgent"'
req alice-t /v1/jobs application/json "$TEST_TMP/urgent.json"
expect_eq "class not allowed" "$CODE $MSG" \
	"403 priorityClassName: user alice may not use class urgent in tenant research (tenants file: allowedClasses)"
req ops-t /v1/jobs application/json "$TEST_TMP/top.json"
expect_eq "admin sets any priority" "$CODE" 201
req ops-t /v1/jobs application/json "$TEST_TMP/urgent.json"
expect_eq "admin uses any class" "$CODE" 201

# batch: one forbidden item refuses the batch, nothing is kept
python3 - "$TEST_TMP/open.json" "$TEST_TMP/research.json" >"$TEST_TMP/batch.json" <<'PY'
import json, sys
print(json.dumps({"items": [json.load(open(f)) for f in sys.argv[1:]]}))
PY
before=$(curl -sS -H "Authorization: Bearer ops-t" "$SERVER_URL/v1/jobs?limit=1000" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
req bob-t /v1/jobs/batch application/json "$TEST_TMP/batch.json"
expect_eq "batch refused" "$CODE" 403
case "$MSG" in *"tenant: user bob may not use tenant research"*) ;; *) fail "batch message: $MSG" ;; esac
after=$(curl -sS -H "Authorization: Bearer ops-t" "$SERVER_URL/v1/jobs?limit=1000" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
expect_eq "nothing of the refused batch kept" "$after" "$before"

# apply: the same rule
job svc.json 'tenant="research"' 'name="svc"'
req bob-t /v1/apply application/json "$TEST_TMP/svc.json"
expect_eq "apply refused" "$CODE $MSG" \
	"403 tenant: user bob may not use tenant research (tenants file: users)"
req alice-t /v1/apply application/json "$TEST_TMP/svc.json"
expect_eq "apply allowed" "$CODE" 201
echo "ok: tenant users: and allowedClasses refused with 403 naming the field; admin sets anything"
