# kube_exec.sh: `kubectl exec` with the real kubectl (1.32 through the
# Cloud SDK's dispatcher) against a real `drover up --tls`: the pods/exec
# subresource over WebSocket (v5.channel.k8s.io), run by the agent in the
# task's environment (a Secret's value from `kubectl create secret
# generic`, the task's working directory), stdout and stderr apart, the
# exit code kubectl exits with, stdin with -i, an exec into a pod that is
# not running and one of a command that does not exist, and SPDY refused
# with a message that names what is served.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up

k create secret generic tok --from-literal=value=s3cr3t-v >/dev/null || fail "create secret"
cat >"$TEST_TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: sleeper
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "sleep 120"]
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: tok, key: value}
    - name: PLAIN
      value: plain-v
YAML
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
wait_until 30 sh -c "$KUBECTL get pod sleeper -o jsonpath='{.status.phase}' | grep -q Running" ||
	fail "the pod did not run: $(k get pod sleeper -o yaml)"

out=$(k exec sleeper -- sh -c 'echo token=$TOKEN plain=$PLAIN; pwd' 2>"$TEST_TMP/err") ||
	fail "exec: $out $(cat "$TEST_TMP/err")"
echo "$out" | grep -qx 'token=s3cr3t-v plain=plain-v' || fail "exec does not see the task's env: $out"
id=$(k get pod sleeper -o jsonpath='{.metadata.labels.drover\.dev/job-id}')
echo "$out" | sed -n 2p | grep -q "$id" || fail "exec does not run in the task's directory: $out"

rc=0
out=$(k exec sleeper -c main -- sh -c 'echo to-out; echo to-err >&2; exit 3' 2>"$TEST_TMP/err") || rc=$?
expect_eq "exec exit code" "$rc" 3
expect_eq "exec stdout" "$out" to-out
grep -qx 'to-err' "$TEST_TMP/err" || fail "exec stderr: $(cat "$TEST_TMP/err")"
grep -q 'command terminated with exit code 3' "$TEST_TMP/err" || fail "exit message: $(cat "$TEST_TMP/err")"

out=$(printf 'line one\nline two\n' | k exec -i sleeper -- sh -c 'read a; echo got=$a; cat' 2>&1) || fail "exec -i: $out"
expect_eq "exec -i stdin" "$out" "$(printf 'got=line one\nline two')"

out=$(k exec sleeper -c other -- true 2>&1) && fail "exec into a container the pod lacks: $out"
echo "$out" | grep -q 'container other is not valid for pod sleeper' || fail "wrong container: $out"
out=$(k exec sleeper -- /no/such/command 2>&1) && fail "a command that does not exist ran: $out"
echo "$out" | grep -q '/no/such/command' || fail "missing command: $out"

# an unschedulable pod is not running: exec says so
sed 's/name: sleeper/name: stuck/; s/- name: main/- name: main\n    resources: {limits: {nvidia.com\/gpu: 64}}/' \
	"$TEST_TMP/pod.yaml" >"$TEST_TMP/stuck.yaml"
k apply -f "$TEST_TMP/stuck.yaml" >/dev/null || fail "apply stuck"
out=$(k exec stuck -- true 2>&1) && fail "exec into a pending pod: $out"
echo "$out" | grep -q 'is not running' || fail "exec into a pending pod: $out"

# SPDY (what kubectl falls back to) is refused with what is served
tok=$(k config view --raw --minify -o jsonpath='{.users[0].user.token}')
srv=$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')
code=$(curl -sk -o "$TEST_TMP/spdy" -w '%{http_code}' -H "Authorization: Bearer $tok" \
	-H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' -X POST \
	"$srv/api/v1/namespaces/default/pods/sleeper/exec?command=true&stdout=true")
expect_eq "SPDY exec status" "$code" 400
grep -q 'v5.channel.k8s.io' "$TEST_TMP/spdy" || fail "SPDY answer: $(cat "$TEST_TMP/spdy")"
out=$(k delete pod sleeper --grace-period=1 2>&1) || fail "delete sleeper: $out"
out=$(k delete pod stuck 2>&1) || fail "delete stuck: $out"
