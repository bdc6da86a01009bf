# cp_agent_kill.sh: an agent killed with SIGKILL: its node is marked down
# after the heartbeat timeout, its gang is requeued whole (both tasks, on
# every node, stopped) and restarted elsewhere with a new epoch; when the
# dead agent comes back it does not keep running the old task (fencing).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "heartbeat_timeout_s: 3"
start_server
start_agent node-a
start_agent node-b
start_agent node-c

gang_yaml gang 8 "$(recording_cmd gang)" >"$TEST_TMP/gang.yaml"
id=$(submit "$TEST_TMP/gang.yaml")
wait_job "$id" running 60
wait_until 10 sh -c "[ \$(ls $TEST_TMP/pids/gang-* 2>/dev/null | wc -l) -eq 2 ]" || fail "both tasks did not start"
expect_eq "attempt" "$(jf "$id" 'j["attempt"]')" "1"
victim=$(jf "$id" 'j["placement"][0]["node"]')
other=$(jf "$id" 'j["placement"][1]["node"]')
[ "$victim" != "$other" ] || fail "the gang's tasks share a node"
first_pids=$(cat "$TEST_TMP"/pids/gang-*)
victim_task=$(jf "$id" 'j["placement"][0]["task"]')
victim_pid=$(cat "$TEST_TMP"/pids/gang-"$victim_task"-*)
other_task=$(jf "$id" 'j["placement"][1]["task"]')
other_pid=$(cat "$TEST_TMP"/pids/gang-"$other_task"-*)
echo "gang $id on $victim ($victim_task pid $victim_pid) and $other ($other_task pid $other_pid)"

stop_agent "$victim" KILL
wait_until 20 node_is "$victim" down || fail "node $victim not marked down after its agent was killed"
# requeued whole and started again, away from the dead node
wait_until 30 sh -c "[ \"\$('$DROVER' get job $id -o json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"attempt\"], j[\"state\"])')\" = '2 running' ]" ||
	{ "$DROVER" describe job "$id"; fail "gang $id was not restarted (attempt 2, running)"; }
nodes=$(jf "$id" '",".join(sorted(p["node"] for p in j["placement"]))')
case ",$nodes," in *",$victim,"*) fail "restarted on the dead node $victim ($nodes)" ;; esac
expect_eq "restarted on two nodes" "$(jf "$id" 'len(set(p["node"] for p in j["placement"]))')" "2"
expect_eq "requeue event" "$(jf "$id" 'any(e["to"] == "pending" and e["from"] in ("running", "scheduled") for e in j["events"])')" "True"
# the surviving task of the first start was stopped (whole gang requeued)
wait_until 15 sh -c "! kill -0 $other_pid 2>/dev/null" || fail "the first start's task on $other (pid $other_pid) still runs"
wait_until 10 sh -c "[ \$(ls $TEST_TMP/pids/gang-* | wc -l) -eq 4 ]" || fail "the restart did not start two new tasks"

# the dead agent comes back: it must not keep running the old task
start_agent "$victim"
wait_until 15 sh -c "! kill -0 $victim_pid 2>/dev/null" || fail "old task pid $victim_pid on $victim still runs after its agent came back"
expect_eq "still running after the old agent returned" "$(jf "$id" 'j["state"] + " " + str(j["attempt"])')" "running 2"
echo "ok: gang $id requeued from $victim and restarted on $nodes"
