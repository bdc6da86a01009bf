# agent_output_cap_adopt.sh: the output cap (task_output_max_bytes) holds
# for a task that a restarted agent adopted (docs/agent.md, "Tasks outlive
# their agent"): the cap travels in the agent's journal with the task's
# start, so after a SIGKILL and restart the task's 100,000 bytes are still
# cut at 4,096 with the line that says so. Before, the journal did not keep
# the cap, and an adopted task wrote its whole output. First, a task that
# writes 20 MB at once finds no more than the cap and that line in its file
# (the shim relays its output: src/agent/shim.c).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "task_output_max_bytes: 4096" "heartbeat_timeout_s: 3" "agent_lease_s: 30"
start_server
start_agent node-a

# a task writing as fast as it can never has a byte past the cap on disk:
# its 20 MB go through the shim, which writes 4,096 of them and the line
# saying so; the task measures its own file right after writing (before,
# the agent cut it once a second, and the task found its 20 MB there)
pod_yaml fast 1 "head -c 20000000 /dev/zero | tr '\\0' x; wc -c <\"\$DROVER_TASK_ID.out\" >$TEST_TMP/out/fast-size" >"$TEST_TMP/fast.yaml"
fid=$(submit "$TEST_TMP/fast.yaml")
wait_job "$fid" succeeded 60
mark='[drover: output capped at 4096 bytes (task_output_max_bytes); later output is dropped]'
expect_eq "the file as the task saw it, right after writing" "$(cat "$TEST_TMP/out/fast-size")" \
	"$((4096 + ${#mark} + 2))"
"$DROVER" logs "$fid" >"$TEST_TMP/fast.out" || fail "logs of $fid"
expect_eq "the capped log" "$(head -c 4096 "$TEST_TMP/fast.out" | tr -d x | wc -c) $(tail -n 1 "$TEST_TMP/fast.out")" \
	"0 $mark"
expect_eq "the capped log's size" "$(wc -c <"$TEST_TMP/fast.out")" "$((4096 + ${#mark} + 2))"

# the task starts, waits for the release (at most 60 s), then writes
release_wait="i=0; while [ ! -e $TEST_TMP/out/release ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done"
pod_yaml loud 1 "touch $TEST_TMP/out/started; $release_wait; head -c 100000 /dev/zero | tr '\\0' x; echo done >&2" >"$TEST_TMP/loud.yaml"
id=$(submit "$TEST_TMP/loud.yaml")
wait_job "$id" running 60
wait_until 10 test -e "$TEST_TMP/out/started" || fail "the task did not start"
grep -q " 4096 1000\$" "$TEST_TMP/agent-node-a/journal" ||
	fail "the journal's start line does not keep the cap: $(cat "$TEST_TMP/agent-node-a/journal")"
stop_agent node-a KILL
start_agent node-a
grep -q "task $id.0 (epoch [0-9]*) adopted" "$TEST_TMP/agent-node-a.log" ||
	fail "the restarted agent did not adopt task $id.0: $(tail -5 "$TEST_TMP/agent-node-a.log")"
touch "$TEST_TMP/out/release"
wait_job "$id" succeeded 60
"$DROVER" logs "$id" >"$TEST_TMP/loud.out" || fail "logs of $id"
size=$(wc -c <"$TEST_TMP/loud.out")
[ "$size" -lt 4300 ] || fail "the adopted task's log is $size bytes, over the 4096-byte cap"
grep -q 'drover: output capped at 4096 bytes (task_output_max_bytes)' "$TEST_TMP/loud.out" ||
	fail "the capped log does not say so"
grep -q "task $id.0: stdout capped at 4096 bytes" "$TEST_TMP/agent-node-a.log" ||
	fail "the agent's log does not say it capped the adopted task"
expect_eq "stderr under the cap is whole" "$("$DROVER" logs "$id" --stderr)" "done"
