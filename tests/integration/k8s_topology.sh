# k8s_topology.sh: Kueue's topology annotations through the cluster file's
# levelLabels. A site labels its InfiniBand switches example.com/ib-switch;
# the cluster file says that label is its leaf level. A 2-pod gang that
# requires that label is placed under one switch by drover place, a 3-pod
# one never fits under one (2-node) switch and says so, a server with the
# file accepts the job, and a label no level carries is refused at submit
# with the reason.
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
echo "ok: a Kueue topology label maps to the level the cluster file names"
