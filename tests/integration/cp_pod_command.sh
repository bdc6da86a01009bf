# cp_pod_command.sh: the seed's Pod with a command added runs under host:
# it starts on 8 GPUs of one node with CUDA_VISIBLE_DEVICES, the Pod's env
# and DROVER_IMAGE set, succeeds, and its output comes back through logs.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

pod="$ROOT/examples/jobs/training-job.yaml"
[ -f "$pod" ] || fail "$pod is missing"
# the same Pod, with a command after the image line
sed 's|^\(    image: .*\)$|\1\n    command: ["sh", "-c", "echo hello from $DROVER_JOB_ID image=$DROVER_IMAGE gpus=$CUDA_VISIBLE_DEVICES ib=$NCCL_IB_DISABLE gdr=$NCCL_NET_GDR_LEVEL; sleep 1"]|' \
	"$pod" >"$TEST_TMP/with-command.yaml"
grep -q 'command:' "$TEST_TMP/with-command.yaml" || fail "could not add a command"

id=$(submit "$TEST_TMP/with-command.yaml")
wait_job "$id" succeeded 60
expect_eq "went through running" "$(jf "$id" '[e["to"] for e in j["events"]]')" "['pending', 'scheduled', 'running', 'succeeded']"
expect_eq "placement entries" "$(jf "$id" 'len(j["placement"])')" "1"
expect_eq "GPUs placed" "$(jf "$id" 'len(j["placement"][0]["gpus"])')" "8"
expect_eq "exit code" "$(jf "$id" 'j["exit_code"]')" "0"

"$DROVER" logs "$id" >"$TEST_TMP/logs.txt" || fail "drover logs failed"
cat "$TEST_TMP/logs.txt"
grep -q "hello from $id image=pytorch/pytorch:2.4-cuda12.4" "$TEST_TMP/logs.txt" ||
	fail "logs lack the task's output with DROVER_IMAGE"
ngpu=$(sed -n 's/.*gpus=\([^ ]*\) .*/\1/p' "$TEST_TMP/logs.txt" | tr ',' '\n' | grep -c .)
expect_eq "GPUs in CUDA_VISIBLE_DEVICES" "$ngpu" "8"
grep -q "ib=0 gdr=5" "$TEST_TMP/logs.txt" || fail "the Pod's env did not reach the task"
echo "ok: job $id ran and succeeded"
