# cp_pod_nocommand.sh: the seed's Pod manifest, unmodified, is accepted; it
# names an image and no command, so it needs a container runtime: on nodes
# whose agents run --runtime host it stays pending with reason code
# RuntimeUnavailable and a reason that says so (never silently, never
# failed), holding no GPUs. (container_podman.sh runs it on a podman node.)
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

pod="$ROOT/examples/jobs/training-job.yaml"
[ -f "$pod" ] || fail "$pod is missing"
id=$(submit "$pod")
wait_until 10 sh -c "[ \"\$('$DROVER' get job $id -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"reason_code\"])')\" = RuntimeUnavailable ]" ||
	{ "$DROVER" describe job "$id" >&2; fail "job $id is not pending with RuntimeUnavailable"; }
sleep 2   # a few scheduling passes: it stays so
expect_eq "state" "$(jf "$id" 'j["state"]')" "pending"
expect_eq "reason_code" "$(jf "$id" 'j["reason_code"]')" "RuntimeUnavailable"
expect_eq "name" "$(jf "$id" 'j["name"]')" "training-job"
expect_eq "image" "$(jf "$id" 'j["image"]')" "pytorch/pytorch:2.4-cuda12.4"
expect_eq "runtime" "$(jf "$id" 'j["runtime"]')" "podman"
expect_eq "gpus" "$(jf "$id" 'int(j["gpus"])')" "8"
reason=$(jf "$id" 'j["reason"]')
case "$reason" in *"needs a container runtime"*"--runtime host"*) ;; *) fail "reason '$reason' does not say it needs a container runtime" ;; esac
# the client shows it too
"$DROVER" describe job "$id" >"$TEST_TMP/describe.txt" || fail "describe failed"
grep -q "needs a container runtime" "$TEST_TMP/describe.txt" || fail "describe does not show the reason"
grep -q "NCCL_IB_DISABLE=0" "$TEST_TMP/describe.txt" || fail "describe does not show the env"
# the nodes say which runtime they run
expect_eq "node runtime label" "$("$DROVER" get node node-a -o json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["labels"]["drover.io/runtime"])')" "host"
# nothing is held
for n in node-a node-b; do
	expect_eq "$n GPUs free" "$("$DROVER" get node $n -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus_free"])')" "8"
done
"$DROVER" cancel "$id" >/dev/null || fail "cancel failed"
wait_job "$id" cancelled 10
echo "ok: job $id pending with RuntimeUnavailable: $reason"
