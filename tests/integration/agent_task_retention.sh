# agent_task_retention.sh: task directories do not pile up on agents. A
# finished task's directory (its logs) stays for --task-retention seconds
# after its last output, so `drover logs` reads it meanwhile, and is then
# removed (the agent's log says so); a running task's directory stays.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 8xH100 --task-retention 3
tasks="$TEST_TMP/agent-node-a/tasks"

pod_yaml hello 1 "echo hello-from-\$DROVER_JOB_ID" >"$TEST_TMP/hello.yaml"
pod_yaml hold 1 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
hold=$(submit "$TEST_TMP/hold.yaml")
wait_job "$hold" running 60
done_id=$(submit "$TEST_TMP/hello.yaml")
wait_job "$done_id" succeeded 60
"$DROVER" logs "$done_id" | grep -q "hello-from-$done_id" || fail "logs of $done_id right after it ended"
[ -d "$tasks/$done_id.0" ] || fail "no task directory $tasks/$done_id.0"

wait_until 30 sh -c "[ ! -d '$tasks/$done_id.0' ]" || fail "$tasks/$done_id.0 is still there after --task-retention 3"
grep -q "task $done_id.0: its directory is removed" "$TEST_TMP/agent-node-a.log" || fail "the agent does not log the removal"
[ -d "$tasks/$hold.0" ] || fail "the running task's directory went"
if "$DROVER" logs "$done_id" >/dev/null 2>&1; then fail "logs of a removed task directory"; fi
echo "ok"
