# agent_share_adopt.sh: a task's share of a shared GPU survives an agent
# restart (docs/agent.md, "Tasks outlive their agent"). Two tasks share
# GPU 1 (half and a quarter of it). The agent is SIGKILLed and restarted
# while the controller is unreachable: the adopted tasks' drover_job_gpu_share
# series still say 0.5 and 0.25, read from the journal's start lines (before,
# the journal did not keep the share and both read 1, which also split the
# GPU's utilization and memory between them half and half). Then a start
# line of an older agent, without the share, is read as a whole GPU only
# until the controller's list says otherwise.
. "$ROOT/tests/integration/lib.sh"

TOKEN=t0k
PORT=$(free_port)
CTL="http://127.0.0.1:$PORT"
PM=$(free_port)
A="$TEST_TMP/a"
MOCK=""
mock_up() {
	python3 "$ROOT/tests/integration/mock_controller.py" "$PORT" "$TOKEN" >>"$TEST_TMP/mock.log" 2>&1 9>&- &
	MOCK=$!
	track $MOCK
	wait_until 10 curl -fsS "$CTL/control/state" || fail "mock controller did not start"
}
AGENT=""
agent_up() {
	DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-s \
		--listen 127.0.0.1:0 --metrics-listen "127.0.0.1:$PM" --fake-gpus 2xH100 \
		--state "$A" --run-as-self >>"$TEST_TMP/agent.log" 2>&1 &
	AGENT=$!
	track $AGENT
}
task() { # ID JOB MILLI
	echo "{\"task_id\": \"$1\", \"job_id\": $2, \"epoch\": 1, \"desired\": \"run\",
	 \"argv\": [\"sleep\", \"120\"], \"env\": {}, \"gpus\": [1], \"gpu_milli\": $3,
	 \"rank\": 0, \"world_size\": 1}"
}
both="$(task 7.0 7 500), $(task 8.0 8 250)"
assign() { curl -fsS -X POST "$CTL/control/assign" -d "{\"node\": \"node-s\", \"tasks\": [$1]}" >/dev/null; }
share() { # JOB: its drover_job_gpu_share on GPU 1
	curl -fsS "http://127.0.0.1:$PM/metrics" |
		sed -n "s/^drover_job_gpu_share{.*gpu=\"1\",.*hpc_job=\"$1\"} //p"
}
shares_are() { [ "$(share 7) $(share 8)" = "$1" ]; }

mock_up
assign "$both"
agent_up
wait_until 20 shares_are "0.5 0.25" || fail "shares before the restart: '$(share 7) $(share 8)'"
grep -q '^start 7\.0 .* 500$' "$A/journal" || fail "the journal's start line lacks the share: $(cat "$A/journal")"

# the controller goes away, then the agent is killed and started again:
# nothing but the journal can say what the tasks hold
kill -KILL $MOCK
kill -KILL $AGENT
wait $AGENT 2>/dev/null
agent_up
for t in 7.0 8.0; do
	wait_until 20 grep -q "task $t (epoch 1) adopted" "$TEST_TMP/agent.log" ||
		fail "task $t was not adopted: $(tail -5 "$TEST_TMP/agent.log")"
done
wait_until 20 shares_are "0.5 0.25" ||
	fail "the adopted tasks' shares, with no controller: '$(share 7) $(share 8)' (want 0.5 0.25)"

# an older agent's start line has no share: a whole GPU until the
# controller's list says a quarter
kill -KILL $AGENT
wait $AGENT 2>/dev/null
sed -i 's/^\(start 8\.0 .*\) 250$/\1/' "$A/journal"
grep -q '^start 8\.0 .* 250$' "$A/journal" && fail "the journal line was not rewritten"
mock_up
assign "$both"
agent_up
wait_until 20 grep -q "task 8.0 (epoch 1) adopted" "$TEST_TMP/agent.log" ||
	fail "task 8.0 was not adopted again"
wait_until 20 shares_are "0.5 0.25" ||
	fail "the shares once the controller listed the tasks: '$(share 7) $(share 8)' (want 0.5 0.25)"
assign ""
wait_until 20 sh -c "! curl -fsS http://127.0.0.1:$PM/metrics | grep -q '^drover_job_gpu_share{'" ||
	fail "the tasks did not stop when the controller listed none"
kill -TERM $AGENT
wait $AGENT
echo "ok: shares of a shared GPU kept across an agent restart (journal), and taken from the controller's list"
