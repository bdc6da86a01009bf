# ha_failover.sh: two controllers on one real PostgreSQL (pglib.sh) with
# leader_lease_s 2, two agents and a submit churn; the leader SIGKILLed 5
# times (each time started again, as a standby). Each time the standby leads
# within 5 s; no job answered 201 is lost; the running tasks are never
# restarted (the same processes, attempt 1); the standby answers /healthz
# and /metrics itself and every other route with 307 to the leader. Then a
# leader SIGSTOPped past its lease is deposed: resumed, it answers no write
# (the database refuses them) and exits.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
. "$ROOT/tests/integration/pglib.sh"
pg_start
cp_setup "store: $PG_URL" "store_password_file: $PG_PASSWORD_FILE" "leader_lease_s: 2"

PORT_A=$(free_port)
PORT_B=$(free_port)
URL_A="http://127.0.0.1:$PORT_A"
URL_B="http://127.0.0.1:$PORT_B"
# start_ctl A|B: that controller, its own state directory, log ctl-X.log
start_ctl() {
	eval "_p=\$PORT_$1"
	"$DROVER" server --listen "127.0.0.1:$_p" --state "$TEST_TMP/state-$1" --config "$SERVER_CONFIG" \
		>>"$TEST_TMP/ctl-$1.log" 2>&1 9>&- &
	eval "PID_$1=$!"
	track $!
	wait_until 20 curl -fsS -m 2 "http://127.0.0.1:$_p/healthz" || fail "controller $1 did not answer"
}
role_of() {
	curl -sS -m 2 "$1/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["role"])' 2>/dev/null
}
# leads and serves (not still loading); each probe is logged in probe.log
is_leader() {
	_r=$(curl -sS -m 2 -w " %{http_code} %{time_total}" "$1/healthz" 2>&1)
	echo "$(date -u +%T.%N) $1 $_r" >>"$TEST_TMP/probe.log"
	case $_r in *'"status":"ok"'*'"role":"leader"'*) return 0 ;; esac
	return 1
}

start_ctl A
wait_until 10 is_leader "$URL_A" || fail "the first controller does not lead"
start_ctl B
expect_eq "the second controller's role" "$(role_of "$URL_B")" standby
grep -q "role standby" "$TEST_TMP/ctl-B.log" || fail "drover server did not print its role"

# The standby: /healthz 200 with role and term, /metrics with only the HA
# series, everything else 307 to the leader (query kept).
curl -sS "$URL_B/healthz" | python3 -c '
import json,sys; h=json.load(sys.stdin)
assert h["role"] == "standby" and h["term"] == 1 and h["store"] == "postgres", h' || fail "standby /healthz"
curl -sS "$URL_B/metrics" >"$TEST_TMP/standby.metrics"
grep -q '^drover_controller_role{role="standby"} 1' "$TEST_TMP/standby.metrics" || fail "standby role metric"
grep -q '^drover_controller_term 1' "$TEST_TMP/standby.metrics" || fail "standby term metric"
grep -q '^drover_jobs' "$TEST_TMP/standby.metrics" && fail "the standby exports job metrics (dashboards would count twice)"
curl -sS -o /dev/null -D "$TEST_TMP/307.h" -H "Authorization: Bearer $ADMIN_TOKEN" "$URL_B/v1/jobs?limit=2&user=a%20b"
head -1 "$TEST_TMP/307.h" | grep -q " 307" || fail "the standby answered $(head -1 "$TEST_TMP/307.h"), not 307"
grep -qi "^Location: $URL_A/v1/jobs?limit=2&user=a%20b" "$TEST_TMP/307.h" || fail "307 Location: $(grep -i location "$TEST_TMP/307.h")"
curl -sS "$URL_A/metrics" | grep -q '^drover_controller_role{role="leader"} 1' || fail "leader role metric"

# Clients and agents know both controllers.
export DROVER_SERVER="$URL_B,$URL_A"   # the standby first: the client follows the 307
AGENT_SERVER="$URL_A,$URL_B"
start_agent node-a
start_agent node-b
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
r1=$(submit "$TEST_TMP/hold.yaml")
r2=$(submit "$TEST_TMP/hold.yaml")
wait_job "$r1" running 60
wait_job "$r2" running 60
wait_until 10 sh -c "[ \$(ls $TEST_TMP/pids/hold-* 2>/dev/null | wc -l) -eq 2 ]" || fail "the holders did not start"
hold_pids=$(cat "$TEST_TMP"/pids/hold-*)

# The churn: 4 clients submitting 1-GPU jobs (pending: the nodes are full)
# until told to stop, each recording the ids answered 201.
pod_yaml churn 1 "true" >"$TEST_TMP/churn.yaml"
for c in 1 2 3 4; do
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
wait_until 30 sh -c "[ \$(cat $TEST_TMP/answered-* 2>/dev/null | wc -l) -ge 20 ]" || fail "the churn did not get going"

leader=A standby=B
: >"$TEST_TMP/takeovers"
for round in 1 2 3 4 5; do
	eval "lpid=\$PID_$leader surl=\$URL_$standby"
	before=$(cat "$TEST_TMP"/answered-* | wc -l)
	kill -KILL "$lpid"
	t0=$(date +%s.%N)
	echo "round $round: SIGKILL $leader at $(date -u +%T.%N)"
	wait_until 15 is_leader "$surl" || fail "round $round: $standby did not take over within 15 s"
	t1=$(date +%s.%N)
	took=$(python3 -c "print('%.2f' % ($t1 - $t0))")
	echo "$took" >>"$TEST_TMP/takeovers"
	echo "round $round: $leader SIGKILLed, $standby leads after $took s"
	python3 -c "import sys; sys.exit(0 if $took <= 5 else 1)" || { tail -40 "$TEST_TMP/probe.log" | cut -c1-200; fail "round $round: takeover took $took s (bound: 5 s with leader_lease_s 2)"; }
	wait "$lpid" 2>/dev/null
	start_ctl "$leader"
	expect_eq "round $round: the restarted controller's role" "$(role_of "$(eval echo \$URL_$leader)")" standby
	wait_until 20 sh -c "[ \$(cat $TEST_TMP/answered-* | wc -l) -gt $((before + 5)) ]" ||
		fail "round $round: the churn did not resume on the new leader"
	_t=$leader leader=$standby standby=$_t
done
touch "$TEST_TMP/stop-churn"
wait $clients

answered=$(cat "$TEST_TMP"/answered-* | sort -n)
echo "$answered" >"$TEST_TMP/answered.txt"
"$DROVER" get jobs -o json >"$TEST_TMP/after.json" || fail "get jobs after the failovers"
python3 - "$TEST_TMP/answered.txt" "$TEST_TMP/after.json" <<'PY' || fail "jobs answered 201 are lost"
import json, sys
answered = [int(x) for x in open(sys.argv[1]).read().split()]
jobs = {j["id"]: j["state"] for j in json.load(open(sys.argv[2]))["items"]}
lost = [i for i in answered if i not in jobs]
dup = len(answered) - len(set(answered))
print("answered 201: %d, lost: %d %s, answered twice: %d" % (len(answered), len(lost), lost[:10], dup))
sys.exit(1 if lost or dup else 0)
PY
for p in $hold_pids; do
	pid_alive "$p" || fail "a running task ($p) died across the failovers"
done
expect_eq "holder 1's state" "$(jf "$r1" 'j["state"]')" running
expect_eq "holder 1's attempt" "$(jf "$r1" 'j["attempt"]')" 1
expect_eq "holder 2's attempt" "$(jf "$r2" 'j["attempt"]')" 1
expect_eq "holder tasks started" "$(cat "$TEST_TMP"/out/hold-started | wc -l)" 2
python3 -c '
import sys
t = sorted(float(x) for x in open(sys.argv[1]).read().split())
print("takeover s over %d failovers: p50 %.2f, max %.2f" % (len(t), t[len(t)//2], t[-1]))' "$TEST_TMP/takeovers"
eval "surl=\$URL_$standby lurl=\$URL_$leader"
curl -sS "$lurl/metrics" >"$TEST_TMP/leader.metrics"
grep -q "^drover_controller_failovers_total [1-9]" "$TEST_TMP/leader.metrics" || fail "failovers metric"

# A deposed leader: SIGSTOPped past its lease, the standby takes over; a
# submit sent to the stopped one meanwhile is never answered 201, and once
# resumed it logs its deposition and exits 1.
eval "lpid=\$PID_$leader"
term_before=$(curl -sS "$lurl/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["term"])')
kill -STOP "$lpid"
wait_until 15 is_leader "$surl" || { kill -CONT "$lpid"; fail "the standby did not take over from a stopped leader"; }
curl -sS -m 20 -o "$TEST_TMP/deposed.body" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
	-H 'Content-Type: application/yaml' --data-binary @"$TEST_TMP/churn.yaml" "$lurl/v1/jobs" \
	>"$TEST_TMP/deposed.code" 2>/dev/null &
curl_pid=$!
sleep 0.5
kill -CONT "$lpid"
wait "$curl_pid"
code=$(cat "$TEST_TMP/deposed.code")
[ "$code" = 201 ] && fail "the deposed leader answered a submit 201: $(cat "$TEST_TMP/deposed.body")"
wait_until 10 sh -c "! kill -0 $lpid 2>/dev/null" || fail "the deposed leader did not exit"
wait "$lpid"
expect_eq "the deposed leader's exit status" "$?" 1
grep -q "deposed: " "$TEST_TMP/ctl-$leader.log" || fail "no deposition in the log"
term_after=$(curl -sS "$surl/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["term"])')
[ "$term_after" -gt "$term_before" ] || fail "the term did not grow ($term_before -> $term_after)"
echo "deposed leader: its submit got HTTP ${code:-nothing}; it exited 1; term $term_before -> $term_after"
