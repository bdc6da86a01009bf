# cp_server_kill.sh: the server killed with SIGKILL during a burst of
# submits loses none that were answered 201, and after a restart on the
# same state every job is where it was: running jobs still running (the
# same processes, reconciled with the agents), finished ones finished,
# pending ones pending; ids are never reused.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

# Jobs in every state before the burst.
pod_yaml done 1 "true" >"$TEST_TMP/done.yaml"
done_id=$(submit "$TEST_TMP/done.yaml")
wait_job "$done_id" succeeded 60
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
r1=$(submit "$TEST_TMP/hold.yaml")
r2=$(submit "$TEST_TMP/hold.yaml")
wait_job "$r1" running 60
wait_job "$r2" running 60
wait_until 10 sh -c "[ \$(ls $TEST_TMP/pids/hold-* 2>/dev/null | wc -l) -eq 2 ]" || fail "the holders did not start"
hold_pids=$(cat "$TEST_TMP"/pids/hold-*)
cancelled_id=$(submit "$TEST_TMP/hold.yaml")
"$DROVER" cancel "$cancelled_id" >/dev/null || fail "cancel"
"$DROVER" get jobs -o json | python3 -c '
import json,sys
for j in json.load(sys.stdin)["items"]:
    print(j["id"], j["state"], j["nodelist"])' | sort -n >"$TEST_TMP/before.txt"
cat "$TEST_TMP/before.txt"

# The burst: 8 clients submitting 1-GPU jobs (they stay pending: the nodes
# are full), each recording the ids it was answered (201, exit 0).
pod_yaml burst 1 "true" >"$TEST_TMP/burst.yaml"
for c in 1 2 3 4 5 6 7 8; do
	(
		n=0
		while [ $n -lt 400 ]; do
			id=$("$DROVER" submit --parsable "$TEST_TMP/burst.yaml" 2>>"$TEST_TMP/burst-$c.err") || break
			echo "$id" >>"$TEST_TMP/answered-$c"
			n=$((n + 1))
		done
	) &
	track $!
	clients="${clients:-} $!"
done
wait_until 30 sh -c "[ \$(cat $TEST_TMP/answered-* 2>/dev/null | wc -l) -ge 40 ]" || fail "the burst did not get going"
stop_server KILL
wait $clients # the clients stop at their first failed submit
answered=$(cat "$TEST_TMP"/answered-* | sort -n)
count=$(echo "$answered" | wc -l)
echo "answered 201 before the kill: $count"
grep -h . "$TEST_TMP"/burst-*.err | sort | uniq -c | head -5

# Restart on the same state.
restarted=$(date -u +%s)
start_server
echo "$answered" >"$TEST_TMP/answered.txt"
"$DROVER" get jobs -o json >"$TEST_TMP/after.json" || fail "get jobs after the restart"
python3 - "$TEST_TMP/answered.txt" "$TEST_TMP/after.json" <<'PY' || fail "jobs answered 201 are lost or not pending"
import json, sys
answered = [int(x) for x in open(sys.argv[1]).read().split()]
jobs = {j["id"]: j["state"] for j in json.load(open(sys.argv[2]))["items"]}
bad = [(i, jobs.get(i, "MISSING")) for i in answered if jobs.get(i) != "pending"]
print("answered %d, lost or moved %d: %s" % (len(answered), len(bad), bad[:10]))
sys.exit(1 if bad else 0)
PY

# Every job that existed before the burst is where it was.
"$DROVER" get jobs -o json | python3 -c '
import json,sys
for j in json.load(sys.stdin)["items"]:
    print(j["id"], j["state"], j["nodelist"])' | sort -n >"$TEST_TMP/after.txt"
while read -r id st nl; do
	grep -qx "$id $st $nl" "$TEST_TMP/after.txt" || fail "job $id was '$st $nl', now '$(grep "^$id " "$TEST_TMP/after.txt")'"
done <"$TEST_TMP/before.txt"
for p in $hold_pids; do
	pid_alive "$p" || fail "a running job's process $p died across the server restart"
done
# The agents come back to the new server (a heartbeat after the restart);
# the running jobs stay running, their processes untouched.
heartbeat_since_restart() {
	"$DROVER" get node "$1" -o json | python3 -c "
import json,sys,calendar,time
n=json.load(sys.stdin)
hb=n.get('last_heartbeat')
ok = n['state'] == 'up' and hb and calendar.timegm(time.strptime(hb, '%Y-%m-%dT%H:%M:%SZ')) > $restarted
sys.exit(0 if ok else 1)"
}
wait_until 30 heartbeat_since_restart node-a || fail "node-a's agent did not come back to the restarted server"
wait_until 30 heartbeat_since_restart node-b || fail "node-b's agent did not come back to the restarted server"
sleep 2
expect_eq "holder 1 after agents re-registered" "$(jf "$r1" 'j["state"]')" "running"
expect_eq "holder 2 after agents re-registered" "$(jf "$r2" 'j["state"]')" "running"
for p in $hold_pids; do
	pid_alive "$p" || fail "a running job's process $p was killed when the agents re-registered"
done
# ids are never reused
max=$(echo "$answered" | tail -1)
new=$(submit "$TEST_TMP/burst.yaml")
[ "$new" -gt "$max" ] || fail "new job id $new is not above the last answered id $max"
echo "ok: $count answered submits survived SIGKILL; every job where it was"
