# ha_rolling_upgrade.sh: a rolling upgrade as docs/ha.md ("Rolling upgrade")
# tells it, across one protocol version, with tasks running throughout.
# The old release is played by this build told to speak protocol 1
# (DROVER_PROTO_VERSION=1: no "protocol" in its register answer, no check of
# the controller's version, as release 1 did); the new one speaks 2. Two
# controllers on a real PostgreSQL (pglib.sh), leader_lease_s 2, two agents
# each holding an 8-GPU task, and a submit churn all along:
#   1. the standby upgraded (SIGTERM, started new): it stands by;
#   2. the leader upgraded: SIGTERM releases its lease, the upgraded standby
#      leads at once (well inside the lease), the old agents go on syncing
#      with it (protocol 1 under 2: one apart) and keep their tasks; the old
#      leader's machine starts the new build, which stands by;
#   3. the agents upgraded one at a time (SIGTERM, started new): each
#      re-registers speaking 2 and adopts its running task.
# Then: every job answered 201 exists, none twice; the two tasks are the
# same processes, attempt 1, started once each. A peer more than one
# version apart, or below version 1, is refused with 409 naming both.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
. "$ROOT/tests/integration/pglib.sh"
pg_start
cp_setup "store: $PG_URL" "store_password_file: $PG_PASSWORD_FILE" "leader_lease_s: 2"

PORT_A=$(free_port)
PORT_B=$(free_port)
URL_A="http://127.0.0.1:$PORT_A"
URL_B="http://127.0.0.1:$PORT_B"
# start_ctl A|B OLD|NEW: that controller, the old release (protocol 1) or the new
start_ctl() {
	eval "_p=\$PORT_$1"
	if [ "$2" = OLD ]; then _v=1; else _v=; fi
	DROVER_PROTO_VERSION=$_v "$DROVER" server --listen "127.0.0.1:$_p" --state "$TEST_TMP/state-$1" \
		--config "$SERVER_CONFIG" >>"$TEST_TMP/ctl-$1.log" 2>&1 9>&- &
	eval "PID_$1=$!"
	track $!
	wait_until 20 curl -fsS -m 2 "http://127.0.0.1:$_p/healthz" || fail "controller $1 did not answer"
}
health() {
	curl -sS -m 2 "$1/healthz" | python3 -c "import json,sys; h=json.load(sys.stdin); print(h$2)" 2>/dev/null
}
is_leader() {
	[ "$(health "$1" '["role"], h["status"]')" = "leader ok" ]
}
# start_agent_as NAME OLD|NEW
start_agent_as() {
	if [ "$2" = OLD ]; then export DROVER_PROTO_VERSION=1; else unset DROVER_PROTO_VERSION; fi
	start_agent "$1"
	unset DROVER_PROTO_VERSION
}
stop_agent() {
	eval "_ap=\$AGENT_PID_$(echo "$1" | tr -c 'A-Za-z0-9\n' _)"
	kill -TERM "$_ap"
	wait "$_ap" 2>/dev/null
}
node_proto() {
	"$DROVER" get node "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["agent_protocol"])'
}
node_proto_is() {
	[ "$(node_proto "$1" 2>/dev/null)" = "$2" ] && node_is "$1" up
}
hb_of() {
	"$DROVER" get node "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_heartbeat"])'
}

# The old release everywhere.
start_ctl A OLD
wait_until 10 is_leader "$URL_A" || fail "the first controller does not lead"
start_ctl B OLD
expect_eq "B's role, protocol" "$(health "$URL_B" '["role"], h["agent_protocol"]')" "standby 1"
export DROVER_SERVER="$URL_A,$URL_B"
AGENT_SERVER="$URL_A,$URL_B"
start_agent_as node-a OLD
start_agent_as node-b OLD
expect_eq "node-a's protocol" "$(node_proto node-a)" 1
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
r1=$(submit "$TEST_TMP/hold.yaml")
r2=$(submit "$TEST_TMP/hold.yaml")
wait_job "$r1" running 60
wait_job "$r2" running 60
wait_until 10 sh -c "[ \$(ls $TEST_TMP/pids/hold-* 2>/dev/null | wc -l) -eq 2 ]" || fail "the holders did not start"
hold_pids=$(cat "$TEST_TMP"/pids/hold-*)

# The churn: 2 clients submitting until told to stop, recording the ids answered 201.
pod_yaml churn 1 "true" >"$TEST_TMP/churn.yaml"
for c in 1 2; do
	(
		while [ ! -e "$TEST_TMP/stop-churn" ]; do
			if id=$("$DROVER" submit --parsable "$TEST_TMP/churn.yaml" 2>>"$TEST_TMP/churn-$c.err"); then
				echo "$id" >>"$TEST_TMP/answered-$c"
			fi
		done
	) &
	track $!
	clients="${clients:-} $!"
done
churned() { [ "$(cat "$TEST_TMP"/answered-* 2>/dev/null | wc -l)" -ge "$1" ]; }
wait_until 30 churned 10 || fail "the churn did not get going"

# 1. The standby.
kill -TERM "$PID_B"
wait "$PID_B"
start_ctl B NEW
expect_eq "upgraded B's role, protocol" "$(health "$URL_B" '["role"], h["agent_protocol"]')" "standby 2"

# 2. The leader: its lease released, the upgraded standby leads at once.
kill -TERM "$PID_A"
t0=$(date +%s.%N)
wait_until 5 is_leader "$URL_B" || fail "the upgraded standby did not lead"
took=$(python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))")
echo "step 2: the old leader stopped, the upgraded standby leads after $took s"
wait "$PID_A"
start_ctl A NEW
expect_eq "upgraded A's role, protocol" "$(health "$URL_A" '["role"], h["agent_protocol"]')" "standby 2"
# the old agents (protocol 1) go on syncing with the new leader (2; their
# sessions are in the database, so they need not register again)
wait_until 20 node_proto_is node-a 1 || fail "old node-a is not up under the new leader (protocol $(node_proto node-a))"
wait_until 20 node_proto_is node-b 1 || fail "old node-b is not up under the new leader"
for node in node-a node-b; do
	hb=$(hb_of "$node")
	wait_until 10 sh -c "[ \"\$(\"$DROVER\" get node $node -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"last_heartbeat\"])')\" != '$hb' ]" ||
		fail "old $node does not sync with the new leader"
done
n=$(cat "$TEST_TMP"/answered-* | wc -l)
wait_until 20 churned $((n + 5)) || fail "the churn did not go on under the new leader"

# 3. The agents, one at a time, their tasks running.
for node in node-a node-b; do
	stop_agent "$node"
	start_agent_as "$node" NEW
	wait_until 20 node_proto_is "$node" 2 || fail "upgraded $node is not up speaking 2"
	for p in $hold_pids; do
		pid_alive "$p" || fail "a running task ($p) died when $node was upgraded"
	done
	echo "step 3: $node upgraded (protocol 2), the tasks running"
done
n=$(cat "$TEST_TMP"/answered-* | wc -l)
wait_until 20 churned $((n + 5)) || fail "the churn did not go on after the agents' upgrade"
touch "$TEST_TMP/stop-churn"
wait $clients

cat "$TEST_TMP"/answered-* | sort -n >"$TEST_TMP/answered.txt"
"$DROVER" get jobs -o json >"$TEST_TMP/after.json" || fail "get jobs after the upgrade"
python3 - "$TEST_TMP/answered.txt" "$TEST_TMP/after.json" <<'PY' || fail "jobs answered 201 are lost"
import json, sys
answered = [int(x) for x in open(sys.argv[1]).read().split()]
jobs = {j["id"] for j in json.load(open(sys.argv[2]))["items"]}
lost = [i for i in answered if i not in jobs]
dup = len(answered) - len(set(answered))
print("answered 201: %d, lost: %d %s, answered twice: %d" % (len(answered), len(lost), lost[:10], dup))
sys.exit(1 if lost or dup or not answered else 0)
PY
for p in $hold_pids; do
	pid_alive "$p" || fail "a running task ($p) died in the upgrade"
done
expect_eq "holder 1's state, attempt" "$(jf "$r1" 'j["state"], j["attempt"]')" "running 1"
expect_eq "holder 2's state, attempt" "$(jf "$r2" 'j["state"], j["attempt"]')" "running 1"
expect_eq "holder tasks started" "$(cat "$TEST_TMP"/out/hold-started | wc -l)" 2

# More than one version apart, or below the first: refused, naming both.
reg() {
	curl -sS -o "$TEST_TMP/reg.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $CLUSTER_TOKEN" \
		-H 'Content-Type: application/json' -d "{\"name\": \"far-box\", \"protocol\": $1}" \
		"$URL_B/v1/agent/register"
}
expect_eq "protocol 4" "$(reg 4) $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["message"])' "$TEST_TMP/reg.json")" \
	"409 node far-box: agent speaks protocol 4; this controller speaks 2 (at most one apart)"
expect_eq "protocol 0" "$(reg 0)" 409
echo "ok: controllers then agents upgraded across one protocol version; 0 jobs lost, 0 tasks twice"
