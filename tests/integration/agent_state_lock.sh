# agent_state_lock.sh: one agent per state directory (docs/agent.md, exit
# codes). While an agent runs, a second `drover agent` on its --state
# starts nothing and exits 2 with one line naming the holder's pid and
# node; the lock dies with its holder (SIGKILL), not with the task shims
# it leaves running, so the next agent starts and adopts the task.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 2xH100
eval "first=\$AGENT_PID_node_a"
ST="$TEST_TMP/agent-node-a"
expect_eq "lock file mode" "$(stat -c %a "$ST/lock")" 600
expect_eq "lock file" "$(cat "$ST/lock")" "pid $first
node node-a"

# a task that runs until released, so that its shim outlives the agent
pod_yaml held 1 "while [ ! -e $TEST_TMP/out/release ]; do sleep 0.1; done" >"$TEST_TMP/held.yaml"
id=$(submit "$TEST_TMP/held.yaml")
wait_job "$id" running 30

# a second agent on the same directory (another name, another port)
timeout 20 "$DROVER" agent --server "$SERVER_URL" --token-file "$CLUSTER_TOKEN_FILE" \
	--name node-b --listen "127.0.0.1:$(free_port)" --fake-gpus 2xH100 --run-as-self \
	--state "$ST" >"$TEST_TMP/second.out" 2>"$TEST_TMP/second.err"
expect_eq "second agent exit" "$?" 2
expect_eq "second agent stderr" "$(cat "$TEST_TMP/second.err")" "drover agent: state directory $ST is in use by another agent, pid $first (node node-a); stop it first, or give this one another --state"
[ -s "$TEST_TMP/second.out" ] && fail "the refused agent printed: $(cat "$TEST_TMP/second.out")"
node_is node-b up && fail "the refused agent registered"
kill -0 "$first" || fail "the first agent died"
expect_eq "lock file after the refusal" "$(head -1 "$ST/lock")" "pid $first"

# SIGKILL: the shim keeps running (and holds no lock); the next agent starts
stop_agent node-a KILL
shim=$(cat "$ST/tasks/$id.0/"*.pid)
kill -0 "$shim" || fail "the task's shim ($shim) did not outlive the agent"
ls -l "/proc/$shim/fd" | grep -q "$ST/lock" && fail "the shim holds the lock file open"
start_agent node-a 2xH100
eval "second=\$AGENT_PID_node_a"
expect_eq "lock file of the next agent" "$(head -1 "$ST/lock")" "pid $second"
grep -q "task $id.0 (epoch [0-9]*) adopted" "$TEST_TMP/agent-node-a.log" ||
	fail "the next agent did not adopt $id.0: $(tail -5 "$TEST_TMP/agent-node-a.log")"
touch "$TEST_TMP/out/release"
wait_job "$id" succeeded 20

# a clean stop empties the file: nobody is named as running
stop_agent node-a
expect_eq "lock file after a clean stop" "$(wc -c <"$ST/lock")" 0
echo "ok agent_state_lock: a second agent refused (exit 2) naming pid $first; the next one after SIGKILL adopted $id.0"
