# container_security.sh: who a task runs as, with real parts (podman, runc,
# an image imported here from busybox-static into a podman store of the
# test's own, imagePullPolicy Never: no registry needed).
#   - securityContext.runAsUser/runAsGroup act: the container's over the
#     Pod's, in a container (podman --user) and on the host (setuid)
#   - a user who is not an admin is refused (403) another uid, the field named
#   - runAsNonRoot: an image whose USER is root fails the job with kubelet's
#     reason; an image with a numeric non-root USER runs; runAsUser 0 with
#     runAsNonRoot is refused at submit (exit 2, the field path)
#   - imagePullPolicy Never with no image on the node: ErrImageNeverPull
#   - hostIPC: true gives the host's IPC namespace; the default a private one
#   - the annotation drover.io/runtime: podman on a Job's pod template runs
#     that pod in its image; the same Job without it runs on the host
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

[ "$(id -u)" = 0 ] || skip "needs root: only a root agent changes a task's uid"
. "$ROOT/tests/integration/podman.shlib"
podman_setup

busybox_rootfs sh id cat readlink echo
mkdir -p "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
rootfs_import localhost/as-root:1 --change 'CMD ["/bin/id"]'
rootfs_import localhost/as-1000:1 --change 'CMD ["/bin/id"]' --change 'USER 1000'

# uid 1234 passes through to its task's directory, as under a real state dir
chmod 711 "$TEST_TMP"
cp_setup
start_server
start_agent sec-node 2xH100 --runtime podman --podman-root "$P" --podman-storage-driver vfs
log="$TEST_TMP/agent-sec-node.log"

# pod NAME IMAGE POD-SC CONTAINER-SC [SPEC-LINES]: a Pod in a container
pod() {
	cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {drover.io/runtime: podman}
spec:
  securityContext: $3
${5:-}
  containers:
  - name: main
    image: $2
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo uid=\$\$(id -u) gid=\$\$(id -g) ipc=\$\$(readlink /proc/self/ns/ipc)"]
    securityContext: $4
YAML
}

# --- runAsUser/runAsGroup in a container: the container's win over the Pod's
pod ids localhost/as-root:1 '{runAsUser: 1500, runAsGroup: 2345}' '{runAsUser: 1600}' >"$TEST_TMP/ids.yaml"
id=$(submit "$TEST_TMP/ids.yaml")
wait_job "$id" succeeded 60
"$DROVER" logs "$id" >"$TEST_TMP/ids.out" 2>&1
grep -q "^uid=1600 gid=2345 " "$TEST_TMP/ids.out" || { cat "$TEST_TMP/ids.out" >&2; fail "the container did not run as 1600:2345"; }
grep "container drover-$id.0-e" "$log" | grep -q -- "--user 1600:2345 --cap-drop all" ||
	{ grep "container drover-$id.0-e" "$log" >&2; fail "podman was not given --user 1600:2345"; }
"$DROVER" describe job "$id" >"$TEST_TMP/ids.describe" 2>&1
grep -q "^    command: .* create .*--user 1600:2345 --cap-drop all .* 'localhost/as-root:1'$" "$TEST_TMP/ids.describe" &&
	grep -q "^    image:   present, not pulled (imagePullPolicy Never)$" "$TEST_TMP/ids.describe" ||
	{ cat "$TEST_TMP/ids.describe" >&2; fail "drover describe does not show the container's user and pull"; }
# the default: a private IPC namespace, not the host's
host_ipc=$(readlink /proc/self/ns/ipc)
grep -qF "ipc=$host_ipc" "$TEST_TMP/ids.out" && fail "a container without hostIPC shares the host's IPC namespace"

# --- on the host: the task's process is setuid to it ----------------------------
cat >"$TEST_TMP/host.yaml" <<'EOF2'
apiVersion: v1
kind: Pod
metadata: {name: host-ids}
spec:
  securityContext: {runAsUser: 1234, runAsGroup: 4321}
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "echo uid=$$(id -u) gid=$$(id -g)"]
EOF2
id=$(submit "$TEST_TMP/host.yaml")
wait_job "$id" succeeded 30
expect_eq "host runtime" "$(jf "$id" 'j["runtime"]')" "host"
"$DROVER" logs "$id" >"$TEST_TMP/host.out" 2>&1
grep -q "^uid=1234 gid=4321$" "$TEST_TMP/host.out" || { cat "$TEST_TMP/host.out" >&2; fail "the host task did not run as 1234:4321"; }

# --- a user who is not an admin may not pick another uid --------------------------
if DROVER_TOKEN=$ALICE_TOKEN "$DROVER" submit "$TEST_TMP/host.yaml" >"$TEST_TMP/alice.out" 2>&1; then
	fail "alice's job with runAsUser 1234 was accepted"
fi
grep -q "securityContext.runAsUser: 1234 is not the uid of user alice" "$TEST_TMP/alice.out" ||
	{ cat "$TEST_TMP/alice.out" >&2; fail "the refusal does not name the field"; }
grep -q "admin role" "$TEST_TMP/alice.out" || fail "the refusal does not say what would allow it"

# --- runAsNonRoot: kubelet's check on the image's USER ----------------------------
pod nonroot-root localhost/as-root:1 '{runAsNonRoot: true}' '{}' >"$TEST_TMP/nr1.yaml"
id=$(submit "$TEST_TMP/nr1.yaml")
wait_job "$id" failed 60
reason=$(jf "$id" 'j["reason"]')
case "$reason" in
*"CreateContainerConfigError: container has runAsNonRoot and image localhost/as-root:1 will run as root"*) ;;
*) fail "runAsNonRoot on a root image: reason '$reason'" ;;
esac
pod nonroot-1000 localhost/as-1000:1 '{runAsNonRoot: true}' '{}' >"$TEST_TMP/nr2.yaml"
id=$(submit "$TEST_TMP/nr2.yaml")
wait_job "$id" succeeded 60
"$DROVER" logs "$id" | grep -q "^uid=1000 " || fail "the image's USER 1000 was not used"
pod nonroot-0 localhost/as-1000:1 '{runAsNonRoot: true}' '{runAsUser: 0}' >"$TEST_TMP/nr3.yaml"
"$DROVER" submit "$TEST_TMP/nr3.yaml" >"$TEST_TMP/nr3.out" 2>&1
expect_eq "runAsUser 0 with runAsNonRoot: exit" "$?" "2"
grep -q "nr3.yaml:.*spec.securityContext: found runAsNonRoot: true with runAsUser: 0" "$TEST_TMP/nr3.out" ||
	{ cat "$TEST_TMP/nr3.out" >&2; fail "runAsUser 0 with runAsNonRoot: no field path"; }

# on the host, as the --run-as-self root agent would run it: refused too
sed 's/{runAsUser: 1234, runAsGroup: 4321}/{runAsNonRoot: true}/' "$TEST_TMP/host.yaml" >"$TEST_TMP/nr-host.yaml"
id=$(submit "$TEST_TMP/nr-host.yaml")
wait_job "$id" failed 30
reason=$(jf "$id" 'j["reason"]')
case "$reason" in
*"CreateContainerConfigError: runAsNonRoot and the task would run as root on node sec-node (the agent runs as root with --run-as-self)"*) ;;
*) fail "runAsNonRoot on the host as root: reason '$reason'" ;;
esac
[ -s "$TEST_TMP/agent-sec-node/tasks/$id.0/$id.0.out" ] && fail "the root task ran"

# --- imagePullPolicy Never, no such image on the node ----------------------------
pod never localhost/not-here:1 '{}' '{}' >"$TEST_TMP/never.yaml"
id=$(submit "$TEST_TMP/never.yaml")
wait_job "$id" failed 60
reason=$(jf "$id" 'j["reason"]')
case "$reason" in
*"ErrImageNeverPull: image localhost/not-here:1 is not present on node sec-node and its imagePullPolicy is Never"*) ;;
*) fail "Never and no image: reason '$reason'" ;;
esac
grep -q "drover: pulling" "$TEST_TMP/agent-sec-node/tasks/$id.0/$id.0.err" && fail "Never pulled"

# --- hostIPC: the host's IPC namespace ---------------------------------------------
pod hostipc localhost/as-root:1 '{}' '{}' '  hostIPC: true' >"$TEST_TMP/hostipc.yaml"
id=$(submit "$TEST_TMP/hostipc.yaml")
wait_job "$id" succeeded 60
"$DROVER" logs "$id" | grep -qF "ipc=$host_ipc" || fail "hostIPC: true did not give the host's IPC namespace"
grep "container drover-$id.0-e" "$log" | grep -q -- "--ipc host" || fail "podman was not given --ipc host"

# --- drover.io/runtime chooses the runtime per pod, also on a Job's pod template
tmpl_job() {
	cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1}
spec:
  template:
    metadata:
      annotations: {$2}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: localhost/as-root:1
        imagePullPolicy: Never
        command: ["/bin/sh", "-c", "if [ -e /etc/os-release ]; then echo on-host; else echo in-image; fi"]
YAML
}
for want in podman host; do
	if [ "$want" = podman ]; then tmpl_job tmpl-podman "drover.io/runtime: podman"; else tmpl_job tmpl-host ""; fi >"$TEST_TMP/tmpl-$want.yaml"
	id=$(submit "$TEST_TMP/tmpl-$want.yaml")
	wait_job "$id" succeeded 60
	el=$(jf "$id" 'j["elements"]["first"]')
	expect_eq "runtime of the $want pod" "$(jf "$el" 'j["runtime"]')" "$want"
	out=$("$DROVER" logs "$el" 2>&1)
	expect_eq "where the $want pod ran" "$out" "$([ "$want" = podman ] && echo in-image || echo on-host)"
done

echo "ok: runAsUser/runAsGroup in a container and on the host; non-admins refused; runAsNonRoot; Never; hostIPC; drover.io/runtime per pod"
