# k8s_gangs.sh: a gang written for the KAI scheduler (a scheduling.run.ai
# PodGroup of minMember 2 and the two Pods whose annotation pod-group-name
# names it, 8 GPUs each) starts together or not at all: on two 8-GPU nodes
# of which one is taken neither Pod runs and the job says why; once the
# node is free both start, one per node; the same for scheduler-plugins'
# coscheduling PodGroup and its pod-group label. KAI's queue label sets the job's
# queue (its tenant). A nodeSelector on the zone label puts a Pod on the
# node of that zone.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 8xH100 --labels topology.kubernetes.io/zone=zone-a
start_agent node-b 8xH100 --labels topology.kubernetes.io/zone=zone-b
OUT=$TEST_TMP/out
pod_yaml blocker 8 "$(recording_cmd blocker)" >"$TEST_TMP/blocker.yaml"
blocker=$(submit "$TEST_TMP/blocker.yaml")
wait_job "$blocker" running 60

pod() {
	cat <<YAML
---
apiVersion: v1
kind: Pod
metadata:
  name: allreduce-$1
  annotations:
    pod-group-name: allreduce
  labels:
    kai.scheduler/queue: team-a
spec:
  schedulerName: kai-scheduler
  containers:
  - name: nccl
    image: busybox:1.36
    command: ["sh", "-c", "date +%s.%N >$OUT/started-$1; sleep 300"]
    resources:
      limits:
        nvidia.com/gpu: 8
YAML
}
{
	cat <<YAML
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: allreduce
spec:
  minMember: 2
YAML
	pod 0
	pod 1
} >"$TEST_TMP/kai.yaml"
id=$(submit "$TEST_TMP/kai.yaml")
expect_eq "one job of two tasks" "$(jf "$id" 'j["tasks"], j["name"], j["tenant"]')" "2 allreduce team-a"

# not at all: one free node of 8 GPUs cannot hold the gang
sleep 3
expect_eq "state with one node" "$(jf "$id" 'j["state"]')" "pending"
[ -n "$(jf "$id" 'j["reason"]')" ] || fail "the pending gang does not say why"
[ ! -e "$OUT/started-0" ] && [ ! -e "$OUT/started-1" ] || fail "a Pod of the gang started alone"

# together: the other node is freed, both Pods start, one on each
"$DROVER" cancel "$blocker" >/dev/null || fail "cancel the blocker"
wait_job "$id" running 60
wait_until 10 sh -c "[ -s $OUT/started-0 ] && [ -s $OUT/started-1 ]" || fail "not both Pods started"
expect_eq "nodes" "$(jf "$id" '",".join(sorted(p["node"] for p in j["placement"]))')" "node-a,node-b"
"$DROVER" cancel "$id" >/dev/null || fail "cancel"
wait_job "$id" cancelled 30

# The same gang written for scheduler-plugins' coscheduling: a PodGroup
# (scheduling.x-k8s.io/v1alpha1, minMember 2) and the Pods whose label
# scheduling.x-k8s.io/pod-group names it: none starts while one node is
# taken, both start together once it is free.
blocker=$(submit "$TEST_TMP/blocker.yaml")
wait_job "$blocker" running 60
cpod() {
	cat <<YAML
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer-$1
  labels:
    scheduling.x-k8s.io/pod-group: trainers
spec:
  containers:
  - name: nccl
    image: busybox:1.36
    command: ["sh", "-c", "date +%s.%N >$OUT/cs-started-$1; sleep 300"]
    resources:
      limits:
        nvidia.com/gpu: 8
YAML
}
{
	cat <<YAML
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: trainers
spec:
  minMember: 2
YAML
	cpod 0
	cpod 1
} >"$TEST_TMP/cosched.yaml"
cid=$(submit "$TEST_TMP/cosched.yaml")
expect_eq "coscheduling: one job of two tasks" "$(jf "$cid" 'j["tasks"], j["name"]')" "2 trainers"
sleep 2
expect_eq "coscheduling: state with one node" "$(jf "$cid" 'j["state"]')" "pending"
[ ! -e "$OUT/cs-started-0" ] && [ ! -e "$OUT/cs-started-1" ] || fail "a coscheduling Pod started alone"
"$DROVER" cancel "$blocker" >/dev/null || fail "cancel the blocker"
wait_job "$cid" running 60
wait_until 10 sh -c "[ -s $OUT/cs-started-0 ] && [ -s $OUT/cs-started-1 ]" || fail "not both coscheduling Pods started"
expect_eq "coscheduling: nodes" "$(jf "$cid" '",".join(sorted(p["node"] for p in j["placement"]))')" "node-a,node-b"
"$DROVER" cancel "$cid" >/dev/null || fail "cancel"
wait_job "$cid" cancelled 30

# A nodeSelector on the zone label the agents registered: each Pod lands in
# its zone, whichever node is free first.
for z in b a; do
	cat >"$TEST_TMP/zone-$z.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: in-zone-$z
spec:
  nodeSelector:
    topology.kubernetes.io/zone: zone-$z
  containers:
  - name: main
    image: busybox:1.36
    command: ["true"]
    resources:
      limits:
        nvidia.com/gpu: 1
YAML
	zid=$(submit "$TEST_TMP/zone-$z.yaml")
	wait_job "$zid" succeeded 60
	expect_eq "zone-$z Pod's node" "$(jf "$zid" 'j["placement"][0]["node"]')" "node-$z"
done
echo "ok: the KAI gang and the coscheduling gang waited whole, then both Pods started together"
