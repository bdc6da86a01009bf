# kube_attach.sh: `kubectl attach POD` (no -i) with the real kubectl (1.32
# through the Cloud SDK's dispatcher) against a real `drover up --tls`: the
# pods/attach subresource over WebSocket streams the running task's output
# from the attach on (nothing from before it), stdout and stderr apart,
# while the task runs, and kubectl exits 0 when the task ends; attach -i is
# refused with a message that names kubectl exec.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up

cat >"$TEST_TMP/pod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo early-line; while [ ! -e $TEST_TMP/go ]; do echo waiting; sleep 0.3; done; echo late-out; echo late-err >&2; sleep 1; echo last-line"]
YAML
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
wait_until 30 sh -c "$KUBECTL get pod talker -o jsonpath='{.status.phase}' | grep -q Running" ||
	fail "the pod did not run: $(k get pod talker -o yaml)"
wait_until 30 sh -c "$KUBECTL logs talker | grep -q early-line" || fail "no early output"

# attach -i: no live stdin to give, and the message says what to use
out=$(k attach -i talker 2>&1) && fail "attach -i was served: $out"
echo "$out" | grep -q 'kubectl exec' || fail "attach -i: $out"

k attach talker >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
wait_until 30 grep -q waiting "$TEST_TMP/out" ||
	fail "attach streams nothing while the task runs: $(cat "$TEST_TMP/out" "$TEST_TMP/err")"
touch "$TEST_TMP/go"
rc=0
wait $pid || rc=$?
expect_eq "kubectl attach exit code when the task ends" "$rc" 0
grep -q early-line "$TEST_TMP/out" && fail "attach showed output from before it: $(cat "$TEST_TMP/out")"
grep -qx late-out "$TEST_TMP/out" || fail "attach stdout: $(cat "$TEST_TMP/out")"
grep -qx last-line "$TEST_TMP/out" || fail "attach missed the last line: $(cat "$TEST_TMP/out")"
grep -q late-err "$TEST_TMP/out" && fail "stderr came on stdout: $(cat "$TEST_TMP/out")"
grep -qx late-err "$TEST_TMP/err" || fail "attach stderr: $(cat "$TEST_TMP/err")"
wait_until 30 sh -c "$KUBECTL get pod talker -o jsonpath='{.status.phase}' | grep -q Succeeded" ||
	fail "the pod did not succeed: $(k get pod talker -o yaml)"
out=$(k delete pod talker 2>&1) || fail "delete: $out"
