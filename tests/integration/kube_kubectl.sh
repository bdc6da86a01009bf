# kube_kubectl.sh: the real kubectl (>= 1.28; where `kubectl` is the Google
# Cloud SDK's dispatcher it picks 1.32 from /version) against a real
# `drover up --tls` with simulated GPUs, with nothing but the kubeconfig
# drover up writes: discovery and version, nodes with their GPUs, apply
# (created, unchanged, configured), a watch until the pod completes, logs,
# namespaces always Active,
# describe showing the pending reason of an unschedulable pod, delete,
# explain, strict validation, server dry run, server-side apply with
# conflicts, replace, PyTorchJob and Volcano Job,
# whoami and 401 with a wrong token, one state with drover's own commands, and `drover kubeconfig`.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up
[ -f "$KUBECONFIG" ] || fail "drover up wrote no kubeconfig at $KUBECONFIG: $(cat "$TEST_TMP/up.out")"
expect_eq "kubeconfig mode" "$(stat -c %a "$KUBECONFIG")" 600
grep -q "kubeconfig written to $KUBECONFIG" "$TEST_TMP/up.out" || fail "drover up does not say where the kubeconfig is"

out=$(k version 2>&1) || fail "kubectl version: $out"
echo "$out" | grep -q 'Server Version: v1.32.0+drover-' || fail "kubectl version: $out"

# Nodes, with GPUs
out=$(k get nodes 2>&1) || fail "get nodes: $out"
echo "$out" | grep -Eq '^box +Ready +<none> +[0-9a-z]+ +v1\.32\.0\+drover-' || fail "get nodes: $out"
out=$(k get nodes -o wide 2>&1) || fail "get nodes -o wide: $out"
echo "$out" | head -1 | grep -q 'GPU-MODEL *GPUS *GPUS-FREE *POOL' || fail "wide columns: $out"
echo "$out" | grep -Eq '^box .* H100-SXM-80GB +8 +8 +default' || fail "wide row: $out"
expect_eq "node capacity nvidia.com/gpu" "$(k get node box -o jsonpath='{.status.capacity.nvidia\.com/gpu}')" 8
expect_eq "node label gpu.product" "$(k get node box -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.product}')" NVIDIA-H100-80GB-HBM3

# apply: created, unchanged, configured
cat >"$TEST_TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: hello
  labels: {app: demo}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo hello from GPU $CUDA_VISIBLE_DEVICES; sleep 8; echo bye"]
    resources:
      limits: {nvidia.com/gpu: "1"}
YAML
k get pods -w >"$TEST_TMP/watch.out" 2>&1 &
track $!
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
expect_eq "first apply" "$out" "pod/hello created"
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply again: $out"
expect_eq "second apply" "$out" "pod/hello unchanged"
sed 's/app: demo/app: demo2/' "$TEST_TMP/pod.yaml" >"$TEST_TMP/pod2.yaml"
out=$(k apply -f "$TEST_TMP/pod2.yaml" 2>&1) || fail "apply changed: $out"
expect_eq "apply with a new label" "$out" "pod/hello configured"
expect_eq "label selector" "$(k get pods -l app=demo2 -o name)" "pod/hello"
expect_eq "old label gone" "$(k get pods -l app=demo -o name)" ""
wait_until 40 grep -Eq '^hello +0/1 +Completed' "$TEST_TMP/watch.out" ||
	fail "kubectl get pods -w never showed Completed: $(cat "$TEST_TMP/watch.out")"
grep -Eq '^hello +1/1 +Running' "$TEST_TMP/watch.out" || fail "the watch never showed Running: $(cat "$TEST_TMP/watch.out")"
expect_eq "field selector status.phase" "$(k get pods --field-selector status.phase=Succeeded -o name)" "pod/hello"
expect_eq "exit code" "$(k get pod hello -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" 0
out=$(k logs hello 2>&1) || fail "logs: $out"
echo "$out" | grep -q '^hello from GPU [0-7]$' || fail "logs: $out"
expect_eq "logs --tail=1" "$(k logs hello --tail=1)" "bye"

# namespaces: default and those jobs use, each always Active
expect_eq "namespace default" "$(k get namespace default -o jsonpath='{.status.phase}')" Active
phases=$(k get namespaces -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')
[ -n "$phases" ] || fail "no namespaces listed"
expect_eq "phases of the namespaces" "$(echo "$phases" | sort -u)" Active

# An unschedulable pod is created, stays Pending, and says why
sed 's/name: hello/name: too-big/; s/"1"/"64"/' "$TEST_TMP/pod.yaml" >"$TEST_TMP/big.yaml"
out=$(k create -f "$TEST_TMP/big.yaml" 2>&1) || fail "create too-big: $out"
expect_eq "phase of an unschedulable pod" "$(k get pod too-big -o jsonpath='{.status.phase}')" Pending
expect_eq "PodScheduled reason" "$(k get pod too-big -o jsonpath='{.status.conditions[0].reason}')" Unschedulable
out=$(k describe pod too-big 2>&1) || fail "describe: $out"
echo "$out" | grep -Eq 'Warning +FailedScheduling .*64 GPUs.*largest node has 8' ||
	fail "describe does not show the pending reason: $out"
out=$(k create -f "$TEST_TMP/big.yaml" 2>&1) && fail "a second too-big was created: $out"
echo "$out" | grep -q 'AlreadyExists' || fail "second create: $out"
out=$(k delete pod too-big 2>&1) || fail "delete: $out"
expect_eq "delete" "$out" 'pod "too-big" deleted'
out=$(k get pod too-big 2>&1) && fail "too-big still there: $out"
echo "$out" | grep -q 'NotFound' || fail "get after delete: $out"
# drover's own view: cancelled, by the Kubernetes API
"$DROVER" get jobs -o json | grep -q 'deleted through the Kubernetes API' ||
	fail "drover does not show the delete: $("$DROVER" get jobs -o json)"

# One state: a job from drover submit is a pod, named <name>-<id>
printf '#!/bin/sh\n#SBATCH --job-name=My_Sbatch\n#SBATCH --gpus=1\nsleep 1\n' >"$TEST_TMP/s.sh"
id=$("$DROVER" submit --parsable "$TEST_TMP/s.sh") || fail "drover submit: $id"
k get pod "my-sbatch-$id" >/dev/null || fail "job $id is no pod my-sbatch-$id: $(k get pods 2>&1)"

# Strict validation, server dry run, the seed's Pod and a batch/v1 Job
sed 's/name: hello/name: strict/; s/  restartPolicy: Never/  restartPolicy: Never\n  bogusField: 1/' "$TEST_TMP/pod.yaml" >"$TEST_TMP/bad.yaml"
out=$(k apply -f "$TEST_TMP/bad.yaml" 2>&1) && fail "an unknown field was taken: $out"
echo "$out" | grep -q 'unknown field "spec.bogusField"' || fail "strict validation: $out"
sed 's/name: hello/name: dry/' "$TEST_TMP/pod.yaml" >"$TEST_TMP/dry.yaml"
out=$(k apply --dry-run=server -f "$TEST_TMP/dry.yaml" 2>&1) || fail "dry run: $out"
expect_eq "server dry run" "$out" "pod/dry created (server dry run)"
k get pod dry >/dev/null 2>&1 && fail "a dry run made pod dry"
out=$(k apply -f "$ROOT/examples/jobs/training-job.yaml" 2>&1) || fail "the seed's Pod: $out"
echo "$out" | grep -q 'pod/training-job created' || fail "the seed's Pod: $out"
out=$(k apply -f "$ROOT/examples/jobs/batch-eval.yaml" 2>&1) || fail "batch-eval: $out"
echo "$out" | grep -q 'job.batch/eval-checkpoints created' || fail "batch-eval: $out"
k get jobs | grep -q '^eval-checkpoints ' || fail "get jobs: $(k get jobs 2>&1)"
# its 8 completions are its pods, not Jobs of their own (CONTRACTS.md §2)
expect_eq "Jobs named eval-checkpoints*" "$(k get jobs -o name | grep -c 'eval-checkpoints')" 1
expect_eq "the Job's completions" "$(k get job eval-checkpoints -o jsonpath='{.spec.completions}')" 8
expect_eq "its pods" "$(k get pods -o name | grep 'eval-checkpoints' | sort | tr '\n' ' ')" \
	"$(for i in 0 1 2 3 4 5 6 7; do printf 'pod/eval-checkpoints-%s ' "$i"; done)"
"$DROVER" get jobs -o json | grep -q '"eval-checkpoints"' || fail "drover does not see the Job"

# Server-side apply: created, applied again, a second manager's change of a
# field the first owns is a conflict until --force-conflicts; replace
cat >"$TEST_TMP/ssa.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: ssa
  labels: {app: one}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "30"]
YAML
out=$(k apply --server-side -f "$TEST_TMP/ssa.yaml" 2>&1) || fail "server-side apply: $out"
expect_eq "server-side apply" "$out" "pod/ssa serverside-applied"
out=$(k apply --server-side -f "$TEST_TMP/ssa.yaml" 2>&1) || fail "server-side apply again: $out"
sed 's/app: one/app: two/' "$TEST_TMP/ssa.yaml" >"$TEST_TMP/ssa2.yaml"
out=$(k apply --server-side --field-manager=other -f "$TEST_TMP/ssa2.yaml" 2>&1) &&
	fail "a second manager took a field without --force-conflicts: $out"
echo "$out" | grep -q 'Apply failed with 1 conflict: conflict with "kubectl": .metadata.labels' ||
	fail "conflict: $out"
expect_eq "label after the conflict" "$(k get pod ssa -o jsonpath='{.metadata.labels.app}')" one
out=$(k apply --server-side --field-manager=other --force-conflicts -f "$TEST_TMP/ssa2.yaml" 2>&1) ||
	fail "--force-conflicts: $out"
expect_eq "label after --force-conflicts" "$(k get pod ssa -o jsonpath='{.metadata.labels.app}')" two
expect_eq "managers" "$(k get pod ssa -o jsonpath='{.metadata.managedFields[*].manager}' --show-managed-fields)" "kubectl other"
k get pod ssa -o yaml | sed 's/app: two/app: three/' >"$TEST_TMP/ssa3.yaml"
out=$(k replace -f "$TEST_TMP/ssa3.yaml" 2>&1) || fail "replace: $out"
expect_eq "label after replace" "$(k get pod ssa -o jsonpath='{.metadata.labels.app}')" three
sed 's/"30"/"31"/' "$TEST_TMP/ssa.yaml" >"$TEST_TMP/ssa4.yaml"
wait_until 20 sh -c "[ \"\$($KUBECTL get pod ssa -o jsonpath='{.status.phase}')\" = Running ]" ||
	fail "pod ssa is not running"
out=$(k apply --server-side --force-conflicts -f "$TEST_TMP/ssa4.yaml" 2>&1) && fail "a running pod's command changed: $out"
echo "$out" | grep -q 'is invalid: spec: .*the job is running' || fail "spec of a running pod: $out"

# Kubeflow and Volcano kinds; a PriorityClass in the stream is refused (tenants file)
out=$(k apply -f "$ROOT/examples/jobs/pytorchjob-multinode.yaml" 2>&1) || fail "pytorchjob: $out"
echo "$out" | grep -q 'pytorchjob.kubeflow.org/llama-finetune created' || fail "pytorchjob: $out"
k get pytorchjobs -n research | grep -q '^llama-finetune ' || fail "get pytorchjobs: $(k get pytorchjobs -A 2>&1)"
k get pods -n research -l drover.dev/rank=0 -o name | grep -q '^pod/llama-finetune-0$' ||
	fail "pytorchjob pods: $(k get pods -n research 2>&1)"
out=$(k apply -f "$ROOT/examples/jobs/volcano-gang.yaml" 2>&1) && fail "the PriorityClass in volcano-gang.yaml was taken: $out"
echo "$out" | grep -q 'job.batch.volcano.sh/tf-ps-training created' || fail "volcano job: $out"
echo "$out" | grep -q "MethodNotAllowed.*tenants file" || fail "volcano-gang's PriorityClass: $out"
k get vcjob tf-ps-training >/dev/null || fail "get vcjob: $(k get vcjob 2>&1)"

# explain, whoami, errors as Kubernetes gives them
out=$(k explain pod.spec 2>&1) || fail "explain: $out"
echo "$out" | grep -q '^  containers.*<\[\]Container>' || fail "explain pod.spec: $out"
out=$(k auth whoami 2>&1) || fail "whoami: $out"
echo "$out" | grep -Eq '^Username +' || fail "whoami: $out"
out=$(k --token not-a-token get pods 2>&1) && fail "a wrong token was taken: $out"
echo "$out" | grep -q 'Unauthorized\|must be logged in' || fail "wrong token: $out"
out=$(k get services 2>&1) && fail "services are not served: $out"
echo "$out" | grep -q "doesn't have a resource type" || fail "get services: $out"

# drover kubeconfig gives the same access
"$DROVER" kubeconfig --file "$TEST_TMP/kc" >/dev/null || fail "drover kubeconfig"
KUBECONFIG="$TEST_TMP/kc" timeout 30 $KUBECTL get pod hello >/dev/null || fail "kubectl with drover kubeconfig's file"
