# kube_exec_tty.sh: `kubectl exec` streams, with the real kubectl (1.32
# through the Cloud SDK's dispatcher) against a real `drover up --tls`
# and a container pod (podman): the output shows while the command runs
# (a line before the next one is written), stdin with -i reaches the
# command line by line (an answer comes before stdin ends), and -it gives
# the command a terminal (tty names /dev/pts/N; stty size says the
# caller's size, then the new one after the caller's terminal is resized;
# what is typed is read) and kubectl exits with the command's code;
# kubectl cp (tar over exec) of 2 MB to the pod and back.
# tests/integration/ptyrun.py is the caller's terminal.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up
PTY="$ROOT/tests/integration/ptyrun.py"

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
    command: ["sh", "-c", "sleep 300"]
YAML
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
wait_until 30 sh -c "$KUBECTL get pod sleeper -o jsonpath='{.status.phase}' | grep -q Running" ||
	fail "the pod did not run: $(k get pod sleeper -o yaml)"

# output as it comes: "a" is there while "b" (3 s later) is not yet
k exec sleeper -- sh -c 'echo a; sleep 3; echo b' >"$TEST_TMP/stream" 2>&1 &
pid=$!
wait_until 30 grep -qx a "$TEST_TMP/stream" || fail "no output while the command runs"
grep -q b "$TEST_TMP/stream" && fail "a and b came together: $(cat "$TEST_TMP/stream")"
wait $pid || fail "exec a; sleep; b: $(cat "$TEST_TMP/stream")"
expect_eq "streamed output" "$(cat "$TEST_TMP/stream")" "$(printf 'a\nb')"

# stdin as it comes: the answer to line one comes before stdin ends
mkfifo "$TEST_TMP/in"
k exec -i sleeper -- sh -c 'while read l; do echo got=$l; done; echo end' \
	<"$TEST_TMP/in" >"$TEST_TMP/answers" 2>&1 &
pid=$!
exec 3>"$TEST_TMP/in"
echo one >&3
wait_until 30 grep -qx got=one "$TEST_TMP/answers" ||
	fail "stdin did not reach the command while open: $(cat "$TEST_TMP/answers")"
echo two >&3
exec 3>&-
wait $pid || fail "exec -i: $(cat "$TEST_TMP/answers")"
expect_eq "exec -i answers" "$(cat "$TEST_TMP/answers")" "$(printf 'got=one\ngot=two\nend')"

# a terminal: its name, its size, a resize, typing, the exit code
rc=0
python3 "$PTY" 30 100 --resize size-one 40 120 --send say-hi 'hi\r' -- \
	$KUBECTL exec -it sleeper -- sh -c 'tty; stty size; echo size-one; sleep 3; stty size;
		echo say-hi; read x; echo got=$x; exit 5' >"$TEST_TMP/tty" 2>&1 || rc=$?
tr -d '\r' <"$TEST_TMP/tty" >"$TEST_TMP/tty.txt"
expect_eq "exec -it exit code" "$rc" 5
grep -qx '/dev/pts/[0-9]*' "$TEST_TMP/tty.txt" || fail "tty: $(cat "$TEST_TMP/tty.txt")"
grep -qx '30 100' "$TEST_TMP/tty.txt" || fail "the first size: $(cat "$TEST_TMP/tty.txt")"
grep -qx '40 120' "$TEST_TMP/tty.txt" || fail "the size after a resize: $(cat "$TEST_TMP/tty.txt")"
grep -qx 'got=hi' "$TEST_TMP/tty.txt" || fail "typed input: $(cat "$TEST_TMP/tty.txt")"

# kubectl cp: tar through exec, both ways (2 MB, more than the pipes hold)
head -c 2000000 /dev/urandom >"$TEST_TMP/blob"
out=$(k cp "$TEST_TMP/blob" sleeper:/tmp/blob 2>&1) || fail "cp to the pod: $out"
expect_eq "the copy's checksum in the pod" \
	"$(k exec sleeper -- md5sum /tmp/blob | cut -d' ' -f1)" "$(md5sum <"$TEST_TMP/blob" | cut -d' ' -f1)"
out=$(k cp sleeper:/tmp/blob "$TEST_TMP/back" 2>&1) || fail "cp from the pod: $out"
cmp -s "$TEST_TMP/blob" "$TEST_TMP/back" || fail "cp from the pod: the bytes differ"
out=$(k delete pod sleeper --grace-period=1 2>&1) || fail "delete sleeper: $out"
