# server_drain.sh: draining a node stops its work (docs/api.md, "POST
# /v1/nodes/NAME/drain"). With real agents: two one-GPU jobs on node-a, one
# leaving at SIGTERM, one ignoring it (grace 2 s); draining node-a sends
# both SIGTERM, the stubborn one SIGKILL after its grace, says why while
# they stop, and requeues both (not counted as a retry) once their tasks are
# gone: they start again on node-b, each (job, task, epoch) once. With
# "stop_tasks": false the node only takes nothing new and its jobs run on.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "retry_limit: 0"   # a drain's requeue is not a retry: it still happens
start_server
start_agent node-a 2xH100

# submit_job NAME GRACE SHELL: a one-GPU job with terminationGracePeriodSeconds GRACE
submit_job() {
	_b=$(python3 -c 'import json,sys
print(json.dumps({"apiVersion": "drover/v1", "kind": "Job", "name": sys.argv[1],
  "groups": [{"name": "main", "count": 1, "gpus": 1, "terminationGracePeriodSeconds": int(sys.argv[2]),
              "command": ["sh", "-c", sys.argv[3]]}]}))' "$1" "$2" "$3")
	curl -sS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
		--data "$_b" "$SERVER_URL/v1/jobs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' ||
		fail "submit $1"
}
O=$TEST_TMP/out
start_line="echo \"\$DROVER_JOB_ID \$DROVER_TASK_ID \$DROVER_EPOCH \$DROVER_NODE\" >>$O/starts"
# leaves at SIGTERM, saying so
polite=$(submit_job polite 30 "$start_line; trap 'echo \"\$DROVER_JOB_ID \$DROVER_EPOCH\" >>$O/polite-term; exit 143' TERM; while :; do sleep 0.1; done")
# notes SIGTERM and goes on, writing the time every 0.1 s until SIGKILL;
# each time by rename, so that a SIGKILL between the shell's truncation and
# date's write cannot leave the file empty
stubborn=$(submit_job stubborn 2 "$start_line; trap 'date +%s.%N >$O/stubborn-term-\$DROVER_EPOCH' TERM; while :; do date +%s.%N >$O/alive.tmp && mv -f $O/alive.tmp $O/stubborn-alive-\$DROVER_EPOCH; sleep 0.1; done")
wait_job "$polite" running 30
wait_job "$stubborn" running 30
wait_until 10 sh -c "[ \$(cat $O/starts 2>/dev/null | wc -l) -eq 2 ]" || fail "the tasks did not start"
# the first attempts' epochs (one per start, cluster-wide)
pe=$(sed -n "s/^$polite [^ ]* \([0-9]*\) .*/\1/p" "$O/starts")
se=$(sed -n "s/^$stubborn [^ ]* \([0-9]*\) .*/\1/p" "$O/starts")
start_agent node-b 2xH100

# a wrong type is refused, naming the field; nothing drained
got=$(curl -sS -w ' %{http_code}' -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
	-d '{"stop_tasks": "yes"}' "$SERVER_URL/v1/nodes/node-a/drain")
expect_eq "bad stop_tasks" "$(echo "$got" | python3 -c 'import json,sys; t=sys.stdin.read(); b,c=t.rsplit(" ",1); print(c.strip(), json.loads(b)["error"]["message"])')" \
	'400 stop_tasks: found "yes", expected true or false'
node_is node-a up || fail "a refused drain drained node-a"
# a user may not drain
expect_eq "drain by a user" "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	-H "Authorization: Bearer $ALICE_TOKEN" "$SERVER_URL/v1/nodes/node-a/drain")" 403

# drain node-a: both jobs stop
curl -sS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -d '{"reason": "kernel update"}' \
	"$SERVER_URL/v1/nodes/node-a/drain" >"$TEST_TMP/drain.json" || fail "drain"
expect_eq "drain reply" "$(python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); print(n["state"], sorted(n["stopping_jobs"]))' "$TEST_TMP/drain.json")" \
	"draining [$polite, $stubborn]"
wait_until 10 test -s "$O/stubborn-term-$se" || fail "the stubborn task got no SIGTERM"
expect_eq "stubborn reason while it stops" "$(jf "$stubborn" 'j["state"] + ": " + j["reason"]')" \
	"running: its tasks are stopping because node node-a was drained by ops: kernel update; it goes back to the queue once they are gone"
wait_job "$polite" running 20   # its second attempt, on node-b
wait_job "$stubborn" running 20
wait_until 10 sh -c "[ \$(cat $O/starts | wc -l) -eq 4 ]" || fail "the jobs did not start again: $(cat $O/starts)"
expect_eq "polite's SIGTERM" "$(cat "$O/polite-term")" "$polite $pe"
# the stubborn task lived on for its grace (2 s) after SIGTERM, then SIGKILL
python3 - "$O/stubborn-term-$se" "$O/stubborn-alive-$se" <<'EOF' || fail "the stubborn task's grace"
import sys
term, alive = (float(open(p).read()) for p in sys.argv[1:])
print("stubborn: alive %.2f s after SIGTERM" % (alive - term))
sys.exit(0 if 1.5 <= alive - term <= 4 else 1)
EOF
for id in "$polite" "$stubborn"; do
	expect_eq "job $id after the drain" "$(jf "$id" 'j["attempt"], j["placement"][0]["node"]')" \
		"2 node-b"
	expect_eq "job $id requeue event" "$(jf "$id" '[e["reason"] for e in j["events"] if e["from"] == "running" and e["to"] == "pending"]')" \
		"['stopped because node node-a was drained by ops: kernel update; requeued']"
	expect_eq "job $id starts" "$(grep -c "^$id " "$O/starts") $(grep "^$id " "$O/starts" | sort -u | wc -l)" "2 2"
done
expect_eq "first starts" "$(grep -c " node-a$" "$O/starts") $(grep -c " node-b$" "$O/starts")" "2 2"
expect_eq "node-a GPUs free" "$(gpus_free node-a)" 0
expect_eq "node-a state" "$("$DROVER" get node node-a -o json | python3 -c 'import json,sys; n=json.load(sys.stdin); print(n["state"], n["gpus_allocated"])')" "draining 0"

# "stop_tasks": false: node-b takes nothing new, its jobs run on
curl -sS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -X POST "$SERVER_URL/v1/nodes/node-a/resume" >/dev/null
curl -sS -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -d '{"stop_tasks": false}' \
	"$SERVER_URL/v1/nodes/node-b/drain" >"$TEST_TMP/drain2.json" || fail "drain node-b"
expect_eq "drain without stopping" "$(python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); print(n["state"], n["stopping_jobs"])' "$TEST_TMP/drain2.json")" "draining []"
sleep 2
for id in "$polite" "$stubborn"; do
	expect_eq "job $id on the node drained without stopping" "$(jf "$id" 'j["state"], j["attempt"]')" "running 2"
done
expect_eq "SIGTERMs" "$(cat "$O/polite-term" | wc -l) $(ls "$O" | grep -c stubborn-term)" "1 1"
"$DROVER" cancel "$polite" "$stubborn" >/dev/null || fail "cancel"
echo "ok server_drain: drain stopped jobs $polite and $stubborn on node-a (SIGTERM; SIGKILL after a 2 s grace) and requeued them to node-b"
