# container_adopt.sh: containers outlive their agent, as host tasks do
# (docs/agent.md, "Stopping, removal, image GC"), with real podman and runc
# (an image imported here from busybox-static into a store of the test's
# own, imagePullPolicy Never):
#   - a running container task survives `drover agent` SIGKILL; the
#     restarted agent adopts it by name, the job ends succeeded in its first
#     attempt, its end reported once, and its container is removed;
#   - an orphan: a container labelled drover.node=NODE whose task the agent
#     does not know (here one made by hand, as a crashed agent leaves one
#     whose journal record is gone) is removed when the agent starts; one of
#     another node is left alone;
#   - image GC: with --image-gc-percent 1 the agent prunes the images no
#     container uses, and keeps the one a container uses.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

. "$ROOT/tests/integration/podman.shlib"
podman_setup
names() { podman_t ps -a --format '{{.Names}}' | sort | tr '\n' ' '; }

busybox_rootfs sh sleep echo
mkdir -p "$rootfs/ctl"
rootfs_import localhost/adopt:1

mkdir -p "$TEST_TMP/ctl"
# the lease outlasts a restart on a loaded machine (cp_agent_lease.sh tests expiry)
cp_setup "heartbeat_timeout_s: 10" "agent_lease_s: 30" "host_path_allow: [\"$TEST_TMP/ctl\"]"
start_server
AGENT_ARGS="--runtime podman --podman-root $P --podman-storage-driver vfs"
# shellcheck disable=SC2086
start_agent adopt-node 2xH100 $AGENT_ARGS
log="$TEST_TMP/agent-adopt-node.log"

# the task runs until the test releases it (at most 60 s)
cat >"$TEST_TMP/long.yaml" <<EOF2
apiVersion: v1
kind: Pod
metadata:
  name: long
  annotations: {drover.io/runtime: podman}
spec:
  volumes:
  - name: ctl
    hostPath: {path: $TEST_TMP/ctl}
  containers:
  - name: main
    image: localhost/adopt:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "i=0; while [ ! -e /ctl/go ] && [ \$\$i -lt 600 ]; do sleep 0.1; i=\$\$((i + 1)); done; echo released"]
    volumeMounts:
    - {name: ctl, mountPath: /ctl, readOnly: true}
EOF2
id=$(submit "$TEST_TMP/long.yaml")
wait_job "$id" running 60
running() { podman_t ps --format '{{.Names}}' | grep "^drover-$id.0-e"; }
wait_until 30 running || fail "the task's container is not running: $(names)"
cname=$(running)

# --- SIGKILL the agent; leave it an orphan of its own node and one of another's
stop_agent adopt-node KILL
# shellcheck disable=SC2086
podman_t run -d $LIMITS --name drover-999.0-e1 --label drover.task=999.0 --label drover.job=999 \
	--label drover.epoch=1 --label drover.node=adopt-node --network none localhost/adopt:1 \
	/bin/sleep 600 >/dev/null || fail "cannot make the orphan container"
# shellcheck disable=SC2086
podman_t run -d $LIMITS --name drover-998.0-e1 --label drover.task=998.0 --label drover.node=other-node \
	--network none localhost/adopt:1 /bin/sleep 600 >/dev/null || fail "cannot make the other node's container"
# shellcheck disable=SC2086
start_agent adopt-node 2xH100 $AGENT_ARGS
# the node may still be up from before: wait for the new agent's words
wait_until 30 grep -q "orphan container drover-999.0-e1" "$log" ||
	fail "the restarted agent did not sweep: $(tail -5 "$log")"
grep -q "task $id.0 (epoch [0-9]*) adopted" "$log" || fail "task $id.0 was not adopted: $(tail -5 "$log")"
grep -q "container $cname of task $id.0 adopted" "$log" || fail "its container was not adopted by name: $(tail -5 "$log")"
grep -q "orphan container drover-999.0-e1 (task 999.0, unknown here): removed" "$log" ||
	fail "the orphan sweep did not say it removed drover-999.0-e1: $(grep -i orphan "$log")"
wait_until 20 sh -c "! podman --runtime runc --cgroup-manager cgroupfs --root '$P/storage' --runroot '$P/run' --storage-driver vfs ps -a --format '{{.Names}}' | grep -q drover-999.0-e1" ||
	fail "the orphan container is still there: $(names)"
case " $(names)" in *" $cname "*) ;; *) fail "the adopted container is gone: $(names)" ;; esac
case " $(names)" in *" drover-998.0-e1 "*) ;; *) fail "another node's container was removed: $(names)" ;; esac
expect_eq "state after the restart" "$(jf "$id" 'j["state"]')" running

# --- released, it ends once, in its first attempt, and its container goes
touch "$TEST_TMP/ctl/go"
wait_job "$id" succeeded 30
expect_eq "attempt" "$(jf "$id" 'j["attempt"]')" 1
"$DROVER" logs "$id" | grep -q "^released$" || fail "the task's output lacks its last line"
expect_eq "ends the agent saw" "$(grep -c "task $id.0 (epoch [0-9]*) exited with code 0" "$log")" 1
wait_until 20 sh -c "! podman --runtime runc --cgroup-manager cgroupfs --root '$P/storage' --runroot '$P/run' --storage-driver vfs ps -a --format '{{.Names}}' | grep -q '^$cname\$'" ||
	fail "the adopted container is left after its end: $(names)"

# --- image GC: past --image-gc-percent of the store's disk, unused images go,
# the one a container (the other node's, still running) uses stays
# (another image: its own config, so its own id)
rootfs_import localhost/unused:2 --change 'CMD ["/bin/sleep", "1"]'
[ "$(podman_t image inspect --format '{{.Id}}' localhost/unused:2)" != \
	"$(podman_t image inspect --format '{{.Id}}' localhost/adopt:1)" ] || fail "the unused image is the used one"
stop_agent adopt-node
# shellcheck disable=SC2086
start_agent adopt-node 2xH100 $AGENT_ARGS --image-gc-percent 1
wait_until 30 grep -q "image store .* full (threshold 1%): pruning unused images" "$log" ||
	fail "the agent did not prune: $(tail -3 "$log")"
wait_until 30 sh -c "! podman --runtime runc --cgroup-manager cgroupfs --root '$P/storage' --runroot '$P/run' --storage-driver vfs image exists localhost/unused:2" ||
	fail "an unused image is left after the GC: $(podman_t images --format '{{.Repository}}:{{.Tag}}' | tr '\n' ' ')"
podman_t image exists localhost/adopt:1 || fail "the GC removed an image a container uses"
echo "ok: container $cname adopted after SIGKILL, ended once; orphan removed by label, another node's kept; image GC"
