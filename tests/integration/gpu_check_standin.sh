# gpu_check_standin.sh: runs scripts/gpu-check, which is meant for a machine
# with an NVIDIA GPU, against the stand-in libnvidia-ml.so.1 and a stand-in
# nvidia-smi describing the same 4-GPU machine (tests/nvml-standin/), so the
# script's own logic (drover up on the nvml backend, inventory and topology
# against nvidia-smi, a one-GPU task, the report) is checked here. The real
# run needs real hardware.
. "$ROOT/tests/integration/lib.sh"
set -u
mkdir -p "$TEST_TMP/lib" "$TEST_TMP/bin"
${CC:-cc} -shared -fPIC -O1 -Wl,-soname,libnvidia-ml.so.1 -o "$TEST_TMP/lib/libnvidia-ml.so.1" \
	"$ROOT/tests/nvml-standin/nvml.c" || fail "cannot build the NVML stand-in"
cp "$ROOT/tests/nvml-standin/nvidia-smi" "$TEST_TMP/bin/"
TMPDIR="$TEST_TMP" PATH="$TEST_TMP/bin:$PATH" LD_LIBRARY_PATH="$TEST_TMP/lib" DROVER="$DROVER" \
	GPU_CHECK_API_PORT=$(free_port) GPU_CHECK_AGENT_PORT=$(free_port) \
	sh "$ROOT/scripts/gpu-check" >"$TEST_TMP/gpu-check.out" 2>&1
rc=$?
cat "$TEST_TMP/gpu-check.out"
expect_eq "gpu-check exit code" "$rc" 0
grep -q "PASS  drover up uses the nvml backend" "$TEST_TMP/gpu-check.out" || fail "not on nvml"
grep -q "PASS  topology matrix matches" "$TEST_TMP/gpu-check.out" || fail "topology not compared"
grep -q "PASS  the task sees GPU" "$TEST_TMP/gpu-check.out" || fail "the task's GPU not checked"
grep -q "PASS  DCGM_FI_DEV_FB_RESERVED agrees with nvidia-smi memory.reserved" "$TEST_TMP/gpu-check.out" || fail "the counters were not compared with nvidia-smi"
grep -q "NOTE  cgroup limits" "$TEST_TMP/gpu-check.out" || grep -q "NOTE  cgroup v2 limits are on" "$TEST_TMP/gpu-check.out" ||
	fail "no word on cgroups"
echo "ok: scripts/gpu-check on the stand-in"
