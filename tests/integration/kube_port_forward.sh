# kube_port_forward.sh: `kubectl port-forward` with the real kubectl (1.32
# through the Cloud SDK's dispatcher, and 1.30) against a real `drover up
# --tls`: a pod whose command serves HTTP (python3 -m http.server) on a
# free port of its node; kubectl port-forward to a local port, a 4 MB
# download checked by md5 (it stalled over TLS in libmicrohttpd's own
# forwarding) and two curls through it (two connections, each a pair of
# SPDY streams tunnelled in WebSocket: 1.32 asks
# SPDY/3.1+portforward.k8s.io first), then the same
# over plain SPDY (kubectl 1.32 with its WebSocket turned off, and 1.30,
# which speaks only SPDY); a port nothing listens on, which kubectl
# reports from the error stream; a pod that is not running.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up

RPORT=$(free_port)
cat >"$TEST_TMP/pod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "mkdir -p site && echo hello-from-web-pod >site/index.html && head -c 4000000 /dev/urandom >site/big && exec python3 -m http.server $RPORT --bind 127.0.0.1 --directory site"]
YAML
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
wait_until 30 sh -c "$KUBECTL get pod web -o jsonpath='{.status.phase}' | grep -q Running" ||
	fail "the pod did not run: $(k get pod web -o yaml)"
wait_until 20 curl -sf "http://127.0.0.1:$RPORT/" || fail "the pod's server did not listen"

# forward LOCAL REMOTE NAME KUBECTL [ENV...]: kubectl port-forward in
# the background, its output in $TEST_TMP/NAME.out, once it listens
forward() {
	_lp=$1 _rp=$2 _n=$3 _kc=$4
	shift 4
	env "$@" "$_kc" -v=4 port-forward pod/web "$_lp:$_rp" >"$TEST_TMP/$_n.out" 2>&1 &
	FWD_PID=$!
	track "$FWD_PID"
	wait_until 30 grep -q "Forwarding from 127.0.0.1:$_lp -> $_rp" "$TEST_TMP/$_n.out" ||
		fail "$_n: kubectl port-forward did not listen: $(cat "$TEST_TMP/$_n.out")"
}

# two_gets LOCAL NAME [N]: two connections through one port-forward (of
# N in all), then its end
two_gets() {
	for i in 1 2; do
		out=$(curl -s -m 20 "http://127.0.0.1:$1/") || fail "$2: curl $i through port-forward: $(cat "$TEST_TMP/$2.out")"
		expect_eq "$2: page $i through port-forward" "$out" hello-from-web-pod
	done
	kill "$FWD_PID"
	wait "$FWD_PID" 2>/dev/null
	expect_eq "$2: connections kubectl handled" \
		"$(grep -c "Handling connection for $1" "$TEST_TMP/$2.out")" "${3:-2}"
	grep -qE '^E[0-9]|lost connection' "$TEST_TMP/$2.out" && fail "$2: kubectl says: $(cat "$TEST_TMP/$2.out")"
	return 0
}

want=$(curl -s "http://127.0.0.1:$RPORT/big" | md5sum)
# big_get LOCAL NAME: 4 MB in one connection through the port-forward
# (many DATA frames, far past SPDY's 64 KiB window and TLS's buffers)
big_get() {
	got=$(curl -s -m 60 "http://127.0.0.1:$1/big" | md5sum)
	expect_eq "$2: 4 MB through port-forward" "$got" "$want"
}

LPORT=$(free_port)
forward "$LPORT" "$RPORT" ws "$KUBECTL"
big_get "$LPORT" ws
two_gets "$LPORT" ws 3
grep -q 'tunneling_dialer.*negotiated protocol: portforward.k8s.io' "$TEST_TMP/ws.out" ||
	fail "kubectl 1.32 did not tunnel SPDY in WebSocket: $(cat "$TEST_TMP/ws.out")"

# kubectl's fallback: plain SPDY (its WebSocket turned off, and kubectl 1.30)
LPORT=$(free_port)
forward "$LPORT" "$RPORT" spdy "$KUBECTL" KUBECTL_PORT_FORWARD_WEBSOCKETS=false
big_get "$LPORT" spdy
two_gets "$LPORT" spdy 3
grep -q 'tunneling_dialer' "$TEST_TMP/spdy.out" && fail "WebSocket off, yet: $(cat "$TEST_TMP/spdy.out")"
K130=$(dirname "$(readlink -f "$(command -v kubectl)")")/kubectl.1.30
if [ -x "$K130" ]; then
	LPORT=$(free_port)
	forward "$LPORT" "$RPORT" k130 "$K130"
	big_get "$LPORT" k130
	two_gets "$LPORT" k130 3
fi

# a port nothing listens on: the agent's refusal comes back on the error
# stream, kubectl prints it and ends the port-forward
DEAD=$(free_port)
LPORT=$(free_port)
forward "$LPORT" "$DEAD" dead "$KUBECTL"
curl -s -m 20 "http://127.0.0.1:$LPORT/" >/dev/null && fail "a curl to a port nothing listens on got an answer"
wait_until 20 eval "! kill -0 $FWD_PID" || fail "kubectl port-forward kept running after the error"
grep -q "nothing listens on port $DEAD of node box" "$TEST_TMP/dead.out" ||
	fail "port-forward to a dead port: $(cat "$TEST_TMP/dead.out")"

# a pod that is not running: kubectl refuses before any upgrade
sed 's/name: web/name: stuck/; s/- name: main/- name: main\n    resources: {limits: {nvidia.com\/gpu: 64}}/' \
	"$TEST_TMP/pod.yaml" >"$TEST_TMP/stuck.yaml"
k apply -f "$TEST_TMP/stuck.yaml" >/dev/null || fail "apply stuck"
out=$(k port-forward pod/stuck "$(free_port):80" 2>&1) && fail "port-forward to a pending pod: $out"
echo "$out" | grep -q 'pod is not running' || fail "port-forward to a pending pod: $out"

# neither SPDY nor its WebSocket tunnel: 400 naming both
tok=$(k config view --raw --minify -o jsonpath='{.users[0].user.token}')
srv=$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')
code=$(curl -sk -o "$TEST_TMP/plain" -w '%{http_code}' -H "Authorization: Bearer $tok" -X POST \
	"$srv/api/v1/namespaces/default/pods/web/portforward")
expect_eq "plain POST portforward status" "$code" 400
grep -q 'SPDY/3.1+portforward.k8s.io' "$TEST_TMP/plain" || fail "plain answer: $(cat "$TEST_TMP/plain")"
# kubectl waits for both DELETED watch events (its watch starts from the
# version it read before; a deletion that ended in between is replayed)
k -v=6 delete pod web stuck --grace-period=1 >"$TEST_TMP/delete.out" 2>&1 ||
	fail "delete: $(grep -v 'Config loaded' "$TEST_TMP/delete.out" | cut -c1-300 | tail -20)"
gone() { ! k get pod web >/dev/null 2>&1 && ! k get pod stuck >/dev/null 2>&1; }
wait_until 30 gone || fail "pods web and stuck still there after delete: $(k get pods 2>&1)"
