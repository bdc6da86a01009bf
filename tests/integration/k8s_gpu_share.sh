# k8s_gpu_share.sh: a share of one GPU asked for by memory (KAI's
# gpu-memory annotation) runs on a GPU, never on none: on an 8 x H100 node
# a 40000 MiB share is placed on one GPU as 489 milli-GPUs
# (ceil(1000 x 40000 / 81920)) and its task sees that GPU; three such
# shares do not fit one GPU's memory, so they spread; a share larger than
# any GPU of the cluster is refused at submit with the reason. GPU models
# by name: A4000 (--gres=gpu:A4000:1) runs on a node of RTX A4000s; a
# model the catalog lacks is valid with a warning, refused at submit.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 8xH100
OUT=$TEST_TMP/out
cd "$TEST_TMP"

share_pod() {
	cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations:
    gpu-memory: "$2"
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "echo \$CUDA_VISIBLE_DEVICES >$OUT/$1; sleep 300"]
YAML
}
ids=""
for n in s1 s2 s3; do
	share_pod $n 40000 >$TEST_TMP/$n.yaml
	ids="$ids $(submit $TEST_TMP/$n.yaml)"
done
for id in $ids; do
	wait_job "$id" running 60
	expect_eq "job $id: one GPU, 489 milli" "$(jf "$id" 'len(j["placement"][0]["gpus"]), j["gpus"]')" "1 0.489"
done
wait_until 10 sh -c "[ -s $OUT/s1 ] && [ -s $OUT/s2 ] && [ -s $OUT/s3 ]" || fail "a share saw no GPU"
# two 40000 MiB shares fit one 81920 MiB GPU, a third does not
expect_eq "distinct GPUs" "$(sort -u $OUT/s1 $OUT/s2 $OUT/s3 | wc -l)" "2"

share_pod big 100000 >$TEST_TMP/big.yaml
if "$DROVER" submit $TEST_TMP/big.yaml >$TEST_TMP/big.out 2>&1; then
	fail "a 100000 MiB share was accepted on 80 GiB GPUs"
fi
grep -q "needs 100000 MiB of one GPU's memory; the largest GPU (H100) has 80 GiB" $TEST_TMP/big.out ||
	fail "refusal lacks the reason: $(cat $TEST_TMP/big.out)"
for id in $ids; do "$DROVER" cancel "$id" >/dev/null; done

# GPU models by name: --gres=gpu:A4000:1 is refused while no node has one,
# runs once a node with RTX A4000s joins; a model the catalog does not know
# is valid to write but refused at submit, with that reason.
A4=$ROOT/tests/golden/spec/gres-a4000.sbatch
if "$DROVER" submit "$A4" >a4.out 2>&1; then fail "an A4000 job was accepted with no A4000 node"; fi
grep -q "needs A4000; the cluster has only H100" a4.out || fail "A4000 refusal: $(cat a4.out)"
start_agent node-w 2xA4000
a4=$(submit "$A4")
wait_job "$a4" succeeded 60
expect_eq "A4000 job's node" "$(jf "$a4" 'j["placement"][0]["node"], j["gpu_model"]')" "node-w RTX-A4000"
NEW=$ROOT/tests/golden/spec/unknown-gpu-model.yaml
"$DROVER" validate "$NEW" >/dev/null 2>new.err || fail "an unknown model is not valid: $(cat new.err)"
grep -q "warning: .*not in drover's catalog" new.err || fail "no warning: $(cat new.err)"
if "$DROVER" submit "$NEW" >new.out 2>&1; then fail "a job for an unknown model was accepted"; fi
grep -q "needs GPU model NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition; no node of the cluster has it" new.out ||
	fail "unknown model refusal: $(cat new.out)"
echo "ok: shares by memory ran on GPUs, 489 milli each, the too-big one was refused; A4000 by name"
