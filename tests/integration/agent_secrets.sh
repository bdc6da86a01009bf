# agent_secrets.sh: the cluster token never on a command line (CONTRACTS.md
# §6), against a real server. Checked: `drover agent --token` is an unknown
# option; a token file that group or others may read is refused (exit 2,
# naming its mode) and the agent never starts; agents start with a 0600
# token file and with DROVER_AGENT_TOKEN; the agent's command line, as `ps`
# shows it, holds no token, nor does a task's environment. And the files
# that hold secrets are their owner's alone: a task's logs (0600, created
# so), the agent's state (0600 files, 0700 directories), the controller's
# state.db with -wal and -shm
# (0600) in a 0700 state directory, an old 0644 state.db narrowed at
# start; and `drover logs` still reaches the logs through the controller.
# The agent's /v1/inventory and task logs need the cluster token (401
# without it or with another, 200 with it), /metrics and /healthz do not.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

cp_setup
start_server
ST=${SERVER_STATE:-$TEST_TMP/state}

# --token is gone: the uniform unknown-option error
"$DROVER" agent --server "$SERVER_URL" --token "$CLUSTER_TOKEN" --name old 2>"$TEST_TMP/err"
expect_eq "exit code, --token" "$?" 2
expect_eq "--token message" "$(cat "$TEST_TMP/err")" \
	"drover agent: unknown option '--token' (see drover agent --help)"

# a token file others may read: refused unread, exit 2, the mode named
cp "$CLUSTER_TOKEN_FILE" "$TEST_TMP/lax-token" && chmod 644 "$TEST_TMP/lax-token"
timeout 20 "$DROVER" agent --server "$SERVER_URL" --token-file "$TEST_TMP/lax-token" --name lax \
	--listen none --fake-gpus 1xH100 --run-as-self --state "$TEST_TMP/agent-lax" 2>"$TEST_TMP/err"
expect_eq "exit code, token file 0644" "$?" 2
grep -q "lax-token has mode 0644; a token file must be 0600 or stricter" "$TEST_TMP/err" ||
	fail "lax token file message: $(cat "$TEST_TMP/err")"
# no token at all: exit 2, saying where it comes from
timeout 20 "$DROVER" agent --server "$SERVER_URL" --name none --listen none --fake-gpus 1xH100 \
	--run-as-self --state "$TEST_TMP/agent-none" 2>"$TEST_TMP/err"
expect_eq "exit code, no token" "$?" 2
grep -q -- "--token-file FILE or DROVER_AGENT_TOKEN" "$TEST_TMP/err" ||
	fail "no token message: $(cat "$TEST_TMP/err")"

# a 0600 file (start_agent) and the environment both work
expect_eq "token file mode" "$(stat -c %a "$CLUSTER_TOKEN_FILE")" 600
start_agent file-node 2xH100
PE=$(free_port)
DROVER_AGENT_TOKEN="$CLUSTER_TOKEN" "$DROVER" agent --server "$SERVER_URL" --name env-node \
	--listen "127.0.0.1:$PE" --fake-gpus 2xH100 --run-as-self --state "$TEST_TMP/agent-env-node" \
	>>"$TEST_TMP/agent-env-node.log" 2>&1 9>&- &
ENV_PID=$!
track "$ENV_PID"
wait_until 20 node_is env-node up || { cat "$TEST_TMP/agent-env-node.log" >&2; fail "env-node did not come up"; }

# what `ps` shows of either agent holds no token
for pid in "$AGENT_PID_file_node" "$ENV_PID"; do
	cmdline=$(ps -o args= -p "$pid")
	case $cmdline in
	*"drover agent"* | *" agent "*) ;;
	*) fail "pid $pid is not an agent: $cmdline" ;;
	esac
	case $cmdline in *"$CLUSTER_TOKEN"*) fail "token on the command line: $cmdline" ;; esac
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$CLUSTER_TOKEN" && fail "token in /proc/$pid/cmdline"
done

# --- the agent's routes: inventory and logs need the cluster token
code() { # URL [TOKEN]
	if [ $# -gt 1 ]; then
		curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "$1"
	else
		curl -s -o /dev/null -w '%{http_code}' "$1"
	fi
}
AU="http://127.0.0.1:$AGENT_PORT_file_node"
expect_eq "inventory without a token" "$(code "$AU/v1/inventory")" 401
expect_eq "inventory with the admin token" "$(code "$AU/v1/inventory" "$ADMIN_TOKEN")" 401
expect_eq "inventory with a longer token" "$(code "$AU/v1/inventory" "${CLUSTER_TOKEN}x")" 401
expect_eq "inventory with the cluster token" "$(code "$AU/v1/inventory" "$CLUSTER_TOKEN")" 200
expect_eq "logs without a token" "$(code "$AU/v1/tasks/1.0/logs")" 401
expect_eq "metrics open" "$(code "$AU/metrics")" 200
expect_eq "healthz open" "$(code "$AU/healthz")" 200
expect_eq "env-node inventory with the cluster token" \
	"$(code "http://127.0.0.1:$PE/v1/inventory" "$CLUSTER_TOKEN")" 200

# a task of the agent that read DROVER_AGENT_TOKEN does not inherit it
printf '#!/bin/sh\n#SBATCH -w env-node\nenv >%s\n' "$TEST_TMP/env-node.env" >"$TEST_TMP/env.sh"
je=$(submit "$TEST_TMP/env.sh")
wait_job "$je" succeeded 30
grep -q '^PATH=' "$TEST_TMP/env-node.env" || fail "the task's env was not written"
grep -q -- "$CLUSTER_TOKEN" "$TEST_TMP/env-node.env" && fail "the cluster token is in a task's environment"
grep -q '^DROVER_AGENT_TOKEN=' "$TEST_TMP/env-node.env" && fail "DROVER_AGENT_TOKEN is in a task's environment"

# --- modes: a task's logs, the agent's state, the controller's store
mode() { stat -c %a "$1"; }
pod_yaml hello 1 "echo hello; echo oops >&2" >"$TEST_TMP/hello.yaml"
j=$(submit "$TEST_TMP/hello.yaml")
wait_job "$j" succeeded 30
expect_eq "drover logs through the controller" "$("$DROVER" logs "$j")" "hello"
AS="$TEST_TMP/agent-file-node"
task=$(ls "$AS/tasks" | head -1)
[ -n "$task" ] || fail "no task directory under $AS/tasks"
expect_eq "stdout log mode" "$(mode "$AS/tasks/$task/$task.out")" 600
expect_eq "stderr log mode" "$(mode "$AS/tasks/$task/$task.err")" 600
expect_eq "task directory mode" "$(mode "$AS/tasks/$task")" 700
expect_eq "agent tasks/ mode" "$(mode "$AS/tasks")" 700
expect_eq "agent state directory mode" "$(mode "$AS")" 700
# the exactly-once journal (src/agent/agent_journal.c) and the task
# shim's pid and status files (src/agent/shim.c)
expect_eq "agent journal mode" "$(mode "$AS/journal")" 600
for kind in pid status; do
	set -- "$AS/tasks/$task/$task".*."$kind"
	[ -e "$1" ] || fail "no shim $kind file in $AS/tasks/$task"
	expect_eq "shim $kind file mode" "$(mode "$1")" 600
done
expect_eq "state directory mode" "$(mode "$ST")" 700
for f in state.db state.db-wal state.db-shm; do
	[ -e "$ST/$f" ] || fail "no $SERVER_STATE/$f"
	expect_eq "$f mode" "$(mode "$ST/$f")" 600
done
# a state.db from before (0644) is narrowed when the controller opens it
stop_server
chmod 644 "$ST/state.db"
start_server
expect_eq "old state.db narrowed" "$(mode "$ST/state.db")" 600
echo "ok: agent secrets"
