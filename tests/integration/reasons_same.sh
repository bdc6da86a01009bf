# reasons_same.sh: one reason, three faces. Jobs that can never run on the
# tiny cluster (a 16-GPU task on 8-GPU nodes, an H200 on an H100-only
# cluster, a task of 400 CPUs on 224-CPU nodes) get the same sentence from
# `drover place`, from `drover sim` (rejected) and from the server, which
# refuses them at submit (400, `drover submit` exits 2) on /v1/jobs,
# /v1/jobs/batch and /v1/apply, and a dry run the same. A job that fits once its nodes are up (the
# cluster file's nodes are down until agents register) is accepted and
# waits with reason code NodeDown naming a down node, not "never fits".
. "$ROOT/tests/integration/lib.sh"
CL="$ROOT/tests/golden/clusters/tiny.yaml"
cd "$TEST_TMP"

want_big="a task needs 16 GPUs on one node; the largest node has 8"
want_h200="needs H200; the cluster has only H100"
want_cpu="a task needs 400 CPUs; the largest node has 224"

# place
expect_eq "place 16" "$("$DROVER" place --cluster "$CL" --gpus 16)" "does not fit: $want_big"
expect_eq "place h200" "$("$DROVER" place --cluster "$CL" --gpus 2 --model h200)" \
	"does not fit: $want_h200"
expect_eq "place cpu" "$("$DROVER" place --cluster "$CL" --gpus 1 --cpu 400)" \
	"does not fit: $want_cpu"

# sim
printf 'name,submit_s,duration_s,tasks,gpus,gpu_model,cpu_milli\nbig,0,100,1,16,,\nh200,0,100,1,2,H200,\ncpu,0,100,1,1,,400000\nok,0,100,1,8,,\n' >t.csv
"$DROVER" sim --cluster "$CL" --trace t.csv --jobs-out runs.csv >/dev/null || fail "sim exited $?"
for k in big h200 cpu; do
	eval "w=\$want_$k"
	grep -q "^$k,0,.*,rejected,0,$w,\$" runs.csv || fail "sim $k: $(grep "^$k," runs.csv)"
done
grep -q '^ok,0,.*,completed,' runs.csv || fail "sim ok: $(grep '^ok,' runs.csv)"

# server
server_config "sched_delay_ms: 5"
start_server --cluster "$CL"
sub() { printf '#!/bin/sh\n%s\ntrue\n' "$1" | "$DROVER" submit --parsable - 2>&1; }
for k in big h200 cpu; do
	case $k in
	big) opt='#SBATCH --gpus=16' ;;
	h200) opt='#SBATCH --gpus=h200:2' ;;
	cpu) opt='#SBATCH --gpus=1 -c 400' ;;
	esac
	eval "w=\$want_$k"
	out=$(sub "$opt"); rc=$?
	expect_eq "submit $k exit" "$rc" 2
	case "$out" in *"$w"*) ;; *) fail "submit $k: '$out', want '$w'" ;; esac
done
code=$(curl -s -o body.json -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
	-H 'Content-Type: application/json' --data-binary \
	'{"items":[{"apiVersion":"drover/v1","kind":"Job","name":"a","groups":[{"name":"a","count":1,"gpus":8}]},{"apiVersion":"drover/v1","kind":"Job","name":"b","groups":[{"name":"b","count":1,"gpus":16}]}]}' \
	"$SERVER_URL/v1/jobs/batch")
expect_eq "batch status" "$code" 400
grep -q "items\[1\]: $want_big" body.json || fail "batch: $(cat body.json)"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    resources: {limits: {nvidia.com/gpu: 16}}\n' >pod.yaml
out=$("$DROVER" apply -f pod.yaml 2>&1); rc=$?
expect_eq "apply exit" "$rc" 2
case "$out" in *"$want_big"*) ;; *) fail "apply: '$out'" ;; esac
# a dry run is refused as a submit is, and one that fits takes no id
code=$(curl -s -o body.json -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
	-H 'Content-Type: application/json' --data-binary \
	'{"apiVersion":"drover/v1","kind":"Job","name":"d","groups":[{"name":"d","count":1,"gpus":16}]}' \
	"$SERVER_URL/v1/jobs?dry_run=1")
expect_eq "dry run of a 16-GPU task" "$code $(python3 -c 'import json,sys; e=json.load(open("body.json"))["error"]; print(e["code"], e["message"])')" \
	"400 unsatisfiable $want_big"
code=$(curl -s -o body.json -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
	-H 'Content-Type: application/json' --data-binary \
	'{"apiVersion":"drover/v1","kind":"Job","name":"d","groups":[{"name":"d","count":1,"gpus":8}]}' \
	"$SERVER_URL/v1/jobs?dry_run=1")
expect_eq "dry run of an 8-GPU task" "$code" 200
expect_eq "nothing accepted" "$("$DROVER" get jobs -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" 0

# a job that fits once the nodes are up waits for them
id=$(sub '#SBATCH --gpus=8') || fail "submit 8: $id"
field() { "$DROVER" get job "$id" -o json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
wait_until 10 sh -c "[ \"\$(\"$DROVER\" get job $id -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"reason_code\"])')\" = NodeDown ]" ||
	fail "job $id: reason_code $(field reason_code), reason $(field reason)"
case "$(field reason)" in
"no node in the pools it may use is up; fits when nodes down or draining return: leaf1-n1 and 3 more") ;;
*) fail "job $id: reason '$(field reason)'" ;;
esac
echo "ok: place, sim and server give the same reasons; impossible jobs refused; down nodes named"
