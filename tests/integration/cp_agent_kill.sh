# cp_agent_kill.sh: agents killed with SIGKILL lose no task and run none
# twice (docs/agent.md, "Tasks outlive their agent"):
#   - while a gang runs: its tasks survive under their shims, the restarted
#     agent adopts them, they finish, and the job succeeds in its first
#     attempt, each task started once (the tasks' own start lines);
#   - after a task exited but before its end was reported (the agent
#     SIGSTOPped, the task ends, the agent SIGKILLed): the next agent reads
#     the task's status file and reports the end; the task is not run again.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
# the lease is long enough for a restart under ASan on a loaded machine
# (one that took over 6 s fenced the gang): cp_agent_lease.sh tests expiry
cp_setup "heartbeat_timeout_s: 3" "agent_lease_s: 20"
start_server
start_agent node-a
start_agent node-b

# each task says when it starts (job, task, epoch), runs $2, says when it ends
task_cmd() {
	echo "echo \"\$DROVER_JOB_ID \$DROVER_TASK_ID \$DROVER_EPOCH\" >>$TEST_TMP/out/$1-starts; $2; echo \$DROVER_TASK_ID >>$TEST_TMP/out/$1-ends"
}
# the gang's tasks run until the test releases them (at most 60 s), so
# that a slow agent restart (ASan, a loaded machine) still finds them alive
release_wait="i=0; while [ ! -e $TEST_TMP/out/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done"
lines() { cat "$TEST_TMP/out/$1" 2>/dev/null | wc -l; }

# --- a gang survives its agent's SIGKILL
gang_yaml gang 8 "$(task_cmd gang "$release_wait")" >"$TEST_TMP/gang.yaml"
id=$(submit "$TEST_TMP/gang.yaml")
wait_job "$id" running 60
wait_until 10 sh -c "[ \$(cat $TEST_TMP/out/gang-starts 2>/dev/null | wc -l) -eq 2 ]" || fail "both tasks did not start"
victim=$(jf "$id" 'j["placement"][0]["node"]')
stop_agent "$victim" KILL
sleep 1
start_agent "$victim"
grep -q "task $id.0 (epoch [0-9]*) adopted" "$TEST_TMP/agent-$victim.log" ||
	fail "the restarted agent did not adopt task $id.0: $(tail -5 "$TEST_TMP/agent-$victim.log")"
expect_eq "gang tasks ended before their release" "$(lines gang-ends)" 0
touch "$TEST_TMP/out/release"
wait_job "$id" succeeded 30
expect_eq "attempt after the agent's restart" "$(jf "$id" 'j["attempt"]')" 1
expect_eq "task starts (each once)" "$(sort "$TEST_TMP/out/gang-starts" | uniq | wc -l) $(lines gang-starts)" "2 2"
expect_eq "task ends" "$(lines gang-ends)" 2
echo "gang $id: survived the SIGKILL of $victim's agent, adopted, succeeded in attempt 1"

# --- an end the agent did not live to report is reported by the next one
pod_yaml quick 8 "$(task_cmd quick "sleep 5")" >"$TEST_TMP/quick.yaml"
qid=$(submit "$TEST_TMP/quick.yaml")
wait_job "$qid" running 60
node=$(jf "$qid" 'j["placement"][0]["node"]')
eval "apid=\$AGENT_PID_$(_lib_agent_var "$node")"
kill -STOP "$apid"
wait_until 10 sh -c "[ \$(cat $TEST_TMP/out/quick-ends 2>/dev/null | wc -l) -eq 1 ]" || fail "the task did not end"
sleep 0.3
stop_agent "$node" KILL
expect_eq "job state while its end is unreported" "$(jf "$qid" 'j["state"]')" running
start_agent "$node"
wait_job "$qid" succeeded 20
grep -q "task $qid.0 (epoch [0-9]*) ended while the agent was away: exit code 0" "$TEST_TMP/agent-$node.log" ||
	fail "the restarted agent did not say it read the end: $(tail -5 "$TEST_TMP/agent-$node.log")"
sleep 2
expect_eq "the ended task was started once" "$(lines quick-starts)" 1
echo "ok: a task's end recorded by its shim was reported by the next agent; nothing ran twice"
