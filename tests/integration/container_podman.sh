# container_podman.sh: the podman runtime with real parts: podman and runc,
# a docker-registry on loopback holding an image built here from
# busybox-static and pushed under the seed's own name
# pytorch/pytorch:2.4-cuda12.4, and an agent with --runtime podman whose
# registries.conf maps docker.io/pytorch to that registry. Its own podman
# store and registries.conf: nothing machine-wide is touched.
#   - the seed's Pod (examples/jobs/training-job.yaml), verbatim, runs the
#     image's ENTRYPOINT and CMD in the container, with drover's env and the
#     Pod's; the podman arguments are in the agent log; the env file is gone
#   - the image is pulled once: a second Pod (IfNotPresent by its tag) does not pull;
#     one with imagePullPolicy: Always pulls again
#   - command replaces ENTRYPOINT, args replace CMD; $(VAR) expanded
#   - a missing image fails the job with ErrImagePull ... not found
#   - a cancelled container job leaves no container (podman ps -a)
#   - a Pod with a command and no runtime annotation runs on the host
#   - an OOM kill inside the container is the job's out_of_memory (cgroup)
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

. "$ROOT/tests/integration/podman.shlib"
podman_setup docker-registry

# --- the image: busybox-static, an entrypoint that shows where it runs ------
busybox_rootfs sh echo cat env sort grep id sleep head tr printf pwd df touch ls
mkdir -p "$rootfs/etc" "$rootfs/work"
echo "busybox-static test image" >"$rootfs/etc/drover-test-image"
cat >"$rootfs/entry.sh" <<'EOF'
#!/bin/sh
echo "entrypoint: $(cat /etc/drover-test-image)"
echo "args: $*"
echo "uid: $(id -u) cwd: $(pwd)"
env | sort
EOF
chmod +x "$rootfs/entry.sh"
rootfs_import localhost/drover-test:1 --change 'ENTRYPOINT ["/entry.sh"]' --change 'CMD ["the-image-cmd"]'

# --- a registry on loopback, holding it under the seed's name -------------------
REG_PORT=$(free_port)
cat >"$TEST_TMP/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $TEST_TMP/registry
http:
  addr: 127.0.0.1:$REG_PORT
EOF
docker-registry serve "$TEST_TMP/registry.yml" >"$TEST_TMP/registry.log" 2>&1 &
track $!
wait_until 20 curl -sf "http://127.0.0.1:$REG_PORT/v2/" >/dev/null ||
	{ cat "$TEST_TMP/registry.log" >&2; fail "docker-registry did not start"; }
podman_t push --tls-verify=false localhost/drover-test:1 \
	"docker://127.0.0.1:$REG_PORT/pytorch/pytorch:2.4-cuda12.4" >"$TEST_TMP/push.log" 2>&1 ||
	{ cat "$TEST_TMP/push.log" >&2; fail "podman push failed"; }
podman_t rmi localhost/drover-test:1 >/dev/null 2>&1
# the seed's image name resolves to the registry above, as a mirror would
cat >"$TEST_TMP/registries.conf" <<EOF
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"
[[registry]]
prefix = "docker.io/pytorch"
location = "127.0.0.1:$REG_PORT/pytorch"
insecure = true
EOF

mkdir -p "$TEST_TMP/hostdata/sets/imagenet"
echo "from the host" >"$TEST_TMP/hostdata/sets/imagenet/hello.txt"
cp_setup "host_path_allow: [\"$TEST_TMP/hostdata\"]"
start_server
start_agent pod-node 8xH100 --runtime podman --podman-root "$P" --podman-storage-driver vfs \
	--registries-conf "$TEST_TMP/registries.conf" --grace 2
log="$TEST_TMP/agent-pod-node.log"
grep -q "runtime podman: a check container ran" "$log" ||
	{ cat "$log" >&2; fail "the agent's start check line is missing"; }
expect_eq "node runtime label" "$("$DROVER" get node pod-node -o json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["labels"]["drover.io/runtime"])')" "podman"

# --- the seed's Pod, verbatim ---------------------------------------------------
id=$(submit "$ROOT/examples/jobs/training-job.yaml")
wait_job "$id" succeeded 120
expect_eq "runtime" "$(jf "$id" 'j["runtime"]')" "podman"
"$DROVER" logs "$id" >"$TEST_TMP/seed.out" 2>&1 || fail "drover logs $id failed"
for want in "entrypoint: busybox-static test image" "args: the-image-cmd" "DROVER_JOB_ID=$id" \
	"DROVER_IMAGE=pytorch/pytorch:2.4-cuda12.4" "NCCL_IB_DISABLE=0" "NCCL_NET_GDR_LEVEL=5" \
	"RANK=0" "WORLD_SIZE=1" "MASTER_ADDR=" "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" \
	"JAX_PROCESS_ID=0" "container=podman" "DROVER_FAKE_GPU_0=GPU-" "DROVER_FAKE_GPU_7=GPU-"; do
	grep -q "^$want" "$TEST_TMP/seed.out" || { cat "$TEST_TMP/seed.out" >&2; fail "the seed's output lacks '$want'"; }
done
# the image's own PATH, not the agent's
grep -q "^PATH=/usr/local/sbin:/usr/local/bin" "$TEST_TMP/seed.out" || fail "PATH is not the image's"
grep -q "^DROVER_JOB_TOKEN=" "$TEST_TMP/seed.out" || fail "the job token is not in the container"
# the exact podman arguments are in the agent's log, the env values are not
grep "container drover-$id.0-e" "$log" >"$TEST_TMP/create.line" || fail "no podman line in the agent log"
for want in "--runtime' 'runc'" "create --rm --pull never" "--network host" "--ipc private --shm-size 8192m" \
	"--ulimit nofile=" "--ulimit nproc=32768:32768" "--security-opt no-new-privileges" \
	"--env-file" "--label=drover.task=$id.0"; do
	grep -q -- "$want" "$TEST_TMP/create.line" || { cat "$TEST_TMP/create.line" >&2; fail "the podman line lacks '$want'"; }
done
grep -q "NCCL_NET_GDR_LEVEL" "$TEST_TMP/create.line" && fail "an env value is on podman's command line"
# the fake GPUs go in as CDI devices of the agent's own spec, as on a GPU node
spec=$(sed -n 's/.*fake GPUs: CDI spec \([^ ]*\), devices.*/\1/p' "$log")
[ -f "$spec" ] || fail "the agent's fake-GPU CDI spec '$spec' is not there: $(grep CDI "$log")"
for g in 0 7; do
	grep -q -- "'--device' 'drover.io/fakegpu-[0-9a-f]*=$g'" "$TEST_TMP/create.line" ||
		{ cat "$TEST_TMP/create.line" >&2; fail "the podman line lacks GPU $g as a CDI device"; }
done
ls "$TEST_TMP/agent-pod-node/tasks/$id.0/"*.env 2>/dev/null && fail "the env file was not removed"
pulls1=$(grep -c "drover: pulling" "$TEST_TMP/agent-pod-node/tasks/$id.0/$id.0.err")
expect_eq "pulls of the first Pod" "$pulls1" "1"
# drover describe shows the container, its pull and the podman command, with the image
"$DROVER" describe job "$id" >"$TEST_TMP/describe.out" 2>&1 || fail "drover describe $id failed"
for want in "^Containers:" "^  task $id.0: drover-$id.0-e1$" \
	"^    image:   pulled (attempt 1 of 3, imagePullPolicy IfNotPresent)$" \
	"^    command: 'podman' '--runtime' 'runc' .* create --rm --pull never '--name' 'drover-$id.0-e1' .* --env-file '[^']*/$id.0.env'.* 'pytorch/pytorch:2.4-cuda12.4'$"; do
	grep -q -- "$want" "$TEST_TMP/describe.out" || { cat "$TEST_TMP/describe.out" >&2; fail "drover describe lacks '$want'"; }
done
grep "^    command:" "$TEST_TMP/describe.out" | grep -q "NCCL_NET_GDR_LEVEL" && fail "an env value is in the described command"

# --- IfNotPresent (the tag's default): no second pull ----------------------------
id2=$(submit "$ROOT/examples/jobs/training-job.yaml")
wait_job "$id2" succeeded 60
expect_eq "pulls of the second Pod" "$(grep -c "drover: pulling" "$TEST_TMP/agent-pod-node/tasks/$id2.0/$id2.0.err")" "0"
"$DROVER" describe job "$id2" | grep -q "^    image:   present, not pulled (imagePullPolicy IfNotPresent)$" ||
	fail "drover describe does not say the second Pod's image was present"

# --- Always: pulls though the image is there -----------------------------------
sed 's/^    image: pytorch\/pytorch:2.4-cuda12.4$/&\n    imagePullPolicy: Always/' "$ROOT/examples/jobs/training-job.yaml" >"$TEST_TMP/always.yaml"
grep -q "imagePullPolicy: Always" "$TEST_TMP/always.yaml" || fail "the Always Pod was not written"
ida=$(submit "$TEST_TMP/always.yaml")
wait_job "$ida" succeeded 60
expect_eq "pulls of the Always Pod" "$(grep -c "drover: pulling .*(policy Always" "$TEST_TMP/agent-pod-node/tasks/$ida.0/$ida.0.err")" "1"

# --- command replaces ENTRYPOINT, args CMD, $(VAR) expanded, workingDir ---------
cat >"$TEST_TMP/cmd.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: with-args
  annotations:
    drover.io/runtime: podman
spec:
  containers:
  - name: main
    image: pytorch/pytorch:2.4-cuda12.4
    workingDir: /work
    command: ["/entry.sh"]
    args: ["first", "$(GREETING)-there", "$$(kept)"]
    env:
    - name: GREETING
      value: hello
EOF
id3=$(submit "$TEST_TMP/cmd.yaml")
wait_job "$id3" succeeded 60
"$DROVER" logs "$id3" >"$TEST_TMP/cmd.out" 2>&1
grep -q "^args: first hello-there \$(kept)$" "$TEST_TMP/cmd.out" || { cat "$TEST_TMP/cmd.out" >&2; fail "args did not replace CMD"; }
grep -q "cwd: /work" "$TEST_TMP/cmd.out" || fail "workingDir was not used"

# --- args alone keep the image's ENTRYPOINT --------------------------------------
cat >"$TEST_TMP/args.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: only-args}
spec:
  containers:
  - name: main
    image: pytorch/pytorch:2.4-cuda12.4
    args: ["given", "args"]
EOF
id4=$(submit "$TEST_TMP/args.yaml")
wait_job "$id4" succeeded 60
"$DROVER" logs "$id4" >"$TEST_TMP/args.out" 2>&1
grep -q "^entrypoint: busybox-static" "$TEST_TMP/args.out" || fail "args alone did not run the ENTRYPOINT"
grep -q "^args: given args$" "$TEST_TMP/args.out" || fail "args did not replace CMD"

# --- a missing image: the job fails and says so ----------------------------------
cat >"$TEST_TMP/missing.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  containers:
  - name: main
    image: pytorch/pytorch:no-such-tag
EOF
id5=$(submit "$TEST_TMP/missing.yaml")
wait_job "$id5" failed 60
reason=$(jf "$id5" 'j["reason"]')
case "$reason" in *ErrImagePull*"not found"*) ;; *) fail "missing image: reason '$reason'" ;; esac
ls "$TEST_TMP/agent-pod-node/tasks/$id5.0/"*.env 2>/dev/null && fail "a failed pull left the env file"
# the Kubernetes face shows it as kubelet does: the container waiting, ErrImagePull
curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/api/v1/namespaces/default/pods/missing-$id5" |
	python3 -c 'import json,sys; s=json.load(sys.stdin)["status"]["containerStatuses"][0]["state"]; w=s.get("waiting", {}); sys.exit(0 if w.get("reason") == "ErrImagePull" and "not found" in w.get("message", "") else "state: %s" % s)' ||
	fail "the Pod's container is not shown waiting with ErrImagePull"

# --- a cancelled container job leaves no container -------------------------------
cat >"$TEST_TMP/sleep.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  annotations: {drover.io/runtime: podman}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: pytorch/pytorch:2.4-cuda12.4
    command: ["/bin/sleep", "600"]
    imagePullPolicy: Never
EOF
id6=$(submit "$TEST_TMP/sleep.yaml")
wait_job "$id6" running 60
wait_until 20 sh -c "podman --runtime runc --root '$P/storage' --runroot '$P/run' --storage-driver vfs ps --format '{{.Names}}' | grep -q drover-$id6.0-e" ||
	{ cat "$TEST_TMP/agent-pod-node/tasks/$id6.0/$id6.0.err" >&2; fail "the sleeper's container is not running"; }
"$DROVER" cancel "$id6" >/dev/null || fail "cancel failed"
wait_job "$id6" cancelled 30
wait_until 30 sh -c "[ -z \"\$(podman --runtime runc --root '$P/storage' --runroot '$P/run' --storage-driver vfs ps -a -q)\" ]" ||
	{ podman_t ps -a >&2; fail "a container is left after the cancel"; }
grep -q "podman stop: .* stop --ignore --time 2 'drover-$id6.0-e" "$log" || fail "the stop was not podman stop with the grace"

# --- a command and no annotation: the host runs it, the image only in DROVER_IMAGE
pod_yaml host-cmd 1 'echo "image=$DROVER_IMAGE"; test -f /etc/drover-test-image && echo in-container || echo on-host' >"$TEST_TMP/host.yaml"
id7=$(submit "$TEST_TMP/host.yaml")
wait_job "$id7" succeeded 30
expect_eq "host job runtime" "$(jf "$id7" 'j["runtime"]')" "host"
"$DROVER" logs "$id7" >"$TEST_TMP/host.out" 2>&1
grep -q "^on-host$" "$TEST_TMP/host.out" || fail "a Pod with a command did not run on the host"
grep -q "^image=busybox:1.36$" "$TEST_TMP/host.out" || fail "DROVER_IMAGE is not the image"

# --- volumes: hostPath (readOnly, subPath), emptyDir, Memory emptyDir at /dev/shm
cat >"$TEST_TMP/vols.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: vols}
spec:
  volumes:
  - name: dshm
    emptyDir: {medium: Memory, sizeLimit: 96Mi}
  - name: data
    hostPath: {path: $TEST_TMP/hostdata/sets}
  - name: scratch
    emptyDir: {}
  containers:
  - name: main
    image: pytorch/pytorch:2.4-cuda12.4
    command: ["/bin/sh", "-c"]
    args:
    - "cat /data/hello.txt; touch /data/x 2>/dev/null && echo data-writable || echo data-read-only; touch /scratch/y && echo scratch-writable; df -m /dev/shm | grep shm"
    volumeMounts:
    - {name: dshm, mountPath: /dev/shm}
    - {name: data, mountPath: /data, readOnly: true, subPath: imagenet}
    - {name: scratch, mountPath: /scratch}
EOF
id8=$(submit "$TEST_TMP/vols.yaml")
wait_job "$id8" succeeded 60
"$DROVER" logs "$id8" >"$TEST_TMP/vols.out" 2>&1
for want in "from the host" "data-read-only" "scratch-writable"; do
	grep -q "^$want" "$TEST_TMP/vols.out" || { cat "$TEST_TMP/vols.out" >&2; fail "volumes: no '$want'"; }
done
grep -q "^shm .* 96 " "$TEST_TMP/vols.out" || { cat "$TEST_TMP/vols.out" >&2; fail "/dev/shm is not 96 MiB"; }
[ -e "$TEST_TMP/hostdata/sets/imagenet/x" ] && fail "a readOnly hostPath was written"
# a hostPath outside host_path_allow is refused with the field named
sed "s|path: $TEST_TMP/hostdata/sets|path: /etc|" "$TEST_TMP/vols.yaml" >"$TEST_TMP/etc.yaml"
if "$DROVER" submit "$TEST_TMP/etc.yaml" >"$TEST_TMP/etc.out" 2>&1; then fail "a hostPath of /etc was accepted"; fi
grep -q "hostPath.path: /etc is not under the server's host_path_allow" "$TEST_TMP/etc.out" ||
	{ cat "$TEST_TMP/etc.out" >&2; fail "the refusal does not name the field"; }
# a path that climbs out of an allowed prefix with .. is never under it
sed "s|path: $TEST_TMP/hostdata/sets|path: $TEST_TMP/hostdata/sets/../../..|" "$TEST_TMP/vols.yaml" >"$TEST_TMP/dots.yaml"
if "$DROVER" submit "$TEST_TMP/dots.yaml" >"$TEST_TMP/dots.out" 2>&1; then fail "a hostPath with .. was accepted"; fi
grep -q "hostPath" "$TEST_TMP/dots.out" || { cat "$TEST_TMP/dots.out" >&2; fail "the .. refusal does not name the field"; }

# --- an OOM kill in the container is the job's out_of_memory ----------------------
cat >"$TEST_TMP/oom.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: oom}
spec:
  containers:
  - name: main
    image: pytorch/pytorch:2.4-cuda12.4
    command: ["/bin/sh", "-c", "x=$$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived"]
    resources:
      limits: {memory: 160Mi}
EOF
id9=$(submit "$TEST_TMP/oom.yaml")
wait_job "$id9" out_of_memory 90

echo "ok: seed Pod $id ran in its image's container; pulls once; args, workingDir; missing image fails; cancel leaves no container"
