# server_state_small.sh: state that stays small. A restart loads only the
# unfinished jobs (the server's log line counts both kinds) while every read
# of a finished job still works from the store (get, list with after=,
# describe, logs, /metrics counts); /healthz says 503 "loading" until the
# state is loaded; after job_retention_s the finished jobs' records are
# purged (404) while their accounting rows stay and /v1/acct sums them; a
# task's output past task_output_max_bytes is cut, and the log says so.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "task_output_max_bytes: 4096"
start_server
start_agent node-a

acct() { # acct QUERY EXPR: EXPR (Python, the reply is a) on GET /v1/acct?QUERY
	curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/acct?$1" |
		python3 -c "import json,sys; a=json.load(sys.stdin); print($2)"
}
code_of() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL$1"; }

# Three finished jobs (two 1-GPU jobs that print and one that fails), one
# cancelled while pending (8 GPUs held by a running one), one running.
pod_yaml hello 1 "echo hello-from-\$DROVER_JOB_ID; sleep 1" >"$TEST_TMP/hello.yaml"
pod_yaml bad 1 "exit 3" >"$TEST_TMP/bad.yaml"
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
h1=$(submit "$TEST_TMP/hello.yaml")
h2=$(submit "$TEST_TMP/hello.yaml")
bad=$(submit "$TEST_TMP/bad.yaml")
wait_job "$h1" succeeded 60
wait_job "$h2" succeeded 60
wait_job "$bad" failed 60
run=$(submit "$TEST_TMP/hold.yaml")
wait_job "$run" running 60
cx=$(submit "$TEST_TMP/hold.yaml")
"$DROVER" cancel "$cx" >/dev/null || fail "cancel $cx"
wait_job "$cx" cancelled 10
expect_eq "acct jobs before the restart" "$(acct 'by=tenant' 'a["total"]["jobs"]')" 5
expect_eq "the running attempt, as of now" "$(acct 'by=job' '[i["state"] for i in a["items"] if i["group"] == "'$run'"]')" "['running']"

# A restart whose load is slow: /healthz says loading (503) until it is done.
stop_server KILL
: >"$TEST_TMP/healthz.codes"
(
	i=0
	while [ $i -lt 100 ]; do
		curl -s -m 1 -w ' %{http_code}\n' "$SERVER_URL/healthz" >>"$TEST_TMP/healthz.codes" 2>/dev/null
		grep -q ' 200$' "$TEST_TMP/healthz.codes" && break
		sleep 0.1
		i=$((i + 1))
	done
) &
poller=$!
track $poller
start_server DROVER_STORE_SLOW=load_live_jobs:1500
wait $poller
grep -q '^ 503$' "$TEST_TMP/healthz.codes" && grep -q '"status":"loading"' "$TEST_TMP/healthz.codes" ||
	{ cat "$TEST_TMP/healthz.codes"; fail "/healthz never said 503 loading during the restart"; }

# Only the unfinished job was loaded; the four finished ones stay in the store.
line=$(grep 'state loaded in' "$TEST_TMP/server.log" | tail -1)
echo "$line"
case $line in
*": 1 unfinished jobs in memory, 4 finished jobs left in the store"*) ;;
*) fail "the restart did not load only the unfinished job: $line" ;;
esac

# Every read of a finished job still works.
expect_eq "state of $h1" "$(jf "$h1" 'j["state"]')" succeeded
expect_eq "exit code of $bad" "$(jf "$bad" 'j["exit_code"]')" 3
"$DROVER" describe job "$h2" | grep -q 'succeeded' || fail "describe $h2"
"$DROVER" logs "$h1" | grep -q "hello-from-$h1" || fail "logs of finished job $h1"
ids=$("$DROVER" get jobs -o json | python3 -c 'import json,sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["items"]))')
expect_eq "jobs listed" "$ids" "$h1 $h2 $bad $run $cx"
page=$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?after=$h1&limit=2" |
	python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(str(j["id"]) for j in r["items"]), r.get("next_after"))')
expect_eq "a page after $h1" "$page" "$h2 $bad $bad"
expect_eq "finished by state" "$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?state=failed,cancelled" |
	python3 -c 'import json,sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["items"]))')" "$bad $cx"
curl -fsS "$SERVER_URL/metrics" | grep -q '^drover_jobs{state="succeeded"} 2$' || fail "drover_jobs counts the stored jobs"
# a finished job leaves memory once on disk, without a restart too
"$DROVER" cancel "$run" >/dev/null
wait_job "$run" cancelled 30
h3=$(submit "$TEST_TMP/hello.yaml")
wait_job "$h3" succeeded 60
curl -fsS "$SERVER_URL/metrics" | grep -q '^drover_jobs{state="succeeded"} 3$' || fail "drover_jobs after an eviction"

# Accounting: one row per attempt.
expect_eq "acct by user" "$(acct 'by=user' '[(i["group"], i["jobs"]) for i in a["items"]]')" "[('ops', 6)]"
expect_eq "acct by job" "$(acct 'by=job' '[(i["group"], i["state"]) for i in a["items"]]')" \
	"[('$h1', 'succeeded'), ('$h2', 'succeeded'), ('$bad', 'failed'), ('$run', 'cancelled'), ('$cx', 'cancelled'), ('$h3', 'succeeded')]"
acct 'by=job' 'a["items"][0]["gpu_hours"] > 0' | grep -q True || fail "a 1-GPU job of a second or more has GPU time"
expect_eq "bad by" "$(code_of '/v1/acct?by=node')" 400
"$DROVER" acct --by user --since 1h | tee "$TEST_TMP/acct.txt"
grep -q '^GROUP  *JOBS  *GPU_HOURS  *COST_USD$' "$TEST_TMP/acct.txt" || fail "drover acct's header"
grep -q '^ops  *6 ' "$TEST_TMP/acct.txt" || fail "drover acct --by user"
expect_eq "drover acct -o json" "$("$DROVER" acct --by job -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" 6
"$DROVER" acct --by node >/dev/null 2>&1
expect_eq "drover acct --by node exits" $? 2
"$DROVER" acct --since yesterday >/dev/null 2>&1
expect_eq "drover acct --since yesterday exits" $? 2
expect_eq "an empty window" "$("$DROVER" acct --until 2000-01-01 -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["jobs"])')" 0

# The output cap: 100,000 bytes written, 4,096 kept and a line that says so.
pod_yaml loud 1 "head -c 100000 /dev/zero | tr '\\0' x; echo done >&2" >"$TEST_TMP/loud.yaml"
loud=$(submit "$TEST_TMP/loud.yaml")
wait_job "$loud" succeeded 60
"$DROVER" logs "$loud" >"$TEST_TMP/loud.out" || fail "logs of $loud"
head -c 4096 "$TEST_TMP/loud.out" | tr -d x | wc -c | grep -qx 0 || fail "the first 4096 bytes are the task's"
grep -q 'drover: output capped at 4096 bytes (task_output_max_bytes)' "$TEST_TMP/loud.out" ||
	fail "the capped log does not say so"
size=$(wc -c <"$TEST_TMP/loud.out")
[ "$size" -lt 4300 ] || fail "the log of $loud is $size bytes, over the cap"
expect_eq "stderr under the cap is whole" "$("$DROVER" logs "$loud" --stderr)" "done"

# Retention: the finished records go, the accounting stays.
stop_server
server_config "job_retention_s: 2"
start_server
wait_until 20 sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' $SERVER_URL/v1/jobs/$h1) = 404 ]" ||
	fail "job $h1 was not purged after job_retention_s"
grep -q 'purged [0-9]* finished jobs' "$TEST_TMP/server.log" || fail "the purge is not logged"
no_jobs() { [ "$("$DROVER" get jobs -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" = 0 ]; }
wait_until 20 no_jobs || fail "finished jobs are left after job_retention_s"
expect_eq "acct after the purge" "$(acct 'by=tenant' 'a["total"]["jobs"], a["total"]["attempts"]')" "7 7"
echo "ok"
