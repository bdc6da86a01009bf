# cp_pod_nocommand.sh: the seed's Pod manifest, unmodified, is accepted,
# placed on 8 GPUs of one node, and then fails under runtime host with the
# reason that its container names no command (never silently).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

pod="$ROOT/examples/jobs/training-job.yaml"
[ -f "$pod" ] || fail "$pod is missing"
id=$(submit "$pod")
wait_job "$id" failed 60

expect_eq "name" "$(jf "$id" 'j["name"]')" "training-job"
expect_eq "image" "$(jf "$id" 'j["image"]')" "pytorch/pytorch:2.4-cuda12.4"
expect_eq "runtime" "$(jf "$id" 'j["runtime"]')" "host"
expect_eq "gpus" "$(jf "$id" 'int(j["gpus"])')" "8"
# placed whole on one node, on 8 distinct GPUs
expect_eq "placement entries" "$(jf "$id" 'len(j["placement"])')" "1"
expect_eq "GPUs placed" "$(jf "$id" 'len(set(j["placement"][0]["gpus"]))')" "8"
node=$(jf "$id" 'j["placement"][0]["node"]')
case "$node" in node-a | node-b) ;; *) fail "placed on '$node'" ;; esac
expect_eq "nodelist" "$(jf "$id" 'j["nodelist"]')" "$node"
# it went through scheduled before failing
expect_eq "scheduled event" "$(jf "$id" 'any(e["to"] == "scheduled" for e in j["events"])')" "True"
# the reason says why: no command, runtime host
reason=$(jf "$id" 'j["reason"]')
case "$reason" in *"names no command"*) ;; *) fail "reason '$reason' does not say the container names no command" ;; esac
case "$reason" in *host*) ;; *) fail "reason '$reason' does not name runtime host" ;; esac
# the client shows it too
"$DROVER" describe job "$id" >"$TEST_TMP/describe.txt" || fail "describe failed"
grep -q "names no command" "$TEST_TMP/describe.txt" || fail "describe does not show the reason"
grep -q "NCCL_IB_DISABLE=0" "$TEST_TMP/describe.txt" || fail "describe does not show the env"
grep -q "GPUs 0-7" "$TEST_TMP/describe.txt" || fail "describe does not show GPUs 0-7"
# nothing stays held
wait_until 10 sh -c "[ \"\$('$DROVER' get node $node -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"gpus_free\"])')\" = 8 ]" ||
	fail "node $node did not get its 8 GPUs back"
echo "ok: job $id placed on $node:0-7 and failed: $reason"
