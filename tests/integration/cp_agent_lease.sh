# cp_agent_lease.sh: fencing both ways when an agent is cut off. The agent
# of one node of a running gang is SIGSTOPped (a partition, as the node
# sees it): the controller marks the node down after heartbeat_timeout_s
# but keeps the gang's GPUs, saying why, until agent_lease_s + 5 s after
# its last reply there; meanwhile the frozen agent cannot act, so its
# tasks' shims stop them when the lease runs out. The gang then restarts
# under a new epoch, and the tasks' own timestamps show that no copy of
# the old start ran once a copy of the new one had begun. When the agent
# thaws, nothing of the old start comes back.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "heartbeat_timeout_s: 3" "agent_lease_s: 6"
start_server
start_agent node-a
start_agent node-b
start_agent node-c

# each copy beats into out/beat-TASK-EPOCH every 0.1 s
beat='while :; do date +%s.%N >>'"$TEST_TMP"'/out/beat-$DROVER_TASK_ID-$DROVER_EPOCH; sleep 0.1; done'
gang_yaml gang 8 "$beat" >"$TEST_TMP/gang.yaml"
id=$(submit "$TEST_TMP/gang.yaml")
wait_job "$id" running 60
wait_until 10 sh -c "[ \$(ls $TEST_TMP/out/beat-* 2>/dev/null | wc -l) -eq 2 ]" || fail "both tasks did not start"
victim=$(jf "$id" 'j["placement"][0]["node"]')
e1=$(ls "$TEST_TMP"/out/ | sed -n 's/^beat-.*-\([0-9]*\)$/\1/p' | head -1)
eval "vpid=\$AGENT_PID_$(_lib_agent_var "$victim")"
kill -STOP "$vpid"
on_exit "kill -CONT $vpid 2>/dev/null"
stopped=$(date +%s)
echo "gang $id (epoch $e1): froze the agent of $victim"

wait_until 10 node_is "$victim" down || fail "node $victim not marked down"
expect_eq "job while the lease may hold" "$(jf "$id" 'j["state"] + " " + str(j["attempt"])')" "running 1"
jf "$id" 'j["reason"]' | grep -q "GPUs stay held" || fail "no reason while waiting: $(jf "$id" 'j["reason"]')"
restarted() { [ "$(jf "$id" 'j["state"] + " " + str(j["attempt"])' 2>/dev/null)" = "running 2" ]; }
wait_until 30 restarted || { "$DROVER" describe job "$id" >&2; fail "gang $id was not restarted"; }
waited=$(($(date +%s) - stopped))
[ "$waited" -ge 6 ] || fail "restarted $waited s after the agent froze: inside its 6 s lease"
wait_until 10 sh -c "[ \$(ls $TEST_TMP/out/ | grep -vc -- '-$e1\$') -eq 2 ]" || fail "the restart did not start two tasks"
sleep 1

# no overlap: every old copy's last beat before any new copy's first
python3 - "$TEST_TMP/out" "$e1" <<'PY' || fail "old and new copies of the gang overlapped"
import os, sys
d, e1 = sys.argv[1], sys.argv[2]
old, new = [], []
for f in os.listdir(d):
    if not f.startswith("beat-"):
        continue
    ts = [float(x) for x in open(os.path.join(d, f)).read().split()]
    (old if f.endswith("-" + e1) else new).append((f, ts[0], ts[-1]))
last_old = max(t[2] for t in old)
first_new = min(t[1] for t in new)
print("old copies ended by %.2f, new ones began at %.2f: gap %.2f s (overlap %.2f s)" %
      (last_old, first_new, first_new - last_old, max(0.0, last_old - first_new)))
sys.exit(0 if last_old < first_new else 1)
PY
grep -h . "$TEST_TMP"/agent-"$victim"/tasks/*/*.status | grep -q "lease ran out" ||
	fail "the frozen agent's task was not stopped by its shim for the lease"

# the agent thaws: it registers again; nothing old restarts, the job goes on
kill -CONT "$vpid"
wait_until 20 node_is "$victim" up || fail "node $victim did not come back"
sleep 2
n_old=$(ls "$TEST_TMP"/out/ | grep -c -- "-$e1\$")
expect_eq "copies of the old start" "$n_old" 2
expect_eq "job after the agent thawed" "$(jf "$id" 'j["state"] + " " + str(j["attempt"])')" "running 2"
echo "frozen agent fenced by its shims; gang restarted after $waited s with no overlap"

# --- frozen past its lease but thawed before the controller gave up on it:
# the task its shim stopped is reported fenced; the job is requeued (the
# node was lost), not failed as if the task had failed
pod_yaml solo 8 "$beat" >"$TEST_TMP/solo.yaml"
sid=$(submit "$TEST_TMP/solo.yaml")
wait_job "$sid" running 30
node=$(jf "$sid" 'j["placement"][0]["node"]')
eval "spid=\$AGENT_PID_$(_lib_agent_var "$node")"
kill -STOP "$spid"
on_exit "kill -CONT $spid 2>/dev/null"
sleep 7.5
kill -CONT "$spid"
requeued() { [ "$(jf "$sid" 'str(j["attempt"]) + " " + j["state"]' 2>/dev/null)" = "2 running" ]; }
wait_until 30 requeued || { "$DROVER" describe job "$sid" >&2; fail "job $sid was not requeued after its node's lease ran out"; }
why=$(jf "$sid" '[e["reason"] for e in j["events"] if e["to"] == "pending"][-1]')
echo "job $sid requeued: $why"
case "$why" in *"lease ran out"* | *"past its agent's lease"*) ;; *) fail "requeue reason: $why" ;; esac
echo "ok: frozen agents fenced by their shims; no overlap, and no job failed for it"
