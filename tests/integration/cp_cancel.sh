# cp_cancel.sh: cancel stops the processes: a running job's task (and a
# child it started) are gone within seconds of 'drover cancel', the job is
# cancelled with a reason naming who did it, and the GPUs come back; a task
# killed by a signal drover did not send fails saying so.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

pod_yaml sleeper 4 "sleep 301 & echo \$! >$TEST_TMP/pids/child; $(recording_cmd sleeper)" >"$TEST_TMP/sleeper.yaml"
id=$(submit "$TEST_TMP/sleeper.yaml")
wait_job "$id" running 60
wait_until 10 test -s "$TEST_TMP/pids/child" || fail "the task did not start its child"
wait_until 10 sh -c "ls $TEST_TMP/pids/sleeper-* >/dev/null 2>&1" || fail "the task did not record itself"
task_pid=$(cat "$TEST_TMP"/pids/sleeper-*)
child_pid=$(cat "$TEST_TMP/pids/child")
pid_alive "$task_pid" || fail "task process $task_pid is not running"
node=$(jf "$id" 'j["placement"][0]["node"]')

out=$("$DROVER" cancel "$id") || fail "drover cancel failed"
echo "$out"
case "$out" in *"cancelled job $id"*) ;; *) fail "cancel said '$out'" ;; esac
expect_eq "state right after cancel" "$(jf "$id" 'j["state"]')" "cancelled"
wait_until 15 sh -c "! kill -0 $task_pid 2>/dev/null" || fail "task process $task_pid still runs after cancel"
wait_until 15 sh -c "! kill -0 $child_pid 2>/dev/null" || fail "the task's child $child_pid still runs after cancel"
wait_until 15 gpus_free_is "$node" 8 || fail "node $node did not get its GPUs back"

# cancelling a finished job is refused, exit 1, with the state named
if "$DROVER" cancel "$id" 2>"$TEST_TMP/err"; then fail "second cancel succeeded"; fi
grep -q cancelled "$TEST_TMP/err" || fail "second cancel's error does not name the state: $(cat "$TEST_TMP/err")"

# a pending job cancels at once too
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
b1=$(submit "$TEST_TMP/hold.yaml"); b2=$(submit "$TEST_TMP/hold.yaml"); b3=$(submit "$TEST_TMP/hold.yaml")
wait_job "$b1" running 60
wait_job "$b2" running 60
expect_eq "third 8-GPU job while both nodes are full" "$(jf "$b3" 'j["state"]')" "pending"
"$DROVER" cancel "$b3" >/dev/null || fail "cancel pending"
expect_eq "pending job cancelled" "$(jf "$b3" 'j["state"]')" "cancelled"
# a signal from outside drover: the reason says it was not drover's
"$DROVER" cancel "$b1" >/dev/null || fail "cancel $b1"
pod_yaml selfkill 1 'kill -9 $$' >"$TEST_TMP/selfkill.yaml"
sk=$(submit "$TEST_TMP/selfkill.yaml")
wait_job "$sk" failed 60
expect_eq "reason of a task killed from outside" "$(jf "$sk" 'j["reason"]')" \
	"task $sk.0 killed by signal 9 (KILL), not sent by drover"
echo "ok: cancel stopped job $id's processes"
