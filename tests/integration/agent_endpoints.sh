# agent_endpoints.sh: an agent's /metrics and /healthz follow the
# controller's open_endpoints, as the controller's own do (docs/agent.md,
# "Endpoints"); its inventory and task logs need the cluster token always.
# With open_endpoints: false: /metrics and /healthz answer 401 without a
# token or with a user's or admin's (which the agent does not know), 200
# with the cluster token; the agent keeps the word in its state directory,
# so after a restart it is closed before the controller answers (here: no
# controller at all); a controller with open_endpoints: true opens them
# again at the next register. Before, they were always open.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "open_endpoints: false"
start_server
start_agent node-a
AU="http://127.0.0.1:$AGENT_PORT_node_a"
code() { # URL [TOKEN]
	if [ $# -gt 1 ]; then
		curl -s -o "$TEST_TMP/body" -w '%{http_code}' -H "Authorization: Bearer $2" "$1"
	else
		curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$1"
	fi
}
wait_until 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $AU/healthz)\" = 401 ]" ||
	fail "the agent's /healthz stayed open under open_endpoints: false"
for p in /metrics /healthz; do
	expect_eq "agent $p without a token" "$(code "$AU$p")" 401
	grep -q "open_endpoints: false" "$TEST_TMP/body" || fail "the 401 of $p does not say why: $(cat "$TEST_TMP/body")"
	expect_eq "agent $p with the admin token" "$(code "$AU$p" "$ADMIN_TOKEN")" 401
	expect_eq "agent $p with the cluster token" "$(code "$AU$p" "$CLUSTER_TOKEN")" 200
done
expect_eq "agent inventory without a token" "$(code "$AU/v1/inventory")" 401
expect_eq "agent inventory with the cluster token" "$(code "$AU/v1/inventory" "$CLUSTER_TOKEN")" 200
expect_eq "agent task logs without a token" "$(code "$AU/v1/tasks/1.0/logs")" 401
expect_eq "the server's /metrics without a token" "$(code "$SERVER_URL/metrics")" 401
grep -q "/metrics and /healthz: the cluster token needed" "$TEST_TMP/agent-node-a.log" ||
	fail "the agent's log does not say its endpoints closed"
[ -e "$TEST_TMP/agent-node-a/endpoints-closed" ] || fail "the agent did not keep the word"

# restarted with no controller to ask: still closed
stop_agent node-a
stop_server
"$DROVER" agent --server "$SERVER_URL" --token-file "$CLUSTER_TOKEN_FILE" --name node-a \
	--listen "127.0.0.1:$AGENT_PORT_node_a" --fake-gpus 8xH100 --run-as-self \
	--state "$TEST_TMP/agent-node-a" >>"$TEST_TMP/agent-node-a.log" 2>&1 &
AGENT_PID_node_a=$!
track $AGENT_PID_node_a
wait_until 10 sh -c "curl -s -o /dev/null $AU/metrics" || fail "the restarted agent does not listen"
expect_eq "restarted agent /healthz without a token, no controller" "$(code "$AU/healthz")" 401
expect_eq "restarted agent /metrics with the cluster token" "$(code "$AU/metrics" "$CLUSTER_TOKEN")" 200

# a controller with open_endpoints: true opens them
cp_setup "open_endpoints: true"
start_server
wait_until 20 node_is node-a up || fail "the agent did not register again"
wait_until 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $AU/healthz)\" = 200 ]" ||
	fail "the agent's /healthz stayed closed under open_endpoints: true"
expect_eq "agent /metrics without a token" "$(code "$AU/metrics")" 200
expect_eq "agent inventory without a token, still" "$(code "$AU/v1/inventory")" 401
[ ! -e "$TEST_TMP/agent-node-a/endpoints-closed" ] || fail "the agent kept a closed word"
