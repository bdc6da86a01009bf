# k8s_topology.sh: Kueue's topology annotations through the cluster file's
# levelLabels. A site labels its InfiniBand switches example.com/ib-switch;
# the cluster file says that label is its leaf level. A 2-pod gang that
# requires that label is placed under one switch by drover place, a 3-pod
# one never fits under one (2-node) switch and says so, a server with the
# file accepts the job, and a label no level carries is refused at submit
# with the reason.
# Kueue's slices: a gang cut by podset-slice-required-topology on that
# label and podset-slice-size 2 puts each pair of pods under one switch
# while the gang spans both (drover place); on the server with an agent per
# node, two free nodes on different switches leave a sliced pair pending
# with a reason naming the level, and once a switch is free both pods run
# on it.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cd "$TEST_TMP"
cat >cl.yaml <<'Y'
kind: Cluster
name: two-switches
levels: [pool, leaf, node]
levelLabels:
  leaf: example.com/ib-switch
topology:
  - name: dc
    children:
      - name: sw{i}
        count: 2
        children:
          - name: "{parent}-n{i}"
            count: 2
            gpus: 8
            gpuModel: H100
            cpu: 64
            memory: 512Gi
Y
gang() {
	cat <<Y
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ring
  annotations:
    kueue.x-k8s.io/podset-required-topology: $1
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: c, image: i, command: ["true"], resources: {limits: {nvidia.com/gpu: 8}}}]
Y
}
gang example.com/ib-switch >ring.yaml
"$DROVER" validate ring.yaml >/dev/null 2>v.err || fail "validate: $(cat v.err)"
grep -q "must name it in levelLabels" v.err || fail "no warning about the label: $(cat v.err)"
"$DROVER" place --cluster cl.yaml ring.yaml >p.out 2>&1 || fail "place: $(cat p.out)"
expect_eq "switches used" "$(cut -d- -f1 p.out | sort -u | wc -l)" "1"
# three tasks of 8 GPUs cannot be under one switch of two nodes: never
sed 's/replicas: 2/replicas: 3/' ring.yaml >ring3.yaml
if "$DROVER" place --cluster cl.yaml ring3.yaml >p3.out 2>&1; then
	fail "3 x 8 GPUs placed under one 2-node switch: $(cat p3.out)"
fi
grep -q "under one leaf" p3.out || fail "the reason does not name the level: $(cat p3.out)"

cp_setup
start_server --cluster "$TEST_TMP/cl.yaml"
id=$(submit ring.yaml)
expect_eq "job's level" "$(jf "$id" 'j["spec"]["topology"]["level"]')" "example.com/ib-switch"
gang example.com/fabric-unit >bad.yaml
if "$DROVER" submit bad.yaml >bad.out 2>&1; then fail "a label no level carries was accepted"; fi
grep -q "topology label example.com/fabric-unit names no level of the cluster" bad.out ||
	fail "refusal: $(cat bad.out)"

# --- slices -------------------------------------------------------------
sliced() { # NAME REPLICAS SIZE
	cat <<Y
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: $1
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: $2
      template:
        metadata:
          annotations:
            kueue.x-k8s.io/podset-slice-required-topology: example.com/ib-switch
            kueue.x-k8s.io/podset-slice-size: "$3"
        spec:
          containers: [{name: c, image: i, command: ["sh", "-c", "exec sleep 300"], resources: {limits: {nvidia.com/gpu: 8}}}]
Y
}
sliced pairs 4 2 >pairs.yaml
"$DROVER" place --cluster cl.yaml pairs.yaml >pp.out 2>&1 || fail "place pairs: $(cat pp.out)"
expect_eq "pairs: switch of each task" "$(cut -d- -f1 pp.out | tr '\n' ' ')" "sw1 sw1 sw2 sw2 "
sliced uneven 4 3 >uneven.yaml
if "$DROVER" validate uneven.yaml >u.out 2>&1; then fail "a slice size of 3 for 4 pods was accepted"; fi
grep -q 'podset-slice-size"\]: found 3, expected a size that divides the job.s 4 pods' u.out ||
	fail "uneven slices: $(cat u.out)"

"$DROVER" cancel "$id" >/dev/null || fail "cancel the ring job"
for n in sw1-n1 sw1-n2 sw2-n1 sw2-n2; do start_agent "$n" 8xH100; done
# blockers on the first node of each switch (sbatch -w names the node)
printf '#!/bin/sh\n#SBATCH -w sw1-n1 --gres=gpu:8\nexec sleep 300\n' >b1.sh
printf '#!/bin/sh\n#SBATCH -w sw2-n1 --gres=gpu:8\nexec sleep 300\n' >b2.sh
b1=$(submit b1.sh)
b2=$(submit b2.sh)
wait_job "$b1" running 30
wait_job "$b2" running 30
expect_eq "blockers' nodes" "$(jf "$b1" 'j["placement"][0]["node"]') $(jf "$b2" 'j["placement"][0]["node"]')" \
	"sw1-n1 sw2-n1"
# 16 GPUs free, 8 under each switch: a pair that must share a switch waits
sliced pair 2 2 >pair.yaml
pid=$(submit pair.yaml)
wait_until 20 sh -c "\"$DROVER\" get job $pid -o json | grep -q 'within one leaf'" ||
	fail "the pending pair's reason: $(jf "$pid" 'j["state"], j.get("reason"), j.get("placement")') b1 $(jf "$b1" 'j["placement"]') b2 $(jf "$b2" 'j["placement"]')"
expect_eq "pair state" "$(jf "$pid" 'j["state"]')" "pending"
expect_eq "pair reason" "$(jf "$pid" 'j["reason"]')" \
	"needs 16 GPUs in slices of 2 tasks, each within one leaf; 16 GPUs free in all, not together"
"$DROVER" cancel "$b2" >/dev/null || fail "cancel b2"
wait_job "$pid" running 30
expect_eq "pair's nodes" "$(jf "$pid" '",".join(sorted(p["node"] for p in j["placement"]))')" "sw2-n1,sw2-n2"
echo "ok: a Kueue topology label maps to the level the cluster file names; slices stay under one"
