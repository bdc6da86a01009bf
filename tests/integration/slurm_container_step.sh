# slurm_container_step.sh: srun --container-image, --container-mounts and
# --container-workdir (pyxis' options) run a job step in a container on a
# node whose agent runs podman (docs/slurm.md, docs/agent.md "Runtimes"),
# with real podman and runc and an image imported here from busybox-static:
#   - the step's command runs in the image (a file only the image has), in
#     pyxis' REGISTRY#IMAGE form too, one container per task (-n 2);
#   - srun's environment goes in, PATH excepted (the image's stands);
#   - a mount under host_path_allow is read and written from the workdir
#     given; `:ro` is read-only; a source outside host_path_allow is
#     refused (403) before anything runs, as is a bad mount flag (400).
# Before, every --container-image step was refused with "no container
# runtime is configured", podman or not.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
. "$ROOT/tests/integration/podman.shlib"
podman_setup

busybox_rootfs sh cat echo pwd sort
mkdir -p "$rootfs/etc"
echo "from the image" >"$rootfs/etc/marker"
rootfs_import localhost/steps:1

T=$TEST_TMP
mkdir -p "$T/share"
echo "from the host" >"$T/share/in.txt"
drover_links srun
cp_setup "host_path_allow: [\"$T/share\"]"
start_server
# shellcheck disable=SC2086
start_agent pod-node 2xH100 --runtime podman --podman-root "$P" --podman-storage-driver vfs

img=localhost/steps:1
cat >"$T/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J boxed
#SBATCH -n 2
#SBATCH --gpus-per-node=2
srun -n 1 --gpu-bind=map_gpu:1 --container-image=$img sh -c 'echo "\$CUDA_VISIBLE_DEVICES \${DROVER_FAKE_GPU_0:+0}\${DROVER_FAKE_GPU_1:+1}"' >"$T/gpus"
srun -n 1 --container-image=$img cat /etc/marker >"$T/marker"
srun -n 1 --container-image='localhost#steps:1' cat /etc/marker >"$T/marker.hash"
srun -n 2 --container-image=$img sh -c 'echo \$SLURM_PROCID' | sort >"$T/ranks"
FOO=bar srun -n 1 --container-image=$img sh -c 'echo "\$FOO \$SLURM_JOB_NAME"; echo "\$PATH"' >"$T/env"
srun -n 1 --container-image=$img --container-mounts=$T/share:/data --container-workdir=/data \
	sh -c 'pwd; cat in.txt; echo written >out.txt' >"$T/mounted"
srun -n 1 --container-image=$img --container-mounts=$T/share:/data:ro \
	sh -c 'echo x >/data/ro.txt' 2>/dev/null; echo "\$?" >"$T/ro.rc"
srun -n 1 --container-image=$img --container-mounts=/etc:/hostetc true 2>"$T/forbid.err"
echo "\$?" >"$T/forbid.rc"
srun -n 1 --container-image=$img --container-mounts=$T/share:/data:rbind true 2>"$T/flag.err"
echo "\$?" >"$T/flag.rc"
curl -s -o "$T/pty.body" -w '%{http_code}' -H "Authorization: Bearer \$DROVER_JOB_TOKEN" \
	-d '{"argv": ["true"], "container_image": "$img", "pty": true}' \
	"\$DROVER_SERVER/v1/jobs/\$SLURM_JOB_ID/steps" >"$T/pty.code"
EOF2
id=$("$DROVER" submit --parsable "$T/job.sh") || fail "submit"
wait_job "$id" succeeded 120

# GPU 1 of the node, passed as its CDI device, is the container's only
# GPU: CUDA counts it as 0 there (before, CUDA_VISIBLE_DEVICES=1 named a
# device the container does not have)
expect_eq "the step's GPU in its container, and which of the node's it is" "$(cat "$T/gpus")" "0 1"
expect_eq "the step ran in the image" "$(cat "$T/marker")" "from the image"
expect_eq "pyxis' REGISTRY#IMAGE form" "$(cat "$T/marker.hash")" "from the image"
expect_eq "one container a task" "$(tr '\n' ' ' <"$T/ranks")" "0 1 "
expect_eq "srun's environment inside" "$(head -n 1 "$T/env")" "bar boxed"
case $(tail -n 1 "$T/env") in
*"$T/bin"*) fail "the host's PATH went into the container: $(tail -n 1 "$T/env")" ;;
"") fail "no PATH in the container" ;;
esac
expect_eq "the mount, from the workdir" "$(tr '\n' ' ' <"$T/mounted")" "/data from the host "
expect_eq "written through the mount" "$(cat "$T/share/out.txt")" "written"
[ "$(cat "$T/ro.rc")" != 0 ] || fail "a :ro mount was written"
[ ! -e "$T/share/ro.txt" ] || fail "a :ro mount let a file through"
[ "$(cat "$T/forbid.rc")" != 0 ] || fail "a mount outside host_path_allow ran"
grep -q "container_mounts: /etc is not under the server's host_path_allow" "$T/forbid.err" ||
	fail "the refused mount's words: $(cat "$T/forbid.err")"
[ "$(cat "$T/flag.rc")" != 0 ] || fail "an unknown mount flag ran"
grep -q "flag 'rbind' is not supported; expected ro or rw" "$T/flag.err" ||
	fail "the bad flag's words: $(cat "$T/flag.err")"
# a terminal for a container step is not offered: refused in words
expect_eq "pty and container_image" "$(cat "$T/pty.code") $(jq -r .error.message "$T/pty.body")" \
	"400 pty: a container step gets no terminal; drop --pty or --container-image"
steps() { curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs/$id/steps"; }
expect_eq "the step's image" "$(steps | jq -r '.items[0].container_image')" "localhost/steps:1"
expect_eq "pyxis' form, as podman names it" "$(steps | jq -r '.items[1].container_image')" "localhost/steps:1"
# kept with the job's record: a restarted controller still knows the image
stop_server KILL
start_server
expect_eq "the step's image after a controller restart" \
	"$(steps | jq -r '.items[0].container_image')" "localhost/steps:1"
expect_eq "steps with the image, after the restart" \
	"$(steps | jq -r '[.items[] | select(.container_image == "localhost/steps:1")] | length')" 7
echo "ok: container steps run in the image, with srun's environment and the mounts allowed"
