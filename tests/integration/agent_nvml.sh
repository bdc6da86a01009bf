# agent_nvml.sh: `drover agent` without --fake-gpus takes the nvml backend
# and loads libnvidia-ml.so.1 by that name through the dynamic loader, as
# on a GPU machine. Here the library is a stand-in with NVML's symbols and
# known answers (tests/nvml-standin/nvml.c, compiled by this test), found
# through LD_LIBRARY_PATH. Checked: the inventory the agent registers
# (4 GPUs, names, UUIDs, memory, the NVLink/PCIe matrix, the HCA nearest
# each GPU from a sysfs tree made here), the dcgm-exporter metrics carry
# the library's values, and without NVIDIA's library or driver the agent
# says so and stops with exit code 1.
. "$ROOT/tests/integration/lib.sh"

mkdir -p "$TEST_TMP/lib"
${CC:-cc} -shared -fPIC -O1 -Wl,-soname,libnvidia-ml.so.1 -o "$TEST_TMP/lib/libnvidia-ml.so.1" \
	"$ROOT/tests/nvml-standin/nvml.c" || fail "cannot build the NVML stand-in"

# a sysfs tree: GPU 0 (bus 1b) and mlx5_0 under one PCIe switch, GPU 1 (bus 43) and mlx5_1
# under another
SYS="$TEST_TMP/sysroot"
for k in 0 1; do
	if [ $k = 0 ]; then gpu=0000:1b:00.0; hca=0000:1c:00.0; rp=10; else gpu=0000:43:00.0; hca=0000:44:00.0; rp=40; fi
	sw="$SYS/sys/devices/pci0000:$rp/0000:$rp:01.0/sw"
	mkdir -p "$sw/$gpu" "$sw/$hca" "$SYS/sys/bus/pci/devices" "$SYS/sys/class/infiniband/mlx5_$k/ports/1/counters"
	ln -s "$sw/$gpu" "$SYS/sys/bus/pci/devices/$gpu"
	ln -s "$sw/$hca" "$SYS/sys/class/infiniband/mlx5_$k/device"
	echo "$k" >"$sw/$hca/numa_node"
	p="$SYS/sys/class/infiniband/mlx5_$k/ports/1"
	echo "4: ACTIVE" >"$p/state"
	echo "400 Gb/sec (4X NDR)" >"$p/rate"
	echo "InfiniBand" >"$p/link_layer"
	echo 1000 >"$p/counters/port_rcv_data"
	echo 500 >"$p/counters/port_xmit_data"
done

TOKEN=t0k
start_mock_controller "$TOKEN"

PA=$(free_port)
LD_LIBRARY_PATH="$TEST_TMP/lib" DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name gpu-1 \
	--listen "127.0.0.1:$PA" --sysfs-root "$SYS" --state "$TEST_TMP/a" --run-as-self \
	>"$TEST_TMP/agent.log" 2>&1 &
track $!
q() { curl -fsS "$CTL/control/state" | jq -r "$1"; }
registered() { [ "$(q '.nodes["gpu-1"].registers | length')" -ge 1 ]; }
wait_until 10 registered || { cat "$TEST_TMP/agent.log"; fail "the agent did not register"; }

R='.nodes["gpu-1"].registers[0]'
expect_eq "backend" "$(q "$R.backend")" nvml
expect_eq "GPU count" "$(q "$R.gpus | length")" 4
expect_eq "names" "$(q "$R.gpus | map(.model) | unique | join(\",\")")" "NVIDIA H100 80GB HBM3"
expect_eq "UUID 2" "$(q "$R.gpus[2].uuid")" "GPU-5a1d0000-0000-0000-0000-000000000002"
expect_eq "memory" "$(q "$R.gpus[0].memory_mib")" 81559
expect_eq "bus id" "$(q "$R.gpus[1].pci_bus_id")" "00000000:43:00.0"
expect_eq "matrix row 0" "$(q "$R.topology.gpu_matrix[0] | join(\" \")")" "X NV4 NODE SYS"
expect_eq "matrix row 2" "$(q "$R.topology.gpu_matrix[2] | join(\" \")")" "NODE SYS X NV18"
expect_eq "HCAs" "$(q "$R.topology.nics | map(.name + \":\" + .state + \":\" + (.rate_gbps|tostring)) | join(\",\")")" \
	"mlx5_0:ACTIVE:400,mlx5_1:ACTIVE:400"
expect_eq "nearest GPUs of mlx5_0" "$(q "$R.topology.nics[0].near_gpus | map(tostring) | join(\",\")")" "0"
expect_eq "nearest GPUs of mlx5_1" "$(q "$R.topology.nics[1].near_gpus | map(tostring) | join(\",\")")" "1"

# the same inventory on the agent, with the cluster token, for scripts/gpu-check
inv=$(curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PA/v1/inventory") ||
	fail "no /v1/inventory"
expect_eq "driver version" "$(echo "$inv" | jq -r .driver_version)" "550.54.15-standin"
expect_eq "inventory matrix" "$(echo "$inv" | jq -r '.topology.gpu_matrix[1] | join(" ")')" "NV4 X SYS NODE"

curl -fsS "http://127.0.0.1:$PA/metrics" >"$TEST_TMP/metrics.txt" || fail "no /metrics"
m() { grep -E "^$1\{gpu=\"$2\"" "$TEST_TMP/metrics.txt" | awk '{print $NF}'; }
expect_eq "util" "$(m DCGM_FI_DEV_GPU_UTIL 0) $(m DCGM_FI_DEV_GPU_UTIL 3)" "10 40"
expect_eq "fb used" "$(m DCGM_FI_DEV_FB_USED 1)" 2048
expect_eq "fb free" "$(m DCGM_FI_DEV_FB_FREE 1)" $((81559 - 512 - 2048))
expect_eq "fb reserved" "$(m DCGM_FI_DEV_FB_RESERVED 1)" 512
expect_eq "memory temp" "$(m DCGM_FI_DEV_MEMORY_TEMP 3)" 53
expect_eq "enc dec" "$(m DCGM_FI_DEV_ENC_UTIL 1) $(m DCGM_FI_DEV_DEC_UTIL 1)" "4 8"
expect_eq "pcie rx" "$(m DCGM_FI_PROF_PCIE_RX_BYTES 2)" $((6000 * 1024))
expect_eq "remapped rows" "$(m DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS 2) $(m DCGM_FI_DEV_ROW_REMAP_FAILURE 2)" "2 0"
expect_eq "temp" "$(m DCGM_FI_DEV_GPU_TEMP 2)" 42
expect_eq "power" "$(m DCGM_FI_DEV_POWER_USAGE 3)" 103
expect_eq "clocks" "$(m DCGM_FI_DEV_SM_CLOCK 0) $(m DCGM_FI_DEV_MEM_CLOCK 0)" "1980 2619"
expect_eq "energy" "$(m DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 1)" 123456790
expect_eq "xid" "$(m DCGM_FI_DEV_XID_ERRORS 1) $(m DCGM_FI_DEV_XID_ERRORS 0)" "31 0"
grep -q '^DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-5a1d0000-0000-0000-0000-000000000002",pci_bus_id="00000000:52:00.0",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-1",DCGM_FI_DRIVER_VERSION="550.54.15-standin"} 30$' \
	"$TEST_TMP/metrics.txt" || fail "labels are not dcgm-exporter's: $(grep GPU_UTIL "$TEST_TMP/metrics.txt")"
expect_eq "IB rx bytes" "$(grep '^node_infiniband_port_data_received_bytes_total{device="mlx5_1",port="1",Hostname="gpu-1"}' "$TEST_TMP/metrics.txt" | awk '{print $NF}')" 4000
expect_eq "IB link rate and state" "$(grep '^node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"' "$TEST_TMP/metrics.txt" | awk '{print $NF}') $(grep '^node_infiniband_state_id{device="mlx5_0",port="1"' "$TEST_TMP/metrics.txt" | awk '{print $NF}')" "50000000000 4"
expect_eq "XID counter" "$(grep '^drover_gpu_xid_errors_total{gpu="1",' "$TEST_TMP/metrics.txt" | sed 's/.*xid="\([0-9]*\)"} /\1 /')" "31 1"
# the heartbeat tells the controller the GPUs' health
wait_until 5 sh -c "[ \"\$(curl -fsS $CTL/control/state | jq '.nodes[\"gpu-1\"].last_heartbeat.gpus | length')\" = 4 ]" ||
	fail "no GPU health in heartbeats"
expect_eq "health" "$(q '.nodes["gpu-1"].last_heartbeat.gpus | map(.healthy) | unique | join(",")')" true

# a task sees the GPUs it was given (CUDA_VISIBLE_DEVICES is what CUDA reads)
curl -fsS -X POST "$CTL/control/assign" -d '{"node": "gpu-1", "tasks": [{"task_id": "1.0", "job_id": 1,
 "epoch": 1, "desired": "run", "argv": ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"], "env": {},
 "gpus": [1, 3], "rank": 0, "world_size": 1}]}' >/dev/null
done_() { [ "$(q '[.nodes["gpu-1"].reports[] | select(.state == "exited")] | length')" -ge 1 ]; }
wait_until 10 done_ || fail "the task did not run"
expect_eq "task GPUs" "$(curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PA/v1/tasks/1.0/logs")" "1,3"

# without the library, or with one whose driver is not loaded: say so, stop, exit 1
out=$(DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name nolib --listen none \
	--nvml-lib "$TEST_TMP/none/libnvidia-ml.so.1" --state "$TEST_TMP/n" 2>&1)
rc=$?
expect_eq "exit code without NVML" "$rc" 1
echo "$out" | grep -q "cannot load NVIDIA's .*libnvidia-ml.so.1, so no NVIDIA driver here" || fail "message: $out"
echo "$out" | grep -q -- "--fake-gpus" || fail "no hint at --fake-gpus: $out"
out=$(DROVER_NVML_STANDIN_FAIL=1 LD_LIBRARY_PATH="$TEST_TMP/lib" DROVER_AGENT_TOKEN="$TOKEN" \
	"$DROVER" agent --server "$CTL" --name nodrv --listen none --state "$TEST_TMP/n" 2>&1)
rc=$?
expect_eq "exit code without a driver" "$rc" 1
echo "$out" | grep -q "NVML could not start: Driver Not Loaded" || fail "message: $out"
echo "ok: nvml backend through the loader"
