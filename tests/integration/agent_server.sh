# agent_server.sh: the agent with the real controller, end to end. A
# 2-node gang (a Kubeflow PyTorchJob, 8 GPUs per task, nodes with 4
# simulated HCAs each) with the seed's NCCL env; each task writes its
# environment to its stdout, which `drover logs` fetches through the
# controller from the agent. Checked: each task sees exactly its 8 GPUs,
# ranks 0 and 1 on different nodes with one master address and port,
# WORLD_SIZE 2, NCCL_IB_HCA from the HCAs found, the job's env on top; the
# node's metrics carry the job on its GPUs while it runs and go idle after;
# the agent's register reached the controller with its inventory.
. "$ROOT/tests/integration/lib.sh"

server_config "allow_root_tasks: true" "heartbeat_interval_s: 1" "heartbeat_timeout_s: 10" \
	"sched_delay_ms: 10"
start_server
start_agent node-a 8xH100 --fake-hcas 4
start_agent node-b 8xH100 --fake-hcas 4
expect_eq "node model" "$("$DROVER" get node node-a -o json | jq -r .model)" "H100-SXM-80GB"
expect_eq "node GPUs" "$("$DROVER" get node node-a -o json | jq -r .gpus)" 8
expect_eq "agent_url" "$("$DROVER" get node node-b -o json | jq -r .agent_url)" "http://127.0.0.1:$AGENT_PORT_node_b"

cat >"$TEST_TMP/gang.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: envgang
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: nvcr.io/nvidia/pytorch:24.01-py3
            command: ["sh", "-c", "env; sleep 4"]
            env:
            - name: NCCL_IB_DISABLE
              value: "0"
            - name: NCCL_NET_GDR_LEVEL
              value: "5"
            resources:
              limits:
                nvidia.com/gpu: 8
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: nvcr.io/nvidia/pytorch:24.01-py3
            command: ["sh", "-c", "env; sleep 4"]
            env:
            - name: NCCL_IB_DISABLE
              value: "0"
            - name: NCCL_NET_GDR_LEVEL
              value: "5"
            resources:
              limits:
                nvidia.com/gpu: 8
YAML
id=$("$DROVER" submit --parsable "$TEST_TMP/gang.yaml") || fail "submit"
state() { "$DROVER" get job "$id" -o json | jq -r .state; }
is_state() { [ "$(state)" = "$1" ]; }
wait_until 30 is_state running || fail "gang not running: $("$DROVER" describe job "$id")"

# metrics follow the job while it runs: every GPU of both nodes carries it
for n in a b; do
	eval "p=\$AGENT_PORT_node_$n"
	c=$(curl -fsS "http://127.0.0.1:$p/metrics" | grep -c "^DCGM_FI_DEV_GPU_UTIL{.*hpc_job=\"$id\"")
	expect_eq "GPUs of node-$n with hpc_job=$id" "$c" 8
done

wait_until 30 is_state succeeded || fail "gang did not succeed: $("$DROVER" describe job "$id")"
"$DROVER" logs "$id" --task 0 >"$TEST_TMP/env-0" || fail "logs of task 0"
"$DROVER" logs "$id" --task 1 >"$TEST_TMP/env-1" || fail "logs of task 1"
v() { grep "^$2=" "$TEST_TMP/env-$1" | head -1 | cut -d= -f2-; }
expect_eq "GPUs per task" "$(v 0 CUDA_VISIBLE_DEVICES) $(v 1 CUDA_VISIBLE_DEVICES)" "0,1,2,3,4,5,6,7 0,1,2,3,4,5,6,7"
expect_eq "ranks" "$(v 0 RANK) $(v 1 RANK)" "0 1"
expect_eq "node ranks" "$(v 0 NODE_RANK) $(v 1 NODE_RANK)" "0 1"
expect_eq "world" "$(v 0 WORLD_SIZE) $(v 1 WORLD_SIZE)" "2 2"
expect_eq "one master" "$(v 0 MASTER_ADDR):$(v 0 MASTER_PORT)" "$(v 1 MASTER_ADDR):$(v 1 MASTER_PORT)"
[ -n "$(v 0 MASTER_PORT)" ] || fail "no MASTER_PORT"
[ "$(v 0 DROVER_NODE)" != "$(v 1 DROVER_NODE)" ] || fail "both tasks on $(v 0 DROVER_NODE)"
expect_eq "IB HCAs" "$(v 1 NCCL_IB_HCA)" "mlx5_0,mlx5_1,mlx5_2,mlx5_3"
expect_eq "seed's NCCL env wins" "$(v 0 NCCL_IB_DISABLE) $(v 1 NCCL_NET_GDR_LEVEL)" "0 5"
expect_eq "image" "$(v 1 DROVER_IMAGE)" "nvcr.io/nvidia/pytorch:24.01-py3"
expect_eq "TF_CONFIG workers" "$(v 0 TF_CONFIG | jq -r '.cluster.worker | length')" 2

# after the job, the GPUs are idle and carry no job (the per-task OOM counter
# drover_task_oom_kills_total keeps its finished tasks, as a counter should)
for n in a b; do
	eval "p=\$AGENT_PORT_node_$n"
	idle() { [ "$(curl -fsS "http://127.0.0.1:$p/metrics" | grep -c '^DCGM_FI_.*hpc_job=')" = 0 ]; }
	wait_until 5 idle || fail "node-$n still shows a job on its GPUs"
done
echo "ok: 2-node gang through the real controller: GPUs, ranks, master, NCCL, metrics"
