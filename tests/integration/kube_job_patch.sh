# kube_job_patch.sh: a batch/v1 Job's spec.suspend and spec.parallelism
# change in any state through the Kubernetes API (CONTRACTS.md section 4),
# with the real kubectl 1.32: kubectl patch (strategic merge) widens a
# running Job's parallelism, a JSON merge patch suspends it (the pods that
# ran stop and wait, none runs) and resumes it (they run again), a change
# of another field of the running Job is 422 Invalid, and dry-run=server
# changes nothing.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up
# how many of the Job's pods are in phase $1
phase_n() { k get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}' |
	grep -Ec "^sweep-[0-9]+ $1\$"; }

cat >"$TEST_TMP/job.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
spec:
  completions: 3
  parallelism: 1
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo \$\$ >$TEST_TMP/pid-\$JOB_COMPLETION_INDEX; exec sleep 120"]
YAML
out=$(k apply -f "$TEST_TMP/job.yaml" 2>&1) || fail "apply: $out"
wait_until 30 eval '[ "$(phase_n Running)" = 1 ]' || fail "one pod should run: $(k get pods)"
expect_eq "pods waiting at parallelism 1" "$(phase_n Pending)" 2

# an element's pod is the one its name gives, not the Job (which is none)
out=$(k logs sweep-0 2>&1) || fail "kubectl logs sweep-0: $out"
out=$(k patch job sweep -p '{"spec":{"parallelism":3}}' 2>&1) || fail "patch parallelism: $out"
expect_eq "patch parallelism" "$out" "job.batch/sweep patched"
wait_until 30 eval '[ "$(phase_n Running)" = 3 ]' || fail "3 pods should run: $(k get pods)"
expect_eq "parallelism reads back" "$(k get job sweep -o jsonpath='{.spec.parallelism}')" 3
expect_eq "the Job counts its running pods" "$(k get job sweep -o jsonpath='{.status.active}')" 3
# its pods are its 3 elements, sweep-0..2: the Job itself is none of them
expect_eq "the Job's pods" "$(k get pods -o name | sort | tr '\n' ' ')" \
	"pod/sweep-0 pod/sweep-1 pod/sweep-2 "

out=$(k patch job sweep --dry-run=server --type=merge -p '{"spec":{"suspend":true}}' 2>&1) ||
	fail "dry-run suspend: $out"
sleep 1
expect_eq "a dry run suspends nothing" "$(phase_n Running)" 3

out=$(k patch job sweep --type=merge -p '{"spec":{"suspend":true}}' 2>&1) || fail "suspend: $out"
wait_until 30 eval '[ "$(phase_n Pending)" = 3 ]' || fail "a suspended Job's pods should wait: $(k get pods)"
expect_eq "suspend reads back" "$(k get job sweep -o jsonpath='{.spec.suspend}')" true
pid=$(cat "$TEST_TMP/pid-0")
wait_until 10 eval "! kill -0 $pid" || fail "a suspended Job's process $pid still runs"
rm -f "$TEST_TMP"/pid-*
out=$(k describe pod sweep-0 2>&1)
echo "$out" | grep -q 'suspended' || fail "describe does not say the pod waits for the suspend: $out"

out=$(k patch job sweep --type=merge -p '{"spec":{"suspend":false}}' 2>&1) || fail "resume: $out"
wait_until 30 eval '[ "$(phase_n Running)" = 3 ]' || fail "a resumed Job's pods should run: $(k get pods)"
wait_until 10 test -s "$TEST_TMP/pid-2" || fail "a resumed Job's pod 2 did not start again"

out=$(k patch job sweep --type=merge -p '{"spec":{"backoffLimit":9}}' 2>&1) &&
	fail "another field of a running Job changed: $out"
echo "$out" | grep -q 'is invalid' || fail "a change of backoffLimit: $out"
echo "$out" | grep -q 'only parallelism and suspend' || fail "422 does not say what may change: $out"
out=$(k label job sweep team=ml 2>&1) || fail "label a running Job: $out"
k delete job sweep >/dev/null 2>&1 || fail "delete: $(k get jobs)"
